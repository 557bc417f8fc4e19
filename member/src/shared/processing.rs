//! The application's processing of fetched batches and its acks: batches in progress (one, or
//! one per partition for Elsa's workers), batches the member no longer waits for, and the
//! member's RNG for processing times.

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::{Millis, TopicPartition};

/// A batch being processed (processing is atomic: once started it finishes). It remembers the
/// member id, generation and assignment epoch it started in: its ack carries them, so an ack
/// that arrives after a rebalance is recognised as stale.
#[derive(Clone, Debug)]
pub(crate) struct ProcessingBatch {
    pub(crate) tp: TopicPartition,
    pub(crate) first: i64,
    pub(crate) last: i64,
    pub(crate) started_at: Millis,
    pub(crate) done_at: Millis,
    pub(crate) epoch: u64,
    pub(crate) generation: i32,
    pub(crate) member_id: String,
}

/// Processing state.
#[derive(Debug)]
pub(crate) struct Processor {
    rng: ChaCha8Rng,
    /// Batches being processed (at most one, or one per partition for Elsa's workers).
    pub(crate) processing: Vec<ProcessingBatch>,
    /// Batches the member no longer waits for (StaleAck, or asynchronous work outliving a
    /// revoke): their acks arrive whenever they finish.
    pub(crate) detached: Vec<ProcessingBatch>,
    /// StaleAck delay for the next batch to start.
    pub(crate) stale_ack_ms: Option<u64>,
    /// SlowBatch: extra time for the next batch to start (the poll loop waits for it), and
    /// the end of the fault's window, after which no batch takes it up.
    pub(crate) slow_batch: Option<PendingSlowBatch>,
}

/// A slow batch injected while no batch was in progress.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PendingSlowBatch {
    /// How much longer the next batch takes.
    pub(crate) extra_ms: u64,
    /// When the fault's own window (from its injection, its extra long) ends.
    pub(crate) until_ms: Millis,
}

impl Processor {
    /// `seed` drives the processing times.
    pub(crate) fn new(seed: u64) -> Self {
        Self {
            rng: ChaCha8Rng::seed_from_u64(seed),
            processing: Vec::new(),
            detached: Vec::new(),
            stale_ack_ms: None,
            slow_batch: None,
        }
    }

    /// One record's processing time, drawn uniformly from the inclusive range `(a, b)` (no
    /// draw when the range is a single value).
    pub(crate) fn draw_processing_ms(&mut self, (a, b): (u64, u64)) -> u64 {
        let (lo, hi) = (a.min(b), a.max(b));
        if lo == hi {
            lo
        } else {
            self.rng.random_range(lo..=hi)
        }
    }

    /// Whether a batch of `tp` from assignment `epoch` is processing or detached and
    /// unfinished.
    pub(crate) fn busy(&self, tp: &TopicPartition, epoch: u64) -> bool {
        self.processing.iter().chain(&self.detached).any(|p| p.tp == *tp && p.epoch == epoch)
    }

    /// When the first batch (processing or detached) finishes.
    pub(crate) fn next_done_at(&self) -> Option<Millis> {
        self.processing.iter().chain(&self.detached).map(|p| p.done_at).min()
    }

    /// When the oldest batch in progress runs past `max_poll_ms`.
    pub(crate) fn max_poll_deadline(&self, max_poll_ms: u64) -> Option<Millis> {
        self.processing.iter().map(|p| p.started_at + max_poll_ms).min()
    }

    /// Whether a batch in progress has run for `max_poll_ms` by `now`.
    pub(crate) fn stalled(&self, now: Millis, max_poll_ms: u64) -> bool {
        self.processing.iter().any(|p| now >= p.started_at + max_poll_ms)
    }

    /// Takes the batch that finishes first among those due by `now` (ties: one in progress
    /// before a detached one, then the earlier started).
    pub(crate) fn take_next_due(&mut self, now: Millis) -> Option<ProcessingBatch> {
        let due = |p: &ProcessingBatch| p.done_at <= now;
        let next = self
            .processing
            .iter()
            .enumerate()
            .filter(|(_, p)| due(p))
            .map(|(i, p)| (p.done_at, false, i))
            .chain(
                self.detached
                    .iter()
                    .enumerate()
                    .filter(|(_, p)| due(p))
                    .map(|(i, p)| (p.done_at, true, i)),
            )
            .min();
        let (_, detached, i) = next?;
        Some(if detached { self.detached.remove(i) } else { self.processing.remove(i) })
    }

    /// StaleAck: the batch in progress (or the next one) finishes `delay_ms` later and is
    /// detached from revocation.
    pub(crate) fn inject_stale_ack(&mut self, delay_ms: u64) {
        if self.processing.is_empty() {
            self.stale_ack_ms = Some(delay_ms);
        } else {
            let mut p = self.processing.remove(0);
            p.done_at += delay_ms;
            self.detached.push(p);
        }
    }

    /// SlowBatch, injected at `now`: the batch in progress (or the next one, if it starts within
    /// the fault's window) takes `extra_ms` longer and stays attached: the poll loop waits for
    /// it.
    pub(crate) fn inject_slow_batch(&mut self, now: Millis, extra_ms: u64) {
        match self.processing.first_mut() {
            Some(p) => p.done_at += extra_ms,
            None => {
                let until_ms = now + extra_ms;
                let (extra_ms, until_ms) = match self.slow_batch {
                    Some(s) => (s.extra_ms.max(extra_ms), s.until_ms.max(until_ms)),
                    None => (extra_ms, until_ms),
                };
                self.slow_batch = Some(PendingSlowBatch { extra_ms, until_ms });
            }
        }
    }

    /// The extra time of a slow batch pending for a batch starting at `now`: none once the
    /// fault's window has passed (a slow batch no batch took up while it lasted is dropped, so a
    /// fault drawn long before cannot stall a batch that starts near the heal).
    pub(crate) fn take_slow_batch(&mut self, now: Millis) -> u64 {
        self.slow_batch.take().filter(|s| now <= s.until_ms).map_or(0, |s| s.extra_ms)
    }

    /// The faults end: a stale ack or slow batch no batch took up is dropped (a member that
    /// processed nothing while faults ran must not carry them into the liveness phase).
    pub(crate) fn drop_pending_faults(&mut self) {
        self.stale_ack_ms = None;
        self.slow_batch = None;
    }

    /// Forgets every batch (the member stopped).
    pub(crate) fn clear(&mut self) {
        self.processing.clear();
        self.detached.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(p: i32, started_at: Millis, done_at: Millis) -> ProcessingBatch {
        ProcessingBatch {
            tp: TopicPartition::new("t", p),
            first: 0,
            last: 9,
            started_at,
            done_at,
            epoch: 1,
            generation: 1,
            member_id: "m".into(),
        }
    }

    #[test]
    fn due_batches_come_out_in_finishing_order() {
        let mut p = Processor::new(1);
        p.processing.push(batch(0, 0, 30));
        p.detached.push(batch(1, 0, 10));
        p.detached.push(batch(2, 0, 50));
        assert_eq!(p.next_done_at(), Some(10));
        assert_eq!(p.take_next_due(40).map(|b| b.tp.partition), Some(1));
        assert_eq!(p.take_next_due(40).map(|b| b.tp.partition), Some(0));
        assert!(p.take_next_due(40).is_none(), "partition 2 is not due");
        assert_eq!(p.next_done_at(), Some(50));
    }

    #[test]
    fn a_stale_ack_detaches_the_batch_in_progress_or_delays_the_next() {
        let mut p = Processor::new(1);
        p.inject_stale_ack(100);
        assert_eq!(p.stale_ack_ms, Some(100));
        p.processing.push(batch(0, 0, 30));
        p.inject_stale_ack(500);
        assert!(p.processing.is_empty());
        assert_eq!(p.detached[0].done_at, 530);
        assert!(p.busy(&TopicPartition::new("t", 0), 1));
        assert!(!p.busy(&TopicPartition::new("t", 0), 2));
    }

    /// A slow batch injected while nothing is processed waits for the next batch, but only
    /// while its own window lasts: one taken up long after it was drawn stalled a batch that
    /// started near the heal, which then ran past it and out of the member's session.
    #[test]
    fn a_pending_slow_batch_lasts_only_its_window() {
        let mut p = Processor::new(1);
        p.inject_slow_batch(1_000, 500);
        assert_eq!(p.take_slow_batch(1_500), 500, "taken up within its window");
        assert_eq!(p.take_slow_batch(1_500), 0, "taken once");
        p.inject_slow_batch(1_000, 500);
        assert_eq!(p.take_slow_batch(1_501), 0, "its window has passed");
        p.inject_slow_batch(1_000, 500);
        p.inject_slow_batch(1_200, 100);
        assert_eq!(p.take_slow_batch(1_400), 500, "the longer of two pending ones holds");
        p.processing.push(batch(0, 0, 30));
        p.inject_slow_batch(10, 200);
        assert_eq!((p.processing[0].done_at, p.slow_batch), (230, None), "the batch in progress");
    }

    #[test]
    fn max_poll_counts_from_the_oldest_batch_in_progress() {
        let mut p = Processor::new(1);
        p.processing.push(batch(0, 100, 1_000));
        p.processing.push(batch(1, 50, 1_000));
        p.detached.push(batch(2, 0, 1_000));
        assert_eq!(p.max_poll_deadline(300), Some(350));
        assert!(!p.stalled(349, 300));
        assert!(p.stalled(350, 300));
    }

    #[test]
    fn processing_times_are_drawn_from_the_seed_and_a_fixed_range_draws_nothing() {
        let mut a = Processor::new(9);
        let mut b = Processor::new(9);
        assert_eq!(a.draw_processing_ms((4, 4)), 4);
        let xs: Vec<u64> = (0..5).map(|_| a.draw_processing_ms((5, 1))).collect();
        let ys: Vec<u64> = (0..5).map(|_| b.draw_processing_ms((1, 5))).collect();
        assert_eq!(xs, ys);
        assert!(xs.iter().all(|x| (1..=5).contains(x)));
    }
}
