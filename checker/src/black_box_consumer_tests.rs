//! The consumer-group black-box rules on hand-made broker histories (the coordinator's
//! consumer-group events as a served cluster records them) and processed-record logs.

use groupsim_history::{
    ConsumerGroupEvent as C, ConsumerRemovalReason, CoordinatorEvent, Event, EventKind, History,
    LoadedMember, WorldEvent,
};
use groupsim_wire::TopicPartition;

use crate::black_box::{check_black_box, BlackBoxVerdict, Processed};
use crate::AnomalyClass;

fn tp(p: i32) -> TopicPartition {
    TopicPartition::new("t", p)
}

fn ev(at_ms: u64, event: C) -> Event {
    Event {
        at_ms,
        kind: EventKind::Coordinator { broker: 0, event: CoordinatorEvent::ConsumerGroup(event) },
    }
}

fn joined(at: u64, member: &str, client: &str) -> Event {
    ev(
        at,
        C::MemberJoined {
            group: "g".into(),
            member_id: member.into(),
            group_instance_id: None,
            client_id: client.into(),
            classic_protocol: false,
        },
    )
}

fn bumped(at: u64, epoch: i32) -> Vec<Event> {
    vec![
        ev(at, C::GroupEpochBumped { group: "g".into(), epoch }),
        ev(
            at,
            C::TargetAssignmentComputed {
                group: "g".into(),
                epoch,
                assignor: "uniform".into(),
                assignments: Vec::new(),
            },
        ),
    ]
}

fn epoch(at: u64, member: &str, from: i32, to: i32, state: &str) -> Event {
    ev(
        at,
        C::MemberEpochChanged {
            group: "g".into(),
            member_id: member.into(),
            from,
            to,
            state: state.into(),
        },
    )
}

fn assigned(at: u64, member: &str, member_epoch: i32, ps: &[i32]) -> Event {
    ev(
        at,
        C::PartitionsAssigned {
            group: "g".into(),
            member_id: member.into(),
            member_epoch,
            partitions: ps.iter().map(|p| tp(*p)).collect(),
        },
    )
}

fn released(at: u64, member: &str, member_epoch: i32, ps: &[i32]) -> Event {
    ev(
        at,
        C::PartitionsReleased {
            group: "g".into(),
            member_id: member.into(),
            member_epoch,
            partitions: ps.iter().map(|p| tp(*p)).collect(),
        },
    )
}

fn removed(at: u64, member: &str, member_epoch: i32) -> Event {
    ev(
        at,
        C::MemberRemoved {
            group: "g".into(),
            member_id: member.into(),
            member_epoch,
            reason: ConsumerRemovalReason::SessionTimeout,
        },
    )
}

fn commit(at: u64, member: &str, member_epoch: i32, p: i32, offset: i64) -> Event {
    Event {
        at_ms: at,
        kind: EventKind::Coordinator {
            broker: 0,
            event: CoordinatorEvent::OffsetCommitAccepted {
                group: "g".into(),
                member_id: member.into(),
                generation: member_epoch,
                partition: tp(p),
                offset,
                validated_at_ms: at,
            },
        },
    }
}

fn produced(p: i32, count: i64) -> Event {
    Event {
        at_ms: 0,
        kind: EventKind::World(WorldEvent::Produced { partition: tp(p), base_offset: 0, count }),
    }
}

fn processed(client: &str, p: i32, offsets: std::ops::Range<i64>, at_ms: u64) -> Vec<Processed> {
    offsets
        .map(|offset| Processed { client: client.into(), partition: tp(p), offset, at_ms })
        .collect()
}

/// Members a (client ca) and b (client cb) at epoch 2, a owning partition 0 and b partition 1,
/// ten records in each.
fn two_members() -> Vec<Event> {
    let mut e = vec![produced(0, 10), produced(1, 10), joined(1, "a", "ca"), joined(1, "b", "cb")];
    e.extend(bumped(1, 2));
    e.extend([
        epoch(2, "a", 0, 2, "STABLE"),
        assigned(2, "a", 2, &[0]),
        epoch(2, "b", 0, 2, "STABLE"),
        assigned(2, "b", 2, &[1]),
    ]);
    e
}

/// Partition 1 moves from b to a at epoch 3: b revokes (released at 50), a gets it (60).
fn move_one_to_a(e: &mut Vec<Event>) {
    e.extend(bumped(40, 3));
    e.extend([
        epoch(50, "b", 2, 3, "STABLE"),
        released(50, "b", 2, &[1]),
        epoch(60, "a", 2, 3, "STABLE"),
        assigned(60, "a", 3, &[1]),
    ]);
}

fn classes(v: &BlackBoxVerdict) -> Vec<AnomalyClass> {
    v.anomalies.iter().map(|a| a.class).collect()
}

fn check(events: Vec<Event>, records: Option<&[Processed]>) -> BlackBoxVerdict {
    check_black_box(&History::from_events(events), records)
}

#[test]
fn owners_committing_at_their_epoch_what_they_processed_pass() {
    let mut events = two_members();
    events.push(commit(30, "a", 2, 0, 10));
    events.push(commit(30, "b", 2, 1, 10));
    events.push(Event {
        at_ms: 35,
        kind: EventKind::World(WorldEvent::LivenessPhase { deadline_ms: 90, stall_ms: None }),
    });
    let mut records = processed("ca", 0, 0..10, 20);
    records.extend(processed("cb", 1, 0..10, 20));
    let v = check(events, Some(&records));
    assert!(v.anomalies.is_empty(), "{:?}", v.anomalies);
}

#[test]
fn a_commit_under_an_old_member_epoch_or_after_removal_is_a_zombie() {
    let mut events = two_members();
    move_one_to_a(&mut events);
    events.push(commit(70, "a", 2, 0, 5)); // a is at epoch 3 since 60
    let v = check(events.clone(), None);
    assert_eq!(classes(&v), vec![AnomalyClass::ZombieCommit]);
    assert!(
        v.anomalies[0].message.contains("its member epoch was [3]"),
        "{}",
        v.anomalies[0].message
    );
    // In the millisecond its epoch moved, either epoch is accepted.
    let mut same_ms = events[..events.len() - 1].to_vec();
    same_ms.push(commit(60, "a", 2, 0, 5));
    assert!(check(same_ms, None).anomalies.is_empty());
    events.pop();
    events.push(removed(80, "b", 3));
    events.push(commit(90, "b", 3, 0, 5));
    assert_eq!(classes(&check(events, None)), vec![AnomalyClass::ZombieCommit]);
}

#[test]
fn a_commit_for_a_partition_the_member_does_not_own_is_unowned() {
    let mut events = two_members();
    move_one_to_a(&mut events);
    // b, at its new epoch, commits the partition it released.
    events.push(commit(70, "b", 3, 1, 4));
    let v = check(events, None);
    assert_eq!(classes(&v), vec![AnomalyClass::UnownedCommit]);
    assert!(
        v.anomalies[0].message.contains("a owned it (since t=60ms)"),
        "{}",
        v.anomalies[0].message
    );
}

#[test]
fn a_commit_while_revoking_is_the_owners() {
    // b was asked to revoke partition 1 at 45 but still owns it until its release at 50.
    let mut events = two_members();
    events.extend(bumped(40, 3));
    events.push(ev(
        45,
        C::PartitionsRevoking {
            group: "g".into(),
            member_id: "b".into(),
            member_epoch: 2,
            partitions: vec![tp(1)],
        },
    ));
    events.push(commit(46, "b", 2, 1, 7));
    assert!(check(events, None).anomalies.is_empty());
}

#[test]
fn a_partition_assigned_before_its_owner_released_it_is_split() {
    let mut events = two_members();
    events.extend(bumped(40, 3));
    events.push(assigned(45, "a", 3, &[1]));
    assert_eq!(classes(&check(events, None)), vec![AnomalyClass::SplitAssignment]);
}

#[test]
fn processing_a_partition_after_releasing_it_while_another_owns_it_is_split() {
    let mut events = two_members();
    move_one_to_a(&mut events);
    // cb goes on processing partition 1 after its release and a's takeover.
    let records = processed("cb", 1, 5..6, 70);
    let v = check(events.clone(), Some(&records));
    assert_eq!(classes(&v), vec![AnomalyClass::SplitProcessing]);
    assert!(
        v.anomalies[0].message.contains("a owned it (since t=60ms)"),
        "{}",
        v.anomalies[0].message
    );
    // Before the release it was b's; between the release and the takeover nobody's; after b
    // was removed it is a zombie's duplicate, not a split.
    let records: Vec<Processed> =
        [processed("cb", 1, 5..6, 48), processed("cb", 1, 6..7, 55)].concat();
    assert!(check(events.clone(), Some(&records)).anomalies.is_empty());
    events.push(removed(65, "b", 3));
    assert!(check(events, Some(&processed("cb", 1, 5..6, 70))).anomalies.is_empty());
}

#[test]
fn a_member_fenced_and_rejoining_with_its_id_is_live_again_only_after_the_rejoin() {
    let mut events = two_members();
    events.push(removed(40, "b", 2));
    events.extend(bumped(40, 3));
    events.extend([epoch(45, "a", 2, 3, "STABLE"), assigned(45, "a", 3, &[1])]);
    // b's old assignment, processed while it was out of the group: a zombie's duplicate.
    assert!(check(events.clone(), Some(&processed("cb", 1, 5..6, 50))).anomalies.is_empty());
    events.push(joined(55, "b", "cb"));
    // Back in the group (owning nothing yet), it processes a's partition: split.
    let v = check(events, Some(&processed("cb", 1, 6..7, 60)));
    assert_eq!(classes(&v), vec![AnomalyClass::SplitProcessing]);
}

#[test]
fn a_load_replaces_members_and_owners_with_the_stored_group() {
    let mut events = two_members();
    // The group is loaded elsewhere from a snapshot where b owns both partitions.
    events.push(Event {
        at_ms: 40,
        kind: EventKind::Coordinator {
            broker: 1,
            event: CoordinatorEvent::ConsumerGroup(C::GroupLoaded {
                group: "g".into(),
                partition: 3,
                group_epoch: 2,
                assignment_epoch: 2,
                members: vec![LoadedMember {
                    member_id: "b".into(),
                    member_epoch: 2,
                    owned: vec![tp(0), tp(1)],
                    revoking: vec![],
                    state: "STABLE".into(),
                    target: vec![tp(0), tp(1)],
                    classic_protocol: false,
                    group_instance_id: None,
                }],
            }),
        },
    });
    events.push(commit(50, "b", 2, 0, 3));
    assert!(check(events.clone(), None).anomalies.is_empty(), "b owns partition 0 now");
    events.push(commit(51, "a", 2, 0, 4));
    assert_eq!(classes(&check(events, None)), vec![AnomalyClass::ZombieCommit]);
}

#[test]
fn after_the_heal_phase_a_member_not_reconciled_is_stuck() {
    let mut events = two_members();
    events.extend(bumped(40, 3));
    events.push(epoch(50, "a", 2, 3, "STABLE"));
    events.push(commit(55, "a", 3, 0, 10));
    events.push(commit(55, "b", 2, 1, 10));
    events.push(Event {
        at_ms: 60,
        kind: EventKind::World(WorldEvent::LivenessPhase { deadline_ms: 90, stall_ms: None }),
    });
    let records = [processed("ca", 0, 0..10, 20), processed("cb", 1, 0..10, 20)].concat();
    let v = check(events.clone(), Some(&records));
    assert_eq!(classes(&v), vec![AnomalyClass::Stuck]);
    let message = &v.anomalies[0].message;
    assert!(message.contains("consumer group g is not Stable"), "{message}");
    assert!(message.contains("b at epoch 2 (STABLE)"), "{message}");
    events.push(epoch(70, "b", 2, 3, "STABLE"));
    assert!(check(events, Some(&records)).anomalies.is_empty());
}

/// A KIP-848 member given a partition starts it where its previous owner's commit left it; one
/// that starts below (a stale position kept, a reset to earliest) rewinds.
#[test]
fn a_consumer_member_starting_a_moved_partition_below_its_commit_rewinds() {
    let mut events = two_members();
    events.push(commit(45, "b", 2, 1, 6));
    move_one_to_a(&mut events);
    let mut records = processed("ca", 0, 0..10, 20);
    records.extend(processed("cb", 1, 0..6, 20));
    let mut from_commit = records.clone();
    from_commit.extend(processed("ca", 1, 6..10, 70));
    assert!(!classes(&check(events.clone(), Some(&from_commit)))
        .contains(&AnomalyClass::PositionRewind));
    records.extend(processed("ca", 1, 2..10, 70));
    let v = check(events, Some(&records));
    let rewind = v.anomalies.iter().find(|a| a.class == AnomalyClass::PositionRewind);
    let rewind = rewind.unwrap_or_else(|| panic!("{:?}", v.anomalies));
    assert!(
        rewind.message.contains("ca (a) got t-1 at t=60ms with 6 committed"),
        "{}",
        rewind.message
    );
}
