//! Test harness for the group coordinator core: builds requests, drives the core at chosen
//! instants, and drains its outputs. Every drained response is encoded at its request's
//! version (so a response invalid for its version fails the test), every request is answered
//! at most once, and every GroupStateChanged must be a legal transition from the group's
//! previous state.
#![allow(dead_code)]

use std::collections::BTreeMap;

use bytes::{Bytes, BytesMut};
use groupsim_coordinator::{
    CoordinatorConfig, CoordinatorEvent, CoordinatorOutput, GroupCoordinator, GroupState,
    RemovalReason,
};
use groupsim_wire::consumer_protocol::{encode_assignment, Assignment};
use groupsim_wire::{Millis, RequestId, TopicPartition};
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::leave_group_request::MemberIdentity;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestTopic;
use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;

pub const GROUP: &str = "g";
pub const SESSION: i32 = 10_000;
pub const REBALANCE: i32 = 30_000;

pub use kafka_protocol::error::ResponseError as E;

/// Error code of `e`.
pub fn code(e: E) -> i16 {
    e.code()
}

pub fn s(x: &str) -> StrBytes {
    StrBytes::from_string(x.to_string())
}

/// Test config: no initial rebalance delay unless a test asks for one.
pub fn config() -> CoordinatorConfig {
    CoordinatorConfig {
        initial_rebalance_delay_ms: 0,
        offsets_append_delay_ms: 0,
        ..Default::default()
    }
}

pub fn protocols(list: &[(&str, &str)]) -> Vec<JoinGroupRequestProtocol> {
    list.iter()
        .map(|(n, m)| {
            JoinGroupRequestProtocol::default()
                .with_name(s(n))
                .with_metadata(Bytes::copy_from_slice(m.as_bytes()))
        })
        .collect()
}

/// JoinGroup for GROUP with session 10 s, rebalance 30 s, protocol `range` with metadata "m".
pub fn join_req(member_id: &str) -> JoinGroupRequest {
    JoinGroupRequest::default()
        .with_group_id(GroupId(s(GROUP)))
        .with_member_id(s(member_id))
        .with_session_timeout_ms(SESSION)
        .with_rebalance_timeout_ms(REBALANCE)
        .with_protocol_type(s("consumer"))
        .with_protocols(protocols(&[("range", "m")]))
}

pub fn sync_req(
    member_id: &str,
    generation: i32,
    assignments: &[(&str, Bytes)],
) -> SyncGroupRequest {
    SyncGroupRequest::default()
        .with_group_id(GroupId(s(GROUP)))
        .with_member_id(s(member_id))
        .with_generation_id(generation)
        .with_assignments(
            assignments
                .iter()
                .map(|(m, a)| {
                    SyncGroupRequestAssignment::default()
                        .with_member_id(s(m))
                        .with_assignment(a.clone())
                })
                .collect(),
        )
}

pub fn hb_req(member_id: &str, generation: i32) -> HeartbeatRequest {
    HeartbeatRequest::default()
        .with_group_id(GroupId(s(GROUP)))
        .with_member_id(s(member_id))
        .with_generation_id(generation)
}

pub fn leave_req_v0(member_id: &str) -> LeaveGroupRequest {
    LeaveGroupRequest::default().with_group_id(GroupId(s(GROUP))).with_member_id(s(member_id))
}

pub fn leave_req_v3(members: &[(&str, Option<&str>)]) -> LeaveGroupRequest {
    LeaveGroupRequest::default().with_group_id(GroupId(s(GROUP))).with_members(
        members
            .iter()
            .map(|(m, i)| {
                MemberIdentity::default().with_member_id(s(m)).with_group_instance_id(i.map(s))
            })
            .collect(),
    )
}

/// OffsetCommit of (topic, partition, offset) triples.
pub fn commit_req(
    group: &str,
    member_id: &str,
    generation: i32,
    parts: &[(&str, i32, i64)],
) -> OffsetCommitRequest {
    let mut topics: Vec<OffsetCommitRequestTopic> = Vec::new();
    for (t, p, o) in parts {
        let part = OffsetCommitRequestPartition::default()
            .with_partition_index(*p)
            .with_committed_offset(*o)
            .with_committed_metadata(Some(s("")));
        match topics.iter_mut().find(|x| x.name.0.as_str() == *t) {
            Some(x) => x.partitions.push(part),
            None => topics.push(
                OffsetCommitRequestTopic::default()
                    .with_name(TopicName(s(t)))
                    .with_partitions(vec![part]),
            ),
        }
    }
    OffsetCommitRequest::default()
        .with_group_id(GroupId(s(group)))
        .with_member_id(s(member_id))
        .with_generation_id_or_member_epoch(generation)
        .with_topics(topics)
}

/// OffsetFetch v1–7 layout; `None` asks for every committed partition.
pub fn fetch_req(group: &str, topics: Option<&[(&str, &[i32])]>) -> OffsetFetchRequest {
    OffsetFetchRequest::default().with_group_id(GroupId(s(group))).with_topics(topics.map(|ts| {
        ts.iter()
            .map(|(t, ps)| {
                OffsetFetchRequestTopic::default()
                    .with_name(TopicName(s(t)))
                    .with_partition_indexes(ps.to_vec())
            })
            .collect()
    }))
}

/// A consumer-protocol assignment of `parts`.
pub fn assignment(parts: &[(&str, i32)]) -> Bytes {
    encode_assignment(&Assignment {
        partitions: parts.iter().map(|(t, p)| TopicPartition::new(*t, *p)).collect(),
        user_data: None,
    })
}

/// Drives a coordinator and keeps what it said.
pub struct Harness {
    pub c: GroupCoordinator,
    pub now: Millis,
    next_id: u64,
    outstanding: BTreeMap<RequestId, i16>,
    pub responses: BTreeMap<RequestId, ResponseKind>,
    /// Every output in order (responses as their ids), for determinism checks.
    pub log: Vec<String>,
    pub events: Vec<(Millis, CoordinatorEvent)>,
    states: BTreeMap<String, GroupState>,
}

impl Default for Harness {
    fn default() -> Self {
        Self::with_config(config())
    }
}

impl Harness {
    pub fn with_config(cfg: CoordinatorConfig) -> Self {
        Harness {
            c: GroupCoordinator::new(cfg),
            now: 0,
            next_id: 1,
            outstanding: BTreeMap::new(),
            responses: BTreeMap::new(),
            log: Vec::new(),
            events: Vec::new(),
            states: BTreeMap::new(),
        }
    }

    /// Hands a request to the core at the current instant (timers are not fired: call
    /// [`Self::advance`], even by 0, for that).
    pub fn send(&mut self, version: i16, req: impl Into<RequestKind>) -> RequestId {
        self.send_from("client", version, req)
    }

    pub fn send_from(
        &mut self,
        client_id: &str,
        version: i16,
        req: impl Into<RequestKind>,
    ) -> RequestId {
        let id = RequestId(self.next_id);
        self.next_id += 1;
        self.outstanding.insert(id, version);
        self.c.handle_request_from(self.now, id, version, client_id, req.into());
        self.drain();
        id
    }

    fn drain(&mut self) {
        while let Some(out) = self.c.poll_output() {
            match out {
                CoordinatorOutput::Response { id, response } => {
                    let version = self.outstanding.remove(&id).unwrap_or_else(|| {
                        panic!("{id:?} answered twice or never asked: {response:?}")
                    });
                    let mut buf = BytesMut::new();
                    response.encode(&mut buf, version).unwrap_or_else(|e| {
                        panic!("response to {id:?} invalid at v{version}: {e} {response:?}")
                    });
                    self.log.push(format!("{}: response {id:?} {response:?}", self.now));
                    self.responses.insert(id, response);
                }
                CoordinatorOutput::Event(e) => {
                    if let CoordinatorEvent::GroupLoaded { group, state, .. } = &e {
                        self.states.insert(group.clone(), *state);
                    }
                    if let CoordinatorEvent::GroupStateChanged { group, from, to, .. } = &e {
                        let prev = self.states.get(group).copied().unwrap_or(GroupState::Empty);
                        assert_eq!(
                            prev, *from,
                            "state change does not start from the group's state: {e:?}"
                        );
                        assert!(from.can_transition_to(*to), "illegal transition {e:?}");
                        self.states.insert(group.clone(), *to);
                    }
                    self.log.push(format!("{}: event {e:?}", self.now));
                    self.events.push((self.now, e));
                }
            }
        }
    }

    /// Moves time forward by `ms`, firing every timer on its way at its own instant.
    pub fn advance(&mut self, ms: Millis) {
        let target = self.now + ms;
        while let Some(at) = self.c.poll_timeout() {
            if at > target {
                break;
            }
            self.now = self.now.max(at);
            self.c.handle_timeout(self.now);
            self.drain();
        }
        self.now = target;
        self.drain();
    }

    /// Moves time forward by `ms` in 3 s steps, `members` heartbeating (at `generation`) after
    /// each step, like consumers whose heartbeat thread runs while their poll loop is stuck.
    pub fn advance_heartbeating(&mut self, ms: Millis, members: &[String], generation: i32) {
        let target = self.now + ms;
        while self.now < target {
            let step = 3_000.min(target - self.now);
            self.advance(step);
            for m in members {
                self.send(3, hb_req(m, generation));
            }
        }
    }

    pub fn answered(&self, id: RequestId) -> bool {
        self.responses.contains_key(&id)
    }

    pub fn join(&self, id: RequestId) -> &JoinGroupResponse {
        match self.responses.get(&id) {
            Some(ResponseKind::JoinGroup(r)) => r,
            other => panic!("no JoinGroup answer for {id:?}: {other:?}"),
        }
    }

    pub fn sync(&self, id: RequestId) -> &SyncGroupResponse {
        match self.responses.get(&id) {
            Some(ResponseKind::SyncGroup(r)) => r,
            other => panic!("no SyncGroup answer for {id:?}: {other:?}"),
        }
    }

    pub fn heartbeat_error(&self, id: RequestId) -> i16 {
        match self.responses.get(&id) {
            Some(ResponseKind::Heartbeat(r)) => r.error_code,
            other => panic!("no Heartbeat answer for {id:?}: {other:?}"),
        }
    }

    pub fn leave(&self, id: RequestId) -> &LeaveGroupResponse {
        match self.responses.get(&id) {
            Some(ResponseKind::LeaveGroup(r)) => r,
            other => panic!("no LeaveGroup answer for {id:?}: {other:?}"),
        }
    }

    /// Per-partition error codes of an OffsetCommit answer, in response order.
    pub fn commit_errors(&self, id: RequestId) -> Vec<i16> {
        match self.responses.get(&id) {
            Some(ResponseKind::OffsetCommit(r)) => {
                r.topics.iter().flat_map(|t| t.partitions.iter().map(|p| p.error_code)).collect()
            }
            other => panic!("no OffsetCommit answer for {id:?}: {other:?}"),
        }
    }

    pub fn fetch(&self, id: RequestId) -> &OffsetFetchResponse {
        match self.responses.get(&id) {
            Some(ResponseKind::OffsetFetch(r)) => r,
            other => panic!("no OffsetFetch answer for {id:?}: {other:?}"),
        }
    }

    pub fn state(&self) -> Option<GroupState> {
        self.c.group_state(GROUP)
    }

    pub fn generation(&self) -> i32 {
        self.c.generation(GROUP).expect("group exists")
    }

    /// (member id, reason) of every MemberRemoved so far.
    pub fn removed(&self) -> Vec<(String, RemovalReason)> {
        self.events
            .iter()
            .filter_map(|(_, e)| match e {
                CoordinatorEvent::MemberRemoved { member_id, reason, .. } => {
                    Some((member_id.clone(), *reason))
                }
                _ => None,
            })
            .collect()
    }

    /// Every GenerationStarted so far as (generation, leader, members).
    pub fn generations(&self) -> Vec<(i32, Option<String>, Vec<String>)> {
        self.events
            .iter()
            .filter_map(|(_, e)| match e {
                CoordinatorEvent::GenerationStarted { generation, leader, members, .. } => {
                    Some((*generation, leader.clone(), members.clone()))
                }
                _ => None,
            })
            .collect()
    }

    /// v5 JoinGroup of a new dynamic member, done the KIP-394 way: the first request gets
    /// MEMBER_ID_REQUIRED and the member id, the second (returned, usually parked) joins.
    pub fn join_new(&mut self, client: &str) -> (String, RequestId) {
        self.join_new_with(client, join_req(""))
    }

    pub fn join_new_with(&mut self, client: &str, req: JoinGroupRequest) -> (String, RequestId) {
        let first = self.send_from(client, 5, req.clone().with_member_id(s("")));
        let r = self.join(first);
        assert_eq!(r.error_code, code(E::MemberIdRequired), "{r:?}");
        let member_id = r.member_id.to_string();
        let second = self.send_from(client, 5, req.with_member_id(s(&member_id)));
        (member_id, second)
    }

    /// A Stable group of `n` dynamic members `c0..`: all join, the join phase completes, the
    /// leader assigns partition i of topic `t` to member i, everyone syncs. Returns member ids
    /// in join order (the first is the leader) and the generation.
    pub fn stable_group(&mut self, n: usize) -> (Vec<String>, i32) {
        let mut ids = Vec::new();
        let mut joins = Vec::new();
        for i in 0..n {
            let (m, j) = self.join_new(&format!("c{i}"));
            ids.push(m);
            joins.push(j);
        }
        self.advance(0);
        let generation = self.join(joins[0]).generation_id;
        assert_eq!(self.join(joins[0]).leader.as_str(), ids[0]);
        let assignments: Vec<(&str, Bytes)> = ids
            .iter()
            .enumerate()
            .map(|(i, m)| (m.as_str(), assignment(&[("t", i as i32)])))
            .collect();
        let leader_sync = self.send(3, sync_req(&ids[0], generation, &assignments));
        assert_eq!(self.sync(leader_sync).error_code, 0);
        for m in &ids[1..] {
            let r = self.send(3, sync_req(m, generation, &[]));
            assert_eq!(self.sync(r).error_code, 0);
        }
        assert_eq!(self.state(), Some(GroupState::Stable));
        (ids, generation)
    }
}

/// One probe case: the behaviour, how to drive a harness into it, and the probe it must hit.
pub type ProbeCase = (&'static str, fn(&mut Harness), &'static groupsim_wire::probe::Probe);

/// Runs every case on a harness from `fresh` while recording probe hits, and checks that the
/// case's probe was hit.
pub fn assert_probes_hit(fresh: fn() -> Harness, cases: Vec<ProbeCase>) {
    for (behaviour, drive, expected) in cases {
        let mut h = fresh();
        let ((), hits) = groupsim_wire::probe::record(|| drive(&mut h));
        assert!(hits.get(expected.name).is_some_and(|&n| n > 0), "{behaviour}: {hits:?}");
    }
}
