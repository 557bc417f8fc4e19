//! Client-profile scenarios: the `membership_churn` workload (3 -> 6 -> 2 members on 2 topics /
//! 12 partitions) run by members that behave like one client each — the Java consumer (eager or
//! cooperative), brod, Elsa, kafka-go — and by a group mixing them.
//!
//! Every membership change rebalances the group, so each profile's commit policy (what it
//! commits, when, under which generation) and its handling of work that outlives a revocation
//! meets the checker on every seed.

use groupsim_member::{AssignorKind, ClientProfile, MemberConfig};

pub use groupsim_member::{ClientProfile as Profile, MemberBugs, MemberEvent, TopicPartition};

pub use crate::scenario::churn_spec;
use crate::scenario::{Scenario, ScenarioSpec, GROUP_ID};

/// The profile scenarios.
pub fn scenarios() -> Vec<Scenario> {
    vec![
        Scenario::new(
            "profile_java_eager",
            "membership churn with Java eager consumers: auto-commit, commitSync on revoke, \
             max.poll.interval enforced",
            profile_java_eager,
        ),
        Scenario::new(
            "profile_java_cooperative",
            "membership churn with Java cooperative consumers (cooperative-sticky, KIP-429): \
             kept partitions are never revoked, moved ones take two rebalances",
            profile_java_cooperative,
        ),
        Scenario::new(
            "profile_brod",
            "membership churn with brod members: asynchronous acks carrying the generation, \
             timer commits, one commit attempt before rejoining, roundrobin_v2",
            profile_brod,
        ),
        Scenario::new(
            "profile_elsa",
            "membership churn with Elsa members: per-partition workers stopped on revoke, acks \
             through a generation-aware acknowledger",
            profile_elsa,
        ),
        Scenario::new(
            "profile_kafka_go",
            "membership churn with kafka-go members: commits scoped to a generation, no commit \
             on revoke, join backoff, partition watcher",
            profile_kafka_go,
        ),
        Scenario::new(
            "mixed_profiles",
            "membership churn in one group mixing Java eager, Java cooperative (eager mode: it \
             also offers roundrobin), brod, Elsa and kafka-go members; roundrobin wins the vote",
            mixed_profiles,
        ),
    ]
}

/// A member of profile `profile` with the catalogue's timeouts (as `membership_churn`'s).
pub fn profile_member_config(name: &str, profile: ClientProfile) -> MemberConfig {
    let mut c = MemberConfig::new(GROUP_ID, name, vec!["orders".into(), "payments".into()])
        .with_profile(profile);
    c.session_timeout_ms = 10_000;
    c.rebalance_timeout_ms = 15_000;
    c.heartbeat_interval_ms = 3_000;
    c.request_timeout_ms = 5_000;
    c.commit_interval_ms = 1_000;
    c.metadata_max_age_ms = 5_000;
    c
}

/// In a mixed group every member also offers `roundrobin`, the one protocol all five clients
/// can share (brod and Elsa through a protocol name of their own choosing).
fn mixed_member_config(name: &str, profile: ClientProfile) -> MemberConfig {
    let mut c = profile_member_config(name, profile);
    c.assignors = match profile {
        ClientProfile::JavaEager => vec![AssignorKind::Range, AssignorKind::RoundRobin],
        ClientProfile::JavaCooperative => {
            vec![AssignorKind::CooperativeSticky, AssignorKind::RoundRobin]
        }
        ClientProfile::Brod | ClientProfile::Elsa => {
            vec![AssignorKind::RoundRobinV2, AssignorKind::RoundRobin]
        }
        ClientProfile::KafkaGo => vec![AssignorKind::RoundRobin, AssignorKind::Range],
    };
    c
}

/// Every member runs `profile` with that client's default assignors.
pub fn single_profile_spec(name: &str, seed: u64, profile: ClientProfile) -> ScenarioSpec {
    churn_spec(name, seed, |_, member| profile_member_config(member, profile))
}

fn profile_java_eager(seed: u64) -> ScenarioSpec {
    single_profile_spec("profile_java_eager", seed, ClientProfile::JavaEager)
}

fn profile_java_cooperative(seed: u64) -> ScenarioSpec {
    single_profile_spec("profile_java_cooperative", seed, ClientProfile::JavaCooperative)
}

fn profile_brod(seed: u64) -> ScenarioSpec {
    single_profile_spec("profile_brod", seed, ClientProfile::Brod)
}

fn profile_elsa(seed: u64) -> ScenarioSpec {
    single_profile_spec("profile_elsa", seed, ClientProfile::Elsa)
}

fn profile_kafka_go(seed: u64) -> ScenarioSpec {
    single_profile_spec("profile_kafka_go", seed, ClientProfile::KafkaGo)
}

/// Members cycle through the five profiles (m5 is Java eager again).
fn mixed_profiles(seed: u64) -> ScenarioSpec {
    churn_spec("mixed_profiles", seed, |i, member| {
        mixed_member_config(member, ClientProfile::ALL[i % ClientProfile::ALL.len()])
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_profile_scenario_runs_its_profile() {
        let cases = [
            (profile_java_eager(3), ClientProfile::JavaEager),
            (profile_java_cooperative(3), ClientProfile::JavaCooperative),
            (profile_brod(3), ClientProfile::Brod),
            (profile_elsa(3), ClientProfile::Elsa),
            (profile_kafka_go(3), ClientProfile::KafkaGo),
        ];
        for (spec, profile) in cases {
            assert!(spec.members.iter().all(|m| m.config.profile == profile), "{}", spec.name);
            assert_eq!(spec.members.len(), 6);
        }
    }

    #[test]
    fn mixed_members_share_roundrobin_and_cover_every_profile() {
        let spec = mixed_profiles(5);
        for p in ClientProfile::ALL {
            assert!(spec.members.iter().any(|m| m.config.profile == p), "{p:?} missing");
        }
        for m in &spec.members {
            assert!(m.config.assignors.contains(&AssignorKind::RoundRobin), "{}", m.name);
        }
    }
}
