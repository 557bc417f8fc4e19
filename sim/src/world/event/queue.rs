//! The event world's one queue: every future happening (a frame arriving, a timer coming due, a
//! process starting, the world's own schedule) waits here, keyed by its simulated instant and a
//! sequence number. The sequence number breaks ties in the order events were queued, so two runs
//! of one seed pop the same events in the same order. A shuffled queue breaks ties first by a
//! key drawn from the seed at queueing, so events due at one instant run in a seeded order
//! (turmoil shuffles its hosts each step; madsim draws ties).

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use groupsim_wire::Millis;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

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
    /// A broker closes the connections idle past `connections.max.idle.ms`.
    IdleSweep { node: i32 },
}

/// One queued event: ordered by instant, then by the order it was queued.
#[derive(Debug)]
struct Entry {
    at: Millis,
    /// Drawn when the queue is shuffled, else 0.
    tie: u64,
    seq: u64,
    event: Event,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.tie, self.seq) == (other.at, other.tie, other.seq)
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
        (self.at, self.tie, self.seq).cmp(&(other.at, other.tie, other.seq))
    }
}

/// A min-queue of events by (instant, tie key, sequence number).
#[derive(Debug, Default)]
pub(super) struct EventQueue {
    heap: BinaryHeap<Reverse<Entry>>,
    next_seq: u64,
    /// Draws the tie keys of a shuffled queue.
    ties: Option<ChaCha8Rng>,
}

impl EventQueue {
    /// A queue whose same-instant events run in an order drawn from `rng`.
    pub(super) fn shuffled(rng: ChaCha8Rng) -> Self {
        crate::probes::NET_TIES_DRAWN.hit();
        Self { ties: Some(rng), ..Self::default() }
    }

    /// Queues `event` at `at`.
    pub(super) fn push(&mut self, at: Millis, event: Event) {
        let seq = self.next_seq;
        self.next_seq += 1;
        let tie = self.ties.as_mut().map_or(0, |rng| rng.next_u64());
        self.heap.push(Reverse(Entry { at, tie, seq, event }));
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

    #[test]
    fn a_shuffled_queue_keeps_instants_and_draws_the_order_within_one() {
        let run = |seed: u64| {
            let mut q = EventQueue::shuffled(crate::rng::stream(seed, crate::rng::Stream::Ties));
            for member in 0..8 {
                q.push(10, Event::MemberTimer { member });
            }
            q.push(5, Event::Wake);
            std::iter::from_fn(|| q.pop()).collect::<Vec<_>>()
        };
        let first = run(1);
        assert_eq!(first[0], (5, Event::Wake), "an earlier instant still runs first");
        assert!(first[1..].iter().all(|(at, _)| *at == 10));
        assert_eq!(first, run(1), "the same seed, the same order");
        let orders: std::collections::BTreeSet<_> =
            (0..8).map(|s| format!("{:?}", run(s))).collect();
        assert!(orders.len() > 1, "seeds draw different orders");
        assert!(orders.iter().any(|o| *o != format!("{:?}", run_in_order())));
    }

    fn run_in_order() -> Vec<(Millis, Event)> {
        let mut q = EventQueue::default();
        for member in 0..8 {
            q.push(10, Event::MemberTimer { member });
        }
        q.push(5, Event::Wake);
        std::iter::from_fn(|| q.pop()).collect()
    }
}
