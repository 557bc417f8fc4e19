//! In-memory topic partition logs: what the brokers serve to Metadata, ListOffsets and Fetch, and
//! what the simulated producer appends to.
//!
//! A partition log is an append-only sequence of records with consecutive offsets starting at the
//! log start offset. Offsets, like Kafka's, never get reused: [`PartitionLogs::delete_records_before`]
//! (retention) advances the log start offset but the log end offset only ever grows.
//!
//! The logs are shared by every broker of a simulated cluster and by the producer, so they live
//! behind a [`SharedLogs`] handle. Everything is iterated in sorted order (topics in a `BTreeMap`).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use groupsim_wire::topic_name::shared_topic;

use crate::TopicPartition;

/// Logs shared by brokers and the simulated producer. Single-threaded in the simulation; a
/// `Mutex` (rather than `RefCell`) keeps it `Send` for a later real-socket server.
pub type SharedLogs = Arc<Mutex<PartitionLogs>>;

/// Wraps fresh logs in a [`SharedLogs`] handle.
pub fn shared(logs: PartitionLogs) -> SharedLogs {
    Arc::new(Mutex::new(logs))
}

pub use groupsim_wire::records::LogRecord;

/// Why a log operation was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LogError {
    /// `create_topic` for a name that already exists.
    #[error("topic {0:?} already exists")]
    TopicAlreadyExists(String),
    /// A partition count below one, or `add_partitions` asking for fewer partitions than exist.
    #[error("invalid partition count {count} for topic {topic:?} (currently {current})")]
    InvalidPartitions { topic: String, count: i32, current: i32 },
    /// The topic or the partition does not exist.
    #[error("unknown topic or partition {0}")]
    UnknownTopicOrPartition(TopicPartition),
    /// A read below the log start offset or above the log end offset.
    #[error(
        "offset {offset} out of range for {partition} (log start {log_start}, log end {log_end})"
    )]
    OffsetOutOfRange { partition: TopicPartition, offset: i64, log_start: i64, log_end: i64 },
}

/// The records of one partition.
#[derive(Clone, Debug, Default)]
struct PartitionLog {
    /// Offset of the first record still stored (`records[0].offset` when not empty).
    log_start_offset: i64,
    /// Records from `log_start_offset` up to the log end offset, consecutive offsets.
    records: Vec<LogRecord>,
}

impl PartitionLog {
    fn log_end_offset(&self) -> i64 {
        self.log_start_offset + self.records.len() as i64
    }
}

/// What [`PartitionLogs::window`] sees of a partition.
#[derive(Debug)]
pub struct Window<'a> {
    /// The log start offset.
    pub start: i64,
    /// The log end offset.
    pub end: i64,
    /// The records read, or `None` when the offset asked for is outside the log.
    pub records: Option<&'a [LogRecord]>,
}

/// All topics of a simulated cluster: topic name -> partitions -> records.
#[derive(Clone, Debug, Default)]
pub struct PartitionLogs {
    topics: BTreeMap<Arc<str>, Vec<PartitionLog>>,
}

impl PartitionLogs {
    /// No topics.
    pub fn new() -> Self {
        Self::default()
    }

    /// Creates `name` with `partitions` empty partitions (numbered from 0).
    pub fn create_topic(&mut self, name: &str, partitions: i32) -> Result<(), LogError> {
        if self.topics.contains_key(name) {
            return Err(LogError::TopicAlreadyExists(name.to_string()));
        }
        if partitions < 1 {
            return Err(LogError::InvalidPartitions {
                topic: name.to_string(),
                count: partitions,
                current: 0,
            });
        }
        self.topics.insert(shared_topic(name), vec![PartitionLog::default(); partitions as usize]);
        Ok(())
    }

    /// Grows `name` to `new_total` partitions (Kafka's CreatePartitions: counts only grow).
    /// Asking for the current count is a no-op.
    pub fn add_partitions(&mut self, name: &str, new_total: i32) -> Result<(), LogError> {
        let parts = self
            .topics
            .get_mut(name)
            .ok_or_else(|| LogError::UnknownTopicOrPartition(TopicPartition::new(name, -1)))?;
        let current = parts.len() as i32;
        if new_total < current {
            return Err(LogError::InvalidPartitions {
                topic: name.to_string(),
                count: new_total,
                current,
            });
        }
        parts.resize(new_total as usize, PartitionLog::default());
        Ok(())
    }

    /// Appends one record and returns the offset it was given (the old log end offset).
    pub fn append(
        &mut self,
        tp: &TopicPartition,
        key: Option<Bytes>,
        value: Bytes,
        timestamp_ms: i64,
    ) -> Result<i64, LogError> {
        let log = self.partition_mut(tp)?;
        let offset = log.log_end_offset();
        log.records.push(LogRecord { offset, timestamp_ms, key, value });
        Ok(offset)
    }

    /// Appends records of `values` (no key), all stamped `timestamp_ms`, and returns the offset
    /// the first was given (the old log end offset): what one [`Self::append`] per value does,
    /// with one look for the partition.
    pub fn append_values(
        &mut self,
        tp: &TopicPartition,
        values: impl Iterator<Item = Bytes>,
        timestamp_ms: i64,
    ) -> Result<i64, LogError> {
        let log = self.partition_mut(tp)?;
        let base = log.log_end_offset();
        log.records.reserve(values.size_hint().0);
        for (offset, value) in (base..).zip(values) {
            log.records.push(LogRecord { offset, timestamp_ms, key: None, value });
        }
        Ok(base)
    }

    /// Makes room for `additional` more records of `tp` at once, so that a log whose growth is
    /// known ahead (the simulated producer's) is not regrown and copied as it fills. Changes no
    /// record and no offset.
    pub fn reserve(&mut self, tp: &TopicPartition, additional: usize) -> Result<(), LogError> {
        self.partition_mut(tp)?.records.reserve_exact(additional);
        Ok(())
    }

    /// Retention: drops every record below `offset` (clamped to the log end offset) and moves
    /// the log start offset there. Returns the new log start offset. Never moves it backwards.
    pub fn delete_records_before(
        &mut self,
        tp: &TopicPartition,
        offset: i64,
    ) -> Result<i64, LogError> {
        let log = self.partition_mut(tp)?;
        let target = offset.clamp(log.log_start_offset, log.log_end_offset());
        let drop = (target - log.log_start_offset) as usize;
        log.records.drain(..drop);
        log.log_start_offset = target;
        Ok(target)
    }

    /// First offset still stored, or `None` for an unknown partition.
    pub fn log_start_offset(&self, tp: &TopicPartition) -> Option<i64> {
        self.partition(tp).map(|log| log.log_start_offset)
    }

    /// Offset the next appended record will get (Kafka's log end offset; also our high
    /// watermark, since every record is immediately "replicated"). `None` if unknown.
    pub fn log_end_offset(&self, tp: &TopicPartition) -> Option<i64> {
        self.partition(tp).map(PartitionLog::log_end_offset)
    }

    /// Up to `max_records` records starting at `from_offset`. Reading exactly at the log end
    /// offset gives an empty slice; below the log start or above the log end is an error.
    pub fn read(
        &self,
        tp: &TopicPartition,
        from_offset: i64,
        max_records: usize,
    ) -> Result<&[LogRecord], LogError> {
        let window = self
            .window(tp, from_offset, max_records)
            .ok_or_else(|| LogError::UnknownTopicOrPartition(tp.clone()))?;
        window.records.ok_or_else(|| LogError::OffsetOutOfRange {
            partition: tp.clone(),
            offset: from_offset,
            log_start: window.start,
            log_end: window.end,
        })
    }

    /// One look at `tp` for a read from `from_offset`: its log start and end offsets, and up
    /// to `max_records` records from there, or `None` in their place when `from_offset` is
    /// outside the log (what [`Self::read`] refuses). `None` if the partition is unknown.
    pub fn window(
        &self,
        tp: &TopicPartition,
        from_offset: i64,
        max_records: usize,
    ) -> Option<Window<'_>> {
        let log = self.partition(tp)?;
        let (start, end) = (log.log_start_offset, log.log_end_offset());
        let records = (start..=end).contains(&from_offset).then(|| {
            let first = (from_offset - start) as usize;
            let last = first.saturating_add(max_records).min(log.records.len());
            &log.records[first..last]
        });
        Some(Window { start, end, records })
    }

    /// The first stored record whose timestamp is at or after `timestamp_ms` (what ListOffsets
    /// answers for a timestamp query). `Ok(None)` when no record qualifies.
    pub fn offset_for_timestamp(
        &self,
        tp: &TopicPartition,
        timestamp_ms: i64,
    ) -> Result<Option<&LogRecord>, LogError> {
        let log =
            self.partition(tp).ok_or_else(|| LogError::UnknownTopicOrPartition(tp.clone()))?;
        Ok(log.records.iter().find(|r| r.timestamp_ms >= timestamp_ms))
    }

    /// The stored record with the largest timestamp (the first one if several tie), for
    /// ListOffsets' MAX_TIMESTAMP query. `Ok(None)` for an empty log.
    pub fn max_timestamp_record(
        &self,
        tp: &TopicPartition,
    ) -> Result<Option<&LogRecord>, LogError> {
        let log =
            self.partition(tp).ok_or_else(|| LogError::UnknownTopicOrPartition(tp.clone()))?;
        let mut best: Option<&LogRecord> = None;
        for r in &log.records {
            if best.is_none_or(|b| r.timestamp_ms > b.timestamp_ms) {
                best = Some(r);
            }
        }
        Ok(best)
    }

    /// Topic names in sorted order.
    pub fn topics(&self) -> impl Iterator<Item = &str> {
        self.topics.keys().map(|t| &**t)
    }

    /// The log's own name of topic `name`, shared (a key built from it copies no name), or
    /// the thread's shared name for a topic the logs do not hold.
    pub fn topic_key(&self, name: &str) -> Arc<str> {
        self.topics.get_key_value(name).map_or_else(|| shared_topic(name), |(key, _)| key.clone())
    }

    /// Number of partitions of `topic`, or `None` if it does not exist.
    pub fn partition_count(&self, topic: &str) -> Option<i32> {
        self.topics.get(topic).map(|p| p.len() as i32)
    }

    fn partition(&self, tp: &TopicPartition) -> Option<&PartitionLog> {
        let index = usize::try_from(tp.partition).ok()?;
        self.topics.get(&*tp.topic)?.get(index)
    }

    fn partition_mut(&mut self, tp: &TopicPartition) -> Result<&mut PartitionLog, LogError> {
        usize::try_from(tp.partition)
            .ok()
            .and_then(|index| self.topics.get_mut(&*tp.topic)?.get_mut(index))
            .ok_or_else(|| LogError::UnknownTopicOrPartition(tp.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp(p: i32) -> TopicPartition {
        TopicPartition::new("t", p)
    }

    /// Logs holding one empty topic `t` of `partitions` partitions.
    fn topic_t(partitions: i32) -> PartitionLogs {
        let mut logs = PartitionLogs::new();
        logs.create_topic("t", partitions).unwrap();
        logs
    }

    /// The producer's batch of values lands as the same records, at the same offsets, as one
    /// append per value would put there.
    #[test]
    fn appending_values_at_once_is_appending_them_one_by_one() {
        let (mut one, mut many) = (topic_t(2), topic_t(2));
        let values = |n: usize| (0..n).map(|i| Bytes::from(vec![b'v', i as u8]));
        for (round, n) in [3, 0, 5].into_iter().enumerate() {
            let ts = round as i64 * 10;
            let first = one.log_end_offset(&tp(0)).unwrap();
            for v in values(n) {
                one.append(&tp(0), None, v, ts).unwrap();
            }
            assert_eq!(many.append_values(&tp(0), values(n), ts), Ok(first));
        }
        assert_eq!(many.read(&tp(0), 0, 100), one.read(&tp(0), 0, 100));
        assert_eq!(many.log_end_offset(&tp(0)), Some(8));
        let unknown = TopicPartition::new("nope", 0);
        assert!(many.append_values(&unknown, values(1), 0).is_err());
    }

    /// Room made ahead changes no offset, bound or record; an unknown partition is refused.
    #[test]
    fn reserving_room_changes_nothing_a_reader_sees() {
        let (mut plain, mut roomy) = (topic_t(1), topic_t(1));
        roomy.reserve(&tp(0), 1_000).unwrap();
        for (i, logs) in [&mut plain, &mut roomy].into_iter().enumerate() {
            let values = (0..5).map(|n| Bytes::from(vec![b'v', n]));
            assert_eq!(logs.append_values(&tp(0), values, 7), Ok(0), "log {i}");
            logs.delete_records_before(&tp(0), 2).unwrap();
        }
        assert_eq!(roomy.read(&tp(0), 2, 100), plain.read(&tp(0), 2, 100));
        assert_eq!(roomy.log_start_offset(&tp(0)), Some(2));
        assert_eq!(roomy.log_end_offset(&tp(0)), plain.log_end_offset(&tp(0)));
        let unknown = TopicPartition::new("nope", 0);
        assert!(matches!(
            roomy.reserve(&unknown, 1),
            Err(LogError::UnknownTopicOrPartition(p)) if p == unknown
        ));
    }

    #[test]
    fn append_assigns_consecutive_offsets_per_partition() {
        let mut logs = PartitionLogs::new();
        logs.create_topic("t", 2).unwrap();
        assert_eq!(logs.append(&tp(0), None, Bytes::from_static(b"a"), 1), Ok(0));
        assert_eq!(logs.append(&tp(0), None, Bytes::from_static(b"b"), 2), Ok(1));
        assert_eq!(logs.append(&tp(1), None, Bytes::from_static(b"c"), 3), Ok(0));
        assert_eq!(logs.log_end_offset(&tp(0)), Some(2));
        assert_eq!(logs.log_start_offset(&tp(0)), Some(0));
        assert_eq!(logs.log_end_offset(&tp(2)), None);
    }

    /// A window is the log's bounds and what `read` gives from its offset, in one look.
    #[test]
    fn a_window_agrees_with_the_bounds_and_read() {
        let mut logs = PartitionLogs::new();
        logs.create_topic("t", 2).unwrap();
        for i in 0..6 {
            logs.append(&tp(0), None, Bytes::from(vec![i as u8]), i).unwrap();
        }
        logs.delete_records_before(&tp(0), 2).unwrap();
        for p in [tp(0), tp(1), tp(2), TopicPartition::new("u", 0)] {
            for from in -1..9 {
                for max in [0, 1, 3, 100] {
                    let window = logs.window(&p, from, max);
                    assert_eq!(window.as_ref().map(|w| w.start), logs.log_start_offset(&p));
                    assert_eq!(window.as_ref().map(|w| w.end), logs.log_end_offset(&p));
                    let records = window.and_then(|w| w.records);
                    assert_eq!(records, logs.read(&p, from, max).ok(), "{p} from {from} max {max}");
                }
            }
        }
    }

    #[test]
    fn read_bounds_are_log_start_and_log_end() {
        let mut logs = PartitionLogs::new();
        logs.create_topic("t", 1).unwrap();
        for i in 0..5 {
            logs.append(&tp(0), None, Bytes::from(vec![i as u8]), i).unwrap();
        }
        assert_eq!(
            logs.read(&tp(0), 1, 2).unwrap().iter().map(|r| r.offset).collect::<Vec<_>>(),
            [1, 2]
        );
        assert!(logs.read(&tp(0), 5, 10).unwrap().is_empty());
        assert!(matches!(logs.read(&tp(0), 6, 1), Err(LogError::OffsetOutOfRange { .. })));
        assert_eq!(logs.delete_records_before(&tp(0), 3), Ok(3));
        assert!(matches!(logs.read(&tp(0), 2, 1), Err(LogError::OffsetOutOfRange { .. })));
        assert_eq!(logs.read(&tp(0), 3, 10).unwrap()[0].offset, 3);
        assert_eq!(logs.append(&tp(0), None, Bytes::new(), 9), Ok(5));
    }

    #[test]
    fn add_partitions_only_grows() {
        let mut logs = PartitionLogs::new();
        logs.create_topic("t", 2).unwrap();
        logs.add_partitions("t", 4).unwrap();
        assert_eq!(logs.partition_count("t"), Some(4));
        assert!(logs.add_partitions("t", 3).is_err());
        assert!(logs.create_topic("t", 1).is_err());
        assert!(logs.create_topic("u", 0).is_err());
    }

    #[test]
    fn timestamp_lookup_finds_first_record_at_or_after() {
        let mut logs = PartitionLogs::new();
        logs.create_topic("t", 1).unwrap();
        for ts in [10, 30, 20, 40] {
            logs.append(&tp(0), None, Bytes::new(), ts).unwrap();
        }
        assert_eq!(logs.offset_for_timestamp(&tp(0), 15).unwrap().map(|r| r.offset), Some(1));
        assert_eq!(logs.offset_for_timestamp(&tp(0), 41).unwrap(), None);
        assert_eq!(logs.max_timestamp_record(&tp(0)).unwrap().map(|r| r.offset), Some(3));
    }

    #[test]
    fn topics_are_listed_in_sorted_order() {
        let mut logs = PartitionLogs::new();
        for name in ["b", "a", "c"] {
            logs.create_topic(name, 1).unwrap();
        }
        assert_eq!(logs.topics().collect::<Vec<_>>(), ["a", "b", "c"]);
    }
}
