//! Helpers for scenario tests (`scenarios/tests/*.rs`): which seeds to run, and a failure
//! message that names the seed, the first anomaly and the command that replays it.
//!
//! - `GROUPSIM_SEED=<n>` runs exactly that seed (what a failure tells you to run).
//! - `GROUPSIM_SEEDS=<count>` runs seeds `GROUPSIM_SEED_START..start+count` (default start 0);
//!   without it a test runs its own default count, sized for CI.

use crate::runner::{self, RunOptions, RunReport};
use crate::scenarios;
pub use crate::seeds::seeds;

/// Runs `scenario` over [`seeds`] and panics on the first failing seed with its report (the
/// history is also written under `target/groupsim/`).
pub fn check_scenario(name: &str, default_count: u64) -> Vec<RunReport> {
    check_scenario_with(name, default_count, &RunOptions::default())
}

/// [`check_scenario`] with run options (a bug switch, the event world).
pub fn check_scenario_with(name: &str, default_count: u64, options: &RunOptions) -> Vec<RunReport> {
    let scenario = scenarios::find(name).unwrap_or_else(|e| panic!("{e}"));
    let mut reports = Vec::new();
    for seed in seeds(default_count) {
        let report = match runner::run_seed_with(&scenario, seed, options) {
            Ok(r) => r,
            Err(e) => {
                let replay = match options.args() {
                    args if args.is_empty() => runner::test_replay_command(name, seed),
                    args => runner::replay_command(name, seed) + &args,
                };
                panic!("scenario {name} seed {seed}: the harness failed: {e}\nreplay: {replay}")
            }
        };
        if !report.verdict.is_ok() {
            let saved = report
                .save_history()
                .map(|p| format!("history written to {}", p.display()))
                .unwrap_or_else(|e| format!("could not write the history: {e}"));
            panic!("{}{saved}", report.failure_report());
        }
        reports.push(report);
    }
    reports
}

/// `scenario`'s seed `seed` on the fault schedule saved in `path` (JSON, as `explore`, `shrink`
/// and `replay` write it), checked in the world `options` names: a finding kept as a regression
/// test runs exactly as its printed replay command does. Panics, naming the file, when it cannot
/// be read or is not a simulated schedule, or when the scenario is unknown.
pub fn run_schedule_file(scenario: &str, seed: u64, path: &str, options: &RunOptions) -> RunReport {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let schedule =
        crate::faults::FaultSchedule::from_json_for(&text, crate::faults::Mode::Simulated)
            .unwrap_or_else(|e| panic!("{path}: {e}"));
    let s = scenarios::find(scenario).unwrap_or_else(|e| panic!("{e}"));
    let options = RunOptions { schedule: Some(schedule), ..options.clone() };
    runner::run_seed_with(&s, seed, &options)
        .unwrap_or_else(|e| panic!("{scenario} seed {seed} on {path}: {e}"))
}
