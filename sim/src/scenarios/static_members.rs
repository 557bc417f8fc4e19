//! Static membership (KIP-345) under churn: members with a `group.instance.id` and a session
//! longer than the rebalance timeout, bounced, paused and cut off around rebalances.

use groupsim_member::{AssignorKind, ClientProfile};
use groupsim_wire::Millis;
use rand::RngExt;

use super::shape::{at, base};
use crate::faults::{Fault, FaultSchedule};
use crate::rng::{self, Stream};
use crate::scenario::{widest_liveness_bound, ScenarioSpec, GROUP_ID};
use crate::triggers::{Trigger, TriggerAction, TriggerEvent};
use crate::world::orders::{broker_host, client_host};

/// The static members' session timeout: twice their rebalance timeout.
const SESSION_MS: i32 = 30_000;
/// Their rebalance timeout (`max.poll.interval.ms`).
const REBALANCE_MS: i32 = 15_000;

/// Five static Java members (eager `range` or cooperative `cooperative-sticky`, drawn) with a
/// 30 s session and a 15 s rebalance timeout, and one dynamic member that joins and leaves to
/// start rebalances. Static members crash and come back within their session (the coordinator
/// replaces them, mid-rebalance too), one comes back only after it (removed, then a new
/// static member), one host is cut off from the brokers for longer than the rebalance timeout
/// but within the session; triggers pause the leader right after the JoinGroup answers for
/// longer than the rebalance timeout (its SyncGroup comes too late: the pending-sync timer) or
/// crash it there (a static leader replaced while the group completes its rebalance).
pub fn static_churn(seed: u64) -> ScenarioSpec {
    let (mut s, mut rng) = base("static_churn", seed, 6, 3, 3, 75_000);
    let (profile, assignor) = if rng.random_bool(0.5) {
        (ClientProfile::JavaEager, AssignorKind::Range)
    } else {
        (ClientProfile::JavaCooperative, AssignorKind::CooperativeSticky)
    };
    for m in &mut s.members {
        m.config.profile = profile;
        m.config.assignors = vec![assignor];
        m.config.rebalance_timeout_ms = REBALANCE_MS;
        if m.name != "m5" {
            m.config.group_instance_id = Some(format!("instance-{}", m.name));
            m.config.session_timeout_ms = SESSION_MS;
        }
    }
    // The dynamic member joins late and leaves before the end: two rebalances.
    s.members[5].start_ms = rng.random_range(14_000..18_000);
    s.members[5].leave_ms = Some(rng.random_range(44_000..50_000));
    s.liveness_bound_ms = widest_liveness_bound(&s.members, &s.coordinator);

    let mut frng = rng::stream(seed, Stream::Faults);
    let mut faults = Vec::new();
    for _ in 0..3 {
        let member = format!("m{}", frng.random_range(0..5));
        let t = frng.random_range(8_000..60_000);
        faults.push(at(
            t,
            Fault::MemberCrash { member, restart_after_ms: frng.random_range(1_000..4_000) },
        ));
    }
    let late = format!("m{}", frng.random_range(0..5));
    faults.push(at(
        frng.random_range(10_000..25_000),
        Fault::MemberCrash { member: late, restart_after_ms: frng.random_range(33_000..38_000) },
    ));
    faults.push(at(
        frng.random_range(20_000..55_000),
        Fault::NetworkPartition {
            host: client_host(frng.random_range(0..3)),
            peers: (0..s.brokers).map(broker_host).collect(),
            heal_after_ms: frng.random_range(16_000..24_000),
        },
    ));
    let to = frng.random_range(0..s.brokers);
    faults.push(at(
        frng.random_range(10_000..60_000),
        Fault::CoordinatorMove {
            group: GROUP_ID.into(),
            to,
            load_ms: frng.random_range(0..=1_500),
        },
    ));
    faults.sort_by_key(|f| f.at_ms);
    let mut trng = rng::stream(seed, Stream::Triggers);
    let triggers = vec![
        Trigger {
            id: 0,
            on: TriggerEvent::JoinResponses,
            action: TriggerAction::Pause {
                duration_ms: trng
                    .random_range(REBALANCE_MS as Millis + 1_000..SESSION_MS as Millis - 6_000),
            },
            per_mille: trng.random_range(300..=700),
            max_fires: 1,
        },
        Trigger {
            id: 1,
            on: TriggerEvent::JoinResponses,
            action: TriggerAction::Crash { restart_after_ms: trng.random_range(500..3_000) },
            per_mille: trng.random_range(300..=700),
            max_fires: 1,
        },
    ];
    s.faults = FaultSchedule::new(faults).with_triggers(triggers);
    s
}
