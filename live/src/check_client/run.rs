//! One seed of one client in one commit mode: a 3-broker served cluster, a producer, the seed's
//! member processes and faults (client and broker), a heal phase, then the black-box verdict on
//! the broker history plus the processed-record logs. Every wait is bounded.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use groupsim_coordinator::CoordinatorConfig;
use groupsim_wire::{Millis, TopicPartition};
use rand::RngExt;

use groupsim_history::{History, WorldEvent};
use groupsim_member::GroupProtocol;

use super::clients::{protocol_name, Launcher};
use super::error::CheckError;
use super::members::{AdapterExit, MemberArgs, Members};
use super::processed::read_log;
pub use super::schedule::TOPIC;
use super::schedule::{self, member_index, Plan, PlanShape};
use crate::serve::{ClientAction, Cluster, ClusterConfig, Nemesis, TopicSpec};
use groupsim::faults::Fault;
use groupsim::rng::{self, Stream};
use groupsim_checker::black_box::{check_black_box, BlackBoxVerdict, Processed};
use groupsim_checker::AnomalyClass;

/// The rebalance timeout (`max.poll.interval.ms`) every adapter under `clients/` sets.
pub const ADAPTER_REBALANCE_TIMEOUT_MS: Millis = 10_000;

/// The group every run forms.
pub const GROUP: &str = "check";
/// Brokers in every run's cluster.
pub const BROKERS: usize = 3;
/// Records in every partition before the members start.
pub const PRELOAD: u32 = 20;
/// How often the producer appends to every partition.
const PRODUCE_EVERY: Duration = Duration::from_millis(250);

/// How a campaign runs each seed.
#[derive(Clone, Debug)]
pub struct Settings {
    /// How long faults go on.
    pub fault_ms: Millis,
    /// How long the heal phase may take to converge.
    pub heal_ms: Millis,
    /// The members' session timeout.
    pub session_timeout_ms: Millis,
    /// Milliseconds of "work" per processed record.
    pub work_ms: u64,
    /// Where logs and failure artifacts go.
    pub out_dir: PathBuf,
    /// The group protocol the members speak (`group.protocol`); with `Consumer` the session
    /// timeout above is the broker's `group.consumer.session.timeout.ms`.
    pub protocol: GroupProtocol,
    /// The brokers' `connections.max.idle.ms` (`None`: never close an idle connection).
    pub connections_max_idle_ms: Option<u64>,
}

/// `group.consumer.heartbeat.interval.ms` of a consumer-protocol run: short, as the classic
/// adapters' own `heartbeat.interval.ms`.
pub const CONSUMER_HEARTBEAT_INTERVAL_MS: i32 = 500;

/// What one seed showed.
pub struct Outcome {
    /// The seed.
    pub seed: u64,
    /// The client version its adapters reported.
    pub version: String,
    /// The black-box verdict.
    pub verdict: BlackBoxVerdict,
    /// Wall time of the run.
    pub elapsed: Duration,
    /// The plan applied.
    pub plan: Plan,
    /// The partition assignor the members used.
    pub assignor: String,
    /// Where the run's logs (and, on failure, history and timelines) are.
    pub dir: PathBuf,
    /// Adapters that exited by themselves during the run (each member counted as crashed).
    pub exits: Vec<AdapterExit>,
    /// The served brokers' history.
    pub history: groupsim_history::History,
}

/// Runs `seed` for `launcher`'s client in commit mode `mode`.
pub fn run_seed(
    launcher: &Launcher,
    mode: &str,
    seed: u64,
    settings: &Settings,
) -> Result<Outcome, CheckError> {
    run_seed_with(launcher, mode, seed, settings, schedule::draw(seed, plan_shape(settings)))
}

/// The shape of the plans a campaign with `settings` draws.
pub fn plan_shape(settings: &Settings) -> PlanShape {
    PlanShape {
        brokers: BROKERS as i32,
        fault_ms: settings.fault_ms,
        session_timeout_ms: settings.session_timeout_ms,
        protocol: settings.protocol,
    }
}

/// [`run_seed`] under `plan` instead of the seed's drawn one (`check-client --explore`).
pub fn run_seed_with(
    launcher: &Launcher,
    mode: &str,
    seed: u64,
    settings: &Settings,
    plan: Plan,
) -> Result<Outcome, CheckError> {
    let started = Instant::now();
    let name = launcher.kind.name;
    let protocol = settings.protocol;
    let Some(assignor) = launcher.capabilities.assignor_for(protocol, seed) else {
        return Err(CheckError::Setting(format!(
            "the {name} adapter with {} {} offers no group.protocol={}",
            launcher.capabilities.client,
            launcher.capabilities.version,
            protocol_name(protocol)
        )));
    };
    let kind = match protocol {
        GroupProtocol::Classic => mode.to_string(),
        GroupProtocol::Consumer => format!("consumer-{mode}"),
    };
    let dir = settings.out_dir.join(format!("check-client-{name}-{kind}-{seed}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)
        .map_err(|e| CheckError::io(format!("creating {}", dir.display()), e))?;
    let cluster = Cluster::start(ClusterConfig {
        brokers: BROKERS,
        topics: vec![TopicSpec::new(TOPIC, plan.partitions)?],
        preload: PRELOAD,
        coordinator: CoordinatorConfig {
            initial_rebalance_delay_ms: 300,
            consumer_session_timeout_ms: settings.session_timeout_ms as i32,
            consumer_heartbeat_interval_ms: CONSUMER_HEARTBEAT_INTERVAL_MS,
            ..CoordinatorConfig::default()
        },
        label: format!("check-client {name} {} {mode} {assignor}", protocol_name(protocol)),
        seed,
        connections_max_idle_ms: settings.connections_max_idle_ms,
        ..ClusterConfig::default()
    })?;
    let args = MemberArgs {
        bootstrap: cluster.bootstrap(),
        topic: TOPIC.into(),
        group: GROUP.into(),
        mode: mode.into(),
        protocol,
        assignor: assignor.to_string(),
        work_ms: settings.work_ms,
        session_timeout_ms: settings.session_timeout_ms,
        dir: dir.clone(),
    };
    let started_unix_ms = cluster.recorder().started_unix_ms();
    let mut members = Members::start(launcher, args, plan.members, &cluster)?;
    let result = drive(&cluster, &mut members, &plan, seed, settings, &dir, started_unix_ms);
    cluster.recorder().world(WorldEvent::RunEnded);
    let history = cluster.history();
    members.close_all(&cluster);
    cluster.shutdown();
    result?;
    let processed = read_logs(&dir, started_unix_ms)?;
    let verdict = check_black_box(&history, Some(&processed));
    std::fs::write(dir.join("history.jsonl"), history.to_jsonl())
        .map_err(|e| CheckError::io("writing the history", e))?;
    Ok(Outcome {
        seed,
        version: members.version.clone(),
        verdict,
        elapsed: started.elapsed(),
        plan,
        assignor: assignor.to_string(),
        dir,
        exits: std::mem::take(&mut members.exits),
        history,
    })
}

/// The fault phase, then the heal phase until the group converges or the bound runs out.
fn drive(
    cluster: &Cluster,
    members: &mut Members<'_>,
    plan: &Plan,
    seed: u64,
    settings: &Settings,
    dir: &Path,
    started_unix_ms: f64,
) -> Result<(), CheckError> {
    let mut nemesis = Nemesis::new(cluster, plan.brokers.clone(), GROUP, seed);
    let mut producer = Producer::new(seed, plan.partitions);
    let phase_start = Instant::now();
    let mut next_client = 0;
    let fault_phase = Duration::from_millis(settings.fault_ms);
    while phase_start.elapsed() < fault_phase {
        let elapsed = phase_start.elapsed().as_millis() as Millis;
        while let Some(t) = plan.client.get(next_client) {
            if t.at_ms > elapsed {
                break;
            }
            next_client += 1;
            apply(cluster, members, plan.members, &t.fault, &mut producer)?;
        }
        for action in nemesis.step(cluster) {
            match action {
                ClientAction::Pause { client, duration_ms } => {
                    if let Some(i) = members.by_client(&client) {
                        members.pause(i, duration_ms, cluster);
                    }
                }
                ClientAction::Crash { client, restart_after_ms } => {
                    if let Some(i) = members.by_client(&client) {
                        members.kill(i, restart_after_ms, cluster);
                    }
                }
            }
        }
        producer.tick(cluster)?;
        members.tend(cluster, false)?;
        std::thread::sleep(Duration::from_millis(10));
    }
    nemesis.heal(cluster);
    members.tend(cluster, true)?;
    let ends = producer.log_ends(cluster);
    cluster.recorder().world(WorldEvent::ProducerStopped { log_end_offsets: ends });
    let now = cluster.recorder().now();
    // The stall bound: every adapter's rebalance timeout (`max.poll.interval.ms`) plus the
    // members' session timeout, as the simulated scenarios record theirs.
    let stall_ms = Some(ADAPTER_REBALANCE_TIMEOUT_MS + settings.session_timeout_ms);
    cluster
        .recorder()
        .world(WorldEvent::LivenessPhase { deadline_ms: now + settings.heal_ms, stall_ms });
    let deadline = Instant::now() + Duration::from_millis(settings.heal_ms);
    let mut next_check = Instant::now();
    while Instant::now() < deadline {
        members.tend(cluster, true)?;
        if Instant::now() >= next_check {
            next_check = Instant::now() + Duration::from_millis(500);
            let processed = read_logs(dir, started_unix_ms)?;
            let verdict = check_black_box(&cluster.history(), Some(&processed));
            if verdict.anomalies.iter().all(|a| a.class != AnomalyClass::Stuck) {
                return Ok(()); // converged
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

/// Applies one fault on the member processes or the topic (the plan holds no others; a member
/// name outside the plan, refused when a schedule is read, is recorded as not applied).
fn apply(
    cluster: &Cluster,
    members: &mut Members<'_>,
    count: usize,
    fault: &Fault,
    producer: &mut Producer,
) -> Result<(), CheckError> {
    let slot = match fault {
        Fault::MemberCrash { member, .. }
        | Fault::MemberPause { member, .. }
        | Fault::MemberLeave { member, .. } => member_index(member, count),
        _ => None,
    };
    match (fault, slot) {
        (Fault::MemberCrash { restart_after_ms, .. }, Some(i)) => {
            members.kill(i, *restart_after_ms, cluster)
        }
        (Fault::MemberPause { duration_ms, .. }, Some(i)) => {
            members.pause(i, *duration_ms, cluster)
        }
        (Fault::MemberLeave { restart_after_ms, .. }, Some(i)) => {
            members.close(i, *restart_after_ms, cluster)
        }
        (Fault::PartitionExpansion { topic, partitions }, _)
            if topic == TOPIC && *partitions > producer.partitions =>
        {
            cluster
                .recorder()
                .world(WorldEvent::FaultInjected { fault: fault.clone(), applied: true });
            cluster.add_partitions(TOPIC, *partitions)?;
            producer.partitions = *partitions;
        }
        (other, _) => cluster
            .recorder()
            .world(WorldEvent::FaultInjected { fault: other.clone(), applied: false }),
    }
    Ok(())
}

/// The world's producer: every [`PRODUCE_EVERY`], one to three records to every partition.
struct Producer {
    rng: rand_chacha::ChaCha8Rng,
    partitions: i32,
    next: Instant,
}

impl Producer {
    fn new(seed: u64, partitions: i32) -> Self {
        Self { rng: rng::stream(seed, Stream::Network), partitions, next: Instant::now() }
    }

    fn tick(&mut self, cluster: &Cluster) -> Result<(), CheckError> {
        if Instant::now() < self.next {
            return Ok(());
        }
        self.next += PRODUCE_EVERY;
        for p in 0..self.partitions {
            let count = self.rng.random_range(1..=3u32);
            cluster.produce(TOPIC, p, count)?;
        }
        Ok(())
    }

    fn log_ends(&self, cluster: &Cluster) -> Vec<(TopicPartition, i64)> {
        let logs = cluster.logs().lock().unwrap_or_else(|p| p.into_inner());
        (0..self.partitions)
            .map(|p| {
                let tp = TopicPartition::new(TOPIC, p);
                let end = logs.log_end_offset(&tp).unwrap_or(0);
                (tp, end)
            })
            .collect()
    }
}

/// The anomaly classes of `verdict`, each once, in the order first found.
pub fn classes(verdict: &BlackBoxVerdict) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for a in &verdict.anomalies {
        let class = a.class.to_string();
        if !out.contains(&class) {
            out.push(class);
        }
    }
    out
}

/// Every processed record of every incarnation's log.
fn read_logs(dir: &Path, started_unix_ms: f64) -> Result<Vec<Processed>, CheckError> {
    let mut all = Vec::new();
    for log in Members::logs(dir) {
        all.extend(read_log(&log, started_unix_ms)?);
    }
    Ok(all)
}

/// Writes what a failing seed needs for a post-mortem: the trace and the SVG/HTML timelines
/// beside the history and the logs; returns the folder.
pub fn write_artifacts(outcome: &Outcome) -> Result<PathBuf, CheckError> {
    let dir = &outcome.dir;
    let text = std::fs::read_to_string(dir.join("history.jsonl"))
        .map_err(|e| CheckError::io("reading the history back", e))?;
    let history = History::from_jsonl(&text)
        .map_err(|e| CheckError::Setting(format!("the history written cannot be read: {e}")))?;
    let verdict = outcome.verdict.verdict();
    let write = |name: &str, body: String| {
        std::fs::write(dir.join(name), body)
            .map_err(|e| CheckError::io(format!("writing {name}"), e))
    };
    write("trace.txt", groupsim::trace::text(&history))?;
    write("timeline.svg", groupsim::pictures::svg(&history, &verdict))?;
    write("timeline.html", groupsim::pictures::html(&history, &verdict))?;
    write("schedule.txt", outcome.plan.to_string())?;
    let anomalies: Vec<String> =
        outcome.verdict.anomalies.iter().map(|a| a.render(&history)).collect();
    write("anomalies.txt", anomalies.join("\n"))?;
    Ok(dir.clone())
}
