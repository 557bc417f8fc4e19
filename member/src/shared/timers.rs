//! Every deadline a member keeps, in one table keyed by [`Timer`] kind: its `poll_timeout` is the
//! earliest deadline not on hold.
//!
//! Retry backoffs, the next heartbeat and the next auto-commit are set and read by the member's
//! logic. The wakeups derived from other state (a batch finishing, the revoke callback, the
//! `max.poll.interval.ms` limit) are written after every input, as are the holds: a heartbeat
//! or auto-commit deadline that is due but cannot act now (no coordinator, not in the group,
//! one already in flight) keeps its value but does not wake the member.

use std::collections::{BTreeMap, BTreeSet};

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

/// The deadline table.
#[derive(Debug)]
pub(crate) struct Timers<T = Timer> {
    deadlines: BTreeMap<T, Millis>,
    held: BTreeSet<T>,
}

impl<T> Default for Timers<T> {
    fn default() -> Self {
        Self { deadlines: BTreeMap::new(), held: BTreeSet::new() }
    }
}

impl<T: Ord + Copy> Timers<T> {
    /// Arms (or moves) `timer` to fire at `at`.
    pub(crate) fn set(&mut self, timer: T, at: Millis) {
        self.deadlines.insert(timer, at);
    }

    /// Arms `timer` at `at`, or cancels it when `at` is None.
    pub(crate) fn set_or_cancel(&mut self, timer: T, at: Option<Millis>) {
        match at {
            Some(at) => self.set(timer, at),
            None => self.cancel(timer),
        }
    }

    /// Forgets `timer`.
    pub(crate) fn cancel(&mut self, timer: T) {
        self.deadlines.remove(&timer);
    }

    /// When `timer` fires, if it is armed.
    pub(crate) fn get(&self, timer: T) -> Option<Millis> {
        self.deadlines.get(&timer).copied()
    }

    /// Whether `timer` is armed.
    pub(crate) fn is_set(&self, timer: T) -> bool {
        self.deadlines.contains_key(&timer)
    }

    /// Whether `timer` is armed and due by `now`.
    pub(crate) fn is_due(&self, timer: T, now: Millis) -> bool {
        self.get(timer).is_some_and(|t| t <= now)
    }

    /// Forgets every timer `which` selects that is due by `now` (an expired backoff).
    pub(crate) fn expire(&mut self, now: Millis, which: impl Fn(T) -> bool) {
        self.deadlines.retain(|timer, at| !which(*timer) || *at > now);
    }

    /// Puts `timer` on hold (or releases it): a held timer keeps its deadline but is left out
    /// of [`Self::next_deadline`].
    pub(crate) fn hold(&mut self, timer: T, held: bool) {
        if held {
            self.held.insert(timer);
        } else {
            self.held.remove(&timer);
        }
    }

    /// The earliest deadline of every armed timer not on hold.
    pub(crate) fn next_deadline(&self) -> Option<Millis> {
        if self.held.is_empty() {
            return self.deadlines.values().copied().min();
        }
        self.deadlines.iter().filter(|(t, _)| !self.held.contains(t)).map(|(_, at)| *at).min()
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
}
