//! Determinism: the same seed and binary give a byte-identical history. Each seed runs twice in
//! one process (so leftover global state would also show) and the history hashes must match;
//! different seeds must give different histories.

use std::collections::BTreeSet;

use groupsim::runner::{run_seed, run_seed_with, RunOptions, WorldKind};
use groupsim::scenarios;
use groupsim::testing::seeds;

#[test]
fn same_seed_gives_identical_history_for_many_seeds() {
    replays_bit_for_bit_and_seeds_differ(&RunOptions::default(), 50);
}

/// The turmoil world (`--world turmoil`) is just as deterministic.
#[test]
fn same_seed_gives_identical_history_for_many_seeds_in_the_turmoil_world() {
    let turmoil = RunOptions { world: WorldKind::Turmoil, ..RunOptions::default() };
    replays_bit_for_bit_and_seeds_differ(&turmoil, 50);
}

fn replays_bit_for_bit_and_seeds_differ(options: &RunOptions, default_count: u64) {
    let s = scenarios::find("membership_churn").expect("in catalogue");
    let mut distinct = BTreeSet::new();
    let seeds = seeds(default_count);
    for &seed in &seeds {
        let a = run_seed_with(&s, seed, options).expect("run a");
        let b = run_seed_with(&s, seed, options).expect("run b");
        assert_eq!(
            a.history_hash(),
            b.history_hash(),
            "seed {seed}: histories differ between runs"
        );
        assert_eq!(a.history.to_jsonl(), b.history.to_jsonl(), "seed {seed}");
        distinct.insert(a.history_hash().to_string());
    }
    assert_eq!(distinct.len(), seeds.len(), "different seeds should give different histories");
}

/// Faults, the nemesis, member restarts and broker crashes must be just as deterministic: every
/// scenario in the catalogue, a few seeds each, twice.
#[test]
fn every_scenario_replays_bit_for_bit() {
    for s in scenarios::catalogue() {
        let seeds: u64 = if s.name == "join_storm" { 1 } else { 3 };
        for seed in 100..100 + seeds {
            let a = run_seed(&s, seed).expect("run a");
            let b = run_seed(&s, seed).expect("run b");
            assert_eq!(
                a.history_hash(),
                b.history_hash(),
                "{} seed {seed}: histories differ",
                s.name
            );
        }
    }
}

/// A run's verdict comes from the checker the world fed as the history grew (it reads each event
/// once); it must be the verdict the checker gives the saved history from scratch, in both
/// worlds, failing runs included (a bug switch on).
#[test]
fn the_verdict_read_as_the_run_went_is_the_checkers_verdict_on_the_history() {
    // One run per scenario, the worlds and the switch alternating, to keep the suite's time.
    let bug = groupsim::bugs::find("coordinator-skips-generation-check").expect("known switch");
    let catalogue = scenarios::catalogue().into_iter().filter(|s| s.name != "join_storm");
    for (i, s) in catalogue.enumerate() {
        let world = if i % 2 == 0 { WorldKind::Event } else { WorldKind::Turmoil };
        let bug = (i / 2 % 2 == 1).then_some(bug);
        let options = RunOptions { bug, world, ..RunOptions::default() };
        let run = run_seed_with(&s, 1, &options).expect("runs");
        let fresh = groupsim_checker::check(&run.history);
        assert_eq!(run.verdict, fresh, "{} ({}, {:?})", s.name, world.name(), bug.map(|b| b.name));
    }
}
