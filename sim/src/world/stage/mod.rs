//! The stage: the half of a run that does not depend on how time and the network are
//! simulated — the history with its opening events, the topics, the cluster control
//! ([`cluster`]), the fault injector ([`nemesis`]), the [`producer`], the phases and the early
//! end (with [`settle`]). Both worlds drive it the same way: `Stage::tick` at every instant
//! where something happened or `Stage::next_due` says, with the probe taps their hosts
//! collected; it gives its orders through [`Hosts`]. It imports neither world.

use std::cell::RefCell;
use std::rc::Rc;

use groupsim_coordinator::broker::BrokerControl;
use groupsim_coordinator::log::{self as plog, PartitionLogs};
use groupsim_member::MemberConfig;
use groupsim_wire::probe::Tap;
use groupsim_wire::Millis;

use self::cluster::{Cluster, ClusterError};
use self::nemesis::{ClusterOp, ClusterOps, Nemesis, NemesisTargets};
use self::producer::Producer;
use self::settle::SharedSettling;
use crate::process::BrokerOrder;
use crate::scenario::ScenarioSpec;
use crate::world::error::WorldError;
use crate::world::orders::{broker_host, client_host, Hosts, Order, SharedHistory};
use groupsim_checker::LivenessWatch;
use groupsim_history::{History, WorldEvent};

pub mod cluster;
pub mod nemesis;
pub mod producer;
pub mod settle;

/// How often, in the liveness phase, the world asks whether the group has converged.
const LIVENESS_CHECK_MS: Millis = 100;

/// The world-agnostic state of one run (see the module docs). A world builds it, starts its
/// hosts from [`Stage::cluster`], reports member processes' settling to [`Stage::settling`], calls
/// `Stage::tick` whenever simulated time reaches an instant it handles, and
/// [`Stage::finish`] at the end.
pub(crate) struct Stage {
    /// The history being recorded.
    pub(crate) history: SharedHistory,
    /// The cluster control (metadata, offsets log, coordinator moves, broker crashes).
    pub(crate) cluster: Cluster,
    /// Whether the members' faults have played out.
    pub(crate) settling: SharedSettling,
    nemesis: Nemesis,
    producer: RefCell<Producer>,
    converged: Convergence,
    liveness_start_ms: Millis,
    liveness_marked: bool,
    end_ms: Millis,
    /// The stall bound the liveness phase records (see [`ScenarioSpec::stall_ms`]).
    stall_ms: Millis,
}

impl Stage {
    /// Validates `spec`, records the run's opening events (run, topics, swarm choice) and
    /// builds the cluster control, the nemesis and the producer.
    pub(crate) fn new(spec: &ScenarioSpec) -> Result<Self, WorldError> {
        validate(spec)?;
        let history: SharedHistory = Rc::new(RefCell::new(History::reusing_spare_room()));
        history
            .borrow_mut()
            .world(0, WorldEvent::RunStarted { scenario: spec.name.clone(), seed: spec.seed });
        history.borrow_mut().record_wire(crate::exchange::group_max_size(&spec.coordinator));
        let mut logs = PartitionLogs::new();
        for (topic, partitions) in &spec.topics {
            logs.create_topic(topic, *partitions).map_err(|e| WorldError::InvalidScenario {
                name: spec.name.clone(),
                reason: e.to_string(),
            })?;
            history.borrow_mut().world(
                0,
                WorldEvent::TopicCreated { topic: topic.clone(), partitions: *partitions },
            );
        }
        let logs = plog::shared(logs);
        let cluster = Cluster::new(spec, logs.clone(), history.clone());
        if let Some(swarm) = &spec.swarm {
            let mut description = swarm.describe();
            if let Some(shape) = spec.network.describe() {
                description.push_str(&format!("; network: {shape}"));
            }
            for (from, to) in &spec.producer.lulls {
                description.push_str(&format!("; no records produced {from}..{to} ms"));
            }
            history.borrow_mut().world(0, WorldEvent::SwarmChosen { description });
        }
        let hosts: Vec<String> = (0..spec.brokers)
            .map(broker_host)
            .chain((0..spec.client_hosts).map(client_host))
            .collect();
        let targets = NemesisTargets {
            seed: spec.world_seed(),
            group: crate::scenario::GROUP_ID.to_string(),
            brokers: (0..spec.brokers).collect(),
            rebalance_timeout_ms: spec
                .members
                .iter()
                .map(|m| m.config.rebalance_timeout_ms.max(0) as Millis)
                .max()
                .unwrap_or(0),
            heartbeat_interval_ms: shortest(spec, |c| c.heartbeat_interval_ms),
            session_timeout_ms: shortest(spec, |c| c.session_timeout_ms.max(0) as Millis),
        };
        let nemesis =
            Nemesis::new(spec.faults.clone(), targets, history.clone(), hosts, spec.latency_ms.1);
        let producer = RefCell::new(Producer::new(spec, logs.clone()));
        Ok(Self {
            history,
            cluster,
            settling: SharedSettling::default(),
            nemesis,
            producer,
            converged: Convergence::new(spec.liveness_grace_ms()),
            liveness_start_ms: spec.liveness_start_ms,
            liveness_marked: false,
            end_ms: spec.end_ms(),
            stall_ms: spec.stall_ms(),
        })
    }

    /// The liveness deadline: the run ends here at the latest.
    pub(crate) fn end_ms(&self) -> Millis {
        self.end_ms
    }

    /// The world's own work at `now`, in this order: whether the run ends early, the producer,
    /// the start of the liveness phase (everything healed), the cluster's failure detection, and
    /// the nemesis (faults due, undos due, triggers on the events recorded since the last
    /// tick). Returns true when the run ends here. Calling it again at the same instant only
    /// fires what became due since.
    pub(crate) fn tick<H: Hosts>(&mut self, hosts: &mut H, now: Millis, taps: Vec<Tap>) -> bool {
        if self.liveness_marked && self.converged.ends_run(now, &self.history, &self.settling) {
            return true;
        }
        if self.producer.borrow_mut().tick(now, &self.history) {
            // The brokers hold Fetches until data arrives: tell each that some did.
            for &node in self.cluster.broker_configs().keys() {
                hosts.order(now, Order::Broker { node, control: BrokerOrder::LogsAppended });
            }
        }
        if !self.liveness_marked && now >= self.liveness_start_ms {
            self.liveness_marked = true;
            self.nemesis.heal_all(
                &mut WorldCluster { cluster: &mut self.cluster, producer: &self.producer, hosts },
                now,
            );
            self.history.borrow_mut().world(
                now,
                WorldEvent::LivenessPhase {
                    deadline_ms: self.end_ms,
                    stall_ms: Some(self.stall_ms),
                },
            );
        }
        self.cluster.tick(hosts, now);
        self.nemesis.tick(
            &mut WorldCluster { cluster: &mut self.cluster, producer: &self.producer, hosts },
            now,
            taps,
        );
        false
    }

    /// The next instant after which [`Self::tick`] has timed work (a producer flush, a
    /// convergence check, the liveness phase, a broker death to notice, a fault or undo), or
    /// the deadline. Events the hosts record between these instants matter too (triggers): the
    /// event world ticks after every instant at which something happened.
    pub(crate) fn next_due(&self) -> Millis {
        let mut due = self.end_ms;
        let mut consider = |at: Option<Millis>| {
            if let Some(at) = at {
                due = due.min(at);
            }
        };
        consider(self.producer.borrow().next_flush());
        consider(self.liveness_marked.then(|| self.converged.next_check()));
        consider((!self.liveness_marked).then_some(self.liveness_start_ms));
        consider(self.cluster.next_detection());
        consider(self.nemesis.next_due());
        due
    }

    /// Records the end of the run at `now` and returns the history, with the checker that read
    /// it while the run went on (its verdict then reads only what came after).
    pub(crate) fn finish(self, now: Millis) -> (History, LivenessWatch) {
        self.history.borrow_mut().world(now, WorldEvent::RunEnded);
        groupsim_wire::probe::tapping(false);
        // Moved out, not copied: the run is over, and whatever still holds the shared history
        // records nothing more into it.
        let history = std::mem::replace(&mut *self.history.borrow_mut(), History::new());
        (history, self.converged.watch)
    }
}

/// Decides when a run may end before its liveness deadline: the liveness rule holds, no member's
/// fault is still playing out, and both have stayed so for the grace period.
pub(crate) struct Convergence {
    watch: LivenessWatch,
    grace_ms: Millis,
    next_check: Millis,
    since: Option<Millis>,
}

impl Convergence {
    pub(crate) fn new(grace_ms: Millis) -> Self {
        Self { watch: LivenessWatch::default(), grace_ms, next_check: 0, since: None }
    }

    /// When [`Self::ends_run`] next asks the question.
    pub(crate) fn next_check(&self) -> Millis {
        self.next_check
    }

    /// Whether the run ends at `now`; records `LivenessHeld` when it does.
    pub(crate) fn ends_run(
        &mut self,
        now: Millis,
        history: &SharedHistory,
        settling: &SharedSettling,
    ) -> bool {
        if now < self.next_check {
            return false;
        }
        self.next_check = now + LIVENESS_CHECK_MS;
        self.watch.read(history.borrow().events());
        if !(settling.borrow().settled(now) && self.watch.holds()) {
            self.since = None;
            return false;
        }
        let since = *self.since.get_or_insert(now);
        if now < since + self.grace_ms {
            return false;
        }
        history
            .borrow_mut()
            .world(now, WorldEvent::LivenessHeld { since_ms: since, grace_ms: self.grace_ms });
        true
    }
}

pub(crate) fn validate(spec: &ScenarioSpec) -> Result<(), WorldError> {
    let bad = |reason: String| Err(WorldError::InvalidScenario { name: spec.name.clone(), reason });
    if spec.brokers < 1 {
        return bad("needs at least one broker".into());
    }
    if spec.tick_ms == 0 {
        return bad("tick must be at least 1 ms".into());
    }
    if spec.latency_ms.0 > spec.latency_ms.1 {
        return bad(format!("latency range {:?} is empty", spec.latency_ms));
    }
    if spec.producer.records_per_sec.0 > spec.producer.records_per_sec.1 {
        return bad(format!("producer rate range {:?} is empty", spec.producer.records_per_sec));
    }
    for m in &spec.members {
        if m.host >= spec.client_hosts {
            return bad(format!(
                "member {} is on client host {} of {}",
                m.name, m.host, spec.client_hosts
            ));
        }
        if let Some(kind) = m.plugin.as_ref().filter(|k| !k.can_build()) {
            return bad(format!(
                "member {} runs the plug-in member `{}`, which only the program that defines it \
                 can build (a spec read back from a file names it but cannot run it): replay the \
                 seed from that program's test, with GROUPSIM_SEED={}",
                m.name,
                kind.name(),
                spec.seed
            ));
        }
    }
    Ok(())
}

/// The cluster as faults see it: the cluster control, the producer (which must learn about
/// partitions a topic gains), and the world's hosts and network (turmoil's, or the event
/// world's).
struct WorldCluster<'a, H> {
    cluster: &'a mut Cluster,
    producer: &'a RefCell<Producer>,
    hosts: &'a mut H,
}

impl<H: Hosts> ClusterOps for WorldCluster<'_, H> {
    type Error = ClusterError;

    fn apply(&mut self, now: Millis, op: ClusterOp<'_>) -> Result<(), ClusterError> {
        let hosts = &mut *self.hosts;
        match op {
            ClusterOp::MoveCoordinator { group, to, load_ms } => {
                self.cluster.move_coordinator(hosts, now, group, to, load_ms)
            }
            ClusterOp::CrashBroker { node } => self.cluster.crash_broker(hosts, now, node),
            ClusterOp::RestartBroker { node } => self.cluster.restart_broker(hosts, now, node),
            ClusterOp::ExpandTopic { topic, partitions } => {
                self.cluster.expand_topic(now, topic, partitions)?;
                self.producer.borrow_mut().add_partitions(topic, partitions);
                Ok(())
            }
            ClusterOp::InjectError { group, api, error, count, until } => {
                let node = self.cluster.coordinator_of(group);
                let control = BrokerOrder::InjectNext { api, error, count, until };
                match hosts.order(now, Order::Broker { node, control }) {
                    true => Ok(()),
                    false => Err(ClusterError::BrokerDown(node)),
                }
            }
            ClusterOp::ForceRebalance { group } => {
                let node = self.cluster.coordinator_of(group);
                let control = BrokerControl::ForceRebalance { group: group.to_string() }.into();
                match hosts.order(now, Order::Broker { node, control }) {
                    true => Ok(()),
                    false => Err(ClusterError::BrokerDown(node)),
                }
            }
            ClusterOp::ExpelMember { group, member_id } => {
                let node = self.cluster.coordinator_of(group);
                let control = BrokerControl::ExpireMember {
                    group: group.to_string(),
                    member: member_id.to_string(),
                };
                match hosts.order(now, Order::Broker { node, control: control.into() }) {
                    true => Ok(()),
                    false => Err(ClusterError::BrokerDown(node)),
                }
            }
            ClusterOp::HoldRequest { group, member, api, delay_ms, until } => {
                let node = self.cluster.coordinator_of(group);
                let client_id = member.to_string();
                let control = BrokerOrder::HoldNext { client_id, api, delay_ms, until };
                match hosts.order(now, Order::Broker { node, control }) {
                    true => Ok(()),
                    false => Err(ClusterError::BrokerDown(node)),
                }
            }
        }
    }
}

impl<H: Hosts> Hosts for WorldCluster<'_, H> {
    fn order(&mut self, now: Millis, order: Order) -> bool {
        self.hosts.order(now, order)
    }
}

/// The smallest of the members' `field` (a timeout), as a duration; 0 without members.
fn shortest(spec: &ScenarioSpec, field: impl Fn(&MemberConfig) -> Millis) -> Millis {
    spec.members.iter().map(|m| field(&m.config)).min().unwrap_or(0)
}
