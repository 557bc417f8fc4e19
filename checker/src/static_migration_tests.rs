//! The checker on hand-made histories of static members migrating between the protocols.
//!
//! static_migration seed 114: a classic group lost a member (its session ended) and started a
//! rebalance; before it completed, a consumer-protocol static member upgraded the group by
//! taking over a classic member's instance. Kafka converts each classic member's stored
//! assignment into its target, and a static replacement copies the old member's subscription,
//! so no group epoch is bumped and no new target computed: the lost member's partitions stay
//! unassigned through every later static replacement, and through the downgrade back to the
//! classic protocol (a static replacement there starts no rebalance either). Kafka allows it;
//! the checker names it `static-upgrade-orphans` and still fails a group that leaves a partition
//! unassigned after a target was computed.
//!
//! The same seeds showed two views the checker lacked: a consumer-protocol static member keeps
//! its instance id in the classic group a downgrade makes (a classic static member replacing it
//! there takes over its place and partitions), and a downgrade by such a replacement starts no
//! rebalance (Kafka's convertToClassicGroup with a joining member).

use groupsim_history::{
    ConsumerGroupEvent, ConsumerRemovalReason, ConvertedMember, CoordinatorEvent, GroupState,
    RemovalReason, TargetShare, WorldEvent,
};

use super::tests::{clean, tp, G, H};
use super::{check, AnomalyClass, Hazard, Verdict};

fn converted(id: &str, epoch: i32, ps: &[i32]) -> ConvertedMember {
    ConvertedMember {
        member_id: id.into(),
        member_epoch: epoch,
        partitions: ps.iter().map(|p| tp(*p)).collect(),
    }
}

fn cg(h: &mut H, e: ConsumerGroupEvent) -> &mut H {
    h.coord(CoordinatorEvent::ConsumerGroup(e))
}

/// `clean()`'s generation 1 (a on t-0, b on t-1, both committed at 10); b stops and its session
/// ends, so the group starts a rebalance; before it completes, the group is upgraded with a
/// alone, holding t-0: t-1 has no owner in the consumer group.
fn upgraded_without_t1() -> H {
    let mut h = clean();
    h.world(WorldEvent::MemberStopped { member: "m1".into() });
    h.coord(CoordinatorEvent::MemberRemoved {
        group: G.into(),
        member_id: "b".into(),
        reason: RemovalReason::SessionTimeout,
    });
    h.coord(CoordinatorEvent::GroupStateChanged {
        group: G.into(),
        from: GroupState::Stable,
        to: GroupState::PreparingRebalance,
        generation: 1,
    });
    cg(
        &mut h,
        ConsumerGroupEvent::GroupUpgraded {
            group: G.into(),
            generation: 1,
            members: vec![converted("a", 1, &[0])],
        },
    );
    h
}

/// `clean()`'s generation 1 upgraded whole: a on t-0 and b on t-1 convert with it.
fn upgraded_whole() -> H {
    let mut h = clean();
    cg(
        &mut h,
        ConsumerGroupEvent::GroupUpgraded {
            group: G.into(),
            generation: 1,
            members: vec![converted("a", 1, &[0]), converted("b", 1, &[1])],
        },
    );
    h
}

fn finish(h: &mut H) -> Verdict {
    check(&h.finish(&[(0, 10), (1, 10)]))
}

#[test]
fn partitions_an_upgrade_left_to_nobody_without_a_new_target_are_the_hazard() {
    let v = finish(&mut upgraded_without_t1());
    assert!(v.is_ok(), "{:?}", v.anomalies);
    let e = v.hazards.first().expect("the stuck group is shown as a hazard");
    assert_eq!(e.hazard, Hazard::StaticUpgradeOrphans);
    assert_eq!(e.anomaly.class, AnomalyClass::Stuck);
    assert!(e.anomaly.message.contains("t-1 is owned by no member"), "{:?}", e.anomaly);
}

#[test]
fn a_target_that_still_leaves_the_partition_to_nobody_is_stuck() {
    let mut h = upgraded_without_t1();
    cg(&mut h, ConsumerGroupEvent::GroupEpochBumped { group: G.into(), epoch: 2 });
    cg(
        &mut h,
        ConsumerGroupEvent::TargetAssignmentComputed {
            group: G.into(),
            epoch: 2,
            assignor: "uniform".into(),
            assignments: vec![TargetShare { member_id: "a".into(), partitions: vec![tp(0)] }],
        },
    );
    let v = finish(&mut h);
    assert!(v.hazards.is_empty(), "{:?}", v.hazards);
    assert!(v.anomalies.iter().any(|a| a.class == AnomalyClass::Stuck), "{:?}", v.anomalies);
}

#[test]
fn an_upgrade_that_leaves_a_partition_to_nobody_explains_no_other_partition() {
    // t-0's commit is behind its log end: that is a failure whatever the upgrade left.
    let mut h = upgraded_without_t1();
    let v = check(&h.finish(&[(0, 20), (1, 10)]));
    let stuck = v.anomalies.iter().find(|a| a.class == AnomalyClass::Stuck).expect("stuck");
    assert!(stuck.message.contains("t-0 committed 10 < log end 20"), "{}", stuck.message);
    assert!(!stuck.message.contains("t-1"), "{}", stuck.message);
}

/// `upgraded_without_t1`, then back to the classic protocol: a (a static member, instance
/// `i-a`) is replaced in the consumer group by a consumer-protocol member s1 and then by a
/// classic static member s2, which makes the group classic again with no rebalance.
fn downgraded_by_replacement() -> H {
    let mut h = upgraded_without_t1();
    cg(
        &mut h,
        ConsumerGroupEvent::MemberRemoved {
            group: G.into(),
            member_id: "a".into(),
            member_epoch: 1,
            reason: ConsumerRemovalReason::Replaced,
        },
    );
    cg(
        &mut h,
        ConsumerGroupEvent::MemberJoined {
            group: G.into(),
            member_id: "s1".into(),
            group_instance_id: Some("i-a".into()),
            client_id: "m0".into(),
            classic_protocol: false,
        },
    );
    cg(
        &mut h,
        ConsumerGroupEvent::MemberRemoved {
            group: G.into(),
            member_id: "s1".into(),
            member_epoch: 1,
            reason: ConsumerRemovalReason::Replaced,
        },
    );
    cg(
        &mut h,
        ConsumerGroupEvent::GroupDowngraded {
            group: G.into(),
            group_epoch: 1,
            leaving_member: "s1".into(),
            members: vec![converted("s2", 1, &[0])],
        },
    );
    h
}

#[test]
fn the_orphans_stay_the_hazard_through_a_downgrade_by_static_replacement() {
    let mut h = downgraded_by_replacement();
    h.member(
        "m0",
        groupsim_history::MemberEvent::Joined {
            member_id: "s2".into(),
            generation: 1,
            leader: "s2".into(),
            protocol: "range".into(),
            is_leader: true,
        },
    );
    let v = finish(&mut h);
    assert!(v.is_ok(), "{:?}", v.anomalies);
    let e = v.hazards.first().expect("the stuck group is shown as a hazard");
    assert_eq!(e.hazard, Hazard::StaticUpgradeOrphans);
    assert!(e.anomaly.message.contains("t-1 is unassigned in generation 1"), "{:?}", e.anomaly);
}

#[test]
fn a_downgrade_by_static_replacement_starts_no_rebalance_a_move_could_lose() {
    // Without a rebalance to lose, a coordinator move after the downgrade is no lost-downgrade
    // hazard: what stays unassigned is the upgrade's orphan.
    let mut h = downgraded_by_replacement();
    h.coord(CoordinatorEvent::GroupUnloaded { group: G.into(), partition: 0 });
    let v = finish(&mut h);
    assert!(v.hazards.iter().all(|e| e.hazard == Hazard::StaticUpgradeOrphans), "{:?}", v.hazards);
}

/// A consumer-protocol static member s1 (instance `i-1`) holds t-1 when the group is
/// downgraded; a classic static member s2 with the same instance id then takes its place in
/// the classic group, as Kafka replaces a static member, and commits t-1. With `known` false the
/// instance was never the consumer member's.
fn classic_replacement_after_downgrade(known: bool) -> Verdict {
    let mut h = upgraded_whole();
    cg(
        &mut h,
        ConsumerGroupEvent::MemberJoined {
            group: G.into(),
            member_id: "s1".into(),
            group_instance_id: known.then(|| "i-1".into()),
            client_id: "m1".into(),
            classic_protocol: false,
        },
    );
    cg(
        &mut h,
        ConsumerGroupEvent::MemberRemoved {
            group: G.into(),
            member_id: "b".into(),
            member_epoch: 1,
            reason: ConsumerRemovalReason::Replaced,
        },
    );
    cg(
        &mut h,
        ConsumerGroupEvent::GroupDowngraded {
            group: G.into(),
            group_epoch: 1,
            leaving_member: "x".into(),
            members: vec![converted("a", 1, &[0]), converted("s1", 1, &[1])],
        },
    );
    h.coord(CoordinatorEvent::MemberRemoved {
        group: G.into(),
        member_id: "s1".into(),
        reason: RemovalReason::Fenced,
    });
    h.coord(CoordinatorEvent::MemberAdded {
        group: G.into(),
        member_id: "s2".into(),
        group_instance_id: Some("i-1".into()),
        client_id: "m1".into(),
    });
    h.produced(1, 5).processed("m1", "s2", 1, 1, 10, 14).commit("s2", 1, 1, 15);
    check(&h.h.clone())
}

#[test]
fn a_classic_static_member_takes_over_a_consumer_members_instance_after_a_downgrade() {
    let v = classic_replacement_after_downgrade(true);
    assert!(v.anomalies.is_empty(), "{:?}", v.anomalies);
}

#[test]
fn a_member_added_for_an_instance_nobody_held_does_not_inherit_the_partition() {
    let v = classic_replacement_after_downgrade(false);
    assert!(!v.anomalies.is_empty(), "a commit from outside the generation passed");
}

/// mixed_protocol_swarm seed 624: a consumer group held classic-protocol members only when its
/// topic grew. Kafka refreshes a consumer group's view of the topics on consumer-protocol
/// heartbeats and classic JoinGroups, not on classic Heartbeats, and names no leader in a
/// classic member's JoinGroup answer, so no client watches the partition count: the new
/// partition stays unassigned, the `classic-members-miss-new-partitions` hazard. With a
/// consumer-protocol member in the group the same end is stuck.
fn grown_with(consumer_member: bool) -> Verdict {
    let mut h = upgraded_whole();
    if consumer_member {
        cg(
            &mut h,
            ConsumerGroupEvent::MemberJoined {
                group: G.into(),
                member_id: "c".into(),
                group_instance_id: None,
                client_id: "m2".into(),
                classic_protocol: false,
            },
        );
    }
    h.world(WorldEvent::PartitionsAdded { topic: "t".into(), partitions: 3 });
    h.produced(2, 5);
    check(&h.finish(&[(0, 10), (1, 10), (2, 5)]))
}

#[test]
fn partitions_added_while_only_classic_members_hold_a_consumer_group_are_the_hazard() {
    let v = grown_with(false);
    assert!(v.is_ok(), "{:?}", v.anomalies);
    let e = v.hazards.first().expect("the stuck partition is shown as a hazard");
    assert_eq!(e.hazard, Hazard::ClassicMembersMissNewPartitions);
    assert!(e.anomaly.message.contains("t-2"), "{:?}", e.anomaly);
    let v = grown_with(true);
    assert!(v.anomalies.iter().any(|a| a.class == AnomalyClass::Stuck), "{v:?}");
}
