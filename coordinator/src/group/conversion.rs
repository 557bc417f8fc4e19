//! The classic group's side of an online migration between the protocols (KIP-848):
//! handing its members over to a consumer group (upgrade), and being rebuilt from a consumer
//! group's classic members (downgrade). The consumer group's side, which decides whether a
//! conversion is allowed and translates the members, is `consumer_group/migration.rs`.

use bytes::Bytes;
use kafka_protocol::error::ResponseError;

use super::protocols::count;
use super::{Group, GroupState, Member};
use crate::answers::{JoinResult, SyncResult};
use crate::effects::Effects;

impl Group {
    /// Kafka's completeAllJoinFutures and completeAllSyncFutures with REBALANCE_IN_PROGRESS, as
    /// convertToConsumerGroup does before the upgrade: members waiting in a join phase or for
    /// their assignment rejoin, and find the consumer group. Returns how many were answered.
    pub(crate) fn answer_parked_for_upgrade(&mut self, fx: &mut Effects) -> usize {
        let mut answered = 0;
        for m in self.members.values_mut() {
            if let Some(p) = m.awaiting_join.take() {
                let r = JoinResult::error(&m.member_id, ResponseError::RebalanceInProgress);
                fx.answer_join(p, r);
                answered += 1;
            }
            if let Some(p) = m.awaiting_sync.take() {
                fx.answer_sync(p, SyncResult::error(ResponseError::RebalanceInProgress));
                answered += 1;
            }
        }
        answered
    }

    /// The group is replaced by a consumer group: every timer stops (sessions, pending
    /// members, the join phase, the pending-sync wait). No state change is recorded: the group
    /// is not Dead, it is gone (Kafka writes its tombstone).
    pub(crate) fn dissolve(&mut self, fx: &mut Effects) {
        let ids: Vec<String> = self.members.keys().cloned().collect();
        for id in &ids {
            let key = self.session_key(id);
            if let Some(m) = self.members.get_mut(id) {
                fx.disarm(&mut m.session_deadline, key);
            }
        }
        let pending: Vec<String> = self.pending_members.keys().cloned().collect();
        for id in pending {
            self.remove_pending_member(&id, fx);
        }
        self.set_join_timer(None, fx);
        self.clear_pending_sync(fx);
    }

    /// Kafka's ClassicGroup.fromConsumerGroup: a Stable group of `generation` with protocol type
    /// `consumer` holding `members` (in this order; the first leads), the protocol chosen by
    /// their vote. Assignments are set afterwards ([`Self::set_assignment`]), once the protocol
    /// (whose subscription version they are encoded for) is known; sessions are armed by the
    /// caller.
    pub(crate) fn from_converted(group_id: &str, generation: i32, members: Vec<Member>) -> Group {
        let mut g = Group::new(group_id.to_string());
        g.generation_id = generation;
        g.protocol_type = Some("consumer".to_string());
        for m in members {
            count(&mut g.protocol_support, m.protocol_names());
            if let Some(instance) = &m.group_instance_id {
                g.static_members.insert(instance.clone(), m.member_id.clone());
            }
            if g.leader_id.is_none() {
                g.leader_id = Some(m.member_id.clone());
            }
            g.members.insert(m.member_id.clone(), m);
        }
        g.protocol_name = g.select_protocol();
        g.state = if g.members.is_empty() { GroupState::Empty } else { GroupState::Stable };
        g
    }

    /// Sets a member's current assignment (a converted group's).
    pub(crate) fn set_assignment(&mut self, member_id: &str, assignment: Bytes) {
        if let Some(m) = self.members.get_mut(member_id) {
            m.assignment = assignment;
        }
    }
}
