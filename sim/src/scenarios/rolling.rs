//! Rolling restarts and upgrades, as in a deployment: members bounce one at a time.

use groupsim_member::{AssignorKind, ClientProfile};
use groupsim_wire::Millis;
use rand::RngExt;

use super::shape::{at, base};
use crate::faults::{Fault, FaultSchedule};
use crate::record::IntoHistory;
use crate::scenario::ScenarioSpec;

/// Members restart one at a time, as in a deployment: each leaves the group (LeaveGroup) and
/// comes back a few seconds later as a new member.
pub fn rolling_restart(seed: u64) -> ScenarioSpec {
    let (mut s, mut rng) = base("rolling_restart", seed, 5, 1, 3, 60_000);
    s.faults = FaultSchedule::new(
        (0..5)
            .map(|i| {
                let t = 10_000 + i as Millis * 8_000 + rng.random_range(0..2_000);
                let fault = Fault::MemberLeave {
                    member: format!("m{i}"),
                    restart_after_ms: rng.random_range(2_000..4_000),
                };
                at(t, fault)
            })
            .collect(),
    );
    s
}

/// Static members (group.instance.id) restart one at a time without LeaveGroup, back within the
/// session timeout: the coordinator replaces each old member id without a rebalance.
pub fn rolling_restart_static(seed: u64) -> ScenarioSpec {
    let (mut s, mut rng) = base("rolling_restart_static", seed, 5, 1, 3, 60_000);
    for m in &mut s.members {
        m.config.group_instance_id = Some(format!("instance-{}", m.name));
    }
    s.faults = FaultSchedule::new(
        (0..5)
            .map(|i| {
                let t = 10_000 + i as Millis * 8_000 + rng.random_range(0..2_000);
                let fault = Fault::MemberCrash {
                    member: format!("m{i}"),
                    restart_after_ms: rng.random_range(1_000..3_000),
                };
                at(t, fault)
            })
            .collect(),
    );
    s
}

/// An eager-to-cooperative rolling upgrade in two bounces (Kafka's documented path): first every
/// member restarts offering [cooperative-sticky, range] (still eager: the group keeps range until
/// all support cooperative-sticky), then every member restarts offering only cooperative-sticky.
pub fn cooperative_upgrade(seed: u64) -> ScenarioSpec {
    let (mut s, mut rng) = base("cooperative_upgrade", seed, 4, 1, 2, 75_000);
    for m in &mut s.members {
        m.config.assignors = vec![AssignorKind::Range];
    }
    let mut faults = Vec::new();
    for bounce in 0..2 {
        for i in 0..4 {
            let t = 8_000 + bounce * 32_000 + i as Millis * 7_000 + rng.random_range(0..2_000);
            let (profile, assignors) = if bounce == 0 {
                (
                    ClientProfile::JavaEager,
                    vec![AssignorKind::CooperativeSticky, AssignorKind::Range],
                )
            } else {
                (ClientProfile::JavaCooperative, vec![AssignorKind::CooperativeSticky])
            };
            let fault = Fault::MemberUpgrade {
                member: format!("m{i}"),
                restart_after_ms: rng.random_range(1_000..3_000),
                profile: profile.into_history(),
                assignors: assignors.into_iter().map(|a| a.into_history()).collect(),
            };
            faults.push(at(t, fault));
        }
    }
    s.faults = FaultSchedule::new(faults);
    s
}
