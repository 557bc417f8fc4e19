//! SyncGroup (API 14): members fetch their assignment; the leader's request carries it.
//!
//! Rules (Kafka's doSyncGroup):
//! - Unknown group or member, or an instance id nobody holds whatever the member id (Kafka's
//!   `validateMember`): UNKNOWN_MEMBER_ID. A static member's stale member id:
//!   FENCED_INSTANCE_ID. A generation other than the current one: ILLEGAL_GENERATION (the
//!   member missed a rebalance and must rejoin).
//! - From v5, a protocol type or name differing from the group's: INCONSISTENT_GROUP_PROTOCOL.
//! - PreparingRebalance: REBALANCE_IN_PROGRESS (the generation is about to end). Empty:
//!   UNKNOWN_MEMBER_ID.
//! - CompletingRebalance: the request is parked. When the leader's arrives its assignment is
//!   appended to the offsets log with the group's metadata (members it left out get empty
//!   bytes); when the append completes, if the group is still completing that generation, the
//!   assignment is stored, the group becomes Stable and every parked SyncGroup is answered with
//!   the member's share. If the group rebalances first, parked requests get
//!   REBALANCE_IN_PROGRESS; if the coordinator moves first, NOT_COORDINATOR.
//! - Stable: the member's current assignment, at once.
//!
//! Every accepted SyncGroup counts for the pending-sync wait: members of a new generation that
//! never send one are removed after the rebalance timeout so the group cannot stay stuck.

use std::collections::BTreeMap;

use bytes::Bytes;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::{SyncGroupRequest, SyncGroupResponse};
use kafka_protocol::protocol::StrBytes;

use crate::answers::{Parked, SyncResult};
use crate::coordinator::AppendDone;
use crate::effects::Effects;
use crate::group::GroupState;
use crate::offsets_log::OffsetsRecord;
use crate::{probes, GroupCoordinator, Millis, RequestId};

/// Builds a SyncGroup response valid for `version` (protocol type and name only from v5, and
/// only on success).
pub(crate) fn response(version: i16, r: SyncResult) -> SyncGroupResponse {
    let (pt, pn) = if version >= 5 && r.error == 0 {
        (r.protocol_type.map(StrBytes::from_string), r.protocol_name.map(StrBytes::from_string))
    } else {
        (None, None)
    };
    SyncGroupResponse::default()
        .with_error_code(r.error)
        .with_assignment(r.assignment)
        .with_protocol_type(pt)
        .with_protocol_name(pn)
}

impl GroupCoordinator {
    /// SyncGroup: see the module documentation for the rules.
    pub(crate) fn handle_sync_group(
        &mut self,
        now: Millis,
        id: RequestId,
        version: i16,
        req: SyncGroupRequest,
    ) {
        let fx = &mut self.fx;
        let fail = |fx: &mut Effects, e: ResponseError| {
            fx.answer_sync(Parked { id, version }, SyncResult::error(e));
        };
        let member_id = req.member_id.to_string();
        // Bug `forgets_fenced_instances` reads no instance: the member id decides.
        let instance = (version >= 3 && !self.config.bugs.forgets_fenced_instances)
            .then(|| req.group_instance_id.as_ref().map(|s| s.to_string()))
            .flatten();
        let Some(group) = self.groups.get_mut(req.group_id.as_str()) else {
            return fail(fx, ResponseError::UnknownMemberId);
        };
        if group.is_static_member_fenced(&member_id, instance.as_deref()) {
            return fail(fx, ResponseError::FencedInstanceId);
        }
        if group.is_instance_unheld(instance.as_deref()) || !group.has(&member_id) {
            return fail(fx, ResponseError::UnknownMemberId);
        }
        if req.generation_id != group.generation_id {
            return fail(fx, ResponseError::IllegalGeneration);
        }
        if version >= 5 {
            let type_ok = req
                .protocol_type
                .as_ref()
                .is_none_or(|t| group.protocol_type.as_deref() == Some(t.as_str()));
            let name_ok = req
                .protocol_name
                .as_ref()
                .is_none_or(|n| group.protocol_name.as_deref() == Some(n.as_str()));
            if !type_ok || !name_ok {
                return fail(fx, ResponseError::InconsistentGroupProtocol);
            }
        }
        // A group holding the member is not Empty (and no Dead group is held).
        let store = match group.state {
            GroupState::PreparingRebalance => {
                probes::SYNC_IN_PREPARING_REBALANCE.hit();
                fail(fx, ResponseError::RebalanceInProgress);
                None
            }
            GroupState::CompletingRebalance => {
                group.park_sync(&member_id, Parked { id, version }, fx);
                group.sync_received(&member_id, fx);
                if group.is_leader(&member_id) {
                    let assignment: BTreeMap<String, Bytes> = req
                        .assignments
                        .into_iter()
                        .map(|a| (a.member_id.to_string(), a.assignment))
                        .collect();
                    let snapshot = group.snapshot(Some(&assignment), now);
                    Some((group.generation_id, assignment, snapshot))
                } else {
                    None
                }
            }
            GroupState::Stable | GroupState::Empty | GroupState::Dead => {
                let assignment =
                    group.member(&member_id).map(|m| m.assignment.clone()).unwrap_or_default();
                fx.answer_sync(Parked { id, version }, group.sync_result(assignment));
                group.sync_received(&member_id, fx);
                group.touch(&member_id, now, fx);
                None
            }
        };
        if let Some((generation, assignment, snapshot)) = store {
            let group = req.group_id.0.to_string();
            let then = AppendDone::Assignment { group: group.clone(), generation, assignment };
            self.append(now, &group, vec![OffsetsRecord::Group(snapshot)], then);
        }
    }
}
