//! The classic-protocol member: a sans-IO model of a consumer-group client using JoinGroup /
//! SyncGroup / Heartbeat — its group membership (eager, or incremental cooperative per
//! KIP-429), offset initialisation, fetch/process loop and commit policy — shaped by its
//! [`ClientProfile`](crate::ClientProfile) (Java eager, Java cooperative, brod, Elsa, kafka-go)
//! and its [`Application`].
//!
//! Everything the member does comes from one reconciliation step (`drive`): after every input
//! (a response, a failure, a timer, `start`, `leave`, an injected fault) the member looks at its
//! state and sends whatever requests that state calls for. This mirrors the Java consumer's
//! `poll()` loop, which on each call ensures the coordinator is known, rejoins if needed,
//! commits if due and sends fetches, and keeps every decision in one place.
//!
//! The [`Member`] here is the orchestrator; each concern is a field of its own type in its own
//! file (as quinn-proto's `connection/`): `timers` (one deadline table), `in_flight` (requests
//! in flight), `metadata`, `discovery` (the coordinator), `membership` (member id, generation,
//! group errors), `rebalance` (revoke and assign), `heartbeat`, `commits`, `positions`
//! (committed and earliest offsets), `fetch`, `processing`, and `outputs`. What needs the
//! whole member lives in `impl Member` blocks under `handlers/`, one file per concern.
//!
//! Profiles differ in a few places, all read from one table (`profile_rules`): the steps
//! before giving partitions up (wait for or detach the batch in progress, commit before or
//! after the revoke callback, or not at all), how acks of work that outlived its generation
//! are treated, join retry timing, member id resets, and which metadata changes trigger a
//! rejoin.

mod commits;
mod handlers;
mod heartbeat;
mod in_flight;
mod membership;
pub(crate) mod profile_rules;
mod rebalance;
mod timers;

use kafka_protocol::messages::{RequestKind, ResponseKind};

pub use crate::shared::outputs::{MemberOutput, RequestFailure, Target};

use self::commits::Commits;
use self::heartbeat::Heartbeat;
use self::in_flight::{CommitPurpose, Failure, InFlight, Pending, Request, Sent};
use self::membership::{Membership, Phase};
use self::profile_rules::ProfileRules;
use self::rebalance::Rebalance;
use self::timers::{Timer, Timers};
use crate::shared::discovery::Discovery;
use crate::shared::fetch::Fetcher;
use crate::shared::metadata::Metadata;
use crate::shared::outputs::Outputs;
use crate::shared::positions::SubscriptionState;
use crate::shared::processing::Processor;
use crate::{
    Application, Assignor, MemberConfig, MemberEvent, Millis, ProfileApplication, RequestId,
    TopicPartition,
};

/// A fault the world's nemesis injects into a member (see [`Member::inject`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum MemberFault {
    /// The batch being processed (or the next one) finishes `delay_ms` later and is detached
    /// from revocation: the member does not wait for it, so its ack may arrive in a later
    /// generation, carrying the generation it was processed in.
    StaleAck { delay_ms: u64 },
    /// The next revoke callback takes `extra_ms` longer (possibly longer than the rebalance
    /// timeout, which gets the member removed from the group).
    SlowRevoke { extra_ms: u64 },
    /// The application is slow to give its partitions up until `until_ms`: the revoke callback
    /// under way, or else the next one to start, does not return before that instant. An
    /// event-triggered fault aims it at a protocol deadline (the end of a join phase).
    SlowRevokeUntil { until_ms: u64 },
}

/// Sans-IO consumer-group member of the classic group protocol (Java consumer behaviour,
/// eager or incremental cooperative rebalancing, per its profile).
///
/// Feed it responses ([`Member::handle_response`]), failures ([`Member::handle_failure`]) and
/// timers ([`Member::handle_timeout`] at [`Member::poll_timeout`]); drain
/// [`Member::poll_output`] after each call.
#[derive(Debug)]
pub struct Member {
    config: MemberConfig,
    /// What the member's client profile does differently, derived once from the config.
    rules: ProfileRules,
    assignors: Vec<Box<dyn Assignor>>,
    app: Box<dyn Application>,
    /// The latest `now` the member was given (for hooks called deep inside a handler).
    clock: Millis,
    started: bool,
    finished: bool,
    leaving: bool,

    outputs: Outputs,
    in_flight: InFlight,
    timers: Timers,
    metadata: Metadata,
    discovery: Discovery,
    membership: Membership,
    rebalance: Rebalance,
    heartbeat: Heartbeat,
    commits: Commits,
    positions: SubscriptionState,
    fetcher: Fetcher,
    processor: Processor,
}

impl Member {
    /// A member offering `config.assignors` (in order). `seed` drives its processing times.
    pub fn new(config: MemberConfig, seed: u64) -> Self {
        let assignors = config.assignors.iter().map(|k| k.assignor()).collect();
        Self::with_assignors(config, seed, assignors)
    }

    /// A member offering these assignors (in preference order) instead of `config.assignors`:
    /// the plug-in point for user-written [`Assignor`]s.
    pub fn with_assignors(
        config: MemberConfig,
        seed: u64,
        assignors: Vec<Box<dyn Assignor>>,
    ) -> Self {
        Self::with_application(config, seed, assignors, Box::new(ProfileApplication))
    }

    /// A member running a user-modelled [`Application`] (processing times, acks, rebalance
    /// listener) with these assignors.
    pub fn with_application(
        config: MemberConfig,
        seed: u64,
        assignors: Vec<Box<dyn Assignor>>,
        app: Box<dyn Application>,
    ) -> Self {
        let rules = ProfileRules::of(config.profile);
        let cooperative = rules.offers_cooperative
            && !assignors.is_empty()
            && assignors.iter().all(|a| a.supports_cooperative());
        Self {
            config,
            rules,
            assignors,
            app,
            clock: 0,
            started: false,
            finished: false,
            leaving: false,
            outputs: Outputs::default(),
            in_flight: InFlight::default(),
            timers: Timers::default(),
            metadata: Metadata::default(),
            discovery: Discovery::default(),
            membership: Membership::new(),
            rebalance: Rebalance::new(cooperative),
            heartbeat: Heartbeat::default(),
            commits: Commits::default(),
            positions: SubscriptionState::default(),
            fetcher: Fetcher::default(),
            processor: Processor::new(seed),
        }
    }

    // ----------------------------------------------------------------------------------------
    // Public API
    // ----------------------------------------------------------------------------------------

    /// Begins: Metadata for the subscribed topics, then FindCoordinator, then JoinGroup.
    pub fn start(&mut self, now: Millis) {
        self.clock = now;
        if !self.started && !self.finished {
            self.started = true;
            self.metadata.wanted = true;
            self.drive(now);
        }
        self.arm_timers();
    }

    /// Graceful shutdown: stop fetching, let the batch in progress finish, commit processed
    /// offsets (one attempt), revoke, send LeaveGroup, then report `Left` and finish. A member
    /// that never joined just stops.
    pub fn leave(&mut self, now: Millis) {
        self.clock = now;
        if !self.finished && !self.leaving {
            if !self.started
                || (self.membership.member_id.is_empty()
                    && self.positions.assigned.is_empty()
                    && !self.membership.ever_joined)
            {
                self.finish();
            } else {
                self.leaving = true;
                self.drive(now);
            }
        }
        self.arm_timers();
    }

    /// The answer to request `id`. Unknown ids (already failed, or from before a close) are ignored.
    pub fn handle_response(&mut self, now: Millis, id: RequestId, response: ResponseKind) {
        self.clock = now;
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
        self.clock = now;
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
        self.clock = now;
        if !self.finished {
            self.finish_processing(now);
            self.check_revoke_callback(now);
            self.check_processing_stall(now);
            self.drive(now);
        }
        self.arm_timers();
    }

    /// Next queued output, in the order produced.
    pub fn poll_output(&mut self) -> Option<MemberOutput> {
        self.outputs.pop()
    }

    /// The member left the group (or stopped for good after a fatal error or `leave`).
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// Current member id (empty before the coordinator gave one).
    pub fn member_id(&self) -> &str {
        &self.membership.member_id
    }

    /// Current generation (-1 when not in one).
    pub fn generation(&self) -> i32 {
        self.membership.generation
    }

    /// Partitions the member owns now, sorted.
    pub fn assigned(&self) -> &[TopicPartition] {
        &self.positions.assigned
    }

    /// The coordinator node the member currently trusts, if any.
    pub fn coordinator(&self) -> Option<i32> {
        self.discovery.coordinator
    }

    /// Whether the member fetches and processes records now: in a stable generation, or, for a
    /// cooperative member, also while a rebalance runs, on the partitions it still owns
    /// (KIP-429 keeps them until the new assignment takes them away, and the Java consumer
    /// still returns their records from `poll()` during a rebalance, KAFKA-8421).
    pub(in crate::classic) fn consuming(&self) -> bool {
        if self.leaving || self.finished {
            return false;
        }
        let stable = self.membership.phase == Phase::Stable && !self.membership.rejoin_needed;
        stable || (self.rebalance.cooperative && !self.positions.partitions.is_empty())
    }

    /// True when the member holds an assignment and no rebalance is under way.
    pub fn is_stable(&self) -> bool {
        self.membership.phase == Phase::Stable && !self.membership.rejoin_needed && !self.leaving
    }

    /// The configuration the member runs with.
    pub fn config(&self) -> &MemberConfig {
        &self.config
    }

    /// Whether the member uses the incremental cooperative protocol (KIP-429).
    pub fn is_cooperative(&self) -> bool {
        self.rebalance.cooperative
    }

    /// The faults end (the liveness phase): a cooperative member drops a revoke slowdown no
    /// callback has taken up yet. Its revoke callback runs only when an assignment takes a
    /// partition away, which may come long after the fault (an eager member revokes on every
    /// rebalance, so its next rebalance takes the slowdown up, as liveness bounds allow). A
    /// callback already running keeps its length. Nothing else changes and nothing is sent.
    pub fn heal_pending_faults(&mut self) {
        if self.rebalance.cooperative {
            self.rebalance.slow_revoke_ms = 0;
        }
    }

    /// Applies a fault from the nemesis (see [`MemberFault`]).
    pub fn inject(&mut self, now: Millis, fault: MemberFault) {
        self.clock = now;
        if !self.finished {
            match fault {
                MemberFault::StaleAck { delay_ms } => self.processor.inject_stale_ack(delay_ms),
                MemberFault::SlowRevoke { extra_ms } => {
                    self.rebalance.slow_revoke_ms =
                        self.rebalance.slow_revoke_ms.saturating_add(extra_ms);
                }
                MemberFault::SlowRevokeUntil { until_ms } => {
                    self.rebalance.slow_callback_until(until_ms)
                }
            }
            self.drive(now);
        }
        self.arm_timers();
    }

    // ----------------------------------------------------------------------------------------
    // Plumbing
    // ----------------------------------------------------------------------------------------

    /// Sends `request`, remembering it (and the member's view now) in the in-flight table.
    fn send(&mut self, target: Target, request: RequestKind, timeout_ms: u64, pending: Pending) {
        let id = self.outputs.send(target, request, timeout_ms);
        let sent = Sent {
            target,
            generation: self.membership.generation,
            member_id: self.membership.member_id.clone(),
        };
        self.in_flight.insert(id, sent, pending);
    }

    fn emit(&mut self, event: MemberEvent) {
        self.outputs.emit(event);
    }

    fn backoff(&self, now: Millis) -> Millis {
        now + self.config.retry_backoff_ms
    }

    /// Arms `timer` one `retry.backoff.ms` from `now`.
    fn retry_after_backoff(&mut self, timer: Timer, now: Millis) {
        let at = self.backoff(now);
        self.timers.set(timer, at);
    }

    /// Out of the rebalance after a failed JoinGroup / SyncGroup: rejoin after the profile's
    /// join backoff.
    fn retry_join_later(&mut self, now: Millis) {
        let at = self.membership.join_backoff(now, &self.rules, self.config.retry_backoff_ms);
        self.timers.set(Timer::JoinRetry, at);
    }

    fn finish(&mut self) {
        self.finished = true;
        self.processor.clear();
        self.fetcher.buffered.clear();
    }

    /// Writes the timer table's entries that follow from other state: when the first batch
    /// finishes, when the revoke callback needs attention, when a batch runs past
    /// `max.poll.interval.ms` (where enforced, and only for a member with an id); and holds the
    /// heartbeat deadline unless the member is stable with a coordinator and no heartbeat
    /// awaited, the auto-commit deadline unless it is stable with a coordinator, not rejoining
    /// or leaving, and no commit in flight. Runs after every input.
    fn arm_timers(&mut self) {
        let max_poll = self.config.rebalance_timeout_ms.max(0) as u64;
        let enforced = (self.rules.enforces_max_poll && !self.membership.member_id.is_empty())
            .then_some(max_poll);
        self.timers.set_or_cancel(Timer::ProcessingDone, self.processor.next_done_at());
        self.timers
            .set_or_cancel(Timer::RevokeCallback, self.rebalance.callback_deadline(enforced));
        let stall = enforced.and_then(|max_poll| self.processor.max_poll_deadline(max_poll));
        self.timers.set_or_cancel(Timer::MaxPollInterval, stall);
        let stable = self.membership.phase == Phase::Stable;
        let coordinator = self.discovery.coordinator.is_some();
        let heartbeat = stable && coordinator && !self.in_flight.has_awaited_heartbeat();
        self.timers.hold(Timer::Heartbeat, !heartbeat);
        let commit = stable
            && coordinator
            && !self.membership.rejoin_needed
            && !self.leaving
            && !self.in_flight.has_commit();
        self.timers.hold(Timer::AutoCommit, !commit);
    }

    // ----------------------------------------------------------------------------------------
    // The reconciliation loop
    // ----------------------------------------------------------------------------------------

    /// Looks at the state and sends whatever it calls for (the Java consumer's `poll()`).
    fn drive(&mut self, now: Millis) {
        if self.finished || !self.started {
            return;
        }
        self.expire_backoffs(now);
        if self.timers.is_due(Timer::MetadataRefresh, now) {
            self.timers.cancel(Timer::MetadataRefresh);
            self.metadata.wanted = true;
        }
        self.maybe_send_metadata();
        if !self.metadata.known {
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
        self.drive_membership(now);
        if self.membership.phase == Phase::Stable
            && !self.membership.rejoin_needed
            && !self.finished
        {
            self.maybe_auto_commit(now);
            self.maybe_fetch_committed();
            self.maybe_list_offsets();
        }
        if self.consuming() {
            // Start processing before fetching so the partition being processed is fetched
            // ahead, as the Java consumer sends its next fetch while the application works.
            self.maybe_start_processing(now);
            self.maybe_fetch();
        }
        self.maybe_send_metadata();
    }

    /// Forgets every retry backoff that ran out by `now`.
    fn expire_backoffs(&mut self, now: Millis) {
        self.timers.expire(now, |t| {
            matches!(
                t,
                Timer::MetadataRetry
                    | Timer::FindCoordinatorRetry
                    | Timer::JoinRetry
                    | Timer::OffsetFetchRetry
                    | Timer::ListOffsetsRetry
                    | Timer::FetchRetry(_)
            )
        });
    }

    // ----------------------------------------------------------------------------------------
    // Answers and failures
    // ----------------------------------------------------------------------------------------

    fn on_response(&mut self, now: Millis, sent: Sent, pending: Pending, response: ResponseKind) {
        match (pending, response) {
            (Pending::Metadata, ResponseKind::Metadata(r)) => self.on_metadata(now, r),
            (Pending::FindCoordinator, ResponseKind::FindCoordinator(r)) => {
                self.on_find_coordinator(now, r)
            }
            (Pending::JoinGroup, ResponseKind::JoinGroup(r)) => self.on_join_group(now, &sent, r),
            (Pending::SyncGroup, ResponseKind::SyncGroup(r)) => self.on_sync_group(now, &sent, r),
            (Pending::Heartbeat { .. }, ResponseKind::Heartbeat(r)) => {
                self.on_heartbeat(now, &sent, r.error_code)
            }
            (Pending::OffsetCommit { offsets, purpose, epoch }, ResponseKind::OffsetCommit(r)) => {
                self.on_offset_commit(now, &sent, offsets, purpose, epoch, r)
            }
            (Pending::OffsetFetch { epoch, partitions }, ResponseKind::OffsetFetch(r)) => {
                self.on_offset_fetch(now, &sent, epoch, partitions, r)
            }
            (Pending::ListOffsets { epoch, partitions }, ResponseKind::ListOffsets(r)) => {
                self.on_list_offsets(now, epoch, partitions, r)
            }
            (Pending::Fetch { epoch, node, positions }, ResponseKind::Fetch(r)) => {
                self.on_fetch(now, epoch, node, positions, r)
            }
            (Pending::LeaveGroup, ResponseKind::LeaveGroup(r)) => {
                self.probe_leave_errors(&r);
                self.on_leave_done()
            }
            (Pending::PollTimeoutLeave, ResponseKind::LeaveGroup(r)) => self.probe_leave_errors(&r),
            (pending, _) => {
                tracing::debug!(api = pending.api(), "answer of the wrong kind");
                self.on_failure(now, sent, pending, Failure::Unusable("UNEXPECTED_RESPONSE"));
            }
        }
    }

    fn on_failure(&mut self, now: Millis, sent: Sent, pending: Pending, failure: Failure) {
        let api = pending.api();
        match pending {
            Pending::Metadata => {
                self.metadata.wanted = true;
                self.retry_after_backoff(Timer::MetadataRetry, now);
                self.metadata.broker_cursor += 1;
            }
            Pending::FindCoordinator => {
                crate::probes::DISCOVERY_FAILED.hit();
                self.retry_after_backoff(Timer::FindCoordinatorRetry, now);
                self.metadata.broker_cursor += 1;
            }
            Pending::JoinGroup => {
                if self.membership.phase == Phase::Joining {
                    self.membership.phase = Phase::Unjoined;
                    self.retry_join_later(now);
                }
            }
            Pending::SyncGroup => {
                if self.membership.phase == Phase::Syncing {
                    self.membership.phase = Phase::Unjoined;
                    self.retry_join_later(now);
                }
            }
            Pending::Heartbeat { awaited } => {
                if awaited {
                    self.retry_after_backoff(Timer::Heartbeat, now);
                }
            }
            Pending::OffsetCommit { offsets, purpose, .. } => {
                if matches!(failure, Failure::Connection(_)) {
                    crate::probes::COMMIT_ANSWER_LOST.hit();
                }
                let error = failure.name();
                for (tp, offset) in offsets {
                    self.emit(MemberEvent::CommitFailed {
                        member_id: sent.member_id.clone(),
                        generation: sent.generation,
                        partition: tp,
                        offset,
                        error: error.clone(),
                    });
                }
                if purpose == CommitPurpose::Auto {
                    self.retry_after_backoff(Timer::AutoCommit, now);
                }
                if purpose == CommitPurpose::RevokeCallback {
                    self.on_revoke_callback_commit_done(now);
                }
            }
            Pending::OffsetFetch { .. } => {
                self.retry_after_backoff(Timer::OffsetFetchRetry, now);
            }
            Pending::ListOffsets { epoch, partitions } => {
                self.positions.reset_answered(epoch, &partitions);
                self.retry_after_backoff(Timer::ListOffsetsRetry, now);
                if matches!(failure, Failure::Connection(_)) {
                    self.metadata.wanted = true;
                }
            }
            Pending::Fetch { epoch, node, positions } => {
                self.clear_fetch_in_flight(epoch, &positions);
                self.retry_after_backoff(Timer::FetchRetry(node), now);
                if matches!(failure, Failure::Connection(_)) {
                    self.metadata.wanted = true;
                }
            }
            Pending::LeaveGroup => self.on_leave_done(),
            Pending::PollTimeoutLeave => {}
        }
        if matches!(failure, Failure::Connection(_)) {
            // A request on the coordinator connection timed out or was disconnected: the
            // coordinator is presumed dead (as the Java client's `markCoordinatorUnknown`).
            self.coordinator_failed(now, sent.target, &format!("{api} {}", failure.name()));
        }
    }
}
