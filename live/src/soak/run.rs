//! The soak from start to verdict: serve started as a child process, the real group joined, the
//! loopback load run beside it while serve is sampled, everything stopped, then judged.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use groupsim_history::History;

use super::clients::{self, LoadConfig, LoadStats, SharedStats};
use super::error::SoakError;
use super::frames::Target;
use super::judge::{self, Goal};
use super::plan::{SoakArgs, SoakPlan};
use super::processes::{self, ChildProcess};
use super::render;
use super::sample::{self, Sample};

/// The topic the real group consumes, its partitions, and the records preloaded in each.
const TOPIC: &str = "soak";
const PARTITIONS: i32 = 6;
const PRELOAD: u32 = 500;
/// The real group.
const GROUP: &str = "soak-group";
/// Bounds on the children's start and stop.
const SERVE_START: Duration = Duration::from_secs(30);
const MEMBER_START: Duration = Duration::from_secs(60);
const MEMBER_STOP: Duration = Duration::from_secs(20);
/// serve writes the whole history on its way out: give it time.
const SERVE_STOP: Duration = Duration::from_secs(120);

/// What a soak measured and concluded.
#[derive(Debug)]
pub struct SoakReport {
    /// The samples, in time order.
    pub samples: Vec<Sample>,
    /// Each goal's outcome.
    pub goals: Vec<Goal>,
    /// The samples as a table.
    pub table: String,
    /// Where the plot was written.
    pub svg: PathBuf,
    /// Where serve's history was written.
    pub history: PathBuf,
    /// The loopback clients' counts.
    pub load: LoadStats,
}

impl SoakReport {
    /// Whether every goal passed.
    pub fn passed(&self) -> bool {
        judge::all_passed(&self.goals)
    }
}

/// Runs the soak `args` describes; `say` gets progress lines. A failed goal is in the report,
/// not an error: errors are what kept the soak from running.
pub fn run(args: &SoakArgs, say: &mut dyn FnMut(&str)) -> Result<SoakReport, SoakError> {
    let plan = args.plan()?;
    let python =
        args.python.clone().unwrap_or_else(|| "target/real-clients/venv/bin/python".into());
    let kafka = processes::kafka_python_version(&python)?;
    let script = args.clients_dir.join("python/member_kafka_python.py");
    if !script.is_file() {
        return Err(SoakError::Setting(format!(
            "no {}: run from the repository root or name --clients-dir",
            script.display()
        )));
    }
    std::fs::create_dir_all(&args.out)
        .map_err(|e| SoakError::io(format!("creating {}", args.out.display()), e))?;
    let history_path = args.out.join("history.jsonl");
    let _ = std::fs::remove_file(&history_path);

    let port = processes::free_port()?;
    let exe = std::env::current_exe().map_err(|e| SoakError::io("finding groupsim itself", e))?;
    let serve_args: Vec<String> = [
        "serve",
        "--port",
        &port.to_string(),
        "--topic",
        &format!("{TOPIC}:{PARTITIONS}"),
        "--preload",
        &PRELOAD.to_string(),
        "--history",
        &history_path.display().to_string(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let mut serve = ChildProcess::spawn("serve", &exe, &serve_args, &args.out.join("serve.log"))?;
    serve
        .wait_line(SERVE_START, |l| l.starts_with("bootstrap servers:"))
        .map_err(SoakError::ServeStart)?;
    let bootstrap = format!("127.0.0.1:{port}");
    say(&format!(
        "serve (pid {}) on {bootstrap}: topic {TOPIC} ({PARTITIONS} partitions, {PRELOAD} records \
         each), history {}",
        serve.pid(),
        history_path.display()
    ));

    let mut members = Vec::new();
    let mut processed = Vec::new();
    for i in 0..args.consumers {
        let id = format!("soak-member-{i}");
        let out = args.out.join(format!("processed-{i}.jsonl"));
        let _ = std::fs::remove_file(&out);
        let member_args = processes::member_args(&script, &bootstrap, TOPIC, GROUP, &id, &out);
        let mut member =
            ChildProcess::spawn(&id, &python, &member_args, &args.out.join(format!("{id}.log")))?;
        member
            .wait_line(MEMBER_START, |l| l.contains("\"ready\""))
            .map_err(|why| SoakError::MemberStart { member: id.clone(), why })?;
        members.push(member);
        processed.push(out);
    }
    say(&format!(
        "real group {GROUP}: {} kafka-python {kafka} consumer(s), sync commits",
        members.len()
    ));

    let stats: SharedStats = Arc::default();
    let load = start_load(args, &plan, port, stats.clone())?;
    say(&format!(
        "{} loopback clients over {} s, at most {} at once; a sample every {} s, the first {} s \
         warm-up",
        args.clients,
        plan.duration.as_secs(),
        args.concurrency,
        plan.sample_every.as_secs(),
        plan.warmup.as_secs()
    ));

    let (samples, members_lost) = sample_loop(&plan, &mut serve, &mut members, &stats, say)?;
    if load.join().is_err() {
        tracing::warn!("the load thread panicked");
    }

    for m in &mut members {
        m.stop("TERM", MEMBER_STOP);
    }
    let consumed: Vec<u64> = processed.iter().map(processes::count_lines).collect();
    let serve_status = serve.stop("INT", SERVE_STOP);
    say(&format!("serve stopped: {serve_status:?}"));

    let load_stats = clients::lock(&stats).clone();
    let mut goals = judge::resource_goals(&samples, plan.warmup.as_secs_f64());
    goals.push(judge::load_goal(&load_stats, args.clients));
    goals.push(history_goal(&history_path, serve_status.is_some_and(|s| s.success())));
    goals.push(group_goal(&consumed, &members_lost));

    let table = render::table(&samples);
    let svg_path = args.svg.clone().unwrap_or_else(|| args.out.join("soak.svg"));
    let title = format!(
        "groupsim serve soak: {} min, {} loopback clients, {} kafka-python consumers",
        args.minutes, args.clients, args.consumers
    );
    let svg = render::svg(&title, &samples, plan.warmup.as_secs_f64());
    if let Some(dir) = svg_path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| SoakError::io(format!("creating {}", dir.display()), e))?;
    }
    std::fs::write(&svg_path, svg)
        .map_err(|e| SoakError::io(format!("writing {}", svg_path.display()), e))?;
    Ok(SoakReport { samples, goals, table, svg: svg_path, history: history_path, load: load_stats })
}

/// Starts the loopback clients on a tokio runtime of their own thread.
fn start_load(
    args: &SoakArgs,
    plan: &SoakPlan,
    port: u16,
    stats: SharedStats,
) -> Result<std::thread::JoinHandle<()>, SoakError> {
    let request_timeout = Duration::from_secs(args.request_timeout_secs);
    // Starts stop a tenth before the end, so the last sample sees the load drained.
    let spread = plan.duration.mul_f64(0.9).saturating_sub(Duration::from_secs(5));
    let config = LoadConfig {
        addr: SocketAddr::from(([127, 0, 0, 1], port)),
        target: Target { topic: TOPIC.into(), partitions: PARTITIONS, group: GROUP.into() },
        clients: args.clients,
        concurrency: args.concurrency,
        spread,
        request_timeout,
        seed: args.seed,
        deadline: plan.duration + request_timeout,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| SoakError::io("starting the load's tokio runtime", e))?;
    std::thread::Builder::new()
        .name("soak-load".into())
        .spawn(move || runtime.block_on(clients::run_load(config, stats)))
        .map_err(|e| SoakError::io("starting the load thread", e))
}

/// Samples serve every `plan.sample_every` until the soak's end (the last sample at the end);
/// returns the samples and the consumers that exited on their own meanwhile.
fn sample_loop(
    plan: &SoakPlan,
    serve: &mut ChildProcess,
    members: &mut [ChildProcess],
    stats: &SharedStats,
    say: &mut dyn FnMut(&str),
) -> Result<(Vec<Sample>, Vec<String>), SoakError> {
    let started = Instant::now();
    let mut samples = Vec::new();
    let mut lost = Vec::new();
    let mut k = 1u32;
    loop {
        let at = (plan.sample_every * k).min(plan.duration);
        std::thread::sleep(at.saturating_sub(started.elapsed()));
        if let Some(status) = serve.exited() {
            return Err(SoakError::ServeStart(format!("serve exited during the soak ({status})")));
        }
        let (rss_kib, fds) = sample::read_process(serve.pid())
            .map_err(|e| SoakError::io("reading serve's /proc entry", e))?;
        let (mut window, load_connections) = {
            let mut s = clients::lock(stats);
            (std::mem::take(&mut s.window_ms), s.open_connections)
        };
        let (p50_ms, p99_ms, max_ms) = sample::percentiles(&mut window);
        let s = Sample {
            at_s: started.elapsed().as_secs_f64(),
            rss_kib,
            fds,
            load_connections,
            answered: window.len(),
            p50_ms,
            p99_ms,
            max_ms,
        };
        say(&format!(
            "t={:>5.0}s rss={:.1} MiB fds={} (load {}) answered={} p50={:.1} ms p99={:.1} ms",
            s.at_s,
            s.rss_kib as f64 / 1024.0,
            s.fds,
            s.load_connections,
            s.answered,
            s.p50_ms,
            s.p99_ms
        ));
        samples.push(s);
        for m in members.iter_mut() {
            if let Some(status) = m.exited() {
                if !lost.iter().any(|l: &String| l.starts_with(m.name())) {
                    lost.push(format!("{} exited ({status})", m.name()));
                }
            }
            m.drain_lines();
        }
        serve.drain_lines();
        if at >= plan.duration {
            return Ok((samples, lost));
        }
        k += 1;
    }
}

/// The served history, judged by the checker `groupsim trace --history` uses.
fn history_goal(path: &PathBuf, serve_exited_cleanly: bool) -> Goal {
    let name = "served history clean";
    let fail = |detail: String| Goal { name, passed: false, judged: true, detail };
    if !serve_exited_cleanly {
        return fail("serve did not exit cleanly on SIGINT".into());
    }
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => return fail(format!("reading {}: {e}", path.display())),
    };
    let history = match History::from_jsonl(&text) {
        Ok(h) => h,
        Err(e) => return fail(format!("{}: {e}", path.display())),
    };
    let verdict = groupsim_checker::check_any(&history);
    let events = history.events().len();
    if verdict.is_ok() {
        return Goal {
            name,
            passed: true,
            judged: true,
            detail: format!("{events} events, no anomaly ({})", path.display()),
        };
    }
    let first: Vec<String> = verdict
        .anomalies
        .iter()
        .take(3)
        .map(|a| format!("{} at {} ms: {}", a.class, a.at_ms, a.message))
        .collect();
    fail(format!(
        "{} anomalies in {events} events; first: {} (groupsim trace --history {})",
        verdict.anomalies.len(),
        first.join("; "),
        path.display()
    ))
}

/// The real group kept consuming: every consumer ran to the end and processed records.
fn group_goal(consumed: &[u64], lost: &[String]) -> Goal {
    let total: u64 = consumed.iter().sum();
    let preloaded = u64::from(PRELOAD) * PARTITIONS as u64;
    let passed = lost.is_empty() && total >= preloaded;
    let mut detail = format!(
        "records processed per consumer {consumed:?} ({total} in all; {preloaded} preloaded, \
         the rest produced by the loopback clients)"
    );
    if !lost.is_empty() {
        detail.push_str(&format!("; {}", lost.join(", ")));
    }
    Goal { name: "real group consumed", passed, judged: true, detail }
}
