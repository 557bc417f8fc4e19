//! Requests and answers an in-process world hands over as values, in place of the frames that
//! would carry them. The receiving side gets exactly what it would decode from the frame: the
//! fields the message's version lacks hold what decoding gives them, and a message the encoder
//! would refuse is refused with the encoder's error. Nothing else differs, so a run's history is
//! the same either way; only the bytes are never written and read.
//!
//! Handed over: Fetch (nearly every exchange of a simulated run), and the commonest group and
//! cluster messages at the one version the simulated members speak: Metadata (whose answers
//! are the largest after Fetch's) and OffsetCommit, each only when it holds nothing the version
//! lacks, so that it is its own decoded frame. Every other API and version crosses as a frame,
//! so each run still exercises the codec, and the turmoil world, `serve` and `check-broker`
//! carry every message as bytes. The equivalence with encoding and decoding is a property test
//! per API over generated requests and answers (`wire/tests/handoff.rs`).

use kafka_protocol::messages::{ApiKey, RequestKind, ResponseKind};
use kafka_protocol::protocol::StrBytes;

use crate::codec::{encode_request, request_header};
use crate::WireError;

/// A request handed over instead of its frame: what the server side would decode from it.
#[derive(Clone, Debug, PartialEq)]
pub struct HandedRequest {
    /// The correlation id the frame's header would carry.
    pub correlation_id: i32,
    /// The request's API.
    pub api_key: ApiKey,
    /// The version it is written at (the answer's too).
    pub version: i16,
    /// The client id the header would carry.
    pub client_id: Option<String>,
    /// The body, as decoding at `version` gives it.
    pub request: RequestKind,
}

impl HandedRequest {
    /// The frame that carries this request, for a host that moves bytes only.
    pub fn to_frame(&self) -> Result<bytes::Bytes, WireError> {
        let client_id = StrBytes::from_string(self.client_id.clone().unwrap_or_default());
        let header = request_header(self.api_key, self.version, self.correlation_id, &client_id);
        encode_request(&header, &self.request)
    }
}

/// An answer handed over instead of its frame: what the client side would decode from it.
#[derive(Clone, Debug, PartialEq)]
pub struct HandedResponse {
    /// The correlation id of the request it answers.
    pub correlation_id: i32,
    /// The body, as decoding at the request's version gives it.
    pub response: ResponseKind,
}

mod fetch;
mod metadata;
mod offset_commit;

/// Whether a message of `api_key` at `version` may be handed over: the APIs and versions whose
/// fields [`as_decoded_request`] and [`as_decoded_response`] know.
pub fn hands_over(api_key: ApiKey, version: i16) -> bool {
    match api_key {
        ApiKey::Fetch => fetch::VERSIONS.contains(&version),
        ApiKey::Metadata => version == metadata::VERSION,
        ApiKey::OffsetCommit => version == offset_commit::VERSION,
        _ => false,
    }
}

/// What becomes of a message offered for handing over.
#[derive(Debug)]
pub enum Handover<T, F = T> {
    /// Handed over: the message as the other side would decode it from its frame.
    Value(T),
    /// Refused, with the error the encoder gives for it.
    Refused(WireError),
    /// Not handed over (see [`hands_over`]; one carrying unknown tagged fields neither): it
    /// goes as a frame.
    Framed(F),
}

/// `request` as the server side would decode it from its frame at `version` (see
/// [`Handover`]).
pub fn as_decoded_request(request: RequestKind, version: i16) -> Handover<RequestKind> {
    match request {
        RequestKind::Fetch(r) if hands_over(ApiKey::Fetch, version) => fetch::request(r, version),
        RequestKind::Metadata(r)
            if hands_over(ApiKey::Metadata, version) && metadata::request_is_decoded(&r) =>
        {
            Handover::Value(RequestKind::Metadata(r))
        }
        RequestKind::OffsetCommit(r)
            if hands_over(ApiKey::OffsetCommit, version)
                && offset_commit::request_is_decoded(&r) =>
        {
            Handover::Value(RequestKind::OffsetCommit(r))
        }
        other => Handover::Framed(other),
    }
}

/// `response` as the client side would decode it from its frame at `version` (see
/// [`Handover`]).
pub fn as_decoded_response(response: ResponseKind, version: i16) -> Handover<ResponseKind> {
    match response {
        ResponseKind::Fetch(r) if hands_over(ApiKey::Fetch, version) => fetch::response(r, version),
        ResponseKind::Metadata(r)
            if hands_over(ApiKey::Metadata, version) && metadata::response_is_decoded(&r) =>
        {
            Handover::Value(ResponseKind::Metadata(r))
        }
        ResponseKind::OffsetCommit(r)
            if hands_over(ApiKey::OffsetCommit, version)
                && offset_commit::response_is_decoded(&r) =>
        {
            Handover::Value(ResponseKind::OffsetCommit(r))
        }
        other => Handover::Framed(other),
    }
}

/// Whether a length fits the narrowest prefix the protocol writes lengths with (a 16-bit
/// string length): anything longer is left to the encoder.
fn fits(len: usize) -> bool {
    len <= i16::MAX as usize
}

/// The error the codec gives for a message of type `T` the encoder refuses (kafka-protocol
/// names the body's type and version before the cause).
pub(super) fn encode_error<T>(
    api_key: ApiKey,
    version: i16,
    e: impl std::fmt::Display,
) -> WireError {
    let body = std::any::type_name::<T>();
    WireError::Encode {
        api_key,
        version,
        reason: format!("Failed to encode {body} v{version} body: {e:#}"),
    }
}
