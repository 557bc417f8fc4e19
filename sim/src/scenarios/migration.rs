//! Online migration between the group protocols (KIP-848, Kafka 4.0): a classic group rolled
//! over to the consumer protocol member by member, and back, while the network and the
//! coordinator misbehave.

use groupsim_member::{AssignorKind, ClientProfile};
use groupsim_wire::Millis;
use rand::RngExt;

use super::shape::{at, base};
use crate::faults::{Fault, FaultSchedule, ScheduledFault};
use crate::record::IntoHistory;
use crate::rng::{self, Stream};
use crate::scenario::{ScenarioSpec, GROUP_ID};

/// Members of the group.
const MEMBERS: u32 = 4;
/// Time between two members' bounces.
const STEP_MS: Millis = 9_000;
/// The first bounce of each rolling bounce, after the group settled (or the upgrade did).
const FIRST_MS: Millis = 8_000;
/// How far a member's crash stays from its own bounces (a bounce's restart takes up to 3 s).
const CRASH_CLEARANCE_MS: Millis = 4_000;

/// The classic client the group starts (and ends) with: Java eager (`range`) or Java
/// cooperative (`cooperative-sticky`), drawn from the seed.
fn classic_client(eager: bool) -> (ClientProfile, Vec<AssignorKind>) {
    if eager {
        (ClientProfile::JavaEager, vec![AssignorKind::Range])
    } else {
        (ClientProfile::JavaCooperative, vec![AssignorKind::CooperativeSticky])
    }
}

/// A classic Java group (eager or cooperative, drawn) of four members is rolled over to the
/// Java consumer with `group.protocol=consumer` one member at a time (each leaves and comes
/// back with the new protocol): the first consumer-protocol member's join upgrades the group to
/// a KIP-848 consumer group that keeps the classic members, which the server-side assignor
/// serves through JoinGroup/SyncGroup/Heartbeat until their turn. Then it is rolled back one
/// member at a time: the classic members rejoin the consumer group, and when the last
/// consumer-protocol member leaves the group is downgraded to a classic group, which
/// rebalances. Throughout: connection drops every few seconds, one coordinator move (its load
/// 0–3 s), and one member crash away from that member's own bounces (restart 1–3 s later; a
/// crashed consumer-protocol member stays in the group until its session expires, and its
/// fencing may be what downgrades the group).
pub fn protocol_migration(seed: u64) -> ScenarioSpec {
    let (mut s, mut rng) = base("protocol_migration", seed, MEMBERS, 3, 2, 0);
    let eager = rng.random_bool(0.5);
    let (classic_profile, classic_assignors) = classic_client(eager);
    for m in &mut s.members {
        m.config.profile = classic_profile;
        m.config.assignors = classic_assignors.clone();
    }
    // Broker settings a rolling migration runs with: consumer-group sessions as short as the
    // classic members' (the broker's group.consumer.session.timeout.ms, lowered with its min).
    s.coordinator.consumer_session_timeout_ms = 10_000;
    s.coordinator.consumer_heartbeat_interval_ms = 3_000;

    let mut faults: Vec<ScheduledFault> = Vec::new();
    // Each member's bounces: (member index, when it leaves).
    let mut bounces: Vec<(u32, Millis)> = Vec::new();
    let mut t = FIRST_MS;
    for (profile, assignors) in [(ClientProfile::JavaConsumer, Vec::new()), classic_client(eager)] {
        for i in 0..MEMBERS {
            let fault = Fault::MemberUpgrade {
                member: format!("m{i}"),
                restart_after_ms: rng.random_range(1_000..3_000),
                profile: profile.into_history(),
                assignors: assignors.iter().map(|a| a.into_history()).collect(),
            };
            let leave_at = t + rng.random_range(0..2_000);
            bounces.push((i, leave_at));
            faults.push(at(leave_at, fault));
            t += STEP_MS;
        }
        t += FIRST_MS;
    }
    let safety_end = t;

    let mut frng = rng::stream(seed, Stream::Faults);
    let mut drop_at = frng.random_range(4_000..8_000);
    while drop_at < safety_end - 2_000 {
        let member = format!("m{}", frng.random_range(0..MEMBERS));
        faults.push(at(drop_at, Fault::ConnectionDrop { member }));
        drop_at += frng.random_range(3_000..9_000);
    }
    let move_to = frng.random_range(0..s.brokers);
    let load_ms = frng.random_range(0..=3_000);
    faults.push(at(
        frng.random_range(FIRST_MS..safety_end - 4_000),
        Fault::CoordinatorMove { group: GROUP_ID.into(), to: move_to, load_ms },
    ));
    // The crash keeps clear of the member's own bounces: a crash while it is down for a bounce
    // cancels the bounce, and the member would stay on its protocol.
    let crashed = frng.random_range(0..MEMBERS);
    let clear = |t: Millis| {
        bounces
            .iter()
            .all(|&(i, b)| i != crashed || t + CRASH_CLEARANCE_MS < b || t > b + CRASH_CLEARANCE_MS)
    };
    let mut crash_at = frng.random_range(FIRST_MS..safety_end - 4_000);
    while !clear(crash_at) {
        crash_at = frng.random_range(FIRST_MS..safety_end - 4_000);
    }
    faults.push(at(
        crash_at,
        Fault::MemberCrash {
            member: format!("m{crashed}"),
            restart_after_ms: frng.random_range(1_000..3_000),
        },
    ));
    s.faults = FaultSchedule::new(faults);
    s.producer.stop_ms = safety_end;
    s.liveness_start_ms = safety_end;
    s.liveness_bound_ms *= 2;
    s
}

/// `protocol_migration`'s roll-over and roll-back under the member faults the swarms play as
/// well: a short pause and one past the session (a member expelled mid-migration, then back),
/// two late commits (a commit read before its member moved on, processed after), error answers
/// Kafka's coordinator gives (broker-side BUGGIFY) on the classic and the consumer-group APIs,
/// and a forced rebalance. Drawn from a stream of its own beside `protocol_migration`'s.
pub fn migration_faults(seed: u64) -> ScenarioSpec {
    use groupsim_member::GroupProtocol;
    let mut s = protocol_migration(seed);
    s.name = "migration_faults".into();
    let safety_end = s.liveness_start_ms;
    let mut hrng = rng::stream(seed, Stream::Hazards);
    let when = |rng: &mut rand_chacha::ChaCha8Rng| rng.random_range(FIRST_MS..safety_end - 4_000);
    let mut extra = Vec::new();
    for (lo, hi) in [(2_000, 6_000), (11_000, 16_000)] {
        let member = format!("m{}", hrng.random_range(0..MEMBERS));
        let t = when(&mut hrng);
        extra.push(at(t, Fault::MemberPause { member, duration_ms: hrng.random_range(lo..hi) }));
    }
    for _ in 0..2 {
        let member = format!("m{}", hrng.random_range(0..MEMBERS));
        let t = when(&mut hrng);
        let fault = Fault::LateRequest {
            member,
            api: crate::faults::GroupApi::OffsetCommit,
            delay_ms: hrng.random_range(5_500..12_000),
            within_ms: hrng.random_range(1_000..=5_000),
        };
        extra.push(at(t, fault));
    }
    for protocol in [GroupProtocol::Classic, GroupProtocol::Consumer] {
        let apis = crate::faults::drawn_apis(protocol);
        let api = apis[hrng.random_range(0..apis.len())];
        let errors = crate::faults::kafka_errors(api, protocol);
        let error = errors[hrng.random_range(0..errors.len())];
        let t = when(&mut hrng);
        extra.push(at(t, Fault::InjectError { api, error, count: hrng.random_range(1..=3) }));
    }
    let t = when(&mut hrng);
    extra.push(at(t, Fault::ForceRebalance { group: GROUP_ID.into() }));
    let mut faults = std::mem::take(&mut s.faults.faults);
    faults.extend(extra);
    s.faults = FaultSchedule::new(faults);
    s
}

/// `protocol_migration` with static members: every member keeps its `group.instance.id` across
/// the roll-over and the roll-back, as a deployment with static membership upgrades. A classic
/// static member sends no LeaveGroup when it stops for its upgrade (the Java consumer since
/// 2.3), so its consumer-protocol successor takes its instance over in the consumer group at
/// once (Kafka checks an instance's release only between consumer-protocol members); rolled
/// back, a consumer-protocol static member leaves temporarily (epoch -2) and its classic
/// successor joins the consumer group with that instance id.
pub fn static_migration(seed: u64) -> ScenarioSpec {
    let mut s = protocol_migration(seed);
    s.name = "static_migration".into();
    for m in &mut s.members {
        m.config.group_instance_id = Some(format!("instance-{}", m.name));
    }
    s
}
