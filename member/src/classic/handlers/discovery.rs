//! Finding the coordinator, and losing it.

use kafka_protocol::messages::{FindCoordinatorResponse, RequestKind};

use crate::classic::in_flight::{Failure, Pending, Request};
use crate::classic::membership::Phase;
use crate::classic::timers::Timer;
use crate::classic::{Member, RequestFailure, Target};
use crate::probes;
use crate::shared::discovery::Discovery;
use crate::{MemberEvent, Millis};

impl Member {
    pub(in crate::classic) fn maybe_find_coordinator(&mut self) {
        if self.discovery.coordinator.is_some()
            || self.in_flight.has_find_coordinator()
            || self.timers.is_set(Timer::FindCoordinatorRetry)
        {
            return;
        }
        let req = Discovery::request(&self.config.group_id);
        let target = Target::Broker(self.metadata.any_broker(self.config.bootstrap_node));
        let timeout = self.config.request_timeout_ms;
        self.send(target, RequestKind::FindCoordinator(req), timeout, Pending::FindCoordinator);
    }

    pub(in crate::classic) fn on_find_coordinator(
        &mut self,
        now: Millis,
        resp: FindCoordinatorResponse,
    ) {
        let Some(node) = Discovery::read_answer(&resp, &self.config.group_id) else {
            probes::DISCOVERY_FAILED.hit();
            let code = Discovery::answer(&resp, &self.config.group_id).0;
            probes::error_handled(self.config.profile, "FindCoordinator", code);
            self.retry_after_backoff(Timer::FindCoordinatorRetry, now);
            return;
        };
        if self.discovery.coordinator.is_some() {
            return;
        }
        self.discovery.coordinator = Some(node);
        // A fresh coordinator gets a fresh session window (Java: resetSessionTimeout).
        self.heartbeat.last_ok = now;
        self.emit(MemberEvent::CoordinatorFound { node_id: node });
    }

    /// A request to `target` failed (a lost connection, NOT_COORDINATOR or
    /// COORDINATOR_NOT_AVAILABLE): if it went to the current coordinator, that coordinator is
    /// forgotten.
    pub(in crate::classic) fn coordinator_failed(
        &mut self,
        now: Millis,
        target: Target,
        reason: &str,
    ) {
        if let Target::Coordinator(node) = target {
            if self.discovery.coordinator == Some(node) {
                self.mark_coordinator_unknown(now, reason);
            }
        }
    }

    /// Forget the coordinator: report it, close its connection, fail what was in flight on it,
    /// and look it up again after `retry_backoff_ms`.
    pub(in crate::classic) fn mark_coordinator_unknown(&mut self, now: Millis, reason: &str) {
        let Some(node) = self.discovery.coordinator.take() else {
            return;
        };
        self.emit(MemberEvent::CoordinatorLost { reason: reason.to_string() });
        if self.rules.rejoin_on_coordinator_loss && self.membership.phase == Phase::Stable {
            // brod stabilizes on a lost connection or NOT_COORDINATOR: revoke, rejoin with an
            // empty member id.
            self.membership.rejoin_needed = true;
            self.membership.reset_member_id_on_join = true;
        }
        self.outputs.close(Target::Coordinator(node));
        self.retry_after_backoff(Timer::FindCoordinatorRetry, now);
        for id in self.in_flight.on(Target::Coordinator(node)) {
            if let Some(Request { sent, pending }) = self.in_flight.remove(id) {
                let failure = Failure::Connection(RequestFailure::Disconnected);
                self.on_failure(now, sent, pending, failure);
            }
        }
    }
}
