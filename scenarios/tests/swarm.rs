//! `swarm`: every fault kind is available to a seeded swarm. Each seed enables a random subset of
//! kinds at random rates (swarm testing: different seeds explore different fault mixes), applies
//! them during a 60 s safety phase, then heals everything; the group must converge within the
//! liveness bound and the checker must find no anomaly.
//!
//! Seeds: `GROUPSIM_SEEDS=<n>` (default sized for CI), or `GROUPSIM_SEED=<n>` to replay one.

use groupsim::testing::check_scenario;
use groupsim_history::{EventKind, WorldEvent};

#[test]
fn swarm_passes_the_checker() {
    let reports = check_scenario("swarm", 24);
    let mut injected = 0;
    for r in &reports {
        assert!(r.spec.swarm.is_some(), "swarm scenario records its swarm choice");
        injected += r
            .history
            .events()
            .iter()
            .filter(|e| {
                matches!(e.kind, EventKind::World(WorldEvent::FaultInjected { applied: true, .. }))
            })
            .count();
    }
    // The sweep really exercised faults (not a run of quiet seeds).
    assert!(
        injected >= reports.len(),
        "only {injected} faults applied over {} seeds",
        reports.len()
    );
}
