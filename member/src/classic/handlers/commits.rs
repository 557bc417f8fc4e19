//! Auto-commits and the revoke commit: sending OffsetCommit and reading its answer.

use groupsim_wire::{error_codes as codes, error_name};
use kafka_protocol::messages::{OffsetCommitResponse, RequestKind};

use crate::classic::in_flight::{CommitPurpose, Pending, Sent};
use crate::classic::timers::Timer;
use crate::classic::{Member, Target};
use crate::shared::commit;
use crate::{MemberEvent, Millis, TopicPartition};

impl Member {
    pub(in crate::classic) fn maybe_auto_commit(&mut self, now: Millis) {
        if self.discovery.coordinator.is_none()
            || self.in_flight.has_commit()
            || self.timers.get(Timer::AutoCommit).is_none_or(|t| t > now)
        {
            return;
        }
        self.timers.set(Timer::AutoCommit, now + self.config.commit_interval_ms);
        let overcommit = self.config.bugs.skip_revoke_commit_then_overcommit;
        let mut offsets = self.positions.offsets_to_commit(overcommit);
        self.commits.add_extra(&mut offsets);
        if !offsets.is_empty() {
            self.send_commit(offsets, CommitPurpose::Auto);
        }
    }

    pub(in crate::classic) fn send_commit(
        &mut self,
        offsets: Vec<(TopicPartition, i64)>,
        purpose: CommitPurpose,
    ) {
        let Some(node) = self.discovery.coordinator else {
            return;
        };
        let req = commit::request(
            &self.config,
            self.membership.generation,
            &self.membership.member_id,
            &offsets,
        );
        for (tp, offset) in &offsets {
            self.emit(MemberEvent::CommitSent {
                member_id: self.membership.member_id.clone(),
                generation: self.membership.generation,
                partition: tp.clone(),
                offset: *offset,
            });
        }
        let timeout = self.config.request_timeout_ms;
        let epoch = self.positions.epoch;
        let pending = Pending::OffsetCommit { offsets, purpose, epoch };
        self.send(Target::Coordinator(node), RequestKind::OffsetCommit(req), timeout, pending);
    }

    pub(in crate::classic) fn on_offset_commit(
        &mut self,
        now: Millis,
        sent: &Sent,
        offsets: Vec<(TopicPartition, i64)>,
        purpose: CommitPurpose,
        epoch: u64,
        resp: OffsetCommitResponse,
    ) {
        if purpose == CommitPurpose::Revoke && self.config.bugs.revoke_commit_never_completes {
            // Bug (KAFKA-14024): the answer never reaches the code waiting for it.
            self.rebalance.revoke_commit_hung = true;
            return;
        }
        let answers = commit::answers(&resp);
        let mut first_error = None;
        for (tp, offset) in offsets {
            let code = answers.get(&tp).copied().unwrap_or(codes::UNKNOWN_SERVER_ERROR);
            if code == codes::NONE {
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
            } else {
                if code == codes::REBALANCE_IN_PROGRESS
                    && purpose == CommitPurpose::Auto
                    && self.config.bugs.retries_superseded_commit
                {
                    // Bug (spring-kafka #3186): kept for a retry, never dropped.
                    self.commits.saved_for_retry.insert(tp.clone(), offset);
                }
                first_error.get_or_insert(code);
                self.emit(MemberEvent::CommitFailed {
                    member_id: sent.member_id.clone(),
                    generation: sent.generation,
                    partition: tp,
                    offset,
                    error: error_name(code),
                });
            }
        }
        if let Some(code) = first_error {
            let current = self.membership.is_current(sent);
            let handled =
                self.handle_group_error(now, sent, code, "OffsetCommit", current).is_some();
            let retriable = !handled
                || matches!(code, codes::NOT_COORDINATOR | codes::COORDINATOR_NOT_AVAILABLE);
            if purpose == CommitPurpose::Auto
                && (retriable || code == codes::COORDINATOR_LOAD_IN_PROGRESS)
            {
                self.retry_after_backoff(Timer::AutoCommit, now);
            }
        }
        if purpose == CommitPurpose::RevokeCallback {
            // A group error above may have lost the partitions (and ended the callback).
            self.on_revoke_callback_commit_done(now);
        }
    }
}
