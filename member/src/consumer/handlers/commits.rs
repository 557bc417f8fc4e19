//! Commits under the member epoch (OffsetCommit's generation id field carries it): the
//! auto-commit of all consumed offsets, the commit a reconciliation makes before giving
//! partitions up, and their answers (STALE_MEMBER_EPOCH per profile).

use groupsim_wire::{error_codes as codes, error_name};
use kafka_protocol::messages::{OffsetCommitResponse, RequestKind};

use super::heartbeat::STALE_MEMBER_EPOCH;
use crate::consumer::in_flight::{CommitPurpose, Pending};
use crate::consumer::profile_rules::StaleEpochCommit;
use crate::consumer::reconciliation::Step;
use crate::consumer::timers::Timer;
use crate::consumer::ConsumerGroupMember;
use crate::shared::commit::{answers as commit_answers, request as commit_request};
use crate::shared::in_flight::Sent;
use crate::{probes, MemberEvent, Millis, Target, TopicPartition};

impl ConsumerGroupMember {
    /// `auto.commit.interval.ms`: the consumed position of every owned partition (Java's
    /// `allConsumed`), under the member's epoch.
    pub(in crate::consumer) fn maybe_auto_commit(&mut self, now: Millis) {
        if self.in_flight.any(|p| matches!(p, Pending::OffsetCommit { .. })) {
            return;
        }
        match self.timers.get(Timer::AutoCommit) {
            None => {
                self.timers.set(Timer::AutoCommit, now + self.config.commit_interval_ms);
                return;
            }
            Some(t) if t > now => return,
            Some(_) => {}
        }
        self.timers.set(Timer::AutoCommit, now + self.config.commit_interval_ms);
        let owned: Vec<TopicPartition> = self
            .positions
            .assigned
            .iter()
            .filter(|tp| !self.reconciliation.pending_revocation.contains(*tp))
            .cloned()
            .collect();
        let offsets = self.positions.processed_of(&owned);
        if !offsets.is_empty() {
            self.send_commit(offsets, CommitPurpose::Auto);
        }
    }

    pub(in crate::consumer) fn send_commit(
        &mut self,
        offsets: Vec<(TopicPartition, i64)>,
        purpose: CommitPurpose,
    ) {
        let Some(node) = self.discovery.coordinator else {
            return;
        };
        let (member_id, epoch) = (self.membership.member_id.clone(), self.membership.epoch);
        let req = commit_request(&self.config, epoch, &member_id, &offsets);
        for (tp, offset) in &offsets {
            self.emit(MemberEvent::CommitSent {
                member_id: member_id.clone(),
                generation: epoch,
                partition: tp.clone(),
                offset: *offset,
            });
        }
        let pending = Pending::OffsetCommit { offsets, purpose, epoch: self.positions.epoch };
        let timeout = self.config.request_timeout_ms;
        self.send(Target::Coordinator(node), RequestKind::OffsetCommit(req), timeout, pending);
    }

    pub(in crate::consumer) fn on_offset_commit(
        &mut self,
        now: Millis,
        sent: &Sent,
        offsets: Vec<(TopicPartition, i64)>,
        purpose: CommitPurpose,
        epoch: u64,
        resp: OffsetCommitResponse,
    ) {
        let answers = commit_answers(&resp);
        let mut failed = Vec::new();
        let mut first_error = None;
        for (tp, offset) in offsets {
            let code = answers.get(&tp).copied().unwrap_or(codes::UNKNOWN_SERVER_ERROR);
            probes::error_handled(self.config.profile, "OffsetCommit", code);
            if code != codes::NONE {
                first_error.get_or_insert(code);
                failed.push((tp, offset));
                continue;
            }
            if epoch == self.positions.epoch {
                if let Some(ps) = self.positions.partitions.get_mut(&tp) {
                    ps.committed = Some(offset);
                    ps.commit_floor = Some(offset);
                }
            }
            self.emit(MemberEvent::CommitAcked {
                member_id: sent.member_id.clone(),
                generation: sent.generation,
                partition: tp,
                offset,
            });
        }
        match first_error {
            None => self.revoke_commit_done(purpose),
            Some(code) => {
                let retriable = matches!(
                    code,
                    codes::COORDINATOR_LOAD_IN_PROGRESS
                        | codes::NOT_COORDINATOR
                        | codes::COORDINATOR_NOT_AVAILABLE
                ) || (code == STALE_MEMBER_EPOCH && self.membership.epoch > 0);
                self.on_commit_failed(now, sent, failed, purpose, &error_name(code), retriable);
                if matches!(code, codes::NOT_COORDINATOR | codes::COORDINATOR_NOT_AVAILABLE) {
                    self.coordinator_failed(now, sent.target, "OffsetCommit NOT_COORDINATOR");
                }
                if code == STALE_MEMBER_EPOCH || code == codes::UNKNOWN_MEMBER_ID {
                    self.on_commit_epoch_error(now, code, purpose);
                }
            }
        }
    }

    /// Reports a failed commit and decides what follows: a retriable failure of the commit
    /// before revocation is retried after a backoff (until the rebalance timeout); any other
    /// ends that commit; an auto-commit waits for the next interval.
    pub(in crate::consumer) fn on_commit_failed(
        &mut self,
        now: Millis,
        sent: &Sent,
        offsets: Vec<(TopicPartition, i64)>,
        purpose: CommitPurpose,
        error: &str,
        retriable: bool,
    ) {
        for (tp, offset) in offsets {
            self.emit(MemberEvent::CommitFailed {
                member_id: sent.member_id.clone(),
                generation: sent.generation,
                partition: tp,
                offset,
                error: error.to_string(),
            });
        }
        let before = matches!(self.reconciliation.step, Step::CommitBefore { .. });
        if purpose == CommitPurpose::Revoke && before && retriable {
            self.retry_after_backoff(Timer::CommitRetry, now);
        } else {
            self.revoke_commit_done(purpose);
        }
    }

    /// STALE_MEMBER_EPOCH / UNKNOWN_MEMBER_ID on a commit: librdkafka heartbeats at once and
    /// (stale epoch) commits again after the answer; Java leaves it to the heartbeat loop.
    fn on_commit_epoch_error(&mut self, now: Millis, code: i16, purpose: CommitPurpose) {
        if code == STALE_MEMBER_EPOCH {
            probes::CONSUMER_STALE_EPOCH_COMMIT.hit();
        }
        if self.rules.stale_epoch_commit == StaleEpochCommit::RetryAfterHeartbeat {
            self.timers.set(Timer::Heartbeat, now);
            if code == STALE_MEMBER_EPOCH && purpose == CommitPurpose::Auto {
                self.commit_after_heartbeat = true;
            }
        }
    }

    /// The commit before revocation was answered for good.
    fn revoke_commit_done(&mut self, purpose: CommitPurpose) {
        if purpose != CommitPurpose::Revoke {
            return;
        }
        if let Step::CommitBefore { done, .. } = &mut self.reconciliation.step {
            *done = true;
        }
    }
}
