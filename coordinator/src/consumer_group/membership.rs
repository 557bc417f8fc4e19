//! Putting and removing members. Every change of a member goes through
//! [`ConsumerGroup::put_member`] or [`ConsumerGroup::remove_member`], which keep the owner
//! epochs and the static-member index in step and record what changed: epoch and state moves,
//! partitions handed to the member, asked back from it, and released by it.

use std::collections::BTreeSet;

use super::{ConsumerGroup, ConsumerMember};
use crate::config::CoordinatorBugs;
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
    /// `bugs` are the coordinator's deliberate bugs that touch owner epochs (all off normally).
    pub(crate) fn put_member(
        &mut self,
        new: ConsumerMember,
        bugs: &CoordinatorBugs,
        fx: &mut Effects,
    ) {
        let group = self.group_id.clone();
        let old = self.members.remove(&new.member_id);
        let (old_epoch, old_state) = match &old {
            Some(o) => (o.member_epoch, Some(o.state)),
            None => (0, None),
        };
        let old_owned = old.as_ref().map(ConsumerMember::owned).unwrap_or_default();
        let old_assigned = old.as_ref().map(|o| o.assigned.clone()).unwrap_or_default();
        let old_revoking = old.as_ref().map(|o| o.pending_revocation.clone()).unwrap_or_default();
        // Kafka updates owner epochs when it replays a member's current-assignment record,
        // written only when the epoch or the partitions change (a no-op otherwise).
        let assignment_changed = old.as_ref().is_none_or(|o| {
            (o.member_epoch, &o.assigned, &o.pending_revocation)
                != (new.member_epoch, &new.assigned, &new.pending_revocation)
        });
        if bugs.assigns_unreleased_partitions {
            self.epochs.update_taking_over(old.as_ref(), &new);
        } else if assignment_changed {
            self.epochs.update(old.as_ref(), Some(&new));
        }
        let reclaimed: BTreeSet<TopicPartition> =
            old_revoking.intersection(&new.assigned).cloned().collect();
        if !reclaimed.is_empty() {
            crate::probes::CONSUMER_RECONCILE_RECLAIMED.hit();
            if bugs.forgets_owner_of_reclaimed_partition {
                self.epochs.forget(&reclaimed);
            }
        }
        if old.is_none() {
            self.record(
                fx,
                ConsumerGroupEvent::MemberJoined {
                    group: group.clone(),
                    member_id: new.member_id.clone(),
                    group_instance_id: new.instance_id.clone(),
                    client_id: new.client_id.clone(),
                    classic_protocol: new.uses_classic_protocol(),
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

    /// Kafka's hasMemberSubscriptionChanged with the subscription metadata check: `updated`
    /// (about to replace a member that subscribed to `old_topics`) bumps the group epoch if its
    /// subscription changed or the partition counts of the subscribed topics did.
    pub(super) fn maybe_bump_for(
        &mut self,
        old: &ConsumerMember,
        updated: &ConsumerMember,
        topics: &TopicsImage,
        fx: &mut Effects,
    ) {
        let mut bump = updated.subscribed_topics != old.subscribed_topics
            || updated.subscribed_topic_regex != old.subscribed_topic_regex;
        let subscribed: Vec<String> = self
            .members
            .values()
            .filter(|m| m.member_id != updated.member_id)
            .chain(std::iter::once(updated))
            .flat_map(|m| m.subscription(topics))
            .collect();
        let metadata = topics.subscription_metadata(&subscribed);
        if metadata != self.subscription_metadata {
            self.subscription_metadata = metadata;
            bump = true;
        }
        if bump {
            self.bump_group_epoch(fx);
        }
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
