//! Requests in flight: one table from request id to what the request was for and the member's
//! view when it was sent. Whether a Metadata, FindCoordinator, OffsetFetch, OffsetCommit,
//! LeaveGroup, Fetch (per broker) or an awaited Heartbeat is under way is read from this table,
//! not mirrored in separate fields.

use std::collections::BTreeMap;

use crate::shared::in_flight::RequestTable;
pub(super) use crate::shared::in_flight::{Failure, Sent};
use crate::shared::outputs::Target;
use crate::{RequestId, TopicPartition};

/// Why a commit was sent: periodic auto-commit, the single commit before giving partitions up
/// (eager) or before rejoining (cooperative), or a cooperative member's commit in its revoke
/// callback of the partitions the new assignment took away.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum CommitPurpose {
    Auto,
    Revoke,
    RevokeCallback,
}

/// What a request in flight was for, with what the member needs to read its answer.
#[derive(Clone, Debug)]
pub(super) enum Pending {
    Metadata,
    FindCoordinator,
    JoinGroup,
    SyncGroup,
    /// `awaited`: the member waits for this answer before the next heartbeat. Sending JoinGroup
    /// stops the wait (the new generation heartbeats afresh); a late answer is still read.
    Heartbeat {
        awaited: bool,
    },
    OffsetCommit {
        offsets: Vec<(TopicPartition, i64)>,
        purpose: CommitPurpose,
        epoch: u64,
    },
    OffsetFetch {
        epoch: u64,
        partitions: Vec<TopicPartition>,
    },
    ListOffsets {
        epoch: u64,
        partitions: Vec<TopicPartition>,
    },
    Fetch {
        epoch: u64,
        node: i32,
        positions: BTreeMap<TopicPartition, i64>,
    },
    LeaveGroup,
    /// LeaveGroup after a poll timeout: the member carries on (rejoins) whatever the answer.
    PollTimeoutLeave,
}

impl Pending {
    /// The Kafka API's name, for logs and failure reasons.
    pub(super) fn api(&self) -> &'static str {
        match self {
            Pending::Metadata => "Metadata",
            Pending::FindCoordinator => "FindCoordinator",
            Pending::JoinGroup => "JoinGroup",
            Pending::SyncGroup => "SyncGroup",
            Pending::Heartbeat { .. } => "Heartbeat",
            Pending::OffsetCommit { .. } => "OffsetCommit",
            Pending::OffsetFetch { .. } => "OffsetFetch",
            Pending::ListOffsets { .. } => "ListOffsets",
            Pending::Fetch { .. } => "Fetch",
            Pending::LeaveGroup | Pending::PollTimeoutLeave => "LeaveGroup",
        }
    }
}

/// One request in flight.
pub(super) type Request = crate::shared::in_flight::Request<Pending>;

/// Every request the member sent and has not had an answer or failure for.
#[derive(Debug, Default)]
pub(super) struct InFlight {
    requests: RequestTable<Pending>,
}

impl InFlight {
    pub(super) fn insert(&mut self, id: RequestId, sent: Sent, pending: Pending) {
        self.requests.insert(id, sent, pending);
    }

    /// Takes request `id` out of the table (None: unknown, already answered or failed).
    pub(super) fn remove(&mut self, id: RequestId) -> Option<Request> {
        self.requests.remove(id)
    }

    /// Ids of the requests sent on `target`'s connection, in id order.
    pub(super) fn on(&self, target: Target) -> Vec<RequestId> {
        self.requests.on(target)
    }

    fn any(&self, f: impl Fn(&Pending) -> bool) -> bool {
        self.requests.any(f)
    }

    pub(super) fn has_metadata(&self) -> bool {
        self.any(|p| matches!(p, Pending::Metadata))
    }

    pub(super) fn has_find_coordinator(&self) -> bool {
        self.any(|p| matches!(p, Pending::FindCoordinator))
    }

    pub(super) fn has_offset_fetch(&self) -> bool {
        self.any(|p| matches!(p, Pending::OffsetFetch { .. }))
    }

    pub(super) fn has_commit(&self) -> bool {
        self.any(|p| matches!(p, Pending::OffsetCommit { .. }))
    }

    /// A graceful LeaveGroup (not the one after a poll timeout).
    pub(super) fn has_leave(&self) -> bool {
        self.any(|p| matches!(p, Pending::LeaveGroup))
    }

    /// A Heartbeat whose answer the member waits for.
    pub(super) fn has_awaited_heartbeat(&self) -> bool {
        self.any(|p| matches!(p, Pending::Heartbeat { awaited: true }))
    }

    /// A Fetch to broker `node`.
    pub(super) fn has_fetch_to(&self, node: i32) -> bool {
        self.any(|p| matches!(p, Pending::Fetch { node: n, .. } if *n == node))
    }

    /// Stops waiting for every Heartbeat in flight (see [`Pending::Heartbeat`]).
    pub(super) fn stop_awaiting_heartbeats(&mut self) {
        for p in self.requests.pending_mut() {
            if let Pending::Heartbeat { awaited } = p {
                *awaited = false;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sent(target: Target) -> Sent {
        Sent { target, generation: 1, member_id: "m".into() }
    }

    #[test]
    fn what_is_in_flight_is_read_from_the_table() {
        let mut t = InFlight::default();
        assert!(!t.has_metadata() && !t.has_commit() && !t.has_fetch_to(1));
        t.insert(RequestId(1), sent(Target::Broker(0)), Pending::Metadata);
        let fetch = Pending::Fetch { epoch: 0, node: 1, positions: BTreeMap::new() };
        t.insert(RequestId(2), sent(Target::Broker(1)), fetch);
        assert!(t.has_metadata());
        assert!(t.has_fetch_to(1) && !t.has_fetch_to(2));
        assert!(t.remove(RequestId(1)).is_some());
        assert!(!t.has_metadata());
        assert!(t.remove(RequestId(1)).is_none(), "an answered request is unknown");
    }

    #[test]
    fn a_heartbeat_stops_being_awaited_but_stays_in_flight() {
        let mut t = InFlight::default();
        t.insert(RequestId(1), sent(Target::Coordinator(3)), Pending::Heartbeat { awaited: true });
        assert!(t.has_awaited_heartbeat());
        t.stop_awaiting_heartbeats();
        assert!(!t.has_awaited_heartbeat());
        let r = t.remove(RequestId(1)).expect("still in flight");
        assert!(matches!(r.pending, Pending::Heartbeat { awaited: false }));
    }

    #[test]
    fn requests_on_a_connection_in_id_order() {
        let mut t = InFlight::default();
        t.insert(RequestId(3), sent(Target::Coordinator(1)), Pending::JoinGroup);
        t.insert(RequestId(1), sent(Target::Coordinator(1)), Pending::Heartbeat { awaited: true });
        t.insert(RequestId(2), sent(Target::Broker(1)), Pending::Metadata);
        assert_eq!(t.on(Target::Coordinator(1)), vec![RequestId(1), RequestId(3)]);
        assert!(!t.has_leave() && !t.has_offset_fetch());
    }
}
