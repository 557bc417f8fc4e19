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
use kafka_protocol::messages::fetch_request::FetchPartition;
use kafka_protocol::messages::fetch_response::{
    FetchableTopicResponse, LeaderIdAndEpoch, PartitionData,
};
use kafka_protocol::messages::{BrokerId, FetchRequest, FetchResponse};

use crate::cluster::Placement;
use bytes::Bytes;
use groupsim_wire::records::encode_batch;

use crate::log::{LogRecord, PartitionLogs};
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
    if session_refused(version, request) {
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
            // One name per topic, its partition index set for each partition asked.
            let mut tp = TopicPartition::new(logs.topic_key(&topic.topic), 0);
            let partitions = topic
                .partitions
                .iter()
                .map(|p| {
                    tp.partition = p.partition;
                    let ask = Ask::of(version, p);
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

/// Whether [`handle`] would answer `request` with something [`worth_answering`], decided from
/// the same lookups without building the answer: a held Fetch is looked at on every append,
/// and most looks find it must keep waiting. The first partition with records always gets one
/// (KIP-74), so any partition with a record to read, or any error, makes the answer worth it.
pub fn has_answer(
    version: i16,
    request: &FetchRequest,
    placement: &Placement<'_>,
    logs: &PartitionLogs,
) -> bool {
    session_refused(version, request)
        || request.topics.iter().any(|topic| {
            let mut tp = TopicPartition::new(logs.topic_key(&topic.topic), 0);
            topic.partitions.iter().any(|p| {
                tp.partition = p.partition;
                match find(&tp, &Ask::of(version, p), placement, logs) {
                    Found::Records { records, .. } => !records.is_empty(),
                    Found::Refused(_) | Found::OutOfRange { .. } => true,
                }
            })
        })
}

/// A request naming an incremental fetch session (v7+): we never hand one out.
fn session_refused(version: i16, request: &FetchRequest) -> bool {
    version >= 7 && request.session_id != 0
}

struct Ask {
    fetch_offset: i64,
    current_leader_epoch: i32,
    partition_max_bytes: i64,
}

impl Ask {
    fn of(version: i16, p: &FetchPartition) -> Self {
        Ask {
            fetch_offset: p.fetch_offset,
            current_leader_epoch: if version >= 9 { p.current_leader_epoch } else { -1 },
            partition_max_bytes: i64::from(p.partition_max_bytes),
        }
    }
}

/// What one partition of a Fetch finds, before its answer is built.
enum Found<'a> {
    /// The partition cannot be read here.
    Refused(ResponseError),
    /// The fetch offset is outside the log.
    OutOfRange { start: i64, end: i64 },
    /// Up to [`MAX_RECORDS_PER_PARTITION`] records from the fetch offset (none at the log end).
    Records { start: i64, end: i64, records: &'a [LogRecord] },
}

fn find<'a>(
    tp: &TopicPartition,
    ask: &Ask,
    placement: &Placement<'_>,
    logs: &'a PartitionLogs,
) -> Found<'a> {
    let Some(window) = logs.window(tp, ask.fetch_offset, MAX_RECORDS_PER_PARTITION) else {
        return Found::Refused(ResponseError::UnknownTopicOrPartition);
    };
    if !placement.is_leader(tp) {
        return Found::Refused(ResponseError::NotLeaderOrFollower);
    }
    if ask.current_leader_epoch > 0 {
        return Found::Refused(ResponseError::UnknownLeaderEpoch);
    }
    let (start, end) = (window.start, window.end);
    match window.records {
        Some(records) => Found::Records { start, end, records },
        None => Found::OutOfRange { start, end },
    }
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
    let (start, end, records) = match find(tp, ask, placement, logs) {
        Found::Refused(e) => {
            let mut data = base
                .with_error_code(e.code())
                .with_high_watermark(-1)
                .with_last_stable_offset(-1)
                .with_log_start_offset(-1);
            if e == ResponseError::NotLeaderOrFollower && version >= 12 {
                if let Some(leader) = placement.partition_leader(tp) {
                    data.current_leader = LeaderIdAndEpoch::default()
                        .with_leader_id(BrokerId(leader.node_id))
                        .with_leader_epoch(0);
                }
            }
            return data;
        }
        Found::OutOfRange { start, end } => {
            return base
                .with_high_watermark(end)
                .with_last_stable_offset(end)
                .with_log_start_offset(start)
                .with_error_code(ResponseError::OffsetOutOfRange.code());
        }
        Found::Records { start, end, records } => (start, end, records),
    };
    let data =
        base.with_high_watermark(end).with_last_stable_offset(end).with_log_start_offset(start);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::broker::BrokerAddress;
    use crate::cluster::ClusterState;
    use kafka_protocol::messages::fetch_request::FetchTopic;
    use kafka_protocol::messages::TopicName;

    /// One partition a test request may name: topic, partition, fetch offset, leader epoch,
    /// partition byte limit.
    type Pick = (&'static str, i32, i64, i32, i32);

    fn request(session_id: i32, picks: &[Pick]) -> FetchRequest {
        let topics = picks
            .iter()
            .map(|&(topic, partition, offset, epoch, max_bytes)| {
                FetchTopic::default().with_topic(TopicName(topic.into())).with_partitions(vec![
                    FetchPartition::default()
                        .with_partition(partition)
                        .with_fetch_offset(offset)
                        .with_current_leader_epoch(epoch)
                        .with_partition_max_bytes(max_bytes),
                ])
            })
            .collect();
        FetchRequest::default()
            .with_session_id(session_id)
            .with_max_bytes(30)
            .with_max_wait_ms(500)
            .with_min_bytes(1)
            .with_topics(topics)
    }

    /// The shortcut a held Fetch is looked at with agrees with the answer it stands for, over
    /// every request of one or two partitions drawn from: a partition with records and a moved
    /// log start, an empty one, one led elsewhere, an unknown topic and an unknown partition;
    /// offsets below, inside, at and past the log; leader epochs 0 and 1; byte limits none and
    /// ample; with and without a session id; at versions before and after each rule.
    #[test]
    fn has_answer_agrees_with_the_answer_it_stands_for() {
        let brokers =
            (0..2).map(|i| BrokerAddress { node_id: i, host: format!("b{i}"), port: 9092 });
        let state = ClusterState::new(brokers.collect(), 1);
        let placement = Placement { node_id: 0, cluster: &state };
        let mut logs = PartitionLogs::new();
        logs.create_topic("t", 4).unwrap();
        let p0 = TopicPartition::new("t", 0);
        for i in 0..4 {
            logs.append(&p0, None, Bytes::from(vec![b'x'; 20 + i]), i as i64).unwrap();
        }
        logs.delete_records_before(&p0, 1).unwrap();
        // Partition 1 is led by broker 1 (partition modulo brokers); 2 stays empty.
        let mut singles = Vec::new();
        for (topic, partition) in [("t", 0), ("t", 1), ("t", 2), ("t", 9), ("u", 0)] {
            for offset in [0, 1, 3, 4, 5] {
                for epoch in [0, 1] {
                    for max_bytes in [0, 1 << 20] {
                        singles.push((topic, partition, offset, epoch, max_bytes));
                    }
                }
            }
        }
        let mut requests: Vec<Vec<Pick>> = singles.iter().map(|&p| vec![p]).collect();
        for (i, &a) in singles.iter().enumerate().step_by(3) {
            for &b in singles.iter().skip(i % 7).step_by(5) {
                requests.push(vec![a, b]);
            }
        }
        let (mut waits, mut answers) = (0, 0);
        for picks in &requests {
            for version in [4, 7, 9, 12, 16] {
                for session_id in [0, 5] {
                    let r = request(session_id, picks);
                    let expected = worth_answering(&handle(version, &r, &placement, &logs));
                    assert_eq!(
                        has_answer(version, &r, &placement, &logs),
                        expected,
                        "v{version} session {session_id} {picks:?}"
                    );
                    if expected {
                        answers += 1;
                    } else {
                        waits += 1;
                    }
                }
            }
        }
        assert!(waits > 20 && answers > 1000, "both outcomes covered: {waits} waits, {answers}");
    }
}
