//! The coordinator's side of an online migration between the protocols: swapping a classic
//! group for a consumer group (upgrade) and back (downgrade), and fencing consumer group
//! members, which is where a downgrade happens. What converts and into what is
//! `consumer_group/migration.rs`; this file moves the groups, their timers, their records and
//! their history.

use kafka_protocol::error::ResponseError;

use super::GroupCoordinator;
use crate::consumer_event::{ConsumerGroupEvent, ConsumerRemovalReason, ConvertedMember};
use crate::consumer_group::migration::{upgrade_refusal, Downgrade};
use crate::consumer_group::ConsumerGroup;
use crate::{probes, CoordinatorEvent, GroupState, Millis};

impl GroupCoordinator {
    /// Kafka's convertToConsumerGroup, for a ConsumerGroupHeartbeat joining classic group
    /// `group_id`, which has members: the consumer group that replaces it, or why not
    /// (GROUP_ID_NOT_FOUND with Kafka's message, or GROUP_MAX_SIZE_REACHED when the joining
    /// member would not fit). Before the size check, as in Kafka, the classic group's parked
    /// JoinGroup and SyncGroup requests are answered REBALANCE_IN_PROGRESS. On success the
    /// classic group is gone (its timers stopped), the members' sessions run with their own
    /// timeouts, and the upgrade is recorded; the caller stores the consumer group.
    pub(crate) fn upgrade(
        &mut self,
        now: Millis,
        group_id: &str,
        member_id: &str,
    ) -> Result<ConsumerGroup, (ResponseError, String)> {
        let refused = |fx: &mut crate::effects::Effects, reason: &str| {
            fx.event(CoordinatorEvent::ConsumerGroup(ConsumerGroupEvent::UpgradeRefused {
                group: group_id.to_string(),
                member_id: member_id.to_string(),
                reason: reason.to_string(),
            }));
        };
        let not_consumer = || {
            (ResponseError::GroupIdNotFound, format!("Group {group_id} is not a consumer group."))
        };
        let Some(classic) = self.groups.get_mut(group_id) else { return Err(not_consumer()) };
        let policy = self.config.consumer_migration_policy;
        if let Some(why) = upgrade_refusal(classic, policy, self.config.consumer_group_max_size) {
            probes::MIGRATION_UPGRADE_REFUSED.hit_as(why);
            refused(&mut self.fx, why);
            return Err(not_consumer());
        }
        let state = classic.state();
        if classic.answer_parked_for_upgrade(&mut self.fx) > 0
            || matches!(state, GroupState::PreparingRebalance | GroupState::CompletingRebalance)
        {
            probes::MIGRATION_UPGRADE_DURING_REBALANCE.hit_as(state.kafka_name());
        }
        let mut converted = ConsumerGroup::from_classic(classic, &self.topics).map_err(|e| {
            probes::MIGRATION_UPGRADE_REFUSED.hit_as("malformed");
            refused(&mut self.fx, "malformed");
            let msg = format!("Cannot upgrade the classic group {group_id} to consumer group.");
            (e, msg)
        })?;
        if converted.members().count() >= self.config.consumer_group_max_size.max(0) as usize {
            probes::CONSUMER_GROUP_MAX_SIZE.hit();
            let e = ResponseError::GroupMaxSizeReached;
            return Err((e, e.to_string()));
        }
        let mut classic = self.groups.remove(group_id).expect("found above");
        classic.dissolve(&mut self.fx);
        probes::MIGRATION_UPGRADE.hit();
        let members = converted
            .members()
            .map(|m| ConvertedMember {
                member_id: m.member_id.clone(),
                member_epoch: m.member_epoch,
                partitions: m.assigned.iter().cloned().collect(),
            })
            .collect();
        self.fx.event(CoordinatorEvent::ConsumerGroup(ConsumerGroupEvent::GroupUpgraded {
            group: group_id.to_string(),
            generation: classic.generation_id(),
            members,
        }));
        converted.arm_classic_sessions(now, &mut self.fx);
        Ok(converted)
    }

    /// Kafka's consumerGroupFenceMember: removes `member_id` from consumer group `group_id`
    /// (partitions released, group epoch bumped), or, when it is the last consumer-protocol
    /// member of a group of classic members and a downgrade is allowed, turns the group back
    /// into a classic group instead. Returns whether the member was there.
    pub(crate) fn fence_consumer_member(
        &mut self,
        now: Millis,
        group_id: &str,
        member_id: &str,
        reason: ConsumerRemovalReason,
    ) -> bool {
        let Some(g) = self.consumer_groups.get_mut(group_id) else { return false };
        let policy = self.config.consumer_migration_policy;
        match g.downgrade_check(member_id, policy, self.config.group_max_size) {
            Downgrade::Allowed => {
                self.downgrade(now, group_id, member_id, reason);
                true
            }
            check => {
                if let Downgrade::Refused(why) = check {
                    probes::MIGRATION_DOWNGRADE_REFUSED.hit_as(why);
                }
                g.fence_member(member_id, reason, &self.topics, &mut self.fx)
            }
        }
    }

    /// Kafka's convertToClassicGroup after `leaving` left: the member is removed (its
    /// partitions released), then the group converts and a rebalance begins.
    fn downgrade(
        &mut self,
        now: Millis,
        group_id: &str,
        leaving: &str,
        reason: ConsumerRemovalReason,
    ) {
        let Some(g) = self.consumer_groups.get_mut(group_id) else { return };
        g.remove_member(leaving, reason, &mut self.fx);
        probes::MIGRATION_DOWNGRADE.hit_as(format_args!("{reason:?}"));
        self.convert_to_classic(now, group_id, leaving, true);
    }

    /// Kafka's validateOnlineDowngradeWithReplacedMemberId, asked before a classic static
    /// member's JoinGroup replaces `replaced`: whether that replacement leaves only classic
    /// members (then [`Self::downgrade_after_replacement`] follows the join).
    pub(crate) fn downgrade_due_to_replacement(&self, group_id: &str, replaced: &str) -> bool {
        let Some(g) = self.consumer_groups.get(group_id) else { return false };
        let policy = self.config.consumer_migration_policy;
        match g.replacement_downgrade_check(replaced, policy, self.config.group_max_size) {
            Downgrade::Allowed => true,
            Downgrade::Refused(why) => {
                probes::MIGRATION_DOWNGRADE_REFUSED.hit_as(why);
                false
            }
            Downgrade::NotDue => false,
        }
    }

    /// The downgrade of convertToClassicGroup with a joining member: the classic static member
    /// that replaced the last consumer-protocol member (`replaced`, already removed) takes its
    /// assignment, and no rebalance follows.
    pub(crate) fn downgrade_after_replacement(
        &mut self,
        now: Millis,
        group_id: &str,
        replaced: &str,
    ) {
        probes::MIGRATION_DOWNGRADE.hit_as("Replaced");
        self.convert_to_classic(now, group_id, replaced, false);
    }

    /// The classic group replaces consumer group `group_id` (whose `leaving` member is gone):
    /// every consumer group timer stops, the conversion is recorded, the classic group is
    /// stored, its members' sessions start, and with `rebalance` a rebalance begins.
    fn convert_to_classic(&mut self, now: Millis, group_id: &str, leaving: &str, rebalance: bool) {
        let Some(mut g) = self.consumer_groups.remove(group_id) else { return };
        g.disarm_all_timers(&mut self.fx);
        let mut classic = g.to_classic();
        let members = g
            .members()
            .map(|m| ConvertedMember {
                member_id: m.member_id.clone(),
                member_epoch: m.member_epoch,
                partitions: g.target_of(&m.member_id).into_iter().collect(),
            })
            .collect();
        self.fx.event(CoordinatorEvent::ConsumerGroup(ConsumerGroupEvent::GroupDowngraded {
            group: group_id.to_string(),
            group_epoch: g.group_epoch(),
            leaving_member: leaving.to_string(),
            members,
        }));
        self.fx.store_group(classic.snapshot(None, now));
        let ids: Vec<String> = classic.members().map(|m| m.member_id.clone()).collect();
        for id in ids {
            classic.touch(&id, now, &mut self.fx);
        }
        if rebalance {
            classic.prepare_rebalance(now, &self.config, &mut self.fx);
        }
        self.groups.insert(group_id.to_string(), classic);
    }
}
