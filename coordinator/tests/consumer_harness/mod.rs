//! Test harness for KIP-848 consumer groups: builds ConsumerGroupHeartbeat requests, drives the
//! coordinator at chosen instants and drains its answers and consumer group events. Appends
//! complete at once (offsets_append_delay_ms 0), so every heartbeat is answered when sent.
#![allow(dead_code, unused_imports)]

use std::collections::BTreeSet;

use groupsim_coordinator::{
    ConsumerGroupEvent, CoordinatorConfig, CoordinatorEvent, CoordinatorOutput, GroupCoordinator,
    TopicsImage,
};
use groupsim_wire::{Millis, RequestId, TopicPartition};
use kafka_protocol::messages::consumer_group_heartbeat_request::TopicPartitions;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;

pub use kafka_protocol::error::ResponseError as E;

pub const GROUP: &str = "g";
pub const SESSION: i32 = 45_000;
pub const REBALANCE: i32 = 30_000;

pub fn s(x: &str) -> StrBytes {
    StrBytes::from_string(x.to_string())
}

/// Test config: appends complete at once.
pub fn config() -> CoordinatorConfig {
    CoordinatorConfig { offsets_append_delay_ms: 0, ..Default::default() }
}

/// Topics `t` (6 partitions) and `u` (3 partitions).
pub fn topics() -> TopicsImage {
    TopicsImage::new([("t", 6), ("u", 3)])
}

pub fn tp(t: &str, p: i32) -> TopicPartition {
    TopicPartition::new(t, p)
}

/// Partitions as (topic, partition) pairs, sorted.
pub fn set(parts: &[(&str, i32)]) -> BTreeSet<TopicPartition> {
    parts.iter().map(|(t, p)| tp(t, *p)).collect()
}

fn topic_partitions(parts: &BTreeSet<TopicPartition>) -> Vec<TopicPartitions> {
    let mut out: Vec<TopicPartitions> = Vec::new();
    for p in parts {
        let id = groupsim_wire::topic_id(&p.topic);
        match out.last_mut() {
            Some(t) if t.topic_id == id => t.partitions.push(p.partition),
            _ => out.push(
                TopicPartitions::default().with_topic_id(id).with_partitions(vec![p.partition]),
            ),
        }
    }
    out
}

/// A join (epoch 0) subscribing to `topics`.
pub fn join(member: &str, topics: &[&str]) -> ConsumerGroupHeartbeatRequest {
    ConsumerGroupHeartbeatRequest::default()
        .with_group_id(GroupId(s(GROUP)))
        .with_member_id(s(member))
        .with_member_epoch(0)
        .with_rebalance_timeout_ms(REBALANCE)
        .with_subscribed_topic_names(Some(topics.iter().map(|t| TopicName(s(t))).collect()))
        .with_topic_partitions(Some(vec![]))
}

/// A heartbeat at `epoch` reporting `owned` (nothing else changed).
pub fn beat(
    member: &str,
    epoch: i32,
    owned: &BTreeSet<TopicPartition>,
) -> ConsumerGroupHeartbeatRequest {
    ConsumerGroupHeartbeatRequest::default()
        .with_group_id(GroupId(s(GROUP)))
        .with_member_id(s(member))
        .with_member_epoch(epoch)
        .with_rebalance_timeout_ms(-1)
        .with_topic_partitions(Some(topic_partitions(owned)))
}

/// A leave (epoch -1, or -2 for a static member's temporary leave).
pub fn leave(member: &str, epoch: i32) -> ConsumerGroupHeartbeatRequest {
    ConsumerGroupHeartbeatRequest::default()
        .with_group_id(GroupId(s(GROUP)))
        .with_member_id(s(member))
        .with_member_epoch(epoch)
        .with_rebalance_timeout_ms(-1)
}

/// The harness: a coordinator, the current instant, and everything it produced.
pub struct Harness {
    pub c: GroupCoordinator,
    pub now: Millis,
    next_id: u64,
    pub events: Vec<ConsumerGroupEvent>,
    pub all_events: Vec<CoordinatorEvent>,
    pub responses: Vec<(RequestId, ResponseKind)>,
}

impl Default for Harness {
    fn default() -> Self {
        Self::with(GroupCoordinator::new(config()))
    }
}

impl Harness {
    pub fn with(mut c: GroupCoordinator) -> Self {
        c.set_topics(topics());
        Self { c, now: 0, next_id: 0, events: vec![], all_events: vec![], responses: vec![] }
    }

    pub fn drain(&mut self) {
        while let Some(out) = self.c.poll_output() {
            match out {
                CoordinatorOutput::Response { id, response } => self.responses.push((id, response)),
                CoordinatorOutput::Event(e) => {
                    if let CoordinatorEvent::ConsumerGroup(ce) = &e {
                        self.events.push(ce.clone());
                    }
                    self.all_events.push(e);
                }
            }
        }
    }

    /// Sends any request at `version`; returns its id.
    pub fn send(&mut self, version: i16, request: impl Into<RequestKind>) -> RequestId {
        let id = RequestId(self.next_id);
        self.next_id += 1;
        self.c.handle_request_from(self.now, id, version, "client", request.into());
        self.drain();
        id
    }

    pub fn response(&self, id: RequestId) -> Option<&ResponseKind> {
        self.responses.iter().find(|(i, _)| *i == id).map(|(_, r)| r)
    }

    /// Sends a heartbeat (v1) and returns its answer.
    pub fn hb(&mut self, req: ConsumerGroupHeartbeatRequest) -> ConsumerGroupHeartbeatResponse {
        self.hb_v(1, req)
    }

    pub fn hb_v(
        &mut self,
        v: i16,
        req: ConsumerGroupHeartbeatRequest,
    ) -> ConsumerGroupHeartbeatResponse {
        let id = self.send(v, req);
        match self.response(id) {
            Some(ResponseKind::ConsumerGroupHeartbeat(r)) => r.clone(),
            other => panic!("no heartbeat answer: {other:?}"),
        }
    }

    /// Moves time to `now + ms` and fires the timers due.
    pub fn advance(&mut self, ms: Millis) {
        self.now += ms;
        self.c.handle_timeout(self.now);
        self.drain();
    }

    /// The assignment an answer carries, by name.
    pub fn assigned(&self, r: &ConsumerGroupHeartbeatResponse) -> Option<BTreeSet<TopicPartition>> {
        let image = self.c.topics();
        r.assignment.as_ref().map(|a| {
            a.topic_partitions
                .iter()
                .flat_map(|t| {
                    let name = image.name(&t.topic_id).expect("known topic").to_string();
                    t.partitions.iter().map(move |p| TopicPartition::new(&name, *p))
                })
                .collect()
        })
    }

    pub fn group(&self) -> &groupsim_coordinator::ConsumerGroup {
        self.c.consumer_group(GROUP).expect("consumer group exists")
    }

    /// Joins `member` to `topics` and returns (epoch, assigned).
    pub fn joined(&mut self, member: &str, topics: &[&str]) -> (i32, BTreeSet<TopicPartition>) {
        let r = self.hb(join(member, topics));
        assert_eq!(r.error_code, 0, "{member} joins: {r:?}");
        (r.member_epoch, self.assigned(&r).unwrap_or_default())
    }
}

// ---- classic-protocol members (online migration) -------------------------------------------

/// A classic member's session timeout in these tests.
pub const CLASSIC_SESSION: i32 = 10_000;

/// Consumer-protocol subscription metadata: `topics`, owning `owned`.
pub fn subscription(topics: &[&str], owned: &[(&str, i32)]) -> bytes::Bytes {
    groupsim_wire::consumer_protocol::encode_subscription(
        &groupsim_wire::consumer_protocol::Subscription {
            topics: topics.iter().map(|t| t.to_string()).collect(),
            owned_partitions: owned.iter().map(|(t, p)| tp(t, *p)).collect(),
            user_data: None,
        },
    )
}

/// An encoded assignment of `parts`.
pub fn assignment_bytes(parts: &[(&str, i32)]) -> bytes::Bytes {
    groupsim_wire::consumer_protocol::encode_assignment(
        &groupsim_wire::consumer_protocol::Assignment {
            partitions: parts.iter().map(|(t, p)| tp(t, *p)).collect(),
            user_data: None,
        },
    )
}

/// A classic JoinGroup of `member_id` subscribing to `topics`, owning `owned`, offering
/// `protocols` (each with the same subscription).
pub fn classic_join(
    member_id: &str,
    topics: &[&str],
    owned: &[(&str, i32)],
    protocols: &[&str],
) -> JoinGroupRequest {
    let metadata = subscription(topics, owned);
    JoinGroupRequest::default()
        .with_group_id(GroupId(s(GROUP)))
        .with_member_id(s(member_id))
        .with_session_timeout_ms(CLASSIC_SESSION)
        .with_rebalance_timeout_ms(REBALANCE)
        .with_protocol_type(s("consumer"))
        .with_protocols(
            protocols
                .iter()
                .map(|p| {
                    join_group_request::JoinGroupRequestProtocol::default()
                        .with_name(s(p))
                        .with_metadata(metadata.clone())
                })
                .collect(),
        )
}

/// A classic SyncGroup (v5, naming protocol type `consumer` and `protocol`).
pub fn classic_sync(
    member_id: &str,
    generation: i32,
    protocol: &str,
    assignments: &[(&str, &[(&str, i32)])],
) -> SyncGroupRequest {
    SyncGroupRequest::default()
        .with_group_id(GroupId(s(GROUP)))
        .with_member_id(s(member_id))
        .with_generation_id(generation)
        .with_protocol_type(Some(s("consumer")))
        .with_protocol_name(Some(s(protocol)))
        .with_assignments(
            assignments
                .iter()
                .map(|(m, parts)| {
                    sync_group_request::SyncGroupRequestAssignment::default()
                        .with_member_id(s(m))
                        .with_assignment(assignment_bytes(parts))
                })
                .collect(),
        )
}

/// A classic Heartbeat.
pub fn classic_hb(member_id: &str, generation: i32) -> HeartbeatRequest {
    HeartbeatRequest::default()
        .with_group_id(GroupId(s(GROUP)))
        .with_member_id(s(member_id))
        .with_generation_id(generation)
}

/// A classic LeaveGroup (v3+ layout) of `members` (member id, instance id).
pub fn classic_leave(members: &[(&str, Option<&str>)]) -> LeaveGroupRequest {
    LeaveGroupRequest::default().with_group_id(GroupId(s(GROUP))).with_members(
        members
            .iter()
            .map(|(m, i)| {
                leave_group_request::MemberIdentity::default()
                    .with_member_id(s(m))
                    .with_group_instance_id(i.map(s))
            })
            .collect(),
    )
}

impl Harness {
    /// Sends a JoinGroup at `v` and returns its answer (it must be answered at once).
    pub fn join_classic(&mut self, v: i16, req: JoinGroupRequest) -> JoinGroupResponse {
        let id = self.send(v, req);
        self.join_answer(id).expect("JoinGroup answered")
    }

    /// The JoinGroup answer to `id`, if any yet.
    pub fn join_answer(&self, id: RequestId) -> Option<JoinGroupResponse> {
        match self.response(id) {
            Some(ResponseKind::JoinGroup(r)) => Some(r.clone()),
            None => None,
            other => panic!("not a JoinGroup answer: {other:?}"),
        }
    }

    /// Sends a SyncGroup (v5) and returns its answer.
    pub fn sync_classic(&mut self, req: SyncGroupRequest) -> SyncGroupResponse {
        let id = self.send(5, req);
        match self.response(id) {
            Some(ResponseKind::SyncGroup(r)) => r.clone(),
            other => panic!("no SyncGroup answer: {other:?}"),
        }
    }

    /// Sends a Heartbeat (v4) and returns its error code.
    pub fn hb_classic(&mut self, req: HeartbeatRequest) -> i16 {
        let id = self.send(4, req);
        match self.response(id) {
            Some(ResponseKind::Heartbeat(r)) => r.error_code,
            other => panic!("no Heartbeat answer: {other:?}"),
        }
    }

    /// Sends a LeaveGroup (v5) and returns (member id, error) per member.
    pub fn leave_classic(&mut self, req: LeaveGroupRequest) -> Vec<(String, i16)> {
        let id = self.send(5, req);
        match self.response(id) {
            Some(ResponseKind::LeaveGroup(r)) => {
                r.members.iter().map(|m| (m.member_id.to_string(), m.error_code)).collect()
            }
            other => panic!("no LeaveGroup answer: {other:?}"),
        }
    }

    /// A classic group of `n` members (`client-1`, …) subscribed to `t`, Stable at generation 1,
    /// the leader having given member i partitions 2i and 2i+1 of `t` (`n` ≤ 3). Returns the
    /// member ids.
    pub fn classic_group(&mut self, n: usize, protocol: &str) -> Vec<String> {
        let mut joins = Vec::new();
        for _ in 0..n {
            // v3: added at once, no MEMBER_ID_REQUIRED.
            joins.push(self.send(3, classic_join("", &["t"], &[], &[protocol])));
        }
        for _ in 0..30 {
            if joins.iter().all(|id| self.join_answer(*id).is_some()) {
                break;
            }
            self.advance(1_000);
        }
        let answers: Vec<JoinGroupResponse> =
            joins.iter().map(|id| self.join_answer(*id).expect("join completed")).collect();
        let ids: Vec<String> = answers.iter().map(|r| r.member_id.to_string()).collect();
        assert!(answers.iter().all(|r| r.generation_id == 1), "{answers:?}");
        let leader = answers[0].leader.to_string();
        let shares: Vec<Vec<(&str, i32)>> =
            (0..n).map(|i| vec![("t", 2 * i as i32), ("t", 2 * i as i32 + 1)]).collect();
        let plan: Vec<(&str, &[(&str, i32)])> =
            ids.iter().zip(&shares).map(|(m, p)| (m.as_str(), p.as_slice())).collect();
        for m in &ids {
            let a = if *m == leader { plan.clone() } else { Vec::new() };
            let id = self.send(5, classic_sync(m, 1, protocol, &a));
            let _ = id;
        }
        assert_eq!(self.c.group_state(GROUP), Some(groupsim_coordinator::GroupState::Stable));
        ids
    }

    /// The partitions a SyncGroup answer assigns.
    pub fn synced(r: &SyncGroupResponse) -> BTreeSet<TopicPartition> {
        groupsim_wire::consumer_protocol::decode_assignment(&r.assignment)
            .expect("assignment decodes")
            .partitions
            .into_iter()
            .collect()
    }
}
