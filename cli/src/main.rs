//! `groupsim`: run, sweep and replay consumer-group rebalancing scenarios.

use std::process::ExitCode;

/// mimalloc rather than the system allocator (`allocator.rs` says why and how).
/// Behind the default feature `mimalloc`, so heap profilers such as heaptrack can see allocations.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: allocator::Allocator = allocator::Allocator;

#[cfg(feature = "mimalloc")]
mod allocator;
mod explore;
mod huge_pages;

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};
use groupsim::bugs;
use groupsim::coverage::Coverage;
use groupsim::faults::{self, FaultSchedule};
use groupsim::merge::{self, ShardFile};
use groupsim::pictures;
use groupsim::runner::{self, RunOptions, RunReport, WorldKind};
use groupsim::scenario::Scenario;
use groupsim::scenarios;
use groupsim::sweep::{self, Seeds, Shard, Sweep};

/// Writes to stdout; a closed pipe (`groupsim … | head`) ends the program quietly instead of
/// panicking.
macro_rules! out {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        if let Err(e) = write!(std::io::stdout().lock(), $($t)*) {
            if e.kind() == std::io::ErrorKind::BrokenPipe {
                std::process::exit(0);
            }
        }
    }};
}

/// [`out!`] with a newline.
macro_rules! outln {
    ($($t:tt)*) => {{
        out!($($t)*);
        out!("\n");
    }};
}

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
    /// List the bug switches, one line each starting with its name, with the anomalies it should
    /// cause.
    Bugs,
    /// Run one scenario with one seed; print the verdict, a summary and `history-hash: <hex>`.
    Run {
        /// Scenario name (see `groupsim list`).
        scenario: String,
        /// The seed.
        #[arg(long)]
        seed: u64,
        #[command(flatten)]
        variant: Variant,
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
        #[command(flatten)]
        variant: Variant,
    },
    /// Remove faults from a failing seed's schedule (delta debugging) while the same anomaly
    /// class still occurs; write the minimal schedule as JSON.
    Shrink {
        /// Scenario name.
        scenario: String,
        /// The failing seed.
        #[arg(long)]
        seed: u64,
        /// Bug switch to turn on (see `groupsim bugs`).
        #[arg(long)]
        bug: Option<String>,
        /// Where to write the minimal schedule (default: target/groupsim/<scenario>-<seed>.min-schedule.json).
        #[arg(long)]
        out: Option<std::path::PathBuf>,
        /// The world that simulates the runs: event (an event queue; the default) or turmoil
        /// (fixed 5 ms steps over turmoil's simulated TCP; different histories).
        #[arg(long, value_enum, default_value_t = WorldKind::default())]
        world: WorldKind,
    },
    /// Render a run as its full text trace, a compact rebalance summary (`--format summary`, what
    /// the trace snapshots hold), a Mermaid sequence diagram of one rebalance, or an SVG/HTML
    /// timeline: a scenario and seed, or a saved history (`--history FILE`, simulated or served).
    Trace {
        /// Scenario name (not with --history).
        #[arg(required_unless_present = "history", conflicts_with = "history")]
        scenario: Option<String>,
        /// The seed (with a scenario).
        #[arg(long, required_unless_present = "history", conflicts_with = "history")]
        seed: Option<u64>,
        /// Render this saved history (JSON lines from `run --save` or `serve --history`).
        #[arg(long)]
        history: Option<std::path::PathBuf>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = pictures::Format::Text)]
        format: pictures::Format,
        /// Generation whose rebalance the Mermaid diagram shows (default: the first with more
        /// than one member).
        #[arg(long)]
        generation: Option<i32>,
        /// Write to this file instead of stdout.
        #[arg(long, short)]
        output: Option<std::path::PathBuf>,
        #[command(flatten)]
        variant: Variant,
    },
    /// Measure throughput (seeds/s in total and per core, simulated s and events per CPU s) of
    /// three standard scenarios, the named ones, or the whole catalogue. Build with --release
    /// for meaningful figures.
    Bench {
        /// Scenarios to measure (catalogue names or join_storm_1000; default: membership_churn,
        /// swarm and join_storm_1000).
        scenarios: Vec<String>,
        /// Measure every scenario of the catalogue.
        #[arg(long, conflicts_with = "scenarios")]
        all: bool,
        /// Seeds per scenario (join_storm_1000 runs a tenth of them).
        #[arg(long, default_value_t = 20)]
        seeds: u64,
        /// Seeds run in parallel (default: every available core).
        #[arg(long)]
        jobs: Option<usize>,
        /// The world that simulates the runs: event (an event queue; the default) or turmoil
        /// (fixed 5 ms steps over turmoil's simulated TCP; different histories).
        #[arg(long, value_enum, default_value_t = WorldKind::default())]
        world: WorldKind,
        /// Save the figures as JSON to FILE, for a later `--baseline`.
        #[arg(long, value_name = "FILE")]
        save: Option<std::path::PathBuf>,
        /// Compare with a bench saved with `--save` (run it with the old binary on the same
        /// machine): each scenario's CPU per seed as a ratio, and the ratio of the sums.
        #[arg(long, value_name = "FILE")]
        baseline: Option<std::path::PathBuf>,
    },
    /// Run scenarios over many seeds and print a pass/fail table; exit 1 on any anomaly.
    Sweep {
        /// Scenarios to sweep (default: the whole catalogue).
        scenarios: Vec<String>,
        #[command(flatten)]
        range: SeedRange,
        /// Bug switch to turn on (see `groupsim bugs`).
        #[arg(long)]
        bug: Option<String>,
        /// Run only shard K of N of the seed range (contiguous blocks, so shards 1/4 and 2/4
        /// together are shard 1/2): split a deep sweep across machines.
        #[arg(long)]
        shard: Option<Shard>,
        /// Print a JSON summary instead of the table (with the sweep's plan, for `groupsim
        /// merge`).
        #[arg(long)]
        json: bool,
        /// After the table, print each coverage probe with the number of seeds that hit it (with
        /// --json the counts are in the JSON and nothing else is printed).
        #[arg(long)]
        coverage: bool,
        /// Stop at the first failing seed (exit 1): how long until a bug is caught.
        #[arg(long)]
        fail_fast: bool,
        /// Drop the event triggers from every schedule, keeping the timed faults.
        #[arg(long)]
        no_triggers: bool,
        /// The world that simulates the runs: event (an event queue; the default) or turmoil
        /// (fixed 5 ms steps over turmoil's simulated TCP; different histories).
        #[arg(long, value_enum, default_value_t = WorldKind::default())]
        world: WorldKind,
        /// Run every seed twice (the second time in reverse seed order, on other threads) and
        /// fail a seed whose two histories differ, with both hashes and the first differing event.
        #[arg(long)]
        check_determinism: bool,
        /// Seconds of wall time one seed may run (0: no limit). A seed past it is reported with
        /// its replay command and the sweep stops with exit code 1: a run that never ends is a
        /// core stuck inside one call, which nothing can interrupt.
        #[arg(long, default_value_t = 600.0, value_parser = seconds)]
        seed_timeout: f64,
    },
    /// Search for schedules that break rebalancing, coverage-guided: keep the runs that reached
    /// something new (a probe, a coordinator answer, a member's step) and mutate them; save,
    /// shrink and print every failing schedule with its replay command; exit 1 on any anomaly.
    Explore(explore::ExploreArgs),
    /// Merge the corpora of one search's `explore --shard K/N` runs into one corpus folder.
    ExploreMerge(explore::MergeArgs),
    /// Sweep the default catalogue and list the coverage probes no seed hit; exit 1 when a
    /// required probe was never hit.
    Coverage {
        #[command(flatten)]
        range: SeedRange,
        /// Drop the event triggers from every schedule, keeping the timed faults: what the
        /// timed faults alone reach.
        #[arg(long)]
        no_triggers: bool,
        /// The world that simulates the runs: event (an event queue; the default) or turmoil
        /// (fixed 5 ms steps over turmoil's simulated TCP; different histories).
        #[arg(long, value_enum, default_value_t = WorldKind::default())]
        world: WorldKind,
    },
    /// Merge the --json files of `sweep --shard K/N` runs: print the table (and exit with the
    /// code) one unsharded sweep would have; refuse files of different sweeps, overlapping
    /// shards and missing ones.
    Merge {
        /// The shards' JSON files (any order).
        #[arg(required = true)]
        files: Vec<std::path::PathBuf>,
        /// Print the merged sweep's JSON instead of the table.
        #[arg(long)]
        json: bool,
        /// After the table, print each coverage probe with the number of seeds that hit it.
        #[arg(long)]
        coverage: bool,
        /// Also write one replay command per failing seed to this file.
        #[arg(long)]
        replays: Option<std::path::PathBuf>,
    },
    /// Serve the coordinator on real loopback sockets (127.0.0.1) for real Kafka clients.
    Serve(groupsim_live::serve::ServeArgs),
    /// Run real Kafka clients (one group member per process) under seeded client and broker
    /// faults and judge each run with the checker's black-box rules; exit 1 on any anomaly
    /// (with --compare A B: when B fails a seed A passed).
    CheckClient(groupsim_live::check_client::CheckArgs),
    /// Run the simulation's members (client profiles, both group protocols) in real time
    /// against an external Kafka-compatible broker under seeded client-side faults, and judge
    /// its group coordinator with the broker-side rules; exit 1 on any anomaly.
    CheckBroker(groupsim_live::check_broker::CheckBrokerArgs),
    /// Soak `serve`: run it for --minutes under a real kafka-python group and a stream of
    /// loopback clients (valid requests, malformed frames, half-frames), sample its memory,
    /// descriptors and answer latency, and judge them; exit 1 when a goal fails.
    Soak(groupsim_live::soak::SoakArgs),
}

/// Which seeds a sweep runs, and on how many threads.
#[derive(clap::Args, Debug)]
struct SeedRange {
    /// How many seeds per scenario.
    #[arg(long, default_value_t = 100)]
    seeds: u64,
    /// First seed.
    #[arg(long, default_value_t = 0)]
    start: u64,
    /// Seeds run in parallel, each simulation single-threaded (default: every available core).
    #[arg(long)]
    jobs: Option<usize>,
}

impl SeedRange {
    /// The threads to use: `--jobs`, or every available core.
    fn jobs(&self) -> usize {
        self.jobs.unwrap_or_else(sweep::default_jobs)
    }
}

/// How a run differs from the scenario's drawn one.
#[derive(clap::Args, Debug, Default)]
struct Variant {
    /// Bug switch to turn on (see `groupsim bugs`).
    #[arg(long)]
    bug: Option<String>,
    /// Replay this fault schedule (JSON, as written by `shrink`) instead of the drawn one.
    #[arg(long)]
    schedule: Option<std::path::PathBuf>,
    /// Drop the event triggers from the schedule, keeping the timed faults.
    #[arg(long)]
    no_triggers: bool,
    /// The world that simulates the run: event (an event queue; the default) or turmoil (fixed
    /// 5 ms steps over turmoil's simulated TCP; a different history).
    #[arg(long, value_enum, default_value_t = WorldKind::default())]
    world: WorldKind,
}

impl Variant {
    fn options(&self) -> Result<RunOptions> {
        let bug = self.bug.as_deref().map(bugs::find).transpose()?;
        let schedule = match &self.schedule {
            None => None,
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .with_context(|| format!("reading schedule {}", path.display()))?;
                Some(
                    FaultSchedule::from_json_for(&text, faults::Mode::Simulated)
                        .with_context(|| format!("schedule {}", path.display()))?,
                )
            }
        };
        Ok(RunOptions { bug, schedule, no_triggers: self.no_triggers, world: self.world })
    }
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
            for s in scenarios::catalogue() {
                outln!("{:<24} {}", s.name, s.summary);
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Bugs => {
            for b in bugs::all() {
                let expected: Vec<&str> = b.expected.iter().map(|c| c.name()).collect();
                outln!(
                    "{:<48} expects {:<48} {} [{}]",
                    b.name,
                    expected.join("|"),
                    b.summary,
                    b.reference
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Run { scenario, seed, variant, save, trace } => {
            let s = scenarios::find(&scenario)?;
            let report = run_one(&s, seed, &variant.options()?)?;
            if trace {
                out!("{}", groupsim::trace::text(&report.history));
            }
            out!("{}", report.summary());
            finish_one(&report, save)
        }
        Command::Replay { scenario, seed, variant } => {
            let s = scenarios::find(&scenario)?;
            let report = run_one(&s, seed, &variant.options()?)?;
            out!("{}", report.summary());
            finish_one(&report, true)
        }
        Command::Trace { scenario, seed, history, format, generation, output, variant } => {
            let (history, verdict) = match (history, scenario, seed) {
                (Some(path), _, _) => saved_history(&path)?,
                (None, Some(scenario), Some(seed)) => {
                    let s = scenarios::find(&scenario)?;
                    let report = run_one(&s, seed, &variant.options()?)?;
                    (report.history, report.verdict)
                }
                _ => bail!("trace needs a scenario and --seed, or --history FILE"),
            };
            let text = pictures::render(format, &history, &verdict, generation)?;
            match output {
                Some(path) => {
                    std::fs::write(&path, text)
                        .with_context(|| format!("writing {}", path.display()))?;
                    eprintln!("wrote {}", path.display());
                }
                None => out!("{text}"),
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Bench { scenarios, all, seeds, jobs, world, save, baseline } => {
            if seeds == 0 {
                bail!("--seeds must be at least 1");
            }
            let jobs = jobs.unwrap_or_else(sweep::default_jobs);
            if jobs == 0 {
                bail!("--jobs must be at least 1");
            }
            let plan = groupsim::bench::plan(&scenarios, all, seeds)?;
            // Read the baseline first: a bad file is an error before minutes of benching.
            let baseline = match &baseline {
                Some(path) => {
                    let saved = groupsim::bench::SavedBench::read(path)?;
                    groupsim::bench::check_baseline(&saved, path, world)?;
                    Some(saved)
                }
                None => None,
            };
            let (saved, report) = groupsim::bench::run(&plan, jobs, world);
            out!("{report}");
            if let Some(b) = &baseline {
                out!(
                    "\nagainst the baseline (CPU per seed):\n{}",
                    groupsim::bench::compare(&saved.rows, b)
                );
            }
            if let Some(path) = &save {
                let text = serde_json::to_string_pretty(&saved)?;
                std::fs::write(path, text + "\n")
                    .with_context(|| format!("cannot write {}", path.display()))?;
                eprintln!("saved {}", path.display());
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Merge { files, json, coverage, replays } => {
            merge_shards(&files, json, coverage, replays.as_deref())
        }
        Command::Shrink { scenario, seed, bug, out, world } => {
            shrink(&scenario, seed, bug, out, world)
        }
        Command::CheckClient(args) => {
            let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .parent()
                .map(std::path::Path::to_path_buf)
                .unwrap_or_default();
            if args.compare.is_some() {
                let comparison = groupsim_live::check_client::compare::compare(
                    &args,
                    &root,
                    runner::output_dir(),
                    |l| out!("{l}"),
                )?;
                out!("{}", groupsim_live::check_client::compare::summary(&comparison));
                return Ok(if comparison.regressed() {
                    ExitCode::from(1)
                } else {
                    ExitCode::SUCCESS
                });
            }
            let rows =
                groupsim_live::check_client::campaign(&args, &root, runner::output_dir(), |l| {
                    out!("{l}")
                })?;
            out!("{}", groupsim_live::check_client::table(&rows));
            let failed = groupsim_live::check_client::any_failed(&rows);
            Ok(if failed { ExitCode::from(1) } else { ExitCode::SUCCESS })
        }
        Command::CheckBroker(args) => {
            let reports =
                groupsim_live::check_broker::campaign(&args, &runner::output_dir(), |l| {
                    outln!("{l}")
                })?;
            let failed = reports.iter().filter(|r| !r.anomalies.is_empty()).count();
            outln!("{} run(s), {failed} with anomalies", reports.len());
            Ok(if failed > 0 { ExitCode::from(1) } else { ExitCode::SUCCESS })
        }
        Command::Explore(args) => {
            let code = explore::run(&args, |text| out!("{text}"))?;
            Ok(ExitCode::from(code))
        }
        Command::ExploreMerge(args) => {
            let code = explore::merge(&args, |text| out!("{text}"))?;
            Ok(ExitCode::from(code))
        }
        Command::Serve(args) => {
            huge_pages::off_for_this_process();
            groupsim_live::serve::run(&args)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Soak(args) => soak(&args),
        Command::Sweep {
            scenarios,
            range,
            bug,
            shard,
            json,
            coverage,
            fail_fast,
            no_triggers,
            world,
            check_determinism,
            seed_timeout,
        } => {
            let bug = bug.as_deref().map(bugs::find).transpose()?;
            let seeds = Seeds { start: range.start, count: range.seeds, shard };
            let options = RunOptions { bug, schedule: None, no_triggers, world };
            let mut sweep = Sweep::new(&scenarios, seeds, range.jobs(), options)?
                .fail_fast(fail_fast)
                .check_determinism(check_determinism)
                .hashes(json);
            if seed_timeout > 0.0 {
                let limit = std::time::Duration::from_secs_f64(seed_timeout);
                sweep = sweep.seed_limit(limit, std::sync::Arc::new(stop_on_overrun));
            }
            let (code, rows) = run_sweep(&sweep, json)?;
            if coverage && !json {
                out!("{}", Coverage::from_rows(&rows).table());
            }
            Ok(code)
        }
        Command::Coverage { range, no_triggers, world } => {
            let seeds = Seeds { start: range.start, count: range.seeds, shard: None };
            let options = RunOptions { no_triggers, world, ..RunOptions::default() };
            let sweep = Sweep::new(&[], seeds, range.jobs(), options)?;
            let (code, rows) = run_sweep(&sweep, false)?;
            let coverage = Coverage::from_rows(&rows);
            out!("{}", coverage.table());
            let unhit = coverage.unhit_required();
            for p in &unhit {
                outln!("required probe never hit: {} ({})", p.name, p.description);
            }
            Ok(if unhit.is_empty() { code } else { ExitCode::from(1) })
        }
    }
}

/// A saved history and the checker's verdict on it. A served cluster's history holds no member
/// events (real clients report nothing to the broker): the full checker would judge what it
/// cannot see, so only its broker-side rules apply (see `checker::black_box`).
fn saved_history(
    path: &std::path::Path,
) -> Result<(groupsim_history::History, groupsim_checker::Verdict)> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let history = groupsim_history::History::from_jsonl(&text)
        .with_context(|| format!("history {}", path.display()))?;
    let verdict = groupsim_checker::check_any(&history);
    Ok((history, verdict))
}

/// `groupsim soak`: prints the samples, the plot's path and each goal; exit 1 if one failed.
fn soak(args: &groupsim_live::soak::SoakArgs) -> Result<ExitCode> {
    let report = groupsim_live::soak::run(args, &mut |line| outln!("{line}"))?;
    outln!("\n{}", report.table);
    outln!("plot: {}", report.svg.display());
    for failure in &report.load.failures {
        outln!("  loopback failure: {failure}");
    }
    for goal in &report.goals {
        let mark = match (goal.judged, goal.passed) {
            (false, _) => "n/j ",
            (true, true) => "ok  ",
            (true, false) => "FAIL",
        };
        let why = if goal.judged { "" } else { " (not judged: the run is too short to tell)" };
        outln!("{mark} {}: {}{why}", goal.name, goal.detail);
    }
    let failed: Vec<&str> =
        report.goals.iter().filter(|g| g.judged && !g.passed).map(|g| g.name).collect();
    if failed.is_empty() {
        outln!("soak passed");
        Ok(ExitCode::SUCCESS)
    } else {
        outln!("soak FAILED: {}", failed.join(", "));
        Ok(ExitCode::from(1))
    }
}

fn run_one(s: &Scenario, seed: u64, options: &RunOptions) -> Result<RunReport> {
    runner::run_seed_with(s, seed, options)
        .with_context(|| format!("running {} with seed {seed}", s.name))
}

fn shrink(
    name: &str,
    seed: u64,
    bug: Option<String>,
    out: Option<std::path::PathBuf>,
    world: WorldKind,
) -> Result<ExitCode> {
    let s = scenarios::find(name)?;
    let bug = bug.as_deref().map(bugs::find).transpose()?;
    let options = RunOptions { bug, world, ..RunOptions::default() };
    let report = run_one(&s, seed, &options)?;
    let Some(first) = report.verdict.first() else {
        outln!("{name} seed {seed} passes: nothing to shrink");
        return Ok(ExitCode::SUCCESS);
    };
    let class = first.class;
    outln!(
        "{name} seed {seed} fails with {class}; shrinking {} faults and triggers",
        report.spec.faults.len()
    );
    let shrunk = groupsim::shrink::shrink_in(&report.spec, class, world).context("shrinking")?;
    let path = match out {
        Some(p) => p,
        None => {
            let dir = runner::output_dir();
            std::fs::create_dir_all(&dir).context("creating the output folder")?;
            dir.join(format!("{name}-{seed}.min-schedule.json"))
        }
    };
    std::fs::write(&path, shrunk.schedule.to_json())
        .with_context(|| format!("writing {}", path.display()))?;
    outln!(
        "minimal schedule: {} of {} faults and triggers after {} runs (still {class}):",
        shrunk.schedule.len(),
        report.spec.faults.len(),
        shrunk.runs
    );
    for f in &shrunk.schedule.faults {
        outln!("    t={}ms {}", f.at_ms, f.fault);
    }
    for t in &shrunk.schedule.triggers {
        outln!("    trigger {t}");
    }
    outln!("written to {}", path.display());
    let bug_arg = options.bug.map(|b| format!(" --bug {}", b.name)).unwrap_or_default();
    outln!(
        "replay: cargo run --release -- run {name} --seed {seed}{bug_arg}{} --schedule {}",
        world.arg(),
        path.display()
    );
    Ok(ExitCode::from(1))
}

fn finish_one(report: &RunReport, save: bool) -> Result<ExitCode> {
    if save || !report.verdict.is_ok() {
        let path = report.save_history().context("writing the history")?;
        outln!("history: {}", path.display());
    }
    if report.verdict.is_ok() {
        Ok(ExitCode::SUCCESS)
    } else {
        out!("{}", report.failure_report());
        Ok(ExitCode::from(1))
    }
}

/// `--seed-timeout`'s value: a number of seconds, zero or more.
fn seconds(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(format!("'{s}' is not a number of seconds (0 or more)")),
    }
}

/// A seed past `--seed-timeout`: says which and how to replay it, and stops the process (the
/// stuck run holds its thread for ever; exit 1, a failure found).
fn stop_on_overrun(o: &sweep::SeedOverrun) {
    use std::io::Write as _;
    let _ = std::io::stdout().flush();
    eprintln!(
        "groupsim: {} seed {} has run for {:.1} s, past --seed-timeout: a run that never ends is \
         a failure of its own (a core stuck inside one call). Replay it: {}\nThe sweep stops \
         here: a stuck run cannot be interrupted.",
        o.scenario,
        o.seed,
        o.ran.as_secs_f64(),
        o.replay
    );
    std::process::exit(1);
}

/// Runs `sweep`, printing the table row by row (or the JSON summary at the end); exit 1 on any
/// failing seed.
fn run_sweep(sweep: &Sweep, json: bool) -> Result<(ExitCode, Vec<sweep::SweepRow>)> {
    if !json {
        out!("{}", sweep.table_header());
    }
    let rows = sweep.run(|row| {
        if !json {
            out!("{}", row.table_lines());
        }
    });
    if json {
        let json = sweep::json_summary(&sweep.plan(), &rows).context("serialising the summary")?;
        outln!("{json}");
    } else {
        out!("{}", sweep::total_line(&rows));
    }
    let code = if sweep::any_failed(&rows) { ExitCode::from(1) } else { ExitCode::SUCCESS };
    Ok((code, rows))
}

/// `groupsim merge`: the unsharded sweep's table (or JSON) from its shards' JSON files, every
/// failing seed's replay command written to `replays`; exit 1 on any failing seed.
fn merge_shards(
    files: &[std::path::PathBuf],
    json: bool,
    coverage: bool,
    replays: Option<&std::path::Path>,
) -> Result<ExitCode> {
    let shards = files.iter().map(|f| ShardFile::read(f)).collect::<Result<Vec<_>, _>>()?;
    let merged = merge::merge(shards)?;
    if json {
        outln!("{}", merged.json().context("serialising the summary")?);
    } else {
        out!("{}", merged.table());
        if coverage {
            out!("{}", Coverage::from_rows(&merged.rows).table());
        }
    }
    if let Some(path) = replays {
        std::fs::write(path, merged.replay_commands())
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(if sweep::any_failed(&merged.rows) { ExitCode::from(1) } else { ExitCode::SUCCESS })
}
