//! The world's control of the simulated Kafka cluster: it owns the shared cluster metadata and
//! the replicated offsets log, and carries out coordinator moves, broker crashes and restarts
//! (the fault nemesis calls it), giving the world its [`Order`]s.
//!
//! A coordinator move changes the shared metadata first (every broker answers FindCoordinator
//! and NOT_COORDINATOR from it at once), then tells the old leader to resign and the new one to
//! load, as control orders. A crash kills the host (its state is gone); after
//! [`BROKER_FAILURE_DETECTION_MS`] the broker leaves the metadata and its offsets partitions and
//! topic partitions move to live brokers, whose coordinators load the groups from the offsets
//! log. A restarted broker starts empty and leads again only when a move gives it partitions.

use std::collections::{BTreeMap, BTreeSet};

use groupsim_coordinator::broker::{Broker, BrokerAddress, BrokerConfig, BrokerControl};
use groupsim_coordinator::cluster::{self, ClusterState, SharedClusterState};
use groupsim_coordinator::log::SharedLogs;
use groupsim_coordinator::offsets_log::{OffsetsLog, SharedOffsetsLog};
use groupsim_history::WorldEvent;
use groupsim_wire::{Millis, TopicPartition};

use crate::scenario::ScenarioSpec;
use crate::world::orders::{broker_host, Hosts, Order, SharedHistory, BROKER_PORT};

/// How long after a crash the cluster notices a broker is gone (Kafka: the broker's session
/// with the controller expires) and moves its partitions.
pub const BROKER_FAILURE_DETECTION_MS: Millis = 3_000;

/// How long a broker takes to load an offsets partition it gets because another broker died.
pub const FAILOVER_LOAD_MS: Millis = 200;

/// A cluster operation that cannot be carried out.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClusterError {
    /// No broker has this node id.
    #[error("unknown broker {0}")]
    UnknownBroker(i32),
    /// The target broker is down (crashed and not restarted).
    #[error("broker {0} is down")]
    BrokerDown(i32),
    /// The broker is already running (restart of a live broker).
    #[error("broker {0} is not down")]
    BrokerUp(i32),
    /// Crashing it would leave no broker up.
    #[error("broker {0} is the last one up")]
    LastBroker(i32),
    /// A topic operation failed.
    #[error("topic {topic}: {reason}")]
    Topic { topic: String, reason: String },
}

/// What every broker's software shares with the cluster: the partition logs, the cluster
/// metadata and the replicated offsets log (all outlive a broker's crash).
#[derive(Clone, Debug)]
pub struct BrokerShared {
    /// Topic partition logs.
    pub logs: SharedLogs,
    /// Cluster metadata (who leads what).
    pub cluster: SharedClusterState,
    /// The replicated offsets log.
    pub offsets_log: SharedOffsetsLog,
}

impl BrokerShared {
    /// Broker `config.node_id`'s core as its software starts at `now` with empty state: built
    /// from the cluster state, loading the offsets partitions the cluster says it leads.
    pub fn boot(&self, config: BrokerConfig, now: Millis) -> Broker {
        let (logs, cluster, offsets) = (&self.logs, &self.cluster, &self.offsets_log);
        Broker::with_cluster(config, logs.clone(), cluster.clone(), offsets.clone(), now)
    }
}

/// The world's cluster control (see the module docs).
pub struct Cluster {
    configs: BTreeMap<i32, BrokerConfig>,
    state: SharedClusterState,
    offsets_log: SharedOffsetsLog,
    logs: SharedLogs,
    history: SharedHistory,
    /// Brokers whose host is down.
    down: BTreeSet<i32>,
    /// Crashed brokers not yet noticed: node -> when the cluster notices.
    detect_at: BTreeMap<i32, Millis>,
    detection_delay_ms: Millis,
    failover_load_ms: Millis,
}

impl Cluster {
    /// The cluster of `spec`: `spec.brokers` brokers `broker-0..`, every one live, offsets
    /// partitions and topic partitions placed `p % n`, an empty offsets log.
    pub fn new(spec: &ScenarioSpec, logs: SharedLogs, history: SharedHistory) -> Self {
        let brokers: Vec<BrokerAddress> = (0..spec.brokers)
            .map(|id| BrokerAddress {
                node_id: id,
                host: broker_host(id),
                port: i32::from(BROKER_PORT),
            })
            .collect();
        let configs = (0..spec.brokers)
            .map(|node_id| {
                let mut coordinator = spec.coordinator.clone();
                coordinator.node_id = node_id;
                let config = BrokerConfig {
                    node_id,
                    cluster_id: "groupsim".into(),
                    brokers: brokers.clone(),
                    offsets_topic_partitions: spec.offsets_topic_partitions,
                    coordinator,
                };
                (node_id, config)
            })
            .collect();
        Self {
            configs,
            state: ClusterState::new(brokers, spec.offsets_topic_partitions).shared(),
            offsets_log: OffsetsLog::new(spec.offsets_topic_partitions).shared(),
            logs,
            history,
            down: BTreeSet::new(),
            detect_at: BTreeMap::new(),
            detection_delay_ms: BROKER_FAILURE_DETECTION_MS,
            failover_load_ms: FAILOVER_LOAD_MS,
        }
    }

    /// Sets how long a crash goes unnoticed and how long failover loads take.
    pub fn with_failover_timing(mut self, detection_delay_ms: Millis, load_ms: Millis) -> Self {
        self.detection_delay_ms = detection_delay_ms;
        self.failover_load_ms = load_ms;
        self
    }

    /// What every broker's software shares with the cluster.
    pub fn broker_shared(&self) -> BrokerShared {
        BrokerShared {
            logs: self.logs.clone(),
            cluster: self.state.clone(),
            offsets_log: self.offsets_log.clone(),
        }
    }

    /// Every broker's configuration, by node id.
    pub fn broker_configs(&self) -> &BTreeMap<i32, BrokerConfig> {
        &self.configs
    }

    /// When [`Self::tick`] next has work (a crashed broker's death to notice), if ever.
    pub fn next_detection(&self) -> Option<Millis> {
        self.detect_at.values().copied().min()
    }

    /// The shared cluster metadata.
    pub fn state(&self) -> &SharedClusterState {
        &self.state
    }

    /// The replicated offsets log.
    pub fn offsets_log(&self) -> &SharedOffsetsLog {
        &self.offsets_log
    }

    /// Current leader of the group's offsets partition (its coordinator), -1 if none.
    pub fn coordinator_of(&self, group: &str) -> i32 {
        let state = cluster::lock(&self.state);
        state.offsets_leader(state.group_partition(group))
    }

    /// Brokers whose host is up, ascending.
    pub fn live_brokers(&self) -> Vec<i32> {
        self.configs.keys().copied().filter(|n| !self.down.contains(n)).collect()
    }

    fn check_known(&self, node: i32) -> Result<(), ClusterError> {
        if self.configs.contains_key(&node) {
            Ok(())
        } else {
            Err(ClusterError::UnknownBroker(node))
        }
    }

    fn record(&self, now: Millis, event: WorldEvent) {
        self.history.borrow_mut().world(now, event);
    }

    fn send(&self, hosts: &mut impl Hosts, now: Millis, node: i32, control: BrokerControl) {
        // A broker that is down is told nothing (the world refuses the order).
        hosts.order(now, Order::Broker { node, control: control.into() });
    }

    fn groups_of_partition(&self, partition: i32) -> Vec<String> {
        let log = groupsim_coordinator::offsets_log::lock(&self.offsets_log);
        let groups: BTreeSet<String> =
            log.records(partition).iter().map(|r| r.group().to_string()).collect();
        groups.into_iter().collect()
    }

    /// Moves offsets partition `partition` to broker `to` (which loads it in `load_ms`).
    fn move_partition(
        &mut self,
        hosts: &mut impl Hosts,
        now: Millis,
        partition: i32,
        to: i32,
        load_ms: Millis,
        reason: &str,
    ) {
        let Some(old) = cluster::lock(&self.state).set_offsets_leader(partition, to) else {
            return;
        };
        if !self.down.contains(&old.leader) {
            self.send(hosts, now, old.leader, BrokerControl::ResignCoordinator { partition });
        }
        self.send(hosts, now, to, BrokerControl::BecomeCoordinator { partition, load_ms });
        let groups = self.groups_of_partition(partition);
        self.record(
            now,
            WorldEvent::CoordinatorMoved {
                partition,
                groups,
                from: old.leader,
                to,
                load_ms,
                reason: reason.to_string(),
            },
        );
    }

    /// Moves the coordinator of `group` (the leadership of its offsets partition) to broker
    /// `to`, whose load takes `load_ms`. Moving it where it already is does nothing.
    pub fn move_coordinator(
        &mut self,
        hosts: &mut impl Hosts,
        now: Millis,
        group: &str,
        to: i32,
        load_ms: Millis,
    ) -> Result<(), ClusterError> {
        self.check_known(to)?;
        if self.down.contains(&to) {
            return Err(ClusterError::BrokerDown(to));
        }
        let (partition, from) = {
            let state = cluster::lock(&self.state);
            let p = state.group_partition(group);
            (p, state.offsets_leader(p))
        };
        if from != to {
            self.move_partition(hosts, now, partition, to, load_ms, "move");
        }
        Ok(())
    }

    /// Crashes broker `node`: its host dies with all its state; the cluster notices after the
    /// detection delay (see [`Self::tick`]).
    pub fn crash_broker(
        &mut self,
        hosts: &mut impl Hosts,
        now: Millis,
        node: i32,
    ) -> Result<(), ClusterError> {
        self.check_known(node)?;
        if self.down.contains(&node) {
            return Err(ClusterError::BrokerDown(node));
        }
        if self.live_brokers().len() <= 1 {
            return Err(ClusterError::LastBroker(node));
        }
        hosts.order(now, Order::CrashBroker { node });
        self.down.insert(node);
        self.detect_at.insert(node, now + self.detection_delay_ms);
        self.record(now, WorldEvent::BrokerCrashed { node });
        Ok(())
    }

    /// Restarts crashed broker `node` with empty state. It rejoins the cluster metadata; it
    /// loads (at once, from the offsets log) any offsets partition still assigned to it because
    /// its death had not been noticed yet.
    pub fn restart_broker(
        &mut self,
        hosts: &mut impl Hosts,
        now: Millis,
        node: i32,
    ) -> Result<(), ClusterError> {
        self.check_known(node)?;
        if !self.down.contains(&node) {
            return Err(ClusterError::BrokerUp(node));
        }
        self.down.remove(&node);
        self.detect_at.remove(&node);
        cluster::lock(&self.state).set_live(node, true);
        hosts.order(now, Order::RestartBroker { node });
        self.record(now, WorldEvent::BrokerRestarted { node });
        Ok(())
    }

    /// Adds partitions to `topic` (to `partitions` in total). New partitions are led by the
    /// initial placement, or by a live broker when that one is down.
    pub fn expand_topic(
        &mut self,
        now: Millis,
        topic: &str,
        partitions: i32,
    ) -> Result<(), ClusterError> {
        let old = {
            let mut logs = self.logs.lock().unwrap_or_else(|p| p.into_inner());
            let old = logs.partition_count(topic).unwrap_or(0);
            logs.add_partitions(topic, partitions)
                .map_err(|e| ClusterError::Topic { topic: topic.into(), reason: e.to_string() })?;
            old
        };
        let live = self.live_brokers();
        {
            let mut state = cluster::lock(&self.state);
            for p in old..partitions {
                let tp = TopicPartition::new(topic, p);
                let leader = state.partition_leadership(&tp).map(|l| l.leader);
                if leader.is_none_or(|l| self.down.contains(&l)) && !live.is_empty() {
                    state.set_partition_leader(&tp, live[p as usize % live.len()]);
                }
            }
        }
        self.record(now, WorldEvent::PartitionsAdded { topic: topic.to_string(), partitions });
        Ok(())
    }

    /// Called before every simulation step: a crashed broker whose detection delay has elapsed
    /// leaves the metadata, and its offsets partitions and topic partitions move to live
    /// brokers (spread `p % live`); the new coordinators load their groups from the offsets log.
    pub fn tick(&mut self, hosts: &mut impl Hosts, now: Millis) {
        let due: Vec<i32> =
            self.detect_at.iter().filter(|(_, at)| **at <= now).map(|(n, _)| *n).collect();
        for node in due {
            self.detect_at.remove(&node);
            self.fail_over(hosts, now, node);
        }
    }

    fn fail_over(&mut self, hosts: &mut impl Hosts, now: Millis, node: i32) {
        cluster::lock(&self.state).set_live(node, false);
        self.record(now, WorldEvent::BrokerFailureDetected { node });
        let live = self.live_brokers();
        if live.is_empty() {
            return;
        }
        let offsets = cluster::lock(&self.state).offsets_partitions_led_by(node);
        for p in offsets {
            let to = live[p as usize % live.len()];
            self.move_partition(hosts, now, p, to, self.failover_load_ms, "failover");
        }
        let topics: Vec<(String, i32)> = {
            let logs = self.logs.lock().unwrap_or_else(|p| p.into_inner());
            logs.topics().map(|t| (t.to_string(), logs.partition_count(t).unwrap_or(0))).collect()
        };
        for (topic, count) in topics {
            for p in 0..count {
                let tp = TopicPartition::new(&topic, p);
                let mut state = cluster::lock(&self.state);
                if state.partition_leadership(&tp).is_some_and(|l| l.leader == node) {
                    let to = live[p as usize % live.len()];
                    state.set_partition_leader(&tp, to);
                    drop(state);
                    self.record(
                        now,
                        WorldEvent::PartitionLeaderMoved { partition: tp, from: node, to },
                    );
                }
            }
        }
    }
}
