//! KIP-848 consumer groups: joining, the three epochs, and reconciliation (revoke before the
//! epoch moves; a partition reaches its new owner only after the previous owner released it).

mod consumer_harness;

use consumer_harness::*;
use groupsim_coordinator::consumer_group::MemberState;
use groupsim_coordinator::{ConsumerGroupEvent, ConsumerGroupState};

#[test]
fn first_member_joins_at_epoch_one_with_every_partition() {
    let mut h = Harness::default();
    let (epoch, assigned) = h.joined("a", &["t"]);
    assert_eq!(epoch, 1);
    assert_eq!(assigned, set(&[("t", 0), ("t", 1), ("t", 2), ("t", 3), ("t", 4), ("t", 5)]));
    assert_eq!(h.group().group_epoch(), 1);
    assert_eq!(h.group().assignment_epoch(), 1);
    assert_eq!(h.group().state(), ConsumerGroupState::Stable);
    assert!(matches!(h.events[0], ConsumerGroupEvent::GroupEpochBumped { epoch: 1, .. }));
}

#[test]
fn heartbeat_answer_carries_the_interval_and_no_assignment_when_nothing_changed() {
    let mut h = Harness::default();
    let (_, assigned) = h.joined("a", &["t"]);
    let r = h.hb(beat("a", 1, &assigned));
    assert_eq!((r.error_code, r.member_epoch, r.heartbeat_interval_ms), (0, 1, 5_000));
    assert!(r.assignment.is_none(), "unchanged assignment is not repeated");
}

/// The whole dance of a second member joining: the first must revoke half its partitions
/// before its epoch moves, and the second gets them only after the first released them.
#[test]
fn second_member_gets_partitions_only_after_the_first_revoked_them() {
    let mut h = Harness::default();
    let (_, all) = h.joined("a", &["t"]);
    // b joins: group epoch 2, new target; b moves to epoch 2 but its partitions are unreleased.
    let (b_epoch, b_assigned) = h.joined("b", &["t"]);
    assert_eq!(b_epoch, 2);
    assert!(b_assigned.is_empty(), "a still owns b's target partitions");
    assert_eq!(h.group().member("b").unwrap().state, MemberState::UnreleasedPartitions);
    assert_eq!(h.group().state(), ConsumerGroupState::Reconciling);
    let b_target = h.group().target_of("b");
    let a_target = h.group().target_of("a");
    assert_eq!(b_target.len(), 3);
    assert_eq!(a_target.len(), 3);

    // a heartbeats at epoch 1 still owning everything: asked to revoke, stays at epoch 1.
    let r = h.hb(beat("a", 1, &all));
    assert_eq!(r.member_epoch, 1, "no epoch move before the revocation is acknowledged");
    assert_eq!(h.assigned(&r), Some(a_target.clone()));
    assert_eq!(h.group().member("a").unwrap().state, MemberState::UnrevokedPartitions);
    // a heartbeats again without having revoked: nothing moves.
    let r = h.hb(beat("a", 1, &all));
    assert_eq!((r.member_epoch, r.assignment.is_none()), (1, true));
    // b still waits.
    let r = h.hb(beat("b", 2, &Default::default()));
    assert_eq!((r.member_epoch, r.assignment.is_none()), (2, true));

    // a acknowledges: owns only its target now, moves to epoch 2.
    let released_at = h.events.len();
    let r = h.hb(beat("a", 1, &a_target));
    assert_eq!(r.member_epoch, 2);
    assert_eq!(h.group().member("a").unwrap().state, MemberState::Stable);
    // b gets them now.
    let r = h.hb(beat("b", 2, &Default::default()));
    assert_eq!(h.assigned(&r), Some(b_target.clone()));
    assert_eq!(h.group().state(), ConsumerGroupState::Stable);

    let released = h.events[released_at..].iter().position(|e| {
        matches!(e, ConsumerGroupEvent::PartitionsReleased { member_id, partitions, .. }
            if member_id == "a" && partitions.iter().cloned().collect::<std::collections::BTreeSet<_>>() == b_target)
    });
    let assigned = h.events[released_at..].iter().position(|e| {
        matches!(e, ConsumerGroupEvent::PartitionsAssigned { member_id, .. } if member_id == "b")
    });
    assert!(released.unwrap() < assigned.unwrap(), "released before reassigned: {:?}", h.events);
    // Owner epochs follow: every partition owned by exactly its target's member.
    for p in &b_target {
        assert_eq!(h.group().partition_epochs().owner(p), Some("b"));
    }
}

#[test]
fn previous_epoch_is_accepted_when_the_owned_partitions_are_still_assigned() {
    let mut h = Harness::default();
    let (_, all) = h.joined("a", &["t"]);
    h.joined("b", &["t"]);
    let a_target = h.group().target_of("a");
    h.hb(beat("a", 1, &all));
    let r = h.hb(beat("a", 1, &a_target));
    assert_eq!(r.member_epoch, 2);
    // The answer with epoch 2 was lost: a retries at epoch 1 with its (still assigned) partitions.
    let r = h.hb(beat("a", 1, &a_target));
    assert_eq!((r.error_code, r.member_epoch), (0, 2));
}

#[test]
fn subscription_change_bumps_the_group_epoch_and_recomputes_the_target() {
    let mut h = Harness::default();
    let (_, owned) = h.joined("a", &["t"]);
    let r = h.hb(beat("a", 1, &owned).with_subscribed_topic_names(Some(vec![
        kafka_protocol::messages::TopicName(s("t")),
        kafka_protocol::messages::TopicName(s("u")),
    ])));
    assert_eq!(h.group().group_epoch(), 2);
    assert_eq!(r.member_epoch, 2, "nothing to revoke: straight to the new epoch");
    assert_eq!(h.assigned(&r).unwrap().len(), 9);
}

#[test]
fn new_partitions_of_a_subscribed_topic_bump_the_group_epoch() {
    let mut h = Harness::default();
    let (_, owned) = h.joined("a", &["u"]);
    h.c.set_topics(groupsim_coordinator::TopicsImage::new([("t", 6), ("u", 5)]));
    let r = h.hb(beat("a", 1, &owned));
    assert_eq!(h.group().group_epoch(), 2);
    assert_eq!(h.assigned(&r).unwrap().len(), 5);
}

#[test]
fn range_assignor_is_chosen_per_request_and_gives_contiguous_ranges() {
    let mut h = Harness::default();
    let r = h.hb(join("a", &["t"]).with_server_assignor(Some(s("range"))));
    let a_all = h.assigned(&r).unwrap();
    let r = h.hb(join("b", &["t"]).with_server_assignor(Some(s("range"))));
    assert_eq!(r.error_code, 0);
    assert_eq!(h.group().preferred_assignor(), "range");
    assert_eq!(h.group().target_of("a"), set(&[("t", 0), ("t", 1), ("t", 2)]));
    assert_eq!(h.group().target_of("b"), set(&[("t", 3), ("t", 4), ("t", 5)]));
    assert_eq!(a_all.len(), 6);
}

#[test]
fn leaving_releases_partitions_and_the_rest_take_them_over() {
    let mut h = Harness::default();
    let (_, all) = h.joined("a", &["t"]);
    h.joined("b", &["t"]);
    let a_target = h.group().target_of("a");
    h.hb(beat("a", 1, &all));
    h.hb(beat("a", 1, &a_target));
    let r = h.hb(beat("b", 2, &Default::default()));
    let b_owned = h.assigned(&r).unwrap();
    let r = h.hb(leave("a", -1));
    assert_eq!((r.error_code, r.member_epoch), (0, -1));
    assert_eq!(r.member_id.as_deref(), Some("a"));
    assert!(h.group().member("a").is_none());
    assert_eq!(h.group().group_epoch(), 3);
    assert_eq!(h.group().state(), ConsumerGroupState::Assigning);
    let r = h.hb(beat("b", 2, &b_owned));
    assert_eq!(r.member_epoch, 3);
    assert_eq!(h.assigned(&r).unwrap().len(), 6);
}
