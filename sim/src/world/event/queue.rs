//! The event world's one queue: every future happening (a frame arriving, a timer coming due, a
//! process starting, the world's own schedule) waits here, keyed by its simulated instant and a
//! sequence number. The sequence number breaks ties in the order events were queued, so two runs
//! of one seed pop the same events in the same order.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use groupsim_wire::Millis;

/// A connection's index in the network (never reused within a run).
pub(super) type ConnId = usize;

/// One direction of a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Dir {
    /// From the member to the broker.
    ToBroker,
    /// From the broker to the member.
    ToClient,
}

/// What can happen at an instant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Event {
    /// The world's own work may be due (producer, liveness checks, faults, undos).
    Wake,
    /// The frame at the front of one direction of a connection may have arrived.
    Arrive { conn: ConnId, dir: Dir },
    /// A broker took a connection up: its client learns it (TCP's SYN-ACK, which turmoil hands
    /// over without a network delay).
    Accepted { conn: ConnId },
    /// A connection attempt failed (the broker host came back without the connection).
    Refused { conn: ConnId },
    /// A broker serves the next request waiting on a connection.
    ServeNext { node: i32, conn: ConnId },
    /// A broker's coordinator timer may be due.
    BrokerTimer { node: i32 },
    /// A member process starts, or starts again after a crash or leave.
    MemberStart { member: usize },
    /// A member's timer may be due (its core's, a request deadline, its scheduled leave).
    MemberTimer { member: usize },
    /// A member's stop-the-world pause ends.
    PauseEnd { member: usize },
}

/// One queued event: ordered by instant, then by the order it was queued.
#[derive(Debug)]
struct Entry {
    at: Millis,
    seq: u64,
    event: Event,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}

impl Eq for Entry {}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.at, self.seq).cmp(&(other.at, other.seq))
    }
}

/// A min-queue of events by (instant, sequence number).
#[derive(Debug, Default)]
pub(super) struct EventQueue {
    heap: BinaryHeap<Reverse<Entry>>,
    next_seq: u64,
}

impl EventQueue {
    /// Queues `event` at `at`.
    pub(super) fn push(&mut self, at: Millis, event: Event) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Reverse(Entry { at, seq, event }));
    }

    /// The instant of the earliest event, if any.
    pub(super) fn peek_at(&self) -> Option<Millis> {
        self.heap.peek().map(|Reverse(e)| e.at)
    }

    /// Takes the earliest event (the first queued among those at the same instant).
    pub(super) fn pop(&mut self) -> Option<(Millis, Event)> {
        self.heap.pop().map(|Reverse(e)| (e.at, e.event))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_by_instant_then_in_queueing_order() {
        let mut q = EventQueue::default();
        q.push(10, Event::MemberTimer { member: 1 });
        q.push(5, Event::Wake);
        q.push(10, Event::MemberTimer { member: 0 });
        q.push(5, Event::BrokerTimer { node: 2 });
        assert_eq!(q.peek_at(), Some(5));
        let order: Vec<(Millis, Event)> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(
            order,
            [
                (5, Event::Wake),
                (5, Event::BrokerTimer { node: 2 }),
                (10, Event::MemberTimer { member: 1 }),
                (10, Event::MemberTimer { member: 0 }),
            ]
        );
        assert_eq!(q.peek_at(), None);
    }
}
