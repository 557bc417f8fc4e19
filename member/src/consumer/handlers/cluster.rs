//! Metadata (with topic ids, which resolve the assignment) and the coordinator.

use groupsim_wire::error_codes as codes;
use kafka_protocol::messages::{FindCoordinatorResponse, MetadataResponse, RequestKind};

use crate::consumer::in_flight::Pending;
use crate::consumer::timers::Timer;
use crate::consumer::ConsumerGroupMember;
use crate::shared::discovery::Discovery;
use crate::shared::in_flight::{Failure, Request};
use crate::{probes, MemberEvent, Millis, RequestFailure, Target};

impl ConsumerGroupMember {
    pub(in crate::consumer) fn maybe_send_metadata(&mut self) {
        let in_flight = self.in_flight.any(|p| matches!(p, Pending::Metadata));
        if !self.metadata.wanted || in_flight || self.timers.is_set(Timer::MetadataRetry) {
            return;
        }
        let req = self.metadata.request(&self.config.topics);
        let target = Target::Broker(self.metadata.any_broker(self.config.bootstrap_node));
        self.send(
            target,
            RequestKind::Metadata(req),
            self.config.request_timeout_ms,
            Pending::Metadata,
        );
        self.metadata.wanted = false;
    }

    pub(in crate::consumer) fn on_metadata(&mut self, now: Millis, resp: MetadataResponse) {
        self.retry_after_backoff(Timer::MetadataRetry, now);
        probes::error_handled(self.config.profile, "Metadata", resp.error_code);
        if resp.error_code != codes::NONE {
            self.metadata.wanted = true;
            return;
        }
        self.metadata.apply(resp);
        self.timers.set(Timer::MetadataRefresh, now + self.config.metadata_max_age_ms);
    }

    pub(in crate::consumer) fn maybe_find_coordinator(&mut self) {
        let in_flight = self.in_flight.any(|p| matches!(p, Pending::FindCoordinator));
        if self.discovery.coordinator.is_some()
            || in_flight
            || self.timers.is_set(Timer::FindCoordinatorRetry)
        {
            return;
        }
        let req = Discovery::request(&self.config.group_id);
        let target = Target::Broker(self.metadata.any_broker(self.config.bootstrap_node));
        let timeout = self.config.request_timeout_ms;
        self.send(target, RequestKind::FindCoordinator(req), timeout, Pending::FindCoordinator);
    }

    pub(in crate::consumer) fn on_find_coordinator(
        &mut self,
        now: Millis,
        resp: FindCoordinatorResponse,
    ) {
        match Discovery::read_answer(&resp, &self.config.group_id) {
            None => {
                probes::DISCOVERY_FAILED.hit();
                let code = Discovery::answer(&resp, &self.config.group_id).0;
                probes::error_handled(self.config.profile, "FindCoordinator", code);
                self.retry_after_backoff(Timer::FindCoordinatorRetry, now);
            }
            Some(node) if self.discovery.coordinator.is_none() => {
                self.discovery.coordinator = Some(node);
                self.emit(MemberEvent::CoordinatorFound { node_id: node });
            }
            Some(_) => {}
        }
    }

    /// A request to `target` failed: if it went to the coordinator, forget the coordinator.
    pub(in crate::consumer) fn coordinator_failed(
        &mut self,
        now: Millis,
        target: Target,
        reason: &str,
    ) {
        if matches!(target, Target::Coordinator(node) if self.discovery.coordinator == Some(node)) {
            self.mark_coordinator_unknown(now, reason);
        }
    }

    /// Forget the coordinator: report it, close its connection, fail what was in flight on it,
    /// look it up again, and send a full heartbeat to the next one.
    pub(in crate::consumer) fn mark_coordinator_unknown(&mut self, now: Millis, reason: &str) {
        let Some(node) = self.discovery.coordinator.take() else {
            return;
        };
        self.emit(MemberEvent::CoordinatorLost { reason: reason.to_string() });
        self.heartbeat.reset();
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
