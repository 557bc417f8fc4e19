//! Figures about a run that are not anomalies: rebalances, commits, records produced and
//! processed, and how long partitions went without an owner.

use std::collections::BTreeMap;

use groupsim_wire::{Millis, TopicPartition};
use serde::{Deserialize, Serialize};

/// Figures about a run that are not anomalies.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stats {
    /// Completed join phases (generations started), all groups.
    pub rebalances: u64,
    /// Offset commits accepted, per partition.
    pub commits_accepted: u64,
    /// Offset commits rejected, per partition.
    pub commits_rejected: u64,
    /// Records the producer appended.
    pub records_produced: u64,
    /// Records processed, counting repeats.
    pub records_processed: u64,
    /// Records processed more than once (at-least-once redelivery; not an anomaly).
    pub records_reprocessed: u64,
    /// Longest time any partition went without an owner after it was first assigned.
    pub max_unowned_ms: Millis,
    /// When the last generation of the run started (convergence point), if any.
    pub last_generation_at_ms: Option<Millis>,
}

/// The run's figures as the history is read, with each partition's owner count to measure how
/// long it went unowned.
#[derive(Default)]
pub(super) struct Metrics {
    /// The figures so far.
    pub(super) stats: Stats,
    /// partition -> (owners now, time it became unowned)
    owner_count: BTreeMap<TopicPartition, (usize, Option<Millis>)>,
}

impl Metrics {
    /// A member started owning `tp` at `at`.
    pub(super) fn acquire(&mut self, tp: &TopicPartition, at: Millis) {
        let e = self.owner_count.entry(tp.clone()).or_insert((0, None));
        if e.0 == 0 {
            if let Some(since) = e.1.take() {
                self.stats.max_unowned_ms = self.stats.max_unowned_ms.max(at - since);
            }
        }
        e.0 += 1;
    }

    /// A member stopped owning `tp` at `at`.
    pub(super) fn release(&mut self, tp: &TopicPartition, at: Millis) {
        if let Some(e) = self.owner_count.get_mut(tp) {
            e.0 = e.0.saturating_sub(1);
            if e.0 == 0 {
                e.1 = Some(at);
            }
        }
    }

    /// The figures at the end of the run (`end`): partitions still unowned count until then.
    pub(super) fn finish(mut self, end: Millis) -> Stats {
        for (count, since) in self.owner_count.values() {
            if *count == 0 {
                if let Some(s) = since {
                    self.stats.max_unowned_ms = self.stats.max_unowned_ms.max(end - s);
                }
            }
        }
        self.stats
    }
}
