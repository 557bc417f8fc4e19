//! A running loopback cluster: its brokers' listeners and cores, the state they share, and the
//! admin hooks (coordinator moves, broker stops and starts, the world's producer) that also
//! record what they did in the cluster's history.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use groupsim_coordinator::broker::{Broker, BrokerAddress, BrokerConfig, BrokerControl};
use groupsim_coordinator::cluster::{self, ClusterState, SharedClusterState};
use groupsim_coordinator::log::{self, PartitionLogs, SharedLogs};
use groupsim_coordinator::offsets_log::OffsetsLog;
use groupsim_coordinator::{ConsumerGroupEvent, CoordinatorEvent};
use groupsim_wire::server::broker_channel;
use groupsim_wire::{Millis, TopicPartition};

use groupsim_history::{History, WorldEvent};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::config::ClusterConfig;
use super::connection::accept_loop;
use super::error::ServeError;
use super::gate::Gate;
use super::recorder::Recorder;
use super::shared::Shared;
use groupsim::process::broker_task::run_broker_controlled;
use groupsim::process::BrokerOrder;

/// The only address `groupsim serve` binds.
pub const LOOPBACK: &str = "127.0.0.1";

/// A running loopback cluster (see the module docs). Dropping it stops every broker.
///
/// Its brokers run on a tokio runtime the cluster owns, so the methods are plain blocking
/// calls, usable from ordinary `#[test]`s. (Do not drop a `Cluster` from inside an async task of
/// another runtime that must not block: the drop waits briefly for the brokers to stop.)
///
/// Like the simulated cluster, the brokers share the cluster metadata (who leads which topic
/// partition and which offsets partition, i.e. which broker coordinates which group) and the
/// offsets log, so a coordinator move or a stopped broker is handled as in Kafka: the new
/// coordinator loads the group (members and committed offsets) from the offsets log.
pub struct Cluster {
    runtime: Option<tokio::runtime::Runtime>,
    pub(super) shared: Arc<Shared>,
    slots: Vec<Slot>,
    config: BrokerConfig,
    /// How each broker serves its connections (`connections.max.idle.ms`,
    /// `socket.request.max.bytes`).
    serve_options: groupsim_wire::server::ServeOptions,
    /// Most connections one broker holds open (`max.connections`).
    max_connections: usize,
}

/// One broker's listener address and, while it runs, its tasks.
struct Slot {
    node_id: i32,
    addr: SocketAddr,
    running: Mutex<Option<Running>>,
}

/// The tasks of a running broker: aborting them closes its listener and every connection.
struct Running {
    core: JoinHandle<()>,
    accept: JoinHandle<()>,
    control: mpsc::UnboundedSender<BrokerOrder>,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.accept.abort();
        self.core.abort();
    }
}

impl Cluster {
    /// Starts the brokers of `config` on 127.0.0.1 and returns once every one is listening.
    pub fn start(config: ClusterConfig) -> Result<Cluster, ServeError> {
        config.validate()?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("groupsim-serve")
            .enable_all()
            .build()
            .map_err(|e| ServeError::io("starting the tokio runtime", e))?;
        let mut listeners = Vec::with_capacity(config.brokers);
        for i in 0..config.brokers {
            let port = if config.port == 0 { 0 } else { config.port + i as u16 };
            listeners.push(bind(port)?);
        }
        let addrs: Vec<SocketAddr> = listeners
            .iter()
            .map(|l| l.local_addr())
            .collect::<Result<_, _>>()
            .map_err(|e| ServeError::io("reading a listener's address", e))?;
        let brokers: Vec<BrokerAddress> = addrs
            .iter()
            .enumerate()
            .map(|(i, a)| BrokerAddress {
                node_id: i as i32,
                host: LOOPBACK.to_string(),
                port: i32::from(a.port()),
            })
            .collect();
        let logs = preloaded_logs(&config)?;
        let shared = Arc::new(Shared {
            logs,
            state: ClusterState::new(brokers.clone(), config.offsets_topic_partitions).shared(),
            offsets_log: OffsetsLog::new(config.offsets_topic_partitions).shared(),
            recorder: Recorder::new(Instant::now()),
            gate: Gate::default(),
        });
        record_start(&shared.recorder, &config);
        let broker_config = BrokerConfig {
            node_id: 0,
            cluster_id: "groupsim-serve".to_string(),
            brokers,
            offsets_topic_partitions: config.offsets_topic_partitions,
            coordinator: config.coordinator.clone(),
        };
        let slots = addrs
            .iter()
            .enumerate()
            .map(|(i, &addr)| Slot { node_id: i as i32, addr, running: Mutex::new(None) })
            .collect();
        let serve_options = groupsim_wire::server::ServeOptions {
            idle_close: config.connections_max_idle_ms.map(Duration::from_millis),
            max_frame_bytes: config.max_request_bytes,
        };
        let cluster = Cluster {
            runtime: Some(runtime),
            shared,
            slots,
            config: broker_config,
            serve_options,
            max_connections: config.max_connections_per_broker,
        };
        for (slot, listener) in cluster.slots.iter().zip(listeners) {
            let running = cluster.launch(slot.node_id, listener)?;
            *lock(&slot.running) = Some(running);
        }
        Ok(cluster)
    }

    /// `host:port` of every broker, comma separated: what clients take as bootstrap servers.
    pub fn bootstrap(&self) -> String {
        self.addrs().iter().map(SocketAddr::to_string).collect::<Vec<_>>().join(",")
    }

    /// Every broker's listening address, by node id.
    pub fn addrs(&self) -> Vec<SocketAddr> {
        self.slots.iter().map(|s| s.addr).collect()
    }

    /// The shared partition logs (e.g. to append records or check what a producer wrote).
    pub fn logs(&self) -> &SharedLogs {
        &self.shared.logs
    }

    /// The shared cluster metadata (leaders of topic and offsets partitions, live brokers).
    pub fn cluster_state(&self) -> &SharedClusterState {
        &self.shared.state
    }

    /// The node id of the broker that coordinates `group_id` now.
    pub fn group_coordinator(&self, group_id: &str) -> Option<i32> {
        cluster::lock(&self.shared.state).group_coordinator(group_id).map(|b| b.node_id)
    }

    /// Whether broker `node_id` is running.
    pub fn is_running(&self, node_id: i32) -> bool {
        self.slot(node_id).is_ok_and(|s| lock(&s.running).is_some())
    }

    /// Moves the coordinator of `group_id` to broker `to` (an admin hook, not on the wire):
    /// the leadership of the group's offsets partition moves, the old coordinator unloads the
    /// partition (its parked requests get NOT_COORDINATOR) and the new one loads it from the
    /// offsets log, members and committed offsets included. Other groups of the same offsets
    /// partition move with it, as in Kafka. Moving it where it already is does nothing.
    pub fn move_group_coordinator(&self, group_id: &str, to: i32) -> Result<(), ServeError> {
        if !self.is_running(to) {
            return Err(ServeError::NotRunning(to));
        }
        self.move_group_coordinator_loading(group_id, to, 0)
    }

    /// [`Self::move_group_coordinator`] where the new coordinator's load of the group takes
    /// `load_ms`: until then it answers COORDINATOR_LOAD_IN_PROGRESS, as Kafka does.
    pub fn move_group_coordinator_loading(
        &self,
        group_id: &str,
        to: i32,
        load_ms: Millis,
    ) -> Result<(), ServeError> {
        if !self.is_running(to) {
            return Err(ServeError::NotRunning(to));
        }
        let partition = cluster::lock(&self.shared.state).group_partition(group_id);
        self.move_offsets_partition(partition, to, load_ms, "move");
        Ok(())
    }

    /// The world's producer: appends `count` records (values `"{topic}-{partition}-{offset}"`)
    /// to a partition, records them as produced and wakes waiting fetches. Returns the offset
    /// of the first one.
    pub fn produce(&self, topic: &str, partition: i32, count: u32) -> Result<i64, ServeError> {
        let tp = TopicPartition::new(topic, partition);
        let now_ms = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis());
        let base = {
            let mut logs = lock(&self.shared.logs);
            let base = logs.log_end_offset(&tp).unwrap_or(0);
            for i in 0..i64::from(count) {
                let value = Bytes::from(format!("{topic}-{partition}-{}", base + i));
                logs.append(&tp, None, value, now_ms as i64)?;
            }
            base
        };
        if count > 0 {
            let produced =
                WorldEvent::Produced { partition: tp, base_offset: base, count: count.into() };
            self.shared.recorder.world(produced);
            // The brokers hold Fetches until data arrives: tell each that some did.
            for node in self.slots.iter().map(|s| s.node_id) {
                self.order(node, BrokerOrder::LogsAppended);
            }
        }
        Ok(base)
    }

    /// Grows `topic` to `partitions` partitions (new ones start empty), as Kafka's
    /// CreatePartitions does; clients see them at their next metadata refresh.
    pub fn add_partitions(&self, topic: &str, partitions: i32) -> Result<(), ServeError> {
        lock(&self.shared.logs).add_partitions(topic, partitions)?;
        let added = WorldEvent::PartitionsAdded { topic: topic.to_string(), partitions };
        self.shared.recorder.world(added);
        Ok(())
    }

    /// The history the cluster recorded so far (see [`Recorder`]).
    pub fn history(&self) -> History {
        self.shared.recorder.snapshot()
    }

    /// The cluster's recorder, to add world events (faults, client processes) to its history.
    pub fn recorder(&self) -> &Recorder {
        &self.shared.recorder
    }

    /// Stops broker `node_id` as a crash: its listener and every connection to it close and its
    /// in-memory state is lost; the partition logs and the offsets log are shared and survive.
    /// Like Kafka's controller noticing the failure, the cluster at once moves the partitions
    /// and offsets partitions it led to the live brokers (unless it was the last one).
    pub fn stop_broker(&self, node_id: i32) -> Result<(), ServeError> {
        let slot = self.slot(node_id)?;
        let Some(running) = lock(&slot.running).take() else {
            return Err(ServeError::NotRunning(node_id));
        };
        stop_running(running);
        self.shared.recorder.world(WorldEvent::BrokerCrashed { node: node_id });
        self.shared.recorder.world(WorldEvent::BrokerFailureDetected { node: node_id });
        self.fail_over(node_id);
        Ok(())
    }

    /// Starts broker `node_id` again on its old port with fresh state. It rejoins the cluster
    /// but leads nothing that moved away while it was down (move groups back with
    /// [`Self::move_group_coordinator`]).
    pub fn start_broker(&self, node_id: i32) -> Result<(), ServeError> {
        let slot = self.slot(node_id)?;
        let mut running = lock(&slot.running);
        if running.is_some() {
            return Err(ServeError::AlreadyRunning(node_id));
        }
        let listener = bind(slot.addr.port())?;
        cluster::lock(&self.shared.state).set_live(node_id, true);
        *running = Some(self.launch(node_id, listener)?);
        self.shared.recorder.world(WorldEvent::BrokerRestarted { node: node_id });
        Ok(())
    }

    /// Blocks until Ctrl-C (SIGINT) or SIGTERM, for the command line. With `history`, every
    /// SIGUSR1 meanwhile writes the history so far there.
    pub fn wait_for_ctrl_c(&self, history: Option<&std::path::Path>) -> Result<(), ServeError> {
        let stop = self.stop_signal(history);
        stop.recv()
            .map_err(ServeError::Stopped)?
            .map_err(|e| ServeError::io("waiting for Ctrl-C", e))
    }

    /// A channel that receives once Ctrl-C (SIGINT) or SIGTERM arrives (see
    /// [`Self::wait_for_ctrl_c`]), so a caller can do other work meanwhile.
    pub fn stop_signal(
        &self,
        history: Option<&std::path::Path>,
    ) -> std::sync::mpsc::Receiver<std::io::Result<()>> {
        use tokio::signal::unix::{signal, SignalKind};
        let (tx, rx) = std::sync::mpsc::channel();
        let recorder = self.shared.recorder.clone();
        let history = history.map(std::path::Path::to_path_buf);
        self.runtime().spawn(async move {
            let waited: std::io::Result<()> = async {
                let mut term = signal(SignalKind::terminate())?;
                let mut usr1 = signal(SignalKind::user_defined1())?;
                loop {
                    tokio::select! {
                        r = tokio::signal::ctrl_c() => return r,
                        _ = term.recv() => return Ok(()),
                        _ = usr1.recv() => {
                            if let Some(path) = &history {
                                match recorder.save(path) {
                                    Ok(()) => eprintln!("history written to {}", path.display()),
                                    Err(e) => eprintln!("writing {}: {e}", path.display()),
                                }
                            }
                        }
                    }
                }
            }
            .await;
            let _ = tx.send(waited);
        });
        rx
    }

    /// Stops every broker and the runtime.
    pub fn shutdown(mut self) {
        self.stop_all();
    }

    fn stop_all(&mut self) {
        for slot in &self.slots {
            drop(lock(&slot.running).take());
        }
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_timeout(Duration::from_secs(2));
        }
    }

    fn slot(&self, node_id: i32) -> Result<&Slot, ServeError> {
        usize::try_from(node_id)
            .ok()
            .and_then(|i| self.slots.get(i))
            .ok_or(ServeError::NoBroker { node_id, brokers: self.slots.len() })
    }

    fn runtime(&self) -> &tokio::runtime::Runtime {
        self.runtime.as_ref().expect("the runtime lives as long as the cluster")
    }

    pub(super) fn control(&self, node_id: i32, control: BrokerControl) {
        self.order(node_id, control.into());
    }

    /// Gives broker `node_id`'s task an instruction, if it runs.
    fn order(&self, node_id: i32, order: BrokerOrder) {
        if let Ok(slot) = self.slot(node_id) {
            if let Some(running) = lock(&slot.running).as_ref() {
                // A broker that just stopped has dropped its receiver: nothing to tell it.
                let _ = running.control.send(order);
            }
        }
    }

    /// Moves offsets partition `partition` to `to`: the old leader resigns, `to` loads it.
    fn move_offsets_partition(&self, partition: i32, to: i32, load_ms: Millis, reason: &str) {
        let old = cluster::lock(&self.shared.state).set_offsets_leader(partition, to);
        let Some(old) = old else { return };
        if old.leader == to {
            return;
        }
        self.shared.recorder.world(WorldEvent::CoordinatorMoved {
            partition,
            groups: self.shared.recorder.groups_of_partition(partition, &self.shared.state),
            from: old.leader,
            to,
            load_ms,
            reason: reason.to_string(),
        });
        self.control(old.leader, BrokerControl::ResignCoordinator { partition });
        self.control(to, BrokerControl::BecomeCoordinator { partition, load_ms });
    }

    /// What Kafka's controller does when a broker dies: its topic partitions and offsets
    /// partitions get new leaders among the live brokers.
    fn fail_over(&self, node_id: i32) {
        let live: Vec<i32> = {
            let mut state = cluster::lock(&self.shared.state);
            state.set_live(node_id, false);
            state.live_brokers().map(|b| b.node_id).collect()
        };
        if live.is_empty() {
            return;
        }
        let offsets = cluster::lock(&self.shared.state).offsets_partitions_led_by(node_id);
        for p in offsets {
            self.move_offsets_partition(p, live[p as usize % live.len()], 0, "failover");
        }
        let topics: Vec<(String, i32)> = {
            let logs = lock(&self.shared.logs);
            logs.topics().map(|t| (t.to_string(), logs.partition_count(t).unwrap_or(0))).collect()
        };
        let mut state = cluster::lock(&self.shared.state);
        for (topic, count) in topics {
            for p in 0..count {
                let tp = TopicPartition::new(&topic, p);
                if state.partition_leadership(&tp).is_some_and(|l| l.leader == node_id) {
                    let to = live[p as usize % live.len()];
                    state.set_partition_leader(&tp, to);
                    let moved =
                        WorldEvent::PartitionLeaderMoved { partition: tp, from: node_id, to };
                    self.shared.recorder.world(moved);
                }
            }
        }
    }

    /// Starts broker `node_id`'s core and accept loop on `listener`.
    fn launch(&self, node_id: i32, listener: std::net::TcpListener) -> Result<Running, ServeError> {
        let shared = &self.shared;
        let config = BrokerConfig { node_id, ..self.config.clone() };
        let broker = Broker::with_cluster(
            config,
            shared.logs.clone(),
            shared.state.clone(),
            shared.offsets_log.clone(),
            shared.now(),
        );
        let (handle, calls) = broker_channel();
        let (control, controls) = mpsc::unbounded_channel();
        let started = shared.recorder.started();
        let clock = move || started.elapsed().as_millis() as Millis;
        let events_shared = shared.clone();
        let on_event = move |at: Millis, event: CoordinatorEvent| {
            tracing::debug!(broker = node_id, at, ?event, "coordinator event");
            if matches!(
                event,
                CoordinatorEvent::GenerationStarted { .. }
                    | CoordinatorEvent::ConsumerGroup(ConsumerGroupEvent::GroupEpochBumped { .. })
            ) {
                events_shared.gate.generation_started();
            }
            events_shared.recorder.coordinator(node_id, at, event);
        };
        let _guard = self.runtime().enter();
        let listener = TcpListener::from_std(listener)
            .map_err(|e| ServeError::io("registering the listener", e))?;
        let core = tokio::spawn(run_broker_controlled(broker, calls, controls, clock, on_event));
        let options = self.serve_options.clone();
        let limit = self.max_connections;
        let accept =
            tokio::spawn(accept_loop(listener, handle, shared.clone(), node_id, options, limit));
        Ok(Running { core, accept, control })
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.stop_all();
    }
}

/// Aborts a broker's tasks and waits until its listener is really closed, so its port can be
/// bound again at once.
fn stop_running(running: Running) {
    let (core, accept) = (running.core.abort_handle(), running.accept.abort_handle());
    drop(running); // aborts both tasks
    let deadline = Instant::now() + Duration::from_secs(5);
    while !(core.is_finished() && accept.is_finished()) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Binds 127.0.0.1:`port` (0: any free port) as a non-blocking std listener.
fn bind(port: u16) -> Result<std::net::TcpListener, ServeError> {
    let listener = std::net::TcpListener::bind((LOOPBACK, port))
        .map_err(|e| ServeError::io(format!("binding {LOOPBACK}:{port}"), e))?;
    listener
        .set_nonblocking(true)
        .map_err(|e| ServeError::io("making the listener non-blocking", e))?;
    Ok(listener)
}

/// The partition logs of `config`: its topics, each partition holding `preload` records.
fn preloaded_logs(config: &ClusterConfig) -> Result<SharedLogs, ServeError> {
    let mut logs = PartitionLogs::new();
    let now_ms = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64);
    for topic in &config.topics {
        logs.create_topic(&topic.name, topic.partitions)?;
        for p in 0..topic.partitions {
            let tp = TopicPartition::new(&topic.name, p);
            for i in 0..config.preload {
                let key = Bytes::from(format!("{p}-{i}"));
                let value = Bytes::from(format!("{}-{p}-{i}", topic.name));
                logs.append(&tp, Some(key), value, now_ms)?;
            }
        }
    }
    Ok(log::shared(logs))
}

/// Records what the cluster starts with: the run, its topics and the preloaded records.
fn record_start(recorder: &Recorder, config: &ClusterConfig) {
    recorder.world(WorldEvent::RunStarted { scenario: config.label.clone(), seed: config.seed });
    recorder.wire(groupsim::exchange::group_max_size(&config.coordinator));
    for t in &config.topics {
        recorder
            .world(WorldEvent::TopicCreated { topic: t.name.clone(), partitions: t.partitions });
    }
    if config.preload > 0 {
        for t in &config.topics {
            for p in 0..t.partitions {
                recorder.world(WorldEvent::Produced {
                    partition: TopicPartition::new(&t.name, p),
                    base_offset: 0,
                    count: i64::from(config.preload),
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::config::TopicSpec;
    use super::*;

    #[test]
    fn preload_fills_every_partition_with_numbered_records() {
        let config = ClusterConfig {
            topics: vec![TopicSpec::new("t", 2).unwrap()],
            preload: 3,
            ..ClusterConfig::default()
        };
        let logs = preloaded_logs(&config).unwrap();
        let logs = logs.lock().unwrap();
        let tp = TopicPartition::new("t", 1);
        assert_eq!(logs.log_end_offset(&tp), Some(3));
        assert_eq!(logs.read(&tp, 2, 1).unwrap()[0].value, "t-1-2");
    }

    #[test]
    fn cluster_on_ephemeral_ports_lists_its_brokers_in_bootstrap() {
        let cluster =
            Cluster::start(ClusterConfig { brokers: 2, ..ClusterConfig::default() }).unwrap();
        let addrs = cluster.addrs();
        assert_eq!(addrs.len(), 2);
        assert!(addrs.iter().all(|a| a.ip().is_loopback() && a.port() != 0));
        assert_eq!(cluster.bootstrap(), format!("{},{}", addrs[0], addrs[1]));
        assert!(cluster.is_running(0) && cluster.is_running(1));
        cluster.shutdown();
    }

    /// An ApiVersions v0 request frame (prefix included) under `correlation_id`.
    fn api_versions_frame(correlation_id: i32) -> Vec<u8> {
        let mut body = Vec::new();
        body.extend_from_slice(&18i16.to_be_bytes()); // ApiVersions
        body.extend_from_slice(&0i16.to_be_bytes());
        body.extend_from_slice(&correlation_id.to_be_bytes());
        body.extend_from_slice(&(-1i16).to_be_bytes()); // null client id
        groupsim_wire::encode_frame(&body).unwrap()
    }

    /// Writes `bytes`, then reads until the broker answers (`Some(correlation id)`) or closes
    /// the connection (`None`). Generous bound: it only keeps a broken broker from hanging.
    fn answer_to(stream: &mut std::net::TcpStream, bytes: &[u8]) -> Option<i32> {
        use std::io::{Read, Write};
        stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        if stream.write_all(bytes).is_err() {
            return None;
        }
        let mut prefix = [0u8; 4];
        let read = stream.read_exact(&mut prefix).and_then(|()| {
            let mut body = vec![0u8; i32::from_be_bytes(prefix) as usize];
            stream.read_exact(&mut body).map(|()| body)
        });
        match read {
            Ok(body) => Some(i32::from_be_bytes([body[0], body[1], body[2], body[3]])),
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => None,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => None,
            Err(e) => panic!("neither an answer nor a close: {e}"),
        }
    }

    #[test]
    fn a_connection_past_the_limit_is_closed_and_the_open_ones_are_still_served() {
        let cluster = Cluster::start(ClusterConfig {
            max_connections_per_broker: 2,
            ..ClusterConfig::default()
        })
        .unwrap();
        let addr = cluster.addrs()[0];
        let mut open: Vec<_> =
            (0..2).map(|_| std::net::TcpStream::connect(addr).unwrap()).collect();
        // Both are served, so both are counted before the third arrives.
        for (i, s) in open.iter_mut().enumerate() {
            assert_eq!(answer_to(s, &api_versions_frame(i as i32)), Some(i as i32));
        }
        let mut third = std::net::TcpStream::connect(addr).unwrap();
        assert_eq!(answer_to(&mut third, &api_versions_frame(7)), None, "closed at once");
        assert_eq!(answer_to(&mut open[1], &api_versions_frame(8)), Some(8), "still served");
        // A closed connection frees its place.
        drop(open.remove(0));
        let served = (0..50).any(|i| {
            let mut s = std::net::TcpStream::connect(addr).unwrap();
            let ok = answer_to(&mut s, &api_versions_frame(100 + i)) == Some(100 + i);
            if !ok {
                std::thread::sleep(Duration::from_millis(20));
            }
            ok
        });
        assert!(served, "a place freed by a close is taken by a new connection");
        cluster.shutdown();
    }

    #[test]
    fn a_request_longer_than_the_limit_closes_its_connection_only() {
        let cluster = Cluster::start(ClusterConfig {
            max_request_bytes: super::super::config::MIN_MAX_REQUEST_BYTES,
            ..ClusterConfig::default()
        })
        .unwrap();
        let addr = cluster.addrs()[0];
        let mut big = std::net::TcpStream::connect(addr).unwrap();
        let mut other = std::net::TcpStream::connect(addr).unwrap();
        let too_long = (super::super::config::MIN_MAX_REQUEST_BYTES as i32 + 1).to_be_bytes();
        assert_eq!(answer_to(&mut big, &too_long), None, "closed on the length prefix alone");
        assert_eq!(answer_to(&mut other, &api_versions_frame(3)), Some(3));
        assert!(ClusterConfig { max_request_bytes: 10, ..ClusterConfig::default() }
            .validate()
            .is_err());
        cluster.shutdown();
    }
}
