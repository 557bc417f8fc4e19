//! Every deadline the member keeps, in one table: `Member::poll_timeout` is the
//! earliest deadline not on hold.
//!
//! Retry backoffs, the next heartbeat and the next auto-commit are set and read by the member's
//! logic. The wakeups derived from other state (a batch finishing, the revoke callback, the
//! `max.poll.interval.ms` limit) are written after every input, as are the holds: a heartbeat
//! or auto-commit deadline that is due but cannot act now (no coordinator, not in a stable
//! generation, one already in flight) keeps its value but does not wake the member.

/// A kind of deadline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Timer {
    /// The first batch being processed (or detached) finishes.
    ProcessingDone,
    /// The revoke callback returns, or (Java) runs past `max.poll.interval.ms`.
    RevokeCallback,
    /// Java: a batch processed for longer than `max.poll.interval.ms` stalls the poll loop.
    MaxPollInterval,
    /// Metadata may be sent again (at most one per `retry.backoff.ms`).
    MetadataRetry,
    /// Metadata is due for its periodic refresh (`metadata.max.age.ms`).
    MetadataRefresh,
    /// FindCoordinator may be retried.
    FindCoordinatorRetry,
    /// JoinGroup may be retried.
    JoinRetry,
    /// OffsetFetch may be retried.
    OffsetFetchRetry,
    /// ListOffsets may be retried.
    ListOffsetsRetry,
    /// Fetch from this broker may be sent again.
    FetchRetry(i32),
    /// The next heartbeat is due.
    Heartbeat,
    /// The next auto-commit is due.
    AutoCommit,
}

/// The member's deadline table.
pub(super) type Timers = crate::shared::timers::Timers<Timer>;

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
