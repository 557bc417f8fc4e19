//! The event world (`--world event`): the same cores, codec, history and checker as the turmoil
//! world, driven by one event queue. Its runs must pass the checker like the turmoil world's,
//! replay bit for bit, and differ from seed to seed.
//!
//! Seeds: `GROUPSIM_SEEDS=<n>` (default sized for CI), or `GROUPSIM_SEED=<n>` to replay one.

use std::collections::BTreeSet;

use groupsim::runner::{run_seed_with, RunOptions, WorldKind};
use groupsim::scenarios;
use groupsim::testing::{check_scenario_with, seeds};

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
fn the_event_world_replays_bit_for_bit_and_seeds_differ() {
    let s = scenarios::find("membership_churn").expect("in catalogue");
    let seeds = seeds(30);
    let mut distinct = BTreeSet::new();
    for &seed in &seeds {
        let a = run_seed_with(&s, seed, &event()).expect("run a");
        let b = run_seed_with(&s, seed, &event()).expect("run b");
        assert_eq!(a.history_hash, b.history_hash, "seed {seed}: histories differ between runs");
        assert_eq!(a.history.to_jsonl(), b.history.to_jsonl(), "seed {seed}");
        distinct.insert(a.history_hash);
    }
    assert_eq!(distinct.len(), seeds.len(), "different seeds should give different histories");
}

#[test]
fn the_event_world_draws_its_own_history_for_a_seed() {
    let s = scenarios::find("steady_state").expect("in catalogue");
    let turmoil = run_seed_with(&s, 1, &RunOptions::default()).expect("turmoil run");
    let event = run_seed_with(&s, 1, &event()).expect("event run");
    assert_ne!(turmoil.history_hash, event.history_hash);
    assert_eq!(event.extra_args, " --world event", "replay commands name the world");
}
