//! The consumer-protocol member (KIP-848, Kafka 4.0's `group.protocol=consumer`): a sans-IO
//! model of a client whose assignment the coordinator computes. It heartbeats with
//! ConsumerGroupHeartbeat (key 68) at the interval the coordinator returns, reconciles each new
//! target assignment in Kafka's order (commit, revoke, assign, fetch committed offsets,
//! acknowledge), commits under its member epoch, is fenced and rejoins with epoch 0, and leaves
//! with epoch -1 (or -2 when static). Between reconciliations it fetches and processes records
//! with the classic member's loop (Fetch by leader, one batch at a time, acks, auto-commit of
//! processed offsets); partitions being revoked are neither fetched nor processed, and the
//! revoke callback waits for the batch in progress. Profiles: `java-consumer` and
//! `librdkafka-consumer` (see `profile_rules` for what differs).
//!
//! As the classic member, it is an orchestrator over owned sub-states, each in its own file:
//! `membership` (member id, epoch, state), `heartbeat` (interval, full and delta fields),
//! `reconciliation` (target, current, the step under way), beside the protocol-neutral
//! `Core` it shares with the classic member (metadata,
//! coordinator, positions, fetch, processing, commits, timers, outputs). What needs the whole
//! member lives in `handlers/`; how the shared handlers reach it, in `protocol`.

mod handlers;
mod heartbeat;
pub mod membership;
pub(crate) mod profile_rules;
mod protocol;
mod reconciliation;

use kafka_protocol::messages::ResponseKind;

pub use self::membership::MemberState;

use self::heartbeat::HeartbeatState;
use self::membership::Membership;
use self::profile_rules::ConsumerRules;
use self::reconciliation::Reconciliation;
use crate::shared::core::{Core, Plumbing, Protocol};
use crate::{
    Application, MemberConfig, MemberFault, MemberOutput, Millis, ProfileApplication,
    RequestFailure, RequestId, TopicPartition,
};

/// Sans-IO consumer-group member of KIP-848's consumer protocol. The same contract as the
/// classic [`Member`](crate::Member): feed it responses, failures and timers, drain
/// [`Self::poll_output`] after each call.
#[derive(Debug)]
pub struct ConsumerGroupMember {
    /// The protocol-neutral state (metadata, coordinator, positions, fetch, processing,
    /// outputs, timers, requests in flight).
    core: Core,
    rules: ConsumerRules,
    membership: Membership,
    heartbeat: HeartbeatState,
    reconciliation: Reconciliation,
    /// librdkafka: a commit answered STALE_MEMBER_EPOCH is sent again after the next heartbeat.
    commit_after_heartbeat: bool,
    /// The poll timer expired: the leave under way ends in STALE, not in stopping.
    poll_expired: bool,
}

impl ConsumerGroupMember {
    /// A member with the profile's default application. `seed` draws its member id and drives
    /// its processing times.
    pub fn new(config: MemberConfig, seed: u64) -> Self {
        Self::with_application(config, seed, Box::new(ProfileApplication))
    }

    /// A member running a user-modelled [`Application`] (processing times, rebalance listener).
    pub fn with_application(config: MemberConfig, seed: u64, app: Box<dyn Application>) -> Self {
        Self {
            rules: ConsumerRules::of(config.profile),
            core: Core::new(config, seed, app),
            membership: Membership::new(seed),
            heartbeat: HeartbeatState::default(),
            reconciliation: Reconciliation::default(),
            commit_after_heartbeat: false,
            poll_expired: false,
        }
    }

    /// Begins: Metadata, FindCoordinator, then a heartbeat with epoch 0.
    pub fn start(&mut self, now: Millis) {
        self.core.clock = now;
        if !self.core.started && !self.core.finished {
            self.core.started = true;
            self.core.metadata.wanted = true;
            self.membership.state = MemberState::Joining;
            self.drive(now);
        }
        self.arm_timers();
    }

    /// Graceful shutdown (`close()`): give the partitions up as a reconciliation to nothing
    /// would (commit, revoke callback; lost when the member holds no epoch), then send the
    /// leave heartbeat (-1, or -2 when static) and stop when it is answered.
    pub fn leave(&mut self, now: Millis) {
        self.input(now, |m| {
            if !m.core.started || m.membership.state == MemberState::Fatal {
                m.core.finish();
            } else if m.membership.state == MemberState::Stale {
                // Out of the group already (Java's `isNotInGroup`): nothing to send.
                m.finish_leave();
            } else if !matches!(
                m.membership.state,
                MemberState::PrepareLeaving | MemberState::Leaving
            ) {
                m.prepare_leaving(now);
            }
        });
    }

    /// The answer to request `id`.
    pub fn handle_response(&mut self, now: Millis, id: RequestId, response: ResponseKind) {
        self.answer(now, id, Ok(response));
    }

    /// Fires every timer due at or before `now`: batches that finished are acknowledged, then
    /// the member does what its state calls for.
    pub fn handle_timeout(&mut self, now: Millis) {
        self.input(now, |m| m.on_tick(now));
    }

    /// Request `id` got no answer.
    pub fn handle_failure(&mut self, now: Millis, id: RequestId, failure: RequestFailure) {
        self.answer(now, id, Err(failure));
    }

    /// The member left the group or stopped for good.
    pub fn is_finished(&self) -> bool {
        self.core.finished
    }

    /// The member id the client drew.
    pub fn member_id(&self) -> &str {
        &self.membership.member_id
    }

    /// The earliest instant at which [`Self::handle_timeout`] has work to do.
    pub fn poll_timeout(&self) -> Option<Millis> {
        self.core.poll_timeout()
    }

    /// Where the member stands.
    pub fn state(&self) -> MemberState {
        self.membership.state
    }

    /// Next queued output, in the order produced.
    pub fn poll_output(&mut self) -> Option<MemberOutput> {
        self.core.outputs.pop()
    }

    /// Partitions the member owns now, sorted.
    pub fn assigned(&self) -> &[TopicPartition] {
        &self.core.positions.assigned
    }

    /// The configuration the member runs with.
    pub fn config(&self) -> &MemberConfig {
        &self.core.config
    }

    /// The coordinator node the member currently trusts, if any.
    pub fn coordinator(&self) -> Option<i32> {
        self.core.discovery.coordinator
    }

    /// Applies a fault from the nemesis: revoke slowdowns lengthen the next revoke callback;
    /// a stale ack detaches the next batch from revocation (its ack comes `delay_ms` late,
    /// possibly after the partition moved on).
    pub fn inject(&mut self, now: Millis, fault: MemberFault) {
        self.input(now, |m| match fault {
            MemberFault::SlowRevoke { extra_ms } => {
                m.reconciliation.slow_revoke_ms = m.reconciliation.slow_revoke_ms.max(extra_ms);
            }
            MemberFault::SlowRevokeUntil { until_ms } => {
                let extra = until_ms.saturating_sub(now);
                m.reconciliation.slow_revoke_ms = m.reconciliation.slow_revoke_ms.max(extra);
            }
            MemberFault::StaleAck { delay_ms } => m.core.processor.inject_stale_ack(delay_ms),
            MemberFault::SlowBatch { extra_ms } => {
                m.core.processor.inject_slow_batch(now, extra_ms)
            }
        });
    }

    /// The faults end: a revoke slowdown no callback took up is dropped, and so are a stale ack
    /// and a slow batch no batch took up.
    pub fn heal_pending_faults(&mut self) {
        self.reconciliation.slow_revoke_ms = 0;
        self.core.processor.drop_pending_faults();
    }
}
