//! Membership churn: members join and leave over time, with no faults — the workload most
//! other families reuse (`coordinator_moves`, the client profiles).

use groupsim_member::{ClientProfile, MemberConfig};
use groupsim_wire::Millis;
use rand::RngExt;

use super::shape::base;
use crate::recipe::Recipe;
use crate::scenario::{member_config, widest_liveness_bound, ScenarioSpec};

/// Members join and leave over time: three start together, three more join one by one, then
/// four leave one by one, leaving two. Exercises eager rebalances triggered by joins and by
/// LeaveGroup, commits on revoke, and resumption from committed offsets by new owners.
pub fn membership_churn(seed: u64) -> ScenarioSpec {
    churn_spec("membership_churn", seed, |_, name| member_config(name, ClientProfile::JavaEager))
}

/// `membership_churn`'s shape, a [`Recipe`]: three members start together, three join one by
/// one, four leave one by one; member `i` is configured by `config(i, name)`.
pub fn churn_spec(
    name: &str,
    seed: u64,
    config: impl Fn(usize, &str) -> MemberConfig,
) -> ScenarioSpec {
    let configs: Vec<MemberConfig> = (0..6).map(|i| config(i, &format!("m{i}"))).collect();
    let mut recipe = Recipe::builder(name)
        .client_hosts(2)
        .topic("orders", 8)
        .topic("payments", 4)
        .coordinator(|c| c.initial_rebalance_delay_ms = 1_000)
        .safety_phase_ms(CHURN_SAFETY_MS);
    for (i, c) in configs.iter().enumerate() {
        let window = if i < 3 { 0..500 } else { 8_000..25_000 };
        recipe = recipe.members_starting(1, c.profile, window);
    }
    let recipe = recipe
        .configure(move |name, c| {
            let i: usize = name[1..].parse().expect("members are named m0, m1, ...");
            *c = configs[i].clone();
        })
        .build()
        .unwrap_or_else(|e| panic!("membership_churn's shape is a valid recipe: {e}"));
    let (mut spec, mut rng) = recipe.draw(seed);
    let mut order: Vec<usize> = (0..spec.members.len()).collect();
    for i in (1..order.len()).rev() {
        let j = rng.random_range(0..=i);
        order.swap(i, j);
    }
    let mut last_change = 0;
    for (k, &i) in order.iter().take(4).enumerate() {
        let at = 32_000 + k as Millis * 6_000 + rng.random_range(0..4_000);
        spec.members[i].leave_ms = Some(at);
        last_change = last_change.max(at);
    }
    let liveness_start_ms = last_change.max(CHURN_SAFETY_MS);
    spec.producer.stop_ms = liveness_start_ms;
    spec.liveness_start_ms = liveness_start_ms;
    spec.liveness_bound_ms = widest_liveness_bound(&spec.members, &spec.coordinator);
    spec
}

/// The shortest safety phase of `membership_churn`'s shape (it lasts until the last member left).
const CHURN_SAFETY_MS: Millis = 60_000;

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
