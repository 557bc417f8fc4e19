//! One seed against a broker: ask what it offers, make or find the topic, start the producer,
//! the observer and the members (each behind its own proxies), apply the plan's faults, heal,
//! wait for the group to converge (or the heal bound to pass), then judge the answer log with
//! the broker-side rules.

use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::{Duration, Instant};

use groupsim_checker::broker::{self, AnswerLog, BrokerAnomaly, Entry, Mark, Protocol};
use groupsim_member::GroupProtocol;
use groupsim_wire::{Millis, TopicPartition};
use tokio::sync::mpsc;

use super::admin::{Admin, Offered, STEP};
use super::error::CheckBrokerError;
use super::host::{run_member, Shared};
use super::plan::{self, Fault, Plan};
use super::proxy::{self, Link};
use super::tap::Tap;
use groupsim::rng::{self, Stream};
use groupsim::scenario::{member_config, MemberPlan};
use groupsim::world::orders::MemberCommand;

/// What one run needs.
#[derive(Clone, Debug)]
pub struct RunConfig {
    /// The broker to bootstrap from, `host:port`.
    pub bootstrap: String,
    /// The seed.
    pub seed: u64,
    /// The group protocol the members speak.
    pub protocol: GroupProtocol,
    /// The topic to consume: used if it exists, else created. None: `groupsim-<seed>`, created.
    pub topic: Option<String>,
    /// How long faults go on.
    pub fault_ms: Millis,
    /// The most the group may take to converge after the heal.
    pub heal_ms: Millis,
    /// A shell command that restarts the broker, run at the instants the seed draws.
    pub restart_cmd: Option<String>,
}

/// The outcome of one run.
#[derive(Debug)]
pub struct SeedReport {
    /// The plan the seed drew.
    pub plan: Plan,
    /// The topic consumed and the group the members formed.
    pub topic: String,
    /// The group id.
    pub group: String,
    /// How long after the heal the group was seen converged (None: it was not, within the
    /// bound).
    pub converged_after_ms: Option<Millis>,
    /// Everything asked and answered.
    pub log: AnswerLog,
    /// What the rules found.
    pub anomalies: Vec<BrokerAnomaly>,
}

/// The group protocols a broker offers, asked through ApiVersions; a named error when
/// `bootstrap` cannot be reached, closes the connection, or offers no group protocol.
pub fn offered(bootstrap: &str) -> Result<Offered, CheckBrokerError> {
    runtime()?.block_on(async { Admin::connect(bootstrap).await?.offered() })
}

fn runtime() -> Result<tokio::runtime::Runtime, CheckBrokerError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(CheckBrokerError::Runtime)
}

/// The group a seed's members form.
pub fn group_id(seed: u64, protocol: GroupProtocol) -> String {
    let p = match protocol {
        GroupProtocol::Classic => "classic",
        GroupProtocol::Consumer => "consumer",
    };
    format!("groupsim-check-{seed}-{p}")
}

/// Runs one seed (blocking).
pub fn run_seed(config: &RunConfig) -> Result<SeedReport, CheckBrokerError> {
    let rt = runtime()?;
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, run(config))
}

async fn run(config: &RunConfig) -> Result<SeedReport, CheckBrokerError> {
    let mut plan = plan::draw(config.seed, config.protocol, config.fault_ms);
    if config.restart_cmd.is_some() {
        plan.restarts = plan::restarts(config.seed, config.fault_ms);
    }
    let mut admin = Admin::connect(&config.bootstrap).await?;
    let offered = admin.offered()?;
    let (wanted, missing) = match config.protocol {
        GroupProtocol::Classic => (offered.classic, "JoinGroup/SyncGroup/Heartbeat"),
        GroupProtocol::Consumer => (offered.consumer, "ConsumerGroupHeartbeat"),
    };
    if !wanted {
        return Err(CheckBrokerError::ProtocolNotOffered {
            addr: config.bootstrap.clone(),
            protocol: protocol_name(config.protocol).into(),
            missing: missing.into(),
        });
    }
    let topic = config.topic.clone().unwrap_or_else(|| format!("groupsim-{}", config.seed));
    let cluster = topic_ready(&mut admin, &topic, plan.partitions).await?;
    let info = cluster.topic.clone().expect("topic_ready returns a topic");
    let partitions: Vec<TopicPartition> =
        info.leaders.keys().map(|&p| TopicPartition::new(&topic, p)).collect();
    let mut names = BTreeMap::new();
    names.insert(info.id, topic.clone());
    names.insert(groupsim_wire::topic_id(&topic), topic.clone());
    let protocol = match config.protocol {
        GroupProtocol::Classic => Protocol::Classic,
        GroupProtocol::Consumer => Protocol::Consumer,
    };
    let group = group_id(config.seed, config.protocol);
    let shared = Rc::new(Shared {
        started: Instant::now(),
        tap: std::cell::RefCell::new(Tap::new(AnswerLog::new(protocol, partitions.clone()), names)),
    });
    let bootstrap_node = *cluster.nodes.keys().next().ok_or_else(|| CheckBrokerError::Request {
        addr: config.bootstrap.clone(),
        what: "Metadata".into(),
        reason: "no broker listed".into(),
    })?;

    // Producer: a first round before the members start, then one round every interval.
    let mut producers = BTreeMap::new();
    for (&partition, leader) in &info.leaders {
        let addr = cluster.nodes.get(leader).cloned().unwrap_or_else(|| config.bootstrap.clone());
        if !producers.contains_key(&addr) {
            producers.insert(addr.clone(), Admin::connect(&addr).await?);
        }
        let producer = producers.get_mut(&addr).expect("inserted above");
        producer.produce(&topic, partition, plan.records_per_round * 4, "warmup").await?;
    }
    let producer = tokio::task::spawn_local(produce(
        producers,
        cluster.nodes.clone(),
        info.leaders.clone(),
        topic.clone(),
        plan.records_per_round,
    ));
    let observer = tokio::task::spawn_local(super::observer::observe(
        shared.clone(),
        config.bootstrap.clone(),
        cluster.nodes.clone(),
        group.clone(),
        partitions.clone(),
    ));

    // Members, each behind its own proxies.
    let mut links = Vec::new();
    let mut commands = Vec::new();
    let mut members = Vec::new();
    for (i, profile) in plan.profiles.iter().enumerate() {
        let name = format!("m{i}");
        let link = Link::new();
        let mut proxies = BTreeMap::new();
        for (&node, addr) in &cluster.nodes {
            let local =
                proxy::start(addr.clone(), link.clone()).await.map_err(CheckBrokerError::Proxy)?;
            proxies.insert(node, local);
        }
        let mut c = member_config(&name, *profile);
        c.group_id = group.clone();
        c.topics = vec![topic.clone()];
        c.bootstrap_node = bootstrap_node;
        c.server_assignor = plan.server_assignor.map(str::to_string);
        if plan.static_members {
            c.group_instance_id = Some(format!("groupsim-{}-{name}", config.seed));
        }
        let member = MemberPlan {
            name,
            host: i,
            start_ms: i as Millis * 200,
            leave_ms: None,
            config: c,
            seed: rng::sub_seed(config.seed, Stream::Member(i as u32)),
            plugin: None,
        };
        let (tx, rx) = mpsc::unbounded_channel();
        members.push(tokio::task::spawn_local(run_member(member, shared.clone(), proxies, rx)));
        links.push(link);
        commands.push(tx);
    }

    // Faults and broker restarts, then the heal.
    let mut restarts = plan.restarts.iter().copied().peekable();
    let mut running = Vec::new();
    for (at, fault) in &plan.faults {
        while let Some(r) = restarts.next_if(|r| r <= at) {
            sleep_until(&shared, r).await;
            running.push(restart(&shared, config.restart_cmd.as_deref()));
        }
        sleep_until(&shared, *at).await;
        tracing::info!(at_ms = shared.now(), %fault, "fault");
        let link = &links[fault.member()];
        let command = &commands[fault.member()];
        match *fault {
            Fault::Drop { .. } => link.drop_all(),
            Fault::Stall { direction, ms, .. } => link.stall(direction, Duration::from_millis(ms)),
            Fault::Latency { latency_ms, ms, .. } => {
                link.slow(Duration::from_millis(latency_ms), Duration::from_millis(ms))
            }
            Fault::Pause { ms, .. } => {
                let _ = command.send(MemberCommand::Pause { duration_ms: ms });
            }
            Fault::Crash { restart_after_ms, .. } => {
                let _ = command.send(MemberCommand::Crash { restart_after_ms });
            }
            Fault::Leave { restart_after_ms, .. } => {
                let _ = command.send(MemberCommand::Leave { restart_after_ms, upgrade: None });
            }
            Fault::StaleAck { delay_ms, .. } => {
                let _ = command.send(MemberCommand::StaleAck { delay_ms });
            }
            Fault::SlowRevoke { extra_ms, .. } => {
                let _ = command.send(MemberCommand::SlowRevoke { extra_ms });
            }
            // The new process starts with the member's config, instance id included.
            Fault::Replace { after_ms, .. } => {
                let _ = command.send(MemberCommand::Crash { restart_after_ms: after_ms });
            }
        }
    }
    for r in restarts {
        sleep_until(&shared, r).await;
        running.push(restart(&shared, config.restart_cmd.as_deref()));
    }
    sleep_until(&shared, plan.fault_ms).await;
    for run in running {
        finish_restart(run, config.restart_cmd.as_deref().unwrap_or_default()).await?;
    }
    for link in &links {
        link.heal();
    }
    for command in &commands {
        let _ = command.send(MemberCommand::Heal);
    }
    shared.mark(Mark::Heal);
    let healed = shared.now();
    let converged_after_ms = converge(&shared, healed, config.heal_ms).await;
    shared.mark(Mark::End);
    drop(commands);
    for m in members {
        let _ = tokio::time::timeout(STEP, m).await;
    }
    producer.abort();
    observer.abort();
    // Aborted tasks let go of the log when the runtime next polls them: take it now.
    let empty = Tap::new(AnswerLog::new(protocol, Vec::new()), BTreeMap::new());
    let log = shared.tap.replace(empty).finish();
    // The observer's stale-commit probe commits as members the broker fenced, on purpose.
    let mut excused = broker::requests::Excused::new();
    excused.actors.insert("observer".to_string());
    let anomalies = broker::check_excusing(&log, &excused);
    Ok(SeedReport { plan, topic, group, converged_after_ms, log, anomalies })
}

/// How long the broker-restart command may run.
const RESTART_LIMIT: Duration = Duration::from_secs(120);

/// Starts the broker-restart command on a blocking thread (a real broker's restart takes
/// seconds; the schedule goes on meanwhile) and marks it in the log.
fn restart(
    shared: &Shared,
    command: Option<&str>,
) -> tokio::task::JoinHandle<std::io::Result<std::process::Output>> {
    let command = command.unwrap_or_default().to_string();
    tracing::info!(at_ms = shared.now(), %command, "broker restart");
    shared.mark(Mark::RestartStarted);
    tokio::task::spawn_blocking(move || {
        std::process::Command::new("sh")
            .arg("-c")
            .arg(&command)
            .stdin(std::process::Stdio::null())
            .output()
    })
}

/// Waits for a restart command started by [`restart`]; a named error when it failed or ran
/// past [`RESTART_LIMIT`].
async fn finish_restart(
    run: tokio::task::JoinHandle<std::io::Result<std::process::Output>>,
    command: &str,
) -> Result<(), CheckBrokerError> {
    let failed =
        |reason: String| CheckBrokerError::RestartFailed { command: command.into(), reason };
    let output = match tokio::time::timeout(RESTART_LIMIT, run).await {
        Err(_) => return Err(failed(format!("still running after {}s", RESTART_LIMIT.as_secs()))),
        Ok(Err(e)) => return Err(failed(e.to_string())),
        Ok(Ok(Err(e))) => return Err(failed(format!("cannot run sh: {e}"))),
        Ok(Ok(Ok(output))) => output,
    };
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let tail = stderr.trim().lines().last().unwrap_or("").to_string();
        return Err(failed(format!("{} {tail}", output.status)));
    }
    Ok(())
}

fn protocol_name(p: GroupProtocol) -> &'static str {
    match p {
        GroupProtocol::Classic => "classic",
        GroupProtocol::Consumer => "consumer",
    }
}

async fn sleep_until(shared: &Shared, at: Millis) {
    let wait = at.saturating_sub(shared.now());
    tokio::time::sleep(Duration::from_millis(wait)).await;
}

/// Checks in a row (half a second apart) the convergence rule must hold on before a run ends:
/// long enough for a few heartbeats and commits of the settled group to be judged too.
const STABLE_CHECKS: u32 = 6;

/// Waits until the convergence rule holds on [`STABLE_CHECKS`] checks in a row, or `bound` has
/// passed since `healed`; how long after the heal it first held.
async fn converge(shared: &Shared, healed: Millis, bound: Millis) -> Option<Millis> {
    let mut in_a_row = 0;
    let mut since = None;
    while shared.now() < healed + bound {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let mut log = shared.tap.borrow().log().clone();
        let at_ms = shared.now();
        log.entries.push(Entry::Mark { at_ms, mark: Mark::End });
        if broker::convergence::check(&log).is_empty() {
            in_a_row += 1;
            let first = *since.get_or_insert(at_ms);
            if in_a_row == STABLE_CHECKS {
                return Some(first - healed);
            }
        } else {
            in_a_row = 0;
            since = None;
        }
    }
    None
}

/// The topic's metadata, creating it first when it does not exist.
async fn topic_ready(
    admin: &mut Admin,
    topic: &str,
    partitions: i32,
) -> Result<super::admin::ClusterInfo, CheckBrokerError> {
    let info = admin.metadata(topic).await?;
    if info.topic.is_some() {
        return Ok(info);
    }
    admin.create_topic(topic, partitions).await?;
    let addr = admin.addr().to_string();
    let deadline = Instant::now() + STEP;
    loop {
        let info = admin.metadata(topic).await?;
        let led = info.topic.as_ref().is_some_and(|t| t.leaders.values().all(|&l| l >= 0));
        if led {
            return Ok(info);
        }
        if Instant::now() > deadline {
            return Err(CheckBrokerError::TopicNotCreatable {
                addr,
                topic: topic.into(),
                reason: "created, but Metadata did not list it with leaders in time".into(),
            });
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The producer: every round, `per_round` records to each partition at its leader. A failed
/// request drops that leader's connection; the next round connects again.
async fn produce(
    mut producers: BTreeMap<String, Admin>,
    nodes: BTreeMap<i32, String>,
    leaders: BTreeMap<i32, i32>,
    topic: String,
    per_round: usize,
) {
    let mut round = 0u64;
    loop {
        tokio::time::sleep(Duration::from_millis(250)).await;
        round += 1;
        for (&partition, leader) in &leaders {
            let Some(addr) = nodes.get(leader) else { continue };
            if !producers.contains_key(addr) {
                match Admin::connect(addr).await {
                    Ok(a) => {
                        producers.insert(addr.clone(), a);
                    }
                    Err(_) => continue,
                }
            }
            let producer = producers.get_mut(addr).expect("inserted above");
            let label = format!("r{round}");
            if let Err(e) = producer.produce(&topic, partition, per_round, &label).await {
                tracing::debug!(error = %e, "produce failed");
                producers.remove(addr);
            }
        }
    }
}
