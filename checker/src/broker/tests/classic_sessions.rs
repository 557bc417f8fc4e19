//! `live-member-fenced` for classic members on hand-built answer logs: a member whose SyncGroup
//! (or a heartbeat of the generation it synced) was answered NONE is a member for the shorter of
//! its session and rebalance timeouts, and the windows where Kafka may remove it sooner.

use super::*;

const SESSION: i32 = 10_000;
const REBALANCE: i32 = 4_000;

/// Member `a` joins generation 1 at t=10 asking for `session` and `rebalance` timeouts
/// (`instance` for a static member), and syncs it at t=20.
fn joined_with(session: Option<i32>, rebalance: Option<i32>, instance: Option<&str>) -> Vec<Entry> {
    let request = Request::Join {
        member_id: String::new(),
        instance: instance.map(Into::into),
        session_timeout_ms: session,
        rebalance_timeout_ms: rebalance,
        version: Some(9),
    };
    let answer = Answer::Join {
        error: NONE,
        generation: 1,
        member_id: "a".into(),
        leader: "a".into(),
        members: vec!["a".into()],
    };
    vec![x("m0.0", 10, 11, request, answer), sync("m0.0", 20, "a", 1, &[0])]
}

fn joined() -> Vec<Entry> {
    joined_with(Some(SESSION), Some(REBALANCE), None)
}

/// `a`'s LeaveGroup written at `t`, answered `error`.
fn leave(t: u64, error: i16) -> Entry {
    let request = Request::Leave { member_id: "a".into(), instance: None };
    x("m0.0", t, t + 10, request, Answer::Error { error })
}

/// `a`'s Heartbeat at generation 1 written at `t`, answered `error`.
fn beat(t: u64, error: i16) -> Entry {
    let request = Request::Heartbeat { member_id: "a".into(), generation: 1, instance: None };
    x("m0.0", t, t + 10, request, Answer::Error { error })
}

fn fenced(entries: Vec<Entry>) -> bool {
    rules(&log(Protocol::Classic, 1, entries)).contains(&BrokerRule::LiveMemberFenced)
}

/// Synced at t=20: until t=20 + min(10 s, 4 s) Kafka must keep the member, so its leave,
/// heartbeat or commit refused UNKNOWN_MEMBER_ID then is a removal Kafka does not make; a
/// heartbeat answered NONE at the synced generation carries the proof on.
#[test]
fn a_classic_member_refused_while_it_must_be_kept_is_live_member_fenced() {
    let mut left = joined();
    left.push(leave(1_000, UNKNOWN_MEMBER_ID));
    assert!(fenced(left));
    let mut beaten = joined();
    beaten.push(beat(3_000, NONE));
    beaten.push(beat(6_000, UNKNOWN_MEMBER_ID));
    assert!(fenced(beaten));
    let mut committed = joined();
    committed.push(commit("m0.0", 2_000, "a", 1, 5, UNKNOWN_MEMBER_ID));
    assert!(fenced(committed));
}

/// Past the shorter timeout (the rebalance timeout here, though the session is longer) a join
/// phase the member missed may have removed it; an accepted leave is no removal at all.
#[test]
fn a_refusal_after_the_shorter_timeout_or_an_accepted_leave_passes() {
    let mut late = joined();
    late.push(leave(4_100, UNKNOWN_MEMBER_ID));
    assert!(!fenced(late));
    let mut accepted = joined();
    accepted.push(leave(1_000, NONE));
    accepted.push(leave(1_100, UNKNOWN_MEMBER_ID));
    assert!(!fenced(accepted));
}

/// A rejoin or a heartbeat answered REBALANCE_IN_PROGRESS puts the member in a join phase,
/// which has its own timer; a static member, a JoinGroup that did not say its timeouts, another
/// leave of it (an admin's, or one never answered), an expel and a coordinator change each let
/// the coordinator remove it sooner.
#[test]
fn a_join_phase_a_static_member_or_another_removal_in_the_window_passes() {
    let mut rejoining = joined();
    rejoining.push(join("m0.0", 500, "a", 2, "a", &["a"]));
    rejoining.push(leave(1_000, UNKNOWN_MEMBER_ID));
    assert!(!fenced(rejoining));
    let mut rebalancing = joined();
    rebalancing.push(beat(500, REBALANCE_IN_PROGRESS));
    rebalancing.push(leave(1_000, UNKNOWN_MEMBER_ID));
    assert!(!fenced(rebalancing));
    let mut statics = joined_with(Some(SESSION), Some(REBALANCE), Some("i1"));
    statics.push(leave(1_000, UNKNOWN_MEMBER_ID));
    assert!(!fenced(statics));
    let mut unsaid = joined_with(Some(SESSION), None, None);
    unsaid.push(leave(1_000, UNKNOWN_MEMBER_ID));
    assert!(!fenced(unsaid));
    let admin = x(
        "admin",
        400,
        450,
        Request::Leave { member_id: "a".into(), instance: None },
        Answer::Error { error: NONE },
    );
    let mut removed = joined();
    removed.push(admin);
    removed.push(beat(1_000, UNKNOWN_MEMBER_ID));
    assert!(!fenced(removed));
    let mut unanswered = joined();
    unanswered.push(Entry::Unanswered {
        actor: "m0.0".into(),
        call: Request::Leave { member_id: "a".into(), instance: None },
        sent_ms: 300,
        group: String::new(),
    });
    unanswered.push(leave(1_000, UNKNOWN_MEMBER_ID));
    assert!(!fenced(unanswered));
    for m in [Mark::Expelled("m0.0".into()), Mark::CoordinatorMoved] {
        let mut entries = joined();
        entries.push(mark(600, m));
        entries.push(leave(1_000, UNKNOWN_MEMBER_ID));
        assert!(!fenced(entries));
    }
}

/// A coordinator that takes a group over answers heartbeats NONE blindly while it loads it, so
/// a heartbeat answered before the new coordinator was seen serving proves nothing: the loaded
/// group may not hold the member (swarm seed 7181 at a4a4a08: the member had been removed by the
/// last coordinator, and the new one refused its next heartbeat once loaded).
#[test]
fn a_heartbeat_answered_by_a_coordinator_not_yet_seen_serving_proves_nothing() {
    let on = |node: i32, entry: Entry| match entry {
        Entry::Exchange(mut e) => {
            e.node = Some(node);
            Entry::Exchange(e)
        }
        other => other,
    };
    let moved = |entry: Entry| on(2, entry);
    let joined = || joined().into_iter().map(|e| on(1, e)).collect::<Vec<_>>();
    let mut blind = joined();
    blind.push(moved(beat(1_000, NONE)));
    blind.push(moved(beat(2_000, UNKNOWN_MEMBER_ID)));
    assert!(!fenced(blind));
    let mut served = joined();
    served.push(moved(commit("m1.0", 500, "b", 1, 5, NONE)));
    served.push(moved(beat(1_000, NONE)));
    served.push(moved(beat(2_000, UNKNOWN_MEMBER_ID)));
    assert!(fenced(served));
}
