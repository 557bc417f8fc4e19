//! The `explore` and `explore-merge` commands: arguments, the Ctrl-C stop, progress on stderr,
//! the report on stdout.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::{bail, Context, Result};

use groupsim::bugs;
use groupsim::explore::corpus::Corpus;
use groupsim::explore::{explore, versus, Finding, Outcome, Settings, Strategy};
use groupsim::runner::{self, RunOptions, WorldKind};
use groupsim::scenarios;
use groupsim::sweep::{self, Shard};

/// `groupsim explore`'s arguments.
#[derive(clap::Args, Debug)]
pub struct ExploreArgs {
    /// Scenarios to search (default: the whole catalogue).
    pub scenarios: Vec<String>,
    /// Most runs.
    #[arg(long)]
    pub runs: Option<u64>,
    /// Most minutes of wall time (checked between rounds; with --runs, whichever ends first).
    #[arg(long)]
    pub minutes: Option<f64>,
    /// The search's own seed: another seed, another search.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// The first fresh seed of each scenario, as `sweep --start` (blind and guided alike).
    #[arg(long, default_value_t = 0)]
    pub start: u64,
    /// Runs in parallel, each simulation single-threaded (default: every available core); the
    /// search's results do not depend on it.
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Bug switch to turn on (see `groupsim bugs`).
    #[arg(long)]
    pub bug: Option<String>,
    /// The world that simulates the runs: event (the default) or turmoil.
    #[arg(long, value_enum, default_value_t = WorldKind::default())]
    pub world: WorldKind,
    /// Drop the event triggers from every schedule, keeping the timed faults.
    #[arg(long)]
    pub no_triggers: bool,
    /// Keep the corpus in this folder, and resume from the corpus it holds.
    #[arg(long)]
    pub corpus: Option<PathBuf>,
    /// Run only share K of N of the search (its own fresh seeds and draws): spread one search
    /// over machines, then `explore-merge` the corpora.
    #[arg(long)]
    pub shard: Option<Shard>,
    /// Where failing schedules go (default: the corpus folder's `findings/`, or
    /// target/groupsim/explore/).
    #[arg(long)]
    pub findings: Option<PathBuf>,
    /// Do not shrink failing schedules.
    #[arg(long)]
    pub no_shrink: bool,
    /// Stop at the first run showing an anomaly the bug switch expects, and print after how
    /// many runs (needs --bug).
    #[arg(long)]
    pub until_caught: bool,
    /// Run the search and a blind sweep (fresh seeds, scenarios in turn) with the same budget
    /// and compare the distinct elements each reached per CPU minute.
    #[arg(long)]
    pub versus_sweep: bool,
    /// Search blindly, as a sweep does (fresh seeds from --start, the scenarios in turn, schedules as
    /// drawn): the yardstick for runs-to-catch.
    #[arg(long, conflicts_with = "versus_sweep")]
    pub blind: bool,
    /// Mutate what a seed draws beyond its fault schedule too (members' start and leave instants,
    /// their processing times, the world's latencies, the offsets log's delay), written into
    /// the schedule as spec edits so findings still replay from one command.
    #[arg(long)]
    pub respec: bool,
    /// With --versus-sweep: write the picture of elements over runs (SVG) here.
    #[arg(long)]
    pub plot: Option<PathBuf>,
    /// Print a JSON summary instead of the text report.
    #[arg(long)]
    pub json: bool,
}

/// `groupsim explore-merge`'s arguments.
#[derive(clap::Args, Debug)]
pub struct MergeArgs {
    /// The corpus folders of one search's shards (or of one search resumed apart).
    #[arg(required = true)]
    pub corpora: Vec<PathBuf>,
    /// The folder to write the merged corpus into.
    #[arg(long)]
    pub out: PathBuf,
}

/// Runs `explore`; the exit code is 1 when the search found an anomaly, as `sweep`'s.
pub fn run(args: &ExploreArgs, mut print: impl FnMut(&str)) -> Result<u8> {
    let settings = settings(args)?;
    let stop = Arc::new(AtomicBool::new(false));
    stop_on_ctrl_c(Arc::clone(&stop));
    if args.versus_sweep {
        return versus_sweep(args, &settings, &stop, print);
    }
    let fresh = Corpus::new(&settings.scenarios, &settings.options);
    let corpus = match &args.corpus {
        Some(dir) => match Corpus::read(dir, &fresh)? {
            Some(c) => {
                eprintln!(
                    "resuming {}: {} entries, {} runs, {} elements",
                    dir.display(),
                    c.entries.len(),
                    c.runs,
                    c.reached.len()
                );
                c
            }
            None => fresh,
        },
        None => fresh,
    };
    let outcome = explore(
        &settings,
        corpus,
        &stop,
        |p| eprintln!("{p}"),
        |f| eprintln!("{}", finding_line(f)),
    )?;
    if let Some(dir) = &args.corpus {
        let path = outcome.corpus.write(dir)?;
        eprintln!("corpus written to {}", path.display());
    }
    if args.json {
        print(&format!("{}\n", json(&outcome)?));
    } else {
        print(&report(&outcome, &settings));
    }
    Ok(if outcome.findings.is_empty() { 0 } else { 1 })
}

/// Runs `explore-merge`.
pub fn merge(args: &MergeArgs, mut print: impl FnMut(&str)) -> Result<u8> {
    let mut corpora = Vec::new();
    for dir in &args.corpora {
        let path = dir.join(groupsim::explore::corpus::FILE);
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        corpora.push(Corpus::parse(&text, &path)?);
    }
    let merged = Corpus::merge(corpora).map_err(anyhow::Error::msg)?;
    let path = merged.write(&args.out)?;
    print(&format!(
        "merged {} corpora: {} entries, {} runs, {} elements; written to {}\n",
        args.corpora.len(),
        merged.entries.len(),
        merged.runs,
        merged.reached.len(),
        path.display()
    ));
    Ok(0)
}

fn settings(args: &ExploreArgs) -> Result<Settings> {
    if args.runs.is_none() && args.minutes.is_none() {
        bail!("explore needs a budget: --runs N or --minutes M");
    }
    if args.runs == Some(0) {
        bail!("--runs must be at least 1");
    }
    if args.minutes.is_some_and(|m| !(m > 0.0 && m.is_finite())) {
        bail!("--minutes must be a positive number");
    }
    if args.until_caught && args.bug.is_none() {
        bail!("--until-caught needs --bug");
    }
    if args.plot.is_some() && !args.versus_sweep {
        bail!("--plot goes with --versus-sweep");
    }
    if args.versus_sweep && (args.corpus.is_some() || args.shard.is_some()) {
        bail!("--versus-sweep runs both sides from nothing: no --corpus or --shard");
    }
    let jobs = args.jobs.unwrap_or_else(sweep::default_jobs);
    if jobs == 0 {
        bail!("--jobs must be at least 1");
    }
    let scenarios = if args.scenarios.is_empty() {
        scenarios::catalogue()
    } else {
        args.scenarios.iter().map(|n| scenarios::find(n)).collect::<Result<_, _>>()?
    };
    let bug = args.bug.as_deref().map(bugs::find).transpose()?;
    let options =
        RunOptions { bug, schedule: None, no_triggers: args.no_triggers, world: args.world };
    let findings_dir = match (&args.findings, &args.corpus) {
        (Some(dir), _) => dir.clone(),
        (None, Some(corpus)) => corpus.join("findings"),
        (None, None) => runner::output_dir().join("explore"),
    };
    Ok(Settings {
        scenarios,
        options,
        runs: args.runs,
        minutes: args.minutes,
        jobs,
        seed: args.seed,
        start: args.start,
        shard: args.shard,
        findings_dir,
        shrink: !args.no_shrink && !args.until_caught,
        stop_at_catch: args.until_caught,
        strategy: if args.blind { Strategy::Blind } else { Strategy::Guided },
        respec: args.respec,
    })
}

/// Sets `stop` on the first Ctrl-C (SIGINT) or SIGTERM: the search finishes its round, writes
/// its corpus and reports. A second Ctrl-C kills the process as usual.
fn stop_on_ctrl_c(stop: Arc<AtomicBool>) {
    let spawned = std::thread::Builder::new().name("ctrl-c".into()).spawn(move || {
        let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_io().build() else {
            return;
        };
        rt.block_on(async {
            use tokio::signal::unix::{signal, SignalKind};
            let Ok(mut term) = signal(SignalKind::terminate()) else { return };
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            eprintln!("stopping after this round (the corpus is kept); Ctrl-C again to kill");
            stop.store(true, Ordering::SeqCst);
            let _ = tokio::signal::ctrl_c().await;
            std::process::exit(130);
        });
    });
    if let Err(e) = spawned {
        tracing::warn!(error = %e, "no Ctrl-C handler: Ctrl-C kills the search");
    }
}

fn finding_line(f: &Finding) -> String {
    let what = match (&f.class, &f.error) {
        (Some(c), _) => c.to_string(),
        (None, Some(e)) => format!("harness error: {e}"),
        (None, None) => "failure".into(),
    };
    let shrunk = f
        .shrunk
        .as_ref()
        .map(|(_, n)| format!(" (shrunk to {n} faults and triggers)"))
        .unwrap_or_default();
    format!(
        "FOUND at run {}: {} seed {} {what}{shrunk}, {}\n    replay: {}",
        f.run,
        f.scenario,
        f.seed,
        made_from(&f.how, f.parent),
        f.replay
    )
}

/// How a run's schedule was made, in words: its scenario's own draw, or the mutations.
fn made(how: &[String]) -> String {
    match how {
        [only] if only == "seed" => "the seed's own draw".into(),
        _ => format!("mutated: {}", how.join(" ")),
    }
}

/// [`made`], naming the corpus entry a mutation started from.
fn made_from(how: &[String], parent: Option<u64>) -> String {
    match parent {
        Some(p) => format!("{} (from corpus entry {p})", made(how)),
        None => made(how),
    }
}

fn report(outcome: &Outcome, settings: &Settings) -> String {
    let c = &outcome.corpus;
    let [probes, answers, steps, events] = groupsim::explore::element_counts(&c.coverage().reached);
    let mut out = format!(
        "explored {} runs ({} in all): {} distinct elements (probes {probes}, answers {answers}, \
         member steps {steps}, coordinator events {events}), corpus {} entries, {:.1} CPU s\n",
        outcome.runs,
        c.runs,
        c.reached.len(),
        c.entries.len(),
        outcome.cpu_s
    );
    if outcome.interrupted {
        out.push_str("stopped by a signal before the budget was spent\n");
    }
    if let Some(bug) = settings.options.bug {
        match outcome.caught_at {
            Some(run) => out.push_str(&format!(
                "caught {} at run {run} ({})\n",
                bug.name,
                made(&outcome.caught_by)
            )),
            None => out.push_str(&format!("{} not caught\n", bug.name)),
        }
    }
    if outcome.findings.is_empty() {
        out.push_str("no anomaly found\n");
    }
    for f in &outcome.findings {
        out.push_str(&finding_line(f));
        out.push('\n');
        if f.repeats > 0 {
            out.push_str(&format!("    and {} more failing runs like it\n", f.repeats));
        }
    }
    out
}

fn json(outcome: &Outcome) -> Result<String> {
    let findings: Vec<serde_json::Value> = outcome
        .findings
        .iter()
        .map(|f| {
            serde_json::json!({
                "run": f.run,
                "scenario": f.scenario,
                "seed": f.seed,
                "class": f.class.map(|c| c.to_string()),
                "error": f.error,
                "schedule": f.schedule,
                "shrunk": f.shrunk.as_ref().map(|(p, n)| serde_json::json!({"file": p, "size": n})),
                "replay": f.replay,
                "repeats": f.repeats,
                "how": f.how,
                "parent": f.parent,
            })
        })
        .collect();
    let c = &outcome.corpus;
    Ok(serde_json::to_string_pretty(&serde_json::json!({
        "runs": outcome.runs,
        "runs_in_corpus": c.runs,
        "elements": c.reached.len(),
        "corpus": c.entries.len(),
        "cpu_s": outcome.cpu_s,
        "caught_at": outcome.caught_at,
        "caught_by": outcome.caught_at.map(|_| &outcome.caught_by),
        "interrupted": outcome.interrupted,
        "findings": findings,
    }))?)
}

fn versus_sweep(
    args: &ExploreArgs,
    settings: &Settings,
    stop: &AtomicBool,
    mut print: impl FnMut(&str),
) -> Result<u8> {
    let sides = versus::compare(settings, stop)?;
    print(&versus::table(&sides));
    if let Some(path) = &args.plot {
        let names: Vec<&str> = settings.scenarios.iter().map(|s| s.name).collect();
        let title = if names.len() > 3 {
            format!("distinct elements over runs: {} scenarios", names.len())
        } else {
            format!("distinct elements over runs: {}", names.join(", "))
        };
        std::fs::write(path, versus::svg(&sides, &title))
            .with_context(|| format!("writing {}", path.display()))?;
        eprintln!("wrote {}", path.display());
    }
    Ok(if sides.iter().any(|s| s.findings > 0) { 1 } else { 0 })
}
