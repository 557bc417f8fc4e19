//! An admin client beside the group: what the coordinator tells tools (DescribeGroups,
//! ConsumerGroupDescribe, ListGroups) while the group changes under it, held by the checker
//! against what the group really was at that moment.

use groupsim_wire::Millis;
use rand::RngExt;

use super::migration::protocol_migration;
use super::shape::at;
use crate::faults::{Fault, FaultSchedule};
use crate::rng::{self, Stream};
use crate::scenario::{member_config, MemberPlan, ScenarioSpec};

/// The admin client's name in the history.
pub const OBSERVER: &str = "a0";

/// `protocol_migration` (a classic group rolled over to the consumer protocol and back, under
/// connection drops, a coordinator move and a member crash) with an admin client on a host of
/// its own describing the group and listing every broker's groups every second or so, as an
/// operator's `kafka-consumer-groups.sh` loop would: it meets a classic group, a consumer group
/// with classic members, and the downgrade back. Its own connections drop twice and it pauses
/// once, so some answers arrive late; twice the coordinator expels a live member (expires its
/// session), which the answers must show.
pub fn admin_observer(seed: u64) -> ScenarioSpec {
    let mut s = protocol_migration(seed);
    s.name = "admin_observer".into();
    let safety_end: Millis = s.liveness_start_ms;
    let mut config = member_config(OBSERVER, groupsim_member::ClientProfile::JavaEager);
    config.admin_observer = true;
    config.assignors = Vec::new();
    s.client_hosts += 1;
    let mut arng = rng::stream(seed, Stream::Hazards);
    s.members.push(MemberPlan {
        name: OBSERVER.into(),
        host: s.client_hosts - 1,
        start_ms: arng.random_range(0..3_000),
        leave_ms: None,
        config,
        seed: seed ^ 0xad31,
        plugin: None,
    });
    let mut faults = std::mem::take(&mut s.faults.faults);
    for _ in 0..2 {
        let t = arng.random_range(5_000..safety_end - 2_000);
        faults.push(at(t, Fault::ConnectionDrop { member: OBSERVER.into() }));
    }
    let t = arng.random_range(5_000..safety_end - 4_000);
    let duration_ms = arng.random_range(500..3_000);
    faults.push(at(t, Fault::MemberPause { member: OBSERVER.into(), duration_ms }));
    // Twice the coordinator expires a live member's session (as after heartbeats it did not
    // see): the observer must see the member go, and the member must come back.
    for _ in 0..2 {
        let t = arng.random_range(5_000..safety_end - 4_000);
        let member = format!("m{}", arng.random_range(0..4));
        faults.push(at(t, Fault::ExpelMember { member }));
    }
    s.faults = FaultSchedule::new(faults);
    s
}

/// The misbehaving client's name in the history.
pub const PROBER: &str = "x0";

/// `protocol_migration` with a misbehaving client on a host of its own that sends the group's
/// coordinator, every second or so, a request Kafka refuses in every group state: malformed
/// ConsumerGroupHeartbeats (an empty member, group, instance or rack id, a join without a
/// rebalance timeout or subscription or claiming partitions, a bad epoch, an unknown assignor),
/// a JoinGroup with an empty group id or a session timeout below the minimum, group requests
/// from a member id the group never gave, FindCoordinator with an unknown key type. It meets a
/// classic group, a consumer group and the downgrade back; its connection drops once. Every
/// answer must be a refusal (`invalid-request-accepted`), and the group must not notice.
pub fn invalid_requests(seed: u64) -> ScenarioSpec {
    let mut s = protocol_migration(seed);
    s.name = "invalid_requests".into();
    let safety_end: Millis = s.liveness_start_ms;
    let mut config = member_config(PROBER, groupsim_member::ClientProfile::JavaConsumer);
    config.invalid_request_prober = true;
    config.assignors = Vec::new();
    s.client_hosts += 1;
    let mut prng = rng::stream(seed, Stream::Hazards);
    s.members.push(MemberPlan {
        name: PROBER.into(),
        host: s.client_hosts - 1,
        start_ms: prng.random_range(0..3_000),
        leave_ms: None,
        config,
        seed: seed ^ 0x1e7a,
        plugin: None,
    });
    let mut faults = std::mem::take(&mut s.faults.faults);
    let t = prng.random_range(5_000..safety_end - 2_000);
    faults.push(at(t, Fault::ConnectionDrop { member: PROBER.into() }));
    s.faults = FaultSchedule::new(faults);
    s
}
