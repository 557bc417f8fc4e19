//! `live-member-fenced` on hand-built answer logs: a KIP-848 member answered UNKNOWN_MEMBER_ID
//! within the heartbeat interval of a heartbeat answered NONE, and the windows where Kafka may
//! remove it that soon (its leave, a revocation, a heartbeat of its taken late, a static
//! replacement, an expel, a coordinator change).

use super::*;

const INTERVAL: i32 = 3_000;

/// Member `id`'s ConsumerGroupHeartbeat written at `t`: sent at `sent` epoch, reporting `owned`,
/// answered `error` at `epoch` with `assignment` and the test's heartbeat interval.
fn beat(
    t: u64,
    id: &str,
    sent: i32,
    owned: Option<&[i32]>,
    error: i16,
    epoch: i32,
    assignment: Option<&[i32]>,
) -> Entry {
    let parts = |ps: &[i32]| ps.iter().map(|&p| tp(p)).collect::<Vec<_>>();
    let request = Request::ConsumerHeartbeat {
        member_id: id.into(),
        epoch: sent,
        owned: owned.map(parts),
        instance: None,
    };
    let answer = Answer::ConsumerHeartbeat {
        error,
        member_id: if error == NONE { id.into() } else { String::new() },
        epoch,
        assignment: assignment.map(parts),
        interval_ms: (error == NONE).then_some(INTERVAL),
    };
    x("m0.0", t, t + 1, request, answer)
}

/// Member `a` joins at t=100 and is given partition 0 at epoch 1.
fn joined() -> Vec<Entry> {
    vec![beat(100, "a", 0, Some(&[]), NONE, 1, Some(&[0]))]
}

/// Member `a`'s leave (member epoch -1) written at `sent`, answered `error` at `answered`.
fn leave(sent: u64, answered: u64, error: i16) -> Entry {
    let request = Request::ConsumerHeartbeat {
        member_id: "a".into(),
        epoch: -1,
        owned: None,
        instance: None,
    };
    let answer = Answer::ConsumerHeartbeat {
        error,
        member_id: if error == NONE { "a".into() } else { String::new() },
        epoch: -1,
        assignment: None,
        interval_ms: None,
    };
    x("m0.0", sent, answered, request, answer)
}

fn fenced(entries: Vec<Entry>) -> bool {
    rules(&log(Protocol::Consumer, 1, entries)).contains(&BrokerRule::LiveMemberFenced)
}

/// Kafka restarts the session at every heartbeat and keeps it longer than the interval it
/// answers with: a commit refused UNKNOWN_MEMBER_ID a second after a heartbeat answered NONE,
/// or a heartbeat refused so within the interval, is a fence Kafka does not make.
#[test]
fn a_member_refused_within_the_interval_of_a_heartbeat_answered_none_is_live_member_fenced() {
    let mut entries = joined();
    entries.push(commit("m0.0", 1_100, "a", 1, 5, UNKNOWN_MEMBER_ID));
    assert!(fenced(entries));
    let mut entries = joined();
    entries.push(beat(2_000, "a", 1, Some(&[0]), UNKNOWN_MEMBER_ID, 0, None));
    assert!(fenced(entries));
}

/// Past the interval the session may have run out (the rule knows no more of it than that it
/// is longer than the interval); within it, an accepted commit is no fence at all.
#[test]
fn a_refusal_after_the_interval_or_an_accepted_commit_passes() {
    let mut late = joined();
    late.push(commit("m0.0", 3_200, "a", 1, 5, UNKNOWN_MEMBER_ID));
    assert!(!fenced(late));
    let mut accepted = joined();
    accepted.push(commit("m0.0", 1_100, "a", 1, 5, NONE));
    assert!(!fenced(accepted));
}

/// The member's own leave, even one answered after the refusal, the harness's expel and a
/// coordinator change each let the coordinator remove the member early.
#[test]
fn a_leave_an_expel_or_a_coordinator_change_in_the_window_passes() {
    let mut left = joined();
    left.push(commit("m0.0", 1_100, "a", 1, 5, UNKNOWN_MEMBER_ID));
    left.push(leave(1_000, 1_300, NONE));
    assert!(!fenced(left));
    for m in [Mark::Expelled("m0.0".into()), Mark::CoordinatorMoved] {
        let mut entries = joined();
        entries.push(mark(600, m));
        entries.push(commit("m0.0", 1_100, "a", 1, 5, UNKNOWN_MEMBER_ID));
        assert!(!fenced(entries));
    }
}

/// A member asked to revoke partitions may be fenced by its rebalance timeout, whatever its
/// heartbeats; once it reports owning only its assignment, it may not.
#[test]
fn a_member_that_may_be_revoking_is_not_judged() {
    let mut revoking = vec![beat(100, "a", 0, Some(&[]), NONE, 1, Some(&[0, 1]))];
    revoking.push(beat(500, "a", 1, Some(&[0, 1]), NONE, 2, Some(&[0])));
    revoking.push(commit("m0.0", 1_100, "a", 2, 5, UNKNOWN_MEMBER_ID));
    assert!(!fenced(revoking.clone()));
    revoking.insert(2, beat(800, "a", 2, Some(&[0]), NONE, 2, None));
    assert!(fenced(revoking));
}

/// A static member's instance may be taken over by another member id at any time.
#[test]
fn a_static_member_is_not_judged() {
    let mut entries = joined();
    if let Entry::Exchange(Exchange {
        request: Request::ConsumerHeartbeat { instance, .. }, ..
    }) = &mut entries[0]
    {
        *instance = Some("i0".into());
    }
    entries.push(commit("m0.0", 1_100, "a", 1, 5, UNKNOWN_MEMBER_ID));
    assert!(!fenced(entries));
}

/// A heartbeat or leave never answered may be taken late, after newer ones: a stale leave removes
/// the member (consumer_protocol_swarm seeds 2359 and 2526: a leave held up by a one-way
/// partition, taken after the member rejoined), and Kafka accepts a stale heartbeat at the
/// member's previous epoch, which may reconcile the member into a revocation whose answer is lost,
/// so that its rebalance timeout fences it however it heartbeats (seed 780). Such a request
/// excuses the member until it can no longer arrive.
#[test]
fn a_request_never_answered_excuses_the_member_while_it_may_still_arrive() {
    let unanswered = |sent_ms, epoch| Entry::Unanswered {
        actor: "m0.0".into(),
        sent_ms,
        call: Request::ConsumerHeartbeat {
            member_id: "a".into(),
            epoch,
            owned: None,
            instance: None,
        },
        group: String::new(),
    };
    for epoch in [1, -1] {
        let mut entries = vec![unanswered(50, epoch)];
        entries.extend(joined());
        entries.push(commit("m0.0", 1_100, "a", 1, 5, UNKNOWN_MEMBER_ID));
        assert!(!fenced(entries), "a request of epoch {epoch} written before the heartbeat");
    }
    // Written long enough before the heartbeat, it can no longer arrive.
    let mut entries = vec![unanswered(50, -1)];
    entries.push(beat(70_000, "a", 0, Some(&[]), NONE, 1, Some(&[0])));
    entries.push(commit("m0.0", 71_000, "a", 1, 5, UNKNOWN_MEMBER_ID));
    assert!(fenced(entries));
}

/// An expel read before the heartbeat's answer but after it was written: the coordinator took
/// the heartbeat, then expelled the member (admin_observer seeds 2523 and 3469).
#[test]
fn an_expel_between_a_heartbeat_and_its_answer_passes() {
    let mut entries = vec![mark(100, Mark::Expelled("m0.0".into()))];
    entries.extend(joined());
    if let Entry::Exchange(x) = &mut entries[1] {
        x.sent_ms = 99;
    }
    entries.push(commit("m0.0", 1_100, "a", 1, 5, UNKNOWN_MEMBER_ID));
    assert!(!fenced(entries));
}

/// A member's leave (member epoch -1) written while its session must run, refused
/// UNKNOWN_MEMBER_ID: Kafka removes a member it knows and answers its leave NONE, so the
/// refusal is judged as a fence; a second leave after one answered NONE, a leave past the
/// interval, and a leave after an earlier one never answered (which may have been taken first)
/// pass.
#[test]
fn a_leave_refused_while_the_session_must_run_is_live_member_fenced() {
    let mut refused = joined();
    refused.push(leave(1_000, 1_050, UNKNOWN_MEMBER_ID));
    assert!(fenced(refused));
    let mut twice = joined();
    twice.push(leave(1_000, 1_050, NONE));
    twice.push(leave(1_200, 1_250, UNKNOWN_MEMBER_ID));
    assert!(!fenced(twice));
    let mut late = joined();
    late.push(leave(3_200, 3_250, UNKNOWN_MEMBER_ID));
    assert!(!fenced(late));
    let mut retried = joined();
    retried.push(Entry::Unanswered {
        actor: "m0.0".into(),
        call: Request::ConsumerHeartbeat {
            member_id: "a".into(),
            epoch: -1,
            owned: None,
            instance: None,
        },
        sent_ms: 800,
        group: String::new(),
    });
    retried.push(leave(1_000, 1_050, UNKNOWN_MEMBER_ID));
    assert!(!fenced(retried));
}
