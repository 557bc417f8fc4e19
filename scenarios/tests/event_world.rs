//! The event world (`--world event`): the same cores, codec, history and checker as the turmoil
//! world, driven by one event queue. Its runs must pass the checker like the turmoil world's (and
//! replay bit for bit: see determinism.rs).
//!
//! Seeds: `GROUPSIM_SEEDS=<n>` (default sized for CI), or `GROUPSIM_SEED=<n>` to replay one.

use groupsim::runner::{run_seed_with, RunOptions, WorldKind};
use groupsim::scenarios;
use groupsim::testing::check_scenario_with;

fn event() -> RunOptions {
    RunOptions { world: WorldKind::Event, ..RunOptions::default() }
}

#[test]
fn steady_state_passes_the_checker_in_the_event_world() {
    for r in check_scenario_with("steady_state", 20, &event()) {
        let s = &r.verdict.stats;
        assert!(s.commits_accepted > 0, "seed {}: no commit", r.spec.seed);
        assert_eq!(s.records_processed, s.records_produced, "seed {}", r.spec.seed);
    }
}

#[test]
fn membership_churn_passes_the_checker_in_the_event_world() {
    for r in check_scenario_with("membership_churn", 20, &event()) {
        let s = &r.verdict.stats;
        assert!(s.rebalances >= 4, "seed {}: only {} rebalances", r.spec.seed, s.rebalances);
    }
}

#[test]
fn the_event_world_draws_its_own_history_for_a_seed() {
    let s = scenarios::find("steady_state").expect("in catalogue");
    let turmoil = run_seed_with(&s, 1, &RunOptions::default()).expect("turmoil run");
    let event = run_seed_with(&s, 1, &event()).expect("event run");
    assert_ne!(turmoil.history_hash, event.history_hash);
    assert_eq!(event.extra_args, " --world event", "replay commands name the world");
}

/// Every scenario of the catalogue, a few seeds each (`GROUPSIM_SEEDS` for more): the faults
/// each one relies on are re-modelled by the event world, and the checker must pass them all.
#[test]
fn every_scenario_passes_the_checker_in_the_event_world() {
    for s in scenarios::catalogue() {
        let count = if s.name == "join_storm" { 1 } else { 3 };
        let reports = check_scenario_with(s.name, count, &event());
        assert!(!reports.is_empty(), "{}", s.name);
    }
}
