//! Who is in the group: adding and removing members, and the pending members (dynamic members
//! told MEMBER_ID_REQUIRED) the join phase still waits for.

use kafka_protocol::error::ResponseError;

use super::protocols::{count, uncount};
use super::{Group, GroupState, Member};
use crate::effects::Effects;
use crate::timers::TimerKey;
use crate::{probes, CoordinatorConfig, CoordinatorEvent, Millis, RemovalReason};

impl Group {
    /// Adds a member (the first one fixes the protocol type, the first one leads).
    pub(crate) fn add(&mut self, member: Member, fx: &mut Effects) {
        if self.members.is_empty() {
            self.protocol_type = Some(member.protocol_type.clone());
        }
        if self.leader_id.is_none() {
            self.leader_id = Some(member.member_id.clone());
        }
        count(&mut self.protocol_support, member.protocol_names());
        if let Some(instance) = &member.group_instance_id {
            self.static_members.insert(instance.clone(), member.member_id.clone());
        }
        fx.event(CoordinatorEvent::MemberAdded {
            group: self.group_id.clone(),
            member_id: member.member_id.clone(),
            group_instance_id: member.group_instance_id.clone(),
            client_id: member.client_id.clone(),
        });
        self.members.insert(member.member_id.clone(), member);
    }

    /// Removes a member without any follow-up (no rebalance): answers its parked requests with
    /// UNKNOWN_MEMBER_ID, drops its timers, hands the leadership to the oldest remaining member.
    pub(super) fn remove_raw(&mut self, member_id: &str, reason: RemovalReason, fx: &mut Effects) {
        let Some(mut m) = self.members.shift_remove(member_id) else { return };
        uncount(&mut self.protocol_support, m.protocol_names());
        let key = self.session_key(member_id);
        fx.disarm(&mut m.session_deadline, key);
        m.fail_parked("", ResponseError::UnknownMemberId, fx);
        if let Some(instance) = &m.group_instance_id {
            if self.static_members.get(instance).map(String::as_str) == Some(member_id) {
                self.static_members.remove(instance);
            }
        }
        self.pending_sync.remove(member_id);
        if self.is_leader(member_id) {
            if self.state == GroupState::CompletingRebalance {
                probes::LEADER_LOST_IN_COMPLETING_REBALANCE.hit();
            }
            self.leader_id = self.members.keys().next().cloned();
        }
        fx.event(CoordinatorEvent::MemberRemoved {
            group: self.group_id.clone(),
            member_id: member_id.to_string(),
            reason,
        });
    }

    /// Kafka's removeMemberAndUpdateGroup: remove, then rebalance (Stable, CompletingRebalance)
    /// or see whether the join phase can now complete (PreparingRebalance).
    pub(crate) fn remove_member(
        &mut self,
        member_id: &str,
        reason: RemovalReason,
        now: Millis,
        cfg: &CoordinatorConfig,
        fx: &mut Effects,
    ) {
        if !self.has(member_id) {
            return;
        }
        self.remove_raw(member_id, reason, fx);
        match self.state {
            GroupState::Stable | GroupState::CompletingRebalance => {
                self.maybe_prepare_rebalance(now, cfg, fx)
            }
            GroupState::PreparingRebalance => self.try_complete_join(now, fx),
            GroupState::Empty | GroupState::Dead => {}
        }
    }

    fn pending_member_key(&self, member_id: &str) -> TimerKey {
        TimerKey::PendingMember { group: self.group_id.clone(), member: member_id.to_string() }
    }

    /// Registers a pending member (told MEMBER_ID_REQUIRED) that must rejoin by `now + timeout`.
    pub(crate) fn add_pending_member(
        &mut self,
        member_id: &str,
        now: Millis,
        timeout_ms: u64,
        fx: &mut Effects,
    ) {
        let at = now + timeout_ms;
        let key = self.pending_member_key(member_id);
        let mut slot = self.pending_members.get(member_id).copied();
        fx.rearm(&mut slot, key, at);
        self.pending_members.insert(member_id.to_string(), at);
    }

    /// Forgets a pending member; true if it was pending.
    pub(crate) fn remove_pending_member(&mut self, member_id: &str, fx: &mut Effects) -> bool {
        match self.pending_members.remove(member_id) {
            Some(at) => {
                let key = self.pending_member_key(member_id);
                fx.disarm(&mut Some(at), key);
                true
            }
            None => false,
        }
    }

    /// A pending member never came back with its member id.
    pub(crate) fn on_pending_member_timer(
        &mut self,
        member_id: &str,
        now: Millis,
        fx: &mut Effects,
    ) {
        if self.pending_members.remove(member_id).is_none() {
            return;
        }
        probes::PENDING_MEMBER_EXPIRED.hit();
        self.pending_member_removed(member_id, RemovalReason::PendingJoinExpired, now, fx);
    }

    /// A pending member left (LeaveGroup) before rejoining.
    pub(crate) fn leave_pending_member(&mut self, member_id: &str, now: Millis, fx: &mut Effects) {
        if self.remove_pending_member(member_id, fx) {
            self.pending_member_removed(member_id, RemovalReason::LeaveGroup, now, fx);
        }
    }

    /// Records a pending member's removal; the join phase may no longer have to wait.
    fn pending_member_removed(
        &mut self,
        member_id: &str,
        reason: RemovalReason,
        now: Millis,
        fx: &mut Effects,
    ) {
        fx.event(CoordinatorEvent::MemberRemoved {
            group: self.group_id.clone(),
            member_id: member_id.to_string(),
            reason,
        });
        self.try_complete_join(now, fx);
    }
}
