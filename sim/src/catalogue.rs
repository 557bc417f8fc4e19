//! The scenario catalogue beyond `membership_churn` and `swarm`: one recipe per rebalance
//! situation users meet in production. Each builds a [`ScenarioSpec`] from a seed; the seed draws
//! the timings, the recipe fixes the shape. Every scenario ends with a liveness phase in which
//! the group must converge (Stable, every live member in the latest generation, every partition
//! assigned, commits at the log end).

use groupsim_coordinator::broker::group_partition;
use groupsim_coordinator::CoordinatorConfig;
use groupsim_member::{AssignorKind, ClientProfile};
use groupsim_wire::Millis;
use rand::RngExt;
use rand_chacha::ChaCha8Rng;

use crate::faults::{Fault, FaultSchedule, ScheduledFault};
use crate::rng::{self, Stream};
use crate::scenario::{
    liveness_bound, member_config, MemberPlan, ProducerPlan, Scenario, ScenarioSpec, GROUP_ID,
};

/// The scenarios this module defines.
pub fn scenarios() -> Vec<Scenario> {
    vec![
        Scenario::new("steady_state", "four members, no faults: one rebalance, then steady commits", steady_state),
        Scenario::new("scale_up_down", "2 members, scale to 8, then down to 3: many join- and leave-driven rebalances", scale_up_down),
        Scenario::new("rolling_restart", "five dynamic members restart one by one (LeaveGroup, rejoin as new members)", rolling_restart),
        Scenario::new("rolling_restart_static", "five static members (group.instance.id) restart one by one within the session timeout: no rebalance needed", rolling_restart_static),
        Scenario::new("coordinator_failover", "three brokers; the coordinator's broker crashes (failover after detection, group loaded from the offsets log), later the coordinator moves again", coordinator_failover),
        Scenario::new("connection_flaps", "members' connections reset every few seconds and client hosts lose the brokers briefly", connection_flaps),
        Scenario::new("zombie_pause", "a member pauses longer than its session timeout and resumes as a zombie that still believes it owns its partitions", zombie_pause),
        Scenario::new("stale_acks", "brod members whose processing finishes after the rebalance that took the partition away: acks carry the old generation", stale_acks),
        Scenario::new("partition_expansion", "both topics gain partitions mid-run; the leader notices on metadata refresh and rebalances", partition_expansion),
        Scenario::new("slow_revoke", "revoke callbacks take longer than the rebalance timeout while members join", slow_revoke),
        Scenario::new("join_storm", "200 members on 8 client hosts join within seconds", join_storm),
        Scenario::new("cooperative_upgrade", "eager-to-cooperative rolling upgrade in two bounces: [range] -> [cooperative-sticky, range] -> [cooperative-sticky]", cooperative_upgrade),
    ]
}

/// The common shape: `members` members spread over `client_hosts`, starting within 3 s, two
/// topics (8 + 4 partitions), a producer until `safety_end`, then the liveness phase.
fn base(
    name: &str,
    seed: u64,
    members: u32,
    brokers: i32,
    client_hosts: usize,
    safety_end: Millis,
) -> (ScenarioSpec, ChaCha8Rng) {
    let mut rng = rng::stream(seed, Stream::Workload);
    let coordinator = CoordinatorConfig { initial_rebalance_delay_ms: 1_000, ..Default::default() };
    let plans: Vec<MemberPlan> = (0..members)
        .map(|i| {
            let name = format!("m{i}");
            MemberPlan {
                host: i as usize % client_hosts,
                start_ms: rng.random_range(0..3_000),
                leave_ms: None,
                config: member_config(&name),
                seed: rng::sub_seed(seed, Stream::Member(i)),
                name,
            }
        })
        .collect();
    let liveness_bound_ms = liveness_bound(&plans[0].config, &coordinator);
    let spec = ScenarioSpec {
        name: name.into(),
        seed,
        tick_ms: 5,
        latency_ms: (1, 15),
        brokers,
        offsets_topic_partitions: 50,
        coordinator,
        topics: vec![("orders".into(), 8), ("payments".into(), 4)],
        client_hosts,
        members: plans,
        producer: ProducerPlan { records_per_sec: (2, 20), stop_ms: safety_end },
        liveness_start_ms: safety_end,
        liveness_bound_ms,
        swarm: None,
        faults: FaultSchedule::default(),
    };
    (spec, rng)
}

fn at(at_ms: Millis, fault: Fault) -> ScheduledFault {
    ScheduledFault { at_ms, fault }
}

/// Four members, no faults: the baseline every other scenario departs from.
fn steady_state(seed: u64) -> ScenarioSpec {
    let (mut s, mut rng) = base("steady_state", seed, 4, 1, 2, 40_000);
    // Everyone starts within the initial rebalance delay: one generation.
    for m in &mut s.members {
        m.start_ms = rng.random_range(0..500);
    }
    s
}

/// Two members, scaled to eight, then down to three: every join and LeaveGroup rebalances.
fn scale_up_down(seed: u64) -> ScenarioSpec {
    let (mut s, mut rng) = base("scale_up_down", seed, 8, 1, 3, 60_000);
    for m in s.members.iter_mut().skip(2) {
        m.start_ms = rng.random_range(8_000..22_000);
    }
    for m in s.members.iter_mut().skip(3) {
        m.leave_ms = Some(rng.random_range(32_000..52_000));
    }
    s
}

/// Members restart one at a time, as in a deployment: each leaves the group (LeaveGroup) and
/// comes back a few seconds later as a new member.
fn rolling_restart(seed: u64) -> ScenarioSpec {
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
fn rolling_restart_static(seed: u64) -> ScenarioSpec {
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

/// The broker coordinating the group crashes; after the detection delay the group's offsets
/// partition moves to a live broker, which loads the group from the offsets log. Later the
/// coordinator moves once more (with a slow load).
fn coordinator_failover(seed: u64) -> ScenarioSpec {
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

/// Connections reset every few seconds; now and then a client host loses every broker for a
/// moment (segments lost: clients must time out and reconnect).
fn connection_flaps(seed: u64) -> ScenarioSpec {
    let (mut s, mut rng) = base("connection_flaps", seed, 5, 1, 3, 60_000);
    let mut faults = Vec::new();
    let mut t = 5_000;
    while t < 55_000 {
        let member = format!("m{}", rng.random_range(0..5));
        faults.push(at(t, Fault::ConnectionDrop { member }));
        t += rng.random_range(1_000..3_000);
    }
    for _ in 0..3 {
        let host = crate::host::client_host(rng.random_range(0..3));
        let t = rng.random_range(8_000..50_000);
        faults.push(at(
            t,
            Fault::NetworkPartition {
                host,
                peers: vec![crate::host::broker_host(0)],
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
fn zombie_pause(seed: u64) -> ScenarioSpec {
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
fn stale_acks(seed: u64) -> ScenarioSpec {
    let (mut s, mut rng) = base("stale_acks", seed, 5, 1, 3, 60_000);
    for m in &mut s.members {
        m.config = crate::scenarios_profiles::profile_member_config(&m.name, ClientProfile::Brod);
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
fn partition_expansion(seed: u64) -> ScenarioSpec {
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
fn slow_revoke(seed: u64) -> ScenarioSpec {
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

/// Hundreds of members join within seconds (several per client host, as consumers share
/// machines): the join phase must collect them all without losing or double-assigning.
fn join_storm(seed: u64) -> ScenarioSpec {
    let (mut s, mut rng) = base("join_storm", seed, 200, 1, 8, 40_000);
    s.topics = vec![("orders".into(), 64), ("payments".into(), 32)];
    for m in &mut s.members {
        m.start_ms = rng.random_range(0..5_000);
    }
    s
}

/// An eager-to-cooperative rolling upgrade in two bounces (Kafka's documented path): first every
/// member restarts offering [cooperative-sticky, range] (still eager: the group keeps range until
/// all support cooperative-sticky), then every member restarts offering only cooperative-sticky.
fn cooperative_upgrade(seed: u64) -> ScenarioSpec {
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
                profile,
                assignors,
            };
            faults.push(at(t, fault));
        }
    }
    s.faults = FaultSchedule::new(faults);
    s
}
