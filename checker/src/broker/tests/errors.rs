//! `wrong-error` on hand-built answer logs: the error code Kafka gives a request, by what the
//! earlier answers prove about the group.

use super::*;

/// A classic heartbeat of static member `id` (instance `instance`) answered `error`.
fn static_heartbeat(actor: &str, t: u64, id: &str, instance: &str, error: i16) -> Entry {
    let request =
        Request::Heartbeat { member_id: id.into(), generation: 1, instance: Some(instance.into()) };
    x(actor, t, t + 1, request, Answer::Error { error })
}

/// KIP-345: `b`'s instance i1 is taken over by `c`, which goes on heartbeating; `b`'s stale
/// heartbeat in between must be fenced (FENCED_INSTANCE_ID), not sent back to rejoin
/// (UNKNOWN_MEMBER_ID), or the two processes take the instance from each other for ever.
#[test]
fn a_replaced_static_member_answered_unknown_member_id_is_a_wrong_error() {
    let mut entries = static_group();
    entries.push(static_join("m2.0", 30, "c", "i1", 1, &[]));
    let mut fenced = entries.clone();
    fenced.push(static_heartbeat("m1.0", 40, "b", "i1", FENCED_INSTANCE_ID));
    fenced.push(static_heartbeat("m2.0", 50, "c", "i1", NONE));
    assert!(answer_rules(&log(Protocol::Classic, 2, fenced)).is_empty());
    entries.push(static_heartbeat("m1.0", 40, "b", "i1", UNKNOWN_MEMBER_ID));
    let mut holder_seen = entries.clone();
    holder_seen.push(static_heartbeat("m2.0", 50, "c", "i1", NONE));
    let found = check(&log(Protocol::Classic, 2, holder_seen));
    assert_eq!(found.iter().map(|a| a.rule).collect::<Vec<_>>(), [BrokerRule::WrongError]);
    assert_eq!(found[0].evidence, [4, 5, 6], "c's join, b's answer, c's later heartbeat");
    // Without a later answer to c, c may have been removed before b asked: the instance was
    // then nobody's and UNKNOWN_MEMBER_ID right.
    assert!(answer_rules(&log(Protocol::Classic, 2, entries.clone())).is_empty());
    // Nor across a coordinator change, which may load the instance under b again.
    let mut moved = entries;
    moved.insert(5, mark(35, Mark::CoordinatorMoved));
    moved.push(static_heartbeat("m2.0", 50, "c", "i1", NONE));
    assert!(answer_rules(&log(Protocol::Classic, 2, moved)).is_empty());
}

/// FENCED_INSTANCE_ID says another id holds the instance; answered to the id the instance was
/// last given to, with no other JoinGroup naming it since, it fences the rightful holder.
#[test]
fn the_holder_of_an_instance_answered_fenced_instance_id_is_a_wrong_error() {
    let mut entries = static_group();
    entries.push(static_heartbeat("m1.0", 30, "b", "i1", FENCED_INSTANCE_ID));
    let found = check(&log(Protocol::Classic, 2, entries));
    assert_eq!(found.iter().map(|a| a.rule).collect::<Vec<_>>(), [BrokerRule::WrongError]);
    assert_eq!(found[0].evidence, [1, 4]);
    // A join naming i1 that was never answered may have given it to another id.
    let mut contested = static_group();
    contested.push(Entry::Unanswered {
        actor: "m2.0".into(),
        sent_ms: 25,
        call: Request::Join {
            member_id: String::new(),
            instance: Some("i1".into()),
            session_timeout_ms: None,
            rebalance_timeout_ms: None,
            version: None,
        },
        group: String::new(),
    });
    contested.push(static_heartbeat("m1.0", 30, "b", "i1", FENCED_INSTANCE_ID));
    assert!(answer_rules(&log(Protocol::Classic, 2, contested)).is_empty());
}

/// The refused member's own rejoin shows the instance was held: answered at the group's
/// generation, it replaced a holder (a static member joining under a free instance starts a
/// rebalance). So the refusal before it had to be FENCED_INSTANCE_ID.
#[test]
fn a_rejoin_answered_as_a_replacement_right_after_unknown_member_id_is_a_wrong_error() {
    let mut entries = static_group();
    entries.push(static_join("m2.0", 30, "c", "i1", 1, &[]));
    entries.push(static_heartbeat("m1.0", 40, "b", "i1", UNKNOWN_MEMBER_ID));
    let mut replaced = entries.clone();
    replaced.push(static_join("m1.0", 45, "d", "i1", 1, &[]));
    let found = check(&log(Protocol::Classic, 2, replaced));
    assert_eq!(found.iter().map(|a| a.rule).collect::<Vec<_>>(), [BrokerRule::WrongError]);
    assert_eq!(found[0].evidence, [5, 6], "b's refusal, its rejoin");
    // A rejoin answered at a new generation may have been a new member's: no proof.
    entries.push(static_join("m1.0", 45, "d", "i1", 2, &[]));
    assert!(answer_rules(&log(Protocol::Classic, 2, entries)).is_empty());
}

/// `throwIfConsumerGroupHeartbeatRequestIsInvalid`: a heartbeat above epoch 0 or a leave at -1
/// must name the member, and no member holds an epoch below -2.
#[test]
fn a_consumer_heartbeat_kafka_finds_invalid_answered_none_is_a_wrong_error() {
    let with = |member_id: &str, epoch: i32| {
        let Entry::Exchange(mut e) = heartbeat("m0.0", 10, "a", 3, 1, NONE, Some(&[0])) else {
            unreachable!()
        };
        e.request = Request::ConsumerHeartbeat {
            member_id: member_id.into(),
            epoch,
            owned: None,
            instance: None,
        };
        rules(&log(Protocol::Consumer, 1, vec![Entry::Exchange(e)]))
    };
    assert!(!with("a", 3).contains(&BrokerRule::WrongError));
    assert!(with("", 3).contains(&BrokerRule::WrongError));
    assert!(with(" ", -1).contains(&BrokerRule::WrongError));
    assert!(with("a", -3).contains(&BrokerRule::WrongError));
}

/// Found by the coordinator fuzz target (`fuzz/harness/coordinator.rs`): static member `c`
/// (instance i1) joined and went silent past its session, so the coordinator removed it and
/// i1 was nobody's; a heartbeat naming i1 was rightly answered UNKNOWN_MEMBER_ID. `c`'s later
/// OffsetCommit without a generation was answered NONE, which the rule took for `c` still
/// holding i1. Kafka takes a commit without a generation from anyone while the group is Empty
/// (ClassicGroup `validateOffsetCommit`): it proves nothing of its member id. The same target
/// found the twin: a commit of no partitions, answered without the coordinator.
#[test]
fn a_commit_without_a_generation_does_not_prove_its_member_holds_an_instance() {
    let mut entries = vec![static_join("m2.0", 10, "c", "i1", 1, &[])];
    entries.push(static_heartbeat("m1.0", 70_000, "", "i1", UNKNOWN_MEMBER_ID));
    let mut later = entries.clone();
    later.push(commit("m2.0", 80_000, "c", -1, 5, NONE));
    let found = answer_rules(&log(Protocol::Classic, 2, later));
    assert!(found.is_empty(), "{found:?}");
    // Nor does a commit of no partitions, which Kafka answers without asking the coordinator.
    let mut empty = entries.clone();
    let request =
        Request::Commit { member_id: "c".into(), generation: 1, offsets: vec![], instance: None };
    empty.push(x("m2.0", 80_000, 80_001, request, Answer::Commit { errors: vec![] }));
    let found = answer_rules(&log(Protocol::Classic, 2, empty));
    assert!(found.is_empty(), "{found:?}");
    // A commit at the member's generation does prove it: the coordinator validated c.
    entries.push(commit("m2.0", 80_000, "c", 1, 5, NONE));
    let found = answer_rules(&log(Protocol::Classic, 2, entries));
    assert!(found.contains(&BrokerRule::WrongError), "{found:?}");
}

/// Found by the coordinator fuzz target: a client told MEMBER_ID_REQUIRED (member id `p`,
/// pending) joined again naming instance i1, which `b` held. Kafka refuses a pending member
/// that names an instance before it looks the instance up (pending members are dynamic), so
/// the answer is not FENCED_INSTANCE_ID; the fencing rule does not judge pending member ids,
/// and a refused JoinGroup leaves an id pending (the libFuzzer run found that second step).
#[test]
fn a_pending_member_naming_a_held_instance_is_not_judged_by_the_fencing_rule() {
    let mut entries = static_group();
    let join = |member_id: &str, instance: Option<&str>| Request::Join {
        member_id: member_id.into(),
        instance: instance.map(Into::into),
        session_timeout_ms: None,
        rebalance_timeout_ms: None,
        version: Some(9),
    };
    let required = Answer::Join {
        error: MEMBER_ID_REQUIRED,
        generation: -1,
        member_id: "p".into(),
        leader: String::new(),
        members: vec![],
    };
    entries.push(x("m2.0", 30, 31, join("", None), required));
    let refused = Answer::Join {
        error: UNKNOWN_MEMBER_ID,
        generation: -1,
        member_id: "p".into(),
        leader: String::new(),
        members: vec![],
    };
    entries.push(x("m2.0", 40, 41, join("p", Some("i1")), refused.clone()));
    // A refused JoinGroup leaves the id pending: its next one, naming a's instance, neither.
    entries.push(x("m2.0", 42, 43, join("p", Some("i0")), refused));
    entries.push(static_heartbeat("m1.0", 50, "b", "i1", NONE));
    entries.push(static_heartbeat("m0.0", 50, "a", "i0", NONE));
    let found = answer_rules(&log(Protocol::Classic, 2, entries));
    assert!(found.is_empty(), "{found:?}");
}

/// Found by the coordinator fuzz target (libFuzzer): a JoinGroup that let a pending member id in
/// was answered in the same millisecond that its refused JoinGroup naming a held instance was
/// written; the coordinator may have read the refused one first, while the id was still
/// pending, so the refusal is not judged. A join answered in an earlier millisecond does end
/// the excuse.
#[test]
fn a_join_answered_in_the_same_millisecond_may_not_have_let_a_pending_member_in_yet() {
    let join = |member_id: &str, instance: Option<&str>| Request::Join {
        member_id: member_id.into(),
        instance: instance.map(Into::into),
        session_timeout_ms: None,
        rebalance_timeout_ms: None,
        version: Some(9),
    };
    let answer = |error: i16, generation: i32| Answer::Join {
        error,
        generation,
        member_id: "p".into(),
        leader: "a".into(),
        members: vec![],
    };
    let with_join_at = |t: u64| {
        let mut entries = static_group();
        entries.push(x("m2.0", 30, 31, join("", None), answer(MEMBER_ID_REQUIRED, -1)));
        entries.push(x("m2.0", t, t, join("p", None), answer(NONE, 2)));
        entries.push(x("m2.0", 60, 60, join("p", Some("i1")), answer(UNKNOWN_MEMBER_ID, -1)));
        entries.push(static_heartbeat("m1.0", 70, "b", "i1", NONE));
        answer_rules(&log(Protocol::Classic, 2, entries))
    };
    let same_ms = with_join_at(60);
    assert!(!same_ms.contains(&BrokerRule::WrongError), "{same_ms:?}");
    let earlier = with_join_at(59);
    assert!(earlier.contains(&BrokerRule::WrongError), "{earlier:?}");
}

/// KIP-394: a JoinGroup v4+ from a new dynamic member is answered MEMBER_ID_REQUIRED, never
/// NONE; before v4, and for a static member, NONE is the answer.
#[test]
fn a_new_dynamic_member_admitted_at_join_v4_is_a_wrong_error() {
    let at = |version: i16, instance: Option<&str>| {
        let Entry::Exchange(mut e) = join("m0.0", 10, "a", 1, "a", &["a"]) else { unreachable!() };
        e.request = Request::Join {
            member_id: String::new(),
            instance: instance.map(str::to_string),
            session_timeout_ms: None,
            rebalance_timeout_ms: None,
            version: Some(version),
        };
        log(Protocol::Classic, 1, vec![Entry::Exchange(e)])
    };
    assert_eq!(answer_rules(&at(5, None)), [BrokerRule::WrongError]);
    assert!(answer_rules(&at(3, None)).is_empty());
    assert!(answer_rules(&at(5, Some("i0"))).is_empty());
}

/// A rejoin at epoch 0 claiming partitions is refused with INVALID_REQUEST: a NONE is the
/// coordinator's mistake as much as the request is the client's.
#[test]
fn a_consumer_rejoin_with_owned_partitions_answered_none_is_a_wrong_error() {
    let Entry::Exchange(mut e) = heartbeat("m0.0", 10, "a", 0, 1, NONE, Some(&[0])) else {
        unreachable!()
    };
    e.request = Request::ConsumerHeartbeat {
        member_id: "a".into(),
        epoch: 0,
        owned: Some(vec![tp(0)]),
        instance: None,
    };
    let found = rules(&log(Protocol::Consumer, 1, vec![Entry::Exchange(e)]));
    assert!(found.contains(&BrokerRule::WrongError), "{found:?}");
    assert!(found.contains(&BrokerRule::JoinOwningPartitions), "{found:?}");
}
