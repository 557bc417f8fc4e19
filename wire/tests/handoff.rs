//! A Fetch request or answer handed over as a value is what the other side would decode from
//! its frame: over generated messages (every field drawn, defaults among the draws, so fields a
//! version lacks are set as often as not) at every version handed over, the value equals the
//! decoded frame, and where the encoder refuses the message the handover refuses it with the
//! same error.

use bytes::Bytes;
use groupsim_wire::codec::{
    decode_request_from, decode_response_prefix_from, encode_request, encode_response,
    request_header, Source,
};
use groupsim_wire::conn::handoff::{as_decoded_request, as_decoded_response, hands_over, Handover};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic, ForgottenTopic};
use kafka_protocol::messages::fetch_response::{
    AbortedTransaction, FetchableTopicResponse, NodeEndpoint, PartitionData,
};
use kafka_protocol::messages::{
    ApiKey, BrokerId, FetchRequest, FetchResponse, RequestKind, ResponseKind, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use proptest::prelude::*;
use uuid::Uuid;

fn s(text: &str) -> StrBytes {
    StrBytes::from_string(text.to_string())
}

fn a_string() -> impl Strategy<Value = StrBytes> {
    prop_oneof![Just(s("")), Just(s("orders")), "[a-z]{1,12}".prop_map(|t| s(&t))]
}

fn a_uuid() -> impl Strategy<Value = Uuid> {
    prop_oneof![Just(Uuid::nil()), any::<u128>().prop_map(Uuid::from_u128)]
}

/// An i32 that is often one of the decoder's defaults.
fn an_i32() -> impl Strategy<Value = i32> {
    prop_oneof![Just(-1), Just(0), any::<i32>()]
}

fn an_i64() -> impl Strategy<Value = i64> {
    prop_oneof![Just(-1), Just(0), Just(i64::MAX), any::<i64>()]
}

fn a_partition() -> impl Strategy<Value = FetchPartition> {
    ((an_i32(), an_i32(), an_i64(), an_i32()), (an_i64(), an_i32(), a_uuid(), an_i64())).prop_map(
        |((partition, leader_epoch, offset, last_epoch), (start, max, dir, hw))| {
            let mut p = FetchPartition::default();
            p.partition = partition;
            p.current_leader_epoch = leader_epoch;
            p.fetch_offset = offset;
            p.last_fetched_epoch = last_epoch;
            p.log_start_offset = start;
            p.partition_max_bytes = max;
            p.replica_directory_id = dir;
            p.high_watermark = hw;
            p
        },
    )
}

fn a_topic() -> impl Strategy<Value = FetchTopic> {
    (a_string(), a_uuid(), prop::collection::vec(a_partition(), 0..3)).prop_map(
        |(name, id, partitions)| {
            let mut t = FetchTopic::default();
            t.topic = TopicName(name);
            t.topic_id = id;
            t.partitions = partitions;
            t
        },
    )
}

fn a_forgotten_topic() -> impl Strategy<Value = ForgottenTopic> {
    (a_string(), a_uuid(), prop::collection::vec(an_i32(), 0..3)).prop_map(
        |(name, id, partitions)| {
            let mut t = ForgottenTopic::default();
            t.topic = TopicName(name);
            t.topic_id = id;
            t.partitions = partitions;
            t
        },
    )
}

fn a_request() -> impl Strategy<Value = FetchRequest> {
    (
        (prop::option::of(a_string()), an_i32(), an_i32(), an_i64()),
        (an_i32(), an_i32(), an_i32(), prop_oneof![Just(0i8), Just(1i8)]),
        (an_i32(), an_i32(), a_string()),
        (prop::collection::vec(a_topic(), 0..3), prop::collection::vec(a_forgotten_topic(), 0..2)),
    )
        .prop_map(
            |(
                (cluster, replica, state_id, state_epoch),
                (wait, min, max, isolation),
                (session, epoch, rack),
                (topics, forgotten),
            )| {
                let mut r = FetchRequest::default();
                r.cluster_id = cluster;
                r.replica_id = BrokerId(replica);
                r.replica_state.replica_id = BrokerId(state_id);
                r.replica_state.replica_epoch = state_epoch;
                r.max_wait_ms = wait;
                r.min_bytes = min;
                r.max_bytes = max;
                r.isolation_level = isolation;
                r.session_id = session;
                r.session_epoch = epoch;
                r.rack_id = rack;
                r.topics = topics;
                r.forgotten_topics_data = forgotten;
                r
            },
        )
}

fn a_partition_data() -> impl Strategy<Value = PartitionData> {
    (
        (an_i32(), prop_oneof![Just(0i16), Just(1i16), any::<i16>()], an_i64(), an_i64()),
        (an_i64(), an_i32(), an_i64(), an_i32(), an_i32()),
        (an_i64(), an_i32(), an_i32()),
        prop::option::of(prop::collection::vec((an_i64(), an_i64()), 0..2)),
        prop::option::of(prop::collection::vec(any::<u8>(), 0..40)),
    )
        .prop_map(
            |(
                (index, error, hw, lso),
                (start, div_epoch, div_end, leader, leader_epoch),
                (snap_end, snap_epoch, replica),
                aborted,
                records,
            )| {
                let mut p = PartitionData::default();
                p.partition_index = index;
                p.error_code = error;
                p.high_watermark = hw;
                p.last_stable_offset = lso;
                p.log_start_offset = start;
                p.diverging_epoch.epoch = div_epoch;
                p.diverging_epoch.end_offset = div_end;
                p.current_leader.leader_id = BrokerId(leader);
                p.current_leader.leader_epoch = leader_epoch;
                p.snapshot_id.end_offset = snap_end;
                p.snapshot_id.epoch = snap_epoch;
                p.preferred_read_replica = BrokerId(replica);
                p.aborted_transactions = aborted.map(|list| {
                    list.into_iter()
                        .map(|(producer, first)| {
                            let mut a = AbortedTransaction::default();
                            a.producer_id = producer.into();
                            a.first_offset = first;
                            a
                        })
                        .collect()
                });
                p.records = records.map(Bytes::from);
                p
            },
        )
}

fn a_response() -> impl Strategy<Value = FetchResponse> {
    (
        (an_i32(), prop_oneof![Just(0i16), any::<i16>()], an_i32()),
        prop::collection::vec(
            (a_string(), a_uuid(), prop::collection::vec(a_partition_data(), 0..3)),
            0..3,
        ),
        prop::collection::vec((an_i32(), a_string(), an_i32()), 0..2),
    )
        .prop_map(|((throttle, error, session), topics, endpoints)| {
            let mut r = FetchResponse::default();
            r.throttle_time_ms = throttle;
            r.error_code = error;
            r.session_id = session;
            r.responses = topics
                .into_iter()
                .map(|(name, id, partitions)| {
                    let mut t = FetchableTopicResponse::default();
                    t.topic = TopicName(name);
                    t.topic_id = id;
                    t.partitions = partitions;
                    t
                })
                .collect();
            r.node_endpoints = endpoints
                .into_iter()
                .map(|(node, host, port)| {
                    let mut n = NodeEndpoint::default();
                    n.node_id = BrokerId(node);
                    n.host = host;
                    n.port = port;
                    n
                })
                .collect();
            r
        })
}

fn a_version() -> impl Strategy<Value = i16> {
    4i16..=12
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn a_handed_request_is_its_decoded_frame(request in a_request(), version in a_version()) {
        prop_assert!(hands_over(ApiKey::Fetch, version));
        let header = request_header(ApiKey::Fetch, version, 7, &s("m0"));
        let kind = RequestKind::Fetch(request);
        let framed = encode_request(&header, &kind)
            .and_then(|frame| decode_request_from(frame, Source::OwnEncoder))
            .map(|d| d.request);
        match (framed, as_decoded_request(kind, version)) {
            (Ok(framed), Handover::Value(handed)) => prop_assert_eq!(framed, handed),
            (Err(framed), Handover::Refused(handed)) => {
                prop_assert_eq!(framed.to_string(), handed.to_string())
            }
            (framed, handed) => prop_assert!(false, "frame {:?}, handed {:?}", framed, handed),
        }
    }

    #[test]
    fn a_handed_answer_is_its_decoded_frame(response in a_response(), version in a_version()) {
        let kind = ResponseKind::Fetch(response);
        let framed = encode_response(7, ApiKey::Fetch, version, &kind).and_then(|frame| {
            decode_response_prefix_from(frame, ApiKey::Fetch, version, Source::OwnEncoder)
        });
        match (framed, as_decoded_response(kind, version)) {
            (Ok((7, framed, 0)), Handover::Value(handed)) => prop_assert_eq!(framed, handed),
            (Err(framed), Handover::Refused(handed)) => {
                prop_assert_eq!(framed.to_string(), handed.to_string())
            }
            (framed, handed) => prop_assert!(false, "frame {:?}, handed {:?}", framed, handed),
        }
    }
}

/// Fetch goes as a value only at the versions the handover knows; other APIs (but the few of
/// `handoff_group.rs`) as frames.
#[test]
fn only_fetch_at_known_versions_is_handed_over() {
    assert!(!hands_over(ApiKey::Fetch, 13));
    assert!(!hands_over(ApiKey::OffsetCommit, 8));
    let other = RequestKind::Heartbeat(Default::default());
    let framed = |h: Handover<RequestKind>| matches!(h, Handover::Framed(_));
    assert!(framed(as_decoded_request(other, 4)));
    assert!(framed(as_decoded_request(RequestKind::Fetch(FetchRequest::default()), 13)));
    let mut tagged = FetchRequest::default();
    tagged.unknown_tagged_fields.insert(9, Bytes::from_static(b"x"));
    assert!(framed(as_decoded_request(RequestKind::Fetch(tagged), 12)), "unknown tags: a frame");
}
