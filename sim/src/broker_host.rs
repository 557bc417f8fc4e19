//! A simulated broker host: binds the broker port, runs the sans-IO broker core in one task and
//! serves each connection in its own task. State lives only in the host: a crash loses it (the
//! partition logs are shared with the world and outlive the broker).

use groupsim_coordinator::broker::{Broker, BrokerConfig};
use groupsim_coordinator::log::SharedLogs;
use groupsim_coordinator::wire::server::{broker_channel, run_broker, serve_connection};
use tracing::debug;

use crate::history::EventKind;
use crate::world::{sim_now, SharedHistory, BROKER_PORT};

/// The broker host's software (turmoil calls this again after a restart).
pub async fn run(
    config: BrokerConfig,
    logs: SharedLogs,
    history: SharedHistory,
) -> turmoil::Result {
    let node_id = config.node_id;
    let broker = Broker::new(config, logs);
    let (handle, calls) = broker_channel();
    tokio::task::spawn_local(run_broker(broker, calls, sim_now, move |at, event| {
        history.borrow_mut().record(at, EventKind::Coordinator { broker: node_id, event });
    }));
    let listener = turmoil::net::TcpListener::bind(("0.0.0.0", BROKER_PORT)).await?;
    loop {
        let (stream, peer) = listener.accept().await?;
        let handle = handle.clone();
        tokio::task::spawn_local(async move {
            if let Err(e) = serve_connection(stream, handle).await {
                debug!(broker = node_id, %peer, error = %e, "connection closed");
            }
        });
    }
}
