//! JoinGroup (API 11): a member asks to be part of the group's next generation.
//!
//! Rules, in the order Kafka's GroupCoordinator applies them:
//! - An empty group id is INVALID_GROUP_ID; a session timeout outside
//!   `[group.min.session.timeout.ms, group.max.session.timeout.ms]` is INVALID_SESSION_TIMEOUT
//!   (the coordinator could not detect failures within the member's expectations).
//! - A member id the coordinator never handed out is UNKNOWN_MEMBER_ID, so the client resets
//!   its id and joins as new.
//! - A new member (empty member id) is refused with GROUP_MAX_SIZE_REACHED once the group holds
//!   `group.max.size` members (pending ones included).
//! - Protocol type mismatch, or no protocol in common with every member, is
//!   INCONSISTENT_GROUP_PROTOCOL: the group could not choose an assignor.
//! - From v4 a dynamic new member first gets MEMBER_ID_REQUIRED with its new member id and
//!   must rejoin with it (KIP-394): the coordinator then knows the id before the member waits in
//!   a long join, and a client retrying after a timeout does not leave orphans. Below v4 the
//!   member is added at once.
//! - A static member (group.instance.id, v5+) rejoining with an empty member id takes over its
//!   instance: the old member id is fenced; in a Stable group whose selected protocol its
//!   protocols do not change no rebalance happens. From v9 the replacement of the leader is told it leads, with the
//!   members and SkipAssignment (KIP-814); older versions hear the old leader id.
//! - A follower rejoining a Stable group with unchanged metadata just gets the current
//!   generation back; the leader (which may have seen topic metadata change) or anyone with
//!   changed metadata starts a rebalance.
//! - Otherwise the request is parked until the join phase completes.
//!
//! A group id naming a KIP-848 consumer group with members is served by that group after the
//! first two checks (`classic_to_consumer_group.rs`); an empty consumer group gives way.

use std::collections::BTreeSet;

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::join_group_response::JoinGroupResponseMember;
use kafka_protocol::messages::{JoinGroupRequest, JoinGroupResponse};
use kafka_protocol::protocol::StrBytes;

use crate::answers::{JoinResult, Parked};
use crate::coordinator::generate_member_id;
use crate::effects::Effects;
use crate::group::{Group, GroupState, Member, MemberProtocol};
use crate::{CoordinatorConfig, GroupCoordinator, Millis, RequestId};

/// Builds a JoinGroup response valid for `version`: `protocol_type` only from v7 (below v7 a
/// missing protocol name is sent as an empty string, as Kafka does for older clients), member
/// instance ids only from v5.
pub(crate) fn response(version: i16, r: JoinResult) -> JoinGroupResponse {
    let protocol_name = match r.protocol_name {
        Some(p) => Some(StrBytes::from_string(p)),
        None if version < 7 => Some(StrBytes::from_static_str("")),
        None => None,
    };
    let protocol_type =
        if version >= 7 { r.protocol_type.map(StrBytes::from_string) } else { None };
    let members = r
        .members
        .into_iter()
        .map(|m| {
            JoinGroupResponseMember::default()
                .with_member_id(StrBytes::from_string(m.member_id))
                .with_group_instance_id(if version >= 5 {
                    m.group_instance_id.map(StrBytes::from_string)
                } else {
                    None
                })
                .with_metadata(m.metadata)
        })
        .collect();
    JoinGroupResponse::default()
        .with_error_code(r.error)
        .with_generation_id(r.generation_id)
        .with_protocol_type(protocol_type)
        .with_protocol_name(protocol_name)
        .with_leader(StrBytes::from_string(r.leader))
        .with_member_id(StrBytes::from_string(r.member_id))
        .with_members(members)
        .with_skip_assignment(version >= 9 && r.skip_assignment)
}

/// The fields of a JoinGroup request that matter, read according to its version.
struct JoinParams {
    member_id: String,
    group_instance_id: Option<String>,
    client_id: String,
    session_timeout_ms: i32,
    rebalance_timeout_ms: i32,
    protocol_type: String,
    protocols: Vec<MemberProtocol>,
    protocol_names: BTreeSet<String>,
    parked: Parked,
}

impl JoinParams {
    fn new_member(&self, member_id: String) -> Member {
        Member {
            member_id,
            group_instance_id: self.group_instance_id.clone(),
            client_id: self.client_id.clone(),
            client_host: String::new(),
            rebalance_timeout_ms: self.rebalance_timeout_ms,
            session_timeout_ms: self.session_timeout_ms,
            protocol_type: self.protocol_type.clone(),
            protocols: self.protocols.clone(),
            assignment: Default::default(),
            awaiting_join: None,
            awaiting_sync: None,
            is_new: false,
            joined_at: 0,
            session_deadline: None,
        }
    }
}

/// The answer to a member joining a group that needs no rebalance: the current generation.
/// The leader also gets the members (it may have lost its first answer).
fn current_generation(
    group: &Group,
    member_id: &str,
    leader: String,
    with_members: bool,
) -> JoinResult {
    let members = if with_members { group.joined_members() } else { Vec::new() };
    group.join_result(member_id, leader, members)
}

impl GroupCoordinator {
    /// JoinGroup: see the module documentation for the rules.
    pub(crate) fn handle_join_group(
        &mut self,
        now: Millis,
        id: RequestId,
        version: i16,
        client_id: &str,
        req: JoinGroupRequest,
    ) {
        let group_id = req.group_id.0.to_string();
        let p = JoinParams {
            member_id: req.member_id.to_string(),
            group_instance_id: if version >= 5 {
                req.group_instance_id.as_ref().map(|s| s.to_string())
            } else {
                None
            },
            client_id: client_id.to_string(),
            session_timeout_ms: req.session_timeout_ms,
            // v0 has no rebalance timeout: the session timeout bounds the join phase.
            rebalance_timeout_ms: if version >= 1 {
                req.rebalance_timeout_ms
            } else {
                req.session_timeout_ms
            },
            protocol_type: req.protocol_type.to_string(),
            protocols: req
                .protocols
                .iter()
                .map(|p| MemberProtocol {
                    name: p.name.as_str().to_owned(),
                    metadata: p.metadata.clone(),
                })
                .collect(),
            protocol_names: req.protocols.iter().map(|p| p.name.as_str().to_owned()).collect(),
            parked: Parked { id, version },
        };
        let fail = |c: &mut GroupCoordinator, member_id: &str, e: ResponseError| {
            c.fx.respond(id, response(version, JoinResult::error(member_id, e)));
        };

        if group_id.is_empty() {
            return fail(self, &p.member_id, ResponseError::InvalidGroupId);
        }
        if p.session_timeout_ms < self.config.min_session_timeout_ms
            || p.session_timeout_ms > self.config.max_session_timeout_ms
        {
            return fail(self, &p.member_id, ResponseError::InvalidSessionTimeout);
        }
        if self.serves_as_consumer_group(&group_id, true) {
            return self.join_consumer_group(now, p.parked, client_id, req);
        }
        let is_unknown = p.member_id.is_empty();
        if !self.groups.contains_key(&group_id) {
            if !is_unknown {
                return fail(self, &p.member_id, ResponseError::UnknownMemberId);
            }
            self.groups.insert(group_id.clone(), Group::new(group_id.clone()));
        }

        let cfg = &self.config;
        let fx = &mut self.fx;
        let seq = &mut self.next_member_seq;
        let group = self.groups.get_mut(&group_id).expect("ensured above");

        let takes_over_instance =
            p.group_instance_id.as_deref().is_some_and(|i| group.static_member(i).is_some());
        let max = cfg.group_max_size.max(0) as usize;
        if is_unknown
            && !takes_over_instance
            && group.members.len() + group.pending_members.len() >= max
        {
            let r = JoinResult::error("", ResponseError::GroupMaxSizeReached);
            fx.respond(id, response(version, r));
            return;
        }

        if !group.supports_protocols(&p.protocol_type, &p.protocol_names) {
            let r = JoinResult::error(&p.member_id, ResponseError::InconsistentGroupProtocol);
            fx.respond(id, response(version, r));
            return;
        }

        if is_unknown {
            let new_id = generate_member_id(seq, client_id, p.group_instance_id.as_deref());
            let old_static = p
                .group_instance_id
                .as_deref()
                .and_then(|i| group.static_member(i))
                .map(str::to_string);
            if let Some(old_id) = old_static {
                join_static_member_takeover(group, &p, &old_id, &new_id, now, cfg, fx);
            } else if version >= 4
                && p.group_instance_id.is_none()
                // Bug `admits_unknown_member_id` skips KIP-394's round trip.
                && !cfg.bugs.admits_unknown_member_id
            {
                // Kafka expires a pending member after the session timeout its JoinGroup
                // carried (`addPendingMemberExpiration(group, newMemberId, sessionTimeoutMs)`;
                // the new coordinator schedules the same), not the new-member join timeout.
                let session = p.session_timeout_ms.max(0) as u64;
                group.add_pending_member(&new_id, now, session, fx);
                crate::probes::MEMBER_ID_REQUIRED_ANSWERED.hit();
                let r = JoinResult::error(&new_id, ResponseError::MemberIdRequired);
                fx.respond(id, response(version, r));
            } else {
                let member = p.new_member(new_id);
                group.add_member_and_rebalance(member, p.parked, now, cfg, fx);
            }
        } else {
            join_known_member(group, &p, now, cfg, fx);
        }
        group.try_complete_join(now, fx);
    }
}

/// A JoinGroup carrying a member id (Kafka's doJoinGroup / doCurrentMemberJoinGroup).
fn join_known_member(
    group: &mut Group,
    p: &JoinParams,
    now: Millis,
    cfg: &CoordinatorConfig,
    fx: &mut Effects,
) {
    let (id, version) = (p.parked.id, p.parked.version);
    let member_id = p.member_id.as_str();
    let fail = |fx: &mut Effects, e: ResponseError| {
        fx.respond(id, response(version, JoinResult::error(member_id, e)));
    };
    if group.pending_members.contains_key(member_id) {
        if p.group_instance_id.is_some() {
            // Pending members are always dynamic; a static id here is a confused client.
            return fail(fx, ResponseError::UnknownMemberId);
        }
        let member = p.new_member(member_id.to_string());
        group.add_member_and_rebalance(member, p.parked, now, cfg, fx);
        return;
    }
    // Bug `forgets_fenced_instances` skips the instance check: the member id decides.
    if !cfg.bugs.forgets_fenced_instances
        && group.is_static_member_fenced(member_id, p.group_instance_id.as_deref())
    {
        return fail(fx, ResponseError::FencedInstanceId);
    }
    let instance_unknown =
        p.group_instance_id.as_deref().is_some_and(|i| group.static_member(i).is_none());
    if !group.has(member_id) || instance_unknown {
        return fail(fx, ResponseError::UnknownMemberId);
    }
    if let Some(m) = group.members.get_mut(member_id) {
        m.session_timeout_ms = p.session_timeout_ms;
        m.rebalance_timeout_ms = p.rebalance_timeout_ms;
    }
    let matches = group.member(member_id).is_some_and(|m| m.matches(&p.protocols));
    let is_leader = group.is_leader(member_id);
    match group.state {
        GroupState::CompletingRebalance if matches => {
            // It lost its JoinGroup answer: send it again (with members for the leader).
            let leader = group.leader_id.clone().unwrap_or_default();
            let r = current_generation(group, member_id, leader, is_leader);
            fx.respond(id, response(version, r));
            group.touch(member_id, now, fx);
        }
        GroupState::Stable if matches && !is_leader => {
            let leader = group.leader_id.clone().unwrap_or_default();
            let r = current_generation(group, member_id, leader, false);
            fx.respond(id, response(version, r));
            group.touch(member_id, now, fx);
        }
        // PreparingRebalance, or a changed member (or the leader) in a settled generation. A
        // group holding the member is not Empty, and no Dead group is held.
        _ => {
            group.update_member_and_rebalance(
                member_id,
                p.protocols.clone(),
                p.parked,
                now,
                cfg,
                fx,
            );
        }
    }
}

/// A static member rejoining with an empty member id: the new member id takes over the
/// instance (the old one is fenced). Stable with unchanged metadata: no rebalance, and the
/// answer names the previous leader id so the new member does not act as leader while the
/// group keeps its assignment. Otherwise the group rebalances (or keeps collecting joins).
fn join_static_member_takeover(
    group: &mut Group,
    p: &JoinParams,
    old_id: &str,
    new_id: &str,
    now: Millis,
    cfg: &CoordinatorConfig,
    fx: &mut Effects,
) {
    let old_leader = group.leader_id.clone().unwrap_or_default();
    group.replace_static_member(old_id, new_id, &p.client_id, now, fx);
    if let Some(m) = group.members.get_mut(new_id) {
        m.session_timeout_ms = p.session_timeout_ms;
        m.rebalance_timeout_ms = p.rebalance_timeout_ms;
    }
    // Kafka (updateStaticMemberThenRebalanceOrCompleteJoin) stores the new protocols first, and
    // a Stable group rebalances only if the protocol it would select changes: a new process's
    // subscription (a cooperative member's owned partitions, say) may differ and still keep it.
    group.update_protocols(new_id, p.protocols.clone());
    let same_protocol = group.select_protocol() == group.protocol_name;
    match group.state {
        GroupState::Stable if same_protocol => {
            // KIP-814 (KAFKA-13435): from v9 the answer names the leader as it now is, and a
            // replaced leader learns it leads, with the members, and that the assignment
            // stands. Older versions hear the old leader id, so a replaced leader takes
            // itself for a follower and no member watches the topics' partition counts.
            let r = if p.parked.version >= 9 {
                let leader = group.leader_id.clone().unwrap_or_default();
                let is_leader = leader == new_id;
                let mut r = current_generation(group, new_id, leader, is_leader);
                r.skip_assignment = is_leader;
                r
            } else {
                current_generation(group, new_id, old_leader, false)
            };
            // The instance now maps to the new member id. Kafka answers only once that is
            // written (updateStaticMemberThenRebalanceOrCompleteJoin answers in storeGroup's
            // callback): a coordinator that loads the group later must fence the old id too.
            // Had the answer gone out first and the offsets partition moved before the append
            // completed, the next coordinator would load the old mapping and take the old
            // process's heartbeats and commits while the new one believed it held the
            // instance. The append fails only when the partition moves away, which unloads the
            // group here, so there is nothing to revert: the new process hears NOT_COORDINATOR
            // with no member id and joins again at the next coordinator.
            let failed = JoinResult::error("", ResponseError::NotCoordinator);
            fx.store_group_then_respond(
                group.snapshot(None, now),
                p.parked.id,
                response(p.parked.version, r),
                response(p.parked.version, failed),
            );
        }
        // A group holding the instance is not Empty, and no Dead group is held.
        _ => {
            group.update_member_and_rebalance(new_id, p.protocols.clone(), p.parked, now, cfg, fx);
        }
    }
}
