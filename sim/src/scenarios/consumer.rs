//! KIP-848 consumer-protocol scenarios: members that speak ConsumerGroupHeartbeat and let the
//! coordinator assign (`group.protocol=consumer`), mixing the Java consumer
//! (`AsyncKafkaConsumer`) and librdkafka. Each member's client is drawn from the seed, and so is
//! the server assignor the group asks for (`uniform` or `range`).
//!
//! The coordinator's consumer-group session and heartbeat interval
//! (`group.consumer.session.timeout.ms`, `group.consumer.heartbeat.interval.ms`) are set to the
//! members' classic values (10 s, 3 s) so the runs are sized as the classic ones are; Kafka's
//! defaults (45 s, 5 s) only stretch them.

use groupsim_member::{ClientProfile, MemberConfig};
use groupsim_wire::Millis;
use rand::RngExt;
use rand_chacha::ChaCha8Rng;

use super::churn::churn_spec;
use super::shape::{at, base};
use super::static_members::{add_twin, TwinTiming};
use crate::faults::{Fault, FaultSchedule};
use crate::rng::{self, Stream};
use crate::scenario::{member_config, ScenarioSpec};

/// The server assignors a consumer-protocol scenario draws from (`group.remote.assignor`).
pub const SERVER_ASSIGNORS: [&str; 2] = ["uniform", "range"];

/// The clients' draws for one seed: the server assignor the group asks for, then each member's
/// consumer-protocol profile.
pub(super) struct ConsumerClients {
    rng: ChaCha8Rng,
    /// `group.remote.assignor`, the same for every member.
    pub(super) assignor: &'static str,
}

impl ConsumerClients {
    /// The draws of `seed`, from a stream of their own (the workload's draws stay put).
    pub(super) fn of(seed: u64) -> Self {
        let mut rng = rng::stream(seed, Stream::Clients);
        let assignor = SERVER_ASSIGNORS[rng.random_range(0..SERVER_ASSIGNORS.len())];
        Self { rng, assignor }
    }

    /// The next member's profile: the Java consumer or librdkafka, evenly.
    pub(super) fn profile(&mut self) -> ClientProfile {
        ClientProfile::CONSUMER[self.rng.random_range(0..ClientProfile::CONSUMER.len())]
    }
}

/// A consumer-protocol member: `profile`'s defaults, asking for `assignor`.
pub(super) fn consumer_member_config(
    name: &str,
    profile: ClientProfile,
    assignor: &str,
) -> MemberConfig {
    let mut c = member_config(name, profile);
    c.server_assignor = Some(assignor.to_string());
    c
}

/// Sets the coordinator's consumer-group session and heartbeat interval to the members' values.
pub(super) fn size_consumer_sessions(spec: &mut ScenarioSpec) {
    if let Some(m) = spec.members.first() {
        spec.coordinator.consumer_session_timeout_ms = m.config.session_timeout_ms;
        spec.coordinator.consumer_heartbeat_interval_ms = m.config.heartbeat_interval_ms as i32;
    }
}

/// `membership_churn` (3 -> 6 -> 2 members) with consumer-protocol members: every join and
/// leave bumps the group epoch, the coordinator computes a new target, and the members
/// reconcile incrementally (revoke, commit, acknowledge, then the new owner is given the
/// partition).
pub fn consumer_protocol_churn(seed: u64) -> ScenarioSpec {
    let mut clients = ConsumerClients::of(seed);
    let profiles: Vec<ClientProfile> = (0..6).map(|_| clients.profile()).collect();
    let assignor = clients.assignor;
    let mut spec = churn_spec("consumer_protocol_churn", seed, |i, name| {
        consumer_member_config(name, profiles[i], assignor)
    });
    size_consumer_sessions(&mut spec);
    spec
}

/// What happens to one static member of `consumer_protocol_static`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StaticFault {
    /// `close()` (leave heartbeat with epoch -2: the coordinator keeps the member, its
    /// assignment and its partitions) and back within the session timeout: the new member id
    /// takes the instance id over with the same assignment, no group epoch bump, no
    /// reassignment.
    Bounce,
    /// `close()` (-2) and back only after the session timeout: the coordinator fenced the left
    /// member and gave its partitions to the others; the new process joins as a new member.
    LongBounce,
    /// The process dies without leaving and comes back after its session ended: the group
    /// noticed it by the session timeout; the new process joins as a new member.
    Crash,
    /// The process dies without leaving and comes back while its predecessor still holds the
    /// instance id: the coordinator answers UNRELEASED_INSTANCE_ID, fatal to the Java consumer
    /// and librdkafka alike, so the new process stops; the old member is fenced when its
    /// session ends.
    CrashQuickRestart,
    /// A stop-the-world pause longer than the session timeout: the coordinator fences the
    /// member and gives its partitions away; the member resumes as a zombie, its next
    /// heartbeat is answered UNKNOWN_MEMBER_ID, and it rejoins at epoch 0 with the same member
    /// id and instance id (a new member to the group).
    Pause,
}

impl StaticFault {
    /// How long the member is away (down, or paused), drawn from `rng`, for a session of
    /// `session_ms`.
    fn away_ms(self, rng: &mut ChaCha8Rng, session_ms: Millis) -> Millis {
        match self {
            StaticFault::Bounce | StaticFault::CrashQuickRestart => {
                rng.random_range(1_000..session_ms / 2)
            }
            StaticFault::LongBounce | StaticFault::Crash | StaticFault::Pause => {
                rng.random_range(session_ms + 2_000..session_ms + 6_000)
            }
        }
    }

    /// The fault that does it.
    fn fault(self, member: String, away_ms: Millis) -> Fault {
        match self {
            StaticFault::Bounce | StaticFault::LongBounce => {
                Fault::MemberLeave { member, restart_after_ms: away_ms }
            }
            StaticFault::Crash | StaticFault::CrashQuickRestart => {
                Fault::MemberCrash { member, restart_after_ms: away_ms }
            }
            StaticFault::Pause => Fault::MemberPause { member, duration_ms: away_ms },
        }
    }
}

/// The clients of `consumer_protocol_static` for one seed: the group's server assignor, each
/// member's profile, then what happens to each member (two bounce within the session timeout on
/// every seed; the other three draw, half of them bouncing too), by member index.
struct StaticClients {
    assignor: &'static str,
    profiles: Vec<ClientProfile>,
    faults: Vec<StaticFault>,
}

impl StaticClients {
    fn of(seed: u64) -> Self {
        let mut clients = ConsumerClients::of(seed);
        let profiles = (0..5).map(|_| clients.profile()).collect();
        let rng = &mut clients.rng;
        let mut faults = vec![StaticFault::Bounce, StaticFault::Bounce];
        for _ in 0..3 {
            faults.push(match rng.random_range(0..10) {
                0..4 => StaticFault::Bounce,
                4 => StaticFault::LongBounce,
                5 | 6 => StaticFault::Crash,
                7 => StaticFault::CrashQuickRestart,
                _ => StaticFault::Pause,
            });
        }
        for i in (1..faults.len()).rev() {
            faults.swap(i, rng.random_range(0..=i));
        }
        Self { assignor: clients.assignor, profiles, faults }
    }
}

/// What happens to each member of `consumer_protocol_static` in the run of `seed`, by index.
pub fn static_faults(seed: u64) -> Vec<StaticFault> {
    StaticClients::of(seed).faults
}

/// Five static consumer-protocol members (`group.instance.id`), disturbed one at a time (see
/// [`StaticFault`]): most bounce within the session timeout and take their assignment back
/// without a reassignment, some come back after it, some crash, some pause past their session.
pub fn consumer_protocol_static(seed: u64) -> ScenarioSpec {
    let (mut s, mut rng) = base("consumer_protocol_static", seed, 5, 1, 3, 75_000);
    let clients = StaticClients::of(seed);
    for (m, profile) in s.members.iter_mut().zip(&clients.profiles) {
        m.config = consumer_member_config(&m.name, *profile, clients.assignor);
        m.config.group_instance_id = Some(format!("instance-{}", m.name));
    }
    size_consumer_sessions(&mut s);
    let session_ms = s.coordinator.consumer_session_timeout_ms.max(0) as Millis;
    let faults = clients
        .faults
        .into_iter()
        .enumerate()
        .map(|(i, kind)| {
            let t = 10_000 + i as Millis * 10_000 + rng.random_range(0..2_000);
            let away = kind.away_ms(&mut rng, session_ms);
            at(t, kind.fault(format!("m{i}"), away))
        })
        .collect();
    s.faults = FaultSchedule::new(faults);
    add_twin(&mut s, seed, 0..5, 62_000, TwinTiming::AfterRemoval { session_ms });
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn churn_draws_both_clients_and_both_assignors_over_seeds() {
        let mut profiles = std::collections::BTreeSet::new();
        let mut assignors = std::collections::BTreeSet::new();
        for seed in 0..20 {
            let spec = consumer_protocol_churn(seed);
            let first = spec.members[0].config.server_assignor.clone();
            for m in &spec.members {
                assert!(ClientProfile::CONSUMER.contains(&m.config.profile), "seed {seed}");
                assert_eq!(m.config.server_assignor, first, "one assignor per group");
                profiles.insert(m.config.profile);
            }
            assignors.insert(first.unwrap());
            assert_eq!(spec.coordinator.consumer_session_timeout_ms, 10_000);
        }
        assert_eq!(profiles.len(), 2);
        assert_eq!(assignors.len(), 2);
    }

    #[test]
    fn static_members_restart_one_at_a_time_and_every_kind_is_drawn() {
        let mut kinds = std::collections::BTreeSet::new();
        for seed in 0..40 {
            let spec = consumer_protocol_static(seed);
            assert!(spec.members.iter().all(|m| m.config.group_instance_id.is_some()));
            let faults = static_faults(seed);
            assert!(faults.iter().filter(|k| **k == StaticFault::Bounce).count() >= 2);
            kinds.extend(faults.iter().map(|k| format!("{k:?}")));
            let last_back = spec
                .faults
                .faults
                .iter()
                .map(|f| match &f.fault {
                    Fault::MemberLeave { restart_after_ms: away, .. }
                    | Fault::MemberCrash { restart_after_ms: away, .. }
                    | Fault::MemberPause { duration_ms: away, .. } => f.at_ms + away,
                    other => panic!("unexpected fault {other:?}"),
                })
                .max()
                .expect("faults");
            assert!(last_back < spec.liveness_start_ms, "seed {seed}: back before liveness");
        }
        assert_eq!(kinds.len(), 5, "{kinds:?}");
    }
}
