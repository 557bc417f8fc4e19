//! The classic member as the shared core sees it: where its core is, what its requests go out
//! under, its reconciliation loop (`drive`), its timer holds, how it reads answers and failures,
//! and the hooks where the classic protocol differs from KIP-848.

use groupsim_wire::error_codes as codes;
use kafka_protocol::messages::ResponseKind;

use super::membership::Phase;
use super::{Member, Target};
use crate::shared::core::{Core, Protocol};
use crate::shared::handlers::prelude::*;
use crate::shared::in_flight::{CommitPurpose, Failure, Pending, Sent};
use crate::shared::timers::Timer;
use crate::{Millis, TopicPartition};

impl Protocol for Member {
    fn core(&self) -> &Core {
        &self.core
    }

    fn core_mut(&mut self) -> &mut Core {
        &mut self.core
    }

    fn sent_under(&self) -> (i32, String) {
        (self.membership.generation, self.membership.member_id.clone())
    }

    /// Looks at the state and sends whatever it calls for (the Java consumer's `poll()`).
    fn drive(&mut self, now: Millis) {
        if !self.drive_metadata(now) {
            return;
        }
        if self.membership.phase == Phase::Stable {
            self.maybe_heartbeat(now);
        }
        if self.leaving {
            self.drive_leave(now);
            return;
        }
        self.maybe_find_coordinator();
        self.send_owed_leave();
        self.drive_membership(now);
        let stable = self.membership.phase == Phase::Stable
            && !self.membership.rejoin_needed
            && !self.core.finished;
        if stable {
            self.maybe_auto_commit(now);
        }
        self.drive_consumption(now, stable);
    }

    /// Writes the timer table's entries that follow from other state: when the first batch
    /// finishes, when the revoke callback needs attention, when a batch runs past
    /// `max.poll.interval.ms` (where enforced, and only for a member with an id); and holds the
    /// heartbeat deadline unless the member is stable with a coordinator and no heartbeat
    /// awaited, the auto-commit deadline unless it is stable with a coordinator, not rejoining
    /// or leaving, and no commit in flight. Runs after every input.
    fn arm_timers(&mut self) {
        let max_poll = self.core.config.rebalance_timeout_ms.max(0) as u64;
        let enforced = (self.rules.enforces_max_poll && !self.membership.member_id.is_empty())
            .then_some(max_poll);
        self.core.timers.set_or_cancel(Timer::ProcessingDone, self.core.processor.next_done_at());
        self.core
            .timers
            .set_or_cancel(Timer::RevokeCallback, self.rebalance.callback_deadline(enforced));
        let stall = enforced.and_then(|max_poll| self.core.processor.max_poll_deadline(max_poll));
        self.core.timers.set_or_cancel(Timer::MaxPollInterval, stall);
        let stable = self.membership.phase == Phase::Stable;
        let coordinator = self.core.discovery.coordinator.is_some();
        let heartbeat = stable && coordinator && !self.core.in_flight.has_awaited_heartbeat();
        self.core.timers.hold(Timer::Heartbeat, !heartbeat);
        let commit = stable
            && coordinator
            && !self.membership.rejoin_needed
            && !self.leaving
            && !self.core.in_flight.has_commit();
        self.core.timers.hold(Timer::AutoCommit, !commit);
    }

    fn on_response(&mut self, now: Millis, sent: Sent, pending: Pending, response: ResponseKind) {
        let Some((sent, pending, response)) = self.on_common_response(now, sent, pending, response)
        else {
            return;
        };
        match (pending, response) {
            (Pending::JoinGroup, ResponseKind::JoinGroup(r)) => self.on_join_group(now, &sent, r),
            (Pending::SyncGroup, ResponseKind::SyncGroup(r)) => self.on_sync_group(now, &sent, r),
            (Pending::Heartbeat { .. }, ResponseKind::Heartbeat(r)) => {
                self.on_heartbeat(now, &sent, r.error_code)
            }
            (Pending::LeaveGroup, ResponseKind::LeaveGroup(r)) => {
                self.probe_leave_errors(&r);
                self.on_leave_done()
            }
            (Pending::LeaveAndRejoin, ResponseKind::LeaveGroup(r)) => self.probe_leave_errors(&r),
            (pending, _) => {
                tracing::debug!(api = pending.api(), "answer of the wrong kind");
                self.on_failure(now, sent, pending, Failure::Unusable("UNEXPECTED_RESPONSE"));
            }
        }
    }

    fn on_failure(&mut self, now: Millis, sent: Sent, pending: Pending, failure: Failure) {
        // Steps of kafka-go's round besides JoinGroup and SyncGroup: the leader's partition
        // read before assigning (on the coordinator connection), and the committed offsets'
        // fetch before the generation starts.
        let round_step = match pending {
            Pending::Metadata => {
                self.membership.phase == Phase::AwaitingLeaderMetadata
                    && matches!(sent.target, Target::Coordinator(_))
            }
            Pending::OffsetFetch { .. } => self.membership.is_current(&sent),
            _ => false,
        };
        let name = failure.name();
        let Some((sent, pending, failure)) = self.on_common_failure(now, sent, pending, failure)
        else {
            if round_step {
                self.give_up_round(now, &name, true);
            }
            return;
        };
        let api = pending.api();
        // A failed JoinGroup or SyncGroup of the round under way ends it: rejoin later.
        let round = match pending {
            Pending::JoinGroup => Some(Phase::Joining),
            Pending::SyncGroup => Some(Phase::Syncing),
            _ => None,
        };
        if round == Some(self.membership.phase) {
            self.membership.phase = Phase::Unjoined;
            let leave = round == Some(Phase::Syncing);
            if !self.give_up_round(now, &failure.name(), leave) {
                self.retry_join_later(now);
            }
        }
        match pending {
            Pending::Heartbeat { .. }
                if self.rules.heartbeat_error_ends_generation
                    && self.membership.is_current(&sent) =>
            {
                self.heartbeat_ended_generation(now, &sent, None)
            }
            Pending::Heartbeat { awaited: true } => {
                // Bug `heartbeat_thread_dies` (KAFKA-14729): the failure kills the thread.
                self.heartbeat.thread_dead |= self.core.config.bugs.heartbeat_thread_dies;
                self.retry_after_backoff(Timer::Heartbeat, now)
            }
            Pending::LeaveGroup => self.on_leave_done(),
            _ => {}
        }
        self.forget_coordinator_on_lost_connection(now, sent.target, api, &failure);
    }

    /// What follows a commit's answer: a group error is handled as the group APIs' are; an
    /// auto-commit that can be retried is retried after a backoff; a revoke callback's commit
    /// ends the wait for it.
    fn commit_answered(&mut self, now: Millis, sent: &Sent, p: CommitPurpose, err: Option<i16>) {
        if let Some(code) = err {
            let current = self.membership.is_current(sent);
            let handled =
                self.handle_group_error(now, sent, code, "OffsetCommit", current).is_some();
            let retriable = !handled
                || matches!(code, codes::NOT_COORDINATOR | codes::COORDINATOR_NOT_AVAILABLE);
            if p == CommitPurpose::Auto
                && (retriable || code == codes::COORDINATOR_LOAD_IN_PROGRESS)
            {
                self.retry_after_backoff(Timer::AutoCommit, now);
            }
        }
        if p == CommitPurpose::RevokeCallback {
            // A group error above may have lost the partitions (and ended the callback).
            self.on_revoke_callback_commit_done(now);
        }
    }

    fn commit_answer_dropped(&mut self, purpose: CommitPurpose) -> bool {
        self.revoke_commit_answer_dropped(purpose)
    }

    fn commit_rejected(&mut self, tp: &TopicPartition, offset: i64, code: i16, p: CommitPurpose) {
        if code == codes::REBALANCE_IN_PROGRESS && p == CommitPurpose::Auto {
            self.save_refused_commit(tp, offset);
        }
    }

    fn on_commit_lost(&mut self, now: Millis, _sent: &Sent, purpose: CommitPurpose) {
        if purpose == CommitPurpose::Auto {
            self.retry_after_backoff(Timer::AutoCommit, now);
        }
        if purpose == CommitPurpose::RevokeCallback {
            self.on_revoke_callback_commit_done(now);
        }
    }

    fn coordinator_found(&mut self, now: Millis) {
        // A fresh coordinator gets a fresh session window (Java: resetSessionTimeout).
        self.heartbeat.last_ok = now;
    }

    fn coordinator_lost(&mut self) {
        if self.rules.rejoin_on_coordinator_loss && self.membership.phase == Phase::Stable {
            // brod stabilizes on a lost connection or NOT_COORDINATOR: revoke, rejoin with an
            // empty member id.
            self.membership.rejoin_needed = true;
            self.membership.reset_member_id_on_join = true;
        }
    }

    fn metadata_applied(&mut self) {
        self.check_metadata_change();
    }

    fn metadata_refresh_ms(&self) -> u64 {
        match self.rules.partition_watch_ms {
            Some(watch) => self.core.config.metadata_max_age_ms.min(watch),
            None => self.core.config.metadata_max_age_ms,
        }
    }

    /// Whether the member fetches and processes records now: in a stable generation, or, for a
    /// cooperative member, also while a rebalance runs, on the partitions it still owns
    /// (KIP-429 keeps them until the new assignment takes them away, and the Java consumer
    /// still returns their records from `poll()` during a rebalance, KAFKA-8421).
    fn consuming(&self) -> bool {
        if self.leaving || self.core.finished {
            return false;
        }
        let stable = self.membership.phase == Phase::Stable && !self.membership.rejoin_needed;
        stable || (self.rebalance.cooperative && !self.core.positions.partitions.is_empty())
    }

    fn max_concurrent_batches(&self) -> usize {
        self.rules.max_concurrent_batches
    }

    fn acks_asynchronously(&self) -> bool {
        self.rules.acks_asynchronously
    }

    fn stale_ack(&mut self, tp: &TopicPartition, next_offset: i64) {
        self.merge_stale_ack(tp, next_offset);
    }

    fn ack_probes(&self, generation: i32) {
        self.probe_ack_generation(generation);
    }

    fn positions_set(&mut self, partitions: &[TopicPartition]) {
        self.reuse_stale_stored_offsets(partitions);
    }
}

impl OffsetFetchRules for Member {
    fn offset_fetch_error(&mut self, now: Millis, sent: &Sent, code: i16) {
        let current = self.membership.is_current(sent);
        self.handle_group_error(now, sent, code, "OffsetFetch", current);
    }

    fn positions_usable(&self) -> bool {
        self.membership.phase == Phase::Stable
    }
}
