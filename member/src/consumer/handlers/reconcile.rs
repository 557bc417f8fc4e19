//! Reconciliation steps in Kafka's order: (Java) commit all consumed offsets, revoke (callback
//! after the batch in progress), (librdkafka) commit the revoked partitions, assign (callback;
//! committed offsets are fetched next), then acknowledge. Leaving runs the same steps to an
//! empty assignment; fencing releases everything as lost.

use crate::consumer::membership::MemberState;
use crate::consumer::profile_rules::RevokeCommit;
use crate::consumer::reconciliation::{named, resolve, IdAssignment, Plan, Step};
use crate::consumer::ConsumerGroupMember;
use crate::shared::handlers::prelude::*;
use crate::shared::in_flight::CommitPurpose;
use crate::shared::positions::PartitionState;
use crate::shared::timers::Timer;
use crate::{probes, MemberEvent, Millis};

impl ConsumerGroupMember {
    /// A heartbeat answer carried a target assignment (`processAssignmentReceived`).
    pub(in crate::consumer) fn on_target_assignment(&mut self, target: IdAssignment) {
        let changed = target != self.reconciliation.target;
        self.reconciliation.target = target;
        let (resolved, unresolved) = resolve(&self.reconciliation.target, &self.core.metadata);
        if changed {
            if resolved.is_empty() && unresolved.is_empty() {
                probes::IDLE_MEMBER.hit();
            }
            if self.reconciliation.in_progress() {
                probes::CONSUMER_TARGET_DURING_RECONCILE.hit();
            }
            self.emit(MemberEvent::AssignmentReceived {
                member_id: self.membership.member_id.clone(),
                epoch: self.membership.epoch,
                partitions: named(&resolved, &self.core.metadata),
                unresolved: unresolved.iter().map(|id| id.to_string()).collect(),
            });
        }
        if !unresolved.is_empty() {
            probes::CONSUMER_UNRESOLVED_TOPIC.hit();
            self.core.metadata.wanted = true;
        }
        let state = self.membership.state;
        if resolved == self.reconciliation.current {
            if matches!(state, MemberState::Joining | MemberState::Reconciling)
                && !self.reconciliation.in_progress()
            {
                self.membership.state = MemberState::Stable;
            }
        } else if state != MemberState::Acknowledging {
            self.membership.state = MemberState::Reconciling;
        }
    }

    /// Moves the reconciliation under way (or starts one) as far as it can go now.
    pub(in crate::consumer) fn drive_reconciliation(&mut self, now: Millis) {
        loop {
            let before = self.reconciliation.step.clone();
            let step = std::mem::take(&mut self.reconciliation.step);
            let next = match step {
                Step::Idle => self.maybe_start_reconciliation(now),
                Step::CommitBefore { plan, deadline, done } => {
                    self.commit_before(now, plan, deadline, done)
                }
                Step::AwaitingPoll { plan } => self.start_revoke_callback(now, plan),
                Step::RevokeCallback { plan, until } if until <= now => {
                    self.after_revoke_callback(now, plan)
                }
                Step::CommitAfter { plan, sent } => self.commit_after(now, plan, sent),
                waiting => waiting,
            };
            let moved = next != before;
            self.reconciliation.step = next;
            if !moved || self.core.finished {
                break;
            }
        }
    }

    fn commit_in_flight(&self) -> bool {
        self.core.in_flight.has_commit()
    }

    /// Starts a reconciliation when the member is reconciling and none is under way.
    fn maybe_start_reconciliation(&mut self, now: Millis) -> Step {
        if self.membership.state != MemberState::Reconciling {
            return Step::Idle;
        }
        let (plan, _) =
            self.reconciliation.plan(&self.core.positions.assigned, &self.core.metadata);
        if plan.revoked.is_empty() && plan.added.is_empty() {
            // Same partitions (a partly resolved target): a new local assignment is acked.
            self.reconciliation.current = plan.target;
            self.reconciliation.local_epoch += 1;
            self.membership.state = MemberState::Acknowledging;
            return Step::Idle;
        }
        self.begin_giving_up(now, plan)
    }

    /// The first step of a reconciliation or a leave: Java commits first; librdkafka goes
    /// straight to the revoke callback.
    fn begin_giving_up(&mut self, now: Millis, plan: Plan) -> Step {
        self.reconciliation.pending_revocation = plan.revoked.iter().cloned().collect();
        match self.rules.revoke_commit {
            RevokeCommit::AllConsumedBeforeCallback if self.membership.epoch > 0 => {
                let deadline = now + self.core.config.rebalance_timeout_ms.max(0) as u64;
                Step::CommitBefore { plan, deadline, done: false }
            }
            _ => Step::AwaitingPoll { plan },
        }
    }

    /// Java's `maybeAutoCommitSyncBeforeRevocation`: all consumed offsets, retried (with the
    /// latest epoch and offsets) until answered for good or the rebalance timeout passes.
    fn commit_before(&mut self, now: Millis, plan: Plan, deadline: Millis, done: bool) -> Step {
        if done {
            return Step::AwaitingPoll { plan };
        }
        if self.commit_in_flight() || self.core.timers.is_set(Timer::CommitRetry) {
            return Step::CommitBefore { plan, deadline, done };
        }
        if now >= deadline {
            probes::CONSUMER_REVOKE_COMMIT_TIMED_OUT.hit();
            return Step::AwaitingPoll { plan };
        }
        let offsets = self.consumed_of(&self.core.positions.assigned);
        if offsets.is_empty() || self.core.discovery.coordinator.is_none() {
            return Step::AwaitingPoll { plan };
        }
        probes::CONSUMER_RECONCILE_COMMIT.hit();
        self.send_commit(offsets, CommitPurpose::Revoke);
        Step::CommitBefore { plan, deadline, done }
    }

    /// The revoke callback runs once no batch is in progress (callbacks run between polls).
    fn start_revoke_callback(&mut self, now: Millis, plan: Plan) -> Step {
        if plan.revoked.is_empty() {
            return self.after_revoke_callback(now, plan);
        }
        if !self.core.processor.processing.is_empty() {
            // The application is inside a batch: the callback runs at its next poll.
            return Step::AwaitingPoll { plan };
        }
        probes::CONSUMER_RECONCILE_REVOKE.hit();
        probes::REVOKE_STARTED.hit();
        let took = self.core.app.on_partitions_revoked(now, self.membership.epoch, &plan.revoked);
        let until = now + took + std::mem::take(&mut self.reconciliation.slow_revoke_ms);
        Step::RevokeCallback { plan, until }
    }

    /// After the revoke callback: librdkafka commits the revoked partitions now; then the
    /// partitions are given up.
    fn after_revoke_callback(&mut self, now: Millis, plan: Plan) -> Step {
        if self.rules.revoke_commit == RevokeCommit::RevokedAfterCallback
            && !plan.revoked.is_empty()
            && self.membership.epoch > 0
        {
            return Step::CommitAfter { plan, sent: false };
        }
        self.finish_reconciliation(now, plan)
    }

    /// librdkafka's commit of the removed partitions in `incremental_unassign` (one attempt).
    fn commit_after(&mut self, now: Millis, plan: Plan, sent: bool) -> Step {
        if !sent {
            let offsets = self.core.positions.processed_of(&plan.revoked);
            if !offsets.is_empty() && self.core.discovery.coordinator.is_some() {
                probes::CONSUMER_RECONCILE_COMMIT.hit();
                self.send_commit(offsets, CommitPurpose::Revoke);
                return Step::CommitAfter { plan, sent: true };
            }
        } else if self.commit_in_flight() {
            return Step::CommitAfter { plan, sent };
        }
        self.finish_reconciliation(now, plan)
    }

    /// Gives the revoked partitions up, takes the added ones (their committed offsets are
    /// fetched next), and moves to acknowledging (or, leaving, to the leave heartbeat).
    fn finish_reconciliation(&mut self, now: Millis, plan: Plan) -> Step {
        let epoch = self.membership.epoch;
        let member_id = self.membership.member_id.clone();
        if !plan.revoked.is_empty() || !plan.added.is_empty() {
            let kept = self
                .core
                .positions
                .assigned
                .iter()
                .filter(|tp| !plan.revoked.contains(tp))
                .cloned()
                .collect();
            self.core.next_epoch_keeping(&kept);
        }
        if !plan.revoked.is_empty() {
            for tp in &plan.revoked {
                self.core.positions.partitions.remove(tp);
            }
            self.core.positions.assigned.retain(|tp| !plan.revoked.contains(tp));
            self.emit(MemberEvent::Revoked {
                member_id: member_id.clone(),
                generation: epoch,
                partitions: plan.revoked.clone(),
            });
        }
        self.reconciliation.pending_revocation.clear();
        if plan.leaving {
            self.membership.state = MemberState::Leaving;
            return Step::Idle;
        }
        if !plan.revoked.is_empty() {
            probes::CONSUMER_REVOCATION_DONE.hit();
        }
        if !plan.added.is_empty() {
            probes::CONSUMER_RECONCILE_ASSIGN.hit();
            for tp in &plan.added {
                self.core.positions.partitions.insert(tp.clone(), PartitionState::new());
                self.core.positions.assigned.push(tp.clone());
            }
            self.core.positions.assigned.sort();
            self.core.app.on_partitions_assigned(now, epoch, &plan.added);
        }
        self.emit(MemberEvent::Assigned {
            member_id,
            generation: epoch,
            partitions: self.core.positions.assigned.clone(),
        });
        self.reconciliation.current = plan.target;
        self.reconciliation.local_epoch += 1;
        if self.rules.resets_auto_commit_after_reconciliation {
            self.core.timers.set(Timer::AutoCommit, now + self.core.config.commit_interval_ms);
        }
        if self.membership.state == MemberState::Reconciling {
            self.membership.state = MemberState::Acknowledging;
        }
        Step::Idle
    }

    /// `leaveGroup`: PREPARE_LEAVING gives every partition up (revoke when the member holds an
    /// epoch, lost otherwise), then LEAVING sends the leave heartbeat.
    pub(in crate::consumer) fn prepare_leaving(&mut self, now: Millis) {
        let owned = self.core.positions.assigned.clone();
        self.reconciliation.step = Step::Idle;
        if self.membership.epoch <= 0 || owned.is_empty() {
            self.release_lost(now, "LEAVING");
            self.membership.state = MemberState::Leaving;
            return;
        }
        self.membership.state = MemberState::PrepareLeaving;
        let plan = Plan { revoked: owned, leaving: true, ..Plan::default() };
        self.reconciliation.step = self.begin_giving_up(now, plan);
    }

    /// Releases every owned partition without committing (`onPartitionsLost`) and forgets the
    /// assignments and the reconciliation under way.
    pub(in crate::consumer) fn release_lost(&mut self, now: Millis, reason: &str) {
        let lost = std::mem::take(&mut self.core.positions.assigned);
        self.core.positions.partitions.clear();
        self.core.positions.epoch += 1;
        self.reconciliation.abort_and_clear();
        if !lost.is_empty() {
            self.core.app.on_partitions_lost(now, self.membership.epoch, &lost);
            self.emit(MemberEvent::Lost {
                member_id: self.membership.member_id.clone(),
                generation: self.membership.epoch,
                partitions: lost,
                reason: reason.to_string(),
            });
        }
    }
}
