//! Requests in flight: one table from request id to what the request was for (each protocol's
//! own `Pending`) and the member's view when it was sent. Whether a request of some kind is under
//! way is read from this table, not mirrored in separate fields.

use std::collections::BTreeMap;

use super::outputs::{RequestFailure, Target};
use crate::RequestId;

/// The member's view when a request was sent: answers are judged against it, so an error for
/// an older generation does not reset the current one (Kafka's KAFKA-9823 fix).
#[derive(Clone, Debug)]
pub(crate) struct Sent {
    pub(crate) target: Target,
    pub(crate) generation: i32,
    pub(crate) member_id: String,
}

/// Why a request got no usable answer, as the member sees it.
#[derive(Clone, Debug)]
pub(crate) enum Failure {
    /// The connection went away (timeout or disconnect): for the coordinator, it is lost.
    Connection(RequestFailure),
    /// An answer came but could not be used (wrong kind), or the API is unsupported: the name
    /// reported in commit failures.
    Unusable(&'static str),
}

impl Failure {
    /// The error name reported in events (`TIMEOUT`, `DISCONNECTED`, ...).
    pub(crate) fn name(&self) -> String {
        match self {
            Failure::Connection(RequestFailure::Timeout) => "TIMEOUT".into(),
            Failure::Connection(RequestFailure::Disconnected) => "DISCONNECTED".into(),
            Failure::Connection(RequestFailure::Unsupported(_)) => "UNSUPPORTED_VERSION".into(),
            Failure::Unusable(name) => (*name).into(),
        }
    }

    /// An unsupported API is unusable; a timeout or disconnect is a lost connection.
    pub(crate) fn from_request_failure(f: RequestFailure) -> Self {
        match f {
            RequestFailure::Unsupported(_) => Failure::Unusable("UNSUPPORTED_VERSION"),
            other => Failure::Connection(other),
        }
    }
}

/// One request in flight.
#[derive(Clone, Debug)]
pub(crate) struct Request<P> {
    pub(crate) sent: Sent,
    pub(crate) pending: P,
}

/// Every request the member sent and has not had an answer or failure for.
#[derive(Debug)]
pub(crate) struct RequestTable<P> {
    requests: BTreeMap<RequestId, Request<P>>,
}

impl<P> Default for RequestTable<P> {
    fn default() -> Self {
        Self { requests: BTreeMap::new() }
    }
}

impl<P> RequestTable<P> {
    pub(crate) fn insert(&mut self, id: RequestId, sent: Sent, pending: P) {
        self.requests.insert(id, Request { sent, pending });
    }

    /// Takes request `id` out of the table (None: unknown, already answered or failed).
    pub(crate) fn remove(&mut self, id: RequestId) -> Option<Request<P>> {
        self.requests.remove(&id)
    }

    /// Ids of the requests sent on `target`'s connection, in id order.
    pub(crate) fn on(&self, target: Target) -> Vec<RequestId> {
        self.requests.iter().filter(|(_, r)| r.sent.target == target).map(|(id, _)| *id).collect()
    }

    /// Whether a request in flight is one `f` selects.
    pub(crate) fn any(&self, f: impl Fn(&P) -> bool) -> bool {
        self.requests.values().any(|r| f(&r.pending))
    }

    /// Every pending entry, for in-place changes.
    pub(crate) fn pending_mut(&mut self) -> impl Iterator<Item = &mut P> {
        self.requests.values_mut().map(|r| &mut r.pending)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsupported_is_unusable_and_timeouts_lose_the_connection() {
        let f = Failure::from_request_failure(RequestFailure::Unsupported("x".into()));
        assert!(matches!(f, Failure::Unusable(_)));
        assert_eq!(f.name(), "UNSUPPORTED_VERSION");
        let f = Failure::from_request_failure(RequestFailure::Timeout);
        assert!(matches!(f, Failure::Connection(_)));
        assert_eq!(f.name(), "TIMEOUT");
    }
}
