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

/// Regression: swarm seed 361 reported a regressed, lost and duplicated commit for correct Kafka
/// behaviour. Mechanism: member m1 sent a commit of orders-2 at offset 416 while a latency spike
/// slowed broker-1's links; its connections were dropped, it reconnected and committed 419,
/// and the old connection's commit of 416 was validated after it, half a second later — the
/// event world drew each frame's latency on its own, so a frame on the new connection overtook
/// one sent earlier on the old connection over the same path by more than a second. Two TCP
/// connections between the same hosts share the path (a spike is queueing on it), so a frame
/// now lands at most the link's normal jitter before an earlier one of another connection.
#[test]
fn a_later_connection_does_not_overtake_an_earlier_one_through_a_latency_spike() {
    let s = groupsim::scenarios::find("swarm").expect("in catalogue");
    let r = groupsim::runner::run_seed(&s, 361).expect("runs");
    assert!(r.verdict.is_ok(), "{}", r.failure_report());
    let spikes = r.history.events().iter().filter(|e| {
        matches!(&e.kind, EventKind::World(WorldEvent::FaultInjected { fault, applied: true })
            if format!("{fault:?}").starts_with("LatencySpike"))
    });
    assert!(spikes.count() > 0, "seed 361 still draws the latency spike it needs");
}
