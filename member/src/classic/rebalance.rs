//! Giving partitions up and taking them on (Kafka's `ConsumerCoordinator.onJoinPrepare` /
//! `onJoinComplete`): the revoke callback's progress, the one revoke commit per rebalance, and
//! for the incremental cooperative protocol (KIP-429) the partitions taken away and revoked
//! once the callback returns.

use crate::{Millis, TopicPartition};

/// How far the revoke callback of the current rebalance has come.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum RevokeStage {
    /// Nothing under way.
    Idle,
    /// The revoke callback runs until `until` (it started at `since`).
    Callback { since: Millis, until: Millis },
    /// The callback returned.
    Done,
}

/// Revoke and assign state.
#[derive(Debug)]
pub(super) struct Rebalance {
    /// Incremental cooperative rebalancing (KIP-429) is in use.
    pub(super) cooperative: bool,
    /// The revoke callback's progress in the current rebalance.
    pub(super) revoke_stage: RevokeStage,
    /// The revoke commit was sent in this rebalance (it is tried once).
    pub(super) revoke_commit_attempted: bool,
    /// Cooperative: partitions taken away by the new assignment, revoked when the callback ends.
    pub(super) pending_revoke: Vec<TopicPartition>,
    /// Cooperative: the processed offsets of `pending_revoke` not committed yet, for the commit
    /// the revoke callback makes (Java: commitSync in `onPartitionsRevoked`).
    pub(super) revoked_progress: Vec<(TopicPartition, i64)>,
    /// Cooperative: that commit is in flight; the callback goes on when it is answered.
    pub(super) callback_commit_in_flight: bool,
    /// Extra duration of the next revoke callback (SlowRevoke).
    pub(super) slow_revoke_ms: u64,
    /// The next revoke callback does not return before this instant (SlowRevokeUntil).
    pub(super) revoke_until: Option<Millis>,
    /// Bug `revoke_commit_never_completes`: the revoke commit's answer was lost; the member
    /// waits for it for ever and never rejoins.
    pub(super) revoke_commit_hung: bool,
}

impl Rebalance {
    pub(super) fn new(cooperative: bool) -> Self {
        Self {
            cooperative,
            revoke_stage: RevokeStage::Idle,
            revoke_commit_attempted: false,
            pending_revoke: Vec::new(),
            revoked_progress: Vec::new(),
            callback_commit_in_flight: false,
            slow_revoke_ms: 0,
            revoke_until: None,
            revoke_commit_hung: false,
        }
    }

    /// Whether the revoke callback is running (or, cooperative, waiting for its commit).
    pub(super) fn in_callback(&self) -> bool {
        self.callback_commit_in_flight || matches!(self.revoke_stage, RevokeStage::Callback { .. })
    }

    /// When the running revoke callback needs attention: when it returns, or earlier when it
    /// runs past `max_poll_ms` (only given where `max.poll.interval.ms` is enforced).
    pub(super) fn callback_deadline(&self, max_poll_ms: Option<u64>) -> Option<Millis> {
        match self.revoke_stage {
            RevokeStage::Callback { since, until } => match max_poll_ms {
                Some(max_poll) => Some(until.min(since + max_poll)),
                None => Some(until),
            },
            _ => None,
        }
    }

    /// The application is slow to give its partitions up until `at`: the revoke callback under
    /// way, or else the next one to start, does not return before `at`.
    pub(super) fn slow_callback_until(&mut self, at: Millis) {
        match &mut self.revoke_stage {
            RevokeStage::Callback { until, .. } => *until = (*until).max(at),
            _ => self.revoke_until = Some(self.revoke_until.map_or(at, |u| u.max(at))),
        }
    }

    /// Starts the revoke callback at `now` for `extra_ms` (plus any injected SlowRevoke delay,
    /// which is used up); returns true while it runs (false when it took no time and is done).
    pub(super) fn start_callback(&mut self, now: Millis, callback_ms: u64) -> bool {
        let extra = std::mem::take(&mut self.slow_revoke_ms) + callback_ms;
        let until = (now + extra).max(self.revoke_until.take().unwrap_or(0));
        if until > now {
            self.revoke_stage = RevokeStage::Callback { since: now, until };
            true
        } else {
            self.revoke_stage = RevokeStage::Done;
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_callback_that_takes_no_time_is_done_at_once() {
        let mut r = Rebalance::new(false);
        assert!(!r.start_callback(100, 0));
        assert_eq!(r.revoke_stage, RevokeStage::Done);
        assert_eq!(r.callback_deadline(Some(10)), None);
    }

    #[test]
    fn a_slow_revoke_lengthens_the_next_callback_only() {
        let mut r = Rebalance::new(false);
        r.slow_revoke_ms = 500;
        assert!(r.start_callback(100, 20));
        assert!(r.in_callback());
        assert_eq!(r.revoke_stage, RevokeStage::Callback { since: 100, until: 620 });
        assert_eq!(r.slow_revoke_ms, 0);
        assert!(!r.start_callback(700, 0));
    }

    #[test]
    fn a_slow_revoke_until_an_instant_holds_the_running_callback_or_else_the_next() {
        let mut r = Rebalance::new(false);
        assert!(r.start_callback(100, 20));
        r.slow_callback_until(1_110);
        assert_eq!(r.revoke_stage, RevokeStage::Callback { since: 100, until: 1_110 });
        // It never shortens a callback.
        r.slow_callback_until(500);
        assert_eq!(r.revoke_stage, RevokeStage::Callback { since: 100, until: 1_110 });
        assert_eq!(r.revoke_until, None);
        r.revoke_stage = RevokeStage::Idle;
        r.slow_callback_until(3_300);
        assert!(r.start_callback(3_000, 0));
        assert_eq!(r.revoke_stage, RevokeStage::Callback { since: 3_000, until: 3_300 });
        assert_eq!(r.revoke_until, None, "used up");
        // An instant already past when the callback starts changes nothing.
        r.revoke_stage = RevokeStage::Idle;
        r.slow_callback_until(3_500);
        assert!(!r.start_callback(4_000, 0));
        assert_eq!(r.revoke_stage, RevokeStage::Done);
    }

    #[test]
    fn the_callback_deadline_is_capped_by_max_poll_where_enforced() {
        let mut r = Rebalance::new(true);
        r.start_callback(1_000, 50_000);
        assert_eq!(r.callback_deadline(None), Some(51_000));
        assert_eq!(r.callback_deadline(Some(30_000)), Some(31_000));
        assert_eq!(r.callback_deadline(Some(90_000)), Some(51_000));
    }
}
