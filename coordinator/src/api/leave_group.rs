//! LeaveGroup (API 13): members leave without waiting for their session to expire.
//!
//! v0–2 name one member id and carry its error at the top level; v3+ name a batch of members
//! (member id and/or group.instance.id) and answer each one (KIP-345). Rules per member
//! (Kafka's handleLeaveGroup):
//! - A member id that is stale for its instance id: FENCED_INSTANCE_ID.
//! - A pending member (told MEMBER_ID_REQUIRED) is simply forgotten: NONE.
//! - Neither the member id nor the instance id known: UNKNOWN_MEMBER_ID (also for an unknown
//!   group). An instance id nobody holds: UNKNOWN_MEMBER_ID whatever the member id (Kafka finds
//!   a member named by instance id by its instance only).
//! - Otherwise the member (found by instance id first) is removed: Stable and
//!   CompletingRebalance groups rebalance (a new leader is chosen if the leader left),
//!   PreparingRebalance may now complete, and the last member leaving leaves the group Empty.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::leave_group_response::MemberResponse;
use kafka_protocol::messages::{LeaveGroupRequest, LeaveGroupResponse};
use kafka_protocol::protocol::StrBytes;

use crate::{GroupCoordinator, Millis, RemovalReason, RequestId};

impl GroupCoordinator {
    /// LeaveGroup: see the module documentation for the rules.
    pub(crate) fn handle_leave_group(
        &mut self,
        now: Millis,
        id: RequestId,
        version: i16,
        req: LeaveGroupRequest,
    ) {
        let leaving = leaving_members(version, &req);
        let cfg = &self.config;
        let fx = &mut self.fx;
        let (top_error, results): (i16, Vec<i16>) = match self.groups.get_mut(req.group_id.as_str())
        {
            None => (0, leaving.iter().map(|_| ResponseError::UnknownMemberId.code()).collect()),
            Some(g) => {
                let mut errors = Vec::with_capacity(leaving.len());
                for (member_id, instance) in &leaving {
                    let instance = instance.as_deref();
                    let static_id = instance.and_then(|i| g.static_member(i)).map(str::to_string);
                    // Bug `forgets_fenced_instances` skips the instance check.
                    let error = if !member_id.is_empty()
                        && !cfg.bugs.forgets_fenced_instances
                        && g.is_static_member_fenced(member_id, instance)
                    {
                        ResponseError::FencedInstanceId.code()
                    } else if g.pending_members.contains_key(member_id.as_str()) {
                        g.leave_pending_member(member_id, now, fx);
                        0
                    } else if !cfg.bugs.forgets_fenced_instances && g.is_instance_unheld(instance) {
                        // Kafka looks a member named by instance up by its instance only.
                        ResponseError::UnknownMemberId.code()
                    } else if let Some(target) =
                        static_id.or_else(|| g.has(member_id).then(|| member_id.clone()))
                    {
                        g.remove_member(&target, RemovalReason::LeaveGroup, now, cfg, fx);
                        0
                    } else {
                        ResponseError::UnknownMemberId.code()
                    };
                    errors.push(error);
                }
                (0, errors)
            }
        };
        let outcomes = leaving
            .into_iter()
            .zip(results)
            .map(|((member_id, instance), error)| (member_id, instance, error))
            .collect();
        fx.respond(id, response(version, top_error, outcomes));
    }
}

/// The members a LeaveGroup names, as (member id, instance id): v0–2 name one member id, v3+ a
/// batch (KIP-345).
pub(crate) fn leaving_members(
    version: i16,
    req: &LeaveGroupRequest,
) -> Vec<(String, Option<String>)> {
    if version >= 3 {
        req.members
            .iter()
            .map(|m| (m.member_id.to_string(), m.group_instance_id.as_ref().map(|s| s.to_string())))
            .collect()
    } else {
        vec![(req.member_id.to_string(), None)]
    }
}

/// A LeaveGroup answer for `version` from each member's (member id, instance id, error): v3+
/// answers per member; v0–2 carry the one member's outcome (or `top_error`) at the top level.
pub(crate) fn response(
    version: i16,
    top_error: i16,
    outcomes: Vec<(String, Option<String>, i16)>,
) -> LeaveGroupResponse {
    if version >= 3 {
        let members = outcomes
            .into_iter()
            .map(|(member_id, instance, error)| {
                MemberResponse::default()
                    .with_member_id(StrBytes::from_string(member_id))
                    .with_group_instance_id(instance.map(StrBytes::from_string))
                    .with_error_code(error)
            })
            .collect();
        LeaveGroupResponse::default().with_error_code(top_error).with_members(members)
    } else {
        // One member: its outcome is the request's outcome.
        let error =
            if top_error != 0 { top_error } else { outcomes.first().map_or(0, |(_, _, e)| *e) };
        LeaveGroupResponse::default().with_error_code(error)
    }
}
