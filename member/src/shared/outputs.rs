//! What a member asks its driver to do, and the driver's words for where a request goes and why
//! it got no answer. [`Outputs`] is the queue the member fills (requests with their ids, closed
//! connections, history events) and the driver drains.

use std::collections::VecDeque;

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

/// The member's outputs in the order produced, and the counter request ids come from.
#[derive(Debug, Default)]
pub(crate) struct Outputs {
    queue: VecDeque<MemberOutput>,
    next_request_id: u64,
}

impl Outputs {
    /// Queues `request` for `target` under a fresh id (ids count up from 1) and returns the id.
    pub(crate) fn send(
        &mut self,
        target: Target,
        request: RequestKind,
        timeout_ms: u64,
    ) -> RequestId {
        self.next_request_id += 1;
        let id = RequestId(self.next_request_id);
        self.queue.push_back(MemberOutput::Send { id, target, request, timeout_ms });
        id
    }

    /// Queues a history event.
    pub(crate) fn emit(&mut self, event: MemberEvent) {
        self.queue.push_back(MemberOutput::Event(event));
    }

    /// Queues closing `target`'s connection.
    pub(crate) fn close(&mut self, target: Target) {
        self.queue.push_back(MemberOutput::Close(target));
    }

    /// The oldest queued output.
    pub(crate) fn pop(&mut self) -> Option<MemberOutput> {
        self.queue.pop_front()
    }
}

#[cfg(test)]
mod tests {
    use kafka_protocol::messages::HeartbeatRequest;

    use super::*;

    #[test]
    fn request_ids_count_up_and_outputs_keep_their_order() {
        let mut out = Outputs::default();
        let a = out.send(Target::Broker(1), RequestKind::Heartbeat(HeartbeatRequest::default()), 5);
        out.emit(MemberEvent::CoordinatorFound { node_id: 1 });
        out.close(Target::Coordinator(1));
        let b = out.send(Target::Broker(2), RequestKind::Heartbeat(HeartbeatRequest::default()), 5);
        assert_eq!((a, b), (RequestId(1), RequestId(2)));
        assert!(matches!(out.pop(), Some(MemberOutput::Send { id: RequestId(1), .. })));
        assert_eq!(
            out.pop(),
            Some(MemberOutput::Event(MemberEvent::CoordinatorFound { node_id: 1 }))
        );
        assert_eq!(out.pop(), Some(MemberOutput::Close(Target::Coordinator(1))));
        assert!(matches!(out.pop(), Some(MemberOutput::Send { target: Target::Broker(2), .. })));
        assert_eq!(out.pop(), None);
    }
}
