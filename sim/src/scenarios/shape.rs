//! The shape most recipes share: members that start within 3 s, spread over the client hosts,
//! two topics, a producer until the safety phase ends, then the liveness phase.

use groupsim_coordinator::CoordinatorConfig;
use groupsim_member::{ClientProfile, MemberConfig};
use groupsim_wire::Millis;
use rand::RngExt;
use rand_chacha::ChaCha8Rng;

use crate::faults::{Fault, FaultSchedule, ScheduledFault};
use crate::rng::{self, Stream};
use crate::scenario::{
    liveness_bound, member_config, MemberPlan, ProducerPlan, ScenarioSpec, LATENCY_MS,
    OFFSETS_TOPIC_PARTITIONS, TICK_MS,
};

/// Members `m0..` (`count` of them) spread round-robin over `client_hosts`, each starting at a
/// time drawn within the first 3 s and configured by `config(name)`.
pub(super) fn start_members(
    rng: &mut ChaCha8Rng,
    seed: u64,
    count: u32,
    client_hosts: usize,
    config: impl Fn(&str) -> MemberConfig,
) -> Vec<MemberPlan> {
    (0..count)
        .map(|i| {
            let name = format!("m{i}");
            MemberPlan {
                host: i as usize % client_hosts,
                start_ms: rng.random_range(0..3_000),
                leave_ms: None,
                config: config(&name),
                seed: rng::sub_seed(seed, Stream::Member(i)),
                name,
                plugin: None,
            }
        })
        .collect()
}

/// The common shape: `members` members spread over `client_hosts`, starting within 3 s, two
/// topics (8 + 4 partitions), a producer until `safety_end`, then the liveness phase.
pub(super) fn base(
    name: &str,
    seed: u64,
    members: u32,
    brokers: i32,
    client_hosts: usize,
    safety_end: Millis,
) -> (ScenarioSpec, ChaCha8Rng) {
    let mut rng = rng::stream(seed, Stream::Workload);
    let coordinator = CoordinatorConfig { initial_rebalance_delay_ms: 1_000, ..Default::default() };
    let plans = start_members(&mut rng, seed, members, client_hosts, |name| {
        member_config(name, ClientProfile::JavaEager)
    });
    let liveness_bound_ms = liveness_bound(&plans[0].config, &coordinator);
    let spec = ScenarioSpec {
        name: name.into(),
        seed,
        tick_ms: TICK_MS,
        latency_ms: LATENCY_MS,
        brokers,
        offsets_topic_partitions: OFFSETS_TOPIC_PARTITIONS,
        coordinator,
        topics: vec![("orders".into(), 8), ("payments".into(), 4)],
        client_hosts,
        members: plans,
        producer: ProducerPlan { records_per_sec: (2, 20), stop_ms: safety_end, lulls: Vec::new() },
        liveness_start_ms: safety_end,
        liveness_bound_ms,
        swarm: None,
        faults: FaultSchedule::default(),
        network: Default::default(),
    };
    (spec, rng)
}

/// A fault at `at_ms`.
pub(super) fn at(at_ms: Millis, fault: Fault) -> ScheduledFault {
    ScheduledFault { at_ms, fault }
}
