//! The coordinator's handling of decoded requests, driven by fuzz input. Structure-aware: the
//! input's bytes choose, through `arbitrary`, a short script of group requests from a few
//! clients — JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch,
//! ConsumerGroupHeartbeat, the describe and list APIs — at versions the broker serves, naming
//! member ids, instance ids and generations the coordinator handed out (or nearly: one off, none,
//! a stranger's), with pauses between them that let sessions, rebalances and joins time out.
//! Most inputs are valid requests in odd orders and odd states, not garbage.
//!
//! Each request is encoded at its version and decoded as a broker would read it (a request that
//! does not encode at its version never reaches a broker); a client waits for its answer before
//! it writes again, as a connection is served in order. Properties, each a panic naming what
//! broke: no panic in the coordinator; every answer encodes at its request's version and decodes
//! back to itself; and the coordinator rules of the checker (`answer-*`: the rules `check-broker`
//! holds foreign brokers to) find nothing in the log of requests and answers.
//!
//! Shared by the libFuzzer target `coordinator_requests` and the stable replay of its corpus
//! (`scenarios/tests/fuzz_corpus.rs`), which include this file by path.

use std::collections::BTreeMap;

use arbitrary::Unstructured;
use groupsim::exchange::{self, TopicNames};
use groupsim_coordinator::broker::{Broker, BrokerAddress, BrokerConfig};
use groupsim_coordinator::log::{shared, PartitionLogs};
use groupsim_coordinator::CoordinatorOutput;
use groupsim_history::wire::{Entry, Exchange};
use groupsim_history::History;
use groupsim_wire::codec::{
    decode_request, decode_response, encode_request, encode_response, request_api_key,
    request_header,
};
use groupsim_wire::consumer_protocol::{encode_assignment, encode_subscription};
use groupsim_wire::consumer_protocol::{Assignment, Subscription};
use groupsim_wire::versions::served_versions;
use groupsim_wire::{topic_id, Millis, RequestId, TopicPartition};
use kafka_protocol::messages::consumer_group_heartbeat_request::TopicPartitions;
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::leave_group_request::MemberIdentity;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopic, OffsetFetchRequestTopics,
};
use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;

/// The clients writing requests (one connection each).
const CLIENTS: usize = 5;
/// The most steps one input plays.
const MAX_STEPS: usize = 64;
/// The topic every group consumes, and its partitions.
const TOPIC: &str = "t";
const PARTITIONS: i32 = 3;
const GROUPS: [&str; 2] = ["g", "h"];

/// Plays `data` as a script against a fresh single-broker coordinator; panics naming the first
/// property that broke.
pub fn run(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let mut world = World::new();
    for _ in 0..MAX_STEPS {
        if u.is_empty() || world.step(&mut u).is_err() {
            break;
        }
    }
    world.finish();
}

/// A request written and not answered yet.
struct Pending {
    client: usize,
    version: i16,
    api: ApiKey,
    sent_ms: Millis,
    request: RequestKind,
}

struct World {
    broker: Broker,
    now: Millis,
    next_id: u64,
    pending: BTreeMap<RequestId, Pending>,
    busy: [bool; CLIENTS],
    history: History,
    topics: TopicNames,
    /// Member ids the coordinator handed out, per group.
    members: BTreeMap<&'static str, Vec<String>>,
    /// The member id each client was last given, per group.
    own: BTreeMap<(usize, &'static str), String>,
    /// Generations and member epochs it answered, per group.
    generations: BTreeMap<&'static str, Vec<i32>>,
}

impl World {
    fn new() -> Self {
        let config = BrokerConfig {
            node_id: 0,
            cluster_id: "fuzz".into(),
            brokers: vec![BrokerAddress { node_id: 0, host: "127.0.0.1".into(), port: 9092 }],
            offsets_topic_partitions: 1,
            coordinator: Default::default(),
        };
        let mut logs = PartitionLogs::new();
        logs.create_topic(TOPIC, PARTITIONS).expect("a fresh log takes a topic");
        let mut world = Self {
            broker: Broker::new(config, shared(logs)),
            now: 0,
            next_id: 0,
            pending: BTreeMap::new(),
            busy: [false; CLIENTS],
            history: History::new(),
            topics: [(topic_id(TOPIC), TOPIC.to_string())].into_iter().collect(),
            members: BTreeMap::new(),
            own: BTreeMap::new(),
            generations: BTreeMap::new(),
        };
        world.drain();
        world
    }

    /// One step of the script: a pause, or a request from an idle client.
    fn step(&mut self, u: &mut Unstructured<'_>) -> arbitrary::Result<()> {
        if u.ratio(1, 4)? {
            let pause: u32 = u.int_in_range(0..=20_000)?;
            self.advance(self.now + Millis::from(pause));
            return Ok(());
        }
        let client = u.choose_index(CLIENTS)?;
        if self.busy[client] {
            return Ok(());
        }
        let group = *u.choose(&GROUPS)?;
        let request = self.request(u, client, group)?;
        let Some(api) = request_api_key(&request) else { return Ok(()) };
        let Some(range) = served_versions(api) else { return Ok(()) };
        let version = u.int_in_range(range.min..=range.max)?;
        self.send(client, api, version, request);
        Ok(())
    }

    /// A group request naming `group`, its ids and generations drawn from what was handed out.
    fn request(
        &self,
        u: &mut Unstructured<'_>,
        client: usize,
        group: &'static str,
    ) -> arbitrary::Result<RequestKind> {
        let member = self.member(u, client, group)?;
        let generation = self.generation(u, group)?;
        let instance = match u.int_in_range(0..=3u8)? {
            0 => Some(s("i0")),
            1 => Some(s("i1")),
            _ => None,
        };
        let gid = GroupId(s(group));
        Ok(match u.int_in_range(0..=9u8)? {
            0 | 1 => {
                let owned = self.partitions(u)?;
                let mut protocols = Vec::new();
                for name in ["range", "cooperative-sticky"] {
                    if protocols.is_empty() || u.arbitrary()? {
                        let sub = Subscription {
                            topics: vec![TOPIC.to_string()],
                            owned_partitions: owned.clone(),
                            user_data: None,
                        };
                        protocols.push(
                            JoinGroupRequestProtocol::default()
                                .with_name(s(name))
                                .with_metadata(encode_subscription(&sub)),
                        );
                    }
                }
                RequestKind::JoinGroup(
                    JoinGroupRequest::default()
                        .with_group_id(gid)
                        .with_member_id(s(&member))
                        .with_group_instance_id(instance)
                        .with_session_timeout_ms(*u.choose(&[6_000, 10_000, 30_000, 1_000])?)
                        .with_rebalance_timeout_ms(*u.choose(&[5_000, 30_000, 10_000])?)
                        .with_protocol_type(s("consumer"))
                        .with_protocols(protocols),
                )
            }
            2 => {
                let mut assignments = Vec::new();
                if u.arbitrary()? {
                    // A leader's assignment as a correct assignor makes it: each partition to
                    // one member at most (the coordinator hands the leader's bytes on as they
                    // are, so a split assignment would be the leader's fault, not its own).
                    let members: Vec<&String> =
                        self.members.get(group).into_iter().flatten().take(4).collect();
                    let mut shares = vec![Vec::new(); members.len()];
                    for p in 0..PARTITIONS {
                        let owner = u.int_in_range(0..=members.len())?;
                        if let Some(share) = shares.get_mut(owner) {
                            share.push(TopicPartition::new(TOPIC, p));
                        }
                    }
                    for (m, partitions) in members.into_iter().zip(shares) {
                        let a = Assignment { partitions, user_data: None };
                        assignments.push(
                            SyncGroupRequestAssignment::default()
                                .with_member_id(s(m))
                                .with_assignment(encode_assignment(&a)),
                        );
                    }
                }
                RequestKind::SyncGroup(
                    SyncGroupRequest::default()
                        .with_group_id(gid)
                        .with_member_id(s(&member))
                        .with_generation_id(generation)
                        .with_group_instance_id(instance)
                        .with_protocol_type(Some(s("consumer")))
                        .with_protocol_name(Some(s(u.choose(&["range", "cooperative-sticky"])?)))
                        .with_assignments(assignments),
                )
            }
            3 | 4 => RequestKind::Heartbeat(
                HeartbeatRequest::default()
                    .with_group_id(gid)
                    .with_member_id(s(&member))
                    .with_generation_id(generation)
                    .with_group_instance_id(instance),
            ),
            5 => RequestKind::LeaveGroup(
                LeaveGroupRequest::default()
                    .with_group_id(gid)
                    .with_member_id(s(&member))
                    .with_members(vec![MemberIdentity::default()
                        .with_member_id(s(&member))
                        .with_group_instance_id(instance)]),
            ),
            6 => {
                let mut partitions = Vec::new();
                for p in self.partitions(u)? {
                    partitions.push(
                        OffsetCommitRequestPartition::default()
                            .with_partition_index(p.partition)
                            .with_committed_offset(u.int_in_range(0..=50)?),
                    );
                }
                RequestKind::OffsetCommit(
                    OffsetCommitRequest::default()
                        .with_group_id(gid)
                        .with_member_id(s(&member))
                        .with_generation_id_or_member_epoch(generation)
                        .with_group_instance_id(instance)
                        .with_topics(vec![OffsetCommitRequestTopic::default()
                            .with_name(TopicName(s(TOPIC)))
                            .with_partitions(partitions)]),
                )
            }
            7 => {
                let indexes: Vec<i32> = (0..PARTITIONS).collect();
                RequestKind::OffsetFetch(
                    OffsetFetchRequest::default()
                        .with_group_id(gid.clone())
                        .with_topics(Some(vec![OffsetFetchRequestTopic::default()
                            .with_name(TopicName(s(TOPIC)))
                            .with_partition_indexes(indexes.clone())]))
                        .with_groups(vec![OffsetFetchRequestGroup::default()
                            .with_group_id(gid)
                            .with_topics(Some(vec![OffsetFetchRequestTopics::default()
                                .with_name(TopicName(s(TOPIC)))
                                .with_partition_indexes(indexes)]))]),
                )
            }
            8 => {
                let epoch = *u.choose(&[0, -1, -2, generation, generation + 1])?;
                let owned = self.partitions(u)?;
                let owned = (epoch > 0 && u.arbitrary()?).then(|| {
                    vec![TopicPartitions::default()
                        .with_topic_id(topic_id(TOPIC))
                        .with_partitions(owned.iter().map(|p| p.partition).collect())]
                });
                let subscribed = (epoch == 0 || u.ratio(1, 4).unwrap_or(false))
                    .then(|| vec![TopicName(s(TOPIC))]);
                RequestKind::ConsumerGroupHeartbeat(
                    ConsumerGroupHeartbeatRequest::default()
                        .with_group_id(gid)
                        .with_member_id(s(&member))
                        .with_member_epoch(epoch)
                        .with_instance_id(instance)
                        .with_rebalance_timeout_ms(if epoch == 0 { 30_000 } else { -1 })
                        .with_subscribed_topic_names(subscribed)
                        .with_topic_partitions(owned),
                )
            }
            _ => match u.int_in_range(0..=2u8)? {
                0 => RequestKind::DescribeGroups(
                    DescribeGroupsRequest::default().with_groups(vec![gid]),
                ),
                1 => RequestKind::ListGroups(ListGroupsRequest::default()),
                _ => RequestKind::ConsumerGroupDescribe(
                    ConsumerGroupDescribeRequest::default().with_group_ids(vec![gid]),
                ),
            },
        })
    }

    /// A member id: the one `client` was last given in `group` (most often), another one the
    /// coordinator handed out, none, or a stranger's.
    fn member(
        &self,
        u: &mut Unstructured<'_>,
        client: usize,
        group: &'static str,
    ) -> arbitrary::Result<String> {
        let known = self.members.get(group).map(Vec::as_slice).unwrap_or_default();
        let own = self.own.get(&(client, group));
        Ok(match u.int_in_range(0..=7u8)? {
            0 => String::new(),
            1 => "stranger".to_string(),
            2 | 3 if !known.is_empty() => u.choose(known)?.clone(),
            _ => own.cloned().unwrap_or_default(),
        })
    }

    /// A generation or member epoch: one answered in `group`, one off it, or none.
    fn generation(&self, u: &mut Unstructured<'_>, group: &str) -> arbitrary::Result<i32> {
        let known = self.generations.get(group).map(Vec::as_slice).unwrap_or_default();
        let latest = known.iter().copied().max().unwrap_or(0);
        let base = if known.is_empty() || u.arbitrary()? { latest } else { *u.choose(known)? };
        Ok(match u.int_in_range(0..=5u8)? {
            0 => -1,
            1 => base + 1,
            2 => (base - 1).max(-1),
            _ => base,
        })
    }

    /// A few partitions of the topic.
    fn partitions(&self, u: &mut Unstructured<'_>) -> arbitrary::Result<Vec<TopicPartition>> {
        let mut out = Vec::new();
        for p in 0..PARTITIONS {
            if u.arbitrary()? {
                out.push(TopicPartition::new(TOPIC, p));
            }
        }
        Ok(out)
    }

    /// Writes `request` from `client` at `version`, as a broker would read it.
    fn send(&mut self, client: usize, api: ApiKey, version: i16, request: RequestKind) {
        let client_id = s(&format!("c{client}"));
        let header = request_header(api, version, 1, &client_id);
        // A request that does not encode at its version never reaches a broker.
        let Ok(frame) = encode_request(&header, &request) else { return };
        let decoded = decode_request(frame)
            .unwrap_or_else(|e| panic!("{api:?} v{version} we encoded does not decode: {e}"));
        let id = RequestId(self.next_id);
        self.next_id += 1;
        self.busy[client] = true;
        let pending =
            Pending { client, version, api, sent_ms: self.now, request: decoded.request.clone() };
        self.pending.insert(id, pending);
        self.broker.handle_request_from(
            self.now,
            id,
            version,
            &format!("c{client}"),
            decoded.request,
        );
        self.drain();
    }

    /// Fires every timer due up to `until`, in order.
    fn advance(&mut self, until: Millis) {
        while let Some(due) = self.broker.poll_timeout().filter(|&t| t <= until) {
            self.now = self.now.max(due);
            self.broker.handle_timeout(self.now);
            self.drain();
        }
        self.now = until;
    }

    /// Takes the coordinator's answers: each must encode and decode at its version, and goes
    /// into the answer log.
    fn drain(&mut self) {
        while let Some(out) = self.broker.poll_output() {
            let CoordinatorOutput::Response { id, response } = out else { continue };
            let p = self
                .pending
                .remove(&id)
                .unwrap_or_else(|| panic!("an answer to request {id:?}, which is not in flight"));
            self.busy[p.client] = false;
            let frame = encode_response(1, p.api, p.version, &response).unwrap_or_else(|e| {
                panic!(
                    "the answer to {:?} v{} does not encode: {e}\n{response:?}",
                    p.api, p.version
                )
            });
            let (_, read) = decode_response(frame, p.api, p.version).unwrap_or_else(|e| {
                panic!("the answer to {:?} v{} does not decode: {e}", p.api, p.version)
            });
            assert_eq!(
                read, response,
                "the answer to {:?} v{} changed on the wire",
                p.api, p.version
            );
            self.learn(p.client, &p.request, &response);
            self.record(&p, &response);
        }
    }

    /// Remembers the member ids and generations an answer handed out.
    fn learn(&mut self, client: usize, request: &RequestKind, response: &ResponseKind) {
        let group = match exchange::group(request).as_str() {
            "g" => "g",
            "h" => "h",
            _ => return,
        };
        let (member, generation) = match response {
            ResponseKind::JoinGroup(r) if r.error_code == 0 => {
                (r.member_id.to_string(), Some(r.generation_id))
            }
            ResponseKind::JoinGroup(r) if !r.member_id.is_empty() => {
                (r.member_id.to_string(), None)
            }
            ResponseKind::ConsumerGroupHeartbeat(r) if r.error_code == 0 => (
                r.member_id.as_ref().map(|m| m.to_string()).unwrap_or_default(),
                Some(r.member_epoch),
            ),
            _ => return,
        };
        if !member.is_empty() {
            self.own.insert((client, group), member.clone());
            let known = self.members.entry(group).or_default();
            if !known.contains(&member) {
                known.push(member);
            }
        }
        if let Some(g) = generation {
            let known = self.generations.entry(group).or_default();
            if !known.contains(&g) {
                known.push(g);
            }
        }
    }

    /// Records the exchange in the history's wire stream, as a member shell does.
    fn record(&mut self, p: &Pending, response: &ResponseKind) {
        let Some(request) = exchange::request(&p.request, p.version, &self.topics) else { return };
        let Some(answer) = exchange::answer(response, &self.topics) else { return };
        self.history.record_wire(Entry::Exchange(Exchange {
            actor: format!("c{}.0", p.client),
            sent_ms: p.sent_ms,
            answered_ms: self.now,
            request,
            answer,
            group: exchange::group(&p.request),
            node: Some(0),
            conn: None,
        }));
    }

    /// The requests still in flight are never answered; the coordinator rules judge the log.
    fn finish(mut self) {
        let unanswered: Vec<Pending> = std::mem::take(&mut self.pending).into_values().collect();
        for p in unanswered {
            let Some(call) = exchange::request(&p.request, p.version, &self.topics) else {
                continue;
            };
            self.history.record_wire(Entry::Unanswered {
                actor: format!("c{}.0", p.client),
                sent_ms: p.sent_ms,
                call,
                group: exchange::group(&p.request),
            });
        }
        let wire = self.history.wire();
        let broken: Vec<String> = groupsim_checker::broker::history::anomalies(&self.history)
            .into_iter()
            .filter(|a| a.class.name().starts_with("answer-"))
            .map(|a| {
                let proof = a.exchanges.iter().filter_map(|&k| wire.get(k));
                let proof: Vec<String> = proof.map(|w| format!("\n    {:?}", w.wire)).collect();
                format!("{}: {}{}", a.class.name(), a.message, proof.concat())
            })
            .collect();
        if !broken.is_empty() {
            let log: Vec<String> = wire.iter().map(|w| format!("\n    {:?}", w.wire)).collect();
            panic!(
                "the coordinator broke the protocol's rules:\n{}\nthe whole log:{}",
                broken.join("\n"),
                log.concat()
            );
        }
    }
}

fn s(text: &str) -> StrBytes {
    StrBytes::from_string(text.to_string())
}
