//! Fetch: records of the partitions a consumer reads, from the offsets it asks for.
//!
//! Rules, per partition (answers keep the request's order):
//! - Unknown topic or partition: UNKNOWN_TOPIC_OR_PARTITION. Led by another broker:
//!   NOT_LEADER_OR_FOLLOWER (v12+ also names the leader in `current_leader`). A current leader
//!   epoch (v9+) above ours (0): UNKNOWN_LEADER_EPOCH.
//! - `fetch_offset` below the log start or above the log end: OFFSET_OUT_OF_RANGE, so the
//!   consumer applies its reset policy. Exactly at the log end: no records, no error.
//! - Records from `fetch_offset`, at most [`MAX_RECORDS_PER_PARTITION`], while their estimated
//!   size fits `partition_max_bytes` and what is left of the request's `max_bytes`; but the
//!   first partition that has data always gets at least one record (KIP-74), so a consumer
//!   always makes progress. They go out as ONE uncompressed v2 record batch (base sequence -1,
//!   producer id -1: a plain non-idempotent batch; sequence = offset - base - 1 keeps the
//!   records in one batch, see TURMOIL_NOTES).
//! - high watermark = last stable offset = log end (every record is committed at once, no
//!   transactions); log start offset (v5+); no aborted transactions (null, or empty for
//!   read_committed).
//!
//! - Long poll: an answer with no record and no error for a request that may wait
//!   (`max_wait_ms` > 0, `min_bytes` > 0) is not sent; the broker holds the request until a
//!   partition it asks for has something to return or `max_wait_ms` has passed, as Kafka's
//!   fetch purgatory does (`crate::broker`, [`worth_answering`]). `min_bytes` counts as one
//!   record: any record completes the wait.
//!
//! Simplifications, on purpose:
//! - No incremental fetch sessions (KIP-227): every answer is a full answer with session id 0,
//!   which tells the client no session was created. A request naming a session id we never
//!   handed out gets FETCH_SESSION_ID_NOT_FOUND, as in Kafka.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::fetch_response::{
    FetchableTopicResponse, LeaderIdAndEpoch, PartitionData,
};
use kafka_protocol::messages::{BrokerId, FetchRequest, FetchResponse};

use crate::cluster::Placement;
use bytes::Bytes;
use groupsim_wire::records::encode_batch;

use crate::log::PartitionLogs;
use crate::TopicPartition;

/// Most records one partition answer carries.
pub const MAX_RECORDS_PER_PARTITION: usize = 500;

/// Fixed part of a v2 record batch (header up to and including the record count).
const BATCH_OVERHEAD: i64 = 61;
/// Upper bound of a record's own framing (length, attributes, deltas, key/value lengths,
/// header count) in a v2 batch.
const RECORD_OVERHEAD: i64 = 21;

/// Answers a Fetch request of `version`.
pub fn handle(
    version: i16,
    request: &FetchRequest,
    placement: &Placement<'_>,
    logs: &PartitionLogs,
) -> FetchResponse {
    if version >= 7 && request.session_id != 0 {
        return FetchResponse::default()
            .with_error_code(ResponseError::FetchSessionIdNotFound.code())
            .with_session_id(0);
    }
    let mut budget = i64::from(request.max_bytes);
    let mut any_data = false;
    let responses = request
        .topics
        .iter()
        .map(|topic| {
            let partitions = topic
                .partitions
                .iter()
                .map(|p| {
                    let tp = TopicPartition::new(topic.topic.to_string(), p.partition);
                    let ask = Ask {
                        fetch_offset: p.fetch_offset,
                        current_leader_epoch: if version >= 9 {
                            p.current_leader_epoch
                        } else {
                            -1
                        },
                        partition_max_bytes: i64::from(p.partition_max_bytes),
                    };
                    let mut data =
                        partition(version, &tp, &ask, placement, logs, &mut budget, &mut any_data);
                    data.aborted_transactions = (request.isolation_level == 1).then(Vec::new);
                    data
                })
                .collect();
            FetchableTopicResponse::default()
                .with_topic(topic.topic.clone())
                .with_partitions(partitions)
        })
        .collect();
    FetchResponse::default().with_responses(responses)
}

/// Whether `response` completes a waiting Fetch: it carries a record or an error (a top-level
/// one, or any partition's). An answer with neither may wait for data.
pub fn worth_answering(response: &FetchResponse) -> bool {
    response.error_code != 0
        || response
            .responses
            .iter()
            .flat_map(|t| &t.partitions)
            .any(|p| p.error_code != 0 || p.records.as_ref().is_some_and(|r| !r.is_empty()))
}

struct Ask {
    fetch_offset: i64,
    current_leader_epoch: i32,
    partition_max_bytes: i64,
}

fn partition(
    version: i16,
    tp: &TopicPartition,
    ask: &Ask,
    placement: &Placement<'_>,
    logs: &PartitionLogs,
    budget: &mut i64,
    any_data: &mut bool,
) -> PartitionData {
    let base = PartitionData::default()
        .with_partition_index(tp.partition)
        .with_records(Some(Bytes::new()));
    let error = |e: ResponseError| {
        base.clone()
            .with_error_code(e.code())
            .with_high_watermark(-1)
            .with_last_stable_offset(-1)
            .with_log_start_offset(-1)
    };
    let (Some(start), Some(end)) = (logs.log_start_offset(tp), logs.log_end_offset(tp)) else {
        return error(ResponseError::UnknownTopicOrPartition);
    };
    if !placement.is_leader(tp) {
        let mut data = error(ResponseError::NotLeaderOrFollower);
        if let (true, Some(leader)) = (version >= 12, placement.partition_leader(tp)) {
            data.current_leader = LeaderIdAndEpoch::default()
                .with_leader_id(BrokerId(leader.node_id))
                .with_leader_epoch(0);
        }
        return data;
    }
    if ask.current_leader_epoch > 0 {
        return error(ResponseError::UnknownLeaderEpoch);
    }
    let data =
        base.with_high_watermark(end).with_last_stable_offset(end).with_log_start_offset(start);
    let records = match logs.read(tp, ask.fetch_offset, MAX_RECORDS_PER_PARTITION) {
        Ok(records) => records,
        Err(_) => return data.with_error_code(ResponseError::OffsetOutOfRange.code()),
    };
    let limit = ask.partition_max_bytes.min(*budget);
    let mut size = BATCH_OVERHEAD;
    let mut take = 0;
    for r in records {
        let record_size =
            RECORD_OVERHEAD + r.key.as_ref().map_or(0, |k| k.len() as i64) + r.value.len() as i64;
        // KIP-74: the first record of the first partition with data goes out whatever its size.
        let guaranteed = take == 0 && !*any_data;
        if !guaranteed && size + record_size > limit {
            break;
        }
        size += record_size;
        take += 1;
    }
    if take == 0 {
        return data;
    }
    match encode_batch(&records[..take]) {
        Ok(bytes) => {
            *budget -= bytes.len() as i64;
            *any_data = true;
            data.with_records(Some(bytes))
        }
        Err(_) => data.with_error_code(ResponseError::UnknownServerError.code()),
    }
}
