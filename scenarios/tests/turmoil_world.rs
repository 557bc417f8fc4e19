//! The turmoil world (`--world turmoil`): the same cores, codec, history and checker as the
//! default event world, hosted on turmoil's simulated TCP and stepped every 5 ms. It stays for
//! fidelity runs, so its runs must pass the checker like the event world's (and replay bit for
//! bit: see determinism.rs).
//!
//! Seeds: `GROUPSIM_SEEDS=<n>` (default sized for CI), or `GROUPSIM_SEED=<n>` to replay one.

use groupsim::runner::{run_seed_with, RunOptions, WorldKind};
use groupsim::scenarios;
use groupsim::testing::check_scenario_with;

fn turmoil() -> RunOptions {
    RunOptions { world: WorldKind::Turmoil, ..RunOptions::default() }
}

#[test]
fn steady_state_passes_the_checker_in_the_turmoil_world() {
    for r in check_scenario_with("steady_state", 20, &turmoil()) {
        let s = &r.verdict.stats;
        assert!(s.commits_accepted > 0, "seed {}: no commit", r.spec.seed);
        assert_eq!(s.records_processed, s.records_produced, "seed {}", r.spec.seed);
    }
}

#[test]
fn membership_churn_passes_the_checker_in_the_turmoil_world() {
    for r in check_scenario_with("membership_churn", 20, &turmoil()) {
        let s = &r.verdict.stats;
        assert!(s.rebalances >= 4, "seed {}: only {} rebalances", r.spec.seed, s.rebalances);
    }
}

#[test]
fn the_turmoil_world_draws_its_own_history_for_a_seed() {
    let s = scenarios::find("steady_state").expect("in catalogue");
    let event = run_seed_with(&s, 1, &RunOptions::default()).expect("event run");
    let turmoil = run_seed_with(&s, 1, &turmoil()).expect("turmoil run");
    assert_ne!(turmoil.history_hash(), event.history_hash());
    assert_eq!(turmoil.extra_args, " --world turmoil", "replay commands name the world");
    assert_eq!(event.extra_args, "", "the default world needs no argument");
}

/// Every scenario of the catalogue, a few seeds each (`GROUPSIM_SEEDS` for more), must pass the
/// checker in the turmoil world too.
#[test]
fn every_scenario_passes_the_checker_in_the_turmoil_world() {
    for s in scenarios::catalogue() {
        let count = if s.name == "join_storm" { 1 } else { 3 };
        let reports = check_scenario_with(s.name, count, &turmoil());
        assert!(!reports.is_empty(), "{}", s.name);
    }
}
