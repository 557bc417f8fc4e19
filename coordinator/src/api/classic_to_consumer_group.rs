//! The classic group APIs (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) naming a KIP-848
//! consumer group: Kafka serves them (classicGroupJoinToConsumerGroup and its siblings) so a
//! group can hold classic and consumer-protocol members at once while it migrates. The rules
//! live with the group (`consumer_group/classic_join.rs`, `consumer_group/classic_members.rs`);
//! this file reads the requests, settles member ids and writes the answers.
//!
//! - JoinGroup to an *empty* consumer group: the group gives way and the classic group
//!   protocol serves the join (an empty group converts whatever the migration policy says).
//! - JoinGroup otherwise: GROUP_MAX_SIZE_REACHED or INCONSISTENT_GROUP_PROTOCOL first; a dynamic
//!   member without a member id (v4+) gets MEMBER_ID_REQUIRED with a new id (`{client_id}-{n}`;
//!   Kafka draws a UUID); then the member joins and is answered once the group's record is in
//!   the offsets log (NOT_COORDINATOR if the partition moves first). The
//!   `group.consumer.migration.policy` does not gate these joins: it decides conversions only.
//!   A static member joining without an id that replaces the last consumer-protocol member
//!   may downgrade the group (`consumer_group/migration.rs`); its answer still carries its
//!   member epoch, and it syncs with the classic group.
//! - SyncGroup, Heartbeat, LeaveGroup: answered at once.

use std::collections::BTreeSet;

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::*;

use crate::answers::{JoinResult, Parked, SyncResult};
use crate::consumer_group::classic_join::ClassicJoinInput;
use crate::consumer_group::{ClassicProtocol, HeartbeatContext};
use crate::coordinator::{generate_member_id, AppendDone};
use crate::offsets_log::OffsetsRecord;
use crate::{probes, ConsumerGroupEvent, CoordinatorEvent, GroupCoordinator, Millis, RequestId};

fn refused(api: &str, e: ResponseError) -> ResponseError {
    probes::CLASSIC_IN_CONSUMER_ERROR.hit_as(format_args!("{api}/{}", crate::error_name(e.code())));
    e
}

impl GroupCoordinator {
    /// Whether `group` is a consumer group with members (classic requests go to it), after an
    /// empty consumer group gave way to a JoinGroup.
    pub(crate) fn serves_as_consumer_group(&mut self, group: &str, join: bool) -> bool {
        match self.consumer_groups.get(group) {
            Some(g) if g.is_empty() && join => {
                self.consumer_groups.remove(group);
                self.fx.event(CoordinatorEvent::ConsumerGroup(
                    ConsumerGroupEvent::EmptyGroupDeleted { group: group.to_string() },
                ));
                false
            }
            Some(_) => true,
            None => false,
        }
    }

    /// JoinGroup to a consumer group with members (see the module docs); `req` passed the
    /// group id and session timeout checks.
    pub(crate) fn join_consumer_group(
        &mut self,
        now: Millis,
        parked: Parked,
        client_id: &str,
        req: JoinGroupRequest,
    ) {
        let group_id = req.group_id.0.to_string();
        let instance = if parked.version >= 5 {
            req.group_instance_id.as_ref().map(|s| s.to_string())
        } else {
            None
        };
        let fail = |c: &mut GroupCoordinator, member_id: &str, e: ResponseError| {
            let e = refused("JoinGroup", e);
            c.fx.answer_join(parked, JoinResult::error(member_id, e));
        };
        let names: BTreeSet<String> = req.protocols.iter().map(|p| p.name.to_string()).collect();
        let request_member = req.member_id.to_string();
        let Some(g) = self.consumer_groups.get(&group_id) else { return };
        let max = self.config.consumer_group_max_size;
        if let Err(e) = g.check_classic_join(&request_member, &req.protocol_type, &names, max) {
            return fail(self, &request_member, e);
        }
        let unknown_member = request_member.is_empty();
        let member_id = if unknown_member {
            generate_member_id(&mut self.next_member_seq, client_id, instance.as_deref())
        } else {
            request_member.clone()
        };
        if unknown_member && instance.is_none() && parked.version >= 4 {
            let e = ResponseError::MemberIdRequired;
            return self.fx.answer_join(parked, JoinResult::error(&member_id, e));
        }
        let input = ClassicJoinInput {
            member_id,
            unknown_member,
            instance_id: instance,
            session_timeout_ms: req.session_timeout_ms,
            // v0 has no rebalance timeout: the session timeout stands in, as for classic groups.
            rebalance_timeout_ms: if parked.version >= 1 {
                req.rebalance_timeout_ms
            } else {
                req.session_timeout_ms
            },
            protocols: req
                .protocols
                .iter()
                .map(|p| ClassicProtocol { name: p.name.to_string(), metadata: p.metadata.clone() })
                .collect(),
            client_id: client_id.to_string(),
        };
        let ctx = HeartbeatContext {
            topics: &self.topics,
            session_timeout_ms: self.config.consumer_session_timeout_ms,
            max_size: max,
            bugs: &self.config.bugs,
        };
        // A static member joining without an id replaces the instance's holder; if that was the
        // last consumer-protocol member, the group converts after the join.
        let replaced = match &input.instance_id {
            Some(i) if unknown_member => self
                .consumer_groups
                .get(&group_id)
                .and_then(|g| g.static_member_id(i))
                .map(str::to_string),
            _ => None,
        };
        let downgrade =
            replaced.as_deref().is_some_and(|r| self.downgrade_due_to_replacement(&group_id, r));
        let Some(g) = self.consumer_groups.get_mut(&group_id) else { return };
        match g.classic_join(&input, ctx, &mut self.fx) {
            Err(e) => fail(self, &request_member, e),
            Ok(answer) => {
                let mut records = vec![OffsetsRecord::ConsumerGroup(g.snapshot(now))];
                if let (true, Some(r)) = (downgrade, &replaced) {
                    self.downgrade_after_replacement(now, &group_id, r);
                    records.clear();
                }
                let result = JoinResult {
                    error: 0,
                    member_id: answer.member_id.clone(),
                    generation_id: answer.generation,
                    protocol_type: Some("consumer".to_string()),
                    protocol_name: Some(answer.protocol_name),
                    leader: String::new(),
                    members: Vec::new(),
                    skip_assignment: false,
                };
                let then = AppendDone::ClassicJoin {
                    parked,
                    group: group_id.clone(),
                    session_timeout_ms: input.session_timeout_ms,
                    rebalance_timeout_ms: input.rebalance_timeout_ms,
                    result,
                };
                self.append(now, &group_id, records, then);
            }
        }
    }

    /// SyncGroup to a consumer group: the member's assigned partitions.
    pub(crate) fn sync_consumer_group(
        &mut self,
        now: Millis,
        parked: Parked,
        req: SyncGroupRequest,
    ) {
        let v = parked.version;
        let instance = if v >= 3 { req.group_instance_id.as_deref() } else { None };
        let protocol = if v >= 5 {
            (req.protocol_type.as_deref(), req.protocol_name.as_deref())
        } else {
            (None, None)
        };
        let Some(g) = self.consumer_groups.get_mut(req.group_id.as_str()) else { return };
        let result = match g.classic_sync(
            &req.member_id,
            instance,
            req.generation_id,
            protocol,
            now,
            &mut self.fx,
        ) {
            Err(e) => SyncResult::error(refused("SyncGroup", e)),
            Ok(m) => {
                let a = groupsim_wire::consumer_protocol::Assignment {
                    partitions: m.assigned.iter().cloned().collect(),
                    user_data: None,
                };
                SyncResult {
                    error: 0,
                    assignment: groupsim_wire::consumer_protocol::encode_assignment(&a),
                    protocol_type: protocol.0.map(str::to_string),
                    protocol_name: protocol.1.map(str::to_string),
                }
            }
        };
        self.fx.answer_sync(parked, result);
    }

    /// Heartbeat to a consumer group.
    pub(crate) fn heartbeat_consumer_group(
        &mut self,
        now: Millis,
        id: RequestId,
        version: i16,
        req: HeartbeatRequest,
    ) {
        let instance = if version >= 3 { req.group_instance_id.as_deref() } else { None };
        let Some(g) = self.consumer_groups.get_mut(req.group_id.as_str()) else { return };
        let result =
            g.classic_heartbeat(&req.member_id, instance, req.generation_id, now, &mut self.fx);
        let code = match result {
            Ok(()) => 0,
            Err(ResponseError::RebalanceInProgress) => ResponseError::RebalanceInProgress.code(),
            Err(e) => refused("Heartbeat", e).code(),
        };
        self.fx.respond(id, HeartbeatResponse::default().with_error_code(code));
    }

    /// LeaveGroup to a consumer group: v0–2 name one member (its outcome is the answer's error),
    /// v3+ a batch answered per member.
    pub(crate) fn leave_consumer_group(
        &mut self,
        now: Millis,
        id: RequestId,
        version: i16,
        req: LeaveGroupRequest,
    ) {
        let leaving = super::leave_group::leaving_members(version, &req);
        let group_id = req.group_id.to_string();
        let Some(g) = self.consumer_groups.get_mut(&group_id) else { return };
        let results = g.classic_leave(&leaving, &self.topics, &mut self.fx);
        let changed = results.iter().any(Result::is_ok);
        let records =
            if changed { vec![OffsetsRecord::ConsumerGroup(g.snapshot(now))] } else { Vec::new() };
        let outcomes = leaving
            .into_iter()
            .zip(results)
            .map(|((member_id, instance), r)| match r {
                Ok(removed) => (removed, instance, 0),
                Err(e) => (member_id, instance, refused("LeaveGroup", e).code()),
            })
            .collect();
        let response = super::leave_group::response(version, 0, outcomes);
        if !changed {
            return self.fx.respond(id, response);
        }
        // Answered once the removals are written, as Kafka answers with the records committed.
        let on_failure =
            LeaveGroupResponse::default().with_error_code(ResponseError::NotCoordinator.code());
        let then = AppendDone::Answer {
            id,
            response: Box::new(response.into()),
            on_failure: Box::new(on_failure.into()),
        };
        self.append(now, &group_id, records, then);
    }
}
