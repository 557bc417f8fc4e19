//! Record batches as groupsim writes and reads them: what the encoder writes passes the check,
//! offsets are read from a position, and encoding round-trips through kafka-protocol's decoder.

use bytes::Bytes;
use groupsim_wire::records::{check_batches, encode_batch, offsets_in, LogRecord};
use groupsim_wire::test_util::{produced_batch, record_batch};
use kafka_protocol::records::{Compression, RecordBatchDecoder};

#[test]
fn check_batches_accepts_what_the_encoder_writes() {
    let two =
        [produced_batch(&["a", "b"], Compression::None), produced_batch(&["c"], Compression::None)]
            .concat();
    assert_eq!(check_batches(&two), Ok(false));
    assert!(check_batches(&two[..two.len() - 1]).is_err());
}

#[test]
fn offsets_in_skips_records_below_the_position_and_stops_at_max() {
    let bytes = record_batch(10..20);
    assert_eq!(offsets_in(Some(bytes.clone()), 0, 100), Some((10, 19, 10)));
    assert_eq!(offsets_in(Some(bytes.clone()), 15, 100), Some((15, 19, 5)));
    assert_eq!(offsets_in(Some(bytes.clone()), 12, 3), Some((12, 14, 3)));
    assert_eq!(offsets_in(Some(bytes), 20, 100), None);
    assert_eq!(offsets_in(None, 0, 100), None);
}

#[test]
fn encode_batch_round_trips_offsets_keys_and_timestamps() {
    let records: Vec<LogRecord> = (5..8)
        .map(|o| LogRecord {
            offset: o,
            timestamp_ms: 100 + o,
            key: Some(Bytes::from(format!("k{o}"))),
            value: Bytes::from_static(b"x"),
        })
        .collect();
    let mut bytes = encode_batch(&records).unwrap();
    let sets = RecordBatchDecoder::decode_all(&mut bytes).unwrap();
    let decoded: Vec<(i64, i64)> =
        sets.iter().flat_map(|s| s.records.iter().map(|r| (r.offset, r.timestamp))).collect();
    assert_eq!(decoded, vec![(5, 105), (6, 106), (7, 107)]);
    assert!(encode_batch(&[]).unwrap().is_empty());
}
