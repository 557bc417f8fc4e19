//! The consumer-protocol member (KIP-848, Kafka 4.0's `group.protocol=consumer`): a sans-IO
//! model of a client whose assignment the coordinator computes. It heartbeats with
//! ConsumerGroupHeartbeat (key 68) at the interval the coordinator returns, reconciles each new
//! target assignment in Kafka's order (commit, revoke, assign, fetch committed offsets,
//! acknowledge), commits under its member epoch, is fenced and rejoins with epoch 0, and leaves
//! with epoch -1 (or -2 when static). Profiles: `java-consumer` and `librdkafka-consumer`
//! (see `profile_rules` for what differs).
//!
//! As the classic member, it is an orchestrator over owned sub-states, each in its own file:
//! `membership` (member id, epoch, state), `heartbeat` (interval, full and delta fields),
//! `reconciliation` (target, current, the step under way), `timers`, `in_flight`, and the
//! protocol-neutral parts in `crate::shared` (metadata, coordinator, positions, outputs).
//! What needs the whole member lives in `handlers/`.

mod handlers;
mod heartbeat;
mod in_flight;
pub mod membership;
pub(crate) mod profile_rules;
mod reconciliation;
mod timers;

use kafka_protocol::messages::{RequestKind, ResponseKind};

pub use self::membership::MemberState;

use self::heartbeat::HeartbeatState;
use self::in_flight::{InFlight, Pending};
use self::membership::Membership;
use self::profile_rules::ConsumerRules;
use self::reconciliation::Reconciliation;
use self::timers::{Timer, Timers};
use crate::shared::discovery::Discovery;
use crate::shared::in_flight::{Failure, Request, Sent};
use crate::shared::metadata::Metadata;
use crate::shared::outputs::Outputs;
use crate::shared::positions::SubscriptionState;
use crate::{
    Application, MemberConfig, MemberEvent, MemberFault, MemberOutput, Millis, ProfileApplication,
    RequestFailure, RequestId, Target, TopicPartition,
};

/// Sans-IO consumer-group member of KIP-848's consumer protocol. The same contract as the
/// classic [`Member`](crate::Member): feed it responses, failures and timers, drain
/// [`Self::poll_output`] after each call.
#[derive(Debug)]
pub struct ConsumerGroupMember {
    config: MemberConfig,
    rules: ConsumerRules,
    app: Box<dyn Application>,
    started: bool,
    finished: bool,

    outputs: Outputs,
    in_flight: InFlight,
    timers: Timers,
    metadata: Metadata,
    discovery: Discovery,
    membership: Membership,
    heartbeat: HeartbeatState,
    reconciliation: Reconciliation,
    positions: SubscriptionState,
    /// librdkafka: a commit answered STALE_MEMBER_EPOCH is sent again after the next heartbeat.
    commit_after_heartbeat: bool,
}

impl ConsumerGroupMember {
    /// A member with the profile's default application. `seed` draws its member id.
    pub fn new(config: MemberConfig, seed: u64) -> Self {
        Self::with_application(config, seed, Box::new(ProfileApplication))
    }

    /// A member running a user-modelled [`Application`] (its rebalance listener).
    pub fn with_application(config: MemberConfig, seed: u64, app: Box<dyn Application>) -> Self {
        Self {
            rules: ConsumerRules::of(config.profile),
            config,
            app,
            started: false,
            finished: false,
            outputs: Outputs::default(),
            in_flight: InFlight::default(),
            timers: Timers::default(),
            metadata: Metadata::default(),
            discovery: Discovery::default(),
            membership: Membership::new(seed),
            heartbeat: HeartbeatState::default(),
            reconciliation: Reconciliation::default(),
            positions: SubscriptionState::default(),
            commit_after_heartbeat: false,
        }
    }

    /// Begins: Metadata, FindCoordinator, then a heartbeat with epoch 0.
    pub fn start(&mut self, now: Millis) {
        if !self.started && !self.finished {
            self.started = true;
            self.metadata.wanted = true;
            self.membership.state = MemberState::Joining;
            self.drive(now);
        }
        self.arm_timers();
    }

    /// Graceful shutdown (`close()`): give the partitions up as a reconciliation to nothing
    /// would (commit, revoke callback; lost when the member holds no epoch), then send the
    /// leave heartbeat (-1, or -2 when static) and stop when it is answered.
    pub fn leave(&mut self, now: Millis) {
        if !self.finished {
            if !self.started || self.membership.state == MemberState::Fatal {
                self.finished = true;
            } else if !matches!(
                self.membership.state,
                MemberState::PrepareLeaving | MemberState::Leaving
            ) {
                self.prepare_leaving(now);
                self.drive(now);
            }
        }
        self.arm_timers();
    }

    /// The answer to request `id`.
    pub fn handle_response(&mut self, now: Millis, id: RequestId, response: ResponseKind) {
        if !self.finished {
            if let Some(Request { sent, pending }) = self.in_flight.remove(id) {
                self.on_response(now, sent, pending, response);
                self.drive(now);
            }
        }
        self.arm_timers();
    }

    /// Request `id` got no answer.
    pub fn handle_failure(&mut self, now: Millis, id: RequestId, failure: RequestFailure) {
        if !self.finished {
            if let Some(Request { sent, pending }) = self.in_flight.remove(id) {
                self.on_failure(now, sent, pending, Failure::from_request_failure(failure));
                self.drive(now);
            }
        }
        self.arm_timers();
    }

    /// The earliest instant at which [`Self::handle_timeout`] has work to do.
    pub fn poll_timeout(&self) -> Option<Millis> {
        if self.finished || !self.started {
            return None;
        }
        self.timers.next_deadline()
    }

    /// Fires every timer due at or before `now`.
    pub fn handle_timeout(&mut self, now: Millis) {
        if !self.finished {
            self.drive(now);
        }
        self.arm_timers();
    }

    /// Next queued output, in the order produced.
    pub fn poll_output(&mut self) -> Option<MemberOutput> {
        self.outputs.pop()
    }

    /// The member left the group or stopped for good.
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// The member id the client drew.
    pub fn member_id(&self) -> &str {
        &self.membership.member_id
    }

    /// The member epoch (0 while joining).
    pub fn member_epoch(&self) -> i32 {
        self.membership.epoch
    }

    /// Where the member stands.
    pub fn state(&self) -> MemberState {
        self.membership.state
    }

    /// Partitions the member owns now, sorted.
    pub fn assigned(&self) -> &[TopicPartition] {
        &self.positions.assigned
    }

    /// The coordinator node the member currently trusts, if any.
    pub fn coordinator(&self) -> Option<i32> {
        self.discovery.coordinator
    }

    /// The configuration the member runs with.
    pub fn config(&self) -> &MemberConfig {
        &self.config
    }

    /// Applies a fault from the nemesis: revoke slowdowns lengthen the next revoke callback;
    /// a stale ack has no batch to act on (this member does not process records yet).
    pub fn inject(&mut self, now: Millis, fault: MemberFault) {
        if !self.finished {
            match fault {
                MemberFault::SlowRevoke { extra_ms } => {
                    self.reconciliation.slow_revoke_ms =
                        self.reconciliation.slow_revoke_ms.saturating_add(extra_ms);
                }
                MemberFault::SlowRevokeUntil { until_ms } => {
                    let extra = until_ms.saturating_sub(now);
                    self.reconciliation.slow_revoke_ms =
                        self.reconciliation.slow_revoke_ms.max(extra);
                }
                MemberFault::StaleAck { .. } => {}
            }
            self.drive(now);
        }
        self.arm_timers();
    }

    /// The faults end: a revoke slowdown no callback took up is dropped.
    pub fn heal_pending_faults(&mut self) {
        self.reconciliation.slow_revoke_ms = 0;
    }

    // ----------------------------------------------------------------------------------------
    // Plumbing
    // ----------------------------------------------------------------------------------------

    fn send(&mut self, target: Target, request: RequestKind, timeout_ms: u64, pending: Pending) {
        let id = self.outputs.send(target, request, timeout_ms);
        let sent = Sent {
            target,
            generation: self.membership.epoch,
            member_id: self.membership.member_id.clone(),
        };
        self.in_flight.insert(id, sent, pending);
    }

    fn emit(&mut self, event: MemberEvent) {
        self.outputs.emit(event);
    }

    fn retry_after_backoff(&mut self, timer: Timer, now: Millis) {
        self.timers.set(timer, now + self.config.retry_backoff_ms);
    }

    /// The heartbeat deadline is held while no heartbeat can go out; the auto-commit deadline
    /// while the member is not in the group or a commit is in flight.
    fn arm_timers(&mut self) {
        let callback = match &self.reconciliation.step {
            reconciliation::Step::RevokeCallback { until, .. } => Some(*until),
            _ => None,
        };
        self.timers.set_or_cancel(Timer::RevokeCallback, callback);
        let coordinator = self.discovery.coordinator.is_some();
        let heartbeat_in_flight = self.in_flight.any(|p| matches!(p, Pending::Heartbeat { .. }));
        let heartbeat =
            coordinator && !self.membership.state.skips_heartbeat() && !heartbeat_in_flight;
        self.timers.hold(Timer::Heartbeat, !heartbeat);
        let commit = coordinator
            && self.membership.in_group()
            && !self.in_flight.any(|p| matches!(p, Pending::OffsetCommit { .. }));
        self.timers.hold(Timer::AutoCommit, !commit);
    }

    /// Looks at the state and sends whatever it calls for.
    fn drive(&mut self, now: Millis) {
        if self.finished || !self.started {
            return;
        }
        self.timers.expire(now, |t| {
            matches!(
                t,
                Timer::MetadataRetry
                    | Timer::FindCoordinatorRetry
                    | Timer::OffsetFetchRetry
                    | Timer::ListOffsetsRetry
                    | Timer::CommitRetry
            )
        });
        if self.timers.is_due(Timer::MetadataRefresh, now) {
            self.timers.cancel(Timer::MetadataRefresh);
            self.metadata.wanted = true;
        }
        self.maybe_send_metadata();
        if !self.metadata.known {
            return;
        }
        self.maybe_find_coordinator();
        self.drive_reconciliation(now);
        self.maybe_heartbeat(now);
        if self.membership.in_group() {
            self.maybe_auto_commit(now);
            self.maybe_fetch_committed();
            self.maybe_list_offsets();
        }
        self.maybe_send_metadata();
    }

    fn on_response(&mut self, now: Millis, sent: Sent, pending: Pending, response: ResponseKind) {
        match (pending, response) {
            (Pending::Metadata, ResponseKind::Metadata(r)) => self.on_metadata(now, r),
            (Pending::FindCoordinator, ResponseKind::FindCoordinator(r)) => {
                self.on_find_coordinator(now, r)
            }
            (Pending::Heartbeat { leave }, ResponseKind::ConsumerGroupHeartbeat(r)) => {
                self.on_heartbeat(now, &sent, leave, r)
            }
            (Pending::OffsetCommit { offsets, purpose, epoch }, ResponseKind::OffsetCommit(r)) => {
                self.on_offset_commit(now, &sent, offsets, purpose, epoch, r)
            }
            (Pending::OffsetFetch { epoch, partitions }, ResponseKind::OffsetFetch(r)) => {
                self.on_offset_fetch(now, epoch, partitions, r)
            }
            (Pending::ListOffsets { epoch, partitions }, ResponseKind::ListOffsets(r)) => {
                self.on_list_offsets(now, epoch, partitions, r)
            }
            (pending, _) => {
                self.on_failure(now, sent, pending, Failure::Unusable("UNEXPECTED_RESPONSE"))
            }
        }
    }

    fn on_failure(&mut self, now: Millis, sent: Sent, pending: Pending, failure: Failure) {
        let api = pending.api();
        match pending {
            Pending::Metadata => {
                self.metadata.wanted = true;
                self.metadata.broker_cursor += 1;
                self.retry_after_backoff(Timer::MetadataRetry, now);
            }
            Pending::FindCoordinator => {
                crate::probes::DISCOVERY_FAILED.hit();
                self.metadata.broker_cursor += 1;
                self.retry_after_backoff(Timer::FindCoordinatorRetry, now);
            }
            Pending::Heartbeat { leave } => self.on_heartbeat_lost(now, &sent, leave, &failure),
            Pending::OffsetCommit { offsets, purpose, .. } => {
                if matches!(failure, Failure::Connection(_)) {
                    crate::probes::COMMIT_ANSWER_LOST.hit();
                }
                self.on_commit_failed(now, &sent, offsets, purpose, &failure.name(), true);
            }
            Pending::OffsetFetch { .. } => self.retry_after_backoff(Timer::OffsetFetchRetry, now),
            Pending::ListOffsets { epoch, partitions } => {
                self.positions.reset_answered(epoch, &partitions);
                self.retry_after_backoff(Timer::ListOffsetsRetry, now);
            }
        }
        if matches!(failure, Failure::Connection(_)) {
            self.coordinator_failed(now, sent.target, &format!("{api} {}", failure.name()));
        }
    }
}
