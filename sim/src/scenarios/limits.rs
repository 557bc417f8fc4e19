//! The group limits a broker enforces: `group.max.size` for classic groups and
//! `group.consumer.max.size` for consumer groups, and a member whose assignors the group does
//! not share. A refused member is told so and stops (Kafka's answer is fatal to the clients);
//! the group goes on with the others.

use groupsim_member::{AssignorKind, ClientProfile};
use rand::RngExt;

use super::shape::{at, base};
use crate::faults::{Fault, FaultSchedule};
use crate::rng::{self, Stream};
use crate::scenario::{widest_liveness_bound, ScenarioSpec, GROUP_ID};

/// The most members the broker lets into the group.
const MAX_SIZE: i32 = 4;

/// Six members for a group the broker caps at four, drawn per seed: a classic Java group
/// (`group.max.size`, and one member offering only `roundrobin` to a `range` group: refused
/// INCONSISTENT_GROUP_PROTOCOL), or a consumer group of Java consumer-protocol members
/// (`group.consumer.max.size`). Members start over the first 20 s, so the late ones find the
/// group full; a member of the group bounces, which frees a place a refused one could have
/// taken had it not stopped, and the coordinator moves once.
pub fn group_limits(seed: u64) -> ScenarioSpec {
    let (mut s, mut rng) = base("group_limits", seed, 6, 3, 2, 60_000);
    let consumer = rng.random_bool(0.5);
    for (i, m) in s.members.iter_mut().enumerate() {
        m.start_ms =
            if i < 4 { rng.random_range(0..3_000) } else { rng.random_range(8_000..20_000) };
        if consumer {
            m.config.profile = ClientProfile::JavaConsumer;
            m.config.assignors = Vec::new();
        } else if i == 5 {
            m.config.assignors = vec![AssignorKind::RoundRobin];
        }
    }
    if consumer {
        s.coordinator.consumer_group_max_size = MAX_SIZE;
        s.coordinator.consumer_session_timeout_ms = 10_000;
        s.coordinator.consumer_heartbeat_interval_ms = 3_000;
    } else {
        s.coordinator.group_max_size = MAX_SIZE;
    }
    s.liveness_bound_ms = widest_liveness_bound(&s.members, &s.coordinator);
    let mut frng = rng::stream(seed, Stream::Faults);
    let bounced = format!("m{}", frng.random_range(0..4));
    let faults = vec![
        at(
            frng.random_range(25_000..35_000),
            Fault::MemberLeave {
                member: bounced,
                restart_after_ms: frng.random_range(2_000..4_000),
            },
        ),
        at(
            frng.random_range(15_000..50_000),
            Fault::CoordinatorMove {
                group: GROUP_ID.into(),
                to: frng.random_range(0..s.brokers),
                load_ms: frng.random_range(0..=1_500),
            },
        ),
    ];
    s.faults = FaultSchedule::new(faults);
    s
}
