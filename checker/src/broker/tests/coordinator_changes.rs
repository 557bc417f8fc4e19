//! Eras across coordinator changes: answers made on either side of one, and a group that
//! becomes a consumer group when the first ConsumerGroupHeartbeat is written.

use super::*;

/// A leader's JoinGroup answer written before a coordinator change and read after it (the
/// member was paused meanwhile) was made by either coordinator: generation 4 handed out by the
/// old one and again, to other members, by the new one after it loaded generation 3
/// (swarm_cooperative seed 238). Read after the change, it proves nothing about the new
/// coordinator's generation 4; read before it, the two lists are one coordinator's.
#[test]
fn an_answer_made_across_a_coordinator_change_is_an_era_of_its_own() {
    let leader = |actor: &str, sent: u64, read: u64, id: &str, members: &[&str]| {
        let members = members.iter().map(|m| m.to_string()).collect();
        let answer = Answer::Join {
            error: NONE,
            generation: 4,
            member_id: id.into(),
            leader: id.into(),
            members,
        };
        let request = Request::Join {
            member_id: id.into(),
            instance: None,
            session_timeout_ms: None,
            rebalance_timeout_ms: None,
            version: None,
        };
        on(1, x(actor, sent, read, request, answer))
    };
    let mut straddling = vec![Entry::Mark { at_ms: 50, mark: Mark::CoordinatorMoved }];
    straddling.push(leader("m3.0", 60, 61, "c", &["c", "d"]));
    straddling.insert(0, leader("m0.0", 10, 70, "a", &["a", "b", "c", "d"]));
    straddling.rotate_left(1); // the paused member's answer is read last
    assert!(answer_rules(&log(Protocol::Classic, 2, straddling)).is_empty());
    let one_coordinator = vec![
        leader("m3.0", 60, 61, "c", &["c", "d"]),
        leader("m0.0", 55, 70, "a", &["a", "b", "c", "d"]),
    ];
    assert_eq!(
        answer_rules(&log(Protocol::Classic, 2, one_coordinator)),
        [BrokerRule::MembershipWithoutGeneration]
    );
}

/// A group may be a consumer group from the moment the first ConsumerGroupHeartbeat is written:
/// a classic member's JoinGroup answered afterwards by the consumer group carries no leader
/// (Kafka's `classicGroupJoinToConsumerGroup`), though the heartbeat's own answer is read later,
/// by a member paused in between (migration_faults seed 445).
#[test]
fn a_classic_join_answered_after_a_consumer_heartbeat_was_written_is_not_plainly_classic() {
    let leaderless = |t: u64| {
        let answer = Answer::Join {
            error: NONE,
            generation: 2,
            member_id: "b".into(),
            leader: String::new(),
            members: vec![],
        };
        let request = Request::Join {
            member_id: "b".into(),
            instance: None,
            session_timeout_ms: None,
            rebalance_timeout_ms: None,
            version: None,
        };
        x("m1.0", t, t + 1, request, answer)
    };
    let consumer = heartbeat("m0.0", 10, "z", 0, 3, NONE, Some(&[0]));
    let Entry::Exchange(mut late) = consumer.clone() else { unreachable!() };
    late.answered_ms = 100; // written at 10, read at 100
    let entries = vec![leaderless(20), Entry::Exchange(late)];
    assert!(answer_rules(&log(Protocol::Classic, 2, entries)).is_empty());
    let plainly_classic = vec![leaderless(5), consumer];
    assert_eq!(
        answer_rules(&log(Protocol::Classic, 2, plainly_classic)),
        [BrokerRule::MalformedAnswer]
    );
}

/// An answer by the new node to a request written before the coordinator change is itself a
/// sign of the change, and also made by either side: a commit held across the change and
/// accepted says nothing about whether the new coordinator serves the group yet, so a blind
/// heartbeat of the loading coordinator after it stays excused (swarm seed 259).
#[test]
fn an_answer_by_the_new_node_to_a_request_from_before_the_change_is_an_era_of_its_own() {
    let mut entries: Vec<Entry> = classic_group().into_iter().map(|e| on(0, e)).collect();
    entries.push(on(0, join("m0.0", 30, "a", 2, "a", &["a"])));
    entries.push(on(0, sync("m0.0", 35, "a", 2, &[0, 1])));
    entries.push(Entry::Mark { at_ms: 60, mark: Mark::CoordinatorMoved });
    let Entry::Exchange(mut held) = commit("m1.0", 25, "b", 1, 5, NONE) else { unreachable!() };
    held.answered_ms = 70;
    entries.push(on(1, Entry::Exchange(held)));
    let request = Request::Heartbeat { member_id: "b".into(), generation: 1, instance: None };
    entries.push(on(1, x("m1.0", 80, 81, request, Answer::Error { error: NONE })));
    let found = rules(&log(Protocol::Classic, 2, entries));
    assert!(!found.contains(&BrokerRule::StaleGenerationAccepted), "{found:?}");
}

/// A coordinator that takes a group over loads a static instance as last written: the id that
/// generation 1 wrote for it, not the ids later generations gave it and never wrote. A new
/// process taking the instance over then replaces generation 1's id, in generation 1, with its
/// assignment (static_churn 883 and 902): no partition is given twice.
#[test]
fn a_static_replacement_after_a_coordinator_change_takes_the_written_ids_place() {
    let mut entries = static_group(); // a (i0) and b (i1) in generation 1
    entries.push(sync("m0.0", 20, "a", 1, &[0]));
    entries.push(sync("m1.0", 20, "b", 1, &[1]));
    entries.push(static_join("m1.1", 30, "b2", "i1", 2, &[])); // generation 2, never written
    entries.push(Entry::Mark { at_ms: 40, mark: Mark::CoordinatorMoved });
    entries.push(static_join("m1.2", 50, "b3", "i1", 1, &[])); // replaces b, loaded again
    let mut passing = entries.clone();
    passing.push(sync("m1.2", 60, "b3", 1, &[1]));
    assert!(answer_rules(&log(Protocol::Classic, 2, passing)).is_empty());
    entries.push(sync("m1.2", 60, "b3", 1, &[0])); // a's partition: split
    assert_eq!(answer_rules(&log(Protocol::Classic, 2, entries)), [BrokerRule::SplitAssignment]);
}
