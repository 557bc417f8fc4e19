//! KIP-848 consumer-protocol scenarios: members that heartbeat with ConsumerGroupHeartbeat and
//! let the coordinator assign (the Java consumer's `AsyncKafkaConsumer` and librdkafka, drawn
//! per member). Each must pass the checker on every seed, and each test asserts what its
//! scenario is about from the history.
//!
//! Seeds: `GROUPSIM_SEEDS=<n>` (default sized for CI), or `GROUPSIM_SEED=<n>` to replay one.

use std::collections::{BTreeMap, BTreeSet};

use groupsim::history::{EventKind, History, WorldEvent};
use groupsim::runner::RunReport;
use groupsim::testing::check_scenario;
use groupsim_coordinator::consumer_event::ConsumerGroupEvent;
use groupsim_coordinator::CoordinatorEvent;
use groupsim_member::{ClientProfile, MemberEvent};
use groupsim_wire::TopicPartition;

const SEEDS: u64 = 8;

/// The consumer-group events of a history, with their index.
fn group_events(h: &History) -> impl Iterator<Item = (usize, &ConsumerGroupEvent)> {
    h.events().iter().enumerate().filter_map(|(i, e)| match &e.kind {
        EventKind::Coordinator { event: CoordinatorEvent::ConsumerGroup(c), .. } => Some((i, c)),
        _ => None,
    })
}

/// Member id -> member name, from the members' own epoch reports.
fn names(h: &History) -> BTreeMap<String, String> {
    h.events()
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Member {
                member,
                event: MemberEvent::MemberEpochChanged { member_id, .. },
            } => Some((member_id.clone(), member.clone())),
            _ => None,
        })
        .collect()
}

/// Incremental reconciliation: a member that is not leaving gives up exactly the partitions
/// the coordinator asked it to revoke (and keeps consuming the rest); it never revokes a
/// partition it was not asked for. Returns how many such revocations the run had.
fn assert_revokes_only_what_the_coordinator_asked(r: &RunReport) -> usize {
    let seed = r.spec.seed;
    let ids = names(&r.history);
    let mut asked: BTreeMap<String, BTreeSet<TopicPartition>> = BTreeMap::new();
    let mut leaving: BTreeSet<String> = BTreeSet::new();
    let mut revokes = 0;
    for e in r.history.events() {
        match &e.kind {
            EventKind::Coordinator {
                event:
                    CoordinatorEvent::ConsumerGroup(ConsumerGroupEvent::PartitionsRevoking {
                        member_id,
                        partitions,
                        ..
                    }),
                ..
            } => {
                let name = ids.get(member_id).cloned().unwrap_or_default();
                asked.entry(name).or_default().extend(partitions.iter().cloned());
            }
            EventKind::World(WorldEvent::MemberLeaveRequested { member }) => {
                leaving.insert(member.clone());
            }
            EventKind::Member { member, event: MemberEvent::Revoked { partitions, .. } }
                if !leaving.contains(member) =>
            {
                let owed = asked.entry(member.clone()).or_default();
                for tp in partitions {
                    assert!(
                        owed.remove(tp),
                        "seed {seed}: {member} revoked {tp} without being asked to"
                    );
                }
                revokes += 1;
            }
            _ => {}
        }
    }
    revokes
}

#[test]
fn consumer_protocol_churn_reconciles_incrementally_under_the_assignor_it_asks_for() {
    let mut profiles = BTreeSet::new();
    let mut incremental = 0;
    for r in check_scenario("consumer_protocol_churn", SEEDS) {
        let seed = r.spec.seed;
        let asked = r.spec.members[0].config.server_assignor.clone().expect("an assignor");
        profiles.extend(r.spec.members.iter().map(|m| m.config.profile));
        let mut targets = 0;
        let mut bumps = 0;
        for (_, e) in group_events(&r.history) {
            match e {
                ConsumerGroupEvent::TargetAssignmentComputed { assignor, .. } => {
                    assert_eq!(assignor, &asked, "seed {seed}");
                    targets += 1;
                }
                ConsumerGroupEvent::GroupEpochBumped { .. } => bumps += 1,
                _ => {}
            }
        }
        // Six joins and four leaves: each bumps the group epoch (some joins share a target).
        assert!(bumps >= 10, "seed {seed}: {bumps} group epoch bumps");
        assert!(targets >= 5, "seed {seed}: {targets} target assignments");
        assert_eq!(r.verdict.stats.rebalances, targets as u64, "seed {seed}");
        let s = &r.verdict.stats;
        assert!(s.records_processed >= s.records_produced, "seed {seed}: all processed");
        incremental += assert_revokes_only_what_the_coordinator_asked(&r);
    }
    assert!(incremental > 0, "some member revoked part of its assignment and kept the rest");
    assert!(
        profiles.contains(&ClientProfile::JavaConsumer)
            && profiles.contains(&ClientProfile::LibrdkafkaConsumer),
        "both clients ran: {profiles:?}"
    );
}
