//! Join storms: hundreds or a thousand members join one group within seconds.

use groupsim_member::ClientProfile;
use rand::RngExt;

use super::shape::base;
use crate::recipe::Recipe;
use crate::scenario::{liveness_bound, ScenarioSpec};

/// Hundreds of members join within seconds (several per client host, as consumers share
/// machines): the join phase must collect them all without losing or double-assigning.
pub fn join_storm(seed: u64) -> ScenarioSpec {
    let (mut s, mut rng) = base("join_storm", seed, 200, 1, 8, 40_000);
    s.topics = vec![("orders".into(), 64), ("payments".into(), 32)];
    for m in &mut s.members {
        m.start_ms = rng.random_range(0..5_000);
    }
    s
}

/// Members in the join storm.
pub const STORM_MEMBERS: u32 = 1_000;
/// Client hosts the storm's members share (turmoil's cost grows with the square of hosts).
pub const STORM_HOSTS: usize = 10;
/// Partitions of the storm's topic.
pub const STORM_PARTITIONS: i32 = 64;

/// A join storm: `STORM_MEMBERS` members on `STORM_HOSTS` client hosts all start within 3 s and
/// join one group on a single broker; one topic of `STORM_PARTITIONS` partitions, so most members
/// get nothing. About 60 simulated seconds: the join phase must gather a thousand JoinGroups,
/// then heartbeats from every member keep the coordinator busy.
pub fn join_storm_1000(seed: u64) -> ScenarioSpec {
    let recipe = Recipe::builder("join_storm_1000")
        .client_hosts(STORM_HOSTS)
        .topic("storm", STORM_PARTITIONS)
        .members(STORM_MEMBERS as usize, ClientProfile::JavaEager)
        .producer_rate(1, 5)
        .safety_phase_ms(30_000)
        .build()
        .unwrap_or_else(|e| panic!("the join storm is a valid recipe: {e}"));
    let mut spec = recipe.spec(seed);
    spec.liveness_bound_ms = liveness_bound(&spec.members[0].config, &spec.coordinator);
    spec
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn join_storm_has_a_thousand_members_on_ten_hosts_starting_within_three_seconds() {
        let s = join_storm_1000(3);
        assert_eq!(s.members.len(), 1_000);
        assert!(s.members.iter().all(|m| m.host < STORM_HOSTS && m.start_ms < 3_000));
        assert_eq!(s.client_hosts, STORM_HOSTS);
        assert_eq!(s.brokers, 1);
        assert_eq!(s.topics, vec![("storm".to_string(), STORM_PARTITIONS)]);
        // A bounded run: 30 s of joining and steady state, then the shared liveness bound.
        assert!(s.end_ms() <= 75_000, "{}", s.end_ms());
        assert_eq!(join_storm_1000(3), s);
    }
}
