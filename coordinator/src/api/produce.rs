//! Produce: append a producer's record batches to the partition logs.
//!
//! Rules, per partition (answers keep the request's order):
//! - `acks` must be -1, 0 or 1, else every partition gets INVALID_REQUIRED_ACKS. (With acks=0
//!   Kafka sends no answer at all; the broker still builds one and the wire layer drops it.)
//! - A transactional request (a transactional id) gets TRANSACTIONAL_ID_AUTHORIZATION_FAILED:
//!   there is no transaction coordinator.
//! - Unknown topic or partition: UNKNOWN_TOPIC_OR_PARTITION. Led by another broker:
//!   NOT_LEADER_OR_FOLLOWER.
//! - The records must be magic v2 batches ([`check_batches`] bounds-checks them first, because
//!   kafka-protocol's decoder reserves memory from counts read off the wire), uncompressed
//!   (compressed batches get UNSUPPORTED_COMPRESSION_TYPE: no codec is built in) and not
//!   transactional. Anything else is CORRUPT_MESSAGE, and nothing of that partition is appended.
//! - Every record is appended in order with its own timestamp (the append time for batches
//!   stamped LogAppendTime or without a timestamp); the answer carries the first offset
//!   appended (`base_offset`), log append time -1 (create time) and the log start offset.
//!
//! Simplifications: idempotent producers are accepted but their sequence numbers are not
//! checked (no duplicate detection); there are no record-level errors.

use bytes::{Bytes, BytesMut};
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::produce_response::{PartitionProduceResponse, TopicProduceResponse};
use kafka_protocol::messages::{ProduceRequest, ProduceResponse};
use kafka_protocol::records::{Compression, Record, RecordBatchDecoder, TimestampType};

use groupsim_wire::records::check_batches;

use crate::cluster::Placement;
use crate::log::PartitionLogs;
use crate::{Millis, TopicPartition};

/// Answers a Produce request, appending to `logs` (every served version is answered alike).
pub fn handle(
    request: &ProduceRequest,
    placement: &Placement<'_>,
    logs: &mut PartitionLogs,
    now: Millis,
) -> ProduceResponse {
    let refusal = if !matches!(request.acks, -1..=1) {
        Some(ResponseError::InvalidRequiredAcks)
    } else if request.transactional_id.is_some() {
        Some(ResponseError::TransactionalIdAuthorizationFailed)
    } else {
        None
    };
    let responses = request
        .topic_data
        .iter()
        .map(|topic| {
            let partitions = topic
                .partition_data
                .iter()
                .map(|p| {
                    let tp = TopicPartition::new(topic.name.as_str().to_owned(), p.index);
                    let base = PartitionProduceResponse::default()
                        .with_index(p.index)
                        .with_base_offset(-1)
                        .with_log_append_time_ms(-1)
                        .with_log_start_offset(-1);
                    let outcome = match refusal {
                        Some(e) => Err(e),
                        None => append(&tp, p.records.as_ref(), placement, logs, now),
                    };
                    match outcome {
                        Ok((base_offset, log_start)) => {
                            base.with_base_offset(base_offset).with_log_start_offset(log_start)
                        }
                        Err(e) => base.with_error_code(e.code()),
                    }
                })
                .collect();
            TopicProduceResponse::default()
                .with_name(topic.name.clone())
                .with_partition_responses(partitions)
        })
        .collect();
    ProduceResponse::default().with_responses(responses)
}

/// Appends one partition's records; `(base offset, log start offset)` on success.
fn append(
    tp: &TopicPartition,
    records: Option<&Bytes>,
    placement: &Placement<'_>,
    logs: &mut PartitionLogs,
    now: Millis,
) -> Result<(i64, i64), ResponseError> {
    let Some(log_start) = logs.log_start_offset(tp) else {
        return Err(ResponseError::UnknownTopicOrPartition);
    };
    if !placement.is_leader(tp) {
        return Err(ResponseError::NotLeaderOrFollower);
    }
    let records = decode(records.cloned().unwrap_or_default())?;
    let mut owned = Owned::for_records(&records);
    let mut base_offset = None;
    for r in records {
        let timestamp = if r.timestamp_type == TimestampType::LogAppend || r.timestamp < 0 {
            now as i64
        } else {
            r.timestamp
        };
        let key = r.key.map(|k| owned.copy(&k));
        let value = owned.copy(&r.value.unwrap_or_default());
        let offset = logs
            .append(tp, key, value, timestamp)
            .map_err(|_| ResponseError::UnknownTopicOrPartition)?;
        base_offset.get_or_insert(offset);
    }
    // An empty record set appends nothing: the next offset is where it would have gone.
    let base_offset = match base_offset {
        Some(o) => o,
        None => logs.log_end_offset(tp).ok_or(ResponseError::UnknownTopicOrPartition)?,
    };
    Ok((base_offset, log_start))
}

/// One buffer holding a record set's keys and values, sized to them exactly. Decoded keys and
/// values are slices of the request frame, itself a slice of its connection's read buffer: kept
/// in the log as they are, every stored record would pin that whole buffer (a closed
/// connection's included) for as long as the log holds the record. Copied here, a record set
/// costs one allocation of its own bytes.
struct Owned(BytesMut);

impl Owned {
    fn for_records(records: &[Record]) -> Self {
        let len = |b: &Option<Bytes>| b.as_ref().map_or(0, Bytes::len);
        Self(BytesMut::with_capacity(records.iter().map(|r| len(&r.key) + len(&r.value)).sum()))
    }

    /// `bytes`, copied into the set's buffer.
    fn copy(&mut self, bytes: &[u8]) -> Bytes {
        self.0.extend_from_slice(bytes);
        self.0.split().freeze()
    }
}

/// Decodes a partition's record set into its records, refusing what we cannot store.
fn decode(mut bytes: Bytes) -> Result<Vec<Record>, ResponseError> {
    let compressed = check_batches(&bytes).map_err(|_| ResponseError::CorruptMessage)?;
    if compressed {
        return Err(ResponseError::UnsupportedCompressionType);
    }
    let sets =
        RecordBatchDecoder::decode_all(&mut bytes).map_err(|_| ResponseError::CorruptMessage)?;
    let mut records = Vec::new();
    for set in sets {
        if set.version != 2 || set.compression != Compression::None {
            return Err(ResponseError::CorruptMessage);
        }
        if set.records.iter().any(|r| r.transactional || r.control) {
            return Err(ResponseError::CorruptMessage);
        }
        records.extend(set.records);
    }
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::ClusterState;
    use crate::placement::BrokerAddress;
    use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
    use kafka_protocol::messages::TopicName;
    use kafka_protocol::protocol::StrBytes;

    fn batch(values: &[&str], compression: Compression) -> Bytes {
        groupsim_wire::test_util::produced_batch(values, compression)
    }

    fn request(acks: i16, partition: i32, records: Bytes) -> ProduceRequest {
        ProduceRequest::default().with_acks(acks).with_timeout_ms(1000).with_topic_data(vec![
            TopicProduceData::default()
                .with_name(TopicName(StrBytes::from_static_str("t")))
                .with_partition_data(vec![PartitionProduceData::default()
                    .with_index(partition)
                    .with_records(Some(records))]),
        ])
    }

    fn setup() -> (ClusterState, PartitionLogs) {
        let mut logs = PartitionLogs::new();
        logs.create_topic("t", 1).unwrap();
        let broker = BrokerAddress { node_id: 0, host: "127.0.0.1".into(), port: 9092 };
        (ClusterState::new(vec![broker], 50), logs)
    }

    // The tests name the version they would send; the answer does not depend on it.
    fn handle(
        _v: i16,
        req: &ProduceRequest,
        state: &ClusterState,
        logs: &mut PartitionLogs,
        now: Millis,
    ) -> ProduceResponse {
        super::handle(req, &Placement { node_id: 0, cluster: state }, logs, now)
    }

    fn first(resp: &ProduceResponse) -> &PartitionProduceResponse {
        &resp.responses[0].partition_responses[0]
    }

    #[test]
    fn produce_appends_every_record_and_answers_the_base_offset() {
        let (state, mut logs) = setup();
        let r1 =
            handle(7, &request(-1, 0, batch(&["a", "b"], Compression::None)), &state, &mut logs, 5);
        assert_eq!((first(&r1).error_code, first(&r1).base_offset), (0, 0));
        let r2 = handle(7, &request(1, 0, batch(&["c"], Compression::None)), &state, &mut logs, 5);
        assert_eq!((first(&r2).error_code, first(&r2).base_offset), (0, 2));
        let tp = TopicPartition::new("t", 0);
        let stored: Vec<_> = logs.read(&tp, 0, 10).unwrap().to_vec();
        assert_eq!(stored.iter().map(|r| r.value.clone()).collect::<Vec<_>>(), ["a", "b", "c"]);
        assert_eq!(stored[1].key.as_deref(), Some(&b"k1"[..]));
        assert_eq!(stored[1].timestamp_ms, 1_001);
    }

    /// A stored record holds its own bytes, not a slice of the request: the connection's read
    /// buffer the frame came from is freed once the request is served (serve's soak found every
    /// produced record pinning a closed connection's buffer).
    #[test]
    fn stored_records_do_not_point_into_the_request() {
        let (state, mut logs) = setup();
        let frame = batch(&["alpha", "beta"], Compression::None);
        let span = frame.as_ptr() as usize..frame.as_ptr() as usize + frame.len();
        let r = handle(7, &request(1, 0, frame.clone()), &state, &mut logs, 5);
        assert_eq!(first(&r).error_code, 0);
        let stored = logs.read(&TopicPartition::new("t", 0), 0, 10).unwrap().to_vec();
        assert_eq!(stored.iter().map(|r| r.value.clone()).collect::<Vec<_>>(), ["alpha", "beta"]);
        for r in &stored {
            assert!(!span.contains(&(r.value.as_ptr() as usize)), "value {:?}", r.value);
            let key = r.key.as_ref().expect("the test batch keys its records");
            assert!(!span.contains(&(key.as_ptr() as usize)), "key {key:?}");
        }
    }

    #[test]
    fn produce_to_unknown_partition_or_with_bad_acks_is_refused() {
        let (state, mut logs) = setup();
        let records = batch(&["a"], Compression::None);
        let unknown = handle(7, &request(1, 3, records.clone()), &state, &mut logs, 0);
        assert_eq!(first(&unknown).error_code, ResponseError::UnknownTopicOrPartition.code());
        let acks = handle(7, &request(2, 0, records), &state, &mut logs, 0);
        assert_eq!(first(&acks).error_code, ResponseError::InvalidRequiredAcks.code());
        assert_eq!(logs.log_end_offset(&TopicPartition::new("t", 0)), Some(0));
    }

    #[test]
    fn produce_to_a_partition_led_elsewhere_is_not_leader_or_follower() {
        let mut logs = PartitionLogs::new();
        logs.create_topic("t", 2).unwrap();
        let brokers = (0..2)
            .map(|i| BrokerAddress { node_id: i, host: "127.0.0.1".into(), port: 9092 + i })
            .collect();
        let state = ClusterState::new(brokers, 50);
        let r = handle(7, &request(1, 1, batch(&["x"], Compression::None)), &state, &mut logs, 0);
        assert_eq!(first(&r).error_code, ResponseError::NotLeaderOrFollower.code());
        assert_eq!(logs.log_end_offset(&TopicPartition::new("t", 1)), Some(0));
    }

    #[test]
    fn produce_of_garbage_or_hostile_counts_is_corrupt_message() {
        let (state, mut logs) = setup();
        let garbage = Bytes::from_static(b"not a record batch at all");
        let r = handle(7, &request(1, 0, garbage), &state, &mut logs, 0);
        assert_eq!(first(&r).error_code, ResponseError::CorruptMessage.code());
        // A valid batch whose record count claims two billion records.
        let mut hostile = batch(&["a"], Compression::None).to_vec();
        use groupsim_wire::records::RECORD_COUNT_AT;
        hostile[RECORD_COUNT_AT..RECORD_COUNT_AT + 4].copy_from_slice(&i32::MAX.to_be_bytes());
        let r = handle(7, &request(1, 0, Bytes::from(hostile)), &state, &mut logs, 0);
        assert_eq!(first(&r).error_code, ResponseError::CorruptMessage.code());
        assert_eq!(logs.log_end_offset(&TopicPartition::new("t", 0)), Some(0));
    }
}
