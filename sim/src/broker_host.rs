//! A simulated broker host: binds the broker port, runs the sans-IO broker core in one task and
//! serves each connection in its own task. State lives only in the host: a crash loses it (the
//! partition logs, the offsets log and the cluster metadata are shared with the world and
//! outlive the broker).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use groupsim_coordinator::broker::{Broker, BrokerConfig, BrokerControl};
use groupsim_coordinator::cluster::{ClusterState, SharedClusterState};
use groupsim_coordinator::log::SharedLogs;
use groupsim_coordinator::offsets_log::{OffsetsLog, SharedOffsetsLog};
use groupsim_history::EventKind;
use groupsim_wire::server::{broker_channel, serve_connection};
use tokio::sync::mpsc;
use tracing::debug;

use crate::broker_task::run_broker_controlled;
use crate::host::{sim_now, SharedHistory, BROKER_PORT};
use crate::record::IntoHistory;

/// Running brokers' control channels, by node id. A broker registers its sender each time its
/// software (re)starts; the world's [`crate::cluster::Cluster`] sends coordinator moves on it.
pub type BrokerControls = Rc<RefCell<BTreeMap<i32, mpsc::UnboundedSender<BrokerControl>>>>;

/// Everything a broker host shares with the world.
#[derive(Clone, Debug)]
pub struct BrokerShared {
    /// Topic partition logs.
    pub logs: SharedLogs,
    /// Cluster metadata (who leads what).
    pub cluster: SharedClusterState,
    /// The replicated offsets log.
    pub offsets_log: SharedOffsetsLog,
    /// The run's history.
    pub history: SharedHistory,
    /// Where the broker registers its control channel.
    pub controls: BrokerControls,
}

/// The broker host's software in a cluster of its own (static placement, private offsets
/// log): the single-broker setting.
pub async fn run(
    config: BrokerConfig,
    logs: SharedLogs,
    history: SharedHistory,
) -> turmoil::Result {
    let cluster = ClusterState::new(config.brokers.clone(), config.offsets_topic_partitions);
    let shared = BrokerShared {
        logs,
        cluster: cluster.shared(),
        offsets_log: OffsetsLog::new(config.offsets_topic_partitions).shared(),
        history,
        controls: Rc::default(),
    };
    run_in_cluster(config, shared).await
}

/// The broker host's software (turmoil calls this again after a restart, with empty state):
/// builds the broker from the shared cluster state at the current simulated time (loading the
/// offsets partitions the cluster says it leads), registers its control channel, and serves.
pub async fn run_in_cluster(config: BrokerConfig, shared: BrokerShared) -> turmoil::Result {
    let node_id = config.node_id;
    let broker = Broker::with_cluster(
        config,
        shared.logs.clone(),
        shared.cluster.clone(),
        shared.offsets_log.clone(),
        sim_now(),
    );
    let (control_tx, control_rx) = mpsc::unbounded_channel();
    shared.controls.borrow_mut().insert(node_id, control_tx);
    let (handle, calls) = broker_channel();
    let history = shared.history.clone();
    tokio::task::spawn_local(run_broker_controlled(
        broker,
        calls,
        control_rx,
        sim_now,
        move |at, event| {
            history.borrow_mut().record(
                at,
                EventKind::Coordinator { broker: node_id, event: event.into_history() },
            );
        },
    ));
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
