//! The coordinator's side of KIP-848 consumer groups: their timers, loading them from the
//! offsets log, unloading them, and the topics image they are assigned from.

use crate::consumer_event::{ConsumerGroupEvent, LoadedMember};
use crate::consumer_group::records::ConsumerGroupValue;
use crate::consumer_group::timers::MemberTimer;
use crate::consumer_group::{ConsumerGroup, ConsumerGroupState};
use crate::topics::TopicsImage;
use crate::{CoordinatorEvent, GroupCoordinator, Millis};

impl GroupCoordinator {
    /// Replaces the topics image consumer groups are assigned from (the broker refreshes it
    /// from its partition logs; tests set it).
    pub fn set_topics(&mut self, topics: TopicsImage) {
        self.topics = topics;
    }

    /// The topics image.
    pub fn topics(&self) -> &TopicsImage {
        &self.topics
    }

    /// A consumer group, if this coordinator has it.
    pub fn consumer_group(&self, group_id: &str) -> Option<&ConsumerGroup> {
        self.consumer_groups.get(group_id)
    }

    /// State of a consumer group.
    pub fn consumer_group_state(&self, group_id: &str) -> Option<ConsumerGroupState> {
        self.consumer_groups.get(group_id).map(ConsumerGroup::state)
    }

    /// Queues a fire-and-forget snapshot of a consumer group (after a timer changed it).
    pub(crate) fn store_consumer_group(&mut self, group_id: &str, now: Millis) {
        if let Some(g) = self.consumer_groups.get(group_id) {
            self.fx.store_consumer_group(g.snapshot(now));
        }
    }

    /// One of a consumer group member's timers fired: it is fenced if the timer says so
    /// (which may turn the group back into a classic group).
    pub(crate) fn on_consumer_timer(
        &mut self,
        now: Millis,
        group: &str,
        member: &str,
        timer: MemberTimer,
    ) {
        let Some(g) = self.consumer_groups.get_mut(group) else { return };
        let Some(reason) = g.timer_fired(member, timer) else { return };
        if self.fence_consumer_member(now, group, member, reason) {
            self.store_consumer_group(group, now);
        }
    }

    /// Rebuilds a consumer group loaded from offsets partition `partition`, records it, and
    /// gives every member a fresh session (and a rebalance timeout if it is revoking).
    pub(crate) fn load_consumer_group(
        &mut self,
        now: Millis,
        partition: i32,
        value: &ConsumerGroupValue,
    ) {
        let mut g = ConsumerGroup::from_snapshot(value);
        if g.members().any(|m| m.uses_classic_protocol()) {
            crate::probes::MIGRATION_LOADED_MIXED_GROUP.hit();
        }
        let members = g
            .members()
            .map(|m| LoadedMember {
                member_id: m.member_id.clone(),
                group_instance_id: m.instance_id.clone(),
                member_epoch: m.member_epoch,
                owned: m.owned().into_iter().collect(),
                revoking: m.pending_revocation.iter().cloned().collect(),
                state: m.state.kafka_name().to_string(),
                target: g.target_of(&m.member_id).into_iter().collect(),
                classic_protocol: m.uses_classic_protocol(),
            })
            .collect();
        self.fx.event(CoordinatorEvent::ConsumerGroup(ConsumerGroupEvent::GroupLoaded {
            group: value.group_id.clone(),
            partition,
            group_epoch: g.group_epoch(),
            assignment_epoch: g.assignment_epoch(),
            members,
        }));
        g.arm_loaded_timers(now, self.config.consumer_session_timeout_ms, &mut self.fx);
        self.consumer_groups.insert(value.group_id.clone(), g);
    }

    /// Forgets a consumer group (its partition moved away): its timers stop.
    pub(crate) fn unload_consumer_group(&mut self, group_id: &str) {
        let Some(g) = self.consumer_groups.remove(group_id) else { return };
        let member_ids: Vec<String> = g.members().map(|m| m.member_id.clone()).collect();
        self.fx.timers.retain(|(_, k)| match k {
            crate::timers::TimerKey::ConsumerSession { group, member }
            | crate::timers::TimerKey::ConsumerRebalance { group, member }
            | crate::timers::TimerKey::ConsumerClassicJoin { group, member }
            | crate::timers::TimerKey::ConsumerClassicSync { group, member } => {
                !(group == group_id && member_ids.contains(member))
            }
            _ => true,
        });
    }
}
