//! Sans-IO broker tests for the non-group APIs (Metadata, FindCoordinator, ListOffsets, Fetch,
//! ApiVersions) and for the NOT_COORDINATOR routing of group APIs, driven directly at chosen
//! instants without any I/O.

use groupsim_wire::test_util as wire_support;

use bytes::Bytes;
use groupsim_coordinator::broker::{group_partition, Broker, BrokerAddress, BrokerConfig};
use groupsim_coordinator::log::{shared, PartitionLogs, SharedLogs};
use groupsim_coordinator::CoordinatorOutput;
use groupsim_wire::codec::{encode_response, request_api_key};
use groupsim_wire::versions::is_served;
use groupsim_wire::{RequestId, TopicPartition};
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopic,
};
use kafka_protocol::messages::*;
use kafka_protocol::records::RecordBatchDecoder;
use wire_support::{group, s, topic};

const NOT_COORDINATOR: i16 = 16;
const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
const NOT_LEADER_OR_FOLLOWER: i16 = 6;
const OFFSET_OUT_OF_RANGE: i16 = 1;

fn cluster(brokers: i32, node_id: i32) -> BrokerConfig {
    BrokerConfig {
        node_id,
        cluster_id: "test-cluster".into(),
        brokers: (0..brokers)
            .map(|i| BrokerAddress { node_id: 100 + i, host: format!("broker{i}"), port: 9092 + i })
            .collect(),
        offsets_topic_partitions: 50,
        coordinator: Default::default(),
    }
}

/// Logs with topic "t" (3 partitions): t-0 holds 10 records at timestamps 1000, 1010, …
fn logs() -> SharedLogs {
    let mut logs = PartitionLogs::new();
    logs.create_topic("t", 3).unwrap();
    logs.create_topic("a", 1).unwrap();
    let tp = TopicPartition::new("t", 0);
    for i in 0..10 {
        let key = (i % 2 == 0).then(|| Bytes::from(format!("k{i}")));
        logs.append(&tp, key, Bytes::from(format!("v{i}")), 1000 + 10 * i).unwrap();
    }
    shared(logs)
}

/// Sends one request and returns the single answer it produced, checking that a served
/// request's answer encodes at the request's version.
fn ask(broker: &mut Broker, version: i16, request: impl Into<RequestKind>) -> ResponseKind {
    let request = request.into();
    let served = request_api_key(&request).filter(|key| is_served(*key, version));
    broker.handle_request(0, RequestId(7), version, request);
    let mut answers = Vec::new();
    while let Some(out) = broker.poll_output() {
        if let CoordinatorOutput::Response { id, response } = out {
            assert_eq!(id, RequestId(7));
            answers.push(response);
        }
    }
    assert_eq!(answers.len(), 1, "{answers:?}");
    let answer = answers.pop().unwrap();
    if let Some(api_key) = served {
        encode_response(1, api_key, version, &answer).unwrap_or_else(|e| panic!("{e}"));
    }
    answer
}

macro_rules! answer {
    ($broker:expr, $v:expr, $req:expr, $kind:ident) => {
        match ask($broker, $v, $req) {
            ResponseKind::$kind(r) => r,
            other => panic!("expected {}, got {other:?}", stringify!($kind)),
        }
    };
}

#[test]
fn metadata_lists_all_topics_in_name_order_with_leaders_by_placement() {
    let mut broker = Broker::new(cluster(2, 100), logs());
    let r = answer!(&mut broker, 12, MetadataRequest::default().with_topics(None), Metadata);
    assert_eq!(r.cluster_id.as_deref(), Some("test-cluster"));
    assert_eq!(r.controller_id.0, 100);
    assert_eq!(
        r.brokers.iter().map(|b| (b.node_id.0, b.host.to_string(), b.port)).collect::<Vec<_>>(),
        [(100, "broker0".to_string(), 9092), (101, "broker1".to_string(), 9093)]
    );
    let names: Vec<_> = r.topics.iter().map(|t| t.name.as_deref().unwrap().to_string()).collect();
    assert_eq!(names, ["a", "t"]);
    let t = &r.topics[1];
    assert_eq!(t.error_code, 0);
    let leaders: Vec<i32> = t.partitions.iter().map(|p| p.leader_id.0).collect();
    assert_eq!(leaders, [100, 101, 100], "partition p is led by brokers[p % 2]");
    for p in &t.partitions {
        assert_eq!(p.replica_nodes, [p.leader_id]);
        assert_eq!(p.isr_nodes, [p.leader_id]);
    }
}

#[test]
fn metadata_empty_topic_list_means_all_in_v0_and_none_from_v1() {
    let mut broker = Broker::new(cluster(1, 100), logs());
    let empty = MetadataRequest::default().with_topics(Some(vec![]));
    assert_eq!(answer!(&mut broker, 0, empty.clone(), Metadata).topics.len(), 2);
    assert_eq!(answer!(&mut broker, 1, empty, Metadata).topics.len(), 0);
}

#[test]
fn metadata_unknown_topic_is_an_error_and_is_not_created() {
    let logs = logs();
    let mut broker = Broker::new(cluster(1, 100), logs.clone());
    let req = MetadataRequest::default()
        .with_allow_auto_topic_creation(true)
        .with_topics(Some(vec![MetadataRequestTopic::default().with_name(Some(topic("nope")))]));
    let r = answer!(&mut broker, 9, req, Metadata);
    assert_eq!(r.topics[0].error_code, UNKNOWN_TOPIC_OR_PARTITION);
    assert!(r.topics[0].partitions.is_empty());
    assert_eq!(logs.lock().unwrap().partition_count("nope"), None);
}

/// KIP-848 assignments name topics by id only; a consumer-protocol client learns the names
/// from Metadata v10+. Without ids there, every assigned partition stays unresolved and the
/// member never fetches (what groupsim's consumer members did before ids were served).
#[test]
fn metadata_carries_topic_ids_and_answers_a_topic_asked_for_by_id() {
    let mut broker = Broker::new(cluster(1, 100), logs());
    let r = answer!(&mut broker, 12, MetadataRequest::default().with_topics(None), Metadata);
    for t in &r.topics {
        let name = t.name.as_deref().unwrap();
        assert_eq!(t.topic_id, groupsim_wire::topic_id(name), "{name}");
    }
    let by_id = |id| MetadataRequestTopic::default().with_name(None).with_topic_id(id);
    let req = MetadataRequest::default().with_topics(Some(vec![
        by_id(groupsim_wire::topic_id("t")),
        by_id(groupsim_wire::topic_id("nope")),
    ]));
    let r = answer!(&mut broker, 12, req, Metadata);
    assert_eq!(r.topics[0].name.as_deref().map(|n| n.as_str()), Some("t"));
    assert_eq!(r.topics[0].partitions.len(), 3);
    assert_eq!(r.topics[1].error_code, ResponseError::UnknownTopicId.code());
    assert_eq!(r.topics[1].topic_id, groupsim_wire::topic_id("nope"));
    let unknown_name = MetadataRequest::default()
        .with_topics(Some(vec![MetadataRequestTopic::default().with_name(Some(topic("nope")))]));
    let r = answer!(&mut broker, 12, unknown_name, Metadata);
    assert!(r.topics[0].topic_id.is_nil(), "an unknown name gets the zero id");
}

/// Group ids coordinated by each broker of a 2-broker cluster.
fn groups_by_owner() -> (String, String) {
    let owner = |g: &str| group_partition(g, 50) % 2;
    let mine = (0..).map(|i| format!("group-{i}")).find(|g| owner(g) == 0).unwrap();
    let theirs = (0..).map(|i| format!("group-{i}")).find(|g| owner(g) == 1).unwrap();
    (mine, theirs)
}

#[test]
fn find_coordinator_names_the_leader_of_the_groups_offsets_partition() {
    let config = cluster(3, 100);
    let mut broker = Broker::new(config.clone(), logs());
    for g in ["", "a", "hello", "polygenelubricants", "consumer-group-1"] {
        let expected = &config.brokers[(group_partition(g, 50) % 3) as usize];
        for v in 0..=3 {
            let req = FindCoordinatorRequest::default().with_key(s_owned(g));
            let r = answer!(&mut broker, v, req, FindCoordinator);
            assert_eq!(
                (r.error_code, r.node_id.0, r.host.to_string(), r.port),
                (0, expected.node_id, expected.host.clone(), expected.port)
            );
        }
    }
    let keys = vec![s("hello"), s("a")];
    let r = answer!(
        &mut broker,
        4,
        FindCoordinatorRequest::default().with_coordinator_keys(keys),
        FindCoordinator
    );
    let got: Vec<(String, i32)> =
        r.coordinators.iter().map(|c| (c.key.to_string(), c.node_id.0)).collect();
    let node = |g: &str| config.brokers[(group_partition(g, 50) % 3) as usize].node_id;
    assert_eq!(got, [("hello".to_string(), node("hello")), ("a".to_string(), node("a"))]);
}

fn s_owned(v: &str) -> kafka_protocol::protocol::StrBytes {
    kafka_protocol::protocol::StrBytes::from_string(v.to_string())
}

#[test]
fn find_coordinator_for_transactions_and_unknown_key_types_is_an_error() {
    let mut broker = Broker::new(cluster(1, 100), logs());
    let txn = FindCoordinatorRequest::default().with_key(s("tx")).with_key_type(1);
    let r = answer!(&mut broker, 3, txn, FindCoordinator);
    assert_eq!((r.error_code, r.node_id.0, r.port), (15, -1, -1), "COORDINATOR_NOT_AVAILABLE");
    let share =
        FindCoordinatorRequest::default().with_coordinator_keys(vec![s("x")]).with_key_type(2);
    let r = answer!(&mut broker, 6, share, FindCoordinator);
    assert_eq!(r.coordinators[0].error_code, 42, "INVALID_REQUEST");
}

fn list_offsets(partition: i32, timestamp: i64) -> ListOffsetsRequest {
    ListOffsetsRequest::default().with_replica_id(BrokerId(-1)).with_topics(vec![
        ListOffsetsTopic::default().with_name(topic("t")).with_partitions(vec![
            ListOffsetsPartition::default()
                .with_partition_index(partition)
                .with_timestamp(timestamp),
        ]),
    ])
}

#[test]
fn list_offsets_answers_earliest_latest_and_timestamps() {
    let logs = logs();
    logs.lock().unwrap().delete_records_before(&TopicPartition::new("t", 0), 2).unwrap();
    let mut broker = Broker::new(cluster(1, 100), logs);
    let one = |broker: &mut Broker, v: i16, ts: i64| {
        let r = answer!(broker, v, list_offsets(0, ts), ListOffsets);
        let p = &r.topics[0].partitions[0];
        (p.error_code, p.offset, p.timestamp, p.leader_epoch)
    };
    assert_eq!(one(&mut broker, 1, -2), (0, 2, -1, -1), "earliest = log start");
    assert_eq!(one(&mut broker, 7, -1), (0, 10, -1, 0), "latest = log end");
    assert_eq!(one(&mut broker, 7, 1035), (0, 4, 1040, 0), "first record at or after t");
    assert_eq!(one(&mut broker, 7, 5000), (0, -1, -1, -1), "no record that late");
    assert_eq!(one(&mut broker, 7, -3), (0, 9, 1090, 0), "max timestamp");
}

#[test]
fn list_offsets_unknown_partition_and_not_leader() {
    let mut broker = Broker::new(cluster(2, 100), logs());
    let r = answer!(&mut broker, 5, list_offsets(7, -1), ListOffsets);
    assert_eq!(r.topics[0].partitions[0].error_code, UNKNOWN_TOPIC_OR_PARTITION);
    let r = answer!(&mut broker, 5, list_offsets(1, -1), ListOffsets);
    assert_eq!(
        r.topics[0].partitions[0].error_code, NOT_LEADER_OR_FOLLOWER,
        "t-1 is led by broker 101"
    );
}

fn fetch(partitions: &[(i32, i64, i32)]) -> FetchRequest {
    FetchRequest::default().with_replica_id(BrokerId(-1)).with_max_bytes(i32::MAX).with_topics(
        vec![FetchTopic::default().with_topic(topic("t")).with_partitions(
            partitions
                .iter()
                .map(|&(p, offset, max)| {
                    FetchPartition::default()
                        .with_partition(p)
                        .with_fetch_offset(offset)
                        .with_partition_max_bytes(max)
                })
                .collect(),
        )],
    )
}

/// (offset, key, value) of the records in a fetched partition, checking it is one batch.
fn records(data: &fetch_response::PartitionData) -> Vec<(i64, Option<String>, String)> {
    let mut bytes = data.records.clone().unwrap_or_default();
    if bytes.is_empty() {
        return vec![];
    }
    let sets = RecordBatchDecoder::decode_all(&mut bytes).unwrap();
    assert_eq!(sets.len(), 1, "one batch");
    let text = |b: &Bytes| String::from_utf8(b.to_vec()).unwrap();
    sets[0]
        .records
        .iter()
        .map(|r| (r.offset, r.key.as_ref().map(text), text(r.value.as_ref().unwrap())))
        .collect()
}

#[test]
fn fetch_returns_records_from_the_fetch_offset_in_one_batch() {
    let mut broker = Broker::new(cluster(1, 100), logs());
    for v in [4, 11, 12] {
        let r = answer!(&mut broker, v, fetch(&[(0, 7, 1 << 20)]), Fetch);
        let p = &r.responses[0].partitions[0];
        assert_eq!((p.error_code, p.high_watermark, p.last_stable_offset), (0, 10, 10));
        assert_eq!(
            records(p),
            [
                (7, None, "v7".to_string()),
                (8, Some("k8".to_string()), "v8".to_string()),
                (9, None, "v9".to_string())
            ]
        );
    }
}

#[test]
fn fetch_out_of_range_offsets_and_the_log_end() {
    let logs = logs();
    logs.lock().unwrap().delete_records_before(&TopicPartition::new("t", 0), 3).unwrap();
    let mut broker = Broker::new(cluster(1, 100), logs);
    let r = answer!(&mut broker, 12, fetch(&[(0, 2, 1000), (0, 11, 1000), (0, 10, 1000)]), Fetch);
    let parts = &r.responses[0].partitions;
    assert_eq!(parts[0].error_code, OFFSET_OUT_OF_RANGE, "below log start");
    assert_eq!(parts[0].log_start_offset, 3);
    assert_eq!(parts[1].error_code, OFFSET_OUT_OF_RANGE, "above log end");
    assert_eq!(
        (parts[2].error_code, records(&parts[2]).len()),
        (0, 0),
        "at log end: empty, no error"
    );
}

#[test]
fn fetch_respects_partition_max_bytes_but_the_first_data_always_gets_one_record() {
    let logs = logs();
    {
        let mut l = logs.lock().unwrap();
        let tp = TopicPartition::new("t", 2);
        for i in 0..3 {
            l.append(&tp, None, Bytes::from(vec![b'x'; 100]), i).unwrap();
        }
    }
    let mut broker = Broker::new(cluster(1, 100), logs);
    // A limit too small for any record: the first partition with data still gets one record,
    // the next one gets none.
    let r = answer!(&mut broker, 12, fetch(&[(0, 0, 10), (2, 0, 10)]), Fetch);
    let parts = &r.responses[0].partitions;
    assert_eq!(records(&parts[0]).len(), 1);
    assert_eq!(records(&parts[1]).len(), 0);
    // Room for about two 100-byte records.
    let r = answer!(&mut broker, 12, fetch(&[(2, 0, 61 + 2 * 121)]), Fetch);
    assert_eq!(records(&r.responses[0].partitions[0]).len(), 2);
}

#[test]
fn fetch_caps_a_partition_at_500_records() {
    let logs = logs();
    {
        let mut l = logs.lock().unwrap();
        let tp = TopicPartition::new("t", 1);
        for i in 0..600 {
            l.append(&tp, None, Bytes::from_static(b"v"), i).unwrap();
        }
    }
    let mut broker = Broker::new(cluster(1, 100), logs);
    let r = answer!(&mut broker, 12, fetch(&[(1, 0, i32::MAX)]), Fetch);
    let got = records(&r.responses[0].partitions[0]);
    assert_eq!(got.len(), 500);
    assert_eq!(got.last().unwrap().0, 499);
}

#[test]
fn fetch_unknown_partition_not_leader_and_unknown_session() {
    let mut broker = Broker::new(cluster(2, 100), logs());
    let r = answer!(&mut broker, 12, fetch(&[(5, 0, 100), (1, 0, 100)]), Fetch);
    let parts = &r.responses[0].partitions;
    assert_eq!(parts[0].error_code, UNKNOWN_TOPIC_OR_PARTITION);
    assert_eq!(parts[1].error_code, NOT_LEADER_OR_FOLLOWER);
    assert_eq!(parts[1].current_leader.leader_id.0, 101, "v12 names the leader");
    let r = answer!(&mut broker, 12, fetch(&[(0, 0, 100)]).with_session_id(5), Fetch);
    assert_eq!((r.error_code, r.responses.len()), (70, 0), "FETCH_SESSION_ID_NOT_FOUND");
}

#[test]
fn api_versions_advertises_the_served_table() {
    let mut broker = Broker::new(cluster(1, 100), logs());
    let req = ApiVersionsRequest::default()
        .with_client_software_name(s("x"))
        .with_client_software_version(s("1"));
    let r = answer!(&mut broker, 3, req, ApiVersions);
    let fetch = r.api_keys.iter().find(|k| k.api_key == ApiKey::Fetch as i16).unwrap();
    assert_eq!((fetch.min_version, fetch.max_version), (4, 12));
    let produce = r.api_keys.iter().find(|k| k.api_key == ApiKey::Produce as i16).unwrap();
    assert_eq!((produce.min_version, produce.max_version), (3, 11), "for groupsim serve");
    assert!(r.api_keys.iter().all(|k| k.api_key != ApiKey::CreateTopics as i16));
}

#[test]
fn unserved_api_or_version_gets_an_unsupported_version_answer() {
    let mut broker = Broker::new(cluster(1, 100), logs());
    let r = answer!(&mut broker, 12, ProduceRequest::default(), ApiVersions);
    assert_eq!(r.error_code, 35);
    let r = answer!(&mut broker, 13, fetch(&[]), ApiVersions);
    assert_eq!(r.error_code, 35);
}

#[test]
fn group_apis_for_groups_coordinated_elsewhere_get_not_coordinator() {
    let (_, theirs) = groups_by_owner();
    let g = || GroupId(s_owned(&theirs));
    let mut broker = Broker::new(cluster(2, 100), logs());

    let join = JoinGroupRequest::default()
        .with_group_id(g())
        .with_member_id(s("m1"))
        .with_protocol_type(s("consumer"));
    for v in [0, 6, 7, 9] {
        let r = answer!(&mut broker, v, join.clone(), JoinGroup);
        assert_eq!(
            (r.error_code, r.generation_id, r.member_id.to_string()),
            (NOT_COORDINATOR, -1, "m1".into())
        );
    }
    let sync = SyncGroupRequest::default().with_group_id(g());
    assert_eq!(answer!(&mut broker, 5, sync, SyncGroup).error_code, NOT_COORDINATOR);
    let hb = HeartbeatRequest::default().with_group_id(g());
    assert_eq!(answer!(&mut broker, 4, hb, Heartbeat).error_code, NOT_COORDINATOR);
    let leave = LeaveGroupRequest::default().with_group_id(g());
    assert_eq!(answer!(&mut broker, 5, leave, LeaveGroup).error_code, NOT_COORDINATOR);

    let commit = OffsetCommitRequest::default().with_group_id(g()).with_topics(vec![
        OffsetCommitRequestTopic::default().with_name(topic("t")).with_partitions(vec![
            OffsetCommitRequestPartition::default().with_partition_index(0),
            OffsetCommitRequestPartition::default().with_partition_index(2),
        ]),
    ]);
    let r = answer!(&mut broker, 8, commit, OffsetCommit);
    let errors: Vec<(i32, i16)> =
        r.topics[0].partitions.iter().map(|p| (p.partition_index, p.error_code)).collect();
    assert_eq!(errors, [(0, NOT_COORDINATOR), (2, NOT_COORDINATOR)], "per partition");

    let fetch_v1 = OffsetFetchRequest::default().with_group_id(g()).with_topics(Some(vec![
        OffsetFetchRequestTopic::default().with_name(topic("t")).with_partition_indexes(vec![0, 1]),
    ]));
    let r = answer!(&mut broker, 1, fetch_v1.clone(), OffsetFetch);
    assert_eq!(r.error_code, 0, "v1 has no top-level error");
    assert!(r.topics[0]
        .partitions
        .iter()
        .all(|p| p.error_code == NOT_COORDINATOR && p.committed_offset == -1));
    let r = answer!(&mut broker, 5, fetch_v1, OffsetFetch);
    assert_eq!(r.error_code, NOT_COORDINATOR, "v2+ top-level");

    let batched = OffsetFetchRequest::default()
        .with_groups(vec![OffsetFetchRequestGroup::default().with_group_id(g())]);
    let r = answer!(&mut broker, 8, batched, OffsetFetch);
    assert_eq!(
        (r.groups[0].group_id.to_string(), r.groups[0].error_code),
        (theirs.clone(), NOT_COORDINATOR)
    );

    let describe = DescribeGroupsRequest::default().with_groups(vec![g()]);
    let r = answer!(&mut broker, 5, describe, DescribeGroups);
    assert_eq!(
        (r.groups[0].group_id.to_string(), r.groups[0].error_code),
        (theirs, NOT_COORDINATOR)
    );
}

#[test]
fn mixed_describe_groups_keeps_request_order_with_not_coordinator_entries() {
    let (mine, theirs) = groups_by_owner();
    let mut broker = Broker::new(cluster(2, 100), logs());
    let req = DescribeGroupsRequest::default().with_groups(vec![
        GroupId(s_owned(&theirs)),
        GroupId(s_owned(&mine)),
        GroupId(s_owned(&theirs)),
    ]);
    let r = answer!(&mut broker, 5, req, DescribeGroups);
    let got: Vec<(String, i16)> =
        r.groups.iter().map(|g| (g.group_id.to_string(), g.error_code)).collect();
    assert_eq!(got.len(), 3);
    assert_eq!(got[0], (theirs.clone(), NOT_COORDINATOR));
    assert_eq!(got[1].0, mine, "answered by the coordinator");
    assert_ne!(got[1].1, NOT_COORDINATOR);
    assert_eq!(got[2], (theirs, NOT_COORDINATOR));
}

#[test]
fn answers_come_out_in_request_order() {
    let mut broker = Broker::new(cluster(1, 100), logs());
    broker.handle_request(0, RequestId(1), 12, MetadataRequest::default().with_topics(None).into());
    broker.handle_request(0, RequestId(2), 12, fetch(&[(0, 0, 100)]).into());
    broker.handle_request(0, RequestId(3), 7, list_offsets(0, -1).into());
    let mut ids = Vec::new();
    while let Some(out) = broker.poll_output() {
        if let CoordinatorOutput::Response { id, .. } = out {
            ids.push(id.0);
        }
    }
    assert_eq!(ids, [1, 2, 3]);
    let _ = group("unused");
}

#[test]
fn mixed_batched_offset_fetch_keeps_request_order_with_not_coordinator_entries() {
    let (mine, theirs) = groups_by_owner();
    let mut broker = Broker::new(cluster(2, 100), logs());
    let g = |name: &str| OffsetFetchRequestGroup::default().with_group_id(GroupId(s_owned(name)));
    let req = OffsetFetchRequest::default().with_groups(vec![g(&mine), g(&theirs)]);
    let r = answer!(&mut broker, 8, req, OffsetFetch);
    let got: Vec<(String, i16)> =
        r.groups.iter().map(|g| (g.group_id.to_string(), g.error_code)).collect();
    assert_eq!(got.len(), 2);
    assert_eq!(got[0].0, mine, "answered by the coordinator");
    assert_ne!(got[0].1, NOT_COORDINATOR);
    assert_eq!(got[1], (theirs, NOT_COORDINATOR));
}

/// Every answer the broker has produced so far, by request.
fn answers(broker: &mut Broker) -> Vec<(RequestId, ResponseKind)> {
    let mut out = Vec::new();
    while let Some(o) = broker.poll_output() {
        if let CoordinatorOutput::Response { id, response } = o {
            out.push((id, response));
        }
    }
    out
}

/// Kafka's fetch purgatory: a Fetch that may wait (`max_wait_ms` and `min_bytes` above zero)
/// and finds nothing at its offsets is held, not answered empty. It is answered as soon as a
/// partition it asks for has records (a Produce to this broker, or records appended beside
/// it), or empty when its wait runs out; a Fetch that may not wait, or that finds data or an
/// error, is answered at once.
#[test]
fn a_fetch_with_nothing_to_return_waits_for_records_or_its_max_wait() {
    let logs = logs();
    let mut broker = Broker::new(cluster(1, 100), logs.clone());
    let waiting = |partitions: &[(i32, i64, i32)]| {
        RequestKind::from(fetch(partitions).with_max_wait_ms(500).with_min_bytes(1))
    };
    // At the log end of t-0 and on the empty t-1: held.
    broker.handle_request(1_000, RequestId(1), 12, waiting(&[(0, 10, 1 << 20), (1, 0, 1 << 20)]));
    broker.handle_request(1_000, RequestId(2), 12, waiting(&[(2, 0, 1 << 20)]));
    assert!(answers(&mut broker).is_empty(), "nothing to return yet: both held");
    assert_eq!(broker.poll_timeout(), Some(1_500), "the broker wakes when the waits run out");
    // Records for t-1 arrive beside the broker: only the Fetch asking for t-1 is answered.
    logs.lock()
        .unwrap()
        .append(&TopicPartition::new("t", 1), None, Bytes::from("x"), 1_100)
        .unwrap();
    broker.logs_appended(1_100);
    let got = answers(&mut broker);
    assert_eq!(got.len(), 1);
    let (id, ResponseKind::Fetch(r)) = &got[0] else { panic!("{got:?}") };
    assert_eq!(*id, RequestId(1));
    assert_eq!(records(&r.responses[0].partitions[1]), [(0, None, "x".to_string())]);
    // The other runs out its wait and goes empty.
    broker.handle_timeout(1_499);
    assert!(answers(&mut broker).is_empty(), "still within its wait");
    broker.handle_timeout(1_500);
    let got = answers(&mut broker);
    let [(RequestId(2), ResponseKind::Fetch(r))] = &got[..] else { panic!("{got:?}") };
    assert!(records(&r.responses[0].partitions[0]).is_empty());
    assert_eq!(broker.poll_timeout(), None, "nothing held any more");
    // Data or an error at once; and a Fetch that may not wait is answered empty at once.
    broker.handle_request(2_000, RequestId(3), 12, waiting(&[(0, 9, 1 << 20)]));
    broker.handle_request(2_000, RequestId(4), 12, waiting(&[(0, 99, 1 << 20)]));
    broker.handle_request(2_000, RequestId(5), 12, fetch(&[(2, 0, 1 << 20)]).into());
    let ids: Vec<RequestId> = answers(&mut broker).into_iter().map(|(id, _)| id).collect();
    assert_eq!(ids, [RequestId(3), RequestId(4), RequestId(5)]);
}
