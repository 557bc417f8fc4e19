//! Membership churn: members join and leave over time, with no faults — the workload most
//! other families reuse (`coordinator_moves`, the client profiles).

use groupsim_coordinator::CoordinatorConfig;
use groupsim_member::{ClientProfile, MemberConfig};
use groupsim_wire::Millis;
use rand::RngExt;

use super::shape::base;
use crate::faults::FaultSchedule;
use crate::rng::{self, Stream};
use crate::scenario::{
    member_config, widest_liveness_bound, MemberPlan, ProducerPlan, ScenarioSpec, LATENCY_MS,
    OFFSETS_TOPIC_PARTITIONS, TICK_MS,
};

/// Members join and leave over time: three start together, three more join one by one, then
/// four leave one by one, leaving two. Exercises eager rebalances triggered by joins and by
/// LeaveGroup, commits on revoke, and resumption from committed offsets by new owners.
pub fn membership_churn(seed: u64) -> ScenarioSpec {
    churn_spec("membership_churn", seed, |_, name| member_config(name, ClientProfile::JavaEager))
}

/// `membership_churn`'s shape: three members start together, three join one by one, four leave
/// one by one; member `i` is configured by `config(i, name)`.
pub fn churn_spec(
    name: &str,
    seed: u64,
    config: impl Fn(usize, &str) -> MemberConfig,
) -> ScenarioSpec {
    let mut rng = rng::stream(seed, Stream::Workload);
    let coordinator = CoordinatorConfig { initial_rebalance_delay_ms: 1_000, ..Default::default() };
    let mut members = Vec::new();
    for i in 0..6u32 {
        let member = format!("m{i}");
        let start_ms =
            if i < 3 { rng.random_range(0..500) } else { rng.random_range(8_000..25_000) };
        members.push(MemberPlan {
            host: i as usize % 2,
            start_ms,
            leave_ms: None,
            config: config(i as usize, &member),
            seed: rng::sub_seed(seed, Stream::Member(i)),
            name: member,
            plugin: None,
        });
    }
    let mut order: Vec<usize> = (0..6).collect();
    for i in (1..order.len()).rev() {
        let j = rng.random_range(0..=i);
        order.swap(i, j);
    }
    let mut last_change = 0;
    for (k, &i) in order.iter().take(4).enumerate() {
        let at = 32_000 + k as Millis * 6_000 + rng.random_range(0..4_000);
        members[i].leave_ms = Some(at);
        last_change = last_change.max(at);
    }
    let liveness_start_ms = last_change.max(60_000);
    let liveness_bound_ms = widest_liveness_bound(&members, &coordinator);
    ScenarioSpec {
        name: name.into(),
        seed,
        tick_ms: TICK_MS,
        latency_ms: LATENCY_MS,
        brokers: 1,
        offsets_topic_partitions: OFFSETS_TOPIC_PARTITIONS,
        coordinator,
        topics: vec![("orders".into(), 8), ("payments".into(), 4)],
        client_hosts: 2,
        members,
        producer: ProducerPlan {
            records_per_sec: (2, 20),
            stop_ms: liveness_start_ms,
            lulls: Vec::new(),
        },
        liveness_start_ms,
        liveness_bound_ms,
        swarm: None,
        faults: FaultSchedule::default(),
        network: Default::default(),
    }
}

/// Four members, no faults: the baseline every other scenario departs from.
pub fn steady_state(seed: u64) -> ScenarioSpec {
    let (mut s, mut rng) = base("steady_state", seed, 4, 1, 2, 40_000);
    // Everyone starts within the initial rebalance delay: one generation.
    for m in &mut s.members {
        m.start_ms = rng.random_range(0..500);
    }
    s
}

/// Two members, scaled to eight, then down to three: every join and LeaveGroup rebalances.
pub fn scale_up_down(seed: u64) -> ScenarioSpec {
    let (mut s, mut rng) = base("scale_up_down", seed, 8, 1, 3, 60_000);
    for m in s.members.iter_mut().skip(2) {
        m.start_ms = rng.random_range(8_000..22_000);
    }
    for m in s.members.iter_mut().skip(3) {
        m.leave_ms = Some(rng.random_range(32_000..52_000));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn membership_churn_goes_three_to_six_to_two() {
        for seed in 0..50 {
            let s = membership_churn(seed);
            let live_at = |t: Millis| {
                s.members
                    .iter()
                    .filter(|m| m.start_ms <= t && m.leave_ms.is_none_or(|l| l > t))
                    .count()
            };
            assert_eq!(live_at(1_000), 3, "seed {seed}");
            assert_eq!(live_at(30_000), 6, "seed {seed}");
            assert_eq!(live_at(s.liveness_start_ms), 2, "seed {seed}");
            assert_eq!(s.topics.iter().map(|t| t.1).sum::<i32>(), 12);
        }
    }

    #[test]
    fn same_seed_same_spec_and_different_seeds_differ() {
        assert_eq!(membership_churn(7), membership_churn(7));
        assert_ne!(membership_churn(7), membership_churn(8));
    }
}
