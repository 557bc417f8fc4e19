//! Every deadline a member keeps, in one table keyed by [`Timer`] kind: its `poll_timeout` is the
//! earliest deadline not on hold.
//!
//! Retry backoffs, the next heartbeat and the next auto-commit are set and read by the member's
//! logic. The wakeups derived from other state (a batch finishing, the revoke callback, the
//! `max.poll.interval.ms` limit) are written after every input, as are the holds: a heartbeat
//! or auto-commit deadline that is due but cannot act now (no coordinator, not in the group,
//! one already in flight) keeps its value but does not wake the member.

use crate::Millis;

/// A kind of deadline. Each protocol's member uses the kinds its loop needs (a classic member
/// never arms `CommitRetry`, a KIP-848 member never `JoinRetry` or `MaxPollInterval`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Timer {
    /// The first batch being processed (or detached) finishes.
    ProcessingDone,
    /// The revoke callback returns, or (classic Java) runs past `max.poll.interval.ms`.
    RevokeCallback,
    /// Classic Java: a batch processed for longer than `max.poll.interval.ms` stalls the poll
    /// loop.
    MaxPollInterval,
    /// Metadata may be sent again (at most one per `retry.backoff.ms`).
    MetadataRetry,
    /// Metadata is due for its periodic refresh (`metadata.max.age.ms`).
    MetadataRefresh,
    /// FindCoordinator may be retried.
    FindCoordinatorRetry,
    /// Classic: JoinGroup may be retried.
    JoinRetry,
    /// OffsetFetch may be retried.
    OffsetFetchRetry,
    /// ListOffsets may be retried.
    ListOffsetsRetry,
    /// Fetch from this broker may be sent again.
    FetchRetry(i32),
    /// The next heartbeat is due (KIP-848: the interval the coordinator returned, or a backoff
    /// after an error).
    Heartbeat,
    /// The next auto-commit is due.
    AutoCommit,
    /// KIP-848: the commit before revocation may be retried.
    CommitRetry,
}

impl Timer {
    /// Whether this kind is a retry backoff (forgotten once it runs out).
    pub(crate) fn is_backoff(self) -> bool {
        matches!(
            self,
            Timer::MetadataRetry
                | Timer::FindCoordinatorRetry
                | Timer::JoinRetry
                | Timer::OffsetFetchRetry
                | Timer::ListOffsetsRetry
                | Timer::FetchRetry(_)
                | Timer::CommitRetry
        )
    }
}

/// The kinds of deadline without a broker, each with its own slot in the table.
const SLOTS: usize = 12;

/// Where a timer lives in the table.
enum Key {
    Slot(usize),
    Fetch(i32),
}

impl Timer {
    /// Where this kind lives: its slot, or the fetch retries' list for `FetchRetry`.
    fn key(self) -> Key {
        Key::Slot(match self {
            Timer::ProcessingDone => 0,
            Timer::RevokeCallback => 1,
            Timer::MaxPollInterval => 2,
            Timer::MetadataRetry => 3,
            Timer::MetadataRefresh => 4,
            Timer::FindCoordinatorRetry => 5,
            Timer::JoinRetry => 6,
            Timer::OffsetFetchRetry => 7,
            Timer::ListOffsetsRetry => 8,
            Timer::Heartbeat => 9,
            Timer::AutoCommit => 10,
            Timer::CommitRetry => 11,
            Timer::FetchRetry(node) => return Key::Fetch(node),
        })
    }

    /// The kind in slot `slot` (the inverse of [`Timer::key`]).
    fn of_slot(slot: usize) -> Timer {
        const KINDS: [Timer; SLOTS] = [
            Timer::ProcessingDone,
            Timer::RevokeCallback,
            Timer::MaxPollInterval,
            Timer::MetadataRetry,
            Timer::MetadataRefresh,
            Timer::FindCoordinatorRetry,
            Timer::JoinRetry,
            Timer::OffsetFetchRetry,
            Timer::ListOffsetsRetry,
            Timer::Heartbeat,
            Timer::AutoCommit,
            Timer::CommitRetry,
        ];
        KINDS[slot]
    }
}

/// The table: a slot per kind, and the per-broker fetch retries in a short list (a member
/// fetches from few leaders). Nothing reads the table in an order, only by kind and for the
/// earliest deadline, so a slot array does what an ordered map did at a fraction of the cost
/// of the lookups every input makes.
#[derive(Debug, Default)]
pub(crate) struct Timers {
    slots: [Option<Millis>; SLOTS],
    /// Held kinds, one bit per slot.
    held: u16,
    fetch_retry: Vec<(i32, Millis)>,
    /// Brokers whose fetch retry is held.
    held_fetch: Vec<i32>,
}

impl Timers {
    pub(crate) fn set(&mut self, timer: Timer, at: Millis) {
        match timer.key() {
            Key::Slot(slot) => self.slots[slot] = Some(at),
            Key::Fetch(node) => match self.fetch_retry.iter_mut().find(|(n, _)| *n == node) {
                Some(entry) => entry.1 = at,
                None => self.fetch_retry.push((node, at)),
            },
        }
    }

    pub(crate) fn set_or_cancel(&mut self, timer: Timer, at: Option<Millis>) {
        match at {
            Some(at) => self.set(timer, at),
            None => self.cancel(timer),
        }
    }

    pub(crate) fn cancel(&mut self, timer: Timer) {
        match timer.key() {
            Key::Slot(slot) => self.slots[slot] = None,
            Key::Fetch(node) => self.fetch_retry.retain(|(n, _)| *n != node),
        }
    }

    pub(crate) fn get(&self, timer: Timer) -> Option<Millis> {
        match timer.key() {
            Key::Slot(slot) => self.slots[slot],
            Key::Fetch(node) => {
                self.fetch_retry.iter().find(|(n, _)| *n == node).map(|(_, at)| *at)
            }
        }
    }

    pub(crate) fn is_set(&self, timer: Timer) -> bool {
        self.get(timer).is_some()
    }

    pub(crate) fn is_due(&self, timer: Timer, now: Millis) -> bool {
        self.get(timer).is_some_and(|t| t <= now)
    }

    /// Forgets the timers `which` selects that are due at `now`.
    pub(crate) fn expire(&mut self, now: Millis, which: impl Fn(Timer) -> bool) {
        for (slot, at) in self.slots.iter_mut().enumerate() {
            if at.is_some_and(|at| at <= now) && which(Timer::of_slot(slot)) {
                *at = None;
            }
        }
        self.fetch_retry.retain(|&(node, at)| at > now || !which(Timer::FetchRetry(node)));
    }

    pub(crate) fn hold(&mut self, timer: Timer, held: bool) {
        match timer.key() {
            Key::Slot(slot) if held => self.held |= 1 << slot,
            Key::Slot(slot) => self.held &= !(1 << slot),
            Key::Fetch(node) => {
                self.held_fetch.retain(|n| *n != node);
                if held {
                    self.held_fetch.push(node);
                }
            }
        }
    }

    pub(crate) fn next_deadline(&self) -> Option<Millis> {
        let slots = self
            .slots
            .iter()
            .enumerate()
            .filter(|(slot, _)| self.held & (1 << slot) == 0)
            .filter_map(|(_, at)| *at);
        let fetches = self
            .fetch_retry
            .iter()
            .filter(|(node, _)| !self.held_fetch.contains(node))
            .map(|(_, at)| *at);
        slots.chain(fetches).min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_deadline_is_the_earliest_armed_timer() {
        let mut t = Timers::default();
        assert_eq!(t.next_deadline(), None);
        t.set(Timer::Heartbeat, 300);
        t.set(Timer::FetchRetry(2), 120);
        t.set(Timer::FetchRetry(1), 150);
        t.set(Timer::AutoCommit, 1_000);
        assert_eq!(t.next_deadline(), Some(120));
        t.set(Timer::FetchRetry(2), 500);
        assert_eq!(t.next_deadline(), Some(150), "a re-armed timer moves");
    }

    #[test]
    fn cancelled_timers_are_forgotten() {
        let mut t = Timers::default();
        t.set(Timer::JoinRetry, 10);
        t.set(Timer::MetadataRefresh, 50);
        t.cancel(Timer::JoinRetry);
        assert!(!t.is_set(Timer::JoinRetry));
        assert_eq!(t.next_deadline(), Some(50));
        t.set_or_cancel(Timer::MetadataRefresh, None);
        assert_eq!(t.next_deadline(), None);
    }

    #[test]
    fn held_timers_keep_their_deadline_but_do_not_wake() {
        let mut t = Timers::default();
        t.set(Timer::Heartbeat, 10);
        t.set(Timer::AutoCommit, 40);
        t.hold(Timer::Heartbeat, true);
        assert_eq!(t.next_deadline(), Some(40));
        assert_eq!(t.get(Timer::Heartbeat), Some(10));
        assert!(t.is_due(Timer::Heartbeat, 10));
        t.hold(Timer::Heartbeat, false);
        assert_eq!(t.next_deadline(), Some(10));
    }

    #[test]
    fn expire_forgets_only_due_selected_timers() {
        let mut t = Timers::default();
        t.set(Timer::FetchRetry(1), 100);
        t.set(Timer::FetchRetry(2), 200);
        t.set(Timer::Heartbeat, 50);
        t.expire(150, |k| matches!(k, Timer::FetchRetry(_)));
        assert!(!t.is_set(Timer::FetchRetry(1)));
        assert!(t.is_set(Timer::FetchRetry(2)));
        assert!(t.is_set(Timer::Heartbeat), "not selected");
        assert!(!t.is_due(Timer::FetchRetry(2), 199));
    }

    /// Every kind but `FetchRetry` has a slot of its own, and the slot gives the kind back.
    #[test]
    fn each_kind_has_its_own_slot() {
        for slot in 0..SLOTS {
            assert!(matches!(Timer::of_slot(slot).key(), Key::Slot(s) if s == slot));
        }
        assert!(matches!(Timer::FetchRetry(3).key(), Key::Fetch(3)));
    }

    /// The table answers every question as a map from timer to deadline with a set of held
    /// timers (what it was before it became a slot array) does, over a long random sequence of
    /// operations on every kind and a few brokers.
    #[test]
    fn the_table_behaves_as_a_map_of_deadlines() {
        use std::collections::{BTreeMap, BTreeSet};
        let kinds: Vec<Timer> = (0..SLOTS)
            .map(Timer::of_slot)
            .chain([Timer::FetchRetry(0), Timer::FetchRetry(1), Timer::FetchRetry(7)])
            .collect();
        let (mut table, mut map, mut held) = (Timers::default(), BTreeMap::new(), BTreeSet::new());
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        for _ in 0..20_000 {
            let timer = kinds[next(kinds.len() as u64) as usize];
            let at = next(1_000);
            match next(6) {
                0 | 1 => {
                    table.set(timer, at);
                    map.insert(timer, at);
                }
                2 => {
                    table.cancel(timer);
                    map.remove(&timer);
                }
                3 => {
                    let on = next(2) == 0;
                    table.hold(timer, on);
                    if on {
                        held.insert(timer);
                    } else {
                        held.remove(&timer);
                    }
                }
                4 => {
                    table.expire(at, Timer::is_backoff);
                    map.retain(|t: &Timer, due: &mut u64| !t.is_backoff() || *due > at);
                }
                _ => {}
            }
            let earliest =
                map.iter().filter(|(t, _)| !held.contains(*t)).map(|(_, due)| *due).min();
            assert_eq!(table.next_deadline(), earliest);
            for &k in &kinds {
                assert_eq!(table.get(k), map.get(&k).copied(), "{k:?}");
                assert_eq!(table.is_due(k, at), map.get(&k).is_some_and(|d| *d <= at));
            }
        }
    }
}
