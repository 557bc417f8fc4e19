//! `groupsim bench`: throughput of standard scenarios (seeds per second, simulated seconds per
//! wall second, events per second). Wall-clock time is read here, outside any simulation.
//!
//! The three scenarios: a small steady group (`membership_churn`), the all-faults `swarm`, and a
//! 1,000-member join storm ([`join_storm_1000`]) run with a tenth of the seeds.

use std::fmt::Write as _;
use std::time::Instant;

use crate::runner::{self, RunReport};
use crate::scenario::ScenarioSpec;
use crate::scenarios::{self, storm::join_storm_1000};
use crate::world::WorldError;

/// One scenario's figures.
#[derive(Clone, Debug, Default)]
pub struct BenchRow {
    /// Scenario name.
    pub scenario: String,
    /// Seeds run.
    pub seeds: u64,
    /// Wall seconds for all of them.
    pub wall_s: f64,
    /// Simulated milliseconds, summed over seeds.
    pub simulated_ms: u64,
    /// History events, summed over seeds.
    pub events: u64,
    /// Seeds whose verdict had anomalies: (seed, first anomaly class).
    pub failed: Vec<(u64, String)>,
    /// Seeds the harness could not run: (seed, error).
    pub errors: Vec<(u64, String)>,
    /// The slowest seed's wall seconds.
    pub slowest_s: f64,
}

impl BenchRow {
    /// Seeds per wall second.
    pub fn seeds_per_s(&self) -> f64 {
        self.seeds as f64 / self.wall_s.max(1e-9)
    }

    /// Simulated seconds per wall second.
    pub fn sim_speed(&self) -> f64 {
        self.simulated_ms as f64 / 1000.0 / self.wall_s.max(1e-9)
    }

    /// History events per wall second.
    pub fn events_per_s(&self) -> f64 {
        self.events as f64 / self.wall_s.max(1e-9)
    }
}

/// Runs seeds `0..seeds` of `build` and measures them.
pub fn measure(name: &str, seeds: u64, build: impl Fn(u64) -> ScenarioSpec) -> BenchRow {
    let mut row = BenchRow { scenario: name.to_string(), seeds, ..Default::default() };
    let all = Instant::now();
    for seed in 0..seeds {
        let one = Instant::now();
        let run: Result<RunReport, WorldError> = runner::run_spec(build(seed));
        row.slowest_s = row.slowest_s.max(one.elapsed().as_secs_f64());
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
    row.wall_s = all.elapsed().as_secs_f64();
    row
}

/// The benchmark table.
pub fn table(rows: &[BenchRow]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<18} {:>6} {:>9} {:>9} {:>13} {:>11} {:>10} {:>7}",
        "scenario", "seeds", "wall s", "seeds/s", "sim s/wall s", "events/s", "slowest s", "failed"
    );
    for r in rows {
        let _ = writeln!(
            out,
            "{:<18} {:>6} {:>9.2} {:>9.2} {:>13.1} {:>11.0} {:>10.2} {:>7}",
            r.scenario,
            r.seeds,
            r.wall_s,
            r.seeds_per_s(),
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

/// Runs the benchmark and returns its report: `seeds` seeds of `membership_churn` and `swarm`,
/// and `max(1, seeds / 10)` of the 1,000-member join storm.
pub fn run(seeds: u64) -> Result<String, WorldError> {
    let mut rows = Vec::new();
    for name in ["membership_churn", "swarm"] {
        let s = scenarios::find(name).map_err(|e| WorldError::InvalidScenario {
            name: name.to_string(),
            reason: e.to_string(),
        })?;
        rows.push(measure(name, seeds, |seed| s.build(seed)));
    }
    rows.push(measure("join_storm_1000", (seeds / 10).max(1), join_storm_1000));
    let mut out = String::new();
    if cfg!(debug_assertions) {
        out.push_str(
            "note: debug build; run `cargo run --release -- bench` for representative figures\n",
        );
    }
    out.push_str(&table(&rows));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_lists_every_scenario_with_its_rates() {
        let row = BenchRow {
            scenario: "x".into(),
            seeds: 4,
            wall_s: 2.0,
            simulated_ms: 100_000,
            events: 5_000,
            failed: vec![(3, "stuck".into())],
            ..Default::default()
        };
        let t = table(&[row]);
        assert!(
            t.contains("seeds/s") && t.contains("sim s/wall s") && t.contains("events/s"),
            "{t}"
        );
        let line = t.lines().nth(1).unwrap();
        assert!(line.starts_with("x ") && line.contains("2.00") && line.contains("50.0"), "{line}");
        assert!(t.contains("x seed 3: checker found stuck"), "{t}");
    }
}
