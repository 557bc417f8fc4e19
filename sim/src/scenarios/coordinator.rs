//! The coordinator on the move: coordinator moves with slow loads, broker crashes and
//! failover, while the group keeps rebalancing and committing.

use groupsim_coordinator::broker::group_partition;
use groupsim_wire::Millis;
use rand::RngExt;

use super::churn::membership_churn;
use super::shape::{at, base};
use crate::faults::{Fault, FaultSchedule, ScheduledFault};
use crate::rng::{self, Stream};
use crate::scenario::{ScenarioSpec, GROUP_ID};

/// The membership_churn workload on three brokers while the coordinator keeps moving: a
/// coordinator move every 3–9 s (a third of them slow loads of 2–6 s, the rest 0–500 ms) to a
/// drawn broker, and a broker crash every 10–20 s (restarted 3–12 s later), from 4 s until two
/// seconds before the liveness phase. Exercises unloading (parked joins and syncs get
/// NOT_COORDINATOR), loading from the offsets log (COORDINATOR_LOAD_IN_PROGRESS meanwhile),
/// failover after a crash, and commits staying durable across all of it.
pub fn coordinator_moves(seed: u64) -> ScenarioSpec {
    let mut spec = membership_churn(seed);
    spec.name = "coordinator_moves".into();
    spec.brokers = 3;
    let mut rng = rng::stream(seed, Stream::Faults);
    let end = spec.liveness_start_ms - 2_000;
    let mut faults = Vec::new();
    let mut at: Millis = rng.random_range(4_000..=7_000);
    while at < end {
        let to = rng.random_range(0..spec.brokers);
        let load_ms = if rng.random_range(0..3) == 0 {
            rng.random_range(2_000..=6_000)
        } else {
            rng.random_range(0..=500)
        };
        faults.push(ScheduledFault {
            at_ms: at,
            fault: Fault::CoordinatorMove { group: GROUP_ID.into(), to, load_ms },
        });
        at += rng.random_range(3_000..=9_000);
    }
    let mut at: Millis = rng.random_range(6_000..=12_000);
    while at < end {
        let node = rng.random_range(0..spec.brokers);
        let restart_after_ms = rng.random_range(3_000..=12_000).min(end - at);
        faults.push(ScheduledFault {
            at_ms: at,
            fault: Fault::BrokerCrash { node, restart_after_ms },
        });
        at += rng.random_range(10_000..=20_000);
    }
    spec.faults = FaultSchedule::new(faults);
    spec
}

/// The broker coordinating the group crashes; after the detection delay the group's offsets
/// partition moves to a live broker, which loads the group from the offsets log. Later the
/// coordinator moves once more (with a slow load).
pub fn coordinator_failover(seed: u64) -> ScenarioSpec {
    let (mut s, mut rng) = base("coordinator_failover", seed, 5, 3, 3, 60_000);
    let coordinator = group_partition(GROUP_ID, s.offsets_topic_partitions) % s.brokers;
    let crash =
        Fault::BrokerCrash { node: coordinator, restart_after_ms: rng.random_range(6_000..12_000) };
    // The failover picks one of the two other brokers; moving to each of them in turn makes at
    // least one real move whichever it picked (a move to the current coordinator is a no-op).
    let first = (coordinator + 1) % s.brokers;
    let second = (coordinator + 2) % s.brokers;
    let load_ms = rng.random_range(2_000..5_000);
    s.faults = FaultSchedule::new(vec![
        at(rng.random_range(12_000..18_000), crash),
        at(
            rng.random_range(32_000..36_000),
            Fault::CoordinatorMove { group: GROUP_ID.into(), to: first, load_ms },
        ),
        at(
            rng.random_range(42_000..46_000),
            Fault::CoordinatorMove { group: GROUP_ID.into(), to: second, load_ms: 300 },
        ),
    ]);
    s.liveness_bound_ms *= 2;
    s
}
