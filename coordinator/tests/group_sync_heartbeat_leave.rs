//! SyncGroup, Heartbeat, session timeouts and LeaveGroup behaviour of the coordinator.

mod group_harness;

use bytes::Bytes;
use group_harness::*;
use groupsim_coordinator::event::MemberAssignment;
use groupsim_coordinator::{CoordinatorEvent, GroupState, RemovalReason};
use groupsim_wire::consumer_protocol::decode_assignment;
use groupsim_wire::TopicPartition;
use kafka_protocol::messages::{GroupId, HeartbeatRequest, SyncGroupRequest};

// ---- SyncGroup ----------------------------------------------------------------------------

#[test]
fn invalid_syncs_get_kafkas_errors() {
    // (name, request built from (members, generation), expected error)
    type Build = fn(&[String], i32) -> SyncGroupRequest;
    let cases: Vec<(&str, Build, E)> = vec![
        (
            "unknown group",
            |m, g| sync_req(&m[0], g, &[]).with_group_id(GroupId(s("nope"))),
            E::UnknownMemberId,
        ),
        ("unknown member", |_, g| sync_req("ghost", g, &[]), E::UnknownMemberId),
        ("older generation", |m, g| sync_req(&m[0], g - 1, &[]), E::IllegalGeneration),
        ("newer generation", |m, g| sync_req(&m[0], g + 1, &[]), E::IllegalGeneration),
    ];
    for (name, build, expected) in cases {
        let mut h = Harness::default();
        let (ids, generation) = h.stable_group(2);
        let r = h.send(3, build(&ids, generation));
        assert_eq!(h.sync(r).error_code, code(expected), "{name}");
    }
}

#[test]
fn sync_during_preparing_rebalance_gets_rebalance_in_progress() {
    let mut h = Harness::default();
    let (ids, generation) = h.stable_group(2);
    h.send(5, join_req(&ids[0]));
    assert_eq!(h.state(), Some(GroupState::PreparingRebalance));
    let r = h.send(3, sync_req(&ids[1], generation, &[]));
    assert_eq!(h.sync(r).error_code, code(E::RebalanceInProgress));
}

#[test]
fn followers_wait_for_the_leaders_sync_then_everyone_gets_its_assignment() {
    let mut h = Harness::default();
    let (a, ja) = h.join_new("a");
    let (b, _) = h.join_new("b");
    let (c, _) = h.join_new("c");
    h.advance(0);
    let generation = h.join(ja).generation_id;
    let sb = h.send(3, sync_req(&b, generation, &[]));
    assert!(!h.answered(sb));
    assert_eq!(h.state(), Some(GroupState::CompletingRebalance));
    // The leader leaves c out: c gets empty bytes.
    let sa = h.send(
        3,
        sync_req(
            &a,
            generation,
            &[(&a, assignment(&[("t", 0), ("t", 2)])), (&b, assignment(&[("t", 1)]))],
        ),
    );
    assert_eq!(h.state(), Some(GroupState::Stable));
    assert_eq!(
        decode_assignment(&h.sync(sa).assignment).unwrap().partitions,
        vec![TopicPartition::new("t", 0), TopicPartition::new("t", 2)]
    );
    assert_eq!(h.sync(sb).assignment, assignment(&[("t", 1)]));
    let sc = h.send(3, sync_req(&c, generation, &[]));
    assert_eq!(h.sync(sc).error_code, 0);
    assert_eq!(h.sync(sc).assignment, Bytes::new());
    let stored = h.events.iter().find_map(|(_, e)| match e {
        CoordinatorEvent::AssignmentStored { generation: g, assignments, .. } => {
            Some((*g, assignments.clone()))
        }
        _ => None,
    });
    let mut expected = vec![
        MemberAssignment {
            member_id: a.clone(),
            partitions: vec![TopicPartition::new("t", 0), TopicPartition::new("t", 2)],
        },
        MemberAssignment { member_id: b.clone(), partitions: vec![TopicPartition::new("t", 1)] },
        MemberAssignment { member_id: c.clone(), partitions: vec![] },
    ];
    expected.sort_by(|x, y| x.member_id.cmp(&y.member_id));
    assert_eq!(stored, Some((generation, expected)));
}

#[test]
fn sync_in_stable_returns_the_current_assignment() {
    let mut h = Harness::default();
    let (ids, generation) = h.stable_group(2);
    let r = h.send(5, sync_req(&ids[1], generation, &[]));
    assert_eq!(h.sync(r).error_code, 0);
    assert_eq!(h.sync(r).assignment, assignment(&[("t", 1)]));
    assert_eq!(h.sync(r).protocol_name.as_ref().map(|p| p.to_string()), Some("range".into()));
}

#[test]
fn leader_failure_during_completing_rebalance_answers_parked_syncs_and_rebalances() {
    for how in ["leave", "session expiry"] {
        let mut h = Harness::default();
        let (a, ja) = h.join_new("a");
        let (b, _) = h.join_new("b");
        h.advance(0);
        let generation = h.join(ja).generation_id;
        let sb = h.send(3, sync_req(&b, generation, &[]));
        match how {
            "leave" => {
                h.send(0, leave_req_v0(&a));
            }
            _ => {
                // b is parked in SyncGroup (kept alive); the leader says nothing.
                h.advance(SESSION as u64);
            }
        }
        assert_eq!(h.sync(sb).error_code, code(E::RebalanceInProgress), "{how}");
        assert_eq!(h.state(), Some(GroupState::PreparingRebalance), "{how}");
        assert_eq!(h.c.members(GROUP), vec![b.clone()], "{how}");
        let rb = h.send(5, join_req(&b));
        assert_eq!(h.join(rb).leader.as_str(), b, "{how}: the survivor leads");
    }
}

#[test]
fn members_that_never_sync_are_removed_after_the_rebalance_timeout() {
    let mut h = Harness::default();
    let (a, ja) = h.join_new("a");
    let (b, _) = h.join_new("b");
    h.advance(0);
    let generation = h.join(ja).generation_id;
    // Both heartbeat (kept alive), only b syncs; the leader's SyncGroup is lost.
    let sb = h.send(3, sync_req(&b, generation, &[]));
    for _ in 0..5 {
        h.advance(5_000);
        h.send(3, hb_req(&a, generation));
    }
    assert_eq!(h.state(), Some(GroupState::CompletingRebalance));
    h.advance(REBALANCE as u64 - 25_000);
    assert!(h.removed().contains(&(a.clone(), RemovalReason::RebalanceTimeout)));
    assert_eq!(h.sync(sb).error_code, code(E::RebalanceInProgress));
    assert_ne!(h.state(), Some(GroupState::CompletingRebalance), "not stuck");
}

#[test]
fn follower_that_never_syncs_in_stable_is_removed_after_the_rebalance_timeout() {
    let mut h = Harness::default();
    let (a, ja) = h.join_new("a");
    let (b, _) = h.join_new("b");
    h.advance(0);
    let generation = h.join(ja).generation_id;
    h.send(3, sync_req(&a, generation, &[]));
    assert_eq!(h.state(), Some(GroupState::Stable));
    // b heartbeats (its session lives) but never sends SyncGroup.
    h.advance_heartbeating(REBALANCE as u64, &[a, b.clone()], generation);
    assert!(h.removed().contains(&(b, RemovalReason::RebalanceTimeout)));
    assert_eq!(h.state(), Some(GroupState::PreparingRebalance));
}

// ---- Heartbeat ----------------------------------------------------------------------------

#[test]
fn heartbeat_answers_follow_kafkas_rules() {
    // (name, phase to put the group in, request from (members, generation), expected error)
    type Build = fn(&[String], i32) -> HeartbeatRequest;
    let cases: Vec<(&str, &str, Build, E)> = vec![
        (
            "unknown group",
            "stable",
            |m, g| hb_req(&m[0], g).with_group_id(GroupId(s("nope"))),
            E::UnknownMemberId,
        ),
        ("unknown member", "stable", |_, g| hb_req("ghost", g), E::UnknownMemberId),
        ("wrong generation", "stable", |m, g| hb_req(&m[1], g - 1), E::IllegalGeneration),
        ("stable", "stable", |m, g| hb_req(&m[1], g), E::UnknownServerError),
        ("preparing rebalance", "preparing", |m, g| hb_req(&m[1], g), E::RebalanceInProgress),
        ("completing rebalance", "completing", |m, g| hb_req(&m[1], g), E::RebalanceInProgress),
    ];
    for (name, phase, build, expected) in cases {
        let mut h = Harness::default();
        let (ids, mut generation) = h.stable_group(2);
        match phase {
            "preparing" => {
                h.send(5, join_req(&ids[0]));
                assert_eq!(h.state(), Some(GroupState::PreparingRebalance));
            }
            "completing" => {
                h.send(5, join_req(&ids[0]));
                h.send(5, join_req(&ids[1]));
                generation += 1;
                assert_eq!(h.state(), Some(GroupState::CompletingRebalance));
            }
            _ => {}
        }
        let r = h.send(3, build(&ids, generation));
        let want = if expected == E::UnknownServerError { 0 } else { code(expected) };
        assert_eq!(h.heartbeat_error(r), want, "{name}");
    }
}

#[test]
fn heartbeat_during_completing_rebalance_gets_rebalance_in_progress() {
    let mut h = Harness::default();
    let (a, ja) = h.join_new("a");
    h.advance(0);
    let generation = h.join(ja).generation_id;
    let r = h.send(4, hb_req(&a, generation));
    assert_eq!(h.heartbeat_error(r), code(E::RebalanceInProgress));
}

#[test]
fn heartbeats_keep_a_member_alive_and_silence_removes_it_after_the_session_timeout() {
    let mut h = Harness::default();
    let (ids, generation) = h.stable_group(2);
    // ids[0] heartbeats every 3 s for 30 s; ids[1] stays silent.
    let start = h.now;
    for _ in 0..10 {
        h.advance(3_000);
        let r = h.send(3, hb_req(&ids[0], generation));
        if h.now - start < SESSION as u64 {
            assert_eq!(h.heartbeat_error(r), 0);
        }
    }
    let removed = h.removed();
    assert_eq!(removed, vec![(ids[1].clone(), RemovalReason::SessionTimeout)]);
    let at = h
        .events
        .iter()
        .find_map(|(t, e)| matches!(e, CoordinatorEvent::MemberRemoved { .. }).then_some(*t));
    assert_eq!(at, Some(start + SESSION as u64), "removed exactly at its session deadline");
    assert!(h.c.members(GROUP).contains(&ids[0]));
}

#[test]
fn session_expiry_of_the_last_member_leaves_the_group_empty() {
    let mut h = Harness::default();
    let (_, generation) = h.stable_group(1);
    h.advance(SESSION as u64);
    assert_eq!(h.state(), Some(GroupState::Empty));
    assert_eq!(h.generation(), generation + 1);
}

#[test]
fn members_awaiting_a_join_answer_are_kept_alive_past_their_session_timeout() {
    let mut h = Harness::default();
    let (ids, generation) = h.stable_group(2);
    let r0 = h.send(5, join_req(&ids[0]));
    // ids[0] waits in the join phase for 25 s without heartbeats (session 10 s) while ids[1]
    // heartbeats and only then rejoins.
    h.advance_heartbeating(25_000, &ids[1..], generation);
    assert!(h.c.members(GROUP).contains(&ids[0]));
    let r1 = h.send(5, join_req(&ids[1]));
    assert_eq!(h.join(r0).generation_id, generation + 1);
    assert_eq!(h.join(r1).error_code, 0);
    // After the answer its session counts again.
    h.advance(SESSION as u64);
    assert!(h.removed().iter().any(|(m, r)| m == &ids[0] && *r == RemovalReason::SessionTimeout));
}

#[test]
fn a_new_member_stuck_in_a_join_is_dropped_after_the_new_member_join_timeout() {
    let cfg =
        groupsim_coordinator::CoordinatorConfig { new_member_join_timeout_ms: 20_000, ..config() };
    let mut h = Harness::with_config(cfg);
    let (ids, generation) = h.stable_group(1);
    // A new member joins; the old one never rejoins and keeps heartbeating (rebalance 60 s).
    let (n, jn) = h.join_new_with("n", join_req("").with_rebalance_timeout_ms(60_000));
    h.advance_heartbeating(19_999, &ids, generation);
    assert!(!h.answered(jn));
    h.advance(1);
    assert_eq!(h.join(jn).error_code, code(E::UnknownMemberId));
    assert!(h.removed().contains(&(n, RemovalReason::PendingJoinExpired)));
}

#[test]
fn an_accepted_offset_commit_keeps_the_session_alive() {
    let mut h = Harness::default();
    let (ids, generation) = h.stable_group(1);
    for i in 0..4 {
        h.advance(8_000);
        let r = h.send(3, commit_req(GROUP, &ids[0], generation, &[("t", 0, i)]));
        assert_eq!(h.commit_errors(r), vec![0]);
    }
    assert!(h.removed().is_empty(), "commits every 8 s keep a 10 s session alive");
    h.advance(SESSION as u64);
    assert_eq!(h.removed(), vec![(ids[0].clone(), RemovalReason::SessionTimeout)]);
}

// ---- LeaveGroup ---------------------------------------------------------------------------

#[test]
fn leader_leaving_v0_triggers_a_rebalance_with_a_new_leader() {
    let mut h = Harness::default();
    let (ids, generation) = h.stable_group(3);
    let l = h.send(0, leave_req_v0(&ids[0]));
    assert_eq!(h.leave(l).error_code, 0);
    assert_eq!(h.state(), Some(GroupState::PreparingRebalance));
    assert_eq!(h.c.leader(GROUP).as_deref(), Some(ids[1].as_str()));
    let r1 = h.send(5, join_req(&ids[1]));
    let r2 = h.send(5, join_req(&ids[2]));
    assert_eq!(h.join(r1).generation_id, generation + 1);
    assert_eq!(h.join(r2).leader.as_str(), ids[1]);
    assert!(h.removed().contains(&(ids[0].clone(), RemovalReason::LeaveGroup)));
}

#[test]
fn leave_v0_of_an_unknown_member_is_unknown_member_id() {
    let mut h = Harness::default();
    h.stable_group(1);
    let l = h.send(1, leave_req_v0("ghost"));
    assert_eq!(h.leave(l).error_code, code(E::UnknownMemberId));
    let l = h.send(1, leave_req_v0("ghost").with_group_id(GroupId(s("nope"))));
    assert_eq!(h.leave(l).error_code, code(E::UnknownMemberId));
}

#[test]
fn leave_v3_batch_answers_each_member() {
    let mut h = Harness::default();
    let (ids, _) = h.stable_group(3);
    let l = h.send(3, leave_req_v3(&[(&ids[1], None), ("ghost", None), (&ids[2], None)]));
    let resp = h.leave(l);
    assert_eq!(resp.error_code, 0);
    let per: Vec<(String, i16)> =
        resp.members.iter().map(|m| (m.member_id.to_string(), m.error_code)).collect();
    assert_eq!(
        per,
        vec![(ids[1].clone(), 0), ("ghost".into(), code(E::UnknownMemberId)), (ids[2].clone(), 0)]
    );
    assert_eq!(h.c.members(GROUP), vec![ids[0].clone()]);
}

#[test]
fn last_member_leaving_leaves_the_group_empty() {
    let mut h = Harness::default();
    let (ids, generation) = h.stable_group(1);
    h.send(2, leave_req_v0(&ids[0]));
    assert_eq!(h.state(), Some(GroupState::Empty));
    assert_eq!(h.generation(), generation + 1);
    let after = h.send(3, hb_req(&ids[0], generation + 1));
    assert_eq!(h.heartbeat_error(after), code(E::UnknownMemberId));
}

#[test]
fn a_pending_member_may_leave_before_rejoining() {
    let mut h = Harness::default();
    let r = h.send(5, join_req(""));
    let id = h.join(r).member_id.to_string();
    let l = h.send(3, leave_req_v3(&[(&id, None)]));
    assert_eq!(h.leave(l).members[0].error_code, 0);
    assert_eq!(h.c.group(GROUP).unwrap().pending_members().count(), 0);
}
