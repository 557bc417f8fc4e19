//! What a soak's loopback clients write: valid requests encoded by the wire crate's codec, and
//! the bad input a broker must survive — malformed frames (which must get the connection closed)
//! and half-frames (written partly, then abandoned). Plain functions of their inputs, so the
//! tests can check each one is what it says.

use bytes::Bytes;
use groupsim_wire::codec::{encode_request, request_header};
use groupsim_wire::consumer_protocol::{encode_subscription, Subscription};
use groupsim_wire::records::{encode_batch, LogRecord};
use groupsim_wire::versions::served_versions;
use groupsim_wire::{encode_frame, WireError};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestGroup;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, BrokerId, DescribeGroupsRequest, FetchRequest,
    FindCoordinatorRequest, GroupId, JoinGroupRequest, ListGroupsRequest, ListOffsetsRequest,
    MetadataRequest, OffsetFetchRequest, ProduceRequest, RequestKind, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use rand::{Rng, RngExt};

/// The APIs a loopback client sends valid requests of: reads of the cluster and the real group,
/// a Produce that keeps the real group consuming, and group requests aimed at throwaway groups
/// (never the real one, so the soak's load cannot disturb the group it judges). Nothing a
/// correct client would not send: the checker judges the clients' requests too (a Heartbeat
/// from a member no JoinGroup answer named is a client's protocol error).
pub const VALID_APIS: &[ApiKey] = &[
    ApiKey::ApiVersions,
    ApiKey::Metadata,
    ApiKey::FindCoordinator,
    ApiKey::ListOffsets,
    ApiKey::Fetch,
    ApiKey::OffsetFetch,
    ApiKey::DescribeGroups,
    ApiKey::ListGroups,
    ApiKey::JoinGroup,
    ApiKey::Produce,
];

/// How many throwaway groups the loopback clients' JoinGroups spread over: few,
/// so the coordinator's state for them stays bounded however long the soak runs.
pub const THROWAWAY_GROUPS: u32 = 4;

/// What the valid requests are about.
#[derive(Clone, Debug)]
pub struct Target {
    /// The topic the real group consumes (Fetch, ListOffsets and Produce use it).
    pub topic: String,
    /// Its partition count.
    pub partitions: i32,
    /// The real group (read only: OffsetFetch, DescribeGroups, FindCoordinator).
    pub group: String,
}

/// The ways a frame can be malformed; each must make the broker close the connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Malformed {
    /// A sane length prefix followed by random bytes (their API key forced negative, so they
    /// can never read as a request the broker answers).
    Garbage,
    /// A well-formed header naming an API key Kafka does not have.
    UnknownApiKey,
    /// A valid request whose body is cut short, under a length prefix that matches the cut.
    TruncatedBody,
    /// A length prefix larger than any frame the broker accepts, and nothing after it.
    HugeLength,
}

/// Every kind of malformed frame, in the order a client's draw picks from.
pub const MALFORMED: [Malformed; 4] =
    [Malformed::Garbage, Malformed::UnknownApiKey, Malformed::TruncatedBody, Malformed::HugeLength];

/// An API key no Kafka release has.
pub const UNKNOWN_API_KEY: i16 = 9_999;

/// The version a loopback client sends `api` at: the highest the broker serves.
pub fn version_of(api: ApiKey) -> Option<i16> {
    served_versions(api).map(|r| r.max)
}

/// The request of `api` a loopback client sends, `n` varying what it names (which partition,
/// which throwaway group).
pub fn valid_request(api: ApiKey, target: &Target, n: u32) -> Option<RequestKind> {
    let topic = || TopicName(StrBytes::from_string(target.topic.clone()));
    let partition = (n % target.partitions.max(1) as u32) as i32;
    let group = || GroupId(StrBytes::from_string(target.group.clone()));
    let throwaway = || StrBytes::from_string(format!("soak-throwaway-{}", n % THROWAWAY_GROUPS));
    Some(match api {
        ApiKey::ApiVersions => RequestKind::ApiVersions(
            ApiVersionsRequest::default()
                .with_client_software_name(StrBytes::from_static_str("groupsim-soak"))
                .with_client_software_version(StrBytes::from_static_str("1")),
        ),
        ApiKey::Metadata => RequestKind::Metadata(
            MetadataRequest::default()
                .with_topics(Some(vec![MetadataRequestTopic::default().with_name(Some(topic()))])),
        ),
        ApiKey::FindCoordinator => RequestKind::FindCoordinator(
            // The highest version names groups in `coordinator_keys` only.
            FindCoordinatorRequest::default()
                .with_coordinator_keys(vec![StrBytes::from_string(target.group.clone())]),
        ),
        ApiKey::ListOffsets => RequestKind::ListOffsets(
            ListOffsetsRequest::default().with_replica_id(BrokerId(-1)).with_topics(vec![
                ListOffsetsTopic::default().with_name(topic()).with_partitions(vec![
                    ListOffsetsPartition::default()
                        .with_partition_index(partition)
                        .with_timestamp(-1),
                ]),
            ]),
        ),
        // From offset 0 with no wait: answered at once from the preloaded records, a bounded
        // amount of them.
        ApiKey::Fetch => RequestKind::Fetch(
            FetchRequest::default()
                .with_replica_id(BrokerId(-1))
                .with_max_wait_ms(0)
                .with_min_bytes(1)
                .with_max_bytes(64 * 1024)
                .with_topics(vec![FetchTopic::default().with_topic(topic()).with_partitions(
                    vec![FetchPartition::default()
                        .with_partition(partition)
                        .with_fetch_offset(0)
                        .with_partition_max_bytes(16 * 1024)],
                )]),
        ),
        ApiKey::OffsetFetch => RequestKind::OffsetFetch(
            // The highest version names groups in `groups` only.
            OffsetFetchRequest::default()
                .with_groups(vec![OffsetFetchRequestGroup::default().with_group_id(group())]),
        ),
        ApiKey::DescribeGroups => {
            RequestKind::DescribeGroups(DescribeGroupsRequest::default().with_groups(vec![group()]))
        }
        ApiKey::ListGroups => RequestKind::ListGroups(ListGroupsRequest::default()),
        // No member id: answered MEMBER_ID_REQUIRED at once (v4 on), never joining anyone.
        ApiKey::JoinGroup => {
            let subscription = Subscription {
                topics: vec![target.topic.clone()],
                owned_partitions: Vec::new(),
                user_data: None,
            };
            RequestKind::JoinGroup(
                JoinGroupRequest::default()
                    .with_group_id(GroupId(throwaway()))
                    .with_session_timeout_ms(6_000)
                    .with_rebalance_timeout_ms(6_000)
                    .with_protocol_type(StrBytes::from_static_str("consumer"))
                    .with_protocols(vec![JoinGroupRequestProtocol::default()
                        .with_name(StrBytes::from_static_str("range"))
                        .with_metadata(encode_subscription(&subscription))]),
            )
        }
        ApiKey::Produce => {
            let records: Vec<LogRecord> = (0..3)
                .map(|i| LogRecord {
                    offset: i,
                    timestamp_ms: 0,
                    key: None,
                    value: Bytes::from(format!("soak-{n}-{i}")),
                })
                .collect();
            let batch = encode_batch(&records).ok()?;
            RequestKind::Produce(
                ProduceRequest::default().with_acks(1).with_timeout_ms(5_000).with_topic_data(
                    vec![TopicProduceData::default().with_name(topic()).with_partition_data(vec![
                        PartitionProduceData::default()
                            .with_index(partition)
                            .with_records(Some(batch)),
                    ])],
                ),
            )
        }
        _ => return None,
    })
}

/// The frame body (header and request) of `request` at the broker's highest version of `api`.
pub fn encode(
    api: ApiKey,
    request: &RequestKind,
    correlation_id: i32,
    client_id: &str,
) -> Result<Bytes, WireError> {
    let version = version_of(api).ok_or(WireError::UnknownApiKey {
        api_key: api as i16,
        version: 0,
        correlation_id,
    })?;
    let client_id = StrBytes::from_string(client_id.to_string());
    encode_request(&request_header(api, version, correlation_id, &client_id), request)
}

/// The bytes of a malformed frame of kind `kind` (length prefix included).
pub fn malformed(kind: Malformed, target: &Target, rng: &mut impl Rng) -> Vec<u8> {
    match kind {
        Malformed::Garbage => {
            let len = rng.random_range(16..64usize);
            let mut body: Vec<u8> = (0..len).map(|_| rng.random()).collect();
            body[0] |= 0x80; // a negative API key
            frame(&body)
        }
        Malformed::UnknownApiKey => {
            let mut body = Vec::new();
            body.extend_from_slice(&UNKNOWN_API_KEY.to_be_bytes());
            body.extend_from_slice(&0i16.to_be_bytes()); // version
            body.extend_from_slice(&rng.random_range(1..i32::MAX).to_be_bytes()); // correlation id
            body.extend_from_slice(&(-1i16).to_be_bytes()); // null client id
            frame(&body)
        }
        Malformed::TruncatedBody => {
            let request = valid_request(ApiKey::Metadata, target, 0)
                .unwrap_or_else(|| RequestKind::Metadata(MetadataRequest::default()));
            let body = encode(ApiKey::Metadata, &request, 1, "soak-truncated")
                .map(|b| b.to_vec())
                .unwrap_or_default();
            frame(&body[..truncated_len(body.len())])
        }
        Malformed::HugeLength => i32::MAX.to_be_bytes().to_vec(),
    }
}

/// Where a truncated body is cut: past the request header's fixed fields, short of the end.
fn truncated_len(len: usize) -> usize {
    (len * 2 / 3).max(9).min(len.saturating_sub(1))
}

/// Length prefix then body.
fn frame(body: &[u8]) -> Vec<u8> {
    encode_frame(body).unwrap_or_default()
}

/// How much of a whole frame a half-frame writes: at least one byte, never all of it.
pub fn half_frame_len(frame_len: usize, rng: &mut impl Rng) -> usize {
    if frame_len < 2 {
        return 0;
    }
    rng.random_range(1..frame_len)
}

#[cfg(test)]
mod tests {
    use super::*;
    use groupsim_wire::codec::decode_request;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    /// Whether `body` (a frame without its prefix) decodes as a request the broker would serve.
    fn decodes(body: &[u8]) -> bool {
        decode_request(Bytes::copy_from_slice(body)).is_ok()
    }

    fn target() -> Target {
        Target { topic: "soak".into(), partitions: 6, group: "soak-group".into() }
    }

    #[test]
    fn every_valid_request_encodes_and_decodes_as_the_broker_reads_it() {
        for &api in VALID_APIS {
            for n in 0..3 {
                let request = valid_request(api, &target(), n).expect("an API the soak sends");
                let body = encode(api, &request, 7, "soak-0").expect("encodes");
                let decoded = decode_request(body).unwrap_or_else(|e| panic!("{api:?}: {e}"));
                assert_eq!(decoded.header.request_api_key, api as i16);
                assert_eq!(decoded.header.correlation_id, 7);
            }
        }
    }

    #[test]
    fn malformed_frames_are_complete_frames_the_broker_cannot_serve() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        for _ in 0..50 {
            for kind in MALFORMED {
                let bytes = malformed(kind, &target(), &mut rng);
                let len = i32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
                if kind == Malformed::HugeLength {
                    assert_eq!(bytes.len(), 4, "only the prefix");
                    assert!(len as usize > groupsim_wire::DEFAULT_MAX_FRAME_BYTES);
                    continue;
                }
                assert_eq!(len as usize, bytes.len() - 4, "{kind:?}: a whole frame");
                assert!(!decodes(&bytes[4..]), "{kind:?} must not decode");
            }
        }
        let unknown = malformed(Malformed::UnknownApiKey, &target(), &mut rng);
        assert_eq!(i16::from_be_bytes([unknown[4], unknown[5]]), UNKNOWN_API_KEY);
        let garbage = malformed(Malformed::Garbage, &target(), &mut rng);
        assert!(i16::from_be_bytes([garbage[4], garbage[5]]) < 0, "a negative API key");
    }

    #[test]
    fn a_half_frame_is_never_empty_nor_whole() {
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        for len in 2..200 {
            let half = half_frame_len(len, &mut rng);
            assert!((1..len).contains(&half), "{half} of {len}");
        }
        assert_eq!(half_frame_len(1, &mut rng), 0);
    }
}
