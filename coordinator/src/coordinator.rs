//! The group coordinator core: owns every group on this broker, its offsets and its timers.

use std::collections::VecDeque;

use kafka_protocol::messages::{RequestKind, ResponseKind};

use crate::{CoordinatorConfig, CoordinatorEvent, Millis, RequestId};

/// What the coordinator asks its driver to do.
#[derive(Clone, Debug, PartialEq)]
pub enum CoordinatorOutput {
    /// Answer request `id` with `response` (encode with the request's version).
    Response { id: RequestId, response: ResponseKind },
    /// Record a ground-truth event in the history.
    Event(CoordinatorEvent),
}

/// Sans-IO classic group coordinator.
#[derive(Debug)]
pub struct GroupCoordinator {
    config: CoordinatorConfig,
    outputs: VecDeque<CoordinatorOutput>,
}

impl GroupCoordinator {
    /// A coordinator with no groups.
    pub fn new(config: CoordinatorConfig) -> Self {
        Self { config, outputs: VecDeque::new() }
    }

    /// The configuration this coordinator runs with.
    pub fn config(&self) -> &CoordinatorConfig {
        &self.config
    }

    /// Handle a group API request (JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit,
    /// OffsetFetch) of wire version `version`. The answer is queued now or later.
    pub fn handle_request(&mut self, now: Millis, id: RequestId, version: i16, request: RequestKind) {
        let _ = (now, id, version, request);
        todo!("helper A")
    }

    /// The earliest instant at which [`Self::handle_timeout`] has work to do.
    pub fn poll_timeout(&self) -> Option<Millis> {
        None
    }

    /// Fire every timer due at or before `now` (session expiry, rebalance completion, …).
    pub fn handle_timeout(&mut self, now: Millis) {
        let _ = now;
    }

    /// Next queued output, in the order produced.
    pub fn poll_output(&mut self) -> Option<CoordinatorOutput> {
        self.outputs.pop_front()
    }
}
