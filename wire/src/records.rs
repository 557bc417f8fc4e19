//! v2 record batches as groupsim writes and reads them.
//!
//! The broker side encodes a partition log's records for Fetch and validates Produce batches;
//! the member side reads the offsets out of a Fetch answer. kafka-protocol's decoder reserves
//! memory from counts read off the wire, so everything that decodes bytes from a peer walks them
//! first ([`check_batches`]) or refuses counts larger than the bytes there.

use bytes::{Buf, Bytes};
use kafka_protocol::records::RecordBatchDecoder;

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

/// Encodes consecutive log records as one uncompressed v2 batch, byte for byte as
/// kafka-protocol's `RecordBatchEncoder` writes them (no producer, no sequence, no headers, the
/// batch's first timestamp the least of the records'), but straight into a buffer sized first,
/// without the general encoder's intermediate records, their header maps and a growing buffer:
/// a Fetch answer is built on every fetch (the equivalence is
/// `encode_batch_writes_what_kafka_protocol_writes`, in the tests).
pub fn encode_batch(records: &[LogRecord]) -> Result<Bytes, WireError> {
    let Some(first) = records.first() else { return Ok(Bytes::new()) };
    let base = first.offset;
    let (mut min_timestamp, mut max_timestamp, mut last) =
        (first.timestamp_ms, first.timestamp_ms, first.offset);
    for r in &records[1..] {
        min_timestamp = min_timestamp.min(r.timestamp_ms);
        max_timestamp = max_timestamp.max(r.timestamp_ms);
        last = last.max(r.offset);
    }
    let count = i32::try_from(records.len()).map_err(|_| too_large("records"))?;
    let last_delta = i32::try_from(last - base).map_err(|_| too_large("offset span"))?;
    let mut total = BATCH_HEADER;
    for r in records {
        let size = record_size(r, base, min_timestamp);
        total += varint_len(i64::try_from(size).map_err(|_| too_large("record"))?) + size;
    }
    let length = i32::try_from(total - 12).map_err(|_| too_large("batch"))?;
    // The exact size is known, so the batch is written into zeroed room by position: no
    // capacity check per byte, and the vector becomes the `Bytes` without a copy.
    let mut room = vec![0u8; total];
    let mut out = Cursor { buf: &mut room, at: 0 };
    out.put(&base.to_be_bytes());
    out.put(&length.to_be_bytes());
    out.put(&0i32.to_be_bytes()); // partition leader epoch
    out.put(&[2]); // magic
    out.put(&0u32.to_be_bytes()); // CRC-32C, filled below
    debug_assert_eq!((out.at, out.at - 4), (ATTRIBUTES_AT, CRC_AT));
    out.put(&0i16.to_be_bytes()); // attributes: no compression, not transactional, not control
    out.put(&last_delta.to_be_bytes());
    out.put(&min_timestamp.to_be_bytes());
    out.put(&max_timestamp.to_be_bytes());
    out.put(&(-1i64).to_be_bytes()); // producer id
    out.put(&(-1i16).to_be_bytes()); // producer epoch
    out.put(&(-1i32).to_be_bytes()); // base sequence
    out.put(&count.to_be_bytes());
    for r in records {
        // The size fitted an i64 when the batch was sized.
        out.varint(record_size(r, base, min_timestamp) as i64);
        out.put(&[0]); // record attributes
        out.varint(r.timestamp_ms - min_timestamp);
        out.varint(r.offset - base);
        match &r.key {
            Some(k) => {
                out.varint(k.len() as i64);
                out.put(k);
            }
            None => out.varint(-1),
        }
        out.varint(r.value.len() as i64);
        out.put(&r.value);
        out.varint(0); // headers
    }
    debug_assert_eq!(out.at, total, "the batch was sized exactly");
    let crc = crc32c::crc32c(&room[ATTRIBUTES_AT..]);
    room[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_be_bytes());
    Ok(Bytes::from(room))
}

/// Writes into room sized beforehand, at a moving position.
struct Cursor<'a> {
    buf: &'a mut [u8],
    at: usize,
}

impl Cursor<'_> {
    fn put(&mut self, bytes: &[u8]) {
        self.buf[self.at..self.at + bytes.len()].copy_from_slice(bytes);
        self.at += bytes.len();
    }

    /// Zig-zag then base-128, as the record format writes its varints and varlongs.
    fn varint(&mut self, v: i64) {
        let mut z = zigzag(v);
        while z >= 0x80 {
            self.buf[self.at] = (z as u8) | 0x80;
            self.at += 1;
            z >>= 7;
        }
        self.buf[self.at] = z as u8;
        self.at += 1;
    }
}

/// The error for a batch too large for the format's fields.
fn too_large(what: &str) -> WireError {
    WireError::Records(format!("{what} too large for a record batch"))
}

/// The size of record `r`'s body (after its length), in a batch based at `base` whose least
/// timestamp is `min_timestamp`.
fn record_size(r: &LogRecord, base: i64, min_timestamp: i64) -> usize {
    let key = r.key.as_ref().map_or(varint_len(-1), |k| varint_len(k.len() as i64) + k.len());
    1 + varint_len(r.timestamp_ms - min_timestamp)
        + varint_len(r.offset - base)
        + key
        + varint_len(r.value.len() as i64)
        + r.value.len()
        + varint_len(0)
}

/// How many bytes `Cursor::varint` writes for `v`.
fn varint_len(v: i64) -> usize {
    (64 - (zigzag(v) | 1).leading_zeros() as usize).div_ceil(7)
}

/// The record format's zig-zag mapping: small magnitudes, either sign, to small numbers.
fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

/// Size of a v2 batch header up to and including the record count.
const BATCH_HEADER: usize = 61;
/// Offset of the magic byte in a batch.
const MAGIC_AT: usize = 16;
/// Offset of the CRC-32C in a batch (it covers everything from the attributes on).
const CRC_AT: usize = 17;
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
    let mut out = Vec::new();
    runs_into(records.as_ref(), position, max, max, &mut out);
    out.first().copied()
}

/// Every record at or after `position` in a Fetch answer's record bytes, as [`offsets_in`]
/// reads them, in runs of at most `chunk` records, oldest first: how a consumer that keeps a
/// fetched answer hands it to the application `max.poll.records` at a time.
pub fn offset_chunks(
    records: Option<Bytes>,
    position: i64,
    chunk: usize,
) -> Vec<(i64, i64, usize)> {
    let mut out = Vec::new();
    offset_chunks_into(records.as_ref(), position, chunk, &mut out);
    out
}

/// [`offset_chunks`] written into `out` (cleared first), so a caller reading many partitions'
/// records reuses one vector.
pub fn offset_chunks_into(
    records: Option<&Bytes>,
    position: i64,
    chunk: usize,
    out: &mut Vec<(i64, i64, usize)>,
) {
    runs_into(records, position, chunk, usize::MAX, out);
}

/// The records at or after `position`, at most `limit` of them, in runs of at most `chunk`,
/// written into `out` (cleared first).
fn runs_into(
    records: Option<&Bytes>,
    position: i64,
    chunk: usize,
    limit: usize,
    out: &mut Vec<(i64, i64, usize)>,
) {
    out.clear();
    let Some(buf) = records else { return };
    let mut runs = Runs::new(position, chunk, limit, std::mem::take(out));
    if walk_offsets(buf, &mut runs).is_none() {
        runs = Runs::new(position, chunk, limit, runs.done);
        decoded_offsets(buf.clone(), &mut runs);
    }
    *out = runs.done;
}

/// The runs of offsets read so far: each offset past `position` and past the last one taken
/// joins the open run until it holds `chunk`; reading stops at `limit` offsets.
struct Runs {
    position: i64,
    chunk: usize,
    limit: usize,
    taken: usize,
    last: Option<i64>,
    done: Vec<(i64, i64, usize)>,
}

impl Runs {
    /// Runs written into `done` (emptied first: it is only room).
    fn new(position: i64, chunk: usize, limit: usize, mut done: Vec<(i64, i64, usize)>) -> Self {
        done.clear();
        Runs { position, chunk, limit, taken: 0, last: None, done }
    }

    fn full(&self) -> bool {
        self.taken >= self.limit || self.chunk == 0
    }

    /// Takes `offset` if it is a data record's at or past the position and past the last
    /// one taken (a re-sent batch repeats offsets).
    fn offer(&mut self, offset: i64, control: bool) {
        if control || offset < self.position || self.last.is_some_and(|l| offset <= l) {
            return;
        }
        if self.full() {
            return;
        }
        match self.done.last_mut() {
            Some(run) if run.2 < self.chunk => {
                run.1 = offset;
                run.2 += 1;
            }
            _ => self.done.push((offset, offset, 1)),
        }
        self.last = Some(offset);
        self.taken += 1;
    }
}

/// [`offsets_in`] by walking well-formed uncompressed v2 batches in place, reading each record's
/// offset delta and skipping the rest by its length: what the decoder would read, without
/// building the records. `None` at anything else the decoder could meet (a compressed or corrupt
/// batch, a record header, an odd varint): the caller decodes instead, from the start.
fn walk_offsets(buf: &[u8], runs: &mut Runs) -> Option<()> {
    // Every batch's header first, as the decoder's guard reads them all before decoding any;
    // the walk below reads them again rather than keep a list (a Fetch answer is walked on
    // every fetch).
    let mut at = 0;
    let mut most_records = 0;
    while at < buf.len() {
        let batch = batch_at(&buf[at..])?;
        if !batch.crc_holds()? {
            return None;
        }
        most_records = most_records.max(batch.records);
        at += batch.bytes.len();
    }
    // The decoder's guard: a count larger than the bytes there is garbage.
    if most_records > buf.len() {
        return Some(());
    }
    let mut at = 0;
    while at < buf.len() && !runs.full() {
        let batch = batch_at(&buf[at..])?;
        at += batch.bytes.len();
        let mut rec = batch.record_bytes();
        for _ in 0..batch.records {
            let (size, n) = short_varint(rec, 5)?;
            let size = usize::try_from(size).ok()?;
            let record = rec.get(n..n + size)?;
            rec = &rec[n + size..];
            let fields = record.get(1..)?;
            let (_, n) = short_varint(fields, 10)?;
            let (delta, _) = short_varint(fields.get(n..)?, 5)?;
            if !record_is_plain(fields)? {
                return None;
            }
            runs.offer(batch.base + delta, batch.control);
            if runs.full() {
                break;
            }
        }
    }
    Some(())
}

/// A well-formed uncompressed v2 batch, its header read (its CRC not checked).
struct BatchAt<'a> {
    base: i64,
    control: bool,
    records: usize,
    /// The whole batch.
    bytes: &'a [u8],
}

impl<'a> BatchAt<'a> {
    /// Whether its CRC-32C matches what it covers (attributes to the end).
    fn crc_holds(&self) -> Option<bool> {
        let stored = u32::from_be_bytes(self.bytes[CRC_AT..CRC_AT + 4].try_into().ok()?);
        Some(crc32c::crc32c(&self.bytes[ATTRIBUTES_AT..]) == stored)
    }

    /// Its records, after the header.
    fn record_bytes(&self) -> &'a [u8] {
        &self.bytes[BATCH_HEADER..]
    }
}

/// The batch at the start of `buf`; `None` for anything the walk leaves to the decoder.
fn batch_at(buf: &[u8]) -> Option<BatchAt<'_>> {
    let base = i64::from_be_bytes(buf.get(0..8)?.try_into().ok()?);
    let length = usize::try_from(i32::from_be_bytes(buf.get(8..12)?.try_into().ok()?)).ok()?;
    let bytes = buf.get(..length.checked_add(12)?)?;
    if bytes.len() < BATCH_HEADER || bytes[MAGIC_AT] != 2 {
        return None;
    }
    let attributes = i16::from_be_bytes(bytes[ATTRIBUTES_AT..ATTRIBUTES_AT + 2].try_into().ok()?);
    let records = i32::from_be_bytes(bytes[RECORD_COUNT_AT..RECORD_COUNT_AT + 4].try_into().ok()?);
    if attributes & 0x7 != 0 || records < 0 {
        return None;
    }
    Some(BatchAt { base, control: attributes & (1 << 5) != 0, records: records as usize, bytes })
}

/// Whether a record's fields after its attributes (timestamp delta, offset delta, key, value,
/// header count) read as the decoder reads them, with no headers and nothing it would refuse.
fn record_is_plain(fields: &[u8]) -> Option<bool> {
    let (_, a) = short_varint(fields, 10)?;
    let (_, b) = short_varint(fields.get(a..)?, 5)?;
    let mut at = a + b;
    for _ in 0..2 {
        let (len, n) = short_varint(fields.get(at..)?, 5)?;
        at += n;
        if len < -1 {
            return Some(false);
        }
        if len > 0 {
            at += usize::try_from(len).ok()?;
            fields.get(..at)?;
        }
    }
    let (headers, _) = short_varint(fields.get(at..)?, 5)?;
    Some(headers == 0)
}

/// A zig-zag varint of at most `max_bytes` bytes at the start of `b`: its value and length.
/// `None` for a longer one, one cut short, or (at five bytes) one beyond 32 bits, which the
/// decoder reads otherwise.
fn short_varint(b: &[u8], max_bytes: usize) -> Option<(i64, usize)> {
    // Most of a record's fields fit one byte.
    if let Some(&byte) = b.first().filter(|&&byte| byte < 0x80) {
        return Some((i64::from(byte >> 1) ^ -i64::from(byte & 1), 1));
    }
    let mut z: u64 = 0;
    for (i, &byte) in b.iter().enumerate().take(max_bytes) {
        z |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            if max_bytes == 5 && z > u64::from(u32::MAX) {
                return None;
            }
            return Some(((z >> 1) as i64 ^ -((z & 1) as i64), i + 1));
        }
    }
    None
}

/// [`offsets_in`] through kafka-protocol's decoder, for whatever [`walk_offsets`] leaves.
fn decoded_offsets(mut buf: Bytes, runs: &mut Runs) {
    // A batch claiming more records than there are bytes is garbage: refuse it before the
    // decoder sizes a vector by that count.
    if let Ok(infos) = RecordBatchDecoder::decode_batch_info(&mut buf.clone()) {
        if infos.iter().any(|i| i.record_count as usize > buf.len()) {
            return;
        }
    }
    while buf.has_remaining() && !runs.full() {
        let Ok(set) = RecordBatchDecoder::decode(&mut buf) else {
            break;
        };
        for r in set.records {
            runs.offer(r.offset, r.control);
            if runs.full() {
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use rand::{RngExt, SeedableRng};

    use super::*;

    /// Random logs' batches, one or several, sometimes cut short or with a byte changed: the
    /// walk gives what the decoder gives, wherever it gives anything at all.
    #[test]
    fn the_walk_reads_what_the_decoder_reads() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        let mut walked = 0;
        for case in 0..3_000 {
            let mut bytes = Vec::new();
            let mut next = rng.random_range(0..1_000i64);
            for _ in 0..rng.random_range(1..4) {
                let n = rng.random_range(1..12);
                let records: Vec<LogRecord> = (0..n)
                    .map(|i| LogRecord {
                        offset: next + i,
                        timestamp_ms: rng.random_range(0..1i64 << 41),
                        key: rng
                            .random_bool(0.5)
                            .then(|| Bytes::from(vec![7; rng.random_range(0..200)])),
                        value: Bytes::from(vec![1; rng.random_range(0..300)]),
                    })
                    .collect();
                // Sometimes a batch repeats offsets already sent, as a re-sent batch would.
                next += if rng.random_bool(0.2) { n / 2 } else { n };
                bytes.extend_from_slice(&encode_batch(&records).unwrap());
            }
            match rng.random_range(0..4) {
                0 => bytes.truncate(rng.random_range(0..bytes.len())),
                1 => {
                    let at = rng.random_range(0..bytes.len());
                    bytes[at] ^= 1 << rng.random_range(0..8);
                }
                _ => {}
            }
            let bytes = Bytes::from(bytes);
            let position = next - rng.random_range(0..30);
            let max = rng.random_range(0..40);
            // The first run with a limit (what `offsets_in` reads), and every run without one.
            for limit in [max, usize::MAX] {
                let mut decoded = Runs::new(position, max, limit, Vec::new());
                decoded_offsets(bytes.clone(), &mut decoded);
                let mut walk = Runs::new(position, max, limit, Vec::new());
                if walk_offsets(&bytes, &mut walk).is_some() {
                    walked += 1;
                    assert_eq!(walk.done, decoded.done, "case {case}, limit {limit}");
                }
                if limit == max {
                    let first = decoded.done.first().copied();
                    assert_eq!(
                        offsets_in(Some(bytes.clone()), position, max),
                        first,
                        "case {case}"
                    );
                } else {
                    let chunks = offset_chunks(Some(bytes.clone()), position, max);
                    assert_eq!(chunks, decoded.done, "case {case}");
                    // Into a vector that held another answer's runs: the same runs.
                    let mut reused = vec![(-1, -1, 9); case % 3];
                    offset_chunks_into(Some(&bytes), position, max, &mut reused);
                    assert_eq!(reused, chunks, "case {case}");
                    // The runs are the records in order, each full but the last.
                    for pair in chunks.windows(2) {
                        assert_eq!(pair[0].2, max, "case {case}");
                        assert!(pair[0].1 < pair[1].0, "case {case}");
                    }
                }
            }
        }
        assert!(walked > 3_000, "the walk took only {walked} of the cases");
    }
}
