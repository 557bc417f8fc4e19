//! The scenario catalogue: every scenario groupsim ships, in the order `groupsim list` shows
//! them, with its name and summary. The recipes live one family per file below; each builds a
//! [`ScenarioSpec`](crate::scenario::ScenarioSpec) from a seed (the seed draws the timings, the
//! recipe fixes the shape). Every scenario ends with a liveness phase in which the group must
//! converge (Stable, every live member in the latest generation, every partition assigned,
//! commits at the log end).

pub mod admin;
pub mod churn;
pub mod consumer;
pub mod coordinator;
pub mod faults;
pub mod limits;
pub mod migration;
pub mod profiles;
pub mod rolling;
mod shape;
pub mod static_members;
pub mod storm;
pub mod subscriptions;
pub mod swarm;
pub mod timeouts;

use crate::scenario::Scenario;

/// A scenario name that is not in the catalogue.
#[derive(Debug, thiserror::Error)]
#[error("unknown scenario {name:?}; known scenarios: {known}")]
pub struct UnknownScenario {
    /// What was asked for.
    pub name: String,
    /// The catalogue's names, comma-separated.
    pub known: String,
}

/// Every scenario groupsim ships.
pub fn catalogue() -> Vec<Scenario> {
    vec![
        Scenario::new(
            "membership_churn",
            "members join and leave over time (3 -> 6 -> 2) on 2 topics / 12 partitions; \
             eager rebalances with commits on revoke",
            churn::membership_churn,
        ),
        Scenario::new(
            "coordinator_moves",
            "membership_churn on 3 brokers while the group's coordinator moves every \
             3-9 s (a third of the loads slow) and brokers crash and restart",
            coordinator::coordinator_moves,
        ),
        Scenario::new(
            "swarm",
            "every fault kind available to a seeded swarm (drops, partitions, latency, \
             pauses, crashes, leaves, stale acks, slow revokes, expansion), then liveness",
            swarm::swarm,
        ),
        Scenario::new(
            "swarm_cooperative",
            "the swarm's fault kinds and event triggers on Java cooperative consumers \
             (cooperative-sticky, KIP-429): failed SyncGroups while members keep their partitions",
            swarm::swarm_cooperative,
        ),
        Scenario::new(
            "swarm_mixed",
            "the swarm's fault kinds and event triggers on one classic group mixing Java eager, \
             Java cooperative, brod, Elsa and kafka-go members, all sharing roundrobin",
            swarm::swarm_mixed,
        ),
        Scenario::new(
            "mixed_protocol_swarm",
            "the swarm on one consumer group whose members speak both protocols throughout \
             (classic Java members inside a KIP-848 group), with a drawn migration policy and \
             size limits",
            swarm::mixed_protocol_swarm,
        ),
        Scenario::new("steady_state", "four members, no faults: one rebalance, then steady commits", churn::steady_state),
        Scenario::new("scale_up_down", "2 members, scale to 8, then down to 3: many join- and leave-driven rebalances", churn::scale_up_down),
        Scenario::new("rolling_restart", "five dynamic members restart one by one (LeaveGroup, rejoin as new members)", rolling::rolling_restart),
        Scenario::new("rolling_restart_static", "five static members (group.instance.id) restart one by one within the session timeout: no rebalance needed", rolling::rolling_restart_static),
        Scenario::new("coordinator_failover", "three brokers; the coordinator's broker crashes (failover after detection, group loaded from the offsets log), later the coordinator moves again", coordinator::coordinator_failover),
        Scenario::new("connection_flaps", "members' connections reset every few seconds and client hosts lose the brokers briefly", faults::connection_flaps),
        Scenario::new("zombie_pause", "a member pauses longer than its session timeout and resumes as a zombie that still believes it owns its partitions", faults::zombie_pause),
        Scenario::new("stale_acks", "brod members whose processing finishes after the rebalance that took the partition away: acks carry the old generation", faults::stale_acks),
        Scenario::new("partition_expansion", "both topics gain partitions mid-run; the leader notices on metadata refresh and rebalances", faults::partition_expansion),
        Scenario::new("slow_revoke", "revoke callbacks take longer than the rebalance timeout while members join", faults::slow_revoke),
        Scenario::new(
            "rebalance_timeout",
            "members that miss a join phase's end by a hair: brod/Elsa commits validated just \
             before the rebalance timeout land after it removed them; static members paused past \
             it (within their session) come back to a newer generation",
            timeouts::rebalance_timeout,
        ),
        Scenario::new("join_storm", "200 members on 8 client hosts join within seconds", storm::join_storm),
        Scenario::new("cooperative_upgrade", "eager-to-cooperative rolling upgrade in two bounces: [range] -> [cooperative-sticky, range] -> [cooperative-sticky]", rolling::cooperative_upgrade),
        Scenario::new(
            "profile_java_eager",
            "membership churn with Java eager consumers: auto-commit, commitSync on revoke, \
             max.poll.interval enforced",
            profiles::profile_java_eager,
        ),
        Scenario::new(
            "profile_java_cooperative",
            "membership churn with Java cooperative consumers (cooperative-sticky, KIP-429): \
             kept partitions are never revoked, moved ones take two rebalances",
            profiles::profile_java_cooperative,
        ),
        Scenario::new(
            "profile_brod",
            "membership churn with brod members: asynchronous acks carrying the generation, \
             timer commits, one commit attempt before rejoining, roundrobin_v2",
            profiles::profile_brod,
        ),
        Scenario::new(
            "profile_elsa",
            "membership churn with Elsa members: per-partition workers stopped on revoke, acks \
             through a generation-aware acknowledger",
            profiles::profile_elsa,
        ),
        Scenario::new(
            "profile_kafka_go",
            "membership churn with kafka-go members: commits scoped to a generation, no commit \
             on revoke, join backoff, partition watcher",
            profiles::profile_kafka_go,
        ),
        Scenario::new(
            "mixed_profiles",
            "membership churn in one group mixing Java eager, Java cooperative (eager mode: it \
             also offers roundrobin), brod, Elsa and kafka-go members; roundrobin wins the vote",
            profiles::mixed_profiles,
        ),
        Scenario::new(
            "consumer_protocol_churn",
            "membership churn with KIP-848 consumer-protocol members (Java consumer and \
             librdkafka, drawn per member) and a server assignor drawn per seed (uniform or \
             range): incremental reconciliation under member epochs",
            consumer::consumer_protocol_churn,
        ),
        Scenario::new(
            "consumer_protocol_static",
            "five static KIP-848 members (group.instance.id) disturbed one at a time: most leave \
             with epoch -2 and are back within the session timeout (same assignment, no \
             reassignment), some come back after it, some crash (a quick restart is refused \
             UNRELEASED_INSTANCE_ID), some pause past their session and are fenced",
            consumer::consumer_protocol_static,
        ),
        Scenario::new(
            "consumer_protocol_swarm",
            "the swarm's fault kinds on KIP-848 consumer-protocol members (Java and librdkafka), \
             with triggers at a revocation asked for, its acknowledgement, a partition handed \
             over and a fenced member rejoining",
            swarm::consumer_protocol_swarm,
        ),
        Scenario::new(
            "protocol_migration",
            "a classic Java group (eager or cooperative) rolled over to the consumer protocol \
             (KIP-848) member by member (the first one's join upgrades the group) and back (the \
             last one's leave downgrades it), with connection drops, a coordinator move and a \
             member crash",
            migration::protocol_migration,
        ),
        Scenario::new(
            "migration_faults",
            "protocol_migration's roll-over and back under member faults: a short pause and one \
             past the session, late commits, error answers Kafka's coordinator gives on both \
             protocols' APIs, and a forced rebalance",
            migration::migration_faults,
        ),
        Scenario::new(
            "mixed_subscriptions",
            "six classic Java members subscribed to different topics (one to three of three; \
             the leader often to fewer than the group), with range, roundrobin, sticky or \
             cooperative-sticky drawn: three bounce, connections drop, the coordinator moves",
            subscriptions::mixed_subscriptions,
        ),
        Scenario::new(
            "static_churn",
            "five static Java members (session twice the rebalance timeout) and a dynamic one: \
             crashes back within the session and after it, a host cut off past the rebalance \
             timeout, and the leader paused or crashed right after the JoinGroup answers",
            static_members::static_churn,
        ),
        Scenario::new(
            "group_limits",
            "six members for a group the broker caps at four (group.max.size, or \
             group.consumer.max.size for a consumer group, drawn), and in the classic group a \
             member offering an assignor the group does not share: the refused members stop, \
             the group goes on; a member bounces and the coordinator moves",
            limits::group_limits,
        ),
        Scenario::new(
            "static_migration",
            "protocol_migration with static members: each keeps its group.instance.id through \
             the roll-over to the consumer protocol and back (instances taken over from \
             classic members at once, consumer-protocol members leaving temporarily)",
            migration::static_migration,
        ),
        Scenario::new(
            "admin_observer",
            "protocol_migration with an admin client describing the group and listing every \
             broker's groups every second or so (ConsumerGroupDescribe, falling back to \
             DescribeGroups for a classic group): each answer is checked against the history",
            admin::admin_observer,
        ),
        Scenario::new(
            "invalid_requests",
            "protocol_migration with a misbehaving client sending the coordinator requests Kafka \
             refuses in every group state (malformed heartbeats, bad joins, strangers' requests); \
             each must be refused and the group must not notice",
            admin::invalid_requests,
        ),
    ]
}

/// Looks a scenario up by name.
pub fn find(name: &str) -> Result<Scenario, UnknownScenario> {
    let all = catalogue();
    all.iter().find(|s| s.name == name).copied().ok_or_else(|| UnknownScenario {
        name: name.to_string(),
        known: all.iter().map(|s| s.name).collect::<Vec<_>>().join(", "),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_scenario_names_the_known_ones() {
        let err = find("nope").unwrap_err().to_string();
        assert!(err.contains("membership_churn"), "{err}");
    }
}
