//! ListOffsets: where a partition's log starts and ends, or which offset a timestamp maps to.
//! Consumers use it to reset positions (`auto.offset.reset` = earliest / latest).
//!
//! Rules, per partition:
//! - Unknown topic or partition: UNKNOWN_TOPIC_OR_PARTITION. A partition another broker leads
//!   (placement rules in `placement.rs`, moves in `cluster.rs`): NOT_LEADER_OR_FOLLOWER.
//! - A current leader epoch (v4+) above ours (always 0): UNKNOWN_LEADER_EPOCH, as Kafka answers a
//!   client that saw a newer leader than the broker knows. -1 means "not known" and passes.
//! - Timestamp -2 (EARLIEST): the log start offset. -1 (LATEST): the log end offset, which is
//!   also the last stable offset (no transactions), so the isolation level does not matter.
//!   -3 (MAX_TIMESTAMP, v7+): the record with the largest timestamp. Both special answers carry
//!   timestamp -1 except MAX_TIMESTAMP, which carries the record's.
//! - A timestamp t >= 0: the first record with timestamp >= t, or offset -1 and timestamp -1
//!   if there is none. Other negative timestamps (later versions' special values) find nothing.
//! - The leader epoch of an answer (v4+) is 0 when an offset was found, else -1.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::list_offsets_response::{
    ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
};
use kafka_protocol::messages::{ListOffsetsRequest, ListOffsetsResponse};

use crate::cluster::Placement;
use crate::log::PartitionLogs;
use crate::TopicPartition;

/// Kafka's `ListOffsetsRequest.EARLIEST_TIMESTAMP`.
pub const EARLIEST_TIMESTAMP: i64 = -2;
/// Kafka's `ListOffsetsRequest.LATEST_TIMESTAMP`.
pub const LATEST_TIMESTAMP: i64 = -1;
/// Kafka's `ListOffsetsRequest.MAX_TIMESTAMP` (v7+).
pub const MAX_TIMESTAMP: i64 = -3;

/// Answers a ListOffsets request of `version`.
pub fn handle(
    version: i16,
    request: &ListOffsetsRequest,
    placement: &Placement<'_>,
    logs: &PartitionLogs,
) -> ListOffsetsResponse {
    let topics = request
        .topics
        .iter()
        .map(|topic| {
            let partitions = topic
                .partitions
                .iter()
                .map(|p| {
                    let tp = TopicPartition::new(topic.name.as_str().to_owned(), p.partition_index);
                    let current_epoch = if version >= 4 { p.current_leader_epoch } else { -1 };
                    let answer = lookup(version, &tp, current_epoch, p.timestamp, placement, logs);
                    let leader_epoch = if version >= 4 && answer.offset >= 0 { 0 } else { -1 };
                    ListOffsetsPartitionResponse::default()
                        .with_partition_index(p.partition_index)
                        .with_error_code(answer.error_code)
                        .with_timestamp(answer.timestamp)
                        .with_offset(answer.offset)
                        .with_leader_epoch(leader_epoch)
                })
                .collect();
            ListOffsetsTopicResponse::default()
                .with_name(topic.name.clone())
                .with_partitions(partitions)
        })
        .collect();
    ListOffsetsResponse::default().with_topics(topics)
}

struct Answer {
    error_code: i16,
    timestamp: i64,
    offset: i64,
}

fn lookup(
    version: i16,
    tp: &TopicPartition,
    current_epoch: i32,
    timestamp: i64,
    placement: &Placement<'_>,
    logs: &PartitionLogs,
) -> Answer {
    let error = |e: ResponseError| Answer { error_code: e.code(), timestamp: -1, offset: -1 };
    let found = |offset: i64, timestamp: i64| Answer { error_code: 0, timestamp, offset };
    let (Some(start), Some(end)) = (logs.log_start_offset(tp), logs.log_end_offset(tp)) else {
        return error(ResponseError::UnknownTopicOrPartition);
    };
    if !placement.is_leader(tp) {
        return error(ResponseError::NotLeaderOrFollower);
    }
    if current_epoch > 0 {
        return error(ResponseError::UnknownLeaderEpoch);
    }
    let record = match timestamp {
        EARLIEST_TIMESTAMP => return found(start, -1),
        LATEST_TIMESTAMP => return found(end, -1),
        MAX_TIMESTAMP if version >= 7 => logs.max_timestamp_record(tp),
        t if t >= 0 => logs.offset_for_timestamp(tp, t),
        _ => Ok(None),
    };
    match record {
        Ok(Some(r)) => found(r.offset, r.timestamp_ms),
        Ok(None) => found(-1, -1),
        Err(_) => error(ResponseError::UnknownTopicOrPartition),
    }
}
