//! `groupsim bench`: throughput of scenarios (seeds per second, simulated seconds per second,
//! history events per second). Wall-clock and CPU time are read here, outside any simulation.
//!
//! By default three standard scenarios: a small steady group (`membership_churn`), the
//! all-faults `swarm`, and a 1,000-member join storm ([`join_storm_1000`]) run with a tenth of the
//! seeds; `--all` measures the whole catalogue. Seeds run on every core (`--jobs` overrides),
//! one whole simulation per thread at a time. Each row reports both the total rate (seeds per
//! wall second over all threads) and the rate per core (seeds per CPU second of the threads that
//! ran them): the per-core figure hardly moves with the thread count or with other load on a
//! shared machine, so it is the one to compare across changes.
//!
//! `--save FILE` keeps a bench's figures as JSON; `--baseline FILE` prints, beside a new bench,
//! each scenario's CPU per seed against the saved one as a ratio, and the ratio of the sums
//! (what the whole set costs, as a sweep over it would). Save the baseline with the old binary
//! and compare with the new one on the same machine, ideally alternating: the ratios carry
//! over between machines where the absolute figures do not.

use std::fmt::Write as _;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Mutex;
use std::time::Instant;

use crate::runner::{self, RunReport, WorldKind};
use crate::scenario::Scenario;
use crate::scenarios::{self, storm::join_storm_1000, UnknownScenario};
use crate::threads::on_threads;
use crate::world::WorldError;

/// One scenario's figures.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct BenchRow {
    /// Scenario name.
    pub scenario: String,
    /// Seeds run.
    pub seeds: u64,
    /// Wall seconds for all of them (on all threads).
    pub wall_s: f64,
    /// CPU seconds of the threads while they ran the seeds (their wall seconds where the
    /// platform does not say).
    pub cpu_s: f64,
    /// Simulated milliseconds, summed over seeds.
    pub simulated_ms: u64,
    /// History events, summed over seeds.
    pub events: u64,
    /// Seeds whose verdict had anomalies: (seed, first anomaly class).
    #[serde(default)]
    pub failed: Vec<(u64, String)>,
    /// Seeds the harness could not run: (seed, error).
    #[serde(default)]
    pub errors: Vec<(u64, String)>,
    /// The slowest seed's CPU seconds.
    #[serde(default)]
    pub slowest_s: f64,
}

/// A bench kept for later comparison (`bench --save`).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct SavedBench {
    /// The world the seeds ran in.
    pub world: WorldKind,
    /// Threads.
    pub jobs: usize,
    /// Per scenario.
    pub rows: Vec<BenchRow>,
}

/// A saved bench that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum BaselineError {
    /// The file could not be read.
    #[error("cannot read baseline {path}: {source}")]
    Read { path: String, source: std::io::Error },
    /// The file is not a saved bench.
    #[error("baseline {path} is not a file `groupsim bench --save` wrote: {source}")]
    Parse { path: String, source: serde_json::Error },
    /// The baseline and the new bench ran in different worlds.
    #[error("baseline {path} ran in the {saved} world, this bench in the {now} world")]
    World { path: String, saved: &'static str, now: &'static str },
}

impl SavedBench {
    /// Reads a file `bench --save` wrote.
    pub fn read(path: &Path) -> Result<Self, BaselineError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|source| BaselineError::Read { path: shown.clone(), source })?;
        serde_json::from_str(&text).map_err(|source| BaselineError::Parse { path: shown, source })
    }
}

/// Each scenario's CPU per seed against `baseline`'s, and the ratio of the sums over the
/// scenarios both measured (the cost of a sweep over them, seed for seed).
pub fn compare(rows: &[BenchRow], baseline: &SavedBench) -> String {
    let per_seed = |r: &BenchRow| r.cpu_s / (r.seeds.max(1) as f64);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<24} {:>14} {:>14} {:>9}",
        "scenario", "base ms/seed", "now ms/seed", "now/base"
    );
    let (mut base_sum, mut now_sum) = (0.0, 0.0);
    for r in rows {
        let now = per_seed(r) * 1000.0;
        match baseline.rows.iter().find(|b| b.scenario == r.scenario) {
            Some(b) => {
                let base = per_seed(b) * 1000.0;
                base_sum += base;
                now_sum += now;
                let ratio = now / base.max(1e-9);
                let _ = writeln!(out, "{:<24} {base:>14.1} {now:>14.1} {ratio:>9.3}", r.scenario);
            }
            None => {
                let _ = writeln!(out, "{:<24} {:>14} {now:>14.1} {:>9}", r.scenario, "-", "-");
            }
        }
    }
    for b in baseline.rows.iter().filter(|b| !rows.iter().any(|r| r.scenario == b.scenario)) {
        let _ = writeln!(out, "{:<24} (in the baseline only)", b.scenario);
    }
    if base_sum > 0.0 {
        let _ = writeln!(
            out,
            "{:<24} {base_sum:>14.1} {now_sum:>14.1} {:>9.3}",
            "all (sum)",
            now_sum / base_sum
        );
    }
    out
}

impl BenchRow {
    /// Seeds per wall second, all threads together.
    pub fn seeds_per_s(&self) -> f64 {
        self.seeds as f64 / self.wall_s.max(1e-9)
    }

    /// Seeds per CPU second: the rate of one core.
    pub fn seeds_per_core_s(&self) -> f64 {
        self.seeds as f64 / self.cpu_s.max(1e-9)
    }

    /// Simulated seconds per CPU second.
    pub fn sim_speed(&self) -> f64 {
        self.simulated_ms as f64 / 1000.0 / self.cpu_s.max(1e-9)
    }

    /// History events per CPU second.
    pub fn events_per_s(&self) -> f64 {
        self.events as f64 / self.cpu_s.max(1e-9)
    }
}

/// CPU seconds the calling thread has run, where the platform says (Linux:
/// `/proc/thread-self/schedstat`, whose first field is nanoseconds on a CPU).
pub(crate) fn thread_cpu_s() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: u64 = text.split_whitespace().next()?.parse().ok()?;
    Some(ns as f64 / 1e9)
}

/// Runs seeds `0..seeds` of `scenario` in `world` on `jobs` threads and measures them.
pub fn measure(scenario: &Scenario, seeds: u64, jobs: usize, world: WorldKind) -> BenchRow {
    let mut row = BenchRow { scenario: scenario.name.to_string(), seeds, ..Default::default() };
    let never = AtomicBool::new(false);
    let per_seed = Mutex::new(Vec::new());
    let all = Instant::now();
    let runs = on_threads(0..seeds, jobs, &never, |seed| {
        let (cpu, wall) = (thread_cpu_s(), Instant::now());
        let run: Result<RunReport, WorldError> = runner::run_spec_in(scenario.build(seed), world);
        let took = match (cpu, thread_cpu_s()) {
            (Some(a), Some(b)) => b - a,
            _ => wall.elapsed().as_secs_f64(),
        };
        per_seed.lock().expect("per-seed lock").push(took);
        run
    });
    row.wall_s = all.elapsed().as_secs_f64();
    let per_seed = per_seed.into_inner().expect("per-seed lock");
    row.cpu_s = per_seed.iter().sum();
    row.slowest_s = per_seed.iter().copied().fold(0.0, f64::max);
    for (seed, run) in runs {
        match run {
            Ok(r) => {
                row.simulated_ms += r.simulated_ms();
                row.events += r.history.len() as u64;
                if let Some(a) = r.verdict.first() {
                    row.failed.push((seed, a.class.to_string()));
                }
            }
            Err(e) => row.errors.push((seed, e.to_string())),
        }
    }
    row
}

/// The benchmark table.
pub fn table(rows: &[BenchRow], jobs: usize) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{jobs} thread(s); per core = per CPU second of the threads that ran the seeds"
    );
    let _ = writeln!(
        out,
        "{:<24} {:>5} {:>8} {:>8} {:>8} {:>9} {:>10} {:>10} {:>9} {:>6}",
        "scenario",
        "seeds",
        "wall s",
        "seeds/s",
        "cpu s",
        "per core",
        "sim s/cpu",
        "events/cpu",
        "slowest s",
        "failed"
    );
    for r in rows {
        let _ = writeln!(
            out,
            "{:<24} {:>5} {:>8.2} {:>8.2} {:>8.2} {:>9.2} {:>10.1} {:>10.0} {:>9.2} {:>6}",
            r.scenario,
            r.seeds,
            r.wall_s,
            r.seeds_per_s(),
            r.cpu_s,
            r.seeds_per_core_s(),
            r.sim_speed(),
            r.events_per_s(),
            r.slowest_s,
            r.failed.len() + r.errors.len()
        );
    }
    for r in rows {
        for (seed, class) in &r.failed {
            let _ = writeln!(out, "{} seed {seed}: checker found {class}", r.scenario);
        }
        for (seed, e) in &r.errors {
            let _ = writeln!(out, "{} seed {seed}: harness error: {e}", r.scenario);
        }
    }
    out
}

/// The 1,000-member join storm, which is not in the catalogue (too slow for sweeps).
fn storm_1000() -> Scenario {
    Scenario::new("join_storm_1000", "1,000 members join within seconds", join_storm_1000)
}

/// The scenarios to measure with their seed counts: `names` (catalogue names or
/// `join_storm_1000`), the whole catalogue with `all`, else the three standard ones. The
/// 1,000-member storm runs `max(1, seeds / 10)` seeds.
pub fn plan(
    names: &[String],
    all: bool,
    seeds: u64,
) -> Result<Vec<(Scenario, u64)>, UnknownScenario> {
    let storm = storm_1000();
    let pick = |name: &str| if name == storm.name { Ok(storm) } else { scenarios::find(name) };
    let chosen: Vec<Scenario> = if all {
        scenarios::catalogue()
    } else if names.is_empty() {
        ["membership_churn", "swarm", storm.name]
            .iter()
            .map(|n| pick(n))
            .collect::<Result<_, _>>()?
    } else {
        names.iter().map(|n| pick(n)).collect::<Result<_, _>>()?
    };
    Ok(chosen
        .into_iter()
        .map(|s| {
            let n = if s.name == storm.name { (seeds / 10).max(1) } else { seeds };
            (s, n)
        })
        .collect())
}

/// Runs the benchmark over `plan` in `world` on `jobs` threads: the rows and their report.
pub fn run(plan: &[(Scenario, u64)], jobs: usize, world: WorldKind) -> (SavedBench, String) {
    let rows: Vec<BenchRow> = plan.iter().map(|(s, n)| measure(s, *n, jobs, world)).collect();
    let mut out = String::new();
    if cfg!(debug_assertions) {
        out.push_str(
            "note: debug build; run `cargo run --release -- bench` for representative figures\n",
        );
    }
    let _ = writeln!(out, "world: {}", world.name());
    out.push_str(&table(&rows, jobs));
    (SavedBench { world, jobs, rows }, out)
}

/// Checks that `baseline` can be compared with a bench in `world`.
pub fn check_baseline(
    baseline: &SavedBench,
    path: &Path,
    world: WorldKind,
) -> Result<(), BaselineError> {
    if baseline.world != world {
        return Err(BaselineError::World {
            path: path.display().to_string(),
            saved: baseline.world.name(),
            now: world.name(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_lists_every_scenario_with_its_rates() {
        let row = BenchRow {
            scenario: "x".into(),
            seeds: 4,
            wall_s: 1.0,
            cpu_s: 2.0,
            simulated_ms: 100_000,
            events: 5_000,
            failed: vec![(3, "stuck".into())],
            ..Default::default()
        };
        let t = table(&[row], 2);
        assert!(t.contains("seeds/s") && t.contains("per core") && t.contains("sim s/cpu"), "{t}");
        let cols: Vec<&str> = t.lines().nth(2).unwrap().split_whitespace().collect();
        assert_eq!(cols[..7], ["x", "4", "1.00", "4.00", "2.00", "2.00", "50.0"], "{t}");
        assert!(t.contains("x seed 3: checker found stuck"), "{t}");
    }

    #[test]
    fn plan_picks_the_standard_three_the_named_or_the_whole_catalogue() {
        let names = |p: Vec<(Scenario, u64)>| -> Vec<(String, u64)> {
            p.into_iter().map(|(s, n)| (s.name.to_string(), n)).collect()
        };
        let standard = names(plan(&[], false, 20).unwrap());
        assert_eq!(
            standard,
            [("membership_churn".into(), 20), ("swarm".into(), 20), ("join_storm_1000".into(), 2)]
        );
        let all = names(plan(&[], true, 5).unwrap());
        assert_eq!(all.len(), scenarios::catalogue().len());
        assert!(all.iter().all(|(_, n)| *n == 5));
        assert_eq!(
            names(plan(&["join_storm_1000".into()], false, 5).unwrap()),
            [("join_storm_1000".into(), 1)]
        );
        assert!(plan(&["nope".into()], false, 5).is_err());
    }

    fn row(scenario: &str, seeds: u64, cpu_s: f64) -> BenchRow {
        BenchRow { scenario: scenario.into(), seeds, cpu_s, ..Default::default() }
    }

    #[test]
    fn compare_prints_each_ratio_and_the_ratio_of_the_sums() {
        let baseline = SavedBench {
            world: WorldKind::Event,
            jobs: 1,
            rows: vec![row("a", 10, 1.0), row("b", 10, 3.0), row("gone", 5, 1.0)],
        };
        let now = [row("a", 20, 1.0), row("b", 10, 1.5), row("new", 4, 1.0)];
        let t = compare(&now, &baseline);
        let line = |name: &str| -> Vec<String> {
            let l = t.lines().find(|l| l.starts_with(name)).unwrap_or_else(|| panic!("{t}"));
            l.split_whitespace().map(String::from).collect()
        };
        assert_eq!(line("a ")[1..], ["100.0", "50.0", "0.500"], "{t}");
        assert_eq!(line("b ")[1..], ["300.0", "150.0", "0.500"], "{t}");
        assert_eq!(line("new")[1..], ["-", "250.0", "-"], "{t}");
        assert!(t.contains("gone                     (in the baseline only)"), "{t}");
        assert_eq!(line("all (sum)")[2..], ["400.0", "200.0", "0.500"], "{t}");
    }

    #[test]
    fn a_saved_bench_reads_back_and_a_bad_one_names_the_problem() {
        let dir = std::env::temp_dir().join(format!("groupsim-bench-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let good = dir.join("good.json");
        let saved = SavedBench { world: WorldKind::Event, jobs: 2, rows: vec![row("a", 3, 0.3)] };
        std::fs::write(&good, serde_json::to_string(&saved).unwrap()).unwrap();
        let back = SavedBench::read(&good).unwrap();
        assert_eq!((back.jobs, back.rows[0].seeds), (2, 3));
        assert!(check_baseline(&back, &good, WorldKind::Event).is_ok());
        let e = check_baseline(&back, &good, WorldKind::Turmoil).unwrap_err().to_string();
        assert!(e.contains("event world") && e.contains("turmoil world"), "{e}");
        let bad = dir.join("bad.json");
        std::fs::write(&bad, "{\"rows\": 3}").unwrap();
        let e = SavedBench::read(&bad).unwrap_err().to_string();
        assert!(e.contains("bad.json") && e.contains("bench --save"), "{e}");
        let e = SavedBench::read(&dir.join("missing.json")).unwrap_err().to_string();
        assert!(e.contains("cannot read baseline") && e.contains("missing.json"), "{e}");
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn measure_runs_every_seed_once_on_any_thread_count() {
        let steady = scenarios::find("steady_state").unwrap();
        let one = measure(&steady, 2, 1, WorldKind::Turmoil);
        let two = measure(&steady, 2, 2, WorldKind::Turmoil);
        assert_eq!(
            (one.seeds, one.events, one.simulated_ms),
            (two.seeds, two.events, two.simulated_ms)
        );
        assert!(one.cpu_s > 0.0 && one.slowest_s <= one.cpu_s, "{one:?}");
    }
}
