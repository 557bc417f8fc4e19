//! `groupsim sweep`: many seeds of many scenarios, on several threads (every available core
//! unless told otherwise), summarised per scenario as a table or JSON. Each thread runs one whole
//! simulation at a time, single-threaded, so a seed's history does not depend on the thread count.
//! A deep sweep splits across machines by shard: shard K of N runs the K-th of N contiguous blocks
//! of the seed range, so shards 1/4 and 2/4 together are shard 1/2; the JSON carries the
//! [`SweepPlan`] so `groupsim merge` (see [`crate::merge`]) can rebuild the unsharded table.
//!
//! Wall-clock time is read here (rates, the progress bar), outside any simulation.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::ops::Range;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::determinism;
use crate::runner::{self, option_args, RunOptions, SeedResult, WorldKind};
use crate::scenario::Scenario;
use crate::scenarios::{self, UnknownScenario};
use crate::threads::{with_workers, SeedWatch};

/// Shard `index` of `count` of a seed range (1 <= index <= count).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    /// Which block, from 1.
    pub index: u64,
    /// How many blocks.
    pub count: u64,
}

/// A `--shard` argument that is not `K/N` with 1 <= K <= N.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShardError {
    /// No slash.
    #[error("{0:?} is not K/N (e.g. 2/4)")]
    NotKOfN(String),
    /// K is not a number.
    #[error("shard index {0:?} is not a number")]
    Index(String),
    /// N is not a number.
    #[error("shard count {0:?} is not a number")]
    Count(String),
    /// K or N is zero, or K > N.
    #[error("shard {index}/{count} is out of range: need 1 <= K <= N")]
    OutOfRange { index: u64, count: u64 },
}

impl FromStr for Shard {
    type Err = ShardError;

    /// Parses `K/N` with 1 <= K <= N.
    fn from_str(text: &str) -> Result<Self, ShardError> {
        let (k, n) = text.split_once('/').ok_or_else(|| ShardError::NotKOfN(text.to_string()))?;
        let index: u64 = k.trim().parse().map_err(|_| ShardError::Index(k.to_string()))?;
        let count: u64 = n.trim().parse().map_err(|_| ShardError::Count(n.to_string()))?;
        if count == 0 || index == 0 || index > count {
            return Err(ShardError::OutOfRange { index, count });
        }
        Ok(Self { index, count })
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// The seeds of `shard` of `start..start+count` (all of them without a shard): the shard's
/// contiguous block.
pub fn seed_range(start: u64, count: u64, shard: Option<Shard>) -> Range<u64> {
    match shard {
        None => start..start + count,
        Some(Shard { index: k, count: n }) => {
            let lo = (k - 1) * count / n;
            let hi = k * count / n;
            start + lo..start + hi
        }
    }
}

/// The seeds a sweep is asked for: `count` seeds from `start`, or one shard of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Seeds {
    /// First seed of the whole range.
    pub start: u64,
    /// Seeds in the whole range.
    pub count: u64,
    /// The block of the range to run, if not all of it.
    pub shard: Option<Shard>,
}

impl Seeds {
    /// The seeds to run.
    pub fn range(&self) -> Range<u64> {
        seed_range(self.start, self.count, self.shard)
    }
}

/// Threads a sweep uses unless `--jobs` says otherwise: every core the process may use.
pub fn default_jobs() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// What a sweep was asked to run, written into every row of its JSON: `groupsim merge` merges
/// only shards whose plans agree (apart from the shard and its seeds) and whose seeds tile the
/// whole range.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SweepPlan {
    /// The groupsim version that ran it.
    pub version: String,
    /// The scenarios, in the order swept.
    pub scenarios: Vec<String>,
    /// First seed of the whole range.
    pub start: u64,
    /// Seeds in the whole range.
    pub seeds: u64,
    /// The shard this file ran (`K/N`), if any.
    pub shard: Option<String>,
    /// The seeds this file ran: `first_seed..end_seed`.
    pub first_seed: u64,
    /// One past the last seed this file ran.
    pub end_seed: u64,
    /// The bug switch turned on.
    pub bug: Option<String>,
    /// Whether event triggers were dropped.
    pub no_triggers: bool,
    /// Whether the sweep stopped at its first failing seed.
    pub fail_fast: bool,
    /// The world that simulated the runs. Files without it predate the event world, so their
    /// runs were turmoil's.
    #[serde(default = "turmoil")]
    pub world: WorldKind,
    /// Whether every seed ran twice and failed when its two histories differed.
    #[serde(default)]
    pub check_determinism: bool,
}

/// The world of a sweep file that does not name one.
fn turmoil() -> WorldKind {
    WorldKind::Turmoil
}

impl SweepPlan {
    /// The seeds this file ran.
    pub fn range(&self) -> Range<u64> {
        self.first_seed..self.end_seed
    }

    /// ` --bug <name>` / ` --no-triggers` / ` --world <w>`, as in the replay commands.
    pub fn args(&self) -> String {
        option_args(self.bug.as_deref(), self.no_triggers, false) + &self.world.arg()
    }

    /// Every field but the shard and its seeds: two shards of one sweep agree on these.
    pub fn sweep_fields(&self) -> [(&'static str, String); 9] {
        [
            ("version", self.version.clone()),
            ("scenarios", self.scenarios.join(",")),
            ("start", self.start.to_string()),
            ("seeds", self.seeds.to_string()),
            ("bug", self.bug.clone().unwrap_or_else(|| "none".into())),
            ("no_triggers", self.no_triggers.to_string()),
            ("fail_fast", self.fail_fast.to_string()),
            ("world", self.world.name().to_string()),
            ("check_determinism", self.check_determinism.to_string()),
        ]
    }
}

/// A sweep that cannot start.
#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    /// The seed range (or the shard of it) is empty.
    #[error("no seeds to run: --seeds must be at least 1 (and the shard must not be empty)")]
    NoSeeds,
    /// Zero threads.
    #[error("--jobs must be at least 1")]
    NoJobs,
    /// A scenario name not in the catalogue.
    #[error(transparent)]
    UnknownScenario(#[from] UnknownScenario),
}

/// One scenario's sweep outcome, for the table and `--json`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SweepRow {
    /// Scenario name.
    pub scenario: String,
    /// Seeds run.
    pub seeds: usize,
    /// Seeds that passed.
    pub passed: usize,
    /// Seeds that failed (an anomaly or a harness error).
    pub failed: usize,
    /// Mean rebalances per seed.
    pub rebalances_per_seed: f64,
    /// Simulated seconds per wall second.
    pub simulated_seconds_per_wall_second: f64,
    /// Seeds per wall second.
    pub seeds_per_second: f64,
    /// The failing seeds, in seed order.
    pub failures: Vec<SeedResult>,
    /// The command that replays the first failing seed.
    pub replay: Option<String>,
    /// Per probe hit (family members as `name:detail`), how many seeds hit it.
    pub probe_seeds: BTreeMap<String, usize>,
    /// Rebalances summed over the seeds.
    #[serde(default)]
    pub rebalances: u64,
    /// Simulated milliseconds summed over the seeds.
    #[serde(default)]
    pub simulated_ms: u64,
    /// Wall seconds the seeds took.
    #[serde(default)]
    pub wall_seconds: f64,
    /// Seeds whose anomalies a hazard Kafka allows explains (they pass), in seed order.
    #[serde(default)]
    pub hazard_seeds: Vec<u64>,
}

impl SweepRow {
    /// The row of `scenario` from its seeds' `results` (in seed order), which took `wall`
    /// seconds; `bug_arg` is appended to the replay command.
    pub fn new(scenario: &str, results: &[SeedResult], wall: f64, bug_arg: &str) -> Self {
        let failures: Vec<SeedResult> = results.iter().filter(|r| !r.ok).cloned().collect();
        let simulated_ms: u64 = results.iter().map(|r| r.simulated_ms).sum();
        let rebalances: u64 = results.iter().map(|r| r.rebalances).sum();
        let mut probe_seeds = BTreeMap::new();
        for r in results {
            // A family member `name:detail` also counts as a hit of the family `name`, once
            // per seed however many members it hit.
            let mut names: std::collections::BTreeSet<&str> = std::collections::BTreeSet::new();
            for hit in &r.probes {
                names.insert(hit);
                if let Some((family, _)) = hit.split_once(':') {
                    names.insert(family);
                }
            }
            for name in names {
                *probe_seeds.entry(name.to_string()).or_insert(0) += 1;
            }
        }
        let replay = failures
            .first()
            .map(|r| format!("{}{bug_arg}", runner::replay_command(scenario, r.seed)));
        let mut row = Self::from_sums(
            scenario,
            results.len(),
            failures,
            replay,
            probe_seeds,
            (rebalances, simulated_ms, wall),
        );
        row.hazard_seeds = results.iter().filter(|r| r.hazards > 0).map(|r| r.seed).collect();
        row
    }

    /// A row from its seed count, failing seeds (in seed order), replay command, probe counts and
    /// `(rebalances, simulated ms, wall seconds)` summed over its seeds: the rates follow.
    pub fn from_sums(
        scenario: &str,
        seeds: usize,
        failures: Vec<SeedResult>,
        replay: Option<String>,
        probe_seeds: BTreeMap<String, usize>,
        (rebalances, simulated_ms, wall): (u64, u64, f64),
    ) -> Self {
        SweepRow {
            scenario: scenario.to_string(),
            seeds,
            passed: seeds - failures.len(),
            failed: failures.len(),
            rebalances_per_seed: rebalances as f64 / seeds as f64,
            simulated_seconds_per_wall_second: simulated_ms as f64 / 1000.0 / wall,
            seeds_per_second: seeds as f64 / wall,
            replay,
            failures,
            probe_seeds,
            rebalances,
            simulated_ms,
            wall_seconds: wall,
            hazard_seeds: Vec::new(),
        }
    }

    /// The row's table line, and its replay line when a seed failed.
    pub fn table_lines(&self) -> String {
        let first = self.failures.first().map(|r| {
            let why =
                r.first_anomaly.map(|c| c.to_string()).or(r.error.clone()).unwrap_or_default();
            format!("{} ({why})", r.seed)
        });
        let mut out = format!(
            "{:<24} {:>6} {:>6} {:>6} {:>10.1} {:>10.0} {:>9.2}  {}\n",
            self.scenario,
            self.seeds,
            self.passed,
            self.failed,
            self.rebalances_per_seed,
            self.simulated_seconds_per_wall_second,
            self.seeds_per_second,
            first.unwrap_or_else(|| "-".into())
        );
        if let Some(replay) = &self.replay {
            let _ = writeln!(out, "    replay: {replay}");
        }
        if let Some(first) = self.hazard_seeds.first() {
            let _ = writeln!(
                out,
                "    hazards: {} passing seeds show anomalies a Kafka hazard explains (first: {})",
                self.hazard_seeds.len(),
                runner::replay_command(&self.scenario, *first)
            );
        }
        out
    }
}

/// The table's last line: runs, passes and failures over every row.
pub fn total_line(rows: &[SweepRow]) -> String {
    let total: usize = rows.iter().map(|r| r.seeds).sum();
    let failed: usize = rows.iter().map(|r| r.failed).sum();
    format!("total: {} runs, {} passed, {} failed\n", total, total - failed, failed)
}

/// The table's first lines: the seed range, the options and the column names.
pub fn table_header(seeds: Range<u64>, args: &str) -> String {
    format!(
        "seeds {}..{}{}\n{:<24} {:>6} {:>6} {:>6} {:>10} {:>10} {:>9}  first failing seed\n",
        seeds.start,
        seeds.end,
        args,
        "scenario",
        "seeds",
        "pass",
        "fail",
        "rebal/seed",
        "sim s/s",
        "seeds/s"
    )
}

/// A row as written by `--json`: the row's fields and the sweep's plan beside them (a JSON array
/// of rows, as before the plan was added, so readers of the rows keep working).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct JsonRow {
    /// The row.
    #[serde(flatten)]
    pub row: SweepRow,
    /// The sweep it belongs to; absent in files written before plans were recorded.
    pub sweep: Option<SweepPlan>,
}

/// The rows as pretty JSON (`--json`), each carrying `plan`.
pub fn json_summary(plan: &SweepPlan, rows: &[SweepRow]) -> serde_json::Result<String> {
    let rows: Vec<JsonRow> =
        rows.iter().map(|r| JsonRow { row: r.clone(), sweep: Some(plan.clone()) }).collect();
    serde_json::to_string_pretty(&rows)
}

/// Whether any seed of any row failed.
pub fn any_failed(rows: &[SweepRow]) -> bool {
    rows.iter().any(|r| r.failed > 0)
}

/// A sweep ready to run: scenarios, seeds, threads and run options.
#[derive(Debug)]
pub struct Sweep {
    scenarios: Vec<Scenario>,
    plan_seeds: Seeds,
    seeds: Range<u64>,
    jobs: usize,
    options: RunOptions,
    fail_fast: bool,
    check_determinism: bool,
    /// Whether each seed's history hash is kept (sweep files carry it).
    hashes: bool,
    /// Set by the first failing seed when `fail_fast` is on: no further seed starts.
    stop: AtomicBool,
    /// How long one seed may run (wall time), and whom to tell of one that runs longer.
    seed_limit: Option<SeedLimit>,
}

/// [`Sweep::seed_limit`]'s limit and whom it tells.
struct SeedLimit {
    limit: Duration,
    tell: OnOverrun,
}

impl std::fmt::Debug for SeedLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SeedLimit").field("limit", &self.limit).finish_non_exhaustive()
    }
}

/// What a sweep calls for a seed that runs past its time limit ([`Sweep::seed_limit`]).
pub type OnOverrun = Arc<dyn Fn(&SeedOverrun) + Send + Sync>;

/// A seed still running past the sweep's time limit: a core stuck inside one call, most likely,
/// which nothing can interrupt.
#[derive(Clone, Debug)]
pub struct SeedOverrun {
    /// Its scenario.
    pub scenario: &'static str,
    /// The seed.
    pub seed: u64,
    /// How long it has run so far.
    pub ran: Duration,
    /// The command that replays it.
    pub replay: String,
}

impl Sweep {
    /// A sweep of the scenarios `names` (the whole catalogue when empty) over `seeds` on `jobs`
    /// threads (see [`default_jobs`]).
    pub fn new(
        names: &[String],
        plan_seeds: Seeds,
        jobs: usize,
        options: RunOptions,
    ) -> Result<Self, SweepError> {
        let seeds = plan_seeds.range();
        if seeds.is_empty() {
            return Err(SweepError::NoSeeds);
        }
        if jobs == 0 {
            return Err(SweepError::NoJobs);
        }
        let scenarios: Vec<Scenario> = if names.is_empty() {
            scenarios::catalogue()
        } else {
            names.iter().map(|n| scenarios::find(n)).collect::<Result<_, _>>()?
        };
        Ok(Self {
            scenarios,
            plan_seeds,
            seeds,
            jobs,
            options,
            fail_fast: false,
            check_determinism: false,
            hashes: false,
            stop: AtomicBool::new(false),
            seed_limit: None,
        })
    }

    /// Stop at the first failing seed (no further seed or scenario starts; seeds already running
    /// finish): how long a bug takes to catch is then one command.
    pub fn fail_fast(mut self, on: bool) -> Self {
        self.fail_fast = on;
        self
    }

    /// Tell `overrun` of every seed still running after `limit` of wall time (once per seed,
    /// while it runs); the sweep itself waits for it, as it cannot be interrupted.
    pub fn seed_limit(mut self, limit: Duration, overrun: OnOverrun) -> Self {
        self.seed_limit = Some(SeedLimit { limit, tell: overrun });
        self
    }

    /// Keep each seed's history hash in its result (for `--json`; the table does not show it).
    pub fn hashes(mut self, on: bool) -> Self {
        self.hashes = on;
        self
    }

    /// Run every seed twice and fail a seed whose two histories differ (see
    /// [`crate::determinism`]).
    pub fn check_determinism(mut self, on: bool) -> Self {
        self.check_determinism = on;
        self
    }

    /// ` --bug <name>` / ` --no-triggers` / ` --world <w>` as the options say, for replay commands.
    fn bug_arg(&self) -> String {
        self.options.args()
    }

    /// The table's header: the seed range and the column names.
    pub fn table_header(&self) -> String {
        table_header(self.seeds.clone(), &self.bug_arg())
    }

    /// What this sweep runs, for its JSON.
    pub fn plan(&self) -> SweepPlan {
        SweepPlan {
            version: env!("CARGO_PKG_VERSION").to_string(),
            scenarios: self.scenarios.iter().map(|s| s.name.to_string()).collect(),
            start: self.plan_seeds.start,
            seeds: self.plan_seeds.count,
            shard: self.plan_seeds.shard.map(|s| s.to_string()),
            first_seed: self.seeds.start,
            end_seed: self.seeds.end,
            bug: self.options.bug.as_ref().map(|b| b.name.to_string()),
            no_triggers: self.options.no_triggers,
            fail_fast: self.fail_fast,
            world: self.options.world,
            check_determinism: self.check_determinism,
        }
    }

    /// Runs every scenario in turn, calling `done` with each row as soon as it is complete,
    /// and returns the rows.
    pub fn run(&self, mut done: impl FnMut(&SweepRow)) -> Vec<SweepRow> {
        let bug_arg = self.bug_arg();
        // The scenario whose seeds the workers are running, with its progress.
        let current: Mutex<Option<Arc<Tally>>> = Mutex::new(None);
        let each = |i: usize, seed: u64| {
            let tally = current.lock().unwrap_or_else(|p| p.into_inner()).clone();
            self.run_seed(&self.scenarios[i], seed, tally.as_deref())
        };
        let count = self.seeds.end - self.seeds.start;
        let jobs = self.jobs.clamp(1, count.max(1) as usize);
        with_workers(jobs, &self.stop, each, |workers| {
            let mut rows = Vec::new();
            for (i, s) in self.scenarios.iter().enumerate() {
                if self.stop.load(Ordering::SeqCst) {
                    break;
                }
                let started = Instant::now();
                let tally = Arc::new(Tally::new(s.name, count));
                *current.lock().unwrap_or_else(|p| p.into_inner()) = Some(tally.clone());
                let overrun = |_: usize, seed: u64, ran: Duration| {
                    if let Some(l) = &self.seed_limit {
                        let replay = format!("{}{bug_arg}", runner::replay_command(s.name, seed));
                        (l.tell)(&SeedOverrun { scenario: s.name, seed, ran, replay });
                    }
                };
                let watch = self
                    .seed_limit
                    .as_ref()
                    .map(|l| SeedWatch { limit: l.limit, overrun: &overrun });
                let results = workers.round_watched(i, self.seeds.clone(), watch.as_ref());
                tally.progress.finish();
                let results = self.rechecked(s, results.into_iter().map(|(_, r)| r).collect());
                let wall = started.elapsed().as_secs_f64().max(1e-9);
                let row = SweepRow::new(s.name, &results, wall, &bug_arg);
                done(&row);
                rows.push(row);
            }
            rows
        })
    }

    /// Runs one seed of `s`, counting it on the scenario's progress.
    fn run_seed(&self, s: &Scenario, seed: u64, tally: Option<&Tally>) -> SeedResult {
        let run = runner::run_seed_with(s, seed, &self.options);
        let mut r = if self.hashes || self.check_determinism {
            SeedResult::from_run(seed, &run)
        } else {
            SeedResult::unhashed(seed, &run)
        };
        if let (true, Ok(run)) = (self.check_determinism, &run) {
            // Serialising the wire stream costs a run a good share: only when compared.
            r.wire_hash = run.history.wire_hash_hex();
        }
        if !r.ok && self.fail_fast {
            self.stop.store(true, Ordering::SeqCst);
        }
        if let Some(t) = tally {
            if !r.ok {
                t.failed.fetch_add(1, Ordering::SeqCst);
            }
            let d = t.done.fetch_add(1, Ordering::SeqCst) + 1;
            t.progress.update(d as u64, t.failed.load(Ordering::SeqCst) as u64);
        }
        r
    }

    /// With `--check-determinism`, `results` with every seed whose rerun differed failed.
    fn rechecked(&self, s: &Scenario, mut results: Vec<SeedResult>) -> Vec<SeedResult> {
        if self.check_determinism {
            let first: Vec<(u64, String)> = results
                .iter()
                .map(|r| (r.seed, determinism::run_hash(&r.history_hash, &r.wire_hash)))
                .collect();
            let rerun =
                |seed| runner::run_seed_with(s, seed, &self.options).ok().map(|r| r.history);
            for m in determinism::recheck(&first, self.jobs, rerun) {
                if let Some(r) = results.iter_mut().find(|r| r.seed == m.seed) {
                    r.ok = false;
                    r.first_anomaly = None;
                    r.error = Some(m.to_string());
                }
            }
        }
        results
    }
}

/// A scenario's progress while its seeds run.
struct Tally {
    progress: Progress,
    done: AtomicUsize,
    failed: AtomicUsize,
}

impl Tally {
    fn new(name: &'static str, total: u64) -> Self {
        Self { progress: Progress::new(name, total), done: 0.into(), failed: 0.into() }
    }
}

/// A one-line progress bar on stderr when stderr is a terminal; otherwise a line every 10%.
struct Progress {
    name: &'static str,
    total: u64,
    tty: bool,
    started: Instant,
    last_decile: AtomicU64,
}

impl Progress {
    fn new(name: &'static str, total: u64) -> Self {
        use std::io::IsTerminal as _;
        let tty = std::io::stderr().is_terminal();
        Self { name, total, tty, started: Instant::now(), last_decile: 0.into() }
    }

    fn update(&self, done: u64, failed: u64) {
        let width = 30u64;
        let filled = (done * width / self.total.max(1)) as usize;
        let bar = format!("{}{}", "#".repeat(filled), "-".repeat(width as usize - filled));
        let rate = done as f64 / self.started.elapsed().as_secs_f64().max(1e-9);
        let line = format!(
            "{:<24} [{bar}] {done}/{} seeds, {failed} failed, {rate:.1} seeds/s",
            self.name, self.total
        );
        if self.tty {
            eprint!("\r{line}");
        } else {
            let decile = done * 10 / self.total.max(1);
            if self.last_decile.fetch_max(decile, Ordering::SeqCst) < decile {
                eprintln!("{line}");
            }
        }
    }

    fn finish(&self) {
        if self.tty {
            eprint!("\r{}\r", " ".repeat(110));
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn shard(text: &str) -> Result<Shard, ShardError> {
        text.parse()
    }

    #[test]
    fn shard_parsing_names_each_mistake() {
        assert_eq!(shard("2/4"), Ok(Shard { index: 2, count: 4 }));
        assert_eq!(shard(" 1 / 1 "), Ok(Shard { index: 1, count: 1 }));
        assert_eq!(shard("two"), Err(ShardError::NotKOfN("two".into())));
        assert_eq!(shard("x/4"), Err(ShardError::Index("x".into())));
        assert_eq!(shard("1/y"), Err(ShardError::Count("y".into())));
        for bad in ["0/4", "3/2", "1/0", "0/0"] {
            assert!(matches!(shard(bad), Err(ShardError::OutOfRange { .. })), "{bad}");
        }
        assert_eq!(
            shard("3/2").unwrap_err().to_string(),
            "shard 3/2 is out of range: need 1 <= K <= N"
        );
        assert_eq!(shard("two").unwrap_err().to_string(), "\"two\" is not K/N (e.g. 2/4)");
    }

    #[test]
    fn shards_are_contiguous_blocks_covering_every_seed_once() {
        assert_eq!(seed_range(5, 10, None), 5..15);
        for count in [0u64, 1, 7, 8, 100, 101] {
            for n in 1..=9u64 {
                let blocks: Vec<Range<u64>> = (1..=n)
                    .map(|k| seed_range(3, count, Some(Shard { index: k, count: n })))
                    .collect();
                let seeds: Vec<u64> = blocks.iter().flat_map(|b| b.clone()).collect();
                assert_eq!(seeds, (3..3 + count).collect::<Vec<_>>(), "{count} seeds, {n} shards");
                for pair in blocks.windows(2) {
                    assert_eq!(pair[0].end, pair[1].start);
                }
            }
        }
        // Shards 1/4 and 2/4 together are shard 1/2.
        let q1 = seed_range(0, 10, Some(Shard { index: 1, count: 4 }));
        let q2 = seed_range(0, 10, Some(Shard { index: 2, count: 4 }));
        assert_eq!(q1.start..q2.end, seed_range(0, 10, Some(Shard { index: 1, count: 2 })));
    }

    /// A seed's line: failing ones as `stuck`, 2 simulated seconds, three probes hit.
    pub(crate) fn result(seed: u64, ok: bool, rebalances: u64) -> SeedResult {
        SeedResult {
            seed,
            ok,
            first_anomaly: (!ok).then_some(groupsim_checker::AnomalyClass::Stuck),
            anomalies: if ok { Vec::new() } else { vec![groupsim_checker::AnomalyClass::Stuck] },
            error: None,
            history_hash: String::new(),
            wire_hash: String::new(),
            simulated_ms: 2_000,
            rebalances,
            probes: ["a.b:x".to_string(), "a.b:y".to_string(), "c".to_string()].into(),
            hazards: 0,
        }
    }

    #[test]
    fn a_family_counts_once_per_seed_and_its_members_each() {
        let row = SweepRow::new("a", &[result(0, true, 1), result(1, true, 1)], 1.0, "");
        assert_eq!(row.probe_seeds["a.b"], 2, "two seeds, each hitting two members");
        assert_eq!(row.probe_seeds["a.b:x"], 2);
        assert_eq!(row.probe_seeds["c"], 2);
    }

    #[test]
    fn rows_and_totals_add_up() {
        let a = SweepRow::new("a", &[result(0, true, 2), result(1, false, 4)], 2.0, " --bug b");
        assert_eq!((a.seeds, a.passed, a.failed), (2, 1, 1));
        assert_eq!(a.rebalances_per_seed, 3.0);
        assert_eq!(a.simulated_seconds_per_wall_second, 2.0);
        assert_eq!(a.seeds_per_second, 1.0);
        assert_eq!(
            a.replay.as_deref(),
            Some(&*format!("{} --bug b", runner::replay_command("a", 1)))
        );
        let lines = a.table_lines();
        assert!(lines.starts_with("a ") && lines.contains("1 (stuck)"), "{lines}");
        assert!(lines.contains("    replay: "), "{lines}");
        let b = SweepRow::new("b", &[result(7, true, 1)], 1.0, "");
        assert!(b.replay.is_none() && b.table_lines().trim_end().ends_with('-'));
        let rows = [a, b];
        assert_eq!(total_line(&rows), "total: 3 runs, 2 passed, 1 failed\n");
        assert!(any_failed(&rows) && !any_failed(&rows[1..]));
        assert_eq!((rows[0].rebalances, rows[0].simulated_ms), (6, 4_000));
    }

    #[test]
    fn json_rows_carry_the_plan_and_read_back_as_written() {
        let options = RunOptions::default();
        let seeds = Seeds { start: 10, count: 8, shard: Some("2/4".parse().unwrap()) };
        let sweep = Sweep::new(&["steady_state".into()], seeds, 2, options).unwrap();
        let plan = sweep.plan();
        assert_eq!((plan.first_seed, plan.end_seed, plan.shard.as_deref()), (12, 14, Some("2/4")));
        let row =
            SweepRow::new("steady_state", &[result(12, false, 2), result(13, true, 1)], 2.0, "");
        let json = json_summary(&plan, std::slice::from_ref(&row)).unwrap();
        assert!(json.contains("\"scenario\": \"steady_state\"") && json.contains("\"failures\""));
        let back: Vec<JsonRow> = serde_json::from_str(&json).unwrap();
        assert_eq!(back[0].sweep.as_ref(), Some(&plan));
        assert_eq!(back[0].row.failures[0].seed, 12);
        assert_eq!(back[0].row.table_lines(), row.table_lines());
    }
}
