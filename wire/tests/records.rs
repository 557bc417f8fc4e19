//! Record batches as groupsim writes and reads them: what the encoder writes passes the check,
//! offsets are read from a position, and encoding round-trips through kafka-protocol's decoder.

use bytes::Bytes;
use groupsim_wire::records::{check_batches, encode_batch, offset_chunks, offsets_in, LogRecord};
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

/// A fetched answer handed out in runs: every record from the position on, `chunk` at a time,
/// across batches.
#[test]
fn offset_chunks_cut_the_records_past_the_position_into_runs() {
    let bytes = Bytes::from([record_batch(10..20), record_batch(20..23)].concat());
    assert_eq!(offset_chunks(Some(bytes.clone()), 12, 4), [(12, 15, 4), (16, 19, 4), (20, 22, 3)]);
    assert_eq!(offset_chunks(Some(bytes.clone()), 0, 100), [(10, 22, 13)]);
    assert_eq!(offset_chunks(Some(bytes), 23, 4), []);
    assert_eq!(offset_chunks(None, 0, 4), []);
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

/// What kafka-protocol's general encoder writes for the records a partition log holds: the
/// reference `encode_batch` must match byte for byte.
fn reference_batch(records: &[LogRecord]) -> Bytes {
    use kafka_protocol::records::{Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType};
    let Some(first) = records.first() else { return Bytes::new() };
    let base = first.offset;
    let records: Vec<Record> = records
        .iter()
        .map(|r| Record {
            transactional: false,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: 0,
            producer_id: -1,
            producer_epoch: -1,
            timestamp_type: TimestampType::Creation,
            offset: r.offset,
            sequence: (r.offset - base) as i32 - 1,
            timestamp: r.timestamp_ms,
            key: r.key.clone(),
            value: Some(r.value.clone()),
            headers: Default::default(),
        })
        .collect();
    let mut buf = bytes::BytesMut::new();
    let options = RecordEncodeOptions { version: 2, compression: Compression::None };
    RecordBatchEncoder::encode(&mut buf, records.iter(), &options).unwrap();
    buf.freeze()
}

/// `encode_batch` writes the batch directly; over random logs (keys or none, empty and long
/// values, timestamps out of order, offsets far from zero) it writes exactly what the general
/// encoder writes, so Fetch answers, and every history, are unchanged by the shortcut.
#[test]
fn encode_batch_writes_what_kafka_protocol_writes() {
    use rand::{RngExt, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
    for case in 0..500 {
        let n = rng.random_range(1..40usize);
        let base: i64 = if case % 3 == 0 {
            rng.random_range(0..1i64 << 40)
        } else {
            rng.random_range(0..5_000)
        };
        let records: Vec<LogRecord> = (0..n as i64)
            .map(|i| {
                let key = (rng.random_range(0..3u8) > 0)
                    .then(|| Bytes::from(vec![b'k'; rng.random_range(0..300usize)]));
                LogRecord {
                    offset: base + i,
                    timestamp_ms: rng.random_range(-5i64..1i64 << 42),
                    key,
                    value: Bytes::from(vec![b'v'; rng.random_range(0..20_000usize)]),
                }
            })
            .collect();
        assert_eq!(encode_batch(&records).unwrap(), reference_batch(&records), "case {case}");
    }
}
