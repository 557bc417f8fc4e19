//! `swarm_cooperative`: the swarm's fault kinds and event triggers, drawn per seed as the swarm
//! draws them, on Java cooperative consumers (cooperative-sticky, KIP-429). Cooperative members
//! keep their partitions, and keep consuming them, while a rebalance runs, so the faults land on
//! members that own partitions with progress not yet committed; the checker must find no
//! anomaly and the group must converge after the safety phase.
//!
//! Seeds: `GROUPSIM_SEEDS=<n>` (default sized for CI), or `GROUPSIM_SEED=<n>` to replay one.

use groupsim::testing::check_scenario;
use groupsim_history::{CoordinatorEvent, EventKind, WorldEvent};
use groupsim_member::probes::COOPERATIVE_REBALANCE_WITH_PROGRESS;

#[test]
fn swarm_cooperative_passes_the_checker_rebalancing_cooperatively_under_faults() {
    let reports = check_scenario("swarm_cooperative", 12);
    let mut injected = 0;
    let mut with_progress = 0;
    for r in &reports {
        let seed = r.spec.seed;
        assert!(r.spec.swarm.is_some(), "seed {seed}: the scenario records its swarm choice");
        for e in r.history.events() {
            match &e.kind {
                // Every generation with members runs cooperative-sticky (an empty one has no
                // protocol).
                EventKind::Coordinator {
                    event: CoordinatorEvent::GenerationStarted { protocol, members, .. },
                    ..
                } if !members.is_empty() => {
                    assert_eq!(protocol.as_deref(), Some("cooperative-sticky"), "seed {seed}")
                }
                EventKind::World(WorldEvent::FaultInjected { applied: true, .. }) => injected += 1,
                _ => {}
            }
        }
        if r.probes.contains_key(COOPERATIVE_REBALANCE_WITH_PROGRESS.name) {
            with_progress += 1;
        }
    }
    // The sweep really exercised faults, and most seeds rebalanced while a kept partition had
    // progress not yet committed (the state this scenario exists to reach).
    assert!(injected >= reports.len(), "only {injected} faults over {} seeds", reports.len());
    assert!(
        with_progress * 2 > reports.len(),
        "only {with_progress} of {} seeds rebalanced with uncommitted progress on a kept partition",
        reports.len()
    );
}
