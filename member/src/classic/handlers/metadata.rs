//! The partition-count watch that triggers a rebalance (Metadata itself is shared).

use crate::classic::membership::Phase;
use crate::classic::Member;

impl Member {
    /// A partition count that changed since the leader computed the current generation's
    /// assignment makes the leader rejoin, which rebalances the group (the Java client keeps
    /// this `assignmentSnapshot` on the leader only; followers do not react to metadata).
    pub(in crate::classic) fn check_metadata_change(&mut self) {
        if self.membership.phase != Phase::Stable || self.membership.rejoin_needed || self.leaving {
            return;
        }
        let watched = if self.rules.partition_watch_ms.is_some() {
            // kafka-go's partition watcher runs on every member, not only the leader.
            &self.membership.watched_counts
        } else {
            &self.membership.assignment_snapshot
        };
        if self.core.metadata.counts_changed(watched) {
            self.membership.rejoin_needed = true;
        }
    }
}
