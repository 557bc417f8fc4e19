//! `groupsim check-client`: real Kafka clients under seeded faults, judged by the checker.
//!
//! A served cluster ([`crate::serve`]) records the broker-side history; a producer appends
//! records; several adapter processes (one group member each, `clients/`) consume, write what
//! they processed to logs and commit; the seed's plan kills, pauses and closes them and faults
//! the brokers; a heal phase follows. The broker history plus the processed logs then go
//! through the checker's black-box rules ([`groupsim_checker::black_box`]). Real clients and real
//! time make a run repeatable (same seed, same schedule), not bit-exact.

mod bounded;
pub mod cache;
pub mod capabilities;
pub mod clients;
pub mod compare;
pub mod error;
pub mod explore;
mod members;
pub mod process;
pub mod processed;
pub mod run;
pub mod schedule;
pub mod spec;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use groupsim_member::GroupProtocol;

use self::cache::ReleaseCache;
use self::clients::{protocol_name, ClientKind, Interpreters, Launcher};
pub use self::error::CheckError;
use self::run::{Outcome, Settings};
use self::spec::ClientSpec;

/// `groupsim check-client`: command-line arguments.
#[derive(clap::Args, Debug, Clone)]
pub struct CheckArgs {
    /// Clients to check, by package name (kafka-python, confluent-kafka, aiokafka, kafkajs,
    /// samsa), or `all` (clients not installed are skipped); or releases to install into the
    /// cache and check: `kafka-python==2.2.8`, `confluent-kafka==2.9.0`, `aiokafka==0.7.1`,
    /// `kafkajs@1.16.0`, `samsa@0.1.8`.
    #[arg(required_unless_present = "compare")]
    pub clients: Vec<String>,
    /// Run two releases of one client (A, then B) on the same seeds, modes and fault schedules
    /// and show, per seed, where their verdicts differ; exit 1 when B fails a seed A passed.
    #[arg(long, num_args = 2, value_names = ["A", "B"], conflicts_with = "clients")]
    pub compare: Option<Vec<String>>,
    /// The release cache (default: $GROUPSIM_CACHE, else $XDG_CACHE_HOME/groupsim, else
    /// ~/.cache/groupsim).
    #[arg(long)]
    pub cache_dir: Option<PathBuf>,
    /// Seeds per client and commit mode.
    #[arg(long, default_value_t = 5)]
    pub seeds: u64,
    /// First seed.
    #[arg(long, default_value_t = 0)]
    pub start: u64,
    /// Commit mode (auto, sync, async; `before` is the deliberately wrong commit-before-process);
    /// default: every mode the client's adapter supports.
    #[arg(long)]
    pub mode: Option<String>,
    /// Python interpreter (or a virtualenv's bin/python) whose packages hold the Python clients;
    /// with a release (NAME==VERSION), the Python its virtualenv is made with (default python3).
    #[arg(long)]
    pub python: Option<PathBuf>,
    /// Folder whose node_modules holds kafkajs.
    #[arg(long)]
    pub node_modules: Option<PathBuf>,
    /// Folder to load the adapters from instead of the repository's clients/ (your own
    /// adapter: `python/member_<client>.py`, node/member_kafkajs.js, speaking the same events).
    #[arg(long)]
    pub clients_dir: Option<PathBuf>,
    /// Seconds of faults per seed.
    #[arg(long, default_value_t = 20)]
    pub fault_secs: u64,
    /// Most seconds the heal phase may take to converge.
    #[arg(long, default_value_t = 40)]
    pub heal_secs: u64,
    /// Milliseconds of work per processed record.
    #[arg(long, default_value_t = 2)]
    pub work_ms: u64,
    /// The group protocol the members speak: `classic`, or `consumer` (KIP-848,
    /// `group.protocol=consumer`: server-side assignment by the coordinator's `uniform` or
    /// `range` assignor; only the confluent-kafka adapter offers it).
    #[arg(long, default_value = "classic", value_parser = crate::serve::parse_group_protocol)]
    pub group_protocol: GroupProtocol,
    /// `connections.max.idle.ms` of the served brokers: each closes a connection that sent no
    /// request for this long while none was in service (0: never). Kafka's default is 10
    /// minutes; a few seconds shows how a client takes its idle connections being closed.
    #[arg(long, default_value_t = crate::serve::KAFKA_CONNECTIONS_MAX_IDLE_MS)]
    pub connections_max_idle_ms: u64,
    /// Choose each seed's schedule by what the seeds before it met from the brokers' side
    /// (answers by API, error and protocol; coordinator events; triggers fired): each seed
    /// runs its own drawn plan, as drawn or with faults and triggers grafted in from kept
    /// schedules that acted shortly before those met something rare, by what each way paid.
    #[arg(long, conflicts_with = "compare")]
    pub explore: bool,
}

/// One row of the campaign table: a client in one commit mode over its seeds.
#[derive(Default)]
pub struct Row {
    pub client: String,
    pub version: String,
    /// `classic` or `consumer`.
    pub protocol: String,
    pub mode: String,
    pub seeds: u64,
    /// Failing seeds by anomaly class (a seed counts once per class it shows).
    pub failures: BTreeMap<String, u64>,
    pub failed_seeds: Vec<u64>,
    pub duplicates: u64,
    pub processed: u64,
    /// Adapters that exited by themselves (crashes the client or the adapter caused).
    pub exits: u64,
    pub time: Duration,
    /// Why the client was skipped, if it was.
    pub skipped: Option<String>,
}

/// Runs the campaign `args` describes; `progress` gets a line per seed as it finishes.
pub fn campaign(
    args: &CheckArgs,
    root: &std::path::Path,
    out_dir: PathBuf,
    mut progress: impl FnMut(&str),
) -> Result<Vec<Row>, CheckError> {
    let specs = specs(&args.clients)?;
    let base = base_interpreters(args, root)?;
    let settings = settings(args, out_dir);
    let protocol = protocol_name(args.group_protocol);
    let named = !args.clients.iter().any(|c| c == "all");
    let mut rows = Vec::new();
    let mut cache = None;
    for spec in specs {
        let skip =
            |why: String| Row { client: spec.to_string(), skipped: Some(why), ..Row::default() };
        let Some(launcher) = prepare(&spec, &base, args, &mut cache)? else {
            rows.push(skip("not installed".into()));
            continue;
        };
        if launcher.capabilities.assignors(args.group_protocol).is_empty() {
            if named {
                return Err(CheckError::Setting(format!(
                    "--group-protocol {protocol}: {spec} {} offers no group.protocol={protocol} \
                     ({})",
                    launcher.capabilities.version,
                    launcher.capabilities.summary()
                )));
            }
            rows.push(skip(format!("no group.protocol={protocol} mode")));
            continue;
        }
        progress(&format!(
            "{spec}: {} {} offers {}\n",
            launcher.capabilities.client,
            launcher.capabilities.version,
            launcher.capabilities.summary()
        ));
        for mode in modes(&launcher, args.mode.as_deref())? {
            let mut row = Row {
                client: spec.kind.name.into(),
                protocol: protocol.to_string(),
                mode: mode.clone(),
                ..Row::default()
            };
            // Plain seeds count the situations they meet too, so the two ways compare.
            let mut search = explore::ClientSearch::new(run::plan_shape(&settings));
            for seed in args.start..args.start + args.seeds {
                let (outcome, how, way, new) = if args.explore {
                    let choice = search.plan_for(seed);
                    let plan = choice.plan.clone();
                    let outcome = run::run_seed_with(&launcher, &mode, seed, &settings, plan)?;
                    let new = search.learn_chosen(seed, &choice, &outcome.plan, &outcome.history);
                    (outcome, choice.how, "explore", new)
                } else {
                    let outcome = run::run_seed(&launcher, &mode, seed, &settings)?;
                    let new = search.learn(seed, &outcome.plan, &outcome.history);
                    (outcome, "its own draw".to_string(), "plain", new)
                };
                progress(&format!(
                    "{way}: seed {seed} ran {how}; met {} new, {} in all\n",
                    new.len(),
                    search.met()
                ));
                progress(&seed_report(&launcher.kind, protocol, &mode, &outcome)?);
                row.add(seed, &outcome);
            }
            rows.push(row);
        }
    }
    Ok(rows)
}

impl Row {
    /// Counts one seed's outcome.
    fn add(&mut self, seed: u64, outcome: &Outcome) {
        self.version = outcome.version.clone();
        self.seeds += 1;
        self.duplicates += outcome.verdict.duplicates;
        self.processed += outcome.verdict.processed;
        self.exits += outcome.exits.len() as u64;
        self.time += outcome.elapsed;
        let classes = run::classes(&outcome.verdict);
        if !classes.is_empty() {
            self.failed_seeds.push(seed);
        }
        for c in classes {
            *self.failures.entry(c).or_default() += 1;
        }
    }
}

/// The clients a command line names, each a package name or a release; `all` is every client,
/// as installed.
pub fn specs(names: &[String]) -> Result<Vec<ClientSpec>, CheckError> {
    if names.iter().any(|n| n == "all") {
        let kinds = clients::find(&["all".to_string()])?;
        return Ok(kinds.into_iter().map(|kind| ClientSpec { kind, version: None }).collect());
    }
    if names.is_empty() {
        return Err(CheckError::Setting("name a client, a release or all".into()));
    }
    names.iter().map(|n| spec::parse(n)).collect()
}

/// The campaign's settings from the command line.
fn settings(args: &CheckArgs, out_dir: PathBuf) -> Settings {
    Settings {
        fault_ms: args.fault_secs * 1000,
        heal_ms: args.heal_secs * 1000,
        session_timeout_ms: 6_000,
        work_ms: args.work_ms,
        out_dir,
        protocol: args.group_protocol,
        connections_max_idle_ms: (args.connections_max_idle_ms > 0)
            .then_some(args.connections_max_idle_ms),
    }
}

/// Where clients come from before any release is installed: the defaults under `root`, or
/// the interpreter, modules folder and adapters the command line names.
fn base_interpreters(args: &CheckArgs, root: &std::path::Path) -> Result<Interpreters, CheckError> {
    if args.seeds == 0 {
        return Err(CheckError::Setting("--seeds must be at least 1".into()));
    }
    let mut interp = Interpreters::defaults(root);
    if let Some(p) = &args.python {
        interp.python = p.clone();
        interp.python_given = true;
    }
    if let Some(d) = &args.node_modules {
        interp.node_modules = d.clone();
        interp.node_modules_given = true;
    }
    if let Some(d) = &args.clients_dir {
        if !d.is_dir() {
            return Err(CheckError::ClientsDir { path: d.clone() });
        }
        interp.clients_dir = d.clone();
    }
    Ok(interp)
}

/// The launcher of `spec`: a release comes from the cache (installed on first use), a bare
/// name from `base`; `Ok(None)` when a bare name is not installed.
fn prepare(
    spec: &ClientSpec,
    base: &Interpreters,
    args: &CheckArgs,
    cache: &mut Option<ReleaseCache>,
) -> Result<Option<Launcher>, CheckError> {
    if spec.kind.runtime == clients::Runtime::Rust && spec.version.is_none() {
        // A bare Rust client is its default release: built on first use when named, run by
        // `all` only once built.
        let pinned =
            ClientSpec { kind: spec.kind, version: Some(clients::SAMSA_DEFAULT.to_string()) };
        if !args.clients.iter().any(|c| c == spec.kind.name) {
            let Ok(cache) = ReleaseCache::locate(args.cache_dir.as_deref()) else {
                return Ok(None);
            };
            let mut interp = base.clone();
            interp.adapter_binary = cache.built(&pinned);
            return clients::launcher(spec.kind, &interp);
        }
        return prepare(&pinned, base, args, cache);
    }
    if spec.version.is_none() {
        return clients::launcher(spec.kind, base);
    }
    if spec.kind.runtime == clients::Runtime::Node && args.node_modules.is_some() {
        return Err(CheckError::Setting(format!(
            "{spec} and --node-modules both choose the kafkajs to run: drop one"
        )));
    }
    let cache = match cache {
        Some(c) => c,
        None => cache.insert(ReleaseCache::locate(args.cache_dir.as_deref())?),
    };
    let mut base = base.clone();
    if spec.kind.runtime == clients::Runtime::Python && args.python.is_none() {
        base.python = "python3".into();
    }
    let interp = cache.provide(spec, &base)?;
    let failed = |why: String| CheckError::ReleaseNotRun {
        spec: spec.to_string(),
        dir: cache.root().to_path_buf(),
        why,
    };
    let launcher =
        clients::launcher(spec.kind, &interp)?.ok_or_else(|| failed("it does not load".into()))?;
    let reported = &launcher.capabilities.version;
    if !spec::same_release(spec.version.as_deref().unwrap_or_default(), reported) {
        return Err(failed(format!(
            "the adapter runs {} {reported} (another copy shadows it)",
            spec.kind.name
        )));
    }
    Ok(Some(launcher))
}

/// The commit modes to run for `launcher`'s release.
fn modes(launcher: &Launcher, asked: Option<&str>) -> Result<Vec<String>, CheckError> {
    let offered = &launcher.capabilities.modes;
    match asked {
        None => Ok(offered.clone()),
        Some(m) if m == "before" || offered.iter().any(|o| o == m) => Ok(vec![m.to_string()]),
        Some(m) => Err(CheckError::Setting(format!(
            "--mode {m}: the {} adapter with {} {} offers {} (and `before`, the broken mode)",
            launcher.kind.name,
            launcher.capabilities.client,
            launcher.capabilities.version,
            offered.join(", ")
        ))),
    }
}

/// One seed's lines: a summary, and for a failing seed its anomalies with evidence, the fault
/// schedule and where the history and timelines were written.
fn seed_report(
    kind: &ClientKind,
    protocol: &str,
    mode: &str,
    o: &Outcome,
) -> Result<String, CheckError> {
    let v = &o.verdict;
    let mut out = format!(
        "{} {protocol} {mode} {} seed {}: {} (processed {}, duplicates {}, {:.1} s)\n",
        kind.name,
        o.assignor,
        o.seed,
        if v.anomalies.is_empty() { "ok" } else { "FAIL" },
        v.processed,
        v.duplicates,
        o.elapsed.as_secs_f64()
    );
    for e in &o.exits {
        let _ = writeln!(
            out,
            "  adapter exited: {} member {} ({}), {}, not restarted (it gave up); its stderr \
             ends:\n{}",
            kind.name,
            e.member,
            e.client_id,
            e.status,
            indent(&indent(&e.stderr_tail)).trim_end()
        );
    }
    if v.anomalies.is_empty() {
        return Ok(out);
    }
    let dir = run::write_artifacts(o)?;
    for a in v.anomalies.iter().take(5) {
        let _ = writeln!(out, "  {} at t={}ms: {}", a.class, a.at_ms, a.message);
    }
    if v.anomalies.len() > 5 {
        let _ = writeln!(out, "  (+{} more in anomalies.txt)", v.anomalies.len() - 5);
    }
    let _ = write!(out, "  schedule:\n{}", indent(&o.plan.to_string()));
    let _ = writeln!(out, "  history, trace and timelines: {}", dir.display());
    Ok(out)
}

fn indent(s: &str) -> String {
    s.lines().map(|l| format!("  {l}\n")).collect()
}

/// The campaign table.
pub fn table(rows: &[Row]) -> String {
    let mut out = format!(
        "{:<16} {:<28} {:<8} {:<7} {:>5}  {:<32} {:>10} {:>5} {:>8}\n",
        "client", "version", "protocol", "mode", "seeds", "failures", "duplicates", "exits", "time"
    );
    for r in rows {
        if let Some(why) = &r.skipped {
            let _ = writeln!(out, "{:<16} skipped ({why})", r.client);
            continue;
        }
        let failures = if r.failures.is_empty() {
            "-".to_string()
        } else {
            let list: Vec<String> = r.failures.iter().map(|(c, n)| format!("{c}x{n}")).collect();
            format!("{} (seeds {:?})", list.join(" "), r.failed_seeds)
        };
        let _ = writeln!(
            out,
            "{:<16} {:<28} {:<8} {:<7} {:>5}  {:<32} {:>10} {:>5} {:>7.0}s",
            r.client,
            r.version,
            r.protocol,
            r.mode,
            r.seeds,
            failures,
            r.duplicates,
            r.exits,
            r.time.as_secs_f64()
        );
    }
    out.push_str(
        "real clients and real time make a seed repeatable (same schedule), not bit-exact\n",
    );
    out
}

/// Whether any row found an anomaly.
pub fn any_failed(rows: &[Row]) -> bool {
    rows.iter().any(|r| !r.failures.is_empty())
}
