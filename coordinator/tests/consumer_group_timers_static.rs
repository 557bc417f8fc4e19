//! Consumer group timers (session and rebalance timeouts fence a member) and static members
//! (temporary leave with -2, replacement keeps the assignment).

mod consumer_harness;

use consumer_harness::*;
use groupsim_coordinator::{ConsumerGroupEvent, ConsumerRemovalReason};

fn removed(h: &Harness, member: &str) -> Option<ConsumerRemovalReason> {
    h.events.iter().find_map(|e| match e {
        ConsumerGroupEvent::MemberRemoved { member_id, reason, .. } if member_id == member => {
            Some(*reason)
        }
        _ => None,
    })
}

#[test]
fn session_timeout_fences_a_silent_member_and_releases_its_partitions() {
    let mut h = Harness::default();
    let (_, a_owned) = h.joined("a", &["t"]);
    h.joined("b", &["t"]);
    // a stays silent; b keeps heartbeating.
    for _ in 0..8 {
        h.advance(5_000);
        h.hb(beat("b", 2, &Default::default()));
    }
    h.advance(4_999);
    assert!(h.group().member("a").is_some(), "45 s not yet over");
    h.advance(1);
    assert!(h.group().member("a").is_none());
    assert_eq!(removed(&h, "a"), Some(ConsumerRemovalReason::SessionTimeout));
    assert!(h.events.iter().any(|e| matches!(e,
        ConsumerGroupEvent::PartitionsReleased { member_id, partitions, .. }
            if member_id == "a" && partitions.len() == a_owned.len())));
    // b takes everything at the next epoch.
    let r = h.hb(beat("b", 2, &Default::default()));
    assert_eq!(h.assigned(&r).unwrap().len(), 6);
    assert_eq!(r.member_epoch, 3);
}

#[test]
fn rebalance_timeout_fences_a_member_that_does_not_revoke() {
    let mut h = Harness::default();
    let (_, all) = h.joined("a", &["t"]);
    h.joined("b", &["t"]);
    h.hb(beat("a", 1, &all)); // asked to revoke: rebalance timeout (30 s) starts
    for _ in 0..5 {
        h.advance(5_000);
        assert_eq!(h.hb(beat("a", 1, &all)).error_code, 0, "heartbeats keep the session");
        h.hb(beat("b", 2, &Default::default()));
    }
    h.advance(5_000);
    assert!(h.group().member("a").is_none(), "fenced 30 s after it was asked to revoke");
    assert_eq!(removed(&h, "a"), Some(ConsumerRemovalReason::RebalanceTimeout));
    let r = h.hb(beat("a", 1, &all));
    assert_eq!(r.error_code, E::UnknownMemberId.code());
}

#[test]
fn revoking_in_time_cancels_the_rebalance_timeout() {
    let mut h = Harness::default();
    let (_, all) = h.joined("a", &["t"]);
    h.joined("b", &["t"]);
    let a_target = h.group().target_of("a");
    h.hb(beat("a", 1, &all));
    h.advance(10_000);
    h.hb(beat("a", 1, &a_target));
    for _ in 0..8 {
        h.advance(5_000);
        h.hb(beat("a", 2, &a_target));
        h.hb(beat("b", 2, &Default::default()));
    }
    assert!(h.group().member("a").is_some());
    assert_eq!(removed(&h, "a"), None);
}

#[test]
fn temporary_leave_keeps_the_partitions_owned_until_the_replacement_takes_them() {
    let mut h = Harness::default();
    let r = h.hb(join("s1", &["t"]).with_instance_id(Some(s("i"))));
    let owned = h.assigned(&r).unwrap();
    let r = h.hb(leave("s1", -2).with_instance_id(Some(s("i"))));
    assert_eq!((r.error_code, r.member_epoch), (0, -2));
    assert_eq!(h.group().member("s1").unwrap().member_epoch, -2);
    let epoch = h.group().group_epoch();
    // Another member joins: it may not take the leaving member's partitions.
    let (_, b_assigned) = h.joined("b", &["t"]);
    assert!(b_assigned.is_empty(), "still owned by the static member: {b_assigned:?}");
    // The instance comes back under a new member id: it replaces s1 and keeps its assignment.
    let r = h.hb(join("s2", &["t"]).with_instance_id(Some(s("i"))));
    assert_eq!(r.error_code, 0);
    assert!(h.group().member("s1").is_none());
    assert_eq!(removed(&h, "s1"), Some(ConsumerRemovalReason::Replaced));
    let kept = h.assigned(&r).unwrap();
    assert!(!kept.is_empty() && kept.is_subset(&owned), "keeps (its share of) the assignment");
    assert_eq!(h.group().group_epoch(), epoch + 1, "only b's join bumped the epoch");
    // The old member id is fenced.
    let r = h.hb(beat("s1", 1, &owned).with_instance_id(Some(s("i"))));
    assert_eq!(r.error_code, E::FencedInstanceId.code());
}

#[test]
fn a_static_member_that_does_not_come_back_is_fenced_by_its_session() {
    let mut h = Harness::default();
    h.hb(join("s1", &["t"]).with_instance_id(Some(s("i"))));
    h.hb(leave("s1", -2).with_instance_id(Some(s("i"))));
    h.advance(45_000);
    assert!(h.group().member("s1").is_none());
    assert_eq!(removed(&h, "s1"), Some(ConsumerRemovalReason::SessionTimeout));
    // Now the instance id is free: a new member id joins as a new member.
    let r = h.hb(join("s2", &["t"]).with_instance_id(Some(s("i"))));
    assert_eq!(r.error_code, 0);
}

#[test]
fn a_static_member_leaving_for_good_is_fenced_at_once() {
    let mut h = Harness::default();
    h.hb(join("s1", &["t"]).with_instance_id(Some(s("i"))));
    let r = h.hb(leave("s1", -1).with_instance_id(Some(s("i"))));
    assert_eq!((r.error_code, r.member_epoch), (0, -1));
    assert_eq!(removed(&h, "s1"), Some(ConsumerRemovalReason::Left));
    assert_eq!(h.group().static_member_id("i"), None);
}
