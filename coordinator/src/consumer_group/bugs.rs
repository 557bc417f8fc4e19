//! The consumer group's bug switches on partition ownership: what the owner epochs do when a
//! switch is on. No clean run enters them (the bug-switch tests do).

use std::collections::BTreeSet;

use super::epochs::PartitionEpochs;
use super::member::ConsumerMember;
use crate::TopicPartition;

impl PartitionEpochs {
    /// Bug `assigns_unreleased_partitions`: as [`PartitionEpochs::update`], but `new` takes
    /// its partitions even from other owners.
    pub(crate) fn update_taking_over(
        &mut self,
        old: Option<&ConsumerMember>,
        new: &ConsumerMember,
    ) {
        self.release(old);
        for tp in new.owned() {
            self.owners.insert(tp, (new.member_id.clone(), new.member_epoch));
        }
    }

    /// Bug `forgets_owner_of_reclaimed_partition` (KAFKA-16147): the owners of `partitions`
    /// are forgotten, so they read as free while still owned.
    pub(crate) fn forget(&mut self, partitions: &BTreeSet<TopicPartition>) {
        self.forgotten = true;
        for tp in partitions {
            self.owners.remove(tp);
        }
    }
}
