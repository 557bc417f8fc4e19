//! `groupsim`: run, sweep and replay consumer-group rebalancing scenarios.

use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};
use groupsim::runner::{self, RunReport, SeedResult};
use groupsim::scenario::{self, Scenario};

/// Deterministic simulation of Kafka consumer-group rebalancing: one seed drives the network,
/// the workload and the faults; a checker proves no committed offset was lost or duplicated.
#[derive(Parser, Debug)]
#[command(name = "groupsim", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// List the scenario catalogue, one line per scenario starting with its name.
    List,
    /// Run one scenario with one seed; print the verdict, a summary and `history-hash: <hex>`.
    Run {
        /// Scenario name (see `groupsim list`).
        scenario: String,
        /// The seed.
        #[arg(long)]
        seed: u64,
        /// Also write the history (JSON lines) under target/groupsim/.
        #[arg(long)]
        save: bool,
        /// Print the rebalance trace before the summary.
        #[arg(long)]
        trace: bool,
    },
    /// Rerun a seed bit for bit with full tracing (set RUST_LOG, e.g. RUST_LOG=debug) and write
    /// its history under target/groupsim/.
    Replay {
        /// Scenario name.
        scenario: String,
        /// The seed to replay.
        #[arg(long)]
        seed: u64,
    },
    /// Run scenarios over many seeds and print a pass/fail table; exit 1 on any anomaly.
    Sweep {
        /// Scenarios to sweep (default: the whole catalogue).
        scenarios: Vec<String>,
        /// How many seeds per scenario.
        #[arg(long, default_value_t = 100)]
        seeds: u64,
        /// First seed.
        #[arg(long, default_value_t = 0)]
        start: u64,
        /// Seeds run in parallel (each simulation stays single-threaded).
        #[arg(long, default_value_t = 1)]
        jobs: usize,
    },
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .without_time()
        .init();
    match real_main() {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn real_main() -> Result<ExitCode> {
    let cli = Cli::parse();
    match cli.command {
        Command::List => {
            for s in scenario::catalogue() {
                println!("{:<24} {}", s.name, s.summary);
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Run { scenario, seed, save, trace } => {
            let s = scenario::find(&scenario)?;
            let report = run_one(&s, seed)?;
            if trace {
                print!("{}", groupsim::trace::text(&report.history));
            }
            print!("{}", report.summary());
            finish_one(&report, save)
        }
        Command::Replay { scenario, seed } => {
            let s = scenario::find(&scenario)?;
            let report = run_one(&s, seed)?;
            print!("{}", report.summary());
            finish_one(&report, true)
        }
        Command::Sweep { scenarios, seeds, start, jobs } => sweep(scenarios, seeds, start, jobs),
    }
}

fn run_one(s: &Scenario, seed: u64) -> Result<RunReport> {
    runner::run_seed(s, seed).with_context(|| format!("running {} with seed {seed}", s.name))
}

fn finish_one(report: &RunReport, save: bool) -> Result<ExitCode> {
    if save || !report.verdict.is_ok() {
        let path = report.save_history().context("writing the history")?;
        println!("history: {}", path.display());
    }
    if report.verdict.is_ok() {
        Ok(ExitCode::SUCCESS)
    } else {
        print!("{}", report.failure_report());
        Ok(ExitCode::from(1))
    }
}

fn sweep(names: Vec<String>, seeds: u64, start: u64, jobs: usize) -> Result<ExitCode> {
    if seeds == 0 {
        bail!("--seeds must be at least 1");
    }
    if jobs == 0 {
        bail!("--jobs must be at least 1");
    }
    let scenarios: Vec<Scenario> = if names.is_empty() {
        scenario::catalogue()
    } else {
        names.iter().map(|n| scenario::find(n)).collect::<Result<_, _>>()?
    };
    let mut any_failed = false;
    println!(
        "{:<24} {:>6} {:>6} {:>6} {:>10} {:>10} {:>9}  first failing seed",
        "scenario", "seeds", "pass", "fail", "rebal/seed", "sim s/s", "seeds/s"
    );
    for s in &scenarios {
        let started = Instant::now();
        let results = run_seeds(s, start, seeds, jobs);
        let wall = started.elapsed().as_secs_f64().max(1e-9);
        let failed: Vec<&SeedResult> = results.iter().filter(|r| !r.ok).collect();
        let sim_secs: f64 = results.iter().map(|r| r.simulated_ms as f64 / 1000.0).sum();
        let rebalances: u64 = results.iter().map(|r| r.rebalances).sum();
        let first = failed.first().map(|r| {
            let why =
                r.first_anomaly.map(|c| c.to_string()).or(r.error.clone()).unwrap_or_default();
            format!("{} ({why})", r.seed)
        });
        println!(
            "{:<24} {:>6} {:>6} {:>6} {:>10.1} {:>10.0} {:>9.2}  {}",
            s.name,
            results.len(),
            results.len() - failed.len(),
            failed.len(),
            rebalances as f64 / results.len() as f64,
            sim_secs / wall,
            results.len() as f64 / wall,
            first.unwrap_or_else(|| "-".into())
        );
        if let Some(r) = failed.first() {
            any_failed = true;
            println!("    replay: {}", runner::replay_command(s.name, r.seed));
        }
    }
    Ok(if any_failed { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

/// Runs seeds `start..start+count` on `jobs` threads (one whole simulation per thread at a
/// time) and returns results in seed order.
fn run_seeds(s: &Scenario, start: u64, count: u64, jobs: usize) -> Vec<SeedResult> {
    let next = AtomicUsize::new(0);
    let results = Mutex::new(Vec::with_capacity(count as usize));
    std::thread::scope(|scope| {
        for _ in 0..jobs.min(count as usize) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                if i as u64 >= count {
                    break;
                }
                let seed = start + i as u64;
                let run = runner::run_seed(s, seed);
                let r = SeedResult::from_run(seed, &run);
                results.lock().expect("results lock").push(r);
            });
        }
    });
    let mut results = results.into_inner().expect("results lock");
    results.sort_by_key(|r| r.seed);
    results
}
