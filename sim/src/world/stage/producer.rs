//! The producer: appends records to every partition at its drawn rate, between the hosts'
//! work, and records what it appended.

use bytes::Bytes;
use groupsim_coordinator::log::SharedLogs;
use groupsim_wire::{Millis, TopicPartition};
use rand::RngExt;

use crate::rng::{self, Stream};
use crate::scenario::ScenarioSpec;
use crate::world::orders::SharedHistory;
use groupsim_history::WorldEvent;

/// How often the producer appends what is due (like a producer's linger).
const PRODUCER_LINGER_MS: Millis = 100;

/// Appends records to every partition at its drawn rate, between simulation steps.
pub struct Producer {
    logs: SharedLogs,
    /// (partition, records per second, records appended so far, first due time)
    partitions: Vec<(TopicPartition, u32, u64, Millis)>,
    /// Each partition's record value prefix (`<partition>:`), in `partitions`' order.
    prefixes: Vec<Vec<u8>>,
    rng: rand_chacha::ChaCha8Rng,
    rates: (u32, u32),
    stop_ms: Millis,
    /// Until when the logs are given room ahead: the stop, or the run's end if earlier.
    reserve_until: Millis,
    next_flush: Millis,
    stopped: bool,
    /// Traffic lulls, `[from, to)`, in time order.
    lulls: Vec<(Millis, Millis)>,
    /// A lull is under way: when it ends, production starts afresh (no backlog).
    in_lull: bool,
}

impl Producer {
    pub(crate) fn new(spec: &ScenarioSpec, logs: SharedLogs) -> Self {
        let mut rng = rng::stream(spec.world_seed(), Stream::Workload);
        // Skip ahead on a separate stream id space: the workload stream's first draws belong to
        // the scenario builder; use a fork keyed on the producer instead.
        rng.set_stream(rng.get_stream() + 100);
        let (lo, hi) = spec.producer.records_per_sec;
        let mut partitions = Vec::new();
        for (topic, n) in &spec.topics {
            for p in 0..*n {
                let rate = rng.random_range(lo..=hi);
                partitions.push((TopicPartition::new(topic.as_str(), p), rate, 0, 0));
            }
        }
        let until = spec.producer.stop_ms.min(spec.end_ms());
        reserve_logs(&logs, &partitions, 0, until);
        Self {
            logs,
            prefixes: partitions.iter().map(|(tp, ..)| value_prefix(tp)).collect(),
            partitions,
            rng,
            rates: (lo, hi),
            stop_ms: spec.producer.stop_ms,
            reserve_until: until,
            next_flush: 0,
            stopped: false,
            lulls: spec.producer.lulls.clone(),
            in_lull: false,
        }
    }

    /// When [`Self::tick`] next appends, if the producer still runs.
    pub(crate) fn next_flush(&self) -> Option<Millis> {
        (!self.stopped).then_some(self.next_flush)
    }

    /// Starts producing to partitions a topic gained (from the next flush on).
    pub fn add_partitions(&mut self, topic: &str, total: i32) {
        let have = self.partitions.iter().filter(|(tp, ..)| *tp.topic == *topic).count() as i32;
        let start = self.next_flush;
        let first = self.partitions.len();
        for p in have..total {
            let rate = self.rng.random_range(self.rates.0..=self.rates.1);
            let tp = TopicPartition::new(topic, p);
            self.prefixes.push(value_prefix(&tp));
            self.partitions.push((tp, rate, 0, start));
        }
        reserve_logs(&self.logs, &self.partitions[first..], start, self.reserve_until);
    }

    /// Appends what is due at `now`; returns whether it appended any record.
    pub(crate) fn tick(&mut self, now: Millis, history: &SharedHistory) -> bool {
        if self.stopped || now < self.next_flush {
            return false;
        }
        if self.lulls.iter().any(|&(from, to)| (from..to).contains(&now)) {
            if !self.in_lull {
                crate::probes::PRODUCER_LULL.hit();
            }
            self.in_lull = true;
            self.next_flush = now + PRODUCER_LINGER_MS;
            return false;
        }
        if std::mem::take(&mut self.in_lull) {
            // Restart each partition's clock so that what is due now is what was produced.
            for (_, rate, produced, since) in &mut self.partitions {
                if *rate > 0 {
                    *since = now.saturating_sub(*produced * 1_000 / u64::from(*rate));
                }
            }
        }
        let until = now.min(self.stop_ms);
        let mut appended = false;
        let mut logs = self.logs.lock().expect("logs lock is never poisoned");
        for ((tp, rate, produced, since), prefix) in self.partitions.iter_mut().zip(&self.prefixes)
        {
            let due = produced_by(*since, until, *rate);
            if due > *produced {
                let count = due - *produced;
                let values = (*produced..due).map(|n| record_value(prefix, n));
                let base = logs
                    .append_values(tp, values, now as i64)
                    .expect("producer appends only to partitions it was built from");
                *produced = due;
                appended = true;
                history.borrow_mut().world(
                    now,
                    WorldEvent::Produced {
                        partition: tp.clone(),
                        base_offset: base,
                        count: count as i64,
                    },
                );
            }
        }
        if now >= self.stop_ms {
            self.stopped = true;
            let ends = self
                .partitions
                .iter()
                .map(|(tp, ..)| (tp.clone(), logs.log_end_offset(tp).unwrap_or(0)))
                .collect();
            history.borrow_mut().world(now, WorldEvent::ProducerStopped { log_end_offsets: ends });
        }
        self.next_flush = now + PRODUCER_LINGER_MS;
        appended
    }
}

/// The most records one partition's log is given room for ahead; a longer log grows as it fills.
const RESERVE_MAX: u64 = 1 << 20;

/// Gives each partition's log room for what the producer will append to it from `start` until
/// `until` (when it stops, or the run ends) at its rate, so the logs do not regrow (each step a
/// copy of the whole log) while the run fills them. Lulls only make the room larger than needed.
fn reserve_logs(
    logs: &SharedLogs,
    partitions: &[(TopicPartition, u32, u64, Millis)],
    start: Millis,
    until: Millis,
) {
    let mut logs = logs.lock().expect("logs lock is never poisoned");
    for (tp, rate, ..) in partitions {
        let expected = produced_by(start, until, *rate);
        // A partition the logs lack is the append's error to report, not this one's.
        let _ = logs.reserve(tp, expected.min(RESERVE_MAX) as usize);
    }
}

/// How many records a partition producing `rate` per second from `since` holds at `until`.
fn produced_by(since: Millis, until: Millis, rate: u32) -> u64 {
    until.saturating_sub(since).saturating_mul(u64::from(rate)) / 1_000
}

/// What every record value of `tp` starts with.
fn value_prefix(tp: &TopicPartition) -> Vec<u8> {
    format!("{tp}:").into_bytes()
}

/// The value of a partition's `n`th record: `<partition>:<n>`, the partition written as its
/// `Display` shows it.
fn record_value(prefix: &[u8], n: u64) -> Bytes {
    // The decimal digits, written from the end (the formatting machinery costs more than the
    // record).
    let mut digits = [0u8; 20];
    let mut start = digits.len();
    let mut rest = n;
    loop {
        start -= 1;
        digits[start] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    // Exactly as long as it holds: a full vector becomes `Bytes` without a second allocation.
    let mut value = Vec::with_capacity(prefix.len() + digits.len() - start);
    value.extend_from_slice(prefix);
    value.extend_from_slice(&digits[start..]);
    value.into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_values_are_the_partition_and_the_count() {
        let tp = TopicPartition::new("orders", 3);
        let value = record_value(&value_prefix(&tp), 1_234);
        assert_eq!(value, format!("{tp}:1234").into_bytes());
        for n in [0, 9, 10, u64::MAX] {
            let value = record_value(&value_prefix(&tp), n);
            assert_eq!(value, format!("{tp}:{n}").into_bytes());
        }
    }
}
