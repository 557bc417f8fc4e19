//! Client-profile scenarios: the `membership_churn` workload (3 -> 6 -> 2 members on 2 topics /
//! 12 partitions) run by members that behave like one client each — the Java consumer (eager or
//! cooperative), brod, Elsa, kafka-go — and by a group mixing them.
//!
//! Every membership change rebalances the group, so each profile's commit policy (what it
//! commits, when, under which generation) and its handling of work that outlives a revocation
//! meets the checker on every seed.

use groupsim_member::{AssignorKind, ClientProfile, MemberConfig};

use super::churn::churn_spec;
use crate::scenario::{member_config, ScenarioSpec};

/// In a mixed group every member also offers `roundrobin`, the one protocol all five clients
/// can share (brod and Elsa through a protocol name of their own choosing).
pub(super) fn mixed_member_config(name: &str, profile: ClientProfile) -> MemberConfig {
    let mut c = member_config(name, profile);
    c.assignors = match profile {
        ClientProfile::JavaEager => vec![AssignorKind::Range, AssignorKind::RoundRobin],
        ClientProfile::JavaCooperative => {
            vec![AssignorKind::CooperativeSticky, AssignorKind::RoundRobin]
        }
        ClientProfile::Brod | ClientProfile::Elsa => {
            vec![AssignorKind::RoundRobinV2, AssignorKind::RoundRobin]
        }
        ClientProfile::KafkaGo => vec![AssignorKind::RoundRobin, AssignorKind::Range],
        // Consumer-protocol members offer no client-side assignor (KIP-848 assigns on the
        // coordinator).
        ClientProfile::JavaConsumer | ClientProfile::LibrdkafkaConsumer => Vec::new(),
    };
    c
}

/// Every member runs `profile` with that client's default assignors.
pub fn single_profile_spec(name: &str, seed: u64, profile: ClientProfile) -> ScenarioSpec {
    churn_spec(name, seed, |_, member| member_config(member, profile))
}

/// Every member a Java eager consumer.
pub fn profile_java_eager(seed: u64) -> ScenarioSpec {
    single_profile_spec("profile_java_eager", seed, ClientProfile::JavaEager)
}

/// Every member a Java cooperative consumer.
pub fn profile_java_cooperative(seed: u64) -> ScenarioSpec {
    single_profile_spec("profile_java_cooperative", seed, ClientProfile::JavaCooperative)
}

/// Every member a brod client.
pub fn profile_brod(seed: u64) -> ScenarioSpec {
    single_profile_spec("profile_brod", seed, ClientProfile::Brod)
}

/// Every member an Elsa client.
pub fn profile_elsa(seed: u64) -> ScenarioSpec {
    single_profile_spec("profile_elsa", seed, ClientProfile::Elsa)
}

/// Every member a kafka-go client.
pub fn profile_kafka_go(seed: u64) -> ScenarioSpec {
    single_profile_spec("profile_kafka_go", seed, ClientProfile::KafkaGo)
}

/// Members cycle through the five profiles (m5 is Java eager again).
pub fn mixed_profiles(seed: u64) -> ScenarioSpec {
    churn_spec("mixed_profiles", seed, |i, member| {
        mixed_member_config(member, ClientProfile::CLASSIC[i % ClientProfile::CLASSIC.len()])
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
        for p in ClientProfile::CLASSIC {
            assert!(spec.members.iter().any(|m| m.config.profile == p), "{p:?} missing");
        }
        for m in &spec.members {
            assert!(m.config.assignors.contains(&AssignorKind::RoundRobin), "{}", m.name);
        }
    }
}
