//! The world: one turmoil simulation built from a [`ScenarioSpec`]. It hosts the brokers and the
//! client hosts, runs the producer between steps, marks the phases, and collects the history.
//!
//! Everything here is thin glue around the sans-IO cores: the broker hosts run
//! `groupsim_wire::server`, the member tasks run [`crate::driver`].

use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, UNIX_EPOCH};

use groupsim_coordinator::log::{self as plog, PartitionLogs, SharedLogs};
use groupsim_wire::{Millis, TopicPartition};
use rand::RngExt;

use crate::checker::LivenessWatch;
use crate::cluster::{Cluster, ClusterError};
use crate::history::{History, WorldEvent};
use crate::host::{broker_host, client_host, SharedHistory};
use crate::nemesis::{ClusterOp, ClusterOps, MemberControls, Nemesis, NemesisTargets};
use crate::rng::{self, Stream};
use crate::scenario::{MemberPlan, ScenarioSpec};
use crate::settle::SharedSettling;

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

/// Runs `spec` and returns the recorded history. The run ends once the liveness rule has held
/// for the scenario's grace period with every member's faults played out, or at the liveness
/// deadline when it does not (the checker then reports `stuck`).
pub fn run(spec: &ScenarioSpec) -> Result<History, WorldError> {
    validate(spec)?;
    let history: SharedHistory = Rc::new(RefCell::new(History::new()));
    let end_ms = spec.end_ms();
    let mut sim = turmoil::Builder::new()
        .epoch(UNIX_EPOCH + Duration::from_secs(1_700_000_000))
        .rng_seed(rng::sub_seed(spec.seed, Stream::Network))
        .enable_random_order()
        .tick_duration(Duration::from_millis(spec.tick_ms))
        .min_message_latency(Duration::from_millis(spec.latency_ms.0))
        .max_message_latency(Duration::from_millis(spec.latency_ms.1))
        .simulation_duration(Duration::from_millis(end_ms + 60_000))
        .tcp_capacity(4_096)
        .build();

    history
        .borrow_mut()
        .world(0, WorldEvent::RunStarted { scenario: spec.name.clone(), seed: spec.seed });
    let mut logs = PartitionLogs::new();
    for (topic, partitions) in &spec.topics {
        logs.create_topic(topic, *partitions).map_err(|e| WorldError::InvalidScenario {
            name: spec.name.clone(),
            reason: e.to_string(),
        })?;
        history
            .borrow_mut()
            .world(0, WorldEvent::TopicCreated { topic: topic.clone(), partitions: *partitions });
    }
    let logs = plog::shared(logs);

    let mut cluster = Cluster::new(spec, logs.clone(), history.clone());
    cluster.install(&mut sim);

    let controls: MemberControls = Rc::default();
    let settling: SharedSettling = Rc::default();
    for host in 0..spec.client_hosts {
        let plans: Vec<MemberPlan> =
            spec.members.iter().filter(|m| m.host == host).cloned().collect();
        let history = history.clone();
        let controls = controls.clone();
        let settling = settling.clone();
        let name = client_host(host);
        sim.host(name.clone(), move || {
            crate::driver::run_client_host(
                name.clone(),
                plans.clone(),
                history.clone(),
                controls.clone(),
                settling.clone(),
            )
        });
    }

    if let Some(swarm) = &spec.swarm {
        history.borrow_mut().world(0, WorldEvent::SwarmChosen { description: swarm.describe() });
    }
    let hosts: Vec<String> =
        (0..spec.brokers).map(broker_host).chain((0..spec.client_hosts).map(client_host)).collect();
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
    let mut nemesis = Nemesis::new(
        spec.faults.clone(),
        targets,
        controls,
        history.clone(),
        hosts,
        spec.latency_ms.1,
    );
    let producer = Rc::new(RefCell::new(Producer::new(spec, logs.clone())));
    let mut liveness_marked = false;
    let mut converged = Convergence::new(spec.liveness_grace_ms());
    loop {
        let now = sim.elapsed().as_millis() as Millis;
        if now >= end_ms {
            break;
        }
        if liveness_marked && converged.ends_run(now, &history, &settling) {
            break;
        }
        producer.borrow_mut().tick(now, &history);
        if !liveness_marked && now >= spec.liveness_start_ms {
            liveness_marked = true;
            nemesis.heal_all(
                &mut sim,
                &mut WorldCluster { cluster: &mut cluster, producer: &producer },
                now,
            );
            history.borrow_mut().world(now, WorldEvent::LivenessPhase { deadline_ms: end_ms });
        }
        cluster.tick(&mut sim, now);
        nemesis.tick(
            &mut sim,
            &mut WorldCluster { cluster: &mut cluster, producer: &producer },
            now,
        );
        if let Err(e) = sim.step() {
            return Err(WorldError::Sim { at_ms: now, reason: e.to_string() });
        }
    }
    let now = sim.elapsed().as_millis() as Millis;
    history.borrow_mut().world(now, WorldEvent::RunEnded);
    groupsim_wire::probe::tapping(false);
    drop(sim);
    let h = history.borrow().clone();
    Ok(h)
}

/// Decides when a run may end before its liveness deadline: the liveness rule holds, no member's
/// fault is still playing out, and both have stayed so for the grace period.
struct Convergence {
    watch: LivenessWatch,
    grace_ms: Millis,
    next_check: Millis,
    since: Option<Millis>,
}

impl Convergence {
    fn new(grace_ms: Millis) -> Self {
        Self { watch: LivenessWatch::default(), grace_ms, next_check: 0, since: None }
    }

    /// Whether the run ends at `now`; records `LivenessHeld` when it does.
    fn ends_run(
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

fn validate(spec: &ScenarioSpec) -> Result<(), WorldError> {
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

/// The cluster as faults see it: the cluster control, plus the producer, which must learn about
/// partitions a topic gains.
struct WorldCluster<'a> {
    cluster: &'a mut Cluster,
    producer: &'a Rc<RefCell<Producer>>,
}

impl ClusterOps for WorldCluster<'_> {
    type Error = ClusterError;

    fn apply(
        &mut self,
        sim: &mut turmoil::Sim<'_>,
        now: Millis,
        op: ClusterOp<'_>,
    ) -> Result<(), ClusterError> {
        match op {
            ClusterOp::MoveCoordinator { group, to, load_ms } => {
                self.cluster.move_coordinator(sim, now, group, to, load_ms)
            }
            ClusterOp::CrashBroker { node } => self.cluster.crash_broker(sim, now, node),
            ClusterOp::RestartBroker { node } => self.cluster.restart_broker(sim, now, node),
            ClusterOp::ExpandTopic { topic, partitions } => {
                self.cluster.expand_topic(sim, now, topic, partitions)?;
                self.producer.borrow_mut().add_partitions(topic, partitions);
                Ok(())
            }
        }
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
    fn new(spec: &ScenarioSpec, logs: SharedLogs) -> Self {
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

    /// Starts producing to partitions a topic gained (from the next flush on).
    pub fn add_partitions(&mut self, topic: &str, total: i32) {
        let have = self.partitions.iter().filter(|(tp, ..)| tp.topic == topic).count() as i32;
        let start = self.next_flush;
        for p in have..total {
            let rate = self.rng.random_range(self.rates.0..=self.rates.1);
            self.partitions.push((TopicPartition::new(topic, p), rate, 0, start));
        }
    }

    fn tick(&mut self, now: Millis, history: &SharedHistory) {
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
