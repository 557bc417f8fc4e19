//! Commits under the member epoch (OffsetCommit's generation id field carries it): the
//! auto-commit of all consumed offsets, the commit a reconciliation makes before giving
//! partitions up, and their answers (STALE_MEMBER_EPOCH per profile).

use crate::consumer::profile_rules::StaleEpochCommit;
use crate::consumer::reconciliation::Step;
use crate::consumer::ConsumerGroupMember;
use crate::shared::handlers::prelude::*;
use crate::shared::in_flight::CommitPurpose;
use crate::shared::timers::Timer;
use crate::{probes, Millis, TopicPartition};
use groupsim_wire::error_codes as codes;

impl ConsumerGroupMember {
    /// `auto.commit.interval.ms`: the consumed position of every owned partition not being
    /// revoked (Java's `allConsumed`), under the member's epoch. The first interval starts
    /// when the member is first in the group.
    pub(in crate::consumer) fn maybe_auto_commit(&mut self, now: Millis) {
        if !self.core.timers.is_set(Timer::AutoCommit) {
            self.core.timers.set(Timer::AutoCommit, now + self.core.config.commit_interval_ms);
            return;
        }
        self.auto_commit(now, |m| {
            let revoking = &m.reconciliation.pending_revocation;
            let owned: Vec<TopicPartition> = m
                .core
                .positions
                .assigned
                .iter()
                .filter(|tp| !revoking.contains(*tp))
                .cloned()
                .collect();
            m.consumed_of(&owned)
        });
    }

    /// The offsets a commit of `tps` sends: their processed positions (bug
    /// `commits_unprocessed_positions` moves them past batches in progress).
    pub(in crate::consumer) fn consumed_of(
        &self,
        tps: &[TopicPartition],
    ) -> Vec<(TopicPartition, i64)> {
        let mut offsets = self.core.positions.processed_of(tps);
        self.commit_past_batches_in_progress(&mut offsets);
        offsets
    }

    /// What follows a failed commit (its `CommitFailed` events are out): a retriable failure
    /// of the commit before revocation is retried after a backoff (until the rebalance
    /// timeout); any other ends that commit; an auto-commit waits for the next interval.
    pub(in crate::consumer) fn after_commit_failed(
        &mut self,
        now: Millis,
        purpose: CommitPurpose,
        retriable: bool,
    ) {
        let before = matches!(self.reconciliation.step, Step::CommitBefore { .. });
        if purpose == CommitPurpose::Revoke && before && retriable {
            self.retry_after_backoff(Timer::CommitRetry, now);
        } else {
            self.revoke_commit_done(purpose);
        }
    }

    /// STALE_MEMBER_EPOCH / UNKNOWN_MEMBER_ID on a commit: librdkafka heartbeats at once and
    /// (stale epoch) commits again after the answer; Java leaves it to the heartbeat loop.
    pub(in crate::consumer) fn on_commit_epoch_error(
        &mut self,
        now: Millis,
        code: i16,
        purpose: CommitPurpose,
    ) {
        if code == codes::STALE_MEMBER_EPOCH {
            probes::CONSUMER_STALE_EPOCH_COMMIT.hit();
        }
        if self.rules.stale_epoch_commit == StaleEpochCommit::RetryAfterHeartbeat {
            self.core.timers.set(Timer::Heartbeat, now);
            if code == codes::STALE_MEMBER_EPOCH && purpose == CommitPurpose::Auto {
                self.commit_after_heartbeat = true;
            }
        }
    }

    /// The commit before revocation was answered for good.
    pub(in crate::consumer) fn revoke_commit_done(&mut self, purpose: CommitPurpose) {
        if purpose != CommitPurpose::Revoke {
            return;
        }
        if let Step::CommitBefore { done, .. } = &mut self.reconciliation.step {
            *done = true;
        }
    }
}
