//! `group-over-max-size` on hand-built logs: a classic generation longer than `group.max.size`.
//! A coordinator that checks the group's size after adding the joining member, or compares
//! with `>` where Kafka compares with `>=`, lets one member too many in; the leader's JoinGroup
//! answer then lists them all.

use super::*;

fn limited(entries: Vec<Entry>, classic: i32) -> AnswerLog {
    let mut log = log(Protocol::Classic, 2, entries);
    log.max_size = Some(MaxSize { classic, consumer: 1 });
    log
}

/// Three members join one generation; the leader is told of all three.
fn three_members() -> Vec<Entry> {
    vec![
        join("m0.0", 10, "a", 1, "a", &["a", "b", "c"]),
        join("m1.0", 10, "b", 1, "a", &[]),
        join("m2.0", 10, "c", 1, "a", &[]),
    ]
}

#[test]
fn a_generation_past_the_maximum_is_group_over_max_size() {
    let found = check(&limited(three_members(), 2));
    assert_eq!(found.iter().map(|a| a.rule).collect::<Vec<_>>(), [BrokerRule::GroupOverMaxSize]);
    assert_eq!(found[0].evidence, [0], "the leader's answer listing the generation");
}

/// At the maximum, with no limit known, or with only the consumer groups' limit below the
/// count (a classic group is held to `group.max.size` alone), nothing is judged.
#[test]
fn a_generation_at_the_maximum_or_with_no_known_limit_passes() {
    assert_eq!(rules(&limited(three_members(), 3)), []);
    assert_eq!(rules(&log(Protocol::Classic, 2, three_members())), []);
}

/// Member `id`'s ConsumerGroupHeartbeat written at `t` at member epoch `sent` (`instance`: a
/// static member's), answered NONE at epoch `epoch` with a heartbeat interval of 3 s.
fn beat(actor: &str, t: u64, id: &str, sent: i32, epoch: i32, instance: Option<&str>) -> Entry {
    let request = Request::ConsumerHeartbeat {
        member_id: id.into(),
        epoch: sent,
        owned: Some(Vec::new()),
        instance: instance.map(Into::into),
    };
    let answer = Answer::ConsumerHeartbeat {
        error: NONE,
        member_id: id.into(),
        epoch,
        assignment: Some(Vec::new()),
        interval_ms: Some(3_000),
    };
    x(actor, t, t + 1, request, answer)
}

/// Members `a` and `b` join at t=100 and heartbeat at t=2000 (their sessions run to t=5000 at
/// least); `c` joins at t=2500.
fn two_then_a_third() -> Vec<Entry> {
    vec![
        beat("m0.0", 100, "a", 0, 1, None),
        beat("m1.0", 100, "b", 0, 2, None),
        beat("m0.0", 2_000, "a", 1, 2, None),
        beat("m1.0", 2_000, "b", 2, 2, None),
        beat("m2.0", 2_500, "c", 0, 3, None),
    ]
}

/// The entries of every `group-over-max-size` found in a consumer group of at most `max`.
fn over(entries: Vec<Entry>, max: i32) -> Vec<Vec<usize>> {
    let mut log = log(Protocol::Consumer, 2, entries);
    log.max_size = Some(MaxSize { classic: 1, consumer: max });
    check(&log)
        .into_iter()
        .filter(|a| a.rule == BrokerRule::GroupOverMaxSize)
        .map(|a| a.evidence)
        .collect()
}

/// Kafka refuses a member id it does not know once a consumer group holds the maximum: two
/// members whose sessions had to run when a third joined a group of at most two prove it let
/// one member too many in (a coordinator comparing with `>` where Kafka compares with `>=`).
#[test]
fn a_new_member_let_into_a_full_consumer_group_is_group_over_max_size() {
    assert_eq!(over(two_then_a_third(), 2), [vec![2, 3, 4]], "both sessions, then the join");
    assert_eq!(over(two_then_a_third(), 1), [vec![2, 3, 4]]);
}

/// Below the maximum, with no limit known, or with a member whose session may have ended, that
/// may have left, or may have been removed otherwise, the count is not proved.
#[test]
fn a_consumer_group_not_proved_full_passes() {
    assert_eq!(over(two_then_a_third(), 3), Vec::<Vec<usize>>::new());
    let mut unknown = log(Protocol::Consumer, 2, two_then_a_third());
    unknown.max_size = None;
    assert!(!rules(&unknown).contains(&BrokerRule::GroupOverMaxSize));
    let none = Vec::<Vec<usize>>::new();
    // b's session proved only to t=5000: c joins at t=6000.
    let mut late = two_then_a_third();
    late[4] = beat("m2.0", 6_000, "c", 0, 3, None);
    late.insert(4, beat("m0.0", 4_000, "a", 2, 2, None));
    assert_eq!(over(late, 2), none);
    // b's leave, written before c's join was answered and answered after: it may have been
    // taken first.
    let mut left = two_then_a_third();
    let Entry::Exchange(leave) = heartbeat("m1.0", 2_450, "b", -1, -1, NONE, None) else {
        unreachable!()
    };
    left.push(Entry::Exchange(Exchange { answered_ms: 2_600, ..leave }));
    assert_eq!(over(left, 2), none);
    // b's heartbeat written before c's join was answered, refused FENCED_MEMBER_EPOCH after.
    let mut refused = two_then_a_third();
    let Entry::Exchange(fence) = heartbeat("m1.0", 2_450, "b", 2, 0, FENCED_MEMBER_EPOCH, None)
    else {
        unreachable!()
    };
    refused.push(Entry::Exchange(Exchange { answered_ms: 2_600, ..fence }));
    assert_eq!(over(refused, 2), none);
    // A coordinator change between b's proof and c's join.
    let mut moved = two_then_a_third();
    moved.insert(4, mark(2_200, Mark::CoordinatorMoved));
    assert_eq!(over(moved, 2), none);
    // b is static: a replacement may have taken its place.
    let mut fixed = two_then_a_third();
    fixed[3] = beat("m1.0", 2_000, "b", 2, 2, Some("i1"));
    assert_eq!(over(fixed, 2), none);
}

/// A join at epoch 0 from a member id the coordinator may know (a member fenced on its side
/// rejoins with its id, KAFKA-19233) is no new member.
#[test]
fn a_rejoin_of_a_member_id_already_accepted_is_no_new_member() {
    let mut rejoin = two_then_a_third();
    rejoin[4] = beat("m0.0", 2_500, "a", 0, 3, None);
    assert_eq!(over(rejoin, 1), Vec::<Vec<usize>>::new());
}
