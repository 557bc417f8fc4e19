//! `group_limits`: six members for a group the broker caps at four (`group.max.size`, or
//! `group.consumer.max.size` for a consumer group, drawn), and in the classic group a member
//! offering an assignor the group does not share. Every seed must pass the checker; the
//! refused members are told GROUP_MAX_SIZE_REACHED (or INCONSISTENT_GROUP_PROTOCOL) and stop,
//! and the group never holds more members than the cap.
//!
//! Seeds: `GROUPSIM_SEEDS=<n>` (default sized for CI), or `GROUPSIM_SEED=<n>` to replay one.

use groupsim::testing::check_scenario;
use groupsim_history::{ConsumerGroupEvent, CoordinatorEvent, EventKind, MemberEvent};

#[test]
fn members_past_the_cap_are_refused_and_the_group_goes_on_with_the_others() {
    let reports = check_scenario("group_limits", 8);
    let mut refused = 0;
    for r in &reports {
        let seed = r.spec.seed;
        let mut largest = 0;
        let mut members = std::collections::BTreeSet::new();
        for e in r.history.events() {
            match &e.kind {
                EventKind::Member { event: MemberEvent::Fatal { error, .. }, .. } => {
                    assert!(
                        error == "GROUP_MAX_SIZE_REACHED" || error == "INCONSISTENT_GROUP_PROTOCOL",
                        "seed {seed}: stopped on {error}"
                    );
                    refused += 1;
                }
                EventKind::Coordinator {
                    event: CoordinatorEvent::GenerationStarted { members, .. },
                    ..
                } => {
                    largest = largest.max(members.len());
                }
                EventKind::Coordinator { event: CoordinatorEvent::ConsumerGroup(c), .. } => match c
                {
                    ConsumerGroupEvent::MemberJoined { member_id, .. } => {
                        members.insert(member_id.clone());
                        largest = largest.max(members.len());
                    }
                    ConsumerGroupEvent::MemberRemoved { member_id, .. } => {
                        members.remove(member_id);
                    }
                    _ => {}
                },
                _ => {}
            }
        }
        assert!(largest <= 4, "seed {seed}: the group held {largest} members");
    }
    assert!(refused > 0, "no member was refused");
}
