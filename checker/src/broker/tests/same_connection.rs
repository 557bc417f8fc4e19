//! Proofs taken from one connection's order. A broker reads a connection's next request only
//! once it has answered the last (Kafka mutes the channel while a request of it is in service),
//! so a member's own request answered UNKNOWN_MEMBER_ID, or its leave accepted, was decided
//! before the next request on that connection was read, even when the client wrote both in one
//! instant and read the first answer after writing the second. A coordinator that then accepts
//! the member's commit took it from a member it had itself just declared gone: a classic
//! Heartbeat and OffsetCommit written together, the first refused and the second accepted, is
//! what a coordinator that skips the member check of a commit to an Empty group answers.

use super::*;

/// `entry` as written on connection `conn` of its actor.
fn on(mut entry: Entry, conn: u64) -> Entry {
    if let Entry::Exchange(x) = &mut entry {
        x.conn = Some(conn);
    }
    entry
}

fn classic_heartbeat(actor: &str, t: u64, id: &str, generation: i32, error: i16) -> Entry {
    let request = Request::Heartbeat { member_id: id.into(), generation, instance: None };
    x(actor, t, t + 1, request, Answer::Error { error })
}

/// `entry` written at `sent_ms` and read at `answered_ms`.
fn timed(mut entry: Entry, sent_ms: u64, answered_ms: u64) -> Entry {
    if let Entry::Exchange(x) = &mut entry {
        (x.sent_ms, x.answered_ms) = (sent_ms, answered_ms);
    }
    entry
}

/// Member `a`'s Heartbeat and OffsetCommit written in one millisecond, on connections `first`
/// and `second`: the heartbeat answered UNKNOWN_MEMBER_ID, the commit NONE, read in that order
/// after both were written.
fn refused_then_accepted(first: Option<u64>, second: Option<u64>) -> Vec<Entry> {
    let mut entries = classic_group();
    let beat = timed(classic_heartbeat("m0.0", 30, "a", 1, UNKNOWN_MEMBER_ID), 30, 32);
    let commit = timed(commit("m0.0", 30, "a", 1, 5, NONE), 30, 33);
    entries.push(first.map_or(beat.clone(), |c| on(beat, c)));
    entries.push(second.map_or(commit.clone(), |c| on(commit, c)));
    entries
}

#[test]
fn a_commit_accepted_after_the_same_connection_refused_the_member_is_a_zombie_commit() {
    let found = check(&log(Protocol::Classic, 2, refused_then_accepted(Some(1), Some(1))));
    assert_eq!(found.iter().map(|a| a.rule).collect::<Vec<_>>(), [BrokerRule::ZombieCommit]);
    assert_eq!(found[0].evidence, [4, 5], "the refused heartbeat and the commit");
}

/// On two connections the broker may have served the commit first; with no connection known,
/// so may it: neither proves anything.
#[test]
fn the_same_answers_on_other_or_unknown_connections_pass() {
    for (first, second) in [(Some(1), Some(2)), (None, None), (Some(1), None)] {
        let entries = refused_then_accepted(first, second);
        assert_eq!(rules(&log(Protocol::Classic, 2, entries)), [], "{first:?} {second:?}");
    }
}

/// Connections are numbered per actor: another actor's connection 1 is another connection.
#[test]
fn the_same_number_on_another_actor_is_another_connection() {
    let mut entries = refused_then_accepted(Some(1), Some(1));
    if let Some(Entry::Exchange(x)) = entries.get_mut(4) {
        x.actor = "m0.1".into();
    }
    assert_eq!(answer_rules(&log(Protocol::Classic, 2, entries)), []);
}

/// A JoinGroup that may have let the member id back in between the refusal and the commit
/// (written before the commit's answer was read, its own answer read after the refusal was
/// written) leaves the commit unjudged.
#[test]
fn a_rejoin_that_may_have_been_served_in_between_passes() {
    let mut entries = refused_then_accepted(Some(1), Some(1));
    let rejoin = Request::Join {
        member_id: "a".into(),
        instance: None,
        session_timeout_ms: None,
        rebalance_timeout_ms: None,
        version: None,
    };
    let answer = Answer::Join {
        error: NONE,
        generation: 1,
        member_id: "a".into(),
        leader: "b".into(),
        members: Vec::new(),
    };
    entries.push(on(x("m0.0", 31, 40, rejoin, answer), 2));
    assert_eq!(rules(&log(Protocol::Classic, 2, entries)), []);
}

/// A leave accepted, then a heartbeat on the same connection answered NONE: the removed-member
/// rule takes the connection's order too.
#[test]
fn a_heartbeat_accepted_after_the_same_connection_left_is_removed_member_accepted() {
    let mut entries = classic_group();
    entries.push(on(timed(left("m0.0", 30, "a"), 30, 32), 1));
    entries.push(on(timed(classic_heartbeat("m0.0", 30, "a", 1, NONE), 30, 33), 1));
    assert_eq!(rules(&log(Protocol::Classic, 2, entries)), [BrokerRule::RemovedMemberAccepted]);
}

/// KIP-848: a heartbeat answered UNKNOWN_MEMBER_ID, then a commit on the same connection at the
/// member's epoch answered NONE.
fn consumer_refused_then_accepted(between: Option<Entry>) -> Vec<Entry> {
    let mut entries = vec![on(heartbeat("m0.0", 10, "a", 0, 1, NONE, Some(&[0])), 1)];
    entries.push(on(timed(heartbeat("m0.0", 50, "a", 1, 0, UNKNOWN_MEMBER_ID, None), 50, 52), 1));
    entries.extend(between);
    entries.push(on(timed(commit("m0.0", 50, "a", 1, 5, NONE), 50, 53), 1));
    entries
}

#[test]
fn a_consumer_commit_accepted_after_the_same_connection_fenced_it_is_a_zombie_commit() {
    let found = check(&log(Protocol::Consumer, 1, consumer_refused_then_accepted(None)));
    assert_eq!(found.iter().map(|a| a.rule).collect::<Vec<_>>(), [BrokerRule::ZombieCommit]);
    assert_eq!(found[0].evidence, [1, 2]);
}

/// Another heartbeat of the member written before the commit's answer was read may have been
/// served between the two and let it back in (a rejoin at epoch 0): no proof.
#[test]
fn a_consumer_heartbeat_that_may_have_been_served_in_between_passes() {
    let rejoin = on(timed(heartbeat("m0.0", 51, "a", 0, 2, NONE, None), 51, 60), 2);
    let entries = consumer_refused_then_accepted(Some(rejoin));
    assert_eq!(rules(&log(Protocol::Consumer, 1, entries)), []);
    let unanswered = Entry::Unanswered {
        actor: "m0.0".into(),
        sent_ms: 51,
        call: Request::ConsumerHeartbeat {
            member_id: "a".into(),
            epoch: 0,
            owned: None,
            instance: None,
        },
        group: String::new(),
    };
    let entries = consumer_refused_then_accepted(Some(unanswered));
    assert_eq!(rules(&log(Protocol::Consumer, 1, entries)), []);
}
