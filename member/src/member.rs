//! The member state machine. (Helper B fills in.)

use kafka_protocol::messages::RequestKind;

use crate::{MemberEvent, RequestId};

/// Which connection a request travels on. Like the Java client, a member keeps a separate
/// connection to its coordinator even when the coordinator is also a partition leader.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Target {
    /// The ordinary connection to broker `node_id` (Metadata, FindCoordinator, ListOffsets, Fetch).
    Broker(i32),
    /// The coordinator connection to broker `node_id` (group APIs, OffsetFetch, OffsetCommit).
    Coordinator(i32),
}

/// Why a request got no answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RequestFailure {
    /// No answer within the request's timeout; the driver has dropped the connection.
    Timeout,
    /// The connection failed or closed before the answer arrived (or could not be opened).
    Disconnected,
    /// The broker does not support this request at any version the client knows.
    Unsupported(String),
}

/// What a member asks its driver to do.
#[derive(Clone, Debug, PartialEq)]
pub enum MemberOutput {
    /// Send `request` on `target`'s connection; report its answer or failure under `id`.
    /// If no answer comes within `timeout_ms`, close the connection and report `Timeout`.
    Send { id: RequestId, target: Target, request: RequestKind, timeout_ms: u64 },
    /// Close this connection (every request in flight on it fails with `Disconnected`).
    Close(Target),
    /// Record a ground-truth event.
    Event(MemberEvent),
}

/// Sans-IO consumer-group member.
#[derive(Debug)]
pub struct Member {}
