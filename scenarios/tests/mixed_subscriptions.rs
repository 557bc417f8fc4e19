//! `mixed_subscriptions`: six classic Java members subscribed to different topics, under
//! bounces, connection drops and a coordinator move. Every seed must pass the checker, every
//! stored assignment must give a topic's partitions to its subscribers only, and the leader
//! must often have to fetch metadata for topics only others subscribe to.
//!
//! Seeds: `GROUPSIM_SEEDS=<n>` (default sized for CI), or `GROUPSIM_SEED=<n>` to replay one.

use std::collections::{BTreeMap, BTreeSet};

use groupsim::testing::check_scenario;
use groupsim_history::{CoordinatorEvent, EventKind};

#[test]
fn members_get_only_the_topics_they_subscribe_to_and_the_group_converges() {
    let reports = check_scenario("mixed_subscriptions", 12);
    let mut narrow_leader = 0;
    let mut assignors = BTreeSet::new();
    for r in &reports {
        let seed = r.spec.seed;
        let topics: BTreeMap<&str, BTreeSet<&str>> = r
            .spec
            .members
            .iter()
            .map(|m| (m.name.as_str(), m.config.topics.iter().map(String::as_str).collect()))
            .collect();
        let all: BTreeSet<&str> = topics.values().flatten().copied().collect();
        assert_eq!(all.len(), 3, "seed {seed}: every topic has a subscriber: {topics:?}");
        assert!(
            topics.values().any(|t| t.len() < 3),
            "seed {seed}: subscriptions differ: {topics:?}"
        );
        assignors.insert(format!("{:?}", r.spec.members[0].config.assignors));
        let mut name_of: BTreeMap<&str, &str> = BTreeMap::new();
        let mut stored = 0;
        for e in r.history.events() {
            let EventKind::Coordinator { event, .. } = &e.kind else { continue };
            match event {
                CoordinatorEvent::MemberAdded { member_id, client_id, .. } => {
                    name_of.insert(member_id, client_id);
                }
                CoordinatorEvent::GenerationStarted { leader: Some(leader), .. } => {
                    let name = name_of.get(leader.as_str()).copied().unwrap_or_default();
                    narrow_leader += usize::from(topics.get(name).is_some_and(|t| t.len() < 3));
                }
                CoordinatorEvent::AssignmentStored { assignments, generation, .. } => {
                    stored += 1;
                    for a in assignments {
                        let name = name_of[a.member_id.as_str()];
                        for tp in &a.partitions {
                            assert!(
                                topics[name].contains(&*tp.topic),
                                "seed {seed} generation {generation}: {name} got {tp} but \
                                 subscribes to {:?}",
                                topics[name]
                            );
                        }
                    }
                }
                _ => {}
            }
        }
        assert!(stored > 0, "seed {seed}: no assignment stored");
    }
    assert!(narrow_leader > 0, "no generation was led by a member subscribed to fewer topics");
    if reports.len() >= 12 {
        assert!(assignors.len() >= 2, "the seeds drew one assignor only: {assignors:?}");
    } else {
        eprintln!("assignor variety not checked: {} seeds run, 12 needed", reports.len());
    }
}
