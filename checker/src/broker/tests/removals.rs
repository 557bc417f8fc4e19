//! Session expiry, removed members and KIP-848 epoch fencing on hand-built answer logs.

use super::*;

/// `entry`, a JoinGroup, asking for a session timeout of `ms`.
fn with_session(mut entry: Entry, ms: i32) -> Entry {
    if let Entry::Exchange(Exchange { request: Request::Join { session_timeout_ms, .. }, .. }) =
        &mut entry
    {
        *session_timeout_ms = Some(ms);
    }
    entry
}

/// `classic_group` with sessions of 10 s.
fn classic_group_with_sessions() -> Vec<Entry> {
    let mut entries = classic_group();
    entries[0] = with_session(entries[0].clone(), 10_000);
    entries[1] = with_session(entries[1].clone(), 10_000);
    entries
}

fn classic_heartbeat(actor: &str, t: u64, id: &str, generation: i32, error: i16) -> Entry {
    let request = Request::Heartbeat { member_id: id.into(), generation, instance: None };
    x(actor, t, t + 1, request, Answer::Error { error })
}

/// Kafka removes a classic member whose heartbeat timer fires while it awaits no join or sync
/// answer (`expireClassicGroupMemberHeartbeat`); its next heartbeat finds no member. A
/// coordinator that answers it NONE keeps a dead member's partitions assigned to it.
#[test]
fn a_heartbeat_after_its_session_expired_answered_none_is_removed_member_accepted() {
    let mut entries = classic_group_with_sessions();
    entries.push(classic_heartbeat("m0.0", 5_000, "a", 1, NONE));
    entries.push(classic_heartbeat("m1.0", 25_000, "b", 1, NONE)); // b silent for 25 s
    let found = check(&log(Protocol::Classic, 2, entries));
    assert_eq!(
        found.iter().map(|a| a.rule).collect::<Vec<_>>(),
        [BrokerRule::RemovedMemberAccepted]
    );
    assert_eq!(found[0].evidence, [3, 5], "b's sync re-armed its timer last");
}

/// A member back from a pause longer than its session writes a heartbeat and a commit in the
/// same millisecond, both answered NONE. Either may have been read first, but both were written
/// after the session ran out, so neither could re-arm the timer before it fired: each is judged
/// on its own (a check that let requests in flight together clear each other passed this).
#[test]
fn requests_written_together_after_the_session_ran_out_do_not_clear_each_other() {
    let mut entries = classic_group_with_sessions();
    entries.push(classic_heartbeat("m1.0", 25_000, "b", 1, NONE));
    entries.push(commit("m1.0", 25_000, "b", 1, 5, NONE));
    let mut found = rules(&log(Protocol::Classic, 2, entries));
    found.sort();
    assert_eq!(found, [BrokerRule::ZombieCommit, BrokerRule::RemovedMemberAccepted]);
}

#[test]
fn a_heartbeat_within_its_session_passes() {
    let mut entries = classic_group_with_sessions();
    entries.push(classic_heartbeat("m1.0", 9_000, "b", 1, NONE));
    entries.push(classic_heartbeat("m1.0", 18_000, "b", 1, NONE));
    assert!(rules(&log(Protocol::Classic, 2, entries)).is_empty());
}

/// A request whose answer never came may have re-armed the timer at any time, and a coordinator
/// that loads the group re-arms every timer: neither leaves proof of expiry.
#[test]
fn an_unanswered_request_or_a_coordinator_change_leaves_no_proof_of_expiry() {
    let mut unanswered = classic_group_with_sessions();
    let call = Request::Heartbeat { member_id: "b".into(), generation: 1, instance: None };
    unanswered.push(Entry::Unanswered {
        actor: "m1.0".into(),
        sent_ms: 9_000,
        call,
        group: String::new(),
    });
    unanswered.push(classic_heartbeat("m1.0", 25_000, "b", 1, NONE));
    assert!(rules(&log(Protocol::Classic, 2, unanswered)).is_empty());
    let mut moved = classic_group_with_sessions();
    moved.push(Entry::Mark { at_ms: 15_000, mark: Mark::CoordinatorMoved });
    moved.push(classic_heartbeat("m1.0", 25_000, "b", 1, NONE));
    assert!(rules(&log(Protocol::Classic, 2, moved)).is_empty());
}

#[test]
fn a_commit_after_its_session_expired_is_a_zombie_commit() {
    let mut entries = classic_group_with_sessions();
    entries.push(commit("m1.0", 25_000, "b", 1, 5, NONE));
    assert_eq!(rules(&log(Protocol::Classic, 2, entries)), [BrokerRule::ZombieCommit]);
}

/// KIP-345: a static member that rejoins under its instance id with a new member id takes the
/// old id's place (in a Stable group, at the same generation); the coordinator then fences the
/// old id (FENCED_INSTANCE_ID). Its heartbeat answered NONE is a removed member accepted, which
/// the stale-generation rule cannot see: the generation did not move.
#[test]
fn a_heartbeat_of_a_replaced_static_member_answered_none_is_removed_member_accepted() {
    let mut entries = static_group();
    entries.push(static_join("m1.1", 30, "c", "i1", 1, &[]));
    let mut passing = entries.clone();
    passing.push(classic_heartbeat("m1.1", 40, "c", 1, NONE));
    assert!(answer_rules(&log(Protocol::Classic, 2, passing)).is_empty());
    entries.push(classic_heartbeat("m1.0", 40, "b", 1, NONE));
    assert_eq!(
        answer_rules(&log(Protocol::Classic, 2, entries)),
        [BrokerRule::RemovedMemberAccepted]
    );
}

#[test]
fn a_heartbeat_after_its_leave_was_accepted_is_removed_member_accepted() {
    let mut entries = classic_group();
    entries.push(left("m1.0", 30, "b"));
    entries.push(classic_heartbeat("m1.0", 40, "b", 1, NONE));
    assert_eq!(
        answer_rules(&log(Protocol::Classic, 2, entries)),
        [BrokerRule::RemovedMemberAccepted]
    );
}

/// Kafka stores a static takeover made during a rebalance only with that generation's
/// assignment: if the coordinator moves before a SyncGroup of the generation is answered, the
/// next one loads the instance as last stored, still held by the old id, and rightly accepts the
/// old process (static_churn seed 8272). Once a SyncGroup of the takeover's generation was
/// answered by the coordinator that made it, the takeover was stored and proves the old id's
/// removal across the move. A SyncGroup of that generation number answered by the next
/// coordinator, which loaded the generation before and formed the next one again with the old
/// id, stored nothing of the takeover (static_churn seed 13070).
#[test]
fn a_static_takeover_counts_across_a_coordinator_move_only_once_stored() {
    let after_move = |stored: bool| {
        let mut entries = static_group();
        entries.push(static_join("m1.1", 30, "b2", "i1", 2, &[]));
        if stored {
            entries.push(sync("m1.1", 34, "b2", 2, &[1]));
        }
        entries.push(mark(40, Mark::CoordinatorMoved));
        entries.push(sync("m1.0", 50, "b", 1, &[1]));
        rules(&log(Protocol::Classic, 2, entries))
    };
    let formed_again = {
        let mut entries = static_group();
        entries.push(static_join("m1.1", 30, "b2", "i1", 2, &[]));
        entries.push(mark(40, Mark::CoordinatorMoved));
        entries.push(join("m0.0", 42, "a", 2, "a", &["a", "b"]));
        entries.push(join("m1.0", 42, "b", 2, "a", &[]));
        entries.push(sync("m0.0", 45, "a", 2, &[0]));
        entries.push(sync("m1.0", 45, "b", 2, &[1]));
        entries.push(commit("m1.0", 50, "b", 2, 5, NONE));
        rules(&log(Protocol::Classic, 2, entries))
    };
    assert!(
        !formed_again.contains(&BrokerRule::ZombieCommit)
            && !formed_again.contains(&BrokerRule::RemovedMemberAccepted),
        "{formed_again:?}"
    );
    assert!(
        !after_move(false).contains(&BrokerRule::RemovedMemberAccepted),
        "{:?}",
        after_move(false)
    );
    assert!(
        after_move(true).contains(&BrokerRule::RemovedMemberAccepted),
        "{:?}",
        after_move(true)
    );
}

/// A member that rejoins (epoch 0) and is given a lower epoch than before (the group was made
/// again) writes its next heartbeat at once, in the millisecond it read the rejoin's answer: it
/// read that answer first (it sends the epoch the answer gave), so its older epochs do not count
/// against it. A heartbeat written then at an epoch nothing gave it still does.
#[test]
fn a_heartbeat_sent_in_the_millisecond_its_rejoin_was_answered_counts_that_answer_as_read() {
    let with_last = |sent: i32| {
        let entries = vec![
            heartbeat("m0.0", 10, "a", 0, 6, NONE, Some(&[0])),
            heartbeat("m0.0", 20, "a", 6, 7, NONE, None),
            heartbeat("m0.0", 40, "a", 0, 2, NONE, Some(&[1])),
            heartbeat("m0.0", 41, "a", sent, 2, NONE, None),
        ];
        rules(&log(Protocol::Consumer, 2, entries))
    };
    assert!(!with_last(2).contains(&BrokerRule::StaleGenerationAccepted), "{:?}", with_last(2));
    assert!(with_last(1).contains(&BrokerRule::StaleGenerationAccepted));
}

/// KIP-848: the coordinator accepts a member's current epoch and its previous one (the answer
/// that bumped it may have been lost), and fences older ones with FENCED_MEMBER_EPOCH.
#[test]
fn a_consumer_heartbeat_older_than_its_previous_epoch_answered_none_is_stale_generation_accepted() {
    let mut entries = vec![
        heartbeat("m0.0", 10, "a", 0, 1, NONE, Some(&[0, 1])),
        heartbeat("m0.0", 20, "a", 1, 2, NONE, None),
        heartbeat("m0.0", 30, "a", 2, 3, NONE, None),
    ];
    let mut previous = entries.clone();
    previous.push(heartbeat("m0.0", 40, "a", 2, 3, NONE, None));
    assert!(rules(&log(Protocol::Consumer, 2, previous)).is_empty());
    entries.push(heartbeat("m0.0", 40, "a", 1, 3, NONE, None));
    assert_eq!(rules(&log(Protocol::Consumer, 2, entries)), [BrokerRule::StaleGenerationAccepted]);
}

/// `lapsed-session`: after the heal, a classic member in the group owes a request that keeps its
/// session within the session its JoinGroup asked for; silent for longer, it has broken the
/// promise (the coordinator will expire it), whether or not it goes on fetching.
#[test]
fn a_member_silent_past_its_session_after_the_heal_broke_its_promise() {
    let healed = |a_again: u64| {
        let mut entries = classic_group_with_sessions();
        entries.push(mark(22, Mark::Heal));
        entries.push(classic_heartbeat("m0.0", 5_000, "a", 1, NONE));
        entries.push(classic_heartbeat("m1.0", 5_000, "b", 1, NONE));
        entries.push(classic_heartbeat("m1.0", 12_000, "b", 1, NONE));
        entries.push(classic_heartbeat("m0.0", a_again, "a", 1, NONE));
        entries.push(classic_heartbeat("m1.0", 17_000, "b", 1, NONE));
        entries.push(mark(17_500, Mark::End));
        entries.sort_by_key(|e| match e {
            Entry::Exchange(x) => x.answered_ms,
            Entry::Mark { at_ms, .. } => *at_ms,
            Entry::Unanswered { sent_ms, .. } => *sent_ms,
        });
        rules(&log(Protocol::Classic, 2, entries))
    };
    assert!(!healed(12_000).contains(&BrokerRule::LapsedSession));
    // a silent 12 s, past its 10 s session and the second a broker timer may be late.
    assert_eq!(healed(17_000).iter().filter(|r| **r == BrokerRule::LapsedSession).count(), 1);
    // Out of the group (its leave written), it owes nothing.
    let mut gone = classic_group_with_sessions();
    gone.push(mark(22, Mark::Heal));
    gone.push(left("m1.0", 30, "b"));
    gone.push(classic_heartbeat("m0.0", 5_000, "a", 1, NONE));
    gone.push(classic_heartbeat("m0.0", 9_000, "a", 1, NONE));
    gone.push(mark(30_000, Mark::End));
    let found = rules(&log(Protocol::Classic, 2, gone));
    assert_eq!(
        found.iter().filter(|r| **r == BrokerRule::LapsedSession).count(),
        1,
        "a's silence from 9 s to the end counts, b's does not: {found:?}"
    );
}

/// A static member may give its membership up without a word (KIP-345: no LeaveGroup; the Java
/// consumer resets its generation on a poll timeout and stops heartbeating until the application
/// polls again), then join afresh with no member id: that silence is not judged. The same
/// silence ended by a heartbeat under its old member id is: it thought itself in the group.
#[test]
fn a_static_member_silent_until_it_joins_afresh_is_not_judged() {
    let silent_then = |last: Entry| {
        let mut entries: Vec<Entry> = static_group()
            .into_iter()
            .map(|e| match e {
                Entry::Exchange(Exchange { request: Request::Join { .. }, .. }) => {
                    with_session(e, 10_000)
                }
                e => e,
            })
            .collect();
        entries.push(mark(22, Mark::Heal));
        entries.push(classic_heartbeat("m0.0", 5_000, "a", 1, NONE));
        entries.push(classic_heartbeat("m1.0", 5_000, "b", 1, NONE));
        entries.push(classic_heartbeat("m0.0", 12_000, "a", 1, NONE));
        entries.push(classic_heartbeat("m0.0", 19_000, "a", 1, NONE));
        entries.push(last);
        entries.push(mark(20_500, Mark::End));
        rules(&log(Protocol::Classic, 2, entries))
    };
    let afresh = with_session(static_join("m1.0", 20_000, "b2", "i1", 1, &[]), 10_000);
    assert!(!silent_then(afresh).contains(&BrokerRule::LapsedSession));
    let resumed = silent_then(classic_heartbeat("m1.0", 20_000, "b", 1, NONE));
    assert_eq!(resumed.iter().filter(|r| **r == BrokerRule::LapsedSession).count(), 1);
}

/// `no-leave`: a dynamic member asked to close while in the group tells its coordinator
/// (LeaveGroup) before it stops, unless it may have lost its coordinator.
#[test]
fn a_member_asked_to_close_that_stops_without_leaving_broke_its_promise() {
    let closing = |between: Vec<Entry>| {
        let mut entries = classic_group();
        entries.push(mark(30, Mark::Leaving("m1.0".into())));
        entries.extend(between);
        entries.push(mark(40, Mark::Stopped("m1.0".into())));
        rules(&log(Protocol::Classic, 2, entries))
    };
    assert_eq!(closing(Vec::new()), [BrokerRule::NoLeave]);
    assert!(closing(vec![left("m1.0", 32, "b")]).is_empty());
    assert!(closing(vec![mark(35, Mark::CoordinatorMoved)]).is_empty());
    assert!(closing(vec![mark(35, Mark::Killed("m1.0".into()))]).is_empty());
    // A broker holding answers may not have read the leave, written behind a held request.
    assert!(closing(vec![mark(35, Mark::AnswersHeld)]).is_empty());
    // A static member keeps its place for its session: it owes no leave.
    let mut statics = static_group();
    statics.push(mark(30, Mark::Leaving("m1.0".into())));
    statics.push(mark(40, Mark::Stopped("m1.0".into())));
    assert!(rules(&log(Protocol::Classic, 2, statics)).is_empty());
}

/// Found by the coordinator fuzz target: UNKNOWN_MEMBER_ID to a request naming an instance id
/// says nobody holds that instance (Kafka's `validateMember`); a dynamic member that names a
/// stranger's instance is answered so and stays a member, so its later heartbeat answered NONE
/// is no removed member accepted. To a static member naming its own instance, it does prove
/// the member gone.
#[test]
fn unknown_member_id_for_a_strangers_instance_does_not_remove_the_member() {
    let named = |instance: &str| {
        let request = Request::Heartbeat {
            member_id: "b".into(),
            generation: 1,
            instance: Some(instance.into()),
        };
        x("m1.0", 30, 31, request, Answer::Error { error: UNKNOWN_MEMBER_ID })
    };
    let mut entries = classic_group();
    entries.push(named("i9"));
    entries.push(classic_heartbeat("m1.0", 40, "b", 1, NONE));
    let found = answer_rules(&log(Protocol::Classic, 2, entries));
    assert!(found.is_empty(), "{found:?}");
    // b joined under i1: the same answer to its own instance removes it.
    let mut own = vec![static_join("m0.0", 10, "a", "i0", 1, &["a", "b"])];
    own.push(static_join("m1.0", 10, "b", "i1", 1, &[]));
    own.push(sync("m0.0", 20, "a", 1, &[0]));
    own.push(sync("m1.0", 20, "b", 1, &[1]));
    own.push(named("i1"));
    own.push(classic_heartbeat("m1.0", 40, "b", 1, NONE));
    let found = answer_rules(&log(Protocol::Classic, 2, own));
    assert!(found.contains(&BrokerRule::RemovedMemberAccepted), "{found:?}");
}

/// Found by the coordinator fuzz target: a member id told MEMBER_ID_REQUIRED is pending, and
/// requests naming it are refused UNKNOWN_MEMBER_ID until its JoinGroup lets it in (the join
/// may be parked, its answer not read yet). A commit accepted after such a refusal is no
/// zombie's.
#[test]
fn unknown_member_id_to_a_pending_member_proves_no_removal() {
    let join = |member_id: &str| Request::Join {
        member_id: member_id.into(),
        instance: None,
        session_timeout_ms: None,
        rebalance_timeout_ms: None,
        version: Some(9),
    };
    let answer = |error: i16| Answer::Join {
        error,
        generation: -1,
        member_id: "p".into(),
        leader: String::new(),
        members: vec![],
    };
    let entries = vec![
        x("m0.0", 0, 0, join(""), answer(MEMBER_ID_REQUIRED)),
        classic_heartbeat("m0.0", 1, "p", 1, UNKNOWN_MEMBER_ID),
        Entry::Unanswered {
            actor: "m1.0".into(),
            sent_ms: 5,
            call: join("p"),
            group: String::new(),
        },
        commit("m0.0", 10, "p", 0, 5, NONE),
    ];
    let found = answer_rules(&log(Protocol::Classic, 1, entries));
    assert!(found.is_empty(), "{found:?}");
}

/// Found by the coordinator fuzz target (libFuzzer): member `c` joined while generation 1 was
/// completing; Kafka adds it to the group at once and the group keeps generation 1's number
/// until the rebalance completes, so a commit from `c` at generation 1 is accepted meanwhile.
/// Generation 1's member list without `c` proves nothing once `c`'s JoinGroup was written
/// after it; without that JoinGroup, the commit is a zombie's.
#[test]
fn a_member_list_proves_nothing_against_a_member_that_joined_since() {
    let join_c = Entry::Unanswered {
        actor: "m2.0".into(),
        sent_ms: 30,
        call: Request::Join {
            member_id: "c".into(),
            instance: None,
            session_timeout_ms: None,
            rebalance_timeout_ms: None,
            version: Some(9),
        },
        group: String::new(),
    };
    let mut entries = classic_group();
    entries.push(commit("m2.0", 40, "c", 1, 5, NONE));
    let found = answer_rules(&log(Protocol::Classic, 2, entries.clone()));
    assert!(found.contains(&BrokerRule::ZombieCommit), "{found:?}");
    entries.insert(4, join_c);
    let found = answer_rules(&log(Protocol::Classic, 2, entries));
    assert!(!found.contains(&BrokerRule::ZombieCommit), "{found:?}");
}

/// Found by the coordinator fuzz target (libFuzzer): a static member that did not rejoin is
/// kept in the next generation, and completing that join re-arms every member's session. A
/// commit from it within its session of the new generation's answer, though longer than a
/// session after its own last request, is no zombie's; the leader's member list shows the
/// re-arming.
#[test]
fn completing_a_join_re_arms_the_session_of_every_member_it_lists() {
    let mut entries = classic_group_with_sessions();
    let mut gen2 = join("m0.0", 8_000, "a", 2, "a", &["a", "b"]);
    if let Entry::Exchange(x) = &mut gen2 {
        x.request = Request::Join {
            member_id: "a".into(),
            instance: None,
            session_timeout_ms: Some(10_000),
            rebalance_timeout_ms: None,
            version: None,
        };
    }
    entries.push(gen2);
    entries.push(commit("m1.0", 15_000, "b", 2, 5, NONE));
    let found = answer_rules(&log(Protocol::Classic, 2, entries.clone()));
    assert!(found.is_empty(), "{found:?}");
    // Past a session after its last contact (its commit above), the next commit is a zombie's.
    entries.push(commit("m1.0", 27_000, "b", 2, 6, NONE));
    let found = answer_rules(&log(Protocol::Classic, 2, entries));
    assert!(found.contains(&BrokerRule::ZombieCommit), "{found:?}");
}

/// Found by the coordinator fuzz target (libFuzzer): a static member's new process that takes
/// its instance over is armed with the session timeout the replaced member held, not the one it
/// asks for; the new timeout applies from its next re-arming (Kafka's
/// `updateStaticMemberThenRebalanceOrCompleteJoin` reschedules the heartbeat before it updates
/// the member). A heartbeat of the new member id after its own shorter session but within the
/// instance's earlier, longer one, answered NONE, is no removed member accepted; past the longer
/// one it is.
#[test]
fn a_static_takeover_keeps_the_replaced_members_session_until_it_is_re_armed() {
    let mut entries = static_group();
    entries[0] = with_session(entries[0].clone(), 30_000);
    entries[1] = with_session(entries[1].clone(), 30_000);
    entries.push(with_session(static_join("m1.1", 1_000, "b2", "i1", 1, &[]), 10_000));
    let mut kept = entries.clone();
    kept.push(classic_heartbeat("m1.1", 25_000, "b2", 1, NONE));
    let found = answer_rules(&log(Protocol::Classic, 2, kept));
    assert!(found.is_empty(), "{found:?}");
    entries.push(classic_heartbeat("m1.1", 40_000, "b2", 1, NONE));
    assert_eq!(
        answer_rules(&log(Protocol::Classic, 2, entries)),
        [BrokerRule::RemovedMemberAccepted]
    );
}
