//! Whole-request refusals of the single-group APIs: the answer Kafka gives when a group cannot
//! be served here at all (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, and the loading
//! answers REBALANCE_IN_PROGRESS for SyncGroup and NONE for Heartbeat), in each API's layout.

use kafka_protocol::messages::offset_fetch_response::{
    OffsetFetchResponsePartition, OffsetFetchResponseTopic,
};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;

/// The answer to `request` (wire version `v`) carrying error `code` for its group, or `None`
/// for requests that are not single-group APIs (DescribeGroups, ListGroups, OffsetFetch v8+,
/// ConsumerGroupDescribe).
pub fn group_error_response(v: i16, request: &RequestKind, code: i16) -> Option<ResponseKind> {
    Some(match request {
        RequestKind::JoinGroup(r) => {
            // protocol_name is nullable only from v7; below that an empty string stands for none.
            let protocol_name = if v >= 7 { None } else { Some(StrBytes::default()) };
            ResponseKind::JoinGroup(
                JoinGroupResponse::default()
                    .with_error_code(code)
                    .with_generation_id(-1)
                    .with_member_id(r.member_id.clone())
                    .with_protocol_name(protocol_name),
            )
        }
        RequestKind::SyncGroup(_) => {
            ResponseKind::SyncGroup(SyncGroupResponse::default().with_error_code(code))
        }
        RequestKind::Heartbeat(_) => {
            ResponseKind::Heartbeat(HeartbeatResponse::default().with_error_code(code))
        }
        RequestKind::LeaveGroup(_) => {
            ResponseKind::LeaveGroup(LeaveGroupResponse::default().with_error_code(code))
        }
        RequestKind::OffsetCommit(r) => ResponseKind::OffsetCommit(commit_error(r, code)),
        RequestKind::ConsumerGroupHeartbeat(_) => ResponseKind::ConsumerGroupHeartbeat(
            ConsumerGroupHeartbeatResponse::default().with_error_code(code),
        ),
        RequestKind::OffsetFetch(r) if v < 8 => {
            ResponseKind::OffsetFetch(offset_fetch_error(v, r, code))
        }
        _ => return None,
    })
}

/// OffsetCommit with `code` on every partition.
pub fn commit_error(r: &OffsetCommitRequest, code: i16) -> OffsetCommitResponse {
    let topics = r
        .topics
        .iter()
        .map(|t| (t.name.clone(), t.partitions.iter().map(|p| (p.partition_index, code)).collect()))
        .collect();
    super::offset_commit::response(topics)
}

/// OffsetFetch v1–7 with `code`: v2+ carry a top-level error code; v1 has none, so the error
/// goes on every requested partition.
pub fn offset_fetch_error(v: i16, r: &OffsetFetchRequest, code: i16) -> OffsetFetchResponse {
    if v >= 2 {
        return OffsetFetchResponse::default().with_error_code(code);
    }
    let topics = r
        .topics
        .iter()
        .flatten()
        .map(|t| {
            OffsetFetchResponseTopic::default().with_name(t.name.clone()).with_partitions(
                t.partition_indexes
                    .iter()
                    .map(|&p| {
                        OffsetFetchResponsePartition::default()
                            .with_partition_index(p)
                            .with_committed_offset(-1)
                            .with_error_code(code)
                    })
                    .collect(),
            )
        })
        .collect();
    OffsetFetchResponse::default().with_topics(topics)
}
