//! Test harness: drives a [`Member`] at chosen instants and builds the broker's answers by hand.

#![allow(dead_code)]

use bytes::Bytes;
use groupsim_member::{
    Member, MemberConfig, MemberEvent, MemberOutput, Millis, RequestFailure, RequestId, Target,
    TopicPartition,
};
use groupsim_wire::consumer_protocol::{
    encode_assignment, encode_subscription, Assignment, Subscription,
};
use kafka_protocol::messages::fetch_response::{FetchableTopicResponse, PartitionData};
use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::join_group_response::JoinGroupResponseMember;
use kafka_protocol::messages::list_offsets_response::{
    ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
};
use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::offset_commit_response::{
    OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use kafka_protocol::messages::offset_fetch_response::{
    OffsetFetchResponseGroup, OffsetFetchResponsePartitions, OffsetFetchResponseTopics,
};
use kafka_protocol::messages::{
    BrokerId, FetchResponse, FindCoordinatorResponse, GroupId, HeartbeatResponse,
    JoinGroupResponse, LeaveGroupResponse, ListOffsetsResponse, MetadataResponse,
    OffsetCommitResponse, OffsetFetchResponse, RequestKind, ResponseKind, SyncGroupResponse,
    TopicName,
};
use kafka_protocol::protocol::StrBytes;

#[allow(unused_imports)] // each test binary uses a different subset
pub use groupsim_wire::error_codes::{
    COORDINATOR_LOAD_IN_PROGRESS, FENCED_INSTANCE_ID, ILLEGAL_GENERATION, MEMBER_ID_REQUIRED,
    NOT_COORDINATOR, NOT_LEADER_OR_FOLLOWER, OFFSET_OUT_OF_RANGE, REBALANCE_IN_PROGRESS,
    UNKNOWN_MEMBER_ID,
};

pub fn sb(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}

pub fn tp(t: &str, p: i32) -> TopicPartition {
    TopicPartition::new(t, p)
}

/// The test configuration: group `g`, topic `t`, bootstrap node 0, fixed 2 ms per record.
pub fn config() -> MemberConfig {
    let mut c = MemberConfig::new("g", "client-1", vec!["t".to_string()]);
    c.processing_ms_per_record = (2, 2);
    c
}

/// A member under test plus the simulated clock.
pub struct H {
    pub m: Member,
    pub now: Millis,
}

impl H {
    pub fn new(config: MemberConfig) -> Self {
        Self { m: Member::new(config, 7), now: 0 }
    }

    pub fn out(&mut self) -> Vec<MemberOutput> {
        std::iter::from_fn(|| self.m.poll_output()).collect()
    }

    pub fn respond(&mut self, id: RequestId, response: ResponseKind) -> Vec<MemberOutput> {
        self.m.handle_response(self.now, id, response);
        self.out()
    }

    pub fn fail(&mut self, id: RequestId, failure: RequestFailure) -> Vec<MemberOutput> {
        self.m.handle_failure(self.now, id, failure);
        self.out()
    }

    /// Moves the clock to `to`, firing every timer on the way at its own instant.
    pub fn advance_to(&mut self, to: Millis) -> Vec<MemberOutput> {
        let mut outs = Vec::new();
        for _ in 0..100_000 {
            match self.m.poll_timeout() {
                Some(t) if t <= to => {
                    self.now = self.now.max(t);
                    self.m.handle_timeout(self.now);
                    outs.extend(self.out());
                }
                _ => {
                    self.now = to;
                    return outs;
                }
            }
        }
        panic!("timers keep firing at {} without progress", self.now);
    }

    pub fn advance(&mut self, by: Millis) -> Vec<MemberOutput> {
        self.advance_to(self.now + by)
    }
}

pub fn api(r: &RequestKind) -> &'static str {
    match r {
        RequestKind::Metadata(_) => "Metadata",
        RequestKind::FindCoordinator(_) => "FindCoordinator",
        RequestKind::JoinGroup(_) => "JoinGroup",
        RequestKind::SyncGroup(_) => "SyncGroup",
        RequestKind::Heartbeat(_) => "Heartbeat",
        RequestKind::LeaveGroup(_) => "LeaveGroup",
        RequestKind::OffsetCommit(_) => "OffsetCommit",
        RequestKind::OffsetFetch(_) => "OffsetFetch",
        RequestKind::ListOffsets(_) => "ListOffsets",
        RequestKind::Fetch(_) => "Fetch",
        _ => "other",
    }
}

/// Every request of kind `name` in `outs`.
pub fn sent(outs: &[MemberOutput], name: &str) -> Vec<(RequestId, Target, RequestKind)> {
    outs.iter()
        .filter_map(|o| match o {
            MemberOutput::Send { id, target, request, .. } if api(request) == name => {
                Some((*id, *target, request.clone()))
            }
            _ => None,
        })
        .collect()
}

/// The single request of kind `name` in `outs`.
pub fn one(outs: &[MemberOutput], name: &str) -> (RequestId, Target, RequestKind) {
    let all = sent(outs, name);
    assert_eq!(all.len(), 1, "expected one {name} in {:#?}", summary(outs));
    all.into_iter().next().unwrap()
}

/// Kinds of the requests in `outs`, in order.
pub fn apis(outs: &[MemberOutput]) -> Vec<&'static str> {
    outs.iter()
        .filter_map(|o| match o {
            MemberOutput::Send { request, .. } => Some(api(request)),
            _ => None,
        })
        .collect()
}

pub fn events(outs: &[MemberOutput]) -> Vec<MemberEvent> {
    outs.iter()
        .filter_map(|o| match o {
            MemberOutput::Event(e) => Some(e.clone()),
            _ => None,
        })
        .collect()
}

/// One line per output, for assertion messages and order checks.
pub fn summary(outs: &[MemberOutput]) -> Vec<String> {
    outs.iter()
        .map(|o| match o {
            MemberOutput::Send { id, target, request, .. } => {
                format!("send {} #{} {:?}", api(request), id.0, target)
            }
            MemberOutput::Close(t) => format!("close {t:?}"),
            MemberOutput::Event(e) => {
                let dbg = format!("{e:?}");
                format!("event {}", dbg.split([' ', '{']).next().unwrap_or(""))
            }
        })
        .collect()
}

// ---- answers -------------------------------------------------------------------------------

/// Metadata: brokers 0 and 1; each topic `(name, partitions, leader)`.
pub fn metadata(topics: &[(&str, i32, i32)]) -> ResponseKind {
    ResponseKind::Metadata(
        MetadataResponse::default()
            .with_brokers(
                [0, 1]
                    .iter()
                    .map(|n| {
                        MetadataResponseBroker::default()
                            .with_node_id(BrokerId(*n))
                            .with_host(sb("h"))
                            .with_port(9092)
                    })
                    .collect(),
            )
            .with_topics(
                topics
                    .iter()
                    .map(|(name, count, leader)| {
                        MetadataResponseTopic::default()
                            .with_name(Some(TopicName(sb(name))))
                            .with_partitions(
                                (0..*count)
                                    .map(|p| {
                                        MetadataResponsePartition::default()
                                            .with_partition_index(p)
                                            .with_leader_id(BrokerId(*leader))
                                    })
                                    .collect(),
                            )
                    })
                    .collect(),
            ),
    )
}

pub fn find_coordinator(node: i32) -> ResponseKind {
    ResponseKind::FindCoordinator(FindCoordinatorResponse::default().with_coordinators(
        vec![Coordinator::default()
        .with_key(sb("g"))
        .with_node_id(BrokerId(node))
        .with_host(sb("h"))
        .with_port(9092)],
    ))
}

/// A successful JoinGroup answer; `members` (id, topics) is filled for the leader only.
pub fn join_ok(
    member_id: &str,
    generation: i32,
    leader: &str,
    protocol: &str,
    members: &[(&str, &[&str])],
) -> ResponseKind {
    ResponseKind::JoinGroup(
        JoinGroupResponse::default()
            .with_member_id(sb(member_id))
            .with_generation_id(generation)
            .with_leader(sb(leader))
            .with_protocol_name(Some(sb(protocol)))
            .with_protocol_type(Some(sb("consumer")))
            .with_members(
                members
                    .iter()
                    .map(|(id, topics)| {
                        let sub = Subscription {
                            topics: topics.iter().map(|t| t.to_string()).collect(),
                            ..Default::default()
                        };
                        JoinGroupResponseMember::default()
                            .with_member_id(sb(id))
                            .with_metadata(encode_subscription(&sub))
                    })
                    .collect(),
            ),
    )
}

pub fn join_err(code: i16, member_id: &str) -> ResponseKind {
    ResponseKind::JoinGroup(
        JoinGroupResponse::default()
            .with_error_code(code)
            .with_member_id(sb(member_id))
            .with_generation_id(-1),
    )
}

pub fn sync_ok(partitions: &[TopicPartition]) -> ResponseKind {
    let bytes = encode_assignment(&Assignment { partitions: partitions.to_vec(), user_data: None });
    ResponseKind::SyncGroup(SyncGroupResponse::default().with_assignment(bytes))
}

pub fn sync_raw(bytes: &'static [u8]) -> ResponseKind {
    ResponseKind::SyncGroup(SyncGroupResponse::default().with_assignment(Bytes::from_static(bytes)))
}

pub fn sync_err(code: i16) -> ResponseKind {
    ResponseKind::SyncGroup(SyncGroupResponse::default().with_error_code(code))
}

pub fn heartbeat(code: i16) -> ResponseKind {
    ResponseKind::Heartbeat(HeartbeatResponse::default().with_error_code(code))
}

pub fn leave_ok() -> ResponseKind {
    ResponseKind::LeaveGroup(LeaveGroupResponse::default())
}

/// OffsetFetch (v8+ shape): committed offset per partition of topic `t` (-1: none).
pub fn offset_fetch(committed: &[(i32, i64)]) -> ResponseKind {
    ResponseKind::OffsetFetch(OffsetFetchResponse::default().with_groups(vec![
        OffsetFetchResponseGroup::default().with_group_id(GroupId(sb("g"))).with_topics(
            vec![OffsetFetchResponseTopics::default()
                .with_name(TopicName(sb("t")))
                .with_partitions(
                    committed
                        .iter()
                        .map(|(p, o)| {
                            OffsetFetchResponsePartitions::default()
                                .with_partition_index(*p)
                                .with_committed_offset(*o)
                        })
                        .collect(),
                )],
        ),
    ]))
}

/// ListOffsets: offset per partition of topic `t`.
pub fn list_offsets(offsets: &[(i32, i64)]) -> ResponseKind {
    ResponseKind::ListOffsets(ListOffsetsResponse::default().with_topics(
        vec![ListOffsetsTopicResponse::default()
            .with_name(TopicName(sb("t")))
            .with_partitions(
                offsets
                    .iter()
                    .map(|(p, o)| {
                        ListOffsetsPartitionResponse::default()
                            .with_partition_index(*p)
                            .with_offset(*o)
                    })
                    .collect(),
            )],
    ))
}

/// OffsetCommit answer with one error code for every partition of the request.
pub fn commit_answer(request: &RequestKind, code: i16) -> ResponseKind {
    let RequestKind::OffsetCommit(r) = request else { panic!("not a commit: {request:?}") };
    ResponseKind::OffsetCommit(
        OffsetCommitResponse::default().with_topics(
            r.topics
                .iter()
                .map(|t| {
                    OffsetCommitResponseTopic::default().with_name(t.name.clone()).with_partitions(
                        t.partitions
                            .iter()
                            .map(|p| {
                                OffsetCommitResponsePartition::default()
                                    .with_partition_index(p.partition_index)
                                    .with_error_code(code)
                            })
                            .collect(),
                    )
                })
                .collect(),
        ),
    )
}

/// `(topic, partition, offset)` triples of an OffsetCommit request.
pub fn commit_offsets(request: &RequestKind) -> Vec<(String, i32, i64)> {
    let RequestKind::OffsetCommit(r) = request else { panic!("not a commit: {request:?}") };
    r.topics
        .iter()
        .flat_map(|t| {
            t.partitions
                .iter()
                .map(move |p| (t.name.0.to_string(), p.partition_index, p.committed_offset))
        })
        .collect()
}

/// `(topic, partition, fetch offset)` triples of a Fetch request.
pub fn fetch_positions(request: &RequestKind) -> Vec<(String, i32, i64)> {
    let RequestKind::Fetch(r) = request else { panic!("not a fetch: {request:?}") };
    r.topics
        .iter()
        .flat_map(|t| {
            t.partitions.iter().map(move |p| (t.topic.0.to_string(), p.partition, p.fetch_offset))
        })
        .collect()
}

pub use groupsim_wire::test_util::record_batch;

/// Fetch answer for topic `t`: per partition, an error code and the records to return.
pub fn fetch_answer(parts: &[(i32, i16, std::ops::Range<i64>)]) -> ResponseKind {
    ResponseKind::Fetch(FetchResponse::default().with_responses(
        vec![FetchableTopicResponse::default()
            .with_topic(TopicName(sb("t")))
            .with_partitions(
                parts
                    .iter()
                    .map(|(p, code, offsets)| {
                        let records = if offsets.is_empty() {
                            None
                        } else {
                            Some(record_batch(offsets.clone()))
                        };
                        PartitionData::default()
                            .with_partition_index(*p)
                            .with_error_code(*code)
                            .with_high_watermark(offsets.end)
                            .with_records(records)
                    })
                    .collect(),
            )],
    ))
}

// ---- common journeys ----------------------------------------------------------------------

/// Start, Metadata (topic `t`: 4 partitions led by node 1), FindCoordinator (node 0).
/// Returns the JoinGroup request.
pub fn to_first_join(h: &mut H) -> (RequestId, Target, RequestKind) {
    h.m.start(h.now);
    let o = h.out();
    let (id, target, _) = one(&o, "Metadata");
    assert_eq!(target, Target::Broker(0));
    let o = h.respond(id, metadata(&[("t", 4, 1)]));
    let (id, _, _) = one(&o, "FindCoordinator");
    let o = h.respond(id, find_coordinator(0));
    assert!(events(&o).contains(&MemberEvent::CoordinatorFound { node_id: 0 }));
    one(&o, "JoinGroup")
}

/// Joins as follower `m-1` of generation 1 owning `parts` of `t`; OffsetFetch answers with
/// `committed`. Returns the outputs of the OffsetFetch answer.
pub fn join_follower(h: &mut H, parts: &[i32], committed: &[(i32, i64)]) -> Vec<MemberOutput> {
    let (id, _, _) = to_first_join(h);
    let o = h.respond(id, join_ok("m-1", 1, "m-0", "range", &[]));
    let (id, _, _) = one(&o, "SyncGroup");
    let assigned: Vec<TopicPartition> = parts.iter().map(|p| tp("t", *p)).collect();
    let o = h.respond(id, sync_ok(&assigned));
    if assigned.is_empty() {
        return o;
    }
    let (id, target, _) = one(&o, "OffsetFetch");
    assert_eq!(target, Target::Coordinator(0));
    h.respond(id, offset_fetch(committed))
}

/// `config()` with `profile` (and its default assignors), auto-committing only every minute.
pub fn profile_config(profile: groupsim_member::ClientProfile) -> MemberConfig {
    let mut c = config().with_profile(profile);
    c.commit_interval_ms = 60_000;
    c
}

/// Follower `m-1` of generation 1 owning `parts` of `t` (committed 10 each), having processed
/// 10..=14 of `t-0` by 10 ms (2 ms per record).
pub fn follower_processed(h: &mut H, parts: &[i32]) {
    let committed: Vec<(i32, i64)> = parts.iter().map(|p| (*p, 10)).collect();
    let o = join_follower(h, parts, &committed);
    let (id, _, _) = one(&o, "Fetch");
    h.respond(id, fetch_answer(&[(0, 0, 10..15)]));
    let o = h.advance_to(10);
    assert!(events(&o).iter().any(|e| matches!(
        e,
        MemberEvent::RecordsProcessed { first_offset: 10, last_offset: 14, generation: 1, .. }
    )));
}

/// The heartbeat due at 3 s is answered with `code`.
pub fn heartbeat_answered(h: &mut H, code: i16) -> Vec<MemberOutput> {
    let o = h.advance_to(3_000);
    let (id, _, _) = one(&o, "Heartbeat");
    h.respond(id, heartbeat(code))
}

/// The heartbeat due at 3 s is answered REBALANCE_IN_PROGRESS.
pub fn rebalance_announced(h: &mut H) -> Vec<MemberOutput> {
    heartbeat_answered(h, REBALANCE_IN_PROGRESS)
}
