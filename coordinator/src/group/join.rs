//! The join phase (PreparingRebalance): members rejoin with their JoinGroup parked until the
//! phase completes (everyone rejoined, or the rebalance timeout / initial delay ran out); then
//! a new generation starts and every parked JoinGroup is answered.

use kafka_protocol::error::ResponseError;

use super::{Group, GroupState, JoinTimer, Member, MemberProtocol};
use crate::answers::{JoinResult, JoinedMember, Parked};
use crate::effects::Effects;
use crate::timers::TimerKey;
use crate::{probes, CoordinatorConfig, CoordinatorEvent, Millis, RemovalReason};

impl Group {
    /// Every member with the metadata it sent for the current protocol, as the leader's
    /// JoinGroup answer lists them.
    pub(crate) fn joined_members(&self) -> Vec<JoinedMember> {
        let protocol = self.protocol_name.clone().unwrap_or_default();
        self.members
            .values()
            .map(|m| JoinedMember {
                member_id: m.member_id.clone(),
                group_instance_id: m.group_instance_id.clone(),
                metadata: m.metadata(&protocol),
            })
            .collect()
    }

    /// A successful JoinGroup answer for `member_id` in the current generation, naming
    /// `leader` and listing `members` (the leader's answer only).
    pub(crate) fn join_result(
        &self,
        member_id: &str,
        leader: String,
        members: Vec<JoinedMember>,
    ) -> JoinResult {
        JoinResult {
            error: 0,
            member_id: member_id.to_string(),
            generation_id: self.generation_id,
            protocol_type: self.protocol_type.clone(),
            protocol_name: self.protocol_name.clone(),
            leader,
            members,
            skip_assignment: false,
        }
    }

    /// Parks a JoinGroup for `member_id`. A JoinGroup it had parked already (a retry on another
    /// connection) is answered REBALANCE_IN_PROGRESS so the driver never holds an orphan.
    pub(crate) fn park_join(&mut self, member_id: &str, parked: Parked, fx: &mut Effects) {
        if let Some(m) = self.members.get_mut(member_id) {
            if let Some(old) = m.awaiting_join.replace(parked) {
                fx.answer_join(
                    old,
                    JoinResult::error(member_id, ResponseError::RebalanceInProgress),
                );
            }
        }
    }

    /// Kafka's addMemberAndRebalance: a new member joins with its JoinGroup parked. Until the
    /// join phase answers it, the new-member join timeout (not the session timeout) bounds it.
    pub(crate) fn add_member_and_rebalance(
        &mut self,
        member: Member,
        parked: Parked,
        now: Millis,
        cfg: &CoordinatorConfig,
        fx: &mut Effects,
    ) {
        let member_id = member.member_id.clone();
        if self.state == GroupState::PreparingRebalance && self.generation_id == 0 {
            self.new_member_added = true;
        }
        self.remove_pending_member(&member_id, fx);
        let mut member = member;
        member.is_new = true;
        member.joined_at = now;
        member.awaiting_join = Some(parked);
        self.add(member, fx);
        self.arm_session(&member_id, now + cfg.new_member_join_timeout_ms.max(0) as u64, fx);
        self.maybe_prepare_rebalance(now, cfg, fx);
    }

    /// Kafka's updateMemberAndRebalance: a known member rejoins (with new metadata, or as the
    /// leader, or while a rebalance is under way).
    pub(crate) fn update_member_and_rebalance(
        &mut self,
        member_id: &str,
        protocols: Vec<MemberProtocol>,
        parked: Parked,
        now: Millis,
        cfg: &CoordinatorConfig,
        fx: &mut Effects,
    ) {
        self.update_protocols(member_id, protocols);
        self.park_join(member_id, parked, fx);
        self.maybe_prepare_rebalance(now, cfg, fx);
    }

    /// Starts a rebalance if the state allows one (Empty, Stable, CompletingRebalance).
    pub(crate) fn maybe_prepare_rebalance(
        &mut self,
        now: Millis,
        cfg: &CoordinatorConfig,
        fx: &mut Effects,
    ) {
        if self.state.can_transition_to(GroupState::PreparingRebalance) {
            self.prepare_rebalance(now, cfg, fx);
        }
    }

    /// Kafka's prepareRebalance: parked SyncGroups are told REBALANCE_IN_PROGRESS, the pending
    /// sync wait is dropped, and the join phase timer starts: the initial delay for an Empty
    /// group, else the largest rebalance timeout. A normal join phase completes at once if
    /// everyone has already rejoined.
    pub(crate) fn prepare_rebalance(
        &mut self,
        now: Millis,
        cfg: &CoordinatorConfig,
        fx: &mut Effects,
    ) {
        if self.state == GroupState::CompletingRebalance {
            self.reset_and_propagate_assignment_error(ResponseError::RebalanceInProgress, now, fx);
        }
        self.clear_pending_sync(fx);
        let rebalance_timeout = self.rebalance_timeout_ms();
        let timer = if self.state == GroupState::Empty {
            let delay = cfg.initial_rebalance_delay_ms.max(0) as u64;
            JoinTimer {
                deadline: now + delay,
                initial_remaining_ms: Some(rebalance_timeout.saturating_sub(delay)),
            }
        } else {
            JoinTimer { deadline: now + rebalance_timeout, initial_remaining_ms: None }
        };
        self.set_join_timer(Some(timer), fx);
        self.transition_to(GroupState::PreparingRebalance, fx);
        self.try_complete_join(now, fx);
    }

    /// Arms (or with `None` stops) the join phase's timer.
    pub(crate) fn set_join_timer(&mut self, timer: Option<JoinTimer>, fx: &mut Effects) {
        let key = TimerKey::Join { group: self.group_id.clone() };
        let mut slot = self.join_timer.map(|t| t.deadline);
        match timer {
            Some(t) => fx.rearm(&mut slot, key, t.deadline),
            None => fx.disarm(&mut slot, key),
        }
        self.join_timer = timer;
    }

    /// Kafka's DelayedJoin.tryComplete: complete the join phase early once every member has
    /// rejoined (never for the initial delayed join, which always waits its delay).
    pub(crate) fn try_complete_join(&mut self, now: Millis, fx: &mut Effects) {
        if self.state != GroupState::PreparingRebalance {
            return;
        }
        let normal = self.join_timer.is_some_and(|t| t.initial_remaining_ms.is_none());
        if normal && self.has_all_members_joined() {
            self.complete_join(now, fx);
        }
    }

    /// The join timer fired: extend the initial delay while new members keep arriving, else
    /// complete the join phase.
    pub(crate) fn on_join_timer(&mut self, now: Millis, cfg: &CoordinatorConfig, fx: &mut Effects) {
        let Some(timer) = self.join_timer.take() else { return };
        if self.state != GroupState::PreparingRebalance {
            return;
        }
        if let Some(remaining) = timer.initial_remaining_ms {
            if self.new_member_added && remaining > 0 {
                self.new_member_added = false;
                let delay = (cfg.initial_rebalance_delay_ms.max(0) as u64).min(remaining);
                let next = JoinTimer {
                    deadline: now + delay,
                    initial_remaining_ms: Some(remaining - delay),
                };
                self.set_join_timer(Some(next), fx);
                return;
            }
        }
        self.complete_join(now, fx);
    }

    /// Kafka's onCompleteJoin: dynamic members that did not rejoin are removed, the leader is
    /// re-elected among the rejoined members if needed, the generation is bumped, the protocol
    /// chosen, and every parked JoinGroup answered (the leader gets the members' metadata).
    /// Static members that did not rejoin stay (their session decides); if only such members
    /// remain the join phase waits another rebalance timeout.
    pub(crate) fn complete_join(&mut self, now: Millis, fx: &mut Effects) {
        self.set_join_timer(None, fx);
        self.new_member_added = false;
        let not_rejoined: Vec<String> = self
            .members
            .values()
            .filter(|m| m.awaiting_join.is_none() && m.group_instance_id.is_none())
            .map(|m| m.member_id.clone())
            .collect();
        for id in not_rejoined {
            probes::REMOVED_REBALANCE_TIMEOUT.hit();
            self.remove_raw(&id, RemovalReason::RebalanceTimeout, fx);
        }
        if !self.members.is_empty() && !self.maybe_elect_new_joined_leader() {
            // Only static members that have not rejoined are left: wait for them (or for their
            // sessions to expire) another rebalance timeout.
            let t = JoinTimer {
                deadline: now + self.rebalance_timeout_ms().max(1),
                initial_remaining_ms: None,
            };
            self.set_join_timer(Some(t), fx);
            return;
        }
        self.generation_id += 1;
        if self.members.is_empty() {
            self.protocol_name = None;
            self.leader_id = None;
            self.transition_to(GroupState::Empty, fx);
            self.generation_started(fx);
            // Kafka stores the Empty group (with no assignment) without waiting for it.
            fx.store_group(self.snapshot(None, now));
            return;
        }
        self.protocol_name = self.select_protocol();
        self.transition_to(GroupState::CompletingRebalance, fx);
        self.generation_started(fx);

        let leader = self.leader_id.clone().unwrap_or_default();
        let all = self.joined_members();
        let ids: Vec<String> = self.members.keys().cloned().collect();
        for id in &ids {
            let m = self.members.get_mut(id).expect("member listed above");
            m.is_new = false;
            if let Some(p) = m.awaiting_join.take() {
                let members = if *id == leader { all.clone() } else { Vec::new() };
                fx.answer_join(p, self.join_result(id, leader.clone(), members));
            }
            self.touch(id, now, fx);
        }
        // Kafka's pending-sync wait: whoever has not sent SyncGroup within the rebalance
        // timeout is removed, so a lost SyncGroup cannot leave the group stuck.
        self.pending_sync = ids.into_iter().collect();
        let key = TimerKey::Sync { group: self.group_id.clone() };
        let at = now + self.rebalance_timeout_ms();
        fx.rearm(&mut self.sync_deadline, key, at);
    }

    fn generation_started(&self, fx: &mut Effects) {
        let mut members: Vec<String> = self.members.keys().cloned().collect();
        members.sort();
        fx.event(CoordinatorEvent::GenerationStarted {
            group: self.group_id.clone(),
            generation: self.generation_id,
            protocol: self.protocol_name.clone(),
            leader: self.leader_id.clone(),
            members,
        });
    }

    /// Kafka's maybeElectNewJoinedLeader: keep the leader if it rejoined, else promote the
    /// first member that did. False if no member rejoined.
    fn maybe_elect_new_joined_leader(&mut self) -> bool {
        if let Some(l) = &self.leader_id {
            if self.members.get(l).is_some_and(|m| m.awaiting_join.is_some()) {
                return true;
            }
        }
        match self.members.values().find(|m| m.awaiting_join.is_some()) {
            Some(m) => {
                self.leader_id = Some(m.member_id.clone());
                true
            }
            None => false,
        }
    }
}
