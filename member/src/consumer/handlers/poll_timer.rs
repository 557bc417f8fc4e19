//! `max.poll.interval.ms` under the consumer protocol (KIP-848). Both clients enforce it: the
//! Java consumer's background thread sees its poll timer expire
//! (`ConsumerHeartbeatRequestManager`), librdkafka its max-poll-interval timer. The member sends
//! its leave heartbeat at once — no commit, no revoke callback, it is not polling — and once it
//! is out goes STALE: its partitions are lost (`transitionToStale`, `onPartitionsLost`) and it
//! sends nothing more. When the application polls again (here: the batch that ran over
//! finishes) it rejoins with epoch 0 and the member id it drew (`maybeRejoinStaleMember`).
//!
//! The interval is the rebalance timeout the member sends: the Java consumer sends
//! `max.poll.interval.ms` as it.

use crate::consumer::membership::{MemberState, JOIN_EPOCH};
use crate::consumer::ConsumerGroupMember;
use crate::shared::timers::Timer;
use crate::{probes, Millis};

impl ConsumerGroupMember {
    /// `max.poll.interval.ms`.
    pub(in crate::consumer) fn max_poll_ms(&self) -> u64 {
        self.core.config.rebalance_timeout_ms.max(0) as u64
    }

    /// Whether the poll timer can expire in the current state: not once the member is out, or
    /// leaving (Java's `isLeavingGroup` skips the proactive leave), or already stale.
    pub(in crate::consumer) fn poll_timer_armed(&self) -> bool {
        self.core.started
            && !self.core.finished
            && !matches!(
                self.membership.state,
                MemberState::Unsubscribed
                    | MemberState::Fatal
                    | MemberState::PrepareLeaving
                    | MemberState::Leaving
                    | MemberState::Stale
            )
    }

    /// After batches that finished were acknowledged: a batch still running past the interval
    /// expires the poll timer; a stale member whose overrunning batch is done rejoins.
    pub(in crate::consumer) fn check_poll_timer(&mut self, now: Millis) {
        let stalled = self.core.processor.stalled(now, self.max_poll_ms());
        if self.membership.state == MemberState::Stale {
            if !stalled {
                self.rejoin_stale(now);
            }
            return;
        }
        if !stalled || !self.poll_timer_armed() {
            return;
        }
        probes::CONSUMER_POLL_EXPIRED_STALE.hit();
        self.poll_expired = true;
        self.commit_after_heartbeat = false;
        // `transitionToSendingLeaveGroup(true)`: straight to LEAVING, nothing given up first.
        self.membership.state = MemberState::Leaving;
    }

    /// The leave heartbeat went out (or could not, without a coordinator): the partitions are
    /// lost and the member waits, STALE, for the application's next poll.
    pub(in crate::consumer) fn go_stale(&mut self, now: Millis) {
        self.release_lost(now, "POLL_TIMEOUT");
        self.set_epoch(JOIN_EPOCH);
        self.membership.state = MemberState::Stale;
    }

    /// The application polled again: rejoin with epoch 0, a full heartbeat, at once.
    fn rejoin_stale(&mut self, now: Millis) {
        probes::CONSUMER_STALE_REJOINING.hit();
        self.poll_expired = false;
        self.heartbeat.reset();
        self.membership.state = MemberState::Joining;
        self.core.timers.set(Timer::Heartbeat, now);
    }
}
