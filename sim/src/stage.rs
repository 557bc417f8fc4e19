//! The half of a run that does not depend on how time and the network are simulated: the
//! history with its opening events, the topics, the cluster control, the nemesis, the producer,
//! the phases and the early end. Both worlds drive it: [`crate::world`] (turmoil, between fixed
//! steps) and [`crate::event_world`] (an event queue, at the instants something is due).

use std::cell::RefCell;
use std::rc::Rc;

use groupsim_coordinator::log::{self as plog, PartitionLogs, SharedLogs};
use groupsim_history::{History, WorldEvent};
use groupsim_wire::{Millis, TopicPartition};
use rand::RngExt;

use crate::cluster::{BrokerHosts, Cluster, ClusterError};
use crate::host::{broker_host, client_host, SharedHistory};
use crate::nemesis::{ClusterOp, ClusterOps, MemberControls, Nemesis, NemesisTargets, NetworkOps};
use crate::rng::{self, Stream};
use crate::scenario::ScenarioSpec;
use crate::settle::SharedSettling;
use groupsim_checker::LivenessWatch;

/// How often the producer appends what is due (like a producer's linger).
const PRODUCER_LINGER_MS: Millis = 100;

/// How often, in the liveness phase, the world asks whether the group has converged.
const LIVENESS_CHECK_MS: Millis = 100;

/// A run that could not be carried out (not an anomaly: the harness itself failed).
#[derive(Debug, thiserror::Error)]
pub enum WorldError {
    /// turmoil reported an error (a host's software failed).
    #[error("simulation failed at t={at_ms}ms: {reason}")]
    Sim { at_ms: Millis, reason: String },
    /// The scenario is inconsistent.
    #[error("invalid scenario {name}: {reason}")]
    InvalidScenario { name: String, reason: String },
}

/// The world-agnostic state of one run (see the module docs). A world builds it, installs its
/// hosts from [`Stage::cluster`], [`Stage::controls`] and [`Stage::settling`], calls
/// [`Stage::tick`] whenever simulated time reaches an instant it handles, and
/// [`Stage::finish`] at the end.
pub(crate) struct Stage {
    /// The history being recorded.
    pub(crate) history: SharedHistory,
    /// The cluster control (metadata, offsets log, coordinator moves, broker crashes).
    pub(crate) cluster: Cluster,
    /// Running members' control channels (the nemesis sends on them).
    pub(crate) controls: MemberControls,
    /// Whether the members' faults have played out.
    pub(crate) settling: SharedSettling,
    nemesis: Nemesis,
    producer: RefCell<Producer>,
    converged: Convergence,
    liveness_start_ms: Millis,
    liveness_marked: bool,
    end_ms: Millis,
}

impl Stage {
    /// Validates `spec`, records the run's opening events (run, topics, swarm choice) and
    /// builds the cluster control, the nemesis and the producer.
    pub(crate) fn new(spec: &ScenarioSpec) -> Result<Self, WorldError> {
        validate(spec)?;
        let history: SharedHistory = Rc::new(RefCell::new(History::new()));
        history
            .borrow_mut()
            .world(0, WorldEvent::RunStarted { scenario: spec.name.clone(), seed: spec.seed });
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
        let controls: MemberControls = Rc::default();
        if let Some(swarm) = &spec.swarm {
            history
                .borrow_mut()
                .world(0, WorldEvent::SwarmChosen { description: swarm.describe() });
        }
        let hosts: Vec<String> = (0..spec.brokers)
            .map(broker_host)
            .chain((0..spec.client_hosts).map(client_host))
            .collect();
        let targets = NemesisTargets {
            seed: spec.seed,
            group: crate::scenario::GROUP_ID.to_string(),
            brokers: (0..spec.brokers).collect(),
            rebalance_timeout_ms: spec
                .members
                .iter()
                .map(|m| m.config.rebalance_timeout_ms.max(0) as Millis)
                .max()
                .unwrap_or(0),
        };
        let nemesis = Nemesis::new(
            spec.faults.clone(),
            targets,
            controls.clone(),
            history.clone(),
            hosts,
            spec.latency_ms.1,
        );
        let producer = RefCell::new(Producer::new(spec, logs.clone()));
        Ok(Self {
            history,
            cluster,
            controls,
            settling: SharedSettling::default(),
            nemesis,
            producer,
            converged: Convergence::new(spec.liveness_grace_ms()),
            liveness_start_ms: spec.liveness_start_ms,
            liveness_marked: false,
            end_ms: spec.end_ms(),
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
    pub(crate) fn tick<H: BrokerHosts + NetworkOps>(&mut self, hosts: &mut H, now: Millis) -> bool {
        if self.liveness_marked && self.converged.ends_run(now, &self.history, &self.settling) {
            return true;
        }
        self.producer.borrow_mut().tick(now, &self.history);
        if !self.liveness_marked && now >= self.liveness_start_ms {
            self.liveness_marked = true;
            self.nemesis.heal_all(
                &mut WorldCluster { cluster: &mut self.cluster, producer: &self.producer, hosts },
                now,
            );
            self.history
                .borrow_mut()
                .world(now, WorldEvent::LivenessPhase { deadline_ms: self.end_ms });
        }
        self.cluster.tick(now);
        self.nemesis.tick(
            &mut WorldCluster { cluster: &mut self.cluster, producer: &self.producer, hosts },
            now,
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

    /// Records the end of the run at `now` and returns the history.
    pub(crate) fn finish(self, now: Millis) -> History {
        self.history.borrow_mut().world(now, WorldEvent::RunEnded);
        groupsim_wire::probe::tapping(false);
        let h = self.history.borrow().clone();
        h
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

impl<H: BrokerHosts> ClusterOps for WorldCluster<'_, H> {
    type Error = ClusterError;

    fn apply(&mut self, now: Millis, op: ClusterOp<'_>) -> Result<(), ClusterError> {
        match op {
            ClusterOp::MoveCoordinator { group, to, load_ms } => {
                self.cluster.move_coordinator(now, group, to, load_ms)
            }
            ClusterOp::CrashBroker { node } => self.cluster.crash_broker(self.hosts, now, node),
            ClusterOp::RestartBroker { node } => self.cluster.restart_broker(self.hosts, now, node),
            ClusterOp::ExpandTopic { topic, partitions } => {
                self.cluster.expand_topic(now, topic, partitions)?;
                self.producer.borrow_mut().add_partitions(topic, partitions);
                Ok(())
            }
        }
    }
}

impl<H: NetworkOps> NetworkOps for WorldCluster<'_, H> {
    fn partition(&mut self, a: &str, b: &str) {
        self.hosts.partition(a, b);
    }

    fn repair(&mut self, a: &str, b: &str) {
        self.hosts.repair(a, b);
    }

    fn set_max_latency(&mut self, a: &str, b: &str, max_ms: Millis) {
        self.hosts.set_max_latency(a, b, max_ms);
    }
}

/// Appends records to every partition at its drawn rate, between simulation steps.
pub struct Producer {
    logs: SharedLogs,
    /// (partition, records per second, records appended so far, first due time)
    partitions: Vec<(TopicPartition, u32, u64, Millis)>,
    rng: rand_chacha::ChaCha8Rng,
    rates: (u32, u32),
    stop_ms: Millis,
    next_flush: Millis,
    stopped: bool,
}

impl Producer {
    pub(crate) fn new(spec: &ScenarioSpec, logs: SharedLogs) -> Self {
        let mut rng = rng::stream(spec.seed, Stream::Workload);
        // Skip ahead on a separate stream id space: the workload stream's first draws belong to
        // the scenario builder; use a fork keyed on the producer instead.
        rng.set_stream(rng.get_stream() + 100);
        let (lo, hi) = spec.producer.records_per_sec;
        let mut partitions = Vec::new();
        for (topic, n) in &spec.topics {
            for p in 0..*n {
                let rate = rng.random_range(lo..=hi);
                partitions.push((TopicPartition::new(topic.clone(), p), rate, 0, 0));
            }
        }
        Self {
            logs,
            partitions,
            rng,
            rates: (lo, hi),
            stop_ms: spec.producer.stop_ms,
            next_flush: 0,
            stopped: false,
        }
    }

    /// When [`Self::tick`] next appends, if the producer still runs.
    pub(crate) fn next_flush(&self) -> Option<Millis> {
        (!self.stopped).then_some(self.next_flush)
    }

    /// Starts producing to partitions a topic gained (from the next flush on).
    pub fn add_partitions(&mut self, topic: &str, total: i32) {
        let have = self.partitions.iter().filter(|(tp, ..)| tp.topic == topic).count() as i32;
        let start = self.next_flush;
        for p in have..total {
            let rate = self.rng.random_range(self.rates.0..=self.rates.1);
            self.partitions.push((TopicPartition::new(topic, p), rate, 0, start));
        }
    }

    pub(crate) fn tick(&mut self, now: Millis, history: &SharedHistory) {
        if self.stopped || now < self.next_flush {
            return;
        }
        let until = now.min(self.stop_ms);
        let mut logs = self.logs.lock().expect("logs lock is never poisoned");
        for (tp, rate, produced, since) in &mut self.partitions {
            let due = until.saturating_sub(*since) * u64::from(*rate) / 1_000;
            if due > *produced {
                let count = due - *produced;
                let mut base = None;
                for k in 0..count {
                    let offset = logs
                        .append(
                            tp,
                            None,
                            format!("{tp}:{}", *produced + k).into_bytes().into(),
                            now as i64,
                        )
                        .expect("producer appends only to partitions it was built from");
                    base.get_or_insert(offset);
                }
                *produced = due;
                history.borrow_mut().world(
                    now,
                    WorldEvent::Produced {
                        partition: tp.clone(),
                        base_offset: base.unwrap_or_default(),
                        count: count as i64,
                    },
                );
            }
        }
        if now >= self.stop_ms {
            self.stopped = true;
            let ends = self
                .partitions
                .iter()
                .map(|(tp, ..)| (tp.clone(), logs.log_end_offset(tp).unwrap_or(0)))
                .collect();
            history.borrow_mut().world(now, WorldEvent::ProducerStopped { log_end_offsets: ends });
        }
        self.next_flush = now + PRODUCER_LINGER_MS;
    }
}
