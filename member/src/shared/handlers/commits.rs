//! OffsetCommit: sending it under the member's generation (classic) or member epoch (KIP-848),
//! the auto-commit deadline, and reading the per-partition answers.

use groupsim_wire::{error_codes as codes, error_name};
use kafka_protocol::messages::{OffsetCommitResponse, RequestKind};

use crate::shared::commit;
use crate::shared::core::{Plumbing, Protocol};
use crate::shared::in_flight::{CommitPurpose, CommitSent, Pending, Sent};
use crate::shared::outputs::Target;
use crate::shared::timers::Timer;
use crate::{MemberEvent, Millis, TopicPartition};

/// Commits.
pub(crate) trait Commits: Protocol {
    /// The auto-commit, when due: `offsets` says what to commit (nothing: no request).
    fn auto_commit(
        &mut self,
        now: Millis,
        offsets: impl FnOnce(&mut Self) -> Vec<(TopicPartition, i64)>,
    ) {
        if self.auto_commit_due(now) {
            let offsets = offsets(self);
            if !offsets.is_empty() {
                self.send_commit(offsets, CommitPurpose::Auto);
            }
        }
    }

    /// Whether an auto-commit is due now (a coordinator known, no commit in flight, the
    /// deadline passed); if so the next one is armed one `auto.commit.interval.ms` later.
    fn auto_commit_due(&mut self, now: Millis) -> bool {
        let core = self.core_mut();
        if core.discovery.coordinator.is_none()
            || core.in_flight.has_commit()
            || core.timers.get(Timer::AutoCommit).is_none_or(|t| t > now)
        {
            return false;
        }
        core.timers.set(Timer::AutoCommit, now + core.config.commit_interval_ms);
        true
    }

    /// Sends OffsetCommit of `offsets` to the coordinator (nothing without one).
    fn send_commit(&mut self, offsets: Vec<(TopicPartition, i64)>, purpose: CommitPurpose) {
        let Some(node) = self.core().discovery.coordinator else {
            return;
        };
        let (generation, member_id) = self.sent_under();
        let req = commit::request(&self.core().config, generation, &member_id, &offsets);
        for (tp, offset) in &offsets {
            self.emit(MemberEvent::CommitSent {
                member_id: member_id.clone(),
                generation,
                partition: tp.clone(),
                offset: *offset,
            });
        }
        let timeout = self.core().config.request_timeout_ms;
        let epoch = self.core().positions.epoch;
        let pending = Pending::OffsetCommit(CommitSent { offsets, purpose, epoch });
        self.send(Target::Coordinator(node), RequestKind::OffsetCommit(req), timeout, pending);
    }

    /// An OffsetCommit answer: read, then handed to the member.
    fn on_offset_commit(
        &mut self,
        now: Millis,
        sent: &Sent,
        c: CommitSent,
        r: OffsetCommitResponse,
    ) {
        let purpose = c.purpose;
        if self.commit_answer_dropped(purpose) {
            return;
        }
        let first_error = self.read_commit_answers(sent, c, &r);
        self.commit_answered(now, sent, purpose, first_error);
    }

    /// Reads an OffsetCommit answer partition by partition, in the order sent: an accepted
    /// offset becomes the partition's committed offset (if the assignment `epoch` is still
    /// current) and is reported acked; a rejected one is passed to the member's hook and
    /// reported failed. Returns the first error.
    fn read_commit_answers(
        &mut self,
        sent: &Sent,
        commit: CommitSent,
        resp: &OffsetCommitResponse,
    ) -> Option<i16> {
        let purpose = commit.purpose;
        let answers = commit::answers(resp);
        let mut first_error = None;
        let epoch = commit.epoch;
        for (tp, offset) in commit.offsets {
            let code = answers.get(&tp).copied().unwrap_or(codes::UNKNOWN_SERVER_ERROR);
            if code == codes::NONE {
                let positions = &mut self.core_mut().positions;
                if epoch == positions.epoch {
                    if let Some(ps) = positions.partitions.get_mut(&tp) {
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
                self.commit_rejected(&tp, offset, code, purpose);
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
        first_error
    }
}

impl<M: Protocol + ?Sized> Commits for M {}
