//! The consumer-protocol member as the shared core sees it: where its core is, what its
//! requests go out under (the member epoch), its loop (`drive`), its timer holds, how it reads
//! answers and failures, and the hooks where KIP-848 differs from the classic protocol.

use kafka_protocol::messages::{OffsetFetchRequest, ResponseKind};

use super::reconciliation::Step;
use super::ConsumerGroupMember;
use crate::compat::sb;
use crate::probes;
use crate::shared::core::{Core, Plumbing, Protocol};
use crate::shared::handlers::prelude::*;
use crate::shared::in_flight::{CommitPurpose, Failure, Pending, Sent};
use crate::shared::positions::offset_fetch_request;
use crate::shared::timers::Timer;
use crate::{Millis, TopicPartition};
use groupsim_wire::error_codes as codes;

impl ConsumerGroupMember {
    /// A timer fired: batches that finished are acknowledged first, then the poll timer.
    pub(super) fn on_tick(&mut self, now: Millis) {
        self.finish_processing(now);
        self.check_poll_timer(now);
    }
}

impl Protocol for ConsumerGroupMember {
    fn core(&self) -> &Core {
        &self.core
    }

    fn core_mut(&mut self) -> &mut Core {
        &mut self.core
    }

    /// Looks at the state and sends whatever it calls for.
    fn drive(&mut self, now: Millis) {
        if !self.drive_metadata(now) {
            return;
        }
        self.maybe_find_coordinator();
        self.drive_reconciliation(now);
        self.maybe_heartbeat(now);
        let in_group = self.membership.in_group();
        if in_group {
            self.maybe_auto_commit(now);
        }
        self.drive_consumption(now, in_group);
    }

    fn sent_under(&self) -> (i32, String) {
        (self.membership.epoch, self.membership.member_id.clone())
    }

    /// When the first batch finishes and the revoke callback's deadline; the heartbeat deadline is held while no heartbeat can go
    /// out, the auto-commit deadline while the member is not in the group or a commit is in
    /// flight.
    fn arm_timers(&mut self) {
        let (max_poll, armed) = (self.max_poll_ms(), self.poll_timer_armed());
        let callback = match &self.reconciliation.step {
            Step::RevokeCallback { until, .. } => Some(*until),
            _ => None,
        };
        let core = &mut self.core;
        core.timers.set_or_cancel(Timer::ProcessingDone, core.processor.next_done_at());
        core.timers.set_or_cancel(Timer::RevokeCallback, callback);
        let poll_deadline = core.processor.max_poll_deadline(max_poll);
        core.timers.set_or_cancel(Timer::MaxPollInterval, armed.then_some(poll_deadline).flatten());
        let coordinator = core.discovery.coordinator.is_some();
        let heartbeat_in_flight =
            core.in_flight.any(|p| matches!(p, Pending::ConsumerGroupHeartbeat { .. }));
        let heartbeat =
            coordinator && !self.membership.state.skips_heartbeat() && !heartbeat_in_flight;
        core.timers.hold(Timer::Heartbeat, !heartbeat);
        let commit = coordinator && self.membership.in_group() && !core.in_flight.has_commit();
        core.timers.hold(Timer::AutoCommit, !commit);
    }

    fn on_response(&mut self, now: Millis, sent: Sent, pending: Pending, response: ResponseKind) {
        let Some((sent, pending, response)) = self.on_common_response(now, sent, pending, response)
        else {
            return;
        };
        match (pending, response) {
            (
                Pending::ConsumerGroupHeartbeat { leave },
                ResponseKind::ConsumerGroupHeartbeat(r),
            ) => self.on_heartbeat(now, &sent, leave, r),
            (pending, _) => {
                self.on_failure(now, sent, pending, Failure::Unusable("UNEXPECTED_RESPONSE"))
            }
        }
    }

    fn on_failure(&mut self, now: Millis, sent: Sent, pending: Pending, failure: Failure) {
        let Some((sent, pending, failure)) = self.on_common_failure(now, sent, pending, failure)
        else {
            return;
        };
        let api = pending.api();
        if let Pending::ConsumerGroupHeartbeat { leave } = pending {
            self.on_heartbeat_lost(now, &sent, leave, &failure);
        }
        self.forget_coordinator_on_lost_connection(now, sent.target, api, &failure);
    }

    /// What follows a commit's answer: the commit before revocation is done, retried (a
    /// retriable error, until the rebalance timeout) or given up; a lost coordinator is looked
    /// up again; an epoch error is handled per profile.
    fn commit_answered(&mut self, now: Millis, sent: &Sent, p: CommitPurpose, err: Option<i16>) {
        let Some(code) = err else {
            self.revoke_commit_done(p);
            return;
        };
        let retriable = matches!(
            code,
            codes::COORDINATOR_LOAD_IN_PROGRESS
                | codes::NOT_COORDINATOR
                | codes::COORDINATOR_NOT_AVAILABLE
        ) || (code == codes::STALE_MEMBER_EPOCH && self.membership.epoch > 0);
        self.after_commit_failed(now, p, retriable);
        if matches!(code, codes::NOT_COORDINATOR | codes::COORDINATOR_NOT_AVAILABLE) {
            self.coordinator_failed(now, sent.target, "OffsetCommit NOT_COORDINATOR");
        }
        if code == codes::STALE_MEMBER_EPOCH || code == codes::UNKNOWN_MEMBER_ID {
            self.on_commit_epoch_error(now, code, p);
        }
    }

    fn commit_rejected(&mut self, _tp: &TopicPartition, _offset: i64, code: i16, _: CommitPurpose) {
        probes::error_handled(self.core.config.profile, "OffsetCommit", code);
    }

    fn on_commit_lost(&mut self, now: Millis, _sent: &Sent, purpose: CommitPurpose) {
        self.after_commit_failed(now, purpose, true);
    }

    fn coordinator_lost(&mut self) {
        // The next coordinator gets a full heartbeat.
        self.heartbeat.reset();
    }

    /// In the group and not giving everything up.
    fn consuming(&self) -> bool {
        !self.core.finished && self.membership.in_group()
    }

    /// Partitions being revoked are neither fetched nor processed.
    fn fetchable(&self, tp: &TopicPartition) -> bool {
        !self.reconciliation.pending_revocation.contains(tp)
    }

    fn ack_probes(&self, generation: i32) {
        if generation < self.membership.epoch {
            probes::STALE_ACK.hit();
        }
    }
}

impl OffsetFetchRules for ConsumerGroupMember {
    /// OffsetFetch v9+ carries the member id and epoch.
    fn offset_fetch_request(&self, wanted: &[TopicPartition]) -> OffsetFetchRequest {
        let mut req = offset_fetch_request(&self.core.config, wanted);
        for g in &mut req.groups {
            g.member_id = Some(sb(&self.membership.member_id));
            g.member_epoch = self.membership.epoch;
        }
        req
    }

    fn offset_fetch_error(&mut self, _now: Millis, _sent: &Sent, code: i16) {
        probes::error_handled(self.core.config.profile, "OffsetFetch", code);
    }
}
