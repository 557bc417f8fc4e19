//! A broker host of the turmoil world: binds the broker port, runs the [`BrokerProcess`]
//! (through the shared broker task) and serves each connection in its own task with the wire
//! crate's in-order server loop. State lives only in the host: a crash loses it (the partition
//! logs, the offsets log and the cluster metadata are the cluster's and outlive it).
//!
//! [`BrokerProcess`]: crate::process::BrokerProcess

use groupsim_coordinator::broker::BrokerConfig;
use groupsim_coordinator::CoordinatorEvent;
use groupsim_wire::probe::Tap;
use groupsim_wire::server::{broker_channel, serve_connection_with, ServeOptions};
use groupsim_wire::Millis;
use tokio::sync::mpsc;
use tracing::debug;

use super::{sim_now, tasks, Shared};
use crate::process::broker_task::{run_broker_controlled, BrokerReport};
use crate::process::BrokerOutput;
use crate::record::{late_request, IntoHistory};
use crate::world::orders::BROKER_PORT;
use crate::world::stage::cluster::BrokerShared;
use groupsim_history::EventKind;

/// Where the broker's events and probe hits go.
struct Report {
    node: i32,
    shared: Shared,
}

impl BrokerReport for Report {
    fn event(&mut self, at: Millis, event: CoordinatorEvent) {
        let kind = EventKind::Coordinator { broker: self.node, event: event.into_history() };
        self.shared.history.borrow_mut().record(at, kind);
    }

    fn tap(&mut self, tap: Tap) {
        self.shared.taps.borrow_mut().push(tap);
    }

    fn late(&mut self, at: Millis, late: BrokerOutput<()>) {
        if let BrokerOutput::Late { client_id, api, member_id, read_at } = late {
            let event = late_request(self.node, client_id, api, member_id, read_at);
            self.shared.history.borrow_mut().record(at, EventKind::World(event));
        }
    }
}

/// The broker host's software (turmoil calls this again after a restart, with empty state):
/// boots the broker at the current simulated time, registers its control channel, and serves.
pub(super) async fn run(
    config: BrokerConfig,
    cluster: BrokerShared,
    shared: Shared,
    idle_close_ms: Option<Millis>,
) -> ::turmoil::Result {
    let options = ServeOptions {
        idle_close: idle_close_ms.map(std::time::Duration::from_millis),
        ..ServeOptions::default()
    };
    let node = config.node_id;
    let core = cluster.boot(config, sim_now());
    let (control_tx, controls) = mpsc::unbounded_channel();
    shared.brokers.borrow_mut().insert(node, control_tx);
    let (handle, calls) = broker_channel();
    let failure = shared.failure.clone();
    let report = Report { node, shared };
    tasks::spawn(&failure, run_broker_controlled(core, calls, controls, sim_now, report));
    let listener = ::turmoil::net::TcpListener::bind(("0.0.0.0", BROKER_PORT)).await?;
    loop {
        let (stream, peer) = listener.accept().await?;
        let (handle, options) = (handle.clone(), options.clone());
        tasks::spawn(&failure, async move {
            if let Err(e) = serve_connection_with(stream, handle, options).await {
                debug!(broker = node, %peer, error = %e, "connection closed");
            }
        });
    }
}
