//! Turning frames into requests and responses and back, for the server and the client side.
//!
//! Every decode is defended three ways: lengths are checked before kafka-protocol peeks at them
//! (its header decoder indexes bytes 0..4 unchecked), the body is walked against its wire layout
//! first (see `shape.rs`: kafka-protocol preallocates arrays from wire lengths), and the
//! kafka-protocol call runs under `catch_unwind` as a last line of defence.

use std::fmt::Display;
use std::panic::{catch_unwind, AssertUnwindSafe};

use bytes::{Buf, Bytes, BytesMut};
use kafka_protocol::messages::{
    ApiKey, ApiVersionsResponse, RequestHeader, RequestKind, ResponseHeader, ResponseKind,
};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};

use crate::shape;
use crate::versions::is_served;
use crate::WireError;

/// A request decoded by the server side.
#[derive(Clone, Debug, PartialEq)]
pub struct DecodedRequest {
    /// The request header (correlation id, client id, …).
    pub header: RequestHeader,
    /// The API this request belongs to.
    pub api_key: ApiKey,
    /// The version the client encoded it with (also the version to answer with).
    pub version: i16,
    /// The request body.
    pub request: RequestKind,
}

/// Smallest request header: api key (2), version (2), correlation id (4), client id length (2).
const MIN_REQUEST_HEADER: usize = 10;

/// Decodes one request frame (without its length prefix).
///
/// Errors carry what the server needs to answer or to log: an unknown API key or an unserved
/// version gives [`WireError::UnknownApiKey`] / [`WireError::UnsupportedVersion`] with the
/// correlation id (the body is not decoded: its layout may be unknown to us); anything that
/// does not parse exactly, trailing bytes included, gives [`WireError::MalformedRequest`].
pub fn decode_request(frame: Bytes) -> Result<DecodedRequest, WireError> {
    decode_request_from(frame, Source::Untrusted)
}

/// [`decode_request`] for a frame from `source`.
pub fn decode_request_from(frame: Bytes, source: Source) -> Result<DecodedRequest, WireError> {
    if frame.len() < 8 {
        return Err(WireError::FrameTooShort { len: frame.len(), what: "request header" });
    }
    let raw_key = i16::from_be_bytes([frame[0], frame[1]]);
    let version = i16::from_be_bytes([frame[2], frame[3]]);
    let correlation_id = i32::from_be_bytes([frame[4], frame[5], frame[6], frame[7]]);
    let api_key = ApiKey::try_from(raw_key).map_err(|()| WireError::UnknownApiKey {
        api_key: raw_key,
        version,
        correlation_id,
    })?;
    if !is_served(api_key, version) {
        return Err(WireError::UnsupportedVersion { api_key, version, correlation_id });
    }
    let malformed =
        |reason: String| WireError::MalformedRequest { api_key, version, correlation_id, reason };
    if frame.len() < MIN_REQUEST_HEADER {
        return Err(malformed(format!("{} bytes cannot hold a request header", frame.len())));
    }
    let mut buf = frame;
    let header_version = api_key.request_header_version(version);
    let header = guarded(|| RequestHeader::decode(&mut buf, header_version))
        .map_err(|e| malformed(format!("header: {e}")))?;
    if source == Source::Untrusted {
        shape::check_request(api_key, version, &buf).map_err(malformed)?;
    }
    let request = guarded(|| RequestKind::decode(api_key, &mut buf, version)).map_err(malformed)?;
    if buf.has_remaining() {
        return Err(malformed(format!("{} trailing bytes", buf.remaining())));
    }
    Ok(DecodedRequest { header, api_key, version, request })
}

/// Encodes a response frame body: the response header (version chosen by the response type;
/// ApiVersions always uses header v0) then the body at `version`.
pub fn encode_response(
    correlation_id: i32,
    api_key: ApiKey,
    version: i16,
    response: &ResponseKind,
) -> Result<Bytes, WireError> {
    let encode_err = |reason: String| WireError::Encode { api_key, version, reason };
    match response_api_key(response) {
        Some(key) if key == api_key => {}
        other => {
            return Err(encode_err(format!("the response is for {other:?}, not {api_key:?}")));
        }
    }
    let mut buf = BytesMut::with_capacity(response_size_hint(response));
    let header = ResponseHeader::default().with_correlation_id(correlation_id);
    header
        .encode(&mut buf, api_key.response_header_version(version))
        .map_err(|e| encode_err(format!("{e:#}")))?;
    response.encode(&mut buf, version).map_err(|e| encode_err(format!("{e:#}")))?;
    Ok(buf.freeze())
}

/// Room for most group and metadata messages, header included: a buffer that starts this size
/// grows rarely while a message is encoded into it.
const SMALL_MESSAGE: usize = 512;

/// The bytes to reserve for encoding `response`: its record sets' length on top of
/// [`SMALL_MESSAGE`] (a Fetch answer's records are most of it), so the buffer is not regrown and
/// copied record set by record set. Only the buffer's first size: the bytes are the same.
fn response_size_hint(response: &ResponseKind) -> usize {
    match response {
        ResponseKind::Fetch(f) => with_records(
            f.responses.iter().flat_map(|t| t.partitions.iter()).map(|p| p.records.as_ref()),
        ),
        _ => SMALL_MESSAGE,
    }
}

/// The bytes to reserve for encoding `request` (see [`response_size_hint`]).
fn request_size_hint(request: &RequestKind) -> usize {
    match request {
        RequestKind::Produce(p) => with_records(
            p.topic_data.iter().flat_map(|t| t.partition_data.iter()).map(|p| p.records.as_ref()),
        ),
        _ => SMALL_MESSAGE,
    }
}

/// [`SMALL_MESSAGE`] and, per partition, its record set and room for its other fields.
fn with_records<'a>(records: impl Iterator<Item = Option<&'a Bytes>>) -> usize {
    SMALL_MESSAGE + records.map(|r| 64 + r.map_or(0, Bytes::len)).sum::<usize>()
}

/// Encodes the ApiVersions answer to an ApiVersions request of a version we do not serve:
/// error UNSUPPORTED_VERSION in the v0 body layout (header v0), as Kafka does, so the client can
/// read our ranges and retry at a version we serve.
pub fn encode_api_versions_fallback(
    correlation_id: i32,
    response: &ApiVersionsResponse,
) -> Result<Bytes, WireError> {
    encode_response(
        correlation_id,
        ApiKey::ApiVersions,
        0,
        &ResponseKind::ApiVersions(response.clone()),
    )
}

/// The header a client sends with a request of `api_key` at `version` under `correlation_id`.
pub fn request_header(
    api_key: ApiKey,
    version: i16,
    correlation_id: i32,
    client_id: &StrBytes,
) -> RequestHeader {
    RequestHeader::default()
        .with_request_api_key(api_key as i16)
        .with_request_api_version(version)
        .with_correlation_id(correlation_id)
        .with_client_id(Some(client_id.clone()))
}

/// Encodes a request frame body (header then body) for the client side. The header's api key
/// and version select the encodings.
pub fn encode_request(header: &RequestHeader, request: &RequestKind) -> Result<Bytes, WireError> {
    let version = header.request_api_version;
    let api_key =
        ApiKey::try_from(header.request_api_key).map_err(|()| WireError::UnknownApiKey {
            api_key: header.request_api_key,
            version,
            correlation_id: header.correlation_id,
        })?;
    let encode_err = |reason: String| WireError::Encode { api_key, version, reason };
    match request_api_key(request) {
        Some(key) if key == api_key => {}
        other => return Err(encode_err(format!("the request is for {other:?}, not {api_key:?}"))),
    }
    let mut buf = BytesMut::with_capacity(request_size_hint(request));
    header
        .encode(&mut buf, api_key.request_header_version(version))
        .map_err(|e| encode_err(format!("header: {e:#}")))?;
    request.encode(&mut buf, version).map_err(|e| encode_err(format!("{e:#}")))?;
    Ok(buf.freeze())
}

/// The correlation id at the front of a response frame, if the frame is long enough.
pub fn peek_correlation_id(frame: &[u8]) -> Option<i32> {
    frame.get(..4).map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

/// Decodes a response frame for a request of `api_key` sent at `version`; returns the
/// correlation id and the body. Only APIs whose layouts we hold (those we serve, and
/// CreateTopics, which check-broker sends) are read. Bytes after the body make the frame
/// malformed.
pub fn decode_response(
    frame: Bytes,
    api_key: ApiKey,
    version: i16,
) -> Result<(i32, ResponseKind), WireError> {
    match decode_response_prefix(frame, api_key, version)? {
        (id, response, 0) => Ok((id, response)),
        (_, _, trailing) => Err(WireError::MalformedResponse {
            api_key,
            version,
            reason: format!("{trailing} trailing bytes"),
        }),
    }
}

/// [`decode_response`] as Kafka's clients read answers: bytes after a well-formed body are left
/// unread, and their count is returned with the correlation id and the body.
pub fn decode_response_prefix(
    frame: Bytes,
    api_key: ApiKey,
    version: i16,
) -> Result<(i32, ResponseKind, usize), WireError> {
    decode_response_prefix_from(frame, api_key, version, Source::Untrusted)
}

/// Where a frame came from: bytes from outside are walked against their layout before
/// kafka-protocol reads them (`shape`); frames this process's own encoder wrote (an in-process
/// world's members and coordinator) are read directly, and a well-formed body takes the whole
/// frame.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Source {
    /// From another process: checked.
    #[default]
    Untrusted,
    /// Written by our own encoder in this process.
    OwnEncoder,
}

/// [`decode_response_prefix`] for a frame from `source`.
pub fn decode_response_prefix_from(
    frame: Bytes,
    api_key: ApiKey,
    version: i16,
    source: Source,
) -> Result<(i32, ResponseKind, usize), WireError> {
    let malformed = |reason: String| WireError::MalformedResponse { api_key, version, reason };
    let header_version = api_key.response_header_version(version);
    let min_header = if header_version >= 1 { 5 } else { 4 };
    if frame.len() < min_header {
        return Err(malformed(format!("{} bytes cannot hold a response header", frame.len())));
    }
    let mut buf = frame;
    let header = guarded(|| ResponseHeader::decode(&mut buf, header_version))
        .map_err(|e| malformed(format!("header: {e}")))?;
    // kafka-protocol sizes a vector by the count it reads, before reading the elements: bytes
    // from outside are first walked against their layout, and an answer whose layout we do not
    // hold is refused rather than read.
    let length = match source {
        Source::Untrusted if !shape::has_response_layout(api_key) => {
            return Err(malformed(format!("no layout known for {api_key:?} answers: not read")));
        }
        Source::Untrusted => shape::response_length(api_key, version, &buf).map_err(malformed)?,
        Source::OwnEncoder => buf.len(),
    };
    let trailing = buf.len() - length;
    let mut body = buf.split_to(length);
    let response =
        guarded(|| ResponseKind::decode(api_key, &mut body, version)).map_err(malformed)?;
    if body.has_remaining() {
        return Err(malformed(format!("{} bytes the layout took were left", body.remaining())));
    }
    Ok((header.correlation_id, response, trailing))
}

/// Runs a kafka-protocol call, turning both its errors and any panic into a message.
fn guarded<T, E: Display>(f: impl FnOnce() -> Result<T, E>) -> Result<T, String> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(e)) => Err(format!("{e:#}")),
        Err(panic) => {
            let msg = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_string());
            Err(format!("kafka-protocol panicked: {msg}"))
        }
    }
}

/// The API of a request, for the kinds this layer knows (the APIs we serve, and CreateTopics).
pub fn request_api_key(request: &RequestKind) -> Option<ApiKey> {
    Some(match request {
        RequestKind::Fetch(_) => ApiKey::Fetch,
        RequestKind::ListOffsets(_) => ApiKey::ListOffsets,
        RequestKind::Metadata(_) => ApiKey::Metadata,
        RequestKind::OffsetCommit(_) => ApiKey::OffsetCommit,
        RequestKind::OffsetFetch(_) => ApiKey::OffsetFetch,
        RequestKind::FindCoordinator(_) => ApiKey::FindCoordinator,
        RequestKind::JoinGroup(_) => ApiKey::JoinGroup,
        RequestKind::Heartbeat(_) => ApiKey::Heartbeat,
        RequestKind::LeaveGroup(_) => ApiKey::LeaveGroup,
        RequestKind::SyncGroup(_) => ApiKey::SyncGroup,
        RequestKind::DescribeGroups(_) => ApiKey::DescribeGroups,
        RequestKind::ListGroups(_) => ApiKey::ListGroups,
        RequestKind::ApiVersions(_) => ApiKey::ApiVersions,
        RequestKind::Produce(_) => ApiKey::Produce,
        RequestKind::InitProducerId(_) => ApiKey::InitProducerId,
        RequestKind::ConsumerGroupHeartbeat(_) => ApiKey::ConsumerGroupHeartbeat,
        RequestKind::ConsumerGroupDescribe(_) => ApiKey::ConsumerGroupDescribe,
        // Sent by `check-broker` to make its topic; never served.
        RequestKind::CreateTopics(_) => ApiKey::CreateTopics,
        _ => return None,
    })
}

/// The API of a response, for the kinds this layer knows (see [`request_api_key`]).
pub fn response_api_key(response: &ResponseKind) -> Option<ApiKey> {
    Some(match response {
        ResponseKind::Fetch(_) => ApiKey::Fetch,
        ResponseKind::ListOffsets(_) => ApiKey::ListOffsets,
        ResponseKind::Metadata(_) => ApiKey::Metadata,
        ResponseKind::OffsetCommit(_) => ApiKey::OffsetCommit,
        ResponseKind::OffsetFetch(_) => ApiKey::OffsetFetch,
        ResponseKind::FindCoordinator(_) => ApiKey::FindCoordinator,
        ResponseKind::JoinGroup(_) => ApiKey::JoinGroup,
        ResponseKind::Heartbeat(_) => ApiKey::Heartbeat,
        ResponseKind::LeaveGroup(_) => ApiKey::LeaveGroup,
        ResponseKind::SyncGroup(_) => ApiKey::SyncGroup,
        ResponseKind::DescribeGroups(_) => ApiKey::DescribeGroups,
        ResponseKind::ListGroups(_) => ApiKey::ListGroups,
        ResponseKind::ApiVersions(_) => ApiKey::ApiVersions,
        ResponseKind::Produce(_) => ApiKey::Produce,
        ResponseKind::InitProducerId(_) => ApiKey::InitProducerId,
        ResponseKind::ConsumerGroupHeartbeat(_) => ApiKey::ConsumerGroupHeartbeat,
        ResponseKind::ConsumerGroupDescribe(_) => ApiKey::ConsumerGroupDescribe,
        ResponseKind::CreateTopics(_) => ApiKey::CreateTopics,
        _ => return None,
    })
}
