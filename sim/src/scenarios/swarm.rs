//! The swarm: every fault kind, switched on and paced per seed, then liveness.

use groupsim_coordinator::CoordinatorConfig;
use groupsim_member::{ClientProfile, GroupProtocol, MemberConfig};
use rand::seq::SliceRandom;
use rand::RngExt;
use rand_chacha::ChaCha8Rng;

use super::profiles::mixed_member_config;
pub use crate::fault_draw::{draw_pauses, draw_schedule, FaultContext, PauseTiming};
use crate::faults::FaultKind;
use crate::recipe::Recipe;
use crate::rng::{self, Stream};
use crate::scenario::{liveness_bound, member_config, ScenarioSpec};
pub use crate::swarm_draw::{draw_lulls, draw_network};
use crate::triggers::TriggerEvent;

/// The swarms' topics and partition counts (fault breadth shrinks them in some seeds).
pub const SWARM_TOPICS: &[(&str, i32)] = &[("orders", 8), ("payments", 4)];

/// Fault kinds the `swarm` scenario may enable.
pub const SWARM_KINDS: &[FaultKind] = &[
    FaultKind::ConnectionDrop,
    FaultKind::CoordinatorMove,
    FaultKind::SlowCoordinatorLoad,
    FaultKind::BrokerCrash,
    FaultKind::NetworkPartition,
    FaultKind::LatencySpike,
    FaultKind::MemberPause,
    FaultKind::MemberCrash,
    FaultKind::MemberLeave,
    FaultKind::StaleAck,
    FaultKind::SlowRevoke,
    FaultKind::PartitionExpansion,
];

/// Every fault kind available to a seeded swarm: the seed picks which kinds are on and how often
/// they strike during a 60 s safety phase; then faults stop, everything heals, and the group must
/// converge. Six Java eager members on three client hosts, three brokers.
pub fn swarm(seed: u64) -> ScenarioSpec {
    let profiles = |_: &mut ChaCha8Rng| vec![ClientProfile::JavaEager; 6];
    swarm_of("swarm", seed, CoordinatorConfig::default(), profiles, member_config)
}

/// The swarm run by Java cooperative consumers (cooperative-sticky, KIP-429): the same fault
/// kinds and event triggers, drawn per seed the same way. Cooperative members keep consuming the
/// partitions they keep while a rebalance runs and claim them in their JoinGroup subscription,
/// so the triggers (a SyncGroup answer lost, the leader paused in CompletingRebalance, the
/// coordinator moved) land on members that still own partitions: the states where a member that
/// mishandles a failed SyncGroup (KAFKA-13419) keeps claiming what it no longer owns.
pub fn swarm_cooperative(seed: u64) -> ScenarioSpec {
    let profiles = |_: &mut ChaCha8Rng| vec![ClientProfile::JavaCooperative; 6];
    swarm_of("swarm_cooperative", seed, CoordinatorConfig::default(), profiles, member_config)
}

/// The swarm on one classic group mixing the five classic clients: every one of Java eager,
/// Java cooperative, brod, Elsa and kafka-go, and a sixth drawn among them, in a drawn order,
/// all offering `roundrobin` (the one assignor they share, so the Java cooperative member runs
/// eagerly). The clients answer the same faults differently — kafka-go sends fixed old request
/// versions and backs off before rejoining, brod and Elsa acknowledge asynchronously and rejoin
/// with an empty member id when they lose the coordinator, the Java consumer commits on revoke —
/// and the coordinator must serve them all at once, in every state the faults reach.
pub fn swarm_mixed(seed: u64) -> ScenarioSpec {
    let profiles = |rng: &mut ChaCha8Rng| {
        let mut drawn = ClientProfile::CLASSIC.to_vec();
        drawn.push(ClientProfile::CLASSIC[rng.random_range(0..ClientProfile::CLASSIC.len())]);
        drawn.shuffle(rng);
        drawn
    };
    swarm_of("swarm_mixed", seed, CoordinatorConfig::default(), profiles, mixed_member_config)
}

/// The swarm on KIP-848's consumer group protocol: the same fault kinds, on six members each
/// running the Java consumer (`AsyncKafkaConsumer`) or librdkafka, drawn per member, with a
/// consumer session as short as the classic swarm's (10 s, heartbeats every 3 s) so that paused
/// members become zombies within the safety phase. Its triggers wait for the consumer
/// protocol's own moments ([`TriggerEvent::CONSUMER_SWARM`]: a revocation asked for, aimed at
/// the partitions' new owner; a revocation done, its acknowledgement on its way; a partition
/// handed over; a fenced member rejoining) and may make their target leave gracefully.
pub fn consumer_protocol_swarm(seed: u64) -> ScenarioSpec {
    let coordinator = CoordinatorConfig {
        consumer_session_timeout_ms: 10_000,
        consumer_heartbeat_interval_ms: 3_000,
        ..Default::default()
    };
    let profiles = |rng: &mut ChaCha8Rng| {
        let draw = |rng: &mut ChaCha8Rng| match rng.random_bool(0.5) {
            true => ClientProfile::JavaConsumer,
            false => ClientProfile::LibrdkafkaConsumer,
        };
        (0..6).map(|_| draw(rng)).collect()
    };
    swarm_of("consumer_protocol_swarm", seed, coordinator, profiles, member_config)
}

/// The swarm on one consumer group whose members speak both protocols for the whole run, as a
/// deployment in the middle of a rolling migration that never finishes: a consumer-protocol
/// member (Java consumer or librdkafka) starts first and creates the group; the other five run
/// either that protocol or a classic Java client (all classic ones eager, or all cooperative,
/// drawn per seed), so the coordinator serves classic JoinGroup, SyncGroup and Heartbeat from
/// inside the consumer group under every fault the swarm plays. Per seed the broker's
/// `group.consumer.migration.policy` is drawn (Kafka's default `bidirectional` in half the
/// seeds), and in some seeds its group size limits are below the member count, so a group left
/// with classic members only may be refused its downgrade and late members may find the group
/// full. In half the seeds every member is static.
pub fn mixed_protocol_swarm(seed: u64) -> ScenarioSpec {
    use groupsim_coordinator::MigrationPolicy;
    let mut crng = rng::stream(seed, Stream::Clients);
    let policy = match crng.random_range(0..8) {
        0 => MigrationPolicy::Upgrade,
        1 => MigrationPolicy::Downgrade,
        2 => MigrationPolicy::Disabled,
        _ => MigrationPolicy::Bidirectional,
    };
    let consumer_group_max_size =
        if crng.random_bool(0.25) { crng.random_range(4..=5) } else { i32::MAX };
    let group_max_size = if crng.random_bool(0.25) { crng.random_range(3..=5) } else { i32::MAX };
    let coordinator = CoordinatorConfig {
        consumer_session_timeout_ms: 10_000,
        consumer_heartbeat_interval_ms: 3_000,
        consumer_migration_policy: policy,
        consumer_group_max_size,
        group_max_size,
        ..Default::default()
    };
    let eager = crng.random_bool(0.5);
    let profiles = move |rng: &mut ChaCha8Rng| {
        let consumer = |rng: &mut ChaCha8Rng| match rng.random_bool(0.5) {
            true => ClientProfile::JavaConsumer,
            false => ClientProfile::LibrdkafkaConsumer,
        };
        let classic = if eager { ClientProfile::JavaEager } else { ClientProfile::JavaCooperative };
        let mut drawn = vec![consumer(rng)];
        drawn.extend((1..6).map(|_| if rng.random_bool(0.5) { consumer(rng) } else { classic }));
        // At least two classic members, so the group always holds both protocols.
        drawn[1] = classic;
        drawn[2] = classic;
        drawn
    };
    let statics = crng.random_bool(0.5);
    let mut s = swarm_of("mixed_protocol_swarm", seed, coordinator, profiles, member_config);
    // The consumer-protocol member creates the group: the others start once it is there.
    s.members[0].start_ms = 0;
    for m in &mut s.members[1..] {
        m.start_ms = m.start_ms.max(1_500);
    }
    if statics {
        // Static members of both protocols. No twins yet: inside a consumer group a classic
        // static member's twin is fenced by its heartbeats but answered UNKNOWN_MEMBER_ID on
        // its commits (Kafka's consumer group checks no instance id there), rejoins without a
        // member id and takes the instance back, so with commits more frequent than
        // heartbeats the two replace each other for good: the checker names it
        // (`classic-twins-replace-each-other`); twins join this scenario once the false alarms
        // they bring out are fixed (docs/checker.md).
        for m in &mut s.members {
            m.config.group_instance_id = Some(format!("instance-{}", m.name));
        }
    }
    s
}

/// The swarm recipe: `coordinator` with a drawn offsets-log replication delay, members running
/// the profiles `profiles` draws (one per member, configured by `config`), the swarm's fault
/// kinds in swarm mode, and the trigger events of their group protocol. The per-seed choices
/// come first from the seed's workload stream; the recipe draws on from it.
fn swarm_of(
    name: &str,
    seed: u64,
    coordinator: CoordinatorConfig,
    profiles: impl FnOnce(&mut ChaCha8Rng) -> Vec<ClientProfile>,
    config: fn(&str, ClientProfile) -> MemberConfig,
) -> ScenarioSpec {
    let mut rng = rng::stream(seed, Stream::Workload);
    // Offsets-log replication takes a few to tens of milliseconds, as an ISR round trip does.
    let coordinator = CoordinatorConfig {
        initial_rebalance_delay_ms: 1_000,
        offsets_append_delay_ms: rng.random_range(5..=50),
        ..coordinator
    };
    let profiles = profiles(&mut rng);
    let consumer = profiles[0].group_protocol() == GroupProtocol::Consumer;
    let events: &[TriggerEvent] =
        if consumer { &TriggerEvent::CONSUMER_SWARM } else { TriggerEvent::CLASSIC_SWARM };
    let mut recipe = Recipe::builder(name)
        .brokers(3)
        .client_hosts(3)
        .coordinator(|c| *c = coordinator)
        .swarm(SWARM_KINDS, 6_000)
        .triggers(events)
        .safety_phase_ms(60_000)
        .mixed_protocols();
    for (topic, partitions) in SWARM_TOPICS {
        recipe = recipe.topic(topic, *partitions);
    }
    for profile in &profiles {
        recipe = recipe.member(*profile);
    }
    let recipe = recipe
        .configure(move |name, c| {
            let i: usize = name[1..].parse().expect("members are named m0, m1, ...");
            *c = config(name, profiles[i]);
        })
        .build()
        .unwrap_or_else(|e| panic!("the swarm is a valid recipe: {e}"));
    let (mut spec, _) = recipe.draw_with(seed, rng);
    let mut session = spec.members[0].config.clone();
    if consumer {
        // The coordinator, not the client, sets a consumer group member's session.
        session.session_timeout_ms = spec.coordinator.consumer_session_timeout_ms;
    }
    spec.liveness_bound_ms = 2 * liveness_bound(&session, &spec.coordinator);
    spec
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::faults::{Fault, Swarm};

    fn ctx() -> FaultContext {
        FaultContext {
            members: vec!["m0".into(), "m1".into()],
            brokers: vec!["broker-0".into()],
            client_hosts: vec!["client-0".into()],
            broker_ids: vec![0],
            topics: vec![("orders".into(), 4)],
            group: "g".into(),
            start_ms: 4_000,
            end_ms: 58_000,
            protocol: GroupProtocol::Classic,
        }
    }

    /// Pauses come in every length against the members' timeouts, and inside the safety phase.
    #[test]
    fn drawn_pauses_cover_every_length_class() {
        let timing = PauseTiming { heartbeat_ms: 3_000, session_ms: 10_000 };
        let mut classes = std::collections::BTreeSet::new();
        for seed in 0..40 {
            let s = draw_pauses(&mut rng::stream(seed, Stream::Pauses), &ctx(), timing);
            for f in &s.faults {
                let Fault::MemberPause { duration_ms, .. } = f.fault else { panic!("{f:?}") };
                assert!(f.at_ms >= 4_000 && f.at_ms + duration_ms <= 58_000, "{f:?}");
                classes.insert(match duration_ms {
                    0..3_000 => "below the heartbeat interval",
                    3_000..10_000 => "inside the session",
                    _ => "past the session",
                });
            }
        }
        assert_eq!(classes.len(), 3, "{classes:?}");
    }

    /// BUGGIFY draws only errors Kafka's coordinator gives on the API, for the group's protocol.
    #[test]
    fn injected_errors_are_kafkas_for_the_api_and_protocol() {
        for protocol in [GroupProtocol::Classic, GroupProtocol::Consumer] {
            let ctx = FaultContext { protocol, ..ctx() };
            let swarm = Swarm { enabled: vec![(FaultKind::InjectError, 2_000)] };
            let s = draw_schedule(&mut rng::stream(3, Stream::Buggify), &swarm, &ctx);
            assert!(s.faults.len() > 10);
            for f in &s.faults {
                let Fault::InjectError { api, error, count } = f.fault else { panic!("{f:?}") };
                assert!(crate::faults::drawn_apis(protocol).contains(&api), "{f:?}");
                assert!(crate::faults::kafka_errors(api, protocol).contains(&error), "{f:?}");
                assert!((1..=3).contains(&count));
            }
        }
    }
}
