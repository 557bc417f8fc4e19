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
use rand::RngExt;
use rand_chacha::ChaCha8Rng;

use super::churn::churn_spec;
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
}
