//! Putting and removing members. Every change of a member goes through
//! [`ConsumerGroup::put_member`] or [`ConsumerGroup::remove_member`], which keep the owner
//! epochs and the static-member index in step and record what changed: epoch and state moves,
//! partitions handed to the member, asked back from it, and released by it.

use std::collections::BTreeSet;

use super::{ConsumerGroup, ConsumerMember};
use crate::consumer_event::{ConsumerGroupEvent, ConsumerRemovalReason};
use crate::effects::Effects;
use crate::topics::TopicsImage;
use crate::{CoordinatorEvent, TopicPartition};

fn sorted(set: BTreeSet<TopicPartition>) -> Vec<TopicPartition> {
    set.into_iter().collect()
}

impl ConsumerGroup {
    pub(super) fn record(&self, fx: &mut Effects, event: ConsumerGroupEvent) {
        fx.event(CoordinatorEvent::ConsumerGroup(event));
    }

    /// Stores `new` in place of the member with the same id (if any), recording the differences.
    pub(crate) fn put_member(&mut self, new: ConsumerMember, fx: &mut Effects) {
        let group = self.group_id.clone();
        let old = self.members.remove(&new.member_id);
        let (old_epoch, old_state) = match &old {
            Some(o) => (o.member_epoch, Some(o.state)),
            None => (0, None),
        };
        let old_owned = old.as_ref().map(ConsumerMember::owned).unwrap_or_default();
        let old_assigned = old.as_ref().map(|o| o.assigned.clone()).unwrap_or_default();
        let old_revoking = old.as_ref().map(|o| o.pending_revocation.clone()).unwrap_or_default();
        self.epochs.update(old.as_ref(), Some(&new));
        if old.is_none() {
            self.record(
                fx,
                ConsumerGroupEvent::MemberJoined {
                    group: group.clone(),
                    member_id: new.member_id.clone(),
                    group_instance_id: new.instance_id.clone(),
                    client_id: new.client_id.clone(),
                },
            );
        }
        if let Some(instance) = &new.instance_id {
            self.static_members.insert(instance.clone(), new.member_id.clone());
        }
        let new_owned = new.owned();
        let released: BTreeSet<TopicPartition> =
            old_owned.difference(&new_owned).cloned().collect();
        if !released.is_empty() {
            self.record(
                fx,
                ConsumerGroupEvent::PartitionsReleased {
                    group: group.clone(),
                    member_id: new.member_id.clone(),
                    member_epoch: old_epoch,
                    partitions: sorted(released),
                },
            );
        }
        if old_epoch != new.member_epoch || old_state != Some(new.state) {
            self.record(
                fx,
                ConsumerGroupEvent::MemberEpochChanged {
                    group: group.clone(),
                    member_id: new.member_id.clone(),
                    from: old_epoch,
                    to: new.member_epoch,
                    state: new.state.kafka_name().to_string(),
                },
            );
        }
        let revoking: BTreeSet<TopicPartition> =
            new.pending_revocation.difference(&old_revoking).cloned().collect();
        if !revoking.is_empty() {
            self.record(
                fx,
                ConsumerGroupEvent::PartitionsRevoking {
                    group: group.clone(),
                    member_id: new.member_id.clone(),
                    member_epoch: new.member_epoch,
                    partitions: sorted(revoking),
                },
            );
        }
        let assigned: BTreeSet<TopicPartition> = new
            .assigned
            .difference(&old_assigned)
            .filter(|tp| !old_owned.contains(*tp))
            .cloned()
            .collect();
        if !assigned.is_empty() {
            self.record(
                fx,
                ConsumerGroupEvent::PartitionsAssigned {
                    group,
                    member_id: new.member_id.clone(),
                    member_epoch: new.member_epoch,
                    partitions: sorted(assigned),
                },
            );
        }
        self.members.insert(new.member_id.clone(), new);
    }

    /// Removes a member (Kafka's removeMember): its partitions are released, its target entry
    /// and timers go. The group epoch is not bumped here (see [`Self::fence_member`]).
    pub(crate) fn remove_member(
        &mut self,
        member_id: &str,
        reason: ConsumerRemovalReason,
        fx: &mut Effects,
    ) -> Option<ConsumerMember> {
        let mut m = self.members.remove(member_id)?;
        self.epochs.update(Some(&m), None);
        self.target.remove(member_id);
        if let Some(instance) = &m.instance_id {
            if self.static_members.get(instance).is_some_and(|id| id == member_id) {
                self.static_members.remove(instance);
            }
        }
        self.disarm_timers(&mut m, fx);
        let owned = m.owned();
        if !owned.is_empty() {
            self.record(
                fx,
                ConsumerGroupEvent::PartitionsReleased {
                    group: self.group_id.clone(),
                    member_id: member_id.to_string(),
                    member_epoch: m.member_epoch,
                    partitions: sorted(owned),
                },
            );
        }
        self.record(
            fx,
            ConsumerGroupEvent::MemberRemoved {
                group: self.group_id.clone(),
                member_id: member_id.to_string(),
                member_epoch: m.member_epoch,
                reason,
            },
        );
        Some(m)
    }

    /// Kafka's consumerGroupFenceMember: removes the member and bumps the group epoch, so the
    /// next heartbeat computes a target assignment without it.
    pub(crate) fn fence_member(
        &mut self,
        member_id: &str,
        reason: ConsumerRemovalReason,
        topics: &TopicsImage,
        fx: &mut Effects,
    ) -> bool {
        if self.remove_member(member_id, reason, fx).is_none() {
            return false;
        }
        self.subscription_metadata = self.compute_subscription_metadata(topics);
        self.bump_group_epoch(fx);
        true
    }

    /// Bumps the group epoch for a rebalance nothing in the group asked for (a fault injector's
    /// forced rebalance): the next heartbeat computes a target for the new epoch.
    pub(crate) fn bump_epoch_for_rebalance(&mut self, fx: &mut Effects) {
        if !self.members.is_empty() {
            self.bump_group_epoch(fx);
        }
    }

    /// Bumps the group epoch by one.
    pub(super) fn bump_group_epoch(&mut self, fx: &mut Effects) {
        self.group_epoch += 1;
        let event = ConsumerGroupEvent::GroupEpochBumped {
            group: self.group_id.clone(),
            epoch: self.group_epoch,
        };
        self.record(fx, event);
    }

    /// Partition counts of every topic some member subscribes to.
    pub(super) fn compute_subscription_metadata(
        &self,
        topics: &TopicsImage,
    ) -> std::collections::BTreeMap<String, i32> {
        let subscribed: Vec<String> =
            self.members.values().flat_map(|m| m.subscription(topics)).collect();
        topics.subscription_metadata(&subscribed)
    }
}
