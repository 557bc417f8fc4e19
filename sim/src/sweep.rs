//! `groupsim sweep`: many seeds of many scenarios, on several threads, summarised per scenario
//! as a table or JSON. A deep sweep splits across machines by shard: shard K of N runs the K-th
//! of N contiguous blocks of the seed range, so shards 1/4 and 2/4 together are shard 1/2.
//!
//! Wall-clock time is read here (rates, the progress bar), outside any simulation.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::ops::Range;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use serde::Serialize;

use crate::runner::{self, RunOptions, SeedResult};
use crate::scenario::Scenario;
use crate::scenarios::{self, UnknownScenario};

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
#[derive(Clone, Debug, Serialize)]
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
}

impl SweepRow {
    /// The row of `scenario` from its seeds' `results` (in seed order), which took `wall`
    /// seconds; `bug_arg` is appended to the replay command.
    pub fn new(scenario: &str, results: &[SeedResult], wall: f64, bug_arg: &str) -> Self {
        let failures: Vec<SeedResult> = results.iter().filter(|r| !r.ok).cloned().collect();
        let sim_secs: f64 = results.iter().map(|r| r.simulated_ms as f64 / 1000.0).sum();
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
        SweepRow {
            scenario: scenario.to_string(),
            seeds: results.len(),
            passed: results.len() - failures.len(),
            failed: failures.len(),
            rebalances_per_seed: rebalances as f64 / results.len() as f64,
            simulated_seconds_per_wall_second: sim_secs / wall,
            seeds_per_second: results.len() as f64 / wall,
            replay: failures
                .first()
                .map(|r| format!("{}{bug_arg}", runner::replay_command(scenario, r.seed))),
            failures,
            probe_seeds,
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
        out
    }
}

/// The table's last line: runs, passes and failures over every row.
pub fn total_line(rows: &[SweepRow]) -> String {
    let total: usize = rows.iter().map(|r| r.seeds).sum();
    let failed: usize = rows.iter().map(|r| r.failed).sum();
    format!("total: {} runs, {} passed, {} failed\n", total, total - failed, failed)
}

/// The rows as pretty JSON (`--json`).
pub fn json_summary(rows: &[SweepRow]) -> serde_json::Result<String> {
    serde_json::to_string_pretty(rows)
}

/// Whether any seed of any row failed.
pub fn any_failed(rows: &[SweepRow]) -> bool {
    rows.iter().any(|r| r.failed > 0)
}

/// A sweep ready to run: scenarios, seeds, threads and run options.
#[derive(Debug)]
pub struct Sweep {
    scenarios: Vec<Scenario>,
    seeds: Range<u64>,
    jobs: usize,
    options: RunOptions,
    fail_fast: bool,
    /// Set by the first failing seed when `fail_fast` is on: no further seed starts.
    stop: AtomicBool,
}

impl Sweep {
    /// A sweep of the scenarios `names` (the whole catalogue when empty) over `seeds` on `jobs`
    /// threads.
    pub fn new(
        names: &[String],
        seeds: Range<u64>,
        jobs: usize,
        options: RunOptions,
    ) -> Result<Self, SweepError> {
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
        Ok(Self { scenarios, seeds, jobs, options, fail_fast: false, stop: AtomicBool::new(false) })
    }

    /// Stop at the first failing seed (no further seed or scenario starts; seeds already running
    /// finish): how long a bug takes to catch is then one command.
    pub fn fail_fast(mut self, on: bool) -> Self {
        self.fail_fast = on;
        self
    }

    /// ` --bug <name>` / ` --no-triggers` as the options say, for replay commands.
    fn bug_arg(&self) -> String {
        self.options.args()
    }

    /// The table's header: the seed range and the column names.
    pub fn table_header(&self) -> String {
        format!(
            "seeds {}..{}{}\n{:<24} {:>6} {:>6} {:>6} {:>10} {:>10} {:>9}  first failing seed\n",
            self.seeds.start,
            self.seeds.end,
            self.bug_arg(),
            "scenario",
            "seeds",
            "pass",
            "fail",
            "rebal/seed",
            "sim s/s",
            "seeds/s"
        )
    }

    /// Runs every scenario in turn, calling `done` with each row as soon as it is complete,
    /// and returns the rows.
    pub fn run(&self, mut done: impl FnMut(&SweepRow)) -> Vec<SweepRow> {
        let bug_arg = self.bug_arg();
        let mut rows = Vec::new();
        for s in &self.scenarios {
            if self.stop.load(Ordering::SeqCst) {
                break;
            }
            let started = Instant::now();
            let results = self.run_seeds(s);
            let wall = started.elapsed().as_secs_f64().max(1e-9);
            let row = SweepRow::new(s.name, &results, wall, &bug_arg);
            done(&row);
            rows.push(row);
        }
        rows
    }

    /// Runs the seeds of `s` on the sweep's threads (one whole simulation per thread at a time)
    /// and returns results in seed order, with a progress bar on stderr.
    fn run_seeds(&self, s: &Scenario) -> Vec<SeedResult> {
        let seeds = self.seeds.clone();
        let count = seeds.end - seeds.start;
        let next = AtomicUsize::new(0);
        let done = AtomicUsize::new(0);
        let failed = AtomicUsize::new(0);
        let results = Mutex::new(Vec::with_capacity(count as usize));
        let progress = Progress::new(s.name, count);
        std::thread::scope(|scope| {
            for _ in 0..self.jobs.min(count as usize) {
                scope.spawn(|| loop {
                    if self.stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    if i as u64 >= count {
                        break;
                    }
                    let seed = seeds.start + i as u64;
                    let run = runner::run_seed_with(s, seed, &self.options);
                    let r = SeedResult::from_run(seed, &run);
                    if !r.ok {
                        failed.fetch_add(1, Ordering::SeqCst);
                        if self.fail_fast {
                            self.stop.store(true, Ordering::SeqCst);
                        }
                    }
                    results.lock().expect("results lock").push(r);
                    let d = done.fetch_add(1, Ordering::SeqCst) + 1;
                    progress.update(d as u64, failed.load(Ordering::SeqCst) as u64);
                });
            }
        });
        progress.finish();
        let mut results = results.into_inner().expect("results lock");
        results.sort_by_key(|r| r.seed);
        results
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
mod tests {
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

    fn result(seed: u64, ok: bool, rebalances: u64) -> SeedResult {
        SeedResult {
            seed,
            ok,
            first_anomaly: (!ok).then_some(crate::checker::AnomalyClass::Stuck),
            error: None,
            history_hash: String::new(),
            simulated_ms: 2_000,
            rebalances,
            probes: ["a.b:x".to_string(), "a.b:y".to_string(), "c".to_string()].into(),
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
        let json = json_summary(&rows).unwrap();
        assert!(json.contains("\"scenario\": \"a\"") && json.contains("\"failures\""), "{json}");
    }
}
