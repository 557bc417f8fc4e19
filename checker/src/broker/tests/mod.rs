//! Each rule on hand-built answer logs: one log it must pass, one it must fail.

use groupsim_wire::TopicPartition;

use super::log::*;
use super::{check, check_excusing, eras, requests, BrokerRule};

fn tp(p: i32) -> TopicPartition {
    TopicPartition::new("t", p)
}

fn x(actor: &str, sent_ms: u64, answered_ms: u64, request: Request, answer: Answer) -> Entry {
    let (actor, group, node, conn) = (actor.into(), String::new(), None, None);
    Entry::Exchange(Exchange { actor, sent_ms, answered_ms, request, answer, group, node, conn })
}

fn join(actor: &str, t: u64, id: &str, generation: i32, leader: &str, members: &[&str]) -> Entry {
    let members = members.iter().map(|m| m.to_string()).collect();
    let answer = Answer::Join {
        error: NONE,
        generation,
        member_id: id.into(),
        leader: leader.into(),
        members,
    };
    // A new member's first join: without a member id (one it had been given would do too).
    x(
        actor,
        t,
        t + 1,
        Request::Join {
            member_id: String::new(),
            instance: None,
            session_timeout_ms: None,
            rebalance_timeout_ms: None,
            version: None,
        },
        answer,
    )
}

fn sync(actor: &str, t: u64, id: &str, generation: i32, parts: &[i32]) -> Entry {
    let assignment = parts.iter().map(|&p| tp(p)).collect();
    let request = Request::Sync { member_id: id.into(), generation, instance: None };
    x(actor, t, t + 1, request, Answer::Sync { error: NONE, assignment })
}

fn commit(actor: &str, t: u64, id: &str, generation: i32, offset: i64, error: i16) -> Entry {
    let request = Request::Commit {
        member_id: id.into(),
        generation,
        offsets: vec![(tp(0), offset)],
        instance: None,
    };
    x(actor, t, t + 1, request, Answer::Commit { errors: vec![(tp(0), error)] })
}

/// `id`'s LeaveGroup, written at `t` by `actor` and accepted.
fn left(actor: &str, t: u64, id: &str) -> Entry {
    let request = Request::Leave { member_id: id.into(), instance: None };
    x(actor, t, t + 1, request, Answer::Error { error: NONE })
}

fn fetched(actor: &str, t: u64, offset: i64) -> Entry {
    let request = Request::OffsetFetch { partitions: vec![tp(0)] };
    x(actor, t, t + 1, request, Answer::OffsetFetch { offsets: vec![(tp(0), offset, NONE)] })
}

fn heartbeat(
    actor: &str,
    t: u64,
    id: &str,
    sent: i32,
    epoch: i32,
    error: i16,
    parts: Option<&[i32]>,
) -> Entry {
    let request = Request::ConsumerHeartbeat {
        member_id: id.into(),
        epoch: sent,
        owned: None,
        instance: None,
    };
    let assignment = parts.map(|ps| ps.iter().map(|&p| tp(p)).collect());
    let answer = Answer::ConsumerHeartbeat {
        error,
        member_id: id.into(),
        epoch,
        assignment,
        interval_ms: None,
    };
    x(actor, t, t + 1, request, answer)
}

/// A heartbeat that lists the partitions the member owns, answered NONE with no new assignment.
fn ack(actor: &str, t: u64, id: &str, epoch: i32, owned: &[i32]) -> Entry {
    let owned = Some(owned.iter().map(|&p| tp(p)).collect());
    let request = Request::ConsumerHeartbeat { member_id: id.into(), epoch, owned, instance: None };
    let answer = Answer::ConsumerHeartbeat {
        error: NONE,
        member_id: id.into(),
        epoch,
        assignment: None,
        interval_ms: None,
    };
    x(actor, t, t + 1, request, answer)
}

fn mark(at_ms: u64, mark: Mark) -> Entry {
    Entry::Mark { at_ms, mark }
}

fn log(protocol: Protocol, partitions: i32, entries: Vec<Entry>) -> AnswerLog {
    AnswerLog {
        partitions: (0..partitions).map(tp).collect(),
        entries,
        ..AnswerLog::new(protocol, Vec::new())
    }
}

fn rules(log: &AnswerLog) -> Vec<BrokerRule> {
    check(log).into_iter().map(|a| a.rule).collect()
}

/// The coordinator's rules only: for logs that show a committer but not how it joined.
fn answer_rules(log: &AnswerLog) -> Vec<BrokerRule> {
    let client = [
        BrokerRule::UnknownGenerationSent,
        BrokerRule::JoinOwningPartitions,
        BrokerRule::LapsedSession,
        BrokerRule::NoLeave,
    ];
    rules(log).into_iter().filter(|r| !client.contains(r)).collect()
}

/// Two members join generation 1 and split the partitions.
fn classic_group() -> Vec<Entry> {
    vec![
        join("m0.0", 10, "a", 1, "a", &["a", "b"]),
        join("m1.0", 10, "b", 1, "a", &[]),
        sync("m0.0", 20, "a", 1, &[0]),
        sync("m1.0", 20, "b", 1, &[1]),
    ]
}

#[test]
fn a_generation_that_gives_each_partition_once_passes() {
    assert!(rules(&log(Protocol::Classic, 2, classic_group())).is_empty());
}

#[test]
fn a_generation_that_gives_a_partition_twice_is_a_split_assignment() {
    let mut entries = classic_group();
    entries[3] = sync("m1.0", 20, "b", 1, &[0, 1]);
    let found = check(&log(Protocol::Classic, 2, entries));
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].rule, BrokerRule::SplitAssignment);
    assert_eq!(found[0].evidence, vec![2, 3], "both SyncGroup answers are the proof");
}

#[test]
fn a_consumer_partition_moved_after_its_release_passes() {
    let entries = vec![
        heartbeat("m0.0", 10, "a", 0, 1, NONE, Some(&[0, 1])),
        heartbeat("m0.0", 100, "a", 1, 2, NONE, Some(&[0])), // told to release 1
        ack("m0.0", 110, "a", 2, &[0]),                      // released it
        heartbeat("m1.0", 120, "b", 0, 2, NONE, Some(&[1])),
        heartbeat("m0.0", 200, "a", 2, 2, NONE, None),
    ];
    assert!(rules(&log(Protocol::Consumer, 2, entries)).is_empty());
}

#[test]
fn a_consumer_partition_given_before_its_owner_released_it_is_a_split_assignment() {
    let entries = vec![
        heartbeat("m0.0", 10, "a", 0, 1, NONE, Some(&[0, 1])),
        heartbeat("m0.0", 100, "a", 1, 2, NONE, Some(&[0])), // told to release 1
        heartbeat("m1.0", 120, "b", 0, 2, NONE, Some(&[1])), // given 1 before the release
        ack("m0.0", 200, "a", 2, &[0]),                      // the release, too late
    ];
    let found = check(&log(Protocol::Consumer, 2, entries));
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].rule, BrokerRule::SplitAssignment);
    assert_eq!(found[0].partition, Some(tp(1)));
    assert_eq!(
        found[0].evidence,
        vec![0, 2, 3],
        "the owner's grant, the other's, the owner's next"
    );
}

#[test]
fn a_consumer_partition_given_while_its_owner_goes_on_holding_it_is_a_split_assignment() {
    let entries = vec![
        heartbeat("m0.0", 10, "a", 0, 1, NONE, Some(&[0, 1])),
        heartbeat("m1.0", 120, "b", 0, 2, NONE, Some(&[1])),
        ack("m0.0", 200, "a", 1, &[0, 1]), // still holds 0 and 1, and the broker agrees
    ];
    assert_eq!(rules(&log(Protocol::Consumer, 2, entries)), vec![BrokerRule::SplitAssignment]);
}

/// The first owner was expired (its next heartbeat is fenced) before its partitions moved.
#[test]
fn a_consumer_partition_moved_from_an_expired_owner_passes() {
    let entries = vec![
        heartbeat("m0.0", 10, "a", 0, 1, NONE, Some(&[0, 1])),
        heartbeat("m1.0", 120, "b", 0, 2, NONE, Some(&[0, 1])),
        heartbeat("m0.0", 200, "a", 1, 0, UNKNOWN_MEMBER_ID, None),
    ];
    assert!(rules(&log(Protocol::Consumer, 2, entries)).is_empty());
}

#[test]
fn a_commit_at_the_current_generation_passes() {
    let mut entries = classic_group();
    entries.push(commit("m0.0", 30, "a", 1, 5, NONE));
    assert!(rules(&log(Protocol::Classic, 2, entries)).is_empty());
}

#[test]
fn a_commit_of_a_past_generation_answered_none_is_a_zombie_commit() {
    let mut entries = classic_group();
    entries.push(join("m1.0", 30, "b", 2, "b", &["b"]));
    entries.push(commit("m0.0", 40, "a", 1, 5, NONE));
    let found = check(&log(Protocol::Classic, 2, entries));
    assert_eq!(found.iter().map(|a| a.rule).collect::<Vec<_>>(), vec![BrokerRule::ZombieCommit]);
    assert_eq!(found[0].evidence, vec![4, 5], "the later generation's answer and the commit");
}

#[test]
fn a_commit_of_a_past_generation_refused_passes() {
    let mut entries = classic_group();
    entries.push(join("m1.0", 30, "b", 2, "b", &["b"]));
    entries.push(commit("m0.0", 40, "a", 1, 5, ILLEGAL_GENERATION));
    assert!(rules(&log(Protocol::Classic, 2, entries)).is_empty());
}

#[test]
fn a_commit_after_the_member_left_answered_none_is_a_zombie_commit() {
    let mut entries = classic_group();
    entries.push(left("m0.0", 30, "a"));
    entries.push(commit("m0.0", 40, "a", 1, 5, NONE));
    assert_eq!(rules(&log(Protocol::Classic, 2, entries)), vec![BrokerRule::ZombieCommit]);
}

#[test]
fn a_consumer_commit_after_fencing_answered_none_is_a_zombie_commit() {
    let entries = vec![
        heartbeat("m0.0", 10, "a", 0, 1, NONE, Some(&[0])),
        heartbeat("m0.0", 50, "a", 1, 0, FENCED_MEMBER_EPOCH, None),
        commit("m0.0", 60, "a", 1, 5, NONE),
        heartbeat("m0.0", 70, "a", 0, 3, NONE, Some(&[0])),
        commit("m0.0", 80, "a", 3, 6, NONE),
    ];
    let found = check(&log(Protocol::Consumer, 1, entries));
    assert_eq!(found.iter().map(|a| a.rule).collect::<Vec<_>>(), vec![BrokerRule::ZombieCommit]);
    assert_eq!(found[0].evidence, vec![1, 2], "only the commit between fencing and rejoin");
}

/// FENCED_MEMBER_EPOCH to a heartbeat at a stale epoch changes nothing at the coordinator (its
/// epoch check throws before any record is written): the member keeps its current epoch, and a
/// commit at that one is accepted, as Kafka's exact-epoch commit check says.
#[test]
fn a_consumer_commit_at_its_current_epoch_after_a_stale_heartbeat_was_fenced_passes() {
    let entries = vec![
        heartbeat("m0.0", 10, "a", 0, 1, NONE, Some(&[0])),
        heartbeat("m0.0", 20, "a", 1, 2, NONE, None),
        heartbeat("m0.0", 50, "a", 1, 0, FENCED_MEMBER_EPOCH, None),
        commit("m0.0", 60, "a", 2, 5, NONE),
    ];
    let found = check(&log(Protocol::Consumer, 1, entries));
    assert!(found.is_empty(), "{found:?}");
}

#[test]
fn a_committed_offset_lowered_by_a_commit_passes() {
    let entries = vec![
        commit("m0.0", 10, "a", 1, 10, NONE),
        fetched("observer", 20, 10),
        commit("m1.0", 30, "b", 2, 4, NONE),
        fetched("observer", 40, 4),
    ];
    assert!(answer_rules(&log(Protocol::Classic, 1, entries)).is_empty());
}

#[test]
fn a_committed_offset_that_goes_back_unasked_is_an_offset_regression() {
    let entries = vec![
        commit("m0.0", 10, "a", 1, 4, NONE),
        commit("m0.0", 20, "a", 1, 10, NONE),
        fetched("observer", 40, 4), // the commit of 4 was answered before 10 was asked
    ];
    let found: Vec<_> = check(&log(Protocol::Classic, 1, entries))
        .into_iter()
        .filter(|a| a.rule != BrokerRule::UnknownGenerationSent)
        .collect();
    assert_eq!(
        found.iter().map(|a| a.rule).collect::<Vec<_>>(),
        vec![BrokerRule::OffsetRegression]
    );
    assert_eq!(found[0].evidence, vec![1, 2]);
}

#[test]
fn a_committed_offset_lowered_by_an_unanswered_commit_passes() {
    let unanswered = Entry::Unanswered {
        actor: "m1.0".into(),
        sent_ms: 15,
        call: Request::Commit {
            member_id: "b".into(),
            generation: 1,
            offsets: vec![(tp(0), 4)],
            instance: None,
        },
        group: String::new(),
    };
    let entries =
        vec![commit("m0.0", 20, "a", 1, 10, NONE), unanswered, fetched("observer", 40, 4)];
    assert!(answer_rules(&log(Protocol::Classic, 1, entries)).is_empty());
}

#[test]
fn a_generation_that_goes_back_is_a_generation_regression() {
    let mut entries = classic_group();
    entries.push(join("m0.0", 30, "a", 3, "a", &["a", "b"]));
    entries.push(join("m1.0", 40, "b", 2, "a", &[]));
    assert_eq!(rules(&log(Protocol::Classic, 2, entries)), vec![BrokerRule::GenerationRegression]);
}

#[test]
fn a_rejoin_answered_the_current_generation_passes() {
    let mut entries = classic_group();
    entries.push(join("m1.0", 30, "b", 1, "a", &[]));
    assert!(rules(&log(Protocol::Classic, 2, entries)).is_empty());
}

#[test]
fn a_generation_told_two_member_lists_is_membership_without_generation() {
    let mut entries = classic_group();
    entries.push(join("m0.0", 30, "a", 1, "a", &["a", "b", "c"]));
    assert_eq!(
        rules(&log(Protocol::Classic, 2, entries)),
        vec![BrokerRule::MembershipWithoutGeneration]
    );
}

#[test]
fn a_sync_of_a_member_left_out_of_its_generation_is_membership_without_generation() {
    let mut entries = classic_group();
    entries.push(join("m2.0", 15, "c", 1, "a", &[]));
    entries.push(sync("m2.0", 25, "c", 1, &[]));
    assert_eq!(
        rules(&log(Protocol::Classic, 2, entries)),
        vec![BrokerRule::MembershipWithoutGeneration]
    );
}

#[test]
fn a_member_epoch_that_goes_back_is_a_generation_regression() {
    let entries = vec![
        heartbeat("m0.0", 10, "a", 0, 5, NONE, Some(&[0])),
        heartbeat("m0.0", 20, "a", 5, 4, NONE, None),
    ];
    assert_eq!(rules(&log(Protocol::Consumer, 1, entries)), vec![BrokerRule::GenerationRegression]);
}

fn ended(mut entries: Vec<Entry>) -> Vec<Entry> {
    entries.insert(0, mark(0, Mark::Started("m1.0".into())));
    entries.insert(0, mark(0, Mark::Started("m0.0".into())));
    entries.push(mark(50, Mark::Heal));
    entries.push(x(
        "m0.0",
        60,
        61,
        Request::Heartbeat { member_id: "a".into(), generation: 1, instance: None },
        Answer::Error { error: NONE },
    ));
    entries.push(mark(100, Mark::End));
    entries
}

#[test]
fn a_stable_group_at_the_end_passes() {
    assert!(rules(&log(Protocol::Classic, 2, ended(classic_group()))).is_empty());
}

#[test]
fn a_partition_nobody_holds_at_the_end_is_not_converged() {
    let mut entries = classic_group();
    entries[3] = sync("m1.0", 20, "b", 1, &[]);
    let found = check(&log(Protocol::Classic, 2, ended(entries)));
    assert_eq!(found.iter().map(|a| a.rule).collect::<Vec<_>>(), vec![BrokerRule::NotConverged]);
    assert!(found[0].summary.contains("t-1"), "{}", found[0].summary);
}

#[test]
fn a_live_member_fenced_at_the_end_is_not_converged() {
    let mut entries = ended(classic_group());
    let end = entries.pop().expect("end mark");
    entries.push(x(
        "m1.0",
        70,
        71,
        Request::Heartbeat { member_id: "b".into(), generation: 1, instance: None },
        Answer::Error { error: UNKNOWN_MEMBER_ID },
    ));
    entries.push(end);
    assert_eq!(rules(&log(Protocol::Classic, 2, entries)), vec![BrokerRule::NotConverged]);
}

#[test]
fn a_consumer_group_reconciled_at_the_end_passes() {
    let entries = vec![
        mark(0, Mark::Started("m0.0".into())),
        mark(0, Mark::Started("m1.0".into())),
        heartbeat("m0.0", 10, "a", 0, 2, NONE, Some(&[0])),
        heartbeat("m1.0", 10, "b", 0, 2, NONE, Some(&[1])),
        mark(100, Mark::End),
    ];
    assert!(rules(&log(Protocol::Consumer, 2, entries)).is_empty());
}

#[test]
fn a_consumer_group_at_two_epochs_at_the_end_is_not_converged() {
    let entries = vec![
        mark(0, Mark::Started("m0.0".into())),
        mark(0, Mark::Started("m1.0".into())),
        heartbeat("m0.0", 10, "a", 0, 1, NONE, Some(&[0])),
        heartbeat("m1.0", 10, "b", 0, 2, NONE, Some(&[1])),
        mark(100, Mark::End),
    ];
    assert_eq!(rules(&log(Protocol::Consumer, 2, entries)), vec![BrokerRule::NotConverged]);
}

fn fetch(from: i64, offsets: &[i64]) -> Entry {
    let request = Request::Fetch { partitions: vec![(tp(0), from)] };
    let answer = Answer::Fetch { partitions: vec![(tp(0), NONE, offsets.to_vec())] };
    x("m0.0", 10, 11, request, answer)
}

#[test]
fn fetched_records_in_order_from_a_batch_start_before_the_offset_pass() {
    assert!(rules(&log(Protocol::Classic, 1, vec![fetch(5, &[3, 4, 5, 6, 7])])).is_empty());
}

#[test]
fn fetched_records_that_skip_an_offset_are_a_fetch_skip() {
    assert_eq!(
        rules(&log(Protocol::Classic, 1, vec![fetch(5, &[5, 7])])),
        vec![BrokerRule::FetchSkip]
    );
    assert_eq!(
        rules(&log(Protocol::Classic, 1, vec![fetch(5, &[6])])),
        vec![BrokerRule::FetchSkip]
    );
}

#[test]
fn fetched_records_that_repeat_an_offset_are_a_fetch_repeat() {
    assert_eq!(
        rules(&log(Protocol::Classic, 1, vec![fetch(5, &[5, 6, 6, 7])])),
        vec![BrokerRule::FetchRepeat]
    );
}

/// A static member's JoinGroup: `join` with its instance id.
fn static_join(
    actor: &str,
    t: u64,
    id: &str,
    instance: &str,
    generation: i32,
    members: &[&str],
) -> Entry {
    let Entry::Exchange(mut e) = join(actor, t, id, generation, "a", members) else {
        unreachable!()
    };
    e.request = Request::Join {
        member_id: String::new(),
        instance: Some(instance.into()),
        session_timeout_ms: None,
        rebalance_timeout_ms: None,
        version: None,
    };
    Entry::Exchange(e)
}

/// Static members `a` (instance i0, the leader) and `b` (instance i1) in generation 1.
fn static_group() -> Vec<Entry> {
    vec![
        static_join("m0.0", 10, "a", "i0", 1, &["a", "b"]),
        static_join("m1.0", 10, "b", "i1", 1, &[]),
        sync("m0.0", 20, "a", 1, &[0]),
        sync("m1.0", 20, "b", 1, &[1]),
    ]
}

/// KIP-345: a static member's new process (`b2`) takes instance i1 over inside generation 1,
/// with no rebalance: it syncs at generation 1, gets `b`'s partition and commits there. Then the
/// leader is replaced too and, answered by KIP-814, hears the member list with both new ids.
#[test]
fn a_static_replacement_inside_a_generation_passes() {
    let mut entries = static_group();
    entries.push(static_join("m1.1", 30, "b2", "i1", 1, &[]));
    entries.push(sync("m1.1", 40, "b2", 1, &[1]));
    entries.push(commit("m1.1", 50, "b2", 1, 7, NONE));
    let mut leader = static_join("m0.1", 60, "a2", "i0", 1, &["a2", "b2"]);
    if let Entry::Exchange(e) = &mut leader {
        if let Answer::Join { leader, .. } = &mut e.answer {
            *leader = "a2".into();
        }
    }
    entries.push(leader);
    entries.push(sync("m0.1", 70, "a2", 1, &[0]));
    assert!(rules(&log(Protocol::Classic, 2, entries)).is_empty());
}

/// Found by the coordinator fuzz target (libFuzzer): two processes took instance i1 over with
/// JoinGroups in flight together (`b2` and `b3`, in the same milliseconds), so which the broker
/// served last is unknown; either way `b` was replaced and the last of the two holds `b`'s
/// place and assignment in generation 1. `b3`'s SyncGroup handed `b`'s partition is no split
/// assignment.
#[test]
fn two_takeovers_in_flight_together_both_succeed_the_replaced_member() {
    let mut entries = static_group();
    entries.push(static_join("m1.1", 30, "b2", "i1", 1, &[]));
    entries.push(static_join("m1.2", 30, "b3", "i1", 1, &[]));
    entries.push(sync("m1.2", 40, "b3", 1, &[1]));
    passes_until_a_stranger_takes_the_partition(entries);
}

/// `entries` pass the answer rules; yet a member id that never held the instance, synced into
/// generation 1 with its partition after them, is still a second holder.
fn passes_until_a_stranger_takes_the_partition(mut entries: Vec<Entry>) {
    let found = answer_rules(&log(Protocol::Classic, 2, entries.clone()));
    assert!(found.is_empty(), "{found:?}");
    entries.push(sync("m2.0", 50, "c", 1, &[1]));
    let found = answer_rules(&log(Protocol::Classic, 2, entries));
    assert!(found.contains(&BrokerRule::SplitAssignment), "{found:?}");
}

/// A takeover written in the millisecond the previous takeover's answer was read may have been
/// served before or after it: either way one of the two new ids took the other's place, so both
/// syncing into the generation with the instance's partition is a succession, not a split, in
/// either order (libFuzzer find: the second takeover's SyncGroup came after the first's). A
/// member id never tied to the instance is still a second holder.
#[test]
fn a_takeover_written_as_the_previous_one_was_answered_may_have_replaced_it() {
    let mut entries = static_group();
    entries.push(static_join("m1.1", 30, "b2", "i1", 1, &[]));
    entries.push(sync("m1.1", 31, "b2", 1, &[1]));
    entries.push(static_join("m1.2", 31, "b3", "i1", 1, &[]));
    entries.push(sync("m1.2", 40, "b3", 1, &[1]));
    entries.push(sync("m1.1", 45, "b2", 1, &[1]));
    passes_until_a_stranger_takes_the_partition(entries);
}

/// Once the instance is given to `b2`, the coordinator fences `b` (FENCED_INSTANCE_ID): a
/// commit from `b` accepted after that is a zombie's.
#[test]
fn a_commit_from_a_replaced_static_member_accepted_is_a_zombie_commit() {
    let mut entries = static_group();
    entries.push(static_join("m1.1", 30, "b2", "i1", 1, &[]));
    entries.push(commit("m1.0", 50, "b", 1, 7, NONE));
    let found = check(&log(Protocol::Classic, 2, entries));
    assert_eq!(found.iter().map(|a| a.rule).collect::<Vec<_>>(), vec![BrokerRule::ZombieCommit]);
    assert!(found[0].summary.contains("instance i1 was given to b2"), "{}", found[0].summary);
}

/// The exception is for static replacements only: a dynamic newcomer synced into a generation
/// whose list left it out is still membership without a generation, and it may not take a
/// member's partition there.
#[test]
fn a_dynamic_member_slipped_into_a_generation_is_still_caught() {
    let mut entries = static_group();
    entries.push(join("m2.0", 30, "c", 1, "a", &[]));
    entries.push(sync("m2.0", 40, "c", 1, &[1]));
    let found = rules(&log(Protocol::Classic, 2, entries));
    assert!(found.contains(&BrokerRule::MembershipWithoutGeneration), "{found:?}");
    assert!(found.contains(&BrokerRule::SplitAssignment), "{found:?}");
}

/// The same entry, answered by broker node `node`.
fn on(node: i32, mut entry: Entry) -> Entry {
    if let Entry::Exchange(x) = &mut entry {
        x.node = Some(node);
    }
    entry
}

/// Kafka keeps a classic member's leave in memory only (the group is written when the next
/// generation's assignment is stored): a coordinator that takes the group over before then
/// loads the member back, and accepts its commit at the written generation. The commit answered
/// by another node after the leave is therefore no zombie's.
#[test]
fn a_commit_after_a_leave_that_a_coordinator_change_undid_passes() {
    let mut entries: Vec<Entry> = classic_group().into_iter().map(|e| on(0, e)).collect();
    let leave = left("m0.0", 30, "a");
    entries.push(on(0, leave));
    entries.push(on(1, commit("m0.0", 40, "a", 1, 5, NONE)));
    assert!(rules(&log(Protocol::Classic, 2, entries)).is_empty());
}

/// A generation handed out by a JoinGroup and never written is handed out again, to other
/// members, by the next coordinator (GroupMetadataManager loads the written generation): two
/// member lists for generation 2 across a NOT_COORDINATOR answer are no anomaly, and neither is
/// a commit at generation 1 accepted by the new coordinator.
#[test]
fn a_generation_handed_out_again_after_a_coordinator_change_passes() {
    let mut entries = classic_group();
    entries.push(join("m0.0", 30, "a", 2, "a", &["a", "b", "c"]));
    let moved = x(
        "m0.0",
        32,
        33,
        Request::Sync { member_id: "a".into(), generation: 2, instance: None },
        Answer::Sync { error: eras::NOT_COORDINATOR, assignment: Vec::new() },
    );
    entries.push(moved);
    entries.push(commit("m1.0", 40, "b", 1, 5, NONE));
    entries.push(join("m0.0", 50, "a", 2, "a", &["a", "b"]));
    entries.push(sync("m0.0", 60, "a", 2, &[0]));
    assert!(rules(&log(Protocol::Classic, 2, entries)).is_empty());
}

/// A generation whose SyncGroup was answered NONE was written: no coordinator change undoes
/// it, so a commit at an older generation accepted after it is a zombie's whatever the signs.
#[test]
fn a_commit_older_than_a_written_generation_is_a_zombie_commit_across_a_coordinator_change() {
    let mut entries = classic_group();
    entries.push(join("m0.0", 30, "a", 2, "a", &["a"]));
    entries.push(sync("m0.0", 35, "a", 2, &[0, 1]));
    let mut entries: Vec<Entry> = entries.into_iter().map(|e| on(0, e)).collect();
    entries.push(on(1, commit("m1.0", 40, "b", 1, 5, NONE)));
    let found = check(&log(Protocol::Classic, 2, entries));
    assert_eq!(found.iter().map(|a| a.rule).collect::<Vec<_>>(), vec![BrokerRule::ZombieCommit]);
    assert!(found[0].summary.contains("SyncGroup answered NONE at generation 2"), "{found:?}");
}

/// Two processes of one static instance whose JoinGroups were in flight together: which one the
/// broker gave the instance to last is unknown (an answer read late, after a pause), so neither
/// is fenced by the other's answer, and the one read first goes on committing.
#[test]
fn a_static_replacement_whose_requests_crossed_is_not_claimed() {
    let mut entries = static_group();
    let Entry::Exchange(mut late) = static_join("m1.1", 5, "b0", "i1", 1, &[]) else {
        unreachable!()
    };
    late.answered_ms = 30; // written before `b`'s answer was read, read after it
    entries.push(Entry::Exchange(late));
    entries.push(commit("m1.0", 50, "b", 1, 7, NONE));
    assert!(rules(&log(Protocol::Classic, 2, entries)).is_empty());
}

/// A group that migrated has members of both protocols at the end: each stands where its last
/// answer of either kind left it, a classic member at the member epoch the consumer group gave
/// it as its generation.
#[test]
fn a_migrated_group_converged_with_members_of_both_protocols_passes() {
    let entries = vec![
        mark(0, Mark::Started("m0.0".into())),
        mark(0, Mark::Started("m1.0".into())),
        heartbeat("m0.0", 10, "a", 0, 3, NONE, Some(&[0])),
        join("m1.0", 10, "b", 3, "b", &[]),
        sync("m1.0", 20, "b", 3, &[1]),
        mark(50, Mark::Heal),
        heartbeat("m0.0", 60, "a", 3, 3, NONE, None),
        x(
            "m1.0",
            60,
            61,
            Request::Heartbeat { member_id: "b".into(), generation: 3, instance: None },
            Answer::Error { error: NONE },
        ),
        mark(100, Mark::End),
    ];
    assert!(rules(&log(Protocol::Consumer, 2, entries)).is_empty());
}

/// A release the broker may have read though its answer never came (the connection dropped
/// after the write): the partition may move on it, as Kafka's coordinator acts on a heartbeat
/// whose answer is lost.
#[test]
fn a_consumer_partition_released_by_a_heartbeat_never_answered_passes() {
    let release = Entry::Unanswered {
        actor: "m0.0".into(),
        sent_ms: 110,
        call: Request::ConsumerHeartbeat {
            member_id: "a".into(),
            epoch: 2,
            owned: Some(vec![tp(0)]),
            instance: None,
        },
        group: String::new(),
    };
    let entries = vec![
        heartbeat("m0.0", 10, "a", 0, 1, NONE, Some(&[0, 1])),
        heartbeat("m0.0", 100, "a", 1, 2, NONE, Some(&[0])), // told to release 1
        release,
        heartbeat("m1.0", 120, "b", 0, 2, NONE, Some(&[1])),
        ack("m0.0", 200, "a", 2, &[0]),
    ];
    assert!(rules(&log(Protocol::Consumer, 2, entries)).is_empty());
}

/// KIP-394: a member id handed out with MEMBER_ID_REQUIRED is the actor's to join with, in the
/// millisecond it read it too.
#[test]
fn a_join_with_the_member_id_a_member_id_required_answer_gave_passes() {
    let required = Answer::Join {
        error: 79,
        generation: -1,
        member_id: "a".into(),
        leader: String::new(),
        members: vec![],
    };
    let entries = vec![
        x(
            "m0.0",
            44,
            47,
            Request::Join {
                member_id: String::new(),
                instance: None,
                session_timeout_ms: None,
                rebalance_timeout_ms: None,
                version: None,
            },
            required,
        ),
        join("m0.0", 47, "a", 1, "a", &["a"]),
    ];
    let found = check(&log(Protocol::Classic, 1, entries));
    assert!(found.is_empty(), "{found:?}");
}

/// Kafka answers a SyncGroup of a generation other than the group's ILLEGAL_GENERATION: one
/// answered NONE after a later generation was written tells a member of the past that it belongs.
#[test]
fn a_sync_of_a_generation_the_group_moved_past_answered_none_is_stale_generation_accepted() {
    let mut entries = classic_group();
    entries.push(join("m0.0", 30, "a", 2, "a", &["a"]));
    entries.push(sync("m0.0", 35, "a", 2, &[0, 1]));
    entries.push(sync("m1.0", 40, "b", 1, &[1]));
    let found = check(&log(Protocol::Classic, 2, entries));
    let rules: Vec<BrokerRule> = found.iter().map(|a| a.rule).collect();
    assert!(rules.contains(&BrokerRule::StaleGenerationAccepted), "{found:?}");
}

/// A coordinator still loading the group answers heartbeats NONE blindly (Kafka does): before
/// it was seen serving the group, a heartbeat's NONE proves nothing; after, it does.
#[test]
fn a_blind_heartbeat_passes_and_a_served_one_of_a_past_generation_does_not() {
    let hb = |t: u64, node: i32| {
        let request = Request::Heartbeat { member_id: "b".into(), generation: 1, instance: None };
        on(node, x("m1.0", t, t + 1, request, Answer::Error { error: NONE }))
    };
    let mut entries: Vec<Entry> = classic_group().into_iter().map(|e| on(0, e)).collect();
    entries.push(on(0, join("m0.0", 30, "a", 2, "a", &["a"])));
    entries.push(on(0, sync("m0.0", 35, "a", 2, &[0, 1])));
    entries.push(hb(40, 1)); // a new coordinator, not yet seen serving: blind
    assert!(rules(&log(Protocol::Classic, 2, entries.clone())).is_empty());
    entries.push(on(1, commit("m0.0", 50, "a", 2, 5, NONE))); // it serves now
    entries.push(hb(60, 1));
    assert_eq!(
        rules(&log(Protocol::Classic, 2, entries)),
        vec![BrokerRule::StaleGenerationAccepted]
    );
}

#[test]
fn a_leader_told_a_member_list_without_itself_is_a_malformed_answer() {
    let mut entries = classic_group();
    entries[0] = join("m0.0", 10, "a", 1, "a", &["b"]);
    assert!(rules(&log(Protocol::Classic, 2, entries)).contains(&BrokerRule::MalformedAnswer));
}

#[test]
fn a_consumer_join_answered_none_at_epoch_zero_is_a_malformed_answer() {
    let entries = vec![heartbeat("m0.0", 10, "a", 0, 0, NONE, Some(&[0]))];
    assert_eq!(rules(&log(Protocol::Consumer, 1, entries)), vec![BrokerRule::MalformedAnswer]);
}

/// A member that heartbeats at a generation no JoinGroup answer gave it is confused about its
/// membership, whatever the coordinator answers.
#[test]
fn a_heartbeat_at_a_generation_never_given_is_unknown_generation_sent() {
    let mut entries = classic_group();
    let request = Request::Heartbeat { member_id: "b".into(), generation: 7, instance: None };
    entries.push(x("m1.0", 30, 31, request, Answer::Error { error: ILLEGAL_GENERATION }));
    let found = check(&log(Protocol::Classic, 2, entries));
    assert_eq!(
        found.iter().map(|a| a.rule).collect::<Vec<_>>(),
        vec![BrokerRule::UnknownGenerationSent]
    );
    assert_eq!(found[0].evidence, vec![4]);
}

/// KIP-848: a (re)join claims no partitions; Kafka refuses one that does.
#[test]
fn a_consumer_rejoin_listing_owned_partitions_is_join_owning_partitions() {
    let request = Request::ConsumerHeartbeat {
        member_id: "a".into(),
        epoch: 0,
        owned: Some(vec![tp(0)]),
        instance: None,
    };
    let answer = Answer::ConsumerHeartbeat {
        error: 42,
        member_id: String::new(),
        epoch: 0,
        assignment: None,
        interval_ms: None,
    };
    let entries = vec![x("m0.0", 10, 11, request, answer)];
    assert_eq!(rules(&log(Protocol::Consumer, 1, entries)), vec![BrokerRule::JoinOwningPartitions]);
}

/// A misbehaving client's requests are excused only where it declared them (by the answer it
/// read), and its requests whose answers never came; the same request from anyone else counts.
#[test]
fn a_declared_misbehaving_request_is_excused_and_nobody_elses() {
    let bad = |actor: &str| {
        let request =
            Request::Heartbeat { member_id: "stranger".into(), generation: 3, instance: None };
        x(actor, 10, 11, request, Answer::Error { error: UNKNOWN_MEMBER_ID })
    };
    let mut excused = requests::Excused::new();
    excused.cases.insert(("x0".into(), 11));
    excused.members.insert("x0".into());
    let found =
        |actor: &str| check_excusing(&log(Protocol::Classic, 1, vec![bad(actor)]), &excused);
    assert!(found("x0.0").is_empty());
    assert_eq!(found("m0.0").len(), 1);
}

/// KIP-345: a static member's new process takes its instance's place in a Stable group's
/// generation without a rebalance. When the old process never read its own JoinGroup answer,
/// the answers do not tie the old id to the instance, yet the newcomer's static join answered
/// at that generation admits it: its SyncGroup there is no membership change.
#[test]
fn a_static_newcomer_whose_predecessor_was_never_tied_to_its_instance_passes() {
    let mut entries = static_group();
    entries.push(static_join("m2.1", 30, "c2", "i2", 1, &[])); // took the place of an unread id
    entries.push(sync("m2.1", 40, "c2", 1, &[]));
    entries.push(commit("m2.1", 50, "c2", 1, 7, NONE));
    assert!(rules(&log(Protocol::Classic, 2, entries)).is_empty());
}

/// KIP-345 inside one generation, as a replaced leader hears it (KIP-814): its member list names
/// another static newcomer in place of an id the answers never tied to that instance. Same
/// size, every newcomer a static join at that generation: a replacement, not a membership
/// change. A dynamic newcomer in the same place still is one.
#[test]
fn a_leader_list_changed_only_by_static_replacements_passes() {
    let mut entries = static_group();
    entries.push(static_join("m1.1", 30, "b2", "i1b", 1, &[]));
    let mut leader = static_join("m0.1", 60, "a2", "i0", 1, &["a2", "b2"]);
    if let Entry::Exchange(e) = &mut leader {
        if let Answer::Join { leader, .. } = &mut e.answer {
            *leader = "a2".into();
        }
    }
    entries.push(leader.clone());
    assert!(rules(&log(Protocol::Classic, 2, entries.clone())).is_empty());
    entries[4] = join("m1.1", 30, "b2", 1, "a", &[]); // b2 joined dynamically instead
    assert!(rules(&log(Protocol::Classic, 2, entries))
        .contains(&BrokerRule::MembershipWithoutGeneration));
}

/// A client's dropped connection leaves the coordinator holding the group: a leave it accepted
/// still proves a later commit a zombie's. The harness's mark that it moved the coordinator
/// (or crashed a broker) ends what the in-memory leave proves.
#[test]
fn a_dropped_connection_is_no_coordinator_change_and_a_harness_move_is() {
    let leave = left("m0.0", 30, "a");
    let dropped = Entry::Unanswered {
        actor: "m1.0".into(),
        sent_ms: 33,
        call: Request::Heartbeat { member_id: "b".into(), generation: 1, instance: None },
        group: String::new(),
    };
    let mut entries = classic_group();
    entries.extend([leave, dropped, commit("m0.0", 40, "a", 1, 5, NONE)]);
    assert_eq!(rules(&log(Protocol::Classic, 2, entries.clone())), vec![BrokerRule::ZombieCommit]);
    entries.insert(6, mark(35, Mark::CoordinatorMoved));
    assert!(rules(&log(Protocol::Classic, 2, entries)).is_empty());
}

/// An empty consumer group deleted and created again (for a classic member's join) starts its
/// epochs afresh: a member's rejoin answered a lower epoch than it held before is no regression,
/// and its epochs are judged from that join on.
#[test]
fn a_rejoin_to_a_recreated_consumer_group_starts_its_epochs_afresh() {
    let entries = vec![
        heartbeat("m0.0", 10, "a", 0, 14, NONE, Some(&[0])),
        heartbeat("m0.0", 20, "a", 14, 15, NONE, None),
        heartbeat("m0.0", 30, "a", 0, 2, NONE, Some(&[0])), // the group was recreated
        heartbeat("m0.0", 40, "a", 2, 2, NONE, None),
    ];
    assert!(rules(&log(Protocol::Consumer, 1, entries.clone())).is_empty());
    let mut back = entries;
    back.push(heartbeat("m0.0", 50, "a", 2, 1, NONE, None)); // but never below the join's
    assert_eq!(rules(&log(Protocol::Consumer, 1, back)), vec![BrokerRule::GenerationRegression]);
}

/// A member id the coordinator called unknown and then let back in by a JoinGroup at the
/// commit's generation is a member again (Kafka's consumer group re-creates a classic member a
/// JoinGroup names when it does not know it; a classic group answers such a join with a new id).
#[test]
fn a_commit_after_the_member_was_let_back_in_passes() {
    let mut entries = classic_group();
    let hb = Request::Heartbeat { member_id: "a".into(), generation: 1, instance: None };
    entries.push(x("m0.0", 30, 31, hb, Answer::Error { error: UNKNOWN_MEMBER_ID }));
    let rejoin = Answer::Join {
        error: NONE,
        generation: 2,
        member_id: "a".into(),
        leader: "a".into(),
        members: vec!["a".into(), "b".into()],
    };
    entries.push(x(
        "m0.0",
        32,
        33,
        Request::Join {
            member_id: "a".into(),
            instance: None,
            session_timeout_ms: None,
            rebalance_timeout_ms: None,
            version: None,
        },
        rejoin,
    ));
    entries.push(commit("m0.0", 40, "a", 2, 5, NONE));
    assert!(answer_rules(&log(Protocol::Classic, 2, entries)).is_empty());
}

/// A classic member of a consumer group holds its member epoch as its generation; when the
/// emptied group is deleted and made again, the member's next JoinGroup gives it a lower one,
/// and its SyncGroup there is no stale generation.
#[test]
fn a_sync_after_the_group_was_made_again_at_a_lower_generation_passes() {
    let mut entries = vec![heartbeat("m9.0", 5, "z", 0, 4, NONE, Some(&[]))]; // a consumer group
    entries.push(join("m0.0", 10, "a", 5, "", &[]));
    entries.push(sync("m0.0", 20, "a", 5, &[0]));
    entries.push(x(
        "m0.0",
        30,
        31,
        Request::Join {
            member_id: "a".into(),
            instance: None,
            session_timeout_ms: None,
            rebalance_timeout_ms: None,
            version: None,
        },
        {
            Answer::Join {
                error: NONE,
                generation: 3,
                member_id: "a".into(),
                leader: String::new(),
                members: vec![],
            }
        },
    ));
    entries.push(sync("m0.0", 31, "a", 3, &[0]));
    let found = answer_rules(&log(Protocol::Consumer, 1, entries));
    assert!(!found.contains(&BrokerRule::StaleGenerationAccepted), "{found:?}");
}

/// A real client library may commit through a second client with its own default `client.id`
/// (samsa 0.1.8 commits as "samsa" while its group member is "m4.0"): a connection no member
/// process owns is judged against what any actor was given, and a member process against what
/// it read itself.
#[test]
fn a_commit_from_a_connection_no_member_owns_is_judged_against_every_answer() {
    let started = |actor: &str| Entry::Mark { at_ms: 0, mark: Mark::Started(actor.into()) };
    let mut entries = vec![started("m0.0"), started("m1.0")];
    entries.extend(classic_group());
    entries.push(commit("samsa", 30, "b", 1, 5, NONE));
    assert!(rules(&log(Protocol::Classic, 2, entries.clone())).is_empty());
    entries.push(commit("samsa", 40, "b", 9, 5, ILLEGAL_GENERATION));
    assert_eq!(
        rules(&log(Protocol::Classic, 2, entries.clone())),
        [BrokerRule::UnknownGenerationSent]
    );
    entries.push(commit("m0.0", 50, "b", 1, 5, NONE)); // b's generation, but m0.0 never read it
    assert_eq!(rules(&log(Protocol::Classic, 2, entries)).len(), 2);
}

mod classic_sessions;
mod consumer_sessions;
mod coordinator_changes;
mod errors;
mod limits;
mod recreated;
mod removals;
mod same_connection;
