//! The KIP-848 coordinator bug switches, driven at chosen instants: each test opens with the
//! mechanism of the bug it models, shows the harm with the switch on and Kafka's behaviour with
//! it off, on the same script.

mod consumer_harness;

use std::collections::BTreeSet;

use consumer_harness::*;
use groupsim_coordinator::consumer_group::MemberState;
use groupsim_coordinator::{ConsumerGroupEvent, CoordinatorBugs, GroupCoordinator};
use groupsim_wire::TopicPartition;

fn harness(bugs: CoordinatorBugs) -> Harness {
    Harness::with(GroupCoordinator::new(groupsim_coordinator::CoordinatorConfig {
        bugs,
        ..config()
    }))
}

/// Partitions handed to `member` by the events from `from` on.
fn assigned_to(h: &Harness, from: usize, member: &str) -> BTreeSet<TopicPartition> {
    h.events[from..]
        .iter()
        .filter_map(|e| match e {
            ConsumerGroupEvent::PartitionsAssigned { member_id, partitions, .. }
                if member_id == member =>
            {
                Some(partitions.iter().cloned())
            }
            _ => None,
        })
        .flatten()
        .collect()
}

/// robot-head/crabka#521: a coordinator that answers every heartbeat with the member's whole
/// target, withholding nothing, tells a joining member to take partitions the first member has
/// not even been asked to revoke yet. Kafka withholds them (UNRELEASED_PARTITIONS) until the
/// first member released them.
#[test]
fn assigning_unreleased_partitions_hands_a_partition_to_two_members() {
    for on in [false, true] {
        let mut h =
            harness(CoordinatorBugs { assigns_unreleased_partitions: on, ..Default::default() });
        let (_, all) = h.joined("a", &["t"]);
        let from = h.events.len();
        let (_, b_assigned) = h.joined("b", &["t"]);
        let b_target = h.group().target_of("b");
        assert_eq!(b_target.len(), 3);
        // a has not heartbeated since: it owns every partition, none released.
        assert_eq!(h.group().member("a").unwrap().assigned, all);
        let released = h.events[from..]
            .iter()
            .any(|e| matches!(e, ConsumerGroupEvent::PartitionsReleased { .. }));
        assert!(!released);
        if on {
            assert_eq!(b_assigned, b_target, "handed over while a still owns them");
            assert_eq!(assigned_to(&h, from, "b"), b_target);
            assert_eq!(h.group().member("b").unwrap().state, MemberState::Stable);
            for p in &b_target {
                assert_eq!(h.group().partition_epochs().owner(p), Some("b"));
            }
        } else {
            assert!(b_assigned.is_empty(), "withheld until a releases them");
            assert_eq!(h.group().member("b").unwrap().state, MemberState::UnreleasedPartitions);
            for p in &b_target {
                assert_eq!(h.group().partition_epochs().owner(p), Some("a"));
            }
        }
    }
}

/// KAFKA-16147: a member revoking partitions gets them back from a newer target before the
/// revocation completed (their new owner left); the coordinator then loses their owner epochs.
/// They read as free while the member still owns them, so the next target that moves them
/// away hands them to the new owner at once. Kafka keeps the owner epoch and withholds them.
#[test]
fn forgetting_the_owner_of_a_reclaimed_partition_hands_it_to_two_members() {
    for on in [false, true] {
        let mut h = harness(CoordinatorBugs {
            forgets_owner_of_reclaimed_partition: on,
            ..Default::default()
        });
        let (_, all) = h.joined("a", &["t"]);
        h.joined("b", &["t"]);
        let a_target = h.group().target_of("a");
        let moving = h.group().target_of("b");
        // a is asked to revoke half; b leaves before a acknowledges.
        h.hb(beat("a", 1, &all));
        assert_eq!(h.group().member("a").unwrap().pending_revocation, moving);
        h.hb(leave("b", -1));
        // a acknowledges: the new target gives everything back to it.
        let r = h.hb(beat("a", 1, &a_target));
        assert_eq!((r.member_epoch, h.assigned(&r)), (3, Some(all.clone())));
        let forgotten: BTreeSet<TopicPartition> = all
            .iter()
            .filter(|p| h.group().partition_epochs().owner(p).is_none())
            .cloned()
            .collect();
        assert_eq!(forgotten, if on { moving.clone() } else { BTreeSet::new() });

        // c joins: its target takes partitions from a, which has not heartbeated since.
        let from = h.events.len();
        let (_, c_assigned) = h.joined("c", &["t"]);
        let c_target = h.group().target_of("c");
        let taken_at_once = c_target.intersection(&moving).cloned().collect::<BTreeSet<_>>();
        assert!(!taken_at_once.is_empty(), "c's target includes reclaimed partitions");
        assert_eq!(h.group().member("a").unwrap().assigned, all, "a still owns everything");
        if on {
            assert_eq!(c_assigned, taken_at_once, "handed over while a still owns them");
            assert_eq!(assigned_to(&h, from, "c"), taken_at_once);
        } else {
            assert!(c_assigned.is_empty(), "withheld until a releases them");
            assert_eq!(h.group().member("c").unwrap().state, MemberState::UnreleasedPartitions);
        }
    }
}
