//! Static membership (KIP-345) under churn: members with a `group.instance.id` and a session
//! longer than the rebalance timeout, bounced, paused and cut off around rebalances.

use groupsim_member::{AssignorKind, ClientProfile};
use groupsim_wire::Millis;
use rand::seq::SliceRandom;
use rand::RngExt;

use super::shape::{at, base};
use crate::faults::{Fault, FaultSchedule};
use crate::rng::{self, Stream};
use crate::scenario::{widest_liveness_bound, MemberPlan, ScenarioSpec, GROUP_ID};
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
            after_ms: None,
        },
        Trigger {
            id: 1,
            on: TriggerEvent::JoinResponses,
            action: TriggerAction::Crash { restart_after_ms: trng.random_range(500..3_000) },
            per_mille: trng.random_range(300..=700),
            max_fires: 1,
            after_ms: None,
        },
    ];
    s.faults = FaultSchedule::new(faults).with_triggers(triggers);
    add_twin(&mut s, seed, 0..5, 50_000, TwinTiming::Alongside { within_ms: SESSION_MS as Millis });
    s
}

/// When a static member's twin starts, against the member it doubles.
pub(super) enum TwinTiming {
    /// While the member runs, or is paused within its session (`within_ms`): both processes
    /// are live, and the coordinator gives the instance to the twin's join (a classic static
    /// replacement) and fences the member on its next request.
    Alongside { within_ms: Millis },
    /// While the member is paused past its session (`session_ms`): the coordinator removed it,
    /// so the twin takes the instance over, and the member, resumed, is fenced (a consumer
    /// group refuses a second live member on an instance id: UNRELEASED_INSTANCE_ID).
    AfterRemoval { session_ms: Millis },
}

/// In half the seeds, a twin of one of the static members `among`: a second process with the
/// member's configuration (its `group.instance.id`) started on another client host by
/// `latest_ms`, once the member is clear of its own faults, as when a deployment starts a
/// replacement before the old process is gone (a pod rescheduled while the old one is
/// partitioned or stalled). Kafka gives the instance to one of them and fences or refuses the
/// other, which stops for good.
pub(super) fn add_twin(
    s: &mut ScenarioSpec,
    seed: u64,
    among: std::ops::Range<usize>,
    latest_ms: Millis,
    timing: TwinTiming,
) {
    let mut trng = rng::stream(seed, Stream::Twins);
    if !trng.random_bool(0.5) {
        return;
    }
    // The pause (if any) starts this long before the twin does.
    let lead = match timing {
        TwinTiming::Alongside { .. } => 500,
        TwinTiming::AfterRemoval { session_ms } => session_ms + 3_000,
    };
    let mut candidates: Vec<usize> = among.collect();
    candidates.shuffle(&mut trng);
    let Some((index, earliest)) = candidates.into_iter().find_map(|i| {
        let earliest = (busy_until(s, &s.members[i].name) + 2_000 + lead).max(20_000);
        (earliest < latest_ms).then_some((i, earliest))
    }) else {
        return;
    };
    let original = s.members[index].clone();
    let start = trng.random_range(earliest..latest_ms);
    let pause = match timing {
        TwinTiming::Alongside { within_ms } => {
            trng.random_bool(0.5).then(|| trng.random_range(2_000..within_ms.saturating_sub(5_000)))
        }
        TwinTiming::AfterRemoval { session_ms } => {
            Some(session_ms + trng.random_range(6_000..12_000))
        }
    };
    if let Some(duration_ms) = pause {
        let mut faults = s.faults.faults.clone();
        let pause = Fault::MemberPause { member: original.name.clone(), duration_ms };
        faults.push(at(start - lead, pause));
        s.faults = FaultSchedule::new(faults).with_triggers(s.faults.triggers.clone());
    }
    let twin = s.members.len() as u32;
    let name = format!("m{twin}");
    let mut config = original.config.clone();
    config.client_id = name.clone();
    s.members.push(MemberPlan {
        host: (original.host + 1) % s.client_hosts,
        start_ms: start,
        leave_ms: None,
        config,
        seed: rng::sub_seed(seed, Stream::Member(twin)),
        name,
        plugin: None,
    });
}

/// When member `name`'s own timed faults are over (its restarts, its pauses' ends).
fn busy_until(s: &ScenarioSpec, name: &str) -> Millis {
    s.faults
        .faults
        .iter()
        .filter_map(|f| match &f.fault {
            Fault::MemberPause { member, duration_ms: d }
            | Fault::MemberCrash { member, restart_after_ms: d }
            | Fault::MemberLeave { member, restart_after_ms: d }
                if member == name =>
            {
                Some(f.at_ms + d)
            }
            _ => None,
        })
        .max()
        .unwrap_or(0)
}
