//! The KIP-848 member's bug switches: each hook is called from the place in the model where
//! the real client went wrong and does nothing while its switch is off. Keeping them here
//! keeps the model's own files the client's correct behaviour; no clean run enters these
//! bodies (the bug-switch tests do).

use crate::consumer::ConsumerGroupMember;
use crate::{ClientProfile, TopicPartition};

impl ConsumerGroupMember {
    /// Bug `commits_unprocessed_positions` (KAFKA-18641, `java-consumer`): a partition with a
    /// batch in progress is committed past that batch, as if the application had processed
    /// it.
    pub(in crate::consumer) fn commit_past_batches_in_progress(
        &self,
        offsets: &mut [(TopicPartition, i64)],
    ) {
        if !self.core.config.bugs.commits_unprocessed_positions
            || self.core.config.profile != ClientProfile::JavaConsumer
        {
            return;
        }
        let epoch = self.core.positions.epoch;
        for (tp, offset) in offsets {
            let handed = self.core.processor.processing.iter();
            for b in handed.filter(|b| b.tp == *tp && b.epoch == epoch) {
                *offset = (*offset).max(b.last + 1);
            }
        }
    }

    /// Bug `keeps_partitions_when_fenced`: on a fencing error the group's view of the
    /// assignment is reset (the rejoin reports nothing owned, as the coordinator demands), but
    /// the partitions and positions stay. True when the bug took the fencing over.
    pub(in crate::consumer) fn keep_partitions_when_fenced(&mut self) -> bool {
        if !self.core.config.bugs.keeps_partitions_when_fenced {
            return false;
        }
        self.reconciliation.abort_and_clear();
        true
    }
}
