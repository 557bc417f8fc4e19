//! Per-partition owner epochs (Kafka's ConsumerGroup.currentPartitionEpoch): which member owns
//! each partition, at which member epoch. A partition is free (epoch -1) only once its owner
//! released it, and reconciliation hands a partition to its new owner only when it is free:
//! this is what keeps two members from owning a partition at once.

use std::collections::BTreeMap;

use super::member::ConsumerMember;
use crate::TopicPartition;

/// The owner of each owned partition.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PartitionEpochs {
    pub(super) owners: BTreeMap<TopicPartition, (String, i32)>,
    /// A bug switch forgot owners (`forget`, in `bugs.rs`): two owners may then be asked for, which
    /// the debug assertion in [`Self::update`] must not take for a reconciliation bug.
    pub(super) forgotten: bool,
}

impl PartitionEpochs {
    /// The epoch of the member owning `tp`, or -1 when nobody owns it.
    pub fn epoch(&self, tp: &TopicPartition) -> i32 {
        self.owners.get(tp).map_or(-1, |(_, e)| *e)
    }

    /// The member owning `tp`, if any.
    pub fn owner(&self, tp: &TopicPartition) -> Option<&str> {
        self.owners.get(tp).map(|(m, _)| m.as_str())
    }

    /// Replaces `old`'s ownership (if any) by `new`'s (if any). Kafka throws an
    /// IllegalStateException when a partition would get two owners; reconciliation never asks
    /// for that, and here the later owner simply does not take a partition already owned by
    /// another member (the `debug_assert` catches the bug in tests).
    pub fn update(&mut self, old: Option<&ConsumerMember>, new: Option<&ConsumerMember>) {
        self.release(old);
        if let Some(new) = new {
            for tp in new.owned() {
                let taken = self.owners.get(&tp).is_some_and(|(m, _)| *m != new.member_id);
                debug_assert!(!taken || self.forgotten, "{tp} is owned by two members");
                if !taken {
                    self.owners.insert(tp, (new.member_id.clone(), new.member_epoch));
                }
            }
        }
    }

    /// A member as a load rebuilds it: it owns what it owned when stored, except partitions a
    /// member restored before it already owns (a log written by a faulty coordinator may hold
    /// two owners; the load takes the log as it is).
    pub(crate) fn restore(&mut self, member: &ConsumerMember) {
        for tp in member.owned() {
            self.owners
                .entry(tp)
                .or_insert_with(|| (member.member_id.clone(), member.member_epoch));
        }
    }

    /// Removes `old`'s entries (only those it holds itself).
    pub(super) fn release(&mut self, old: Option<&ConsumerMember>) {
        if let Some(old) = old {
            for tp in old.owned() {
                if self.owners.get(&tp).is_some_and(|(m, _)| *m == old.member_id) {
                    self.owners.remove(&tp);
                }
            }
        }
    }
}
