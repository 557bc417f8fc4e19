//! The broker process: the sans-IO [`Broker`] core with the requests it owes answers. Each
//! request gets a [`RequestId`]; the host says where its answer goes (`R`: a connection and how
//! to encode, or a channel back to a connection task) and gets it back with the answer. Probes
//! a request hits are the requesting client's (its name is its client id); timers and control
//! instructions are nobody's.

use std::collections::BTreeMap;
use std::sync::Arc;

use groupsim_coordinator::broker::{Broker, BrokerControl};
use groupsim_coordinator::{CoordinatorEvent, CoordinatorOutput};
use groupsim_wire::probe::{self, Tap};
use groupsim_wire::{Millis, RequestId};
use kafka_protocol::messages::{RequestKind, ResponseKind};

/// What the broker process hands its host, in the order produced.
#[derive(Debug)]
pub enum BrokerOutput<R> {
    /// The answer to a request, to send where the host said.
    Answer { to: R, response: ResponseKind },
    /// A coordinator event for the history.
    Event(CoordinatorEvent),
}

/// A running broker (see the module docs).
#[derive(Debug)]
pub struct BrokerProcess<R> {
    core: Broker,
    waiting: BTreeMap<RequestId, R>,
    next_id: u64,
    taps: Vec<Tap>,
}

impl<R> BrokerProcess<R> {
    /// The process around `core` (just built: probes its loading hit are nobody's).
    pub fn new(core: Broker) -> Self {
        let mut process = Self { core, waiting: BTreeMap::new(), next_id: 0, taps: Vec::new() };
        process.taps(None);
        process
    }

    fn taps(&mut self, actor: Option<&str>) {
        for probe in probe::take_taps() {
            self.taps.push(Tap { probe, actor: actor.map(Arc::from) });
        }
    }

    /// A request from client `client_id`, encoded at `version`; its answer goes to `to`.
    pub fn request(
        &mut self,
        now: Millis,
        to: R,
        version: i16,
        client_id: &str,
        request: RequestKind,
    ) {
        let id = RequestId(self.next_id);
        self.next_id += 1;
        self.waiting.insert(id, to);
        self.core.handle_request_from(now, id, version, client_id, request);
        self.taps(Some(client_id));
    }

    /// Fires the coordinator's timers due at `now` (afterwards none is due at `now`: the core
    /// guarantees it).
    pub fn handle_timeout(&mut self, now: Millis) {
        self.core.handle_timeout(now);
        self.taps(None);
    }

    /// Applies a control instruction from the cluster (a coordinator move).
    pub fn apply_control(&mut self, now: Millis, control: BrokerControl) {
        self.core.apply_control(now, control);
        self.taps(None);
    }

    /// When [`Self::handle_timeout`] is next due.
    pub fn poll_timeout(&self) -> Option<Millis> {
        self.core.poll_timeout()
    }

    /// The next output. An answer to a request nobody waits for is dropped (with a warning).
    pub fn poll_output(&mut self) -> Option<BrokerOutput<R>> {
        loop {
            let output = self.core.poll_output()?;
            return Some(match output {
                CoordinatorOutput::Event(event) => BrokerOutput::Event(event),
                CoordinatorOutput::Response { id, response } => match self.waiting.remove(&id) {
                    Some(to) => BrokerOutput::Answer { to, response },
                    None => {
                        tracing::warn!(?id, "broker answered a request that is not waiting");
                        continue;
                    }
                },
            });
        }
    }

    /// The probes hit since the last call, each with its actor.
    pub fn take_taps(&mut self) -> Vec<Tap> {
        std::mem::take(&mut self.taps)
    }
}
