//! The example's own scenario under `cargo test`, as a user runs it: `GROUPSIM_SEED=n` replays
//! one seed, `GROUPSIM_SEEDS=n` checks more.

use groupsim_example_custom_member::{recipe, Mistake};

/// The simple consumer, correct, passes every checked seed beside a Java consumer, under
/// dropped connections, coordinator moves and member crashes.
#[test]
fn the_simple_consumer_passes_its_scenario() {
    let runs = recipe(Mistake::None).expect("a valid recipe").check(8);
    assert!(runs.iter().all(|r| r.verdict.is_ok()));
}

/// The mistake: a member keeps the processed offsets of partitions it gave up in a rebalance
/// and commits them in a later generation, when another member owns them. Kafka's coordinator
/// checks the commit's generation, not its partitions, so it accepts the commit and the
/// partition's committed offset goes back: records are delivered twice. The checker catches it
/// from the history alone, and the same seed replays it exactly.
#[test]
fn the_stale_offsets_mistake_is_caught_with_a_replayable_seed() {
    let recipe = recipe(Mistake::StaleOffsets).expect("a valid recipe");
    let caught = (0..20u64)
        .map(|seed| recipe.run(seed).expect("the world runs"))
        .find(|run| !run.verdict.is_ok())
        .expect("the checker catches the stale commits within 20 seeds");
    let names: Vec<&str> = caught.verdict.anomalies.iter().map(|a| a.class.name()).collect();
    assert!(
        names.iter().any(|n| matches!(*n, "unowned-commit" | "offset-regression")),
        "{names:?}"
    );
    let report = recipe.failure_report(&caught);
    let replay = format!("GROUPSIM_SEED={} cargo test", caught.spec.seed);
    assert!(report.contains(&replay), "{report}");
    let again = recipe.run(caught.spec.seed).expect("the world runs");
    assert_eq!(again.history_hash(), caught.history_hash(), "the seed replays bit for bit");
}

/// A seed's rebalances, reviewed as an insta snapshot as the catalogue reviews its own: one
/// block per generation, then the verdict. A change to the member that changes how its group
/// rebalances shows up as a diff (`cargo insta review`).
#[test]
fn the_simple_consumers_rebalances_review_as_a_snapshot() {
    let recipe = recipe(Mistake::None).expect("a valid recipe");
    let run = recipe.run(1).expect("the world runs");
    assert!(run.verdict.is_ok(), "{}", recipe.failure_report(&run));
    let summary = groupsim::trace::summary(&run.history, &run.verdict);
    insta::with_settings!({ omit_expression => true }, {
        insta::assert_snapshot!("simple_consumer-seed1", summary);
    });
}
