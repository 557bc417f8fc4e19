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
                    t.partitions.iter().map(move |p| TopicPartition::new(name.clone(), *p))
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
