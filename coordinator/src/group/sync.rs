//! The sync phase (CompletingRebalance): members park their SyncGroup until the leader's
//! assignment is stored; members of a new generation that never send SyncGroup are removed
//! when the pending-sync wait ends.

use std::collections::BTreeMap;

use bytes::Bytes;
use kafka_protocol::error::ResponseError;

use super::{Group, GroupState};
use crate::answers::{Parked, SyncResult};
use crate::effects::Effects;
use crate::event::MemberAssignment;
use crate::timers::TimerKey;
use crate::{probes, CoordinatorConfig, CoordinatorEvent, Millis, RemovalReason};

impl Group {
    /// A member's current assignment with the group's protocol: a successful SyncGroup answer.
    pub(crate) fn sync_result(&self, assignment: Bytes) -> SyncResult {
        SyncResult {
            error: 0,
            assignment,
            protocol_type: self.protocol_type.clone(),
            protocol_name: self.protocol_name.clone(),
        }
    }

    /// Parks a SyncGroup for `member_id` (an older parked one is answered
    /// REBALANCE_IN_PROGRESS).
    pub(crate) fn park_sync(&mut self, member_id: &str, parked: Parked, fx: &mut Effects) {
        let (pt, pn) = (self.protocol_type.clone(), self.protocol_name.clone());
        if let Some(m) = self.members.get_mut(member_id) {
            if let Some(old) = m.awaiting_sync.replace(parked) {
                let r = SyncResult {
                    error: ResponseError::RebalanceInProgress.code(),
                    assignment: Bytes::new(),
                    protocol_type: pt,
                    protocol_name: pn,
                };
                fx.answer_sync(old, r);
            }
        }
    }

    /// Drops the pending-sync wait (a new join phase starts, or the group is unloaded).
    pub(super) fn clear_pending_sync(&mut self, fx: &mut Effects) {
        self.pending_sync.clear();
        let key = TimerKey::Sync { group: self.group_id.clone() };
        fx.disarm(&mut self.sync_deadline, key);
    }

    /// Every member loses its assignment and parked SyncGroups get `error`.
    pub(super) fn reset_and_propagate_assignment_error(
        &mut self,
        error: ResponseError,
        now: Millis,
        fx: &mut Effects,
    ) {
        for m in self.members.values_mut() {
            m.assignment = Bytes::new();
        }
        self.propagate_assignment(error.code(), now, fx);
    }

    /// Answers every parked SyncGroup with the member's assignment and restarts its session
    /// (it was kept alive while parked).
    fn propagate_assignment(&mut self, error: i16, now: Millis, fx: &mut Effects) {
        let ids: Vec<String> = self.members.keys().cloned().collect();
        for id in ids {
            let m = self.members.get_mut(&id).expect("listed above");
            if let Some(p) = m.awaiting_sync.take() {
                let assignment = m.assignment.clone();
                fx.answer_sync(p, SyncResult { error, ..self.sync_result(assignment) });
                self.touch(&id, now, fx);
            }
        }
    }

    /// The leader's assignment arrived in CompletingRebalance: store it (members the leader
    /// left out get nothing), record it, move to Stable and answer every parked SyncGroup.
    pub(crate) fn store_assignment(
        &mut self,
        assignment: BTreeMap<String, Bytes>,
        now: Millis,
        fx: &mut Effects,
    ) {
        let mut decoded = Vec::with_capacity(self.members.len());
        for m in self.members.values_mut() {
            m.assignment = assignment.get(&m.member_id).cloned().unwrap_or_default();
            let partitions = match groupsim_wire::consumer_protocol::decode_assignment(
                &m.assignment,
            ) {
                Ok(a) => a.partitions,
                Err(e) => {
                    tracing::warn!(group = %self.group_id, member = %m.member_id, "undecodable assignment: {e}");
                    Vec::new()
                }
            };
            decoded.push(MemberAssignment { member_id: m.member_id.clone(), partitions });
        }
        decoded.sort_by(|a, b| a.member_id.cmp(&b.member_id));
        fx.event(CoordinatorEvent::AssignmentStored {
            group: self.group_id.clone(),
            generation: self.generation_id,
            assignments: decoded,
        });
        self.transition_to(GroupState::Stable, fx);
        self.propagate_assignment(0, now, fx);
    }

    /// A member sent its SyncGroup for this generation: it no longer holds up the group.
    pub(crate) fn sync_received(&mut self, member_id: &str, fx: &mut Effects) {
        self.pending_sync.remove(member_id);
        if self.pending_sync.is_empty() {
            let key = TimerKey::Sync { group: self.group_id.clone() };
            fx.disarm(&mut self.sync_deadline, key);
        }
    }

    /// Pending-sync timer: members of this generation that never sent SyncGroup are removed
    /// and the group rebalances.
    pub(crate) fn on_sync_timer(&mut self, now: Millis, cfg: &CoordinatorConfig, fx: &mut Effects) {
        self.sync_deadline = None;
        if !matches!(self.state, GroupState::CompletingRebalance | GroupState::Stable) {
            return;
        }
        let missing: Vec<String> = std::mem::take(&mut self.pending_sync).into_iter().collect();
        if missing.is_empty() {
            return;
        }
        for id in &missing {
            if self.has(id) {
                probes::REMOVED_NEVER_SYNCED.hit();
            }
            self.remove_raw(id, RemovalReason::RebalanceTimeout, fx);
        }
        self.maybe_prepare_rebalance(now, cfg, fx);
    }
}
