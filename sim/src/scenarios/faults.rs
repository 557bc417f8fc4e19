//! One fault kind at a time against a steady group: connection flaps, zombie pauses, stale
//! acks, partition expansion, slow revokes.

use groupsim_member::ClientProfile;
use groupsim_wire::Millis;
use rand::RngExt;

use super::shape::{at, base};
use crate::faults::{Fault, FaultSchedule};
use crate::scenario::{member_config, ScenarioSpec};

/// Connections reset every few seconds; now and then a client host loses every broker for a
/// moment (segments lost: clients must time out and reconnect).
pub fn connection_flaps(seed: u64) -> ScenarioSpec {
    let (mut s, mut rng) = base("connection_flaps", seed, 5, 1, 3, 60_000);
    let mut faults = Vec::new();
    let mut t = 5_000;
    while t < 55_000 {
        let member = format!("m{}", rng.random_range(0..5));
        faults.push(at(t, Fault::ConnectionDrop { member }));
        t += rng.random_range(1_000..3_000);
    }
    for _ in 0..3 {
        let host = crate::world::orders::client_host(rng.random_range(0..3));
        let t = rng.random_range(8_000..50_000);
        faults.push(at(
            t,
            Fault::NetworkPartition {
                host,
                peers: vec![crate::world::orders::broker_host(0)],
                heal_after_ms: rng.random_range(1_000..4_000),
            },
        ));
    }
    s.faults = FaultSchedule::new(faults);
    s.liveness_bound_ms *= 2;
    s
}

/// A member stops the world for longer than its session timeout: the group rebalances without
/// it, and when it resumes it still believes it owns its partitions. Its commits must be fenced.
pub fn zombie_pause(seed: u64) -> ScenarioSpec {
    let (mut s, mut rng) = base("zombie_pause", seed, 4, 1, 2, 60_000);
    s.faults = FaultSchedule::new(vec![
        at(
            rng.random_range(10_000..15_000),
            Fault::MemberPause {
                member: "m1".into(),
                duration_ms: rng.random_range(15_000..22_000),
            },
        ),
        at(
            rng.random_range(38_000..42_000),
            Fault::MemberPause {
                member: "m2".into(),
                duration_ms: rng.random_range(12_000..15_000),
            },
        ),
    ]);
    s.liveness_bound_ms *= 2;
    s
}

/// brod members (acks carry their generation) whose in-flight processing finishes long after a
/// rebalance took the partition away; members join meanwhile so rebalances do happen.
pub fn stale_acks(seed: u64) -> ScenarioSpec {
    let (mut s, mut rng) = base("stale_acks", seed, 5, 1, 3, 60_000);
    for m in &mut s.members {
        m.config = member_config(&m.name, ClientProfile::Brod);
    }
    for m in s.members.iter_mut().skip(3) {
        m.start_ms = rng.random_range(12_000..35_000);
    }
    let mut faults = Vec::new();
    for k in 0..6 {
        let member = format!("m{}", rng.random_range(0..3));
        let t = 8_000 + k * 7_000 + rng.random_range(0..3_000);
        faults.push(at(t, Fault::StaleAck { member, delay_ms: rng.random_range(5_000..15_000) }));
    }
    s.faults = FaultSchedule::new(faults);
    s.liveness_bound_ms *= 2;
    s
}

/// Both topics gain partitions mid-run.
pub fn partition_expansion(seed: u64) -> ScenarioSpec {
    let (mut s, mut rng) = base("partition_expansion", seed, 4, 1, 2, 60_000);
    s.faults = FaultSchedule::new(vec![
        at(
            rng.random_range(12_000..20_000),
            Fault::PartitionExpansion { topic: "orders".into(), partitions: 12 },
        ),
        at(
            rng.random_range(28_000..40_000),
            Fault::PartitionExpansion { topic: "payments".into(), partitions: 6 },
        ),
    ]);
    s
}

/// Revoke callbacks outlast the rebalance timeout while new members join: slow members are
/// removed from the generation and must rejoin.
pub fn slow_revoke(seed: u64) -> ScenarioSpec {
    let (mut s, mut rng) = base("slow_revoke", seed, 5, 1, 3, 60_000);
    let mut faults = Vec::new();
    for (k, m) in s.members.iter_mut().skip(3).enumerate() {
        m.start_ms = 15_000 + k as Millis * 15_000 + rng.random_range(0..2_000);
        for v in 0..2 {
            let member = format!("m{}", rng.random_range(0..3));
            let extra_ms = if v == 0 {
                rng.random_range(16_000..22_000)
            } else {
                rng.random_range(2_000..6_000)
            };
            faults.push(at(m.start_ms - 1_000, Fault::SlowRevoke { member, extra_ms }));
        }
    }
    s.faults = FaultSchedule::new(faults);
    s.liveness_bound_ms *= 2;
    s
}
