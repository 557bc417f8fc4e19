//! v2 record batches as groupsim writes and reads them.
//!
//! The broker side encodes a partition log's records for Fetch and validates Produce batches;
//! the member side reads the offsets out of a Fetch answer. kafka-protocol's decoder reserves
//! memory from counts read off the wire, so everything that decodes bytes from a peer walks them
//! first ([`check_batches`]) or refuses counts larger than the bytes there.

use bytes::{Buf, Bytes, BytesMut};
use indexmap::IndexMap;
use kafka_protocol::records::{
    Compression, Record, RecordBatchDecoder, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};

use crate::WireError;

/// One record as a partition log stores it (and as a Fetch answer carries it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogRecord {
    /// Position in the partition, assigned on append.
    pub offset: i64,
    /// Record timestamp in milliseconds (create time, as the producer stamped it).
    pub timestamp_ms: i64,
    /// Optional record key.
    pub key: Option<Bytes>,
    /// Record value.
    pub value: Bytes,
}

/// Encodes consecutive log records as one uncompressed v2 batch.
pub fn encode_batch(records: &[LogRecord]) -> Result<Bytes, WireError> {
    let Some(first) = records.first() else { return Ok(Bytes::new()) };
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
            // Constant offset - sequence keeps the records in one batch; base sequence -1.
            sequence: (r.offset - base) as i32 - 1,
            timestamp: r.timestamp_ms,
            key: r.key.clone(),
            value: Some(r.value.clone()),
            headers: IndexMap::new(),
        })
        .collect();
    let mut buf = BytesMut::new();
    let options = RecordEncodeOptions { version: 2, compression: Compression::None };
    RecordBatchEncoder::encode(&mut buf, records.iter(), &options)
        .map_err(|e| WireError::Records(format!("{e:#}")))?;
    Ok(buf.freeze())
}

/// Size of a v2 batch header up to and including the record count.
const BATCH_HEADER: usize = 61;
/// Offset of the magic byte in a batch.
const MAGIC_AT: usize = 16;
/// Offset of the attributes in a batch.
const ATTRIBUTES_AT: usize = 21;
/// Offset of the record count in a batch (tests forge hostile counts there).
pub const RECORD_COUNT_AT: usize = 57;

/// Walks a record set as magic v2 batches and checks every length and count against the bytes
/// that are really there, so the decoder never reserves memory a hostile count asks for.
/// `Ok(true)` when some batch is compressed (its records are not walked).
pub fn check_batches(mut buf: &[u8]) -> Result<bool, String> {
    let mut compressed = false;
    while !buf.is_empty() {
        if buf.len() < BATCH_HEADER {
            return Err(format!("{} bytes cannot hold a batch header", buf.len()));
        }
        let batch_length = i32::from_be_bytes([buf[8], buf[9], buf[10], buf[11]]);
        let total = usize::try_from(batch_length)
            .ok()
            .and_then(|l| l.checked_add(12))
            .filter(|&t| t >= BATCH_HEADER && t <= buf.len())
            .ok_or_else(|| format!("batch length {batch_length} does not fit"))?;
        if buf[MAGIC_AT] != 2 {
            return Err(format!("magic {} is not 2", buf[MAGIC_AT]));
        }
        let attributes = i16::from_be_bytes([buf[ATTRIBUTES_AT], buf[ATTRIBUTES_AT + 1]]);
        let count = i32::from_be_bytes([
            buf[RECORD_COUNT_AT],
            buf[RECORD_COUNT_AT + 1],
            buf[RECORD_COUNT_AT + 2],
            buf[RECORD_COUNT_AT + 3],
        ]);
        let mut records = &buf[BATCH_HEADER..total];
        if attributes & 0x7 != 0 {
            compressed = true;
        } else {
            let count = usize::try_from(count).map_err(|_| format!("record count {count}"))?;
            for _ in 0..count {
                records = check_record(records)?;
            }
            if !records.is_empty() {
                return Err(format!("{} bytes after the last record", records.len()));
            }
        }
        buf = &buf[total..];
    }
    Ok(compressed)
}

/// Checks one record's framing; returns what follows it.
fn check_record(buf: &[u8]) -> Result<&[u8], String> {
    let (len, rest) = varint(buf)?;
    let len = usize::try_from(len).map_err(|_| format!("record length {len}"))?;
    if len > rest.len() {
        return Err(format!("record length {len} exceeds the {} bytes left", rest.len()));
    }
    let (mut body, after) = rest.split_at(len);
    body = body.get(1..).ok_or("record without attributes")?; // attributes
    body = varint(body)?.1; // timestamp delta (a varlong: same zigzag walk)
    body = varint(body)?.1; // offset delta
    body = skip_bytes(body)?; // key
    body = skip_bytes(body)?; // value
    let (headers, mut body2) = varint(body)?;
    let headers = usize::try_from(headers).map_err(|_| format!("header count {headers}"))?;
    if headers > body2.len() / 2 {
        return Err(format!("{headers} headers cannot fit in {} bytes", body2.len()));
    }
    for _ in 0..headers {
        body2 = skip_bytes(body2)?;
        body2 = skip_bytes(body2)?;
    }
    if !body2.is_empty() {
        return Err(format!("{} bytes after the record's headers", body2.len()));
    }
    Ok(after)
}

/// Skips a varint-length-prefixed byte string (-1 = null).
fn skip_bytes(buf: &[u8]) -> Result<&[u8], String> {
    let (len, rest) = varint(buf)?;
    if len == -1 {
        return Ok(rest);
    }
    let len = usize::try_from(len).map_err(|_| format!("negative length {len}"))?;
    rest.get(len..).ok_or_else(|| format!("length {len} exceeds the {} bytes left", rest.len()))
}

/// A zigzag varint of up to 10 bytes (so varlongs walk too); values beyond i64 are refused.
fn varint(buf: &[u8]) -> Result<(i64, &[u8]), String> {
    let mut value: u64 = 0;
    for (i, &b) in buf.iter().enumerate().take(10) {
        value |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            let signed = ((value >> 1) as i64) ^ -((value & 1) as i64);
            return Ok((signed, &buf[i + 1..]));
        }
    }
    Err("truncated or overlong varint".to_string())
}

/// Offsets of the records at or after `position` in a Fetch answer's record bytes, at most
/// `max`: `(first, last, count)`. Control records are skipped; a truncated or garbled tail ends
/// decoding (brokers may cut the last batch short).
pub fn offsets_in(records: Option<Bytes>, position: i64, max: usize) -> Option<(i64, i64, usize)> {
    let mut buf = records?;
    // A batch claiming more records than there are bytes is garbage: refuse it before the
    // decoder sizes a vector by that count.
    if let Ok(infos) = RecordBatchDecoder::decode_batch_info(&mut buf.clone()) {
        if infos.iter().any(|i| i.record_count as usize > buf.len()) {
            return None;
        }
    }
    let mut first = None;
    let mut last = 0;
    let mut count = 0;
    while buf.has_remaining() && count < max {
        let Ok(set) = RecordBatchDecoder::decode(&mut buf) else {
            break;
        };
        for r in set.records {
            if r.control || r.offset < position || r.offset <= last && first.is_some() {
                continue;
            }
            if count >= max {
                break;
            }
            first.get_or_insert(r.offset);
            last = r.offset;
            count += 1;
        }
    }
    first.map(|f| (f, last, count))
}
