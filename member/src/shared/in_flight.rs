//! Requests in flight: one table from request id to what the request was for ([`Pending`]) and
//! the member's view when it was sent. Whether a request of some kind is under way is read from
//! this table, not mirrored in separate fields.

use crate::shared::positions::FetchPositions;
use std::collections::{BTreeMap, BTreeSet};

use super::outputs::{RequestFailure, Target};
use crate::{Millis, RequestId, TopicPartition};

/// Why a commit was sent: periodic auto-commit; the commit before giving partitions up (classic:
/// the single commit before an eager revoke or a cooperative rejoin; KIP-848: the commit a
/// reconciliation or a leave makes); or a classic cooperative member's commit in its revoke
/// callback of the partitions the new assignment took away.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CommitPurpose {
    Auto,
    Revoke,
    RevokeCallback,
}

/// A commit in flight: the offsets, why, and the assignment epoch it was sent in.
#[derive(Clone, Debug)]
pub(crate) struct CommitSent {
    pub(crate) offsets: Vec<(TopicPartition, i64)>,
    pub(crate) purpose: CommitPurpose,
    pub(crate) epoch: u64,
}

/// What a request in flight was for, with what the member needs to read its answer. The
/// protocol-neutral requests come first; the group requests of each protocol follow (a member
/// never sends the other protocol's).
#[derive(Clone, Debug)]
pub(crate) enum Pending {
    Metadata,
    FindCoordinator,
    OffsetCommit(CommitSent),
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
        positions: FetchPositions,
        /// When it was sent (an empty answer paces the next one from here).
        sent_ms: Millis,
    },
    /// Classic.
    JoinGroup,
    /// Classic.
    SyncGroup,
    /// Classic. `awaited`: the member waits for this answer before the next heartbeat. Sending
    /// JoinGroup stops the wait (the new generation heartbeats afresh); a late answer is still
    /// read.
    Heartbeat {
        awaited: bool,
    },
    /// Classic: a graceful LeaveGroup.
    LeaveGroup,
    /// Classic: LeaveGroup of a member that carries on and rejoins whatever the answer (after a
    /// poll timeout; kafka-go after a failed rebalance round).
    LeaveAndRejoin,
    /// KIP-848. `leave`: the heartbeat that leaves the group (epoch -1 or -2).
    ConsumerGroupHeartbeat {
        leave: bool,
    },
}

impl Pending {
    /// The Kafka API's name, for logs and failure reasons.
    pub(crate) fn api(&self) -> &'static str {
        match self {
            Pending::Metadata => "Metadata",
            Pending::FindCoordinator => "FindCoordinator",
            Pending::OffsetCommit(_) => "OffsetCommit",
            Pending::OffsetFetch { .. } => "OffsetFetch",
            Pending::ListOffsets { .. } => "ListOffsets",
            Pending::Fetch { .. } => "Fetch",
            Pending::JoinGroup => "JoinGroup",
            Pending::SyncGroup => "SyncGroup",
            Pending::Heartbeat { .. } => "Heartbeat",
            Pending::LeaveGroup | Pending::LeaveAndRejoin => "LeaveGroup",
            Pending::ConsumerGroupHeartbeat { .. } => "ConsumerGroupHeartbeat",
        }
    }
}

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
pub(crate) struct Request {
    pub(crate) sent: Sent,
    pub(crate) pending: Pending,
}

/// Every request the member sent and has not had an answer or failure for.
#[derive(Debug, Default)]
pub(crate) struct InFlight {
    requests: BTreeMap<RequestId, Request>,
}

impl InFlight {
    pub(crate) fn insert(&mut self, id: RequestId, sent: Sent, pending: Pending) {
        self.requests.insert(id, Request { sent, pending });
    }

    /// Takes request `id` out of the table (None: unknown, already answered or failed).
    pub(crate) fn remove(&mut self, id: RequestId) -> Option<Request> {
        self.requests.remove(&id)
    }

    /// Ids of the requests sent on `target`'s connection, in id order.
    pub(crate) fn on(&self, target: Target) -> Vec<RequestId> {
        self.requests.iter().filter(|(_, r)| r.sent.target == target).map(|(id, _)| *id).collect()
    }

    /// Whether a request in flight is one `f` selects.
    pub(crate) fn any(&self, f: impl Fn(&Pending) -> bool) -> bool {
        self.requests.values().any(|r| f(&r.pending))
    }

    pub(crate) fn has_metadata(&self) -> bool {
        self.any(|p| matches!(p, Pending::Metadata))
    }

    pub(crate) fn has_find_coordinator(&self) -> bool {
        self.any(|p| matches!(p, Pending::FindCoordinator))
    }

    pub(crate) fn has_offset_fetch(&self) -> bool {
        self.any(|p| matches!(p, Pending::OffsetFetch { .. }))
    }

    pub(crate) fn has_commit(&self) -> bool {
        self.any(|p| matches!(p, Pending::OffsetCommit(_)))
    }

    /// A Fetch to broker `node`.
    pub(crate) fn has_fetch_to(&self, node: i32) -> bool {
        self.any(|p| matches!(p, Pending::Fetch { node: n, .. } if *n == node))
    }

    /// Classic: a graceful LeaveGroup (not the one after a poll timeout).
    pub(crate) fn has_leave(&self) -> bool {
        self.any(|p| matches!(p, Pending::LeaveGroup))
    }

    /// Classic: a Heartbeat whose answer the member waits for.
    pub(crate) fn has_awaited_heartbeat(&self) -> bool {
        self.any(|p| matches!(p, Pending::Heartbeat { awaited: true }))
    }

    /// KIP-848 reconciliation: Fetch, OffsetFetch and ListOffsets requests of assignment epoch
    /// `old` go on for the partitions in `kept` as requests of epoch `new`; the partitions
    /// given up are forgotten, so their answers are not read.
    pub(crate) fn carry_over(&mut self, old: u64, new: u64, kept: &BTreeSet<TopicPartition>) {
        for p in self.requests.values_mut().map(|r| &mut r.pending) {
            match p {
                Pending::Fetch { epoch, positions, .. } if *epoch == old => {
                    positions.retain(|tp| kept.contains(tp));
                    *epoch = new;
                }
                Pending::OffsetFetch { epoch, partitions }
                | Pending::ListOffsets { epoch, partitions }
                    if *epoch == old =>
                {
                    partitions.retain(|tp| kept.contains(tp));
                    *epoch = new;
                }
                _ => {}
            }
        }
    }

    /// Classic: stops waiting for every Heartbeat in flight (see [`Pending::Heartbeat`]).
    pub(crate) fn stop_awaiting_heartbeats(&mut self) {
        for p in self.requests.values_mut().map(|r| &mut r.pending) {
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
        let positions = FetchPositions::default();
        let fetch = Pending::Fetch { epoch: 0, node: 1, positions, sent_ms: 0 };
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

    #[test]
    fn carried_over_requests_keep_only_the_kept_partitions() {
        let tp = |p| TopicPartition::new("t", p);
        let mut t = InFlight::default();
        let positions = FetchPositions::from_sorted(vec![(tp(0), 5), (tp(1), 7)]);
        t.insert(
            RequestId(1),
            sent(Target::Broker(1)),
            Pending::Fetch { epoch: 3, node: 1, positions, sent_ms: 0 },
        );
        let fetch = Pending::OffsetFetch { epoch: 2, partitions: vec![tp(0)] };
        t.insert(RequestId(2), sent(Target::Coordinator(1)), fetch);
        t.carry_over(3, 4, &[tp(1)].into());
        match t.remove(RequestId(1)).map(|r| r.pending) {
            Some(Pending::Fetch { epoch, positions, .. }) => {
                assert_eq!(
                    (epoch, positions.keys().cloned().collect::<Vec<_>>()),
                    (4, vec![tp(1)])
                );
            }
            other => panic!("{other:?}"),
        }
        match t.remove(RequestId(2)).map(|r| r.pending) {
            Some(Pending::OffsetFetch { epoch, partitions }) => {
                assert_eq!((epoch, partitions), (2, vec![tp(0)]), "another epoch: untouched");
            }
            other => panic!("{other:?}"),
        }
    }

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
