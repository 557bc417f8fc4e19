//! [`WireError`]: everything that can go wrong on a connection.

use kafka_protocol::messages::ApiKey;

/// Everything that can go wrong on a connection. Messages name the problem and the API.
#[derive(Debug, thiserror::Error)]
pub enum WireError {
    /// The socket failed.
    #[error("i/o error: {0}")]
    Io(#[from] std::io::Error),
    /// The peer closed the connection where a frame was expected (client side).
    #[error("connection closed by the peer")]
    ConnectionClosed,
    /// A frame length prefix below zero.
    #[error("frame length {0} is negative")]
    NegativeFrameLength(i32),
    /// A frame length prefix above the configured maximum.
    #[error("frame length {len} exceeds the maximum of {max} bytes")]
    FrameTooLarge { len: i64, max: usize },
    /// The stream ended inside a frame.
    #[error("stream ended inside a frame: expected {expected} bytes, got {got}")]
    TruncatedFrame { expected: usize, got: usize },
    /// A frame too short to hold even the fixed part of a header.
    #[error("frame of {len} bytes is too short for a {what}")]
    FrameTooShort { len: usize, what: &'static str },
    /// A request with an API key Kafka does not define.
    #[error("unknown API key {api_key} (version {version}, correlation id {correlation_id})")]
    UnknownApiKey { api_key: i16, version: i16, correlation_id: i32 },
    /// A request for an API or version this broker does not serve.
    #[error("{api_key:?} v{version} is not served (correlation id {correlation_id})")]
    UnsupportedVersion { api_key: ApiKey, version: i16, correlation_id: i32 },
    /// A request whose bytes do not parse as its API and version say.
    #[error(
        "malformed {api_key:?} v{version} request (correlation id {correlation_id}): {reason}"
    )]
    MalformedRequest { api_key: ApiKey, version: i16, correlation_id: i32, reason: String },
    /// A response whose bytes do not parse as the request's API and version say.
    #[error("malformed {api_key:?} v{version} response: {reason}")]
    MalformedResponse { api_key: ApiKey, version: i16, reason: String },
    /// A message that cannot be encoded at the chosen version (e.g. a field the version lacks).
    #[error("cannot encode {api_key:?} v{version}: {reason}")]
    Encode { api_key: ApiKey, version: i16, reason: String },
    /// A response arrived for a different request than the oldest one in flight.
    #[error("response with correlation id {got}, but {expected} is the oldest request in flight")]
    CorrelationMismatch { expected: i32, got: i32 },
    /// A response arrived while no request was in flight.
    #[error("response with correlation id {0} while no request is in flight")]
    UnexpectedResponse(i32),
    /// The client has no version of this API in common with the broker.
    #[error("no common version of {0:?} with the broker")]
    NotNegotiated(ApiKey),
    /// A request kind this layer cannot send (not an API we know).
    #[error("cannot send this request kind: {0}")]
    UnsupportedRequest(String),
    /// The ApiVersions exchange failed.
    #[error("ApiVersions handshake failed: {0}")]
    Handshake(String),
    /// The broker task has stopped (its call channel is closed or it dropped the answer).
    #[error("the broker task is gone")]
    BrokerGone,
    /// Records that cannot be encoded as a v2 batch.
    #[error("cannot encode a record batch: {0}")]
    Records(String),
}
