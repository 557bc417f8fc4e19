//! Metadata and OffsetCommit messages handed over as values (at the one version each is handed
//! over at) are what the other side would decode from their frames. Over generated messages —
//! half of them holding nothing the version lacks, half with one such field set or an unknown
//! tagged field — a message handed over equals its decoded frame, one not handed over comes
//! back untouched to go as a frame, and every message of the first half is handed over.

use bytes::Bytes;
use groupsim_wire::codec::{
    decode_request_from, decode_response_prefix_from, encode_request, encode_response,
    request_header, Source,
};
use groupsim_wire::conn::handoff::{as_decoded_request, as_decoded_response, hands_over, Handover};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_commit_response::{
    OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use kafka_protocol::messages::{
    ApiKey, BrokerId, GroupId, MetadataRequest, MetadataResponse, OffsetCommitRequest,
    OffsetCommitResponse, RequestKind, ResponseKind, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use proptest::prelude::*;
use uuid::Uuid;

const METADATA: i16 = 12;
const OFFSET_COMMIT: i16 = 9;

fn s(text: &str) -> StrBytes {
    StrBytes::from_string(text.to_string())
}

fn a_string() -> impl Strategy<Value = StrBytes> {
    prop_oneof![Just(s("")), Just(s("orders")), "[a-z]{1,12}".prop_map(|t| s(&t))]
}

fn maybe_string() -> impl Strategy<Value = Option<StrBytes>> {
    prop::option::of(a_string())
}

fn a_uuid() -> impl Strategy<Value = Uuid> {
    prop_oneof![Just(Uuid::nil()), any::<u128>().prop_map(Uuid::from_u128)]
}

fn an_i32() -> impl Strategy<Value = i32> {
    prop_oneof![Just(-1), Just(0), any::<i32>()]
}

fn brokers() -> impl Strategy<Value = Vec<BrokerId>> {
    prop::collection::vec(an_i32().prop_map(BrokerId), 0..3)
}

/// Which field the version lacks a message sets, if any (`0`: none).
fn a_flaw() -> impl Strategy<Value = u8> {
    prop_oneof![Just(0u8), 1u8..=4]
}

fn tag() -> (i32, Bytes) {
    (90, Bytes::from_static(b"x"))
}

fn a_metadata_request() -> impl Strategy<Value = (MetadataRequest, u8)> {
    let topic = (a_uuid(), prop::option::of(a_string())).prop_map(|(id, name)| {
        MetadataRequestTopic::default().with_topic_id(id).with_name(name.map(TopicName))
    });
    (prop::option::of(prop::collection::vec(topic, 0..3)), any::<bool>(), any::<bool>(), a_flaw())
        .prop_map(|(topics, auto, ops, flaw)| {
            let mut r = MetadataRequest::default()
                .with_topics(topics)
                .with_allow_auto_topic_creation(auto)
                .with_include_topic_authorized_operations(ops);
            match flaw {
                1 | 2 => r.include_cluster_authorized_operations = true,
                3 => drop(r.unknown_tagged_fields.insert(tag().0, tag().1)),
                4 => match r.topics.as_mut().and_then(|t| t.first_mut()) {
                    Some(t) => drop(t.unknown_tagged_fields.insert(tag().0, tag().1)),
                    None => r.include_cluster_authorized_operations = true,
                },
                _ => {}
            }
            (r, flaw)
        })
}

fn a_metadata_response() -> impl Strategy<Value = (MetadataResponse, u8)> {
    let broker =
        (an_i32(), a_string(), an_i32(), maybe_string()).prop_map(|(id, host, port, rack)| {
            MetadataResponseBroker::default()
                .with_node_id(BrokerId(id))
                .with_host(host)
                .with_port(port)
                .with_rack(rack)
        });
    let partition = (any::<i16>(), an_i32(), an_i32(), an_i32(), brokers(), brokers(), brokers())
        .prop_map(|(error, index, leader, epoch, replicas, isr, offline)| {
            MetadataResponsePartition::default()
                .with_error_code(error)
                .with_partition_index(index)
                .with_leader_id(BrokerId(leader))
                .with_leader_epoch(epoch)
                .with_replica_nodes(replicas)
                .with_isr_nodes(isr)
                .with_offline_replicas(offline)
        });
    let topic = (
        any::<i16>(),
        prop::option::of(a_string()),
        a_uuid(),
        any::<bool>(),
        prop::collection::vec(partition, 0..3),
        an_i32(),
    )
        .prop_map(|(error, name, id, internal, partitions, ops)| {
            MetadataResponseTopic::default()
                .with_error_code(error)
                .with_name(name.map(TopicName))
                .with_topic_id(id)
                .with_is_internal(internal)
                .with_partitions(partitions)
                .with_topic_authorized_operations(ops)
        });
    (
        an_i32(),
        prop::collection::vec(broker, 0..3),
        maybe_string(),
        an_i32(),
        prop::collection::vec(topic, 0..3),
        a_flaw(),
    )
        .prop_map(|(throttle, brokers, cluster, controller, topics, flaw)| {
            let mut r = MetadataResponse::default()
                .with_throttle_time_ms(throttle)
                .with_brokers(brokers)
                .with_cluster_id(cluster)
                .with_controller_id(BrokerId(controller))
                .with_topics(topics);
            match flaw {
                1 => r.cluster_authorized_operations = 0,
                2 => r.error_code = 3,
                3 => drop(r.unknown_tagged_fields.insert(tag().0, tag().1)),
                4 => match r.topics.first_mut().and_then(|t| t.partitions.first_mut()) {
                    Some(p) => drop(p.unknown_tagged_fields.insert(tag().0, tag().1)),
                    None => r.error_code = 3,
                },
                _ => {}
            }
            (r, flaw)
        })
}

fn an_offset_commit_request() -> impl Strategy<Value = (OffsetCommitRequest, u8)> {
    let partition = (an_i32(), any::<i64>(), an_i32(), maybe_string()).prop_map(
        |(index, offset, epoch, metadata)| {
            OffsetCommitRequestPartition::default()
                .with_partition_index(index)
                .with_committed_offset(offset)
                .with_committed_leader_epoch(epoch)
                .with_committed_metadata(metadata)
        },
    );
    let topic = (a_string(), prop::collection::vec(partition, 0..3)).prop_map(|(name, parts)| {
        OffsetCommitRequestTopic::default().with_name(TopicName(name)).with_partitions(parts)
    });
    (a_string(), an_i32(), a_string(), maybe_string(), prop::collection::vec(topic, 0..3), a_flaw())
        .prop_map(|(group, generation, member, instance, topics, flaw)| {
            let mut r = OffsetCommitRequest::default()
                .with_group_id(GroupId(group))
                .with_generation_id_or_member_epoch(generation)
                .with_member_id(member)
                .with_group_instance_id(instance)
                .with_topics(topics);
            match flaw {
                1 | 2 => r.retention_time_ms = 60_000,
                3 => drop(r.unknown_tagged_fields.insert(tag().0, tag().1)),
                4 => match r.topics.first_mut() {
                    Some(t) => t.topic_id = Uuid::from_u128(7),
                    None => r.retention_time_ms = 0,
                },
                _ => {}
            }
            (r, flaw)
        })
}

fn an_offset_commit_response() -> impl Strategy<Value = (OffsetCommitResponse, u8)> {
    let partition = (an_i32(), any::<i16>()).prop_map(|(index, error)| {
        OffsetCommitResponsePartition::default().with_partition_index(index).with_error_code(error)
    });
    let topic = (a_string(), prop::collection::vec(partition, 0..3)).prop_map(|(name, parts)| {
        OffsetCommitResponseTopic::default().with_name(TopicName(name)).with_partitions(parts)
    });
    (an_i32(), prop::collection::vec(topic, 0..3), a_flaw()).prop_map(|(throttle, topics, flaw)| {
        let mut r =
            OffsetCommitResponse::default().with_throttle_time_ms(throttle).with_topics(topics);
        match flaw {
            1..=3 => drop(r.unknown_tagged_fields.insert(tag().0, tag().1)),
            4 => match r.topics.first_mut() {
                Some(t) => t.topic_id = Uuid::from_u128(7),
                None => drop(r.unknown_tagged_fields.insert(tag().0, tag().1)),
            },
            _ => {}
        }
        (r, flaw)
    })
}

/// The request as decoding its frame gives it, or the codec's error.
fn request_frame(kind: &RequestKind, api: ApiKey, version: i16) -> Result<RequestKind, String> {
    let header = request_header(api, version, 7, &s("m0"));
    encode_request(&header, kind)
        .and_then(|frame| decode_request_from(frame, Source::OwnEncoder))
        .map(|d| d.request)
        .map_err(|e| e.to_string())
}

/// The answer as decoding its frame gives it, or the codec's error.
fn response_frame(kind: &ResponseKind, api: ApiKey, version: i16) -> Result<ResponseKind, String> {
    encode_response(7, api, version, kind)
        .and_then(|frame| decode_response_prefix_from(frame, api, version, Source::OwnEncoder))
        .map(|(_, r, _)| r)
        .map_err(|e| e.to_string())
}

/// A message offered for handing over, against its decoded frame: handed over, it must equal
/// the frame; not handed over, it must come back untouched, and only if it has a flaw.
fn judge<T: PartialEq + std::fmt::Debug>(
    kind: &T,
    framed: Result<T, String>,
    handed: Handover<T>,
    flaw: u8,
) -> Result<(), String> {
    match handed {
        Handover::Value(handed) if framed.as_ref() == Ok(&handed) => Ok(()),
        Handover::Value(handed) => Err(format!("handed {handed:?}, frame {framed:?}")),
        Handover::Framed(back) if back != *kind => Err(format!("framed but changed: {back:?}")),
        Handover::Framed(_) if flaw == 0 => Err(format!("a decoded message not handed: {kind:?}")),
        Handover::Framed(_) => Ok(()),
        Handover::Refused(e) => Err(format!("refused: {e}")),
    }
}

fn judge_request(kind: RequestKind, api: ApiKey, version: i16, flaw: u8) -> Result<(), String> {
    let framed = request_frame(&kind, api, version);
    judge(&kind, framed, as_decoded_request(kind.clone(), version), flaw)
}

fn judge_response(kind: ResponseKind, api: ApiKey, version: i16, flaw: u8) -> Result<(), String> {
    let framed = response_frame(&kind, api, version);
    judge(&kind, framed, as_decoded_response(kind.clone(), version), flaw)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn a_handed_metadata_request_is_its_decoded_frame((r, flaw) in a_metadata_request()) {
        let judged = judge_request(RequestKind::Metadata(r), ApiKey::Metadata, METADATA, flaw);
        prop_assert!(judged.is_ok(), "{}", judged.unwrap_err());
    }

    #[test]
    fn a_handed_metadata_answer_is_its_decoded_frame((r, flaw) in a_metadata_response()) {
        let judged = judge_response(ResponseKind::Metadata(r), ApiKey::Metadata, METADATA, flaw);
        prop_assert!(judged.is_ok(), "{}", judged.unwrap_err());
    }

    #[test]
    fn a_handed_commit_is_its_decoded_frame((r, flaw) in an_offset_commit_request()) {
        let kind = RequestKind::OffsetCommit(r);
        let judged = judge_request(kind, ApiKey::OffsetCommit, OFFSET_COMMIT, flaw);
        prop_assert!(judged.is_ok(), "{}", judged.unwrap_err());
    }

    #[test]
    fn a_handed_commit_answer_is_its_decoded_frame((r, flaw) in an_offset_commit_response()) {
        let kind = ResponseKind::OffsetCommit(r);
        let judged = judge_response(kind, ApiKey::OffsetCommit, OFFSET_COMMIT, flaw);
        prop_assert!(judged.is_ok(), "{}", judged.unwrap_err());
    }
}

/// Metadata and OffsetCommit go as values at their one version only; at any other, and as
/// requests of other APIs, as frames.
#[test]
fn metadata_and_commits_are_handed_over_at_one_version_only() {
    assert!(hands_over(ApiKey::Metadata, METADATA) && !hands_over(ApiKey::Metadata, 11));
    assert!(hands_over(ApiKey::OffsetCommit, OFFSET_COMMIT));
    assert!(!hands_over(ApiKey::OffsetCommit, 8) && !hands_over(ApiKey::JoinGroup, 9));
    let framed = |h: Handover<RequestKind>| matches!(h, Handover::Framed(_));
    let metadata = RequestKind::Metadata(MetadataRequest::default());
    assert!(framed(as_decoded_request(metadata.clone(), 11)));
    assert!(!framed(as_decoded_request(metadata, METADATA)));
    let commit = RequestKind::OffsetCommit(OffsetCommitRequest::default());
    assert!(framed(as_decoded_request(commit, 2)));
}
