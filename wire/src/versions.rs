//! The one table of API versions we serve, shared by the server (ApiVersions answer, version
//! check on decode) and the client (negotiation).
//!
//! Each served range is the intersection of the range we chose to implement and the range the
//! request type of kafka-protocol handles (`<XRequest as Message>::VERSIONS`). We deliberately do
//! not use `ApiKey::valid_versions()`: for OffsetCommit and OffsetFetch it names a version (10)
//! the request type cannot encode or decode.

use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Message, VersionRange};

/// The versions we choose to implement, before intersecting with kafka-protocol's ranges.
///
/// Why these bounds: Metadata stops at 12 (13 only adds a top-level error code); Fetch stops at
/// 12 because 13+ names topics by id; ListOffsets stops at 7 (8+ add tiered-storage and timeout
/// semantics we do not model). DescribeGroups (6: consumer groups are GROUP_ID_NOT_FOUND with a
/// message) and ListGroups (5: group types) are served in every version kafka-protocol knows.
/// Produce stops at 11 (12 only marks transactions v2, 13 names topics by id) and
/// InitProducerId at 4 (5 adds two-phase commit).
/// ConsumerGroupHeartbeat and ConsumerGroupDescribe (KIP-848) are served in every version
/// kafka-protocol knows (0–1).
const CHOSEN: &[(ApiKey, i16, i16)] = &[
    (ApiKey::Fetch, 4, 12),
    (ApiKey::ListOffsets, 1, 7),
    (ApiKey::Metadata, 0, 12),
    (ApiKey::OffsetCommit, 2, 9),
    (ApiKey::OffsetFetch, 1, 9),
    (ApiKey::FindCoordinator, 0, 6),
    (ApiKey::JoinGroup, 0, 9),
    (ApiKey::Heartbeat, 0, 4),
    (ApiKey::LeaveGroup, 0, 5),
    (ApiKey::SyncGroup, 0, 5),
    (ApiKey::DescribeGroups, 0, 6),
    (ApiKey::ListGroups, 0, 5),
    (ApiKey::ApiVersions, 0, 3),
    (ApiKey::Produce, 3, 11),
    (ApiKey::InitProducerId, 0, 4),
    (ApiKey::ConsumerGroupHeartbeat, 0, 1),
    (ApiKey::ConsumerGroupDescribe, 0, 1),
];

/// The range the kafka-protocol request type for `api_key` can encode and decode, for the APIs
/// we know how to serve.
fn library_request_versions(api_key: ApiKey) -> Option<VersionRange> {
    Some(match api_key {
        ApiKey::Fetch => FetchRequest::VERSIONS,
        ApiKey::ListOffsets => ListOffsetsRequest::VERSIONS,
        ApiKey::Metadata => MetadataRequest::VERSIONS,
        ApiKey::OffsetCommit => OffsetCommitRequest::VERSIONS,
        ApiKey::OffsetFetch => OffsetFetchRequest::VERSIONS,
        ApiKey::FindCoordinator => FindCoordinatorRequest::VERSIONS,
        ApiKey::JoinGroup => JoinGroupRequest::VERSIONS,
        ApiKey::Heartbeat => HeartbeatRequest::VERSIONS,
        ApiKey::LeaveGroup => LeaveGroupRequest::VERSIONS,
        ApiKey::SyncGroup => SyncGroupRequest::VERSIONS,
        ApiKey::DescribeGroups => DescribeGroupsRequest::VERSIONS,
        ApiKey::ListGroups => ListGroupsRequest::VERSIONS,
        ApiKey::ApiVersions => ApiVersionsRequest::VERSIONS,
        ApiKey::Produce => ProduceRequest::VERSIONS,
        ApiKey::InitProducerId => InitProducerIdRequest::VERSIONS,
        ApiKey::ConsumerGroupHeartbeat => ConsumerGroupHeartbeatRequest::VERSIONS,
        ApiKey::ConsumerGroupDescribe => ConsumerGroupDescribeRequest::VERSIONS,
        _ => return None,
    })
}

/// The versions of `api_key` this broker serves, or `None` if it does not serve the API.
pub fn served_versions(api_key: ApiKey) -> Option<VersionRange> {
    let &(_, min, max) = CHOSEN.iter().find(|(key, _, _)| *key == api_key)?;
    let range = VersionRange { min, max }.intersect(&library_request_versions(api_key)?);
    (!range.is_empty()).then_some(range)
}

/// Whether this broker serves `version` of `api_key`.
pub fn is_served(api_key: ApiKey, version: i16) -> bool {
    served_versions(api_key).is_some_and(|r| r.min <= version && version <= r.max)
}

/// Every served API with its range, sorted by API key number (the order of an ApiVersions
/// answer).
pub fn served_apis() -> Vec<(ApiKey, VersionRange)> {
    let mut apis: Vec<(ApiKey, VersionRange)> =
        CHOSEN.iter().filter_map(|&(key, _, _)| Some((key, served_versions(key)?))).collect();
    apis.sort_by_key(|(key, _)| *key as i16);
    apis
}

/// The highest version both sides speak, if the ranges overlap.
pub fn highest_common(ours: VersionRange, theirs: VersionRange) -> Option<i16> {
    let common = ours.intersect(&theirs);
    (!common.is_empty()).then_some(common.max)
}

/// The served table as ApiVersions entries, sorted by API key.
pub fn served_api_versions() -> Vec<ApiVersion> {
    served_apis()
        .into_iter()
        .map(|(key, range)| {
            ApiVersion::default()
                .with_api_key(key as i16)
                .with_min_version(range.min)
                .with_max_version(range.max)
        })
        .collect()
}

/// The answer to an ApiVersions request at a version we do not serve: UNSUPPORTED_VERSION and
/// our table, to be encoded in the v0 layout (Kafka's answer, which makes a client retry at a
/// version we serve).
pub fn unsupported_api_versions() -> ApiVersionsResponse {
    ApiVersionsResponse::default()
        .with_error_code(crate::error_codes::UNSUPPORTED_VERSION)
        .with_api_keys(served_api_versions())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn served_ranges_match_the_brief_and_the_library() {
        let r = |k| served_versions(k).map(|r: VersionRange| (r.min, r.max));
        assert_eq!(r(ApiKey::OffsetCommit), Some((2, 9)), "the request type stops at 9");
        assert_eq!(r(ApiKey::OffsetFetch), Some((1, 9)));
        assert_eq!(r(ApiKey::Fetch), Some((4, 12)));
        assert_eq!(r(ApiKey::ApiVersions), Some((0, 3)));
        assert_eq!(r(ApiKey::Produce), Some((3, 11)), "the request type starts at 3");
        assert_eq!(r(ApiKey::InitProducerId), Some((0, 4)));
        assert_eq!(
            r(ApiKey::ConsumerGroupHeartbeat),
            Some((0, 1)),
            "every version kafka-protocol knows"
        );
        assert_eq!(r(ApiKey::ConsumerGroupDescribe), Some((0, 1)));
        assert_eq!(r(ApiKey::AddPartitionsToTxn), None);
    }

    #[test]
    fn served_apis_are_sorted_by_key() {
        let keys: Vec<i16> = served_apis().iter().map(|(k, _)| *k as i16).collect();
        let mut sorted = keys.clone();
        sorted.sort();
        assert_eq!(keys, sorted);
        assert_eq!(keys.len(), CHOSEN.len());
    }

    #[test]
    fn highest_common_is_none_without_overlap() {
        let v = |min, max| VersionRange { min, max };
        assert_eq!(highest_common(v(0, 5), v(3, 9)), Some(5));
        assert_eq!(highest_common(v(0, 2), v(3, 9)), None);
    }
}
