//! The client half: the ApiVersions handshake, then a writer that picks the negotiated version
//! for each request and a reader that matches answers to requests in order.
//!
//! The writer and reader are the two halves of one stream (`tokio::io::split`), so a member can
//! keep reading answers while it writes (Kafka clients pipeline requests; answers come back in
//! request order). They share the in-flight queue: the writer pushes (correlation id, API,
//! version) before writing a frame; the reader pops the front entry when a full frame arrived
//! and decodes the frame with it.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};

use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, RequestHeader, RequestKind, ResponseKind,
};
use kafka_protocol::protocol::{StrBytes, VersionRange};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadHalf, WriteHalf};

use crate::codec::{
    decode_response, encode_request, peek_correlation_id, request_api_key, request_header,
};
use crate::error_name;
use crate::frame::{write_frame, FrameReader, DEFAULT_MAX_FRAME_BYTES};
use crate::versions::{highest_common, served_apis};
use crate::WireError;

/// Name and version we report in ApiVersions v3+ (Kafka checks them against
/// `[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?`).
pub const CLIENT_SOFTWARE_NAME: &str = "groupsim";
/// See [`CLIENT_SOFTWARE_NAME`].
pub const CLIENT_SOFTWARE_VERSION: &str = "0.1.0";

const UNSUPPORTED_VERSION: i16 = 35;

/// The outcome of the ApiVersions exchange: per API, the broker's range and the version we use.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NegotiatedVersions {
    /// API key number -> the broker's advertised range.
    broker: BTreeMap<i16, VersionRange>,
    /// API key number -> highest version in both our range and the broker's.
    chosen: BTreeMap<i16, i16>,
}

impl NegotiatedVersions {
    /// Intersects our ranges with the broker's advertised ranges.
    pub fn negotiate(ours: &[(ApiKey, VersionRange)], broker: &[(i16, VersionRange)]) -> Self {
        let broker: BTreeMap<i16, VersionRange> = broker.iter().copied().collect();
        let chosen = ours
            .iter()
            .filter_map(|&(key, range)| {
                let theirs = broker.get(&(key as i16))?;
                Some((key as i16, highest_common(range, *theirs)?))
            })
            .collect();
        Self { broker, chosen }
    }

    /// The version we send `api_key` requests with, or `None` if there is no common version.
    pub fn version_for(&self, api_key: ApiKey) -> Option<i16> {
        self.chosen.get(&(api_key as i16)).copied()
    }

    /// The range the broker advertised for `api_key`.
    pub fn broker_range(&self, api_key: ApiKey) -> Option<VersionRange> {
        self.broker.get(&(api_key as i16)).copied()
    }
}

/// (correlation id, API, version) of requests written and not yet answered, oldest first.
type InFlight = Arc<Mutex<VecDeque<(i32, ApiKey, i16)>>>;

fn lock(in_flight: &InFlight) -> std::sync::MutexGuard<'_, VecDeque<(i32, ApiKey, i16)>> {
    // Nothing panics while holding the lock, but a poisoned queue is still a valid queue.
    in_flight.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The writing half of a client connection.
#[derive(Debug)]
pub struct RequestWriter<W> {
    writer: W,
    client_id: StrBytes,
    next_correlation_id: i32,
    versions: Arc<NegotiatedVersions>,
    in_flight: InFlight,
}

/// The reading half of a client connection.
#[derive(Debug)]
pub struct ResponseReader<R> {
    reader: FrameReader<R>,
    versions: Arc<NegotiatedVersions>,
    in_flight: InFlight,
}

/// Connects the client side of `stream`: ApiVersions at our highest version (falling back as
/// Kafka clients do when the broker answers UNSUPPORTED_VERSION), then per API the highest
/// version both sides speak, from the served-versions table.
pub async fn handshake<S: AsyncRead + AsyncWrite + Unpin>(
    stream: S,
    client_id: &str,
) -> Result<(RequestWriter<WriteHalf<S>>, ResponseReader<ReadHalf<S>>), WireError> {
    handshake_with_versions(stream, client_id, &served_apis()).await
}

/// [`handshake`] for a client that speaks `ours` (e.g. a client profile pinned to older
/// versions, or a newer client asking ApiVersions v4).
pub async fn handshake_with_versions<S: AsyncRead + AsyncWrite + Unpin>(
    stream: S,
    client_id: &str,
    ours: &[(ApiKey, VersionRange)],
) -> Result<(RequestWriter<WriteHalf<S>>, ResponseReader<ReadHalf<S>>), WireError> {
    let (read_half, mut write_half) = tokio::io::split(stream);
    let mut reader = FrameReader::new(read_half, DEFAULT_MAX_FRAME_BYTES);
    let our_api_versions = ours
        .iter()
        .find(|(key, _)| *key == ApiKey::ApiVersions)
        .map(|(_, range)| *range)
        .ok_or_else(|| WireError::Handshake("our version table lacks ApiVersions".into()))?;
    let client_id = StrBytes::from_string(client_id.to_string());

    let mut version = our_api_versions.max;
    let mut correlation_id = 0;
    let response = loop {
        let header = RequestHeader::default()
            .with_request_api_key(ApiKey::ApiVersions as i16)
            .with_request_api_version(version)
            .with_correlation_id(correlation_id)
            .with_client_id(Some(client_id.clone()));
        let mut request = ApiVersionsRequest::default();
        if version >= 3 {
            request = request
                .with_client_software_name(StrBytes::from_static_str(CLIENT_SOFTWARE_NAME))
                .with_client_software_version(StrBytes::from_static_str(CLIENT_SOFTWARE_VERSION));
        }
        let frame = encode_request(&header, &RequestKind::ApiVersions(request))?;
        write_frame(&mut write_half, &frame).await?;
        let answer = reader.read_frame().await?.ok_or(WireError::ConnectionClosed)?;
        // The error code is the first body field in every version; a broker that does not serve
        // our version answers in the v0 layout.
        let error = answer.get(4..6).map(|b| i16::from_be_bytes([b[0], b[1]]));
        let decode_version = if error == Some(UNSUPPORTED_VERSION) { 0 } else { version };
        let (got_id, response) = decode_response(answer, ApiKey::ApiVersions, decode_version)?;
        if got_id != correlation_id {
            return Err(WireError::CorrelationMismatch { expected: correlation_id, got: got_id });
        }
        let ResponseKind::ApiVersions(response) = response else {
            return Err(WireError::Handshake("ApiVersions answer of another kind".into()));
        };
        if response.error_code == UNSUPPORTED_VERSION && correlation_id == 0 {
            // Retry at the highest version both sides speak (v0 if the broker lists none).
            let theirs = response
                .api_keys
                .iter()
                .find(|k| k.api_key == ApiKey::ApiVersions as i16)
                .map(|k| VersionRange { min: k.min_version, max: k.max_version });
            let retry = theirs.and_then(|t| highest_common(our_api_versions, t)).unwrap_or(0);
            if retry == version {
                return Err(WireError::Handshake(format!(
                    "broker refused ApiVersions v{version} but lists it as supported"
                )));
            }
            version = retry;
            correlation_id += 1;
            continue;
        }
        if response.error_code != 0 {
            return Err(WireError::Handshake(format!(
                "ApiVersions v{version} answered {}",
                error_name(response.error_code)
            )));
        }
        break response;
    };
    if reader.buffered() > 0 {
        return Err(WireError::Handshake("bytes after the ApiVersions answer".into()));
    }

    let broker: Vec<(i16, VersionRange)> = response
        .api_keys
        .iter()
        .map(|k| (k.api_key, VersionRange { min: k.min_version, max: k.max_version }))
        .collect();
    let versions = Arc::new(NegotiatedVersions::negotiate(ours, &broker));
    let in_flight: InFlight = Arc::default();
    let writer = RequestWriter {
        writer: write_half,
        client_id,
        next_correlation_id: correlation_id + 1,
        versions: versions.clone(),
        in_flight: in_flight.clone(),
    };
    Ok((writer, ResponseReader { reader, versions, in_flight }))
}

impl<W: AsyncWrite + Unpin> RequestWriter<W> {
    /// Sends `request` at the negotiated version of its API and returns its correlation id.
    /// Fails if the broker has no common version or the request cannot be encoded at it (e.g. a
    /// field that version lacks). Not cancel safe: dropping it mid-write leaves a partial frame,
    /// after which the connection must be dropped.
    pub async fn send(&mut self, request: &RequestKind) -> Result<i32, WireError> {
        let api_key = request_api_key(request)
            .ok_or_else(|| WireError::UnsupportedRequest(format!("{request:?}")))?;
        let version =
            self.versions.version_for(api_key).ok_or(WireError::NotNegotiated(api_key))?;
        self.send_at(request, version).await
    }

    /// Sends `request` at an explicit `version`, which must lie in the broker's range.
    pub async fn send_at(&mut self, request: &RequestKind, version: i16) -> Result<i32, WireError> {
        let api_key = request_api_key(request)
            .ok_or_else(|| WireError::UnsupportedRequest(format!("{request:?}")))?;
        let range = self.versions.broker_range(api_key).ok_or(WireError::NotNegotiated(api_key))?;
        if version < range.min || version > range.max {
            return Err(WireError::NotNegotiated(api_key));
        }
        let correlation_id = self.next_correlation_id;
        let header = request_header(api_key, version, correlation_id, &self.client_id);
        let frame = encode_request(&header, request)?;
        self.next_correlation_id = self.next_correlation_id.wrapping_add(1);
        // Recorded before writing, so the reader can never see the answer first.
        lock(&self.in_flight).push_back((correlation_id, api_key, version));
        write_frame(&mut self.writer, &frame).await?;
        Ok(correlation_id)
    }

    /// The version [`Self::send`] uses for `api_key`.
    pub fn version_for(&self, api_key: ApiKey) -> Option<i16> {
        self.versions.version_for(api_key)
    }

    /// Closes our sending direction (the broker sees end of stream and closes the connection
    /// once it has answered what it read). Dropping the writer alone does not close a stream
    /// split with `tokio::io::split`: the reader half keeps it open.
    pub async fn shutdown(&mut self) -> Result<(), WireError> {
        self.writer.shutdown().await?;
        Ok(())
    }

    /// The negotiated versions.
    pub fn versions(&self) -> &NegotiatedVersions {
        &self.versions
    }
}

impl<R: AsyncRead + Unpin> ResponseReader<R> {
    /// The next answer, with the correlation id of the request it answers. Answers arrive in
    /// request order; an answer for another request than the oldest in flight is an error.
    /// [`WireError::ConnectionClosed`] when the broker closed the connection. Cancel safe.
    pub async fn recv(&mut self) -> Result<(i32, ResponseKind), WireError> {
        let frame = self.reader.read_frame().await?.ok_or(WireError::ConnectionClosed)?;
        let got = peek_correlation_id(&frame)
            .ok_or(WireError::FrameTooShort { len: frame.len(), what: "response header" })?;
        let front = lock(&self.in_flight).pop_front();
        let Some((expected, api_key, version)) = front else {
            return Err(WireError::UnexpectedResponse(got));
        };
        if got != expected {
            return Err(WireError::CorrelationMismatch { expected, got });
        }
        decode_response(frame, api_key, version)
    }

    /// Requests written and not yet answered.
    pub fn in_flight(&self) -> usize {
        lock(&self.in_flight).len()
    }

    /// The version requests of `api_key` are sent with.
    pub fn version_for(&self, api_key: ApiKey) -> Option<i16> {
        self.versions.version_for(api_key)
    }
}
