//! Metadata requests and answers, and finding the coordinator.

use groupsim_wire::error_codes as codes;
use kafka_protocol::messages::{FindCoordinatorResponse, MetadataResponse, RequestKind};

use crate::probes;
use crate::shared::core::{Plumbing, Protocol};
use crate::shared::discovery::Discovery;
use crate::shared::in_flight::Pending;
use crate::shared::outputs::Target;
use crate::shared::timers::Timer;
use crate::{MemberEvent, Millis};

/// Metadata and coordinator discovery.
pub(crate) trait Cluster: Protocol {
    /// The first steps of every drive: nothing before `start` or after the end; expired
    /// backoffs forgotten, a due refresh wanted, Metadata sent if wanted. True when metadata
    /// is known and the member may go on.
    fn drive_metadata(&mut self, now: Millis) -> bool {
        let core = self.core_mut();
        if core.finished || !core.started {
            return false;
        }
        core.expire_backoffs(now);
        core.refresh_metadata_when_due(now);
        self.maybe_send_metadata();
        self.core().metadata.known
    }

    fn maybe_send_metadata(&mut self) {
        let core = self.core();
        if !core.metadata.wanted
            || core.in_flight.has_metadata()
            || core.timers.is_set(Timer::MetadataRetry)
        {
            return;
        }
        let target = Target::Broker(core.metadata.any_broker(core.config.bootstrap_node));
        self.send_metadata(target);
    }

    /// Sends the Metadata request now, over `target`, whatever else is in flight.
    fn send_metadata(&mut self, target: Target) {
        let core = self.core();
        let req = core.metadata.request(&core.config.topics);
        let timeout = core.config.request_timeout_ms;
        self.send(target, RequestKind::Metadata(req), timeout, Pending::Metadata);
        self.core_mut().metadata.wanted = false;
    }

    fn on_metadata(&mut self, now: Millis, resp: MetadataResponse) {
        // Like the Java client's metadata refresh backoff: at most one Metadata per backoff.
        self.retry_after_backoff(Timer::MetadataRetry, now);
        let profile = self.core().config.profile;
        if resp.error_code != codes::NONE {
            probes::error_handled(profile, "Metadata", resp.error_code);
            self.core_mut().metadata.wanted = true;
            return;
        }
        probes::errors_handled(profile, "Metadata", resp.topics.iter().map(|t| t.error_code));
        self.core_mut().metadata.apply(resp);
        let refresh = self.metadata_refresh_ms();
        self.core_mut().timers.set(Timer::MetadataRefresh, now + refresh);
        self.metadata_applied();
    }

    /// Wants a Metadata refresh that also covers `topic` (if it is not subscribed already).
    fn want_metadata_for(&mut self, topic: &str) {
        let core = self.core_mut();
        core.metadata.want_for(topic, &core.config.topics);
    }

    fn maybe_find_coordinator(&mut self) {
        let core = self.core();
        if core.discovery.coordinator.is_some()
            || core.in_flight.has_find_coordinator()
            || core.timers.is_set(Timer::FindCoordinatorRetry)
        {
            return;
        }
        let req = Discovery::request(&core.config.group_id);
        let target = Target::Broker(core.metadata.any_broker(core.config.bootstrap_node));
        let timeout = core.config.request_timeout_ms;
        self.send(target, RequestKind::FindCoordinator(req), timeout, Pending::FindCoordinator);
    }

    fn on_find_coordinator(&mut self, now: Millis, resp: FindCoordinatorResponse) {
        let config = &self.core().config;
        let Some(node) = Discovery::read_answer(&resp, &config.group_id) else {
            probes::DISCOVERY_FAILED.hit();
            let code = Discovery::answer(&resp, &config.group_id).0;
            probes::error_handled(config.profile, "FindCoordinator", code);
            self.retry_after_backoff(Timer::FindCoordinatorRetry, now);
            return;
        };
        if self.core().discovery.coordinator.is_some() {
            return;
        }
        self.core_mut().discovery.coordinator = Some(node);
        self.coordinator_found(now);
        self.emit(MemberEvent::CoordinatorFound { node_id: node });
    }
}

impl<M: Protocol + ?Sized> Cluster for M {}
