//! The swarm on KIP-848's consumer group protocol: the classic swarm's fault kinds, paced per
//! seed, plus event triggers aimed at the consumer protocol's own moments (a member told to
//! revoke, its acknowledgement on its way, a partition handed to its new owner, a fenced member
//! rejoining), on a group mixing Java (`AsyncKafkaConsumer`) and librdkafka members.

use groupsim_coordinator::CoordinatorConfig;
use groupsim_member::ClientProfile;
use groupsim_wire::Millis;
use rand::RngExt;

use super::shape::start_members;
use super::swarm::{draw_schedule, FaultContext, SWARM_KINDS};
use crate::faults::Swarm;
use crate::rng::{self, Stream};
use crate::scenario::{
    liveness_bound, member_config, ProducerPlan, ScenarioSpec, GROUP_ID, LATENCY_MS,
    OFFSETS_TOPIC_PARTITIONS, TICK_MS,
};
use crate::triggers::{self, TriggerEvent};

/// The consumer group's session timeout (`group.consumer.session.timeout.ms`), short as the
/// classic swarm's 10 s so that paused members become zombies within the safety phase.
const SESSION_TIMEOUT_MS: i32 = 10_000;
/// The heartbeat interval the coordinator hands out (`group.consumer.heartbeat.interval.ms`).
const HEARTBEAT_INTERVAL_MS: i32 = 3_000;

/// Six consumer-protocol members (Java and librdkafka, drawn per member) on three client hosts,
/// three brokers, two topics; every swarm fault kind and the consumer-protocol triggers, drawn
/// per seed during a 60 s safety phase; then faults stop, everything heals, and the group must
/// converge.
pub fn consumer_protocol_swarm(seed: u64) -> ScenarioSpec {
    let mut rng = rng::stream(seed, Stream::Workload);
    let coordinator = CoordinatorConfig {
        initial_rebalance_delay_ms: 1_000,
        offsets_append_delay_ms: rng.random_range(5..=50),
        consumer_session_timeout_ms: SESSION_TIMEOUT_MS,
        consumer_heartbeat_interval_ms: HEARTBEAT_INTERVAL_MS,
        ..Default::default()
    };
    let brokers = 3;
    let client_hosts = 3;
    let profiles: Vec<ClientProfile> = (0..6)
        .map(|_| {
            if rng.random_bool(0.5) {
                ClientProfile::JavaConsumer
            } else {
                ClientProfile::LibrdkafkaConsumer
            }
        })
        .collect();
    let members = start_members(&mut rng, seed, 6, client_hosts, |name| {
        let i: usize = name[1..].parse().expect("members are m0..m5");
        member_config(name, profiles[i])
    });
    let topics = vec![("orders".to_string(), 8), ("payments".to_string(), 4)];
    let safety_end: Millis = 60_000;
    let mut frng = rng::stream(seed, Stream::Faults);
    let swarm = Swarm::draw(&mut frng, SWARM_KINDS, 6_000);
    let ctx = FaultContext {
        members: members.iter().map(|m| m.name.clone()).collect(),
        brokers: (0..brokers).map(crate::host::broker_host).collect(),
        client_hosts: (0..client_hosts).map(crate::host::client_host).collect(),
        broker_ids: (0..brokers).collect(),
        topics: topics.clone(),
        group: GROUP_ID.to_string(),
        start_ms: 4_000,
        end_ms: safety_end - 2_000,
    };
    let triggers = triggers::draw_for(
        &mut rng::stream(seed, Stream::Triggers),
        &TriggerEvent::CONSUMER_SWARM,
        SESSION_TIMEOUT_MS as Millis,
        brokers > 1,
        true,
    );
    let faults = draw_schedule(&mut frng, &swarm, &ctx).with_triggers(triggers);
    let mut session = members[0].config.clone();
    session.session_timeout_ms = SESSION_TIMEOUT_MS;
    let liveness_bound_ms = 2 * liveness_bound(&session, &coordinator);
    ScenarioSpec {
        name: "consumer_protocol_swarm".into(),
        seed,
        tick_ms: TICK_MS,
        latency_ms: LATENCY_MS,
        brokers,
        offsets_topic_partitions: OFFSETS_TOPIC_PARTITIONS,
        coordinator,
        topics,
        client_hosts,
        members,
        producer: ProducerPlan { records_per_sec: (2, 20), stop_ms: safety_end },
        liveness_start_ms: safety_end,
        liveness_bound_ms,
        swarm: Some(swarm),
        faults,
    }
}
