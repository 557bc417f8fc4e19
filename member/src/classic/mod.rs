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
//! The [`Member`] here is the orchestrator over owned sub-states, each of its own type in its
//! own file (as quinn-proto's `connection/`): `membership` (member id, generation, group
//! errors), `rebalance` (revoke and assign), `heartbeat`, `commits`, beside the
//! protocol-neutral `Core` it shares with the KIP-848 member
//! (metadata, coordinator, positions, fetch, processing, timers, requests in flight, outputs),
//! whose handlers are written once in `crate::shared::handlers`. What needs the whole member
//! lives in `impl Member` blocks under `handlers/`, one file per concern; how the shared
//! handlers reach it (and the loop itself), in `protocol`.
//!
//! Profiles differ in a few places, all read from one table (`profile_rules`): the steps
//! before giving partitions up (wait for or detach the batch in progress, commit before or
//! after the revoke callback, or not at all), how acks of work that outlived its generation
//! are treated, join retry timing, member id resets, and which metadata changes trigger a
//! rejoin.

mod commits;
mod handlers;
mod heartbeat;
mod membership;
pub(crate) mod profile_rules;
mod protocol;
mod rebalance;

use crate::shared::handlers::prelude::*;
use kafka_protocol::messages::ResponseKind;

pub use crate::shared::outputs::{MemberOutput, RequestFailure, Target};

use self::commits::Commits;
use self::heartbeat::Heartbeat;
use self::membership::{Membership, Phase};
use self::profile_rules::ProfileRules;
use self::rebalance::Rebalance;
use crate::shared::core::{Core, Plumbing, Protocol};
use crate::shared::timers::Timer;
use crate::{
    Application, Assignor, MemberConfig, Millis, ProfileApplication, RequestId, TopicPartition,
};

/// A fault the world's nemesis injects into a member (see [`Member::inject`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum MemberFault {
    /// The batch being processed (or the next one) finishes `delay_ms` later and is detached
    /// from revocation: the member does not wait for it, so its ack may arrive in a later
    /// generation, carrying the generation it was processed in.
    StaleAck { delay_ms: u64 },
    /// The batch being processed (or the next one) takes `extra_ms` longer and the poll loop
    /// waits for it: the application is stuck, so `max.poll.interval.ms` may run out.
    SlowBatch { extra_ms: u64 },
    /// The next revoke callback takes `extra_ms` longer (possibly longer than the rebalance
    /// timeout, which gets the member removed from the group). Several injected before that
    /// callback starts describe the same slow callback: the longest holds, they do not add up.
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
    /// The protocol-neutral state (metadata, coordinator, positions, fetch, processing,
    /// outputs, timers, requests in flight).
    core: Core,
    /// What the member's client profile does differently, derived once from the config.
    rules: ProfileRules,
    assignors: Vec<Box<dyn Assignor>>,
    leaving: bool,

    membership: Membership,
    rebalance: Rebalance,
    heartbeat: Heartbeat,
    commits: Commits,
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
            core: Core::new(config, seed, app),
            rules,
            assignors,
            leaving: false,
            membership: Membership::new(),
            rebalance: Rebalance::new(cooperative),
            heartbeat: Heartbeat::default(),
            commits: Commits::default(),
        }
    }

    // ----------------------------------------------------------------------------------------
    // Public API
    // ----------------------------------------------------------------------------------------

    /// Begins: Metadata for the subscribed topics, then FindCoordinator, then JoinGroup.
    pub fn start(&mut self, now: Millis) {
        self.core.clock = now;
        if !self.core.started && !self.core.finished {
            self.core.started = true;
            self.core.metadata.wanted = true;
            self.drive(now);
        }
        self.arm_timers();
    }

    /// Graceful shutdown: stop fetching, let the batch in progress finish, commit processed
    /// offsets (one attempt), revoke, send LeaveGroup, then report `Left` and finish. A member
    /// that never joined just stops.
    pub fn leave(&mut self, now: Millis) {
        self.core.clock = now;
        if !self.core.finished && !self.leaving {
            if !self.core.started
                || (self.membership.member_id.is_empty()
                    && self.core.positions.assigned.is_empty()
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
        self.answer(now, id, Ok(response));
    }

    /// Request `id` got no answer.
    pub fn handle_failure(&mut self, now: Millis, id: RequestId, failure: RequestFailure) {
        self.answer(now, id, Err(failure));
    }

    /// The earliest instant at which [`Self::handle_timeout`] has work to do.
    pub fn poll_timeout(&self) -> Option<Millis> {
        self.core.poll_timeout()
    }

    /// Fires every timer due at or before `now`.
    pub fn handle_timeout(&mut self, now: Millis) {
        self.input(now, |m| {
            m.finish_processing(now);
            m.check_revoke_callback(now);
            m.check_processing_stall(now);
        });
    }

    /// Next queued output, in the order produced.
    pub fn poll_output(&mut self) -> Option<MemberOutput> {
        self.core.outputs.pop()
    }

    /// The member left the group (or stopped for good after a fatal error or `leave`).
    pub fn is_finished(&self) -> bool {
        self.core.finished
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
        &self.core.positions.assigned
    }

    /// The coordinator node the member currently trusts, if any.
    pub fn coordinator(&self) -> Option<i32> {
        self.core.discovery.coordinator
    }

    /// True when the member holds an assignment and no rebalance is under way.
    pub fn is_stable(&self) -> bool {
        self.membership.phase == Phase::Stable && !self.membership.rejoin_needed && !self.leaving
    }

    /// The configuration the member runs with.
    pub fn config(&self) -> &MemberConfig {
        &self.core.config
    }

    /// Whether the member uses the incremental cooperative protocol (KIP-429).
    pub fn is_cooperative(&self) -> bool {
        self.rebalance.cooperative
    }

    /// The faults end (the liveness phase): the member drops a revoke slowdown no callback has
    /// taken up yet, and a stale ack or slow batch no batch has, so no fault acts after the heal — the next rebalance may come long after
    /// the fault (a cooperative member's callback runs only when an assignment takes a
    /// partition away; an eager member's at its next rebalance, which a late rejoin can start
    /// at any time). A callback already running keeps its length. Nothing else changes and
    /// nothing is sent.
    pub fn heal_pending_faults(&mut self) {
        self.rebalance.slow_revoke_ms = 0;
        self.core.processor.drop_pending_faults();
    }

    /// Applies a fault from the nemesis (see [`MemberFault`]).
    pub fn inject(&mut self, now: Millis, fault: MemberFault) {
        self.input(now, |m| match fault {
            MemberFault::StaleAck { delay_ms } => m.core.processor.inject_stale_ack(delay_ms),
            MemberFault::SlowBatch { extra_ms } => {
                m.core.processor.inject_slow_batch(now, extra_ms)
            }
            MemberFault::SlowRevoke { extra_ms } => {
                m.rebalance.slow_revoke_ms = m.rebalance.slow_revoke_ms.max(extra_ms);
            }
            MemberFault::SlowRevokeUntil { until_ms } => m.rebalance.slow_callback_until(until_ms),
        });
    }

    // ----------------------------------------------------------------------------------------
    // Plumbing
    // ----------------------------------------------------------------------------------------

    /// Out of the rebalance after a failed JoinGroup / SyncGroup: rejoin after the profile's
    /// join backoff.
    fn retry_join_later(&mut self, now: Millis) {
        let at = self.membership.join_backoff(now, &self.rules, self.core.config.retry_backoff_ms);
        self.core.timers.set(Timer::JoinRetry, at);
    }

    fn finish(&mut self) {
        self.core.finish();
    }
}
