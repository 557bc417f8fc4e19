//! `groupsim check-client`: real Kafka clients under seeded faults, judged by the checker.
//!
//! A served cluster ([`crate::live::serve`]) records the broker-side history; a producer appends
//! records; several adapter processes (one group member each, `clients/`) consume, write what
//! they processed to logs and commit; the seed's plan kills, pauses and closes them and faults
//! the brokers; a heal phase follows. The broker history plus the processed logs then go
//! through the checker's black-box rules ([`groupsim_checker::black_box`]). Real clients and real
//! time make a run repeatable (same seed, same schedule), not bit-exact.

pub mod clients;
pub mod error;
mod members;
pub mod process;
pub mod processed;
pub mod run;
pub mod schedule;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use groupsim_member::GroupProtocol;

use self::clients::{protocol_name, ClientKind, Interpreters};
pub use self::error::CheckError;
use self::run::{Outcome, Settings};

/// `groupsim check-client`: command-line arguments.
#[derive(clap::Args, Debug, Clone)]
pub struct CheckArgs {
    /// Clients to check, by package name (kafka-python, confluent-kafka, aiokafka, kafkajs), or
    /// `all` (clients not installed are skipped).
    #[arg(required = true)]
    pub clients: Vec<String>,
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
    /// Python interpreter (or a virtualenv's bin/python) whose packages hold the Python clients.
    #[arg(long)]
    pub python: Option<PathBuf>,
    /// Folder whose node_modules holds kafkajs.
    #[arg(long)]
    pub node_modules: Option<PathBuf>,
    /// Folder to load the adapters from instead of the repository's clients/ (your own
    /// adapter: python/member_<client>.py, node/member_kafkajs.js, speaking the same events).
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
    #[arg(long, default_value = "classic", value_parser = crate::live::serve::parse_group_protocol)]
    pub group_protocol: GroupProtocol,
    /// `connections.max.idle.ms` of the served brokers: each closes a connection that sent no
    /// request for this long while none was in service (0: never). Kafka's default is 10
    /// minutes; a few seconds shows how a client takes its idle connections being closed.
    #[arg(long, default_value_t = crate::live::serve::KAFKA_CONNECTIONS_MAX_IDLE_MS)]
    pub connections_max_idle_ms: u64,
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
    let kinds = clients::find(&args.clients)?;
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
    let settings = Settings {
        fault_ms: args.fault_secs * 1000,
        heal_ms: args.heal_secs * 1000,
        session_timeout_ms: 6_000,
        work_ms: args.work_ms,
        out_dir,
        protocol: args.group_protocol,
        connections_max_idle_ms: (args.connections_max_idle_ms > 0)
            .then_some(args.connections_max_idle_ms),
    };
    let protocol = protocol_name(args.group_protocol);
    let named = !args.clients.iter().any(|c| c == "all");
    let mut rows = Vec::new();
    for kind in kinds {
        if kind.assignors_for(args.group_protocol).is_empty() {
            if named {
                return Err(CheckError::Setting(format!(
                    "--group-protocol {protocol}: the {} adapter has no consumer-protocol mode \
                     (confluent-kafka's has)",
                    kind.name
                )));
            }
            let skipped = Some(format!("no group.protocol={protocol} mode"));
            rows.push(Row { client: kind.name.into(), skipped, ..Row::default() });
            continue;
        }
        let Some(launcher) = clients::launcher(kind, &interp)? else {
            rows.push(Row {
                client: kind.name.into(),
                skipped: Some("not installed".into()),
                ..Row::default()
            });
            continue;
        };
        for mode in modes(kind, args.mode.as_deref())? {
            let mut row = Row {
                client: kind.name.into(),
                protocol: protocol.to_string(),
                mode: mode.clone(),
                ..Row::default()
            };
            for seed in args.start..args.start + args.seeds {
                let outcome = run::run_seed(&launcher, &mode, seed, &settings)?;
                progress(&seed_report(&launcher.kind, protocol, &mode, &outcome)?);
                row.version = outcome.version.clone();
                row.seeds += 1;
                row.duplicates += outcome.verdict.duplicates;
                row.processed += outcome.verdict.processed;
                row.exits += outcome.exits.len() as u64;
                row.time += outcome.elapsed;
                let mut classes: Vec<String> =
                    outcome.verdict.anomalies.iter().map(|a| a.class.to_string()).collect();
                classes.dedup();
                if !classes.is_empty() {
                    row.failed_seeds.push(seed);
                }
                for c in classes {
                    *row.failures.entry(c).or_default() += 1;
                }
            }
            rows.push(row);
        }
    }
    Ok(rows)
}

/// The commit modes to run for `kind`.
fn modes(kind: ClientKind, asked: Option<&str>) -> Result<Vec<String>, CheckError> {
    match asked {
        None => Ok(kind.modes.iter().map(|m| m.to_string()).collect()),
        Some(m) if m == "before" || kind.modes.contains(&m) => Ok(vec![m.to_string()]),
        Some(m) => Err(CheckError::Setting(format!(
            "--mode {m}: the {} adapter offers {} (and `before`, the broken mode)",
            kind.name,
            kind.modes.join(", ")
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
