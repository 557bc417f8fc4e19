//! Coverage probes of the group state machine: each case drives the core into the rare
//! situation a probe names and checks the probe counted it (`probe::record`). Probes are counted
//! outside the history; these tests only check that they sit where their situation happens.

mod group_harness;

use group_harness::*;
use groupsim_coordinator::probes::{self, ANSWER};
use groupsim_coordinator::GroupState;
use groupsim_wire::probe::{self, ProbeHits};

/// A group of `c0` (leader) and `c1` that completed its join phase and waits in
/// CompletingRebalance for SyncGroups; returns the member ids and the generation.
fn completing_group(h: &mut Harness) -> (Vec<String>, i32) {
    let (m0, j0) = h.join_new("c0");
    let (m1, _) = h.join_new("c1");
    h.advance(0);
    assert_eq!(h.state(), Some(GroupState::CompletingRebalance));
    let generation = h.join(j0).generation_id;
    (vec![m0, m1], generation)
}

/// A Stable group of two that is back in PreparingRebalance because `c2` joined.
fn preparing_group(h: &mut Harness) -> (Vec<String>, i32) {
    let (ids, generation) = h.stable_group(2);
    h.join_new("c2");
    assert_eq!(h.state(), Some(GroupState::PreparingRebalance));
    (ids, generation)
}

fn static_join(instance: &str, member_id: &str) -> kafka_protocol::messages::JoinGroupRequest {
    join_req(member_id).with_group_instance_id(Some(s(instance)))
}

/// Runs `drive` on a fresh harness while recording probe hits.
fn hits_of(drive: fn(&mut Harness)) -> ProbeHits {
    let mut h = Harness::default();
    probe::record(|| drive(&mut h)).1
}

#[test]
fn each_group_probe_is_hit_where_its_situation_happens() {
    let cases: Vec<ProbeCase> = vec![
        (
            "heartbeat while preparing a rebalance gets REBALANCE_IN_PROGRESS",
            |h| {
                let (ids, generation) = preparing_group(h);
                h.send(3, hb_req(&ids[0], generation));
            },
            &probes::HEARTBEAT_REBALANCE_IN_PROGRESS,
        ),
        (
            "sync arriving in PreparingRebalance gets REBALANCE_IN_PROGRESS",
            |h| {
                let (ids, generation) = preparing_group(h);
                h.send(3, sync_req(&ids[1], generation, &[]));
            },
            &probes::SYNC_IN_PREPARING_REBALANCE,
        ),
        (
            "commit of an old generation is refused ILLEGAL_GENERATION",
            |h| {
                let (ids, generation) = h.stable_group(2);
                h.send(2, commit_req(GROUP, &ids[1], generation - 1, &[("t", 1, 5)]));
            },
            &probes::COMMIT_STALE_GENERATION,
        ),
        (
            "commit from a member the group does not know is refused UNKNOWN_MEMBER_ID",
            |h| {
                let (_, generation) = h.stable_group(2);
                h.send(2, commit_req(GROUP, "nobody", generation, &[("t", 1, 5)]));
            },
            &probes::COMMIT_UNKNOWN_MEMBER,
        ),
        (
            "commit while completing a rebalance is refused REBALANCE_IN_PROGRESS",
            |h| {
                let (ids, generation) = completing_group(h);
                h.send(2, commit_req(GROUP, &ids[1], generation, &[("t", 1, 5)]));
            },
            &probes::COMMIT_DURING_REBALANCE,
        ),
        (
            "members that never sync are removed when the pending-sync wait ends",
            |h| {
                let (ids, generation) = completing_group(h);
                h.advance_heartbeating(REBALANCE as u64 + 1, &ids, generation);
            },
            &probes::REMOVED_NEVER_SYNCED,
        ),
        (
            "a silent member is removed when its session expires",
            |h| {
                h.stable_group(2);
                h.advance(SESSION as u64 + 1);
            },
            &probes::REMOVED_SESSION_TIMEOUT,
        ),
        (
            "members that heartbeat but never rejoin are removed at the rebalance timeout",
            |h| {
                let (ids, generation) = preparing_group(h);
                h.advance_heartbeating(REBALANCE as u64 + 1, &ids, generation);
            },
            &probes::REMOVED_REBALANCE_TIMEOUT,
        ),
        (
            "a member told MEMBER_ID_REQUIRED that never rejoins expires",
            |h| {
                h.send_from("c0", 5, join_req(""));
                h.advance(300_001);
            },
            &probes::PENDING_MEMBER_EXPIRED,
        ),
        (
            "the leader leaving while the group completes a rebalance",
            |h| {
                let (ids, _) = completing_group(h);
                h.send(0, leave_req_v0(&ids[0]));
            },
            &probes::LEADER_LOST_IN_COMPLETING_REBALANCE,
        ),
        (
            "the leader's session expiring while the group completes a rebalance",
            |h| {
                let (ids, generation) = completing_group(h);
                h.send(3, sync_req(&ids[1], generation, &[]));
                h.advance(SESSION as u64 + 1);
            },
            &probes::LEADER_LOST_IN_COMPLETING_REBALANCE,
        ),
        (
            "a static member's instance taken over by a new member id",
            |h| {
                h.send_from("c0", 5, static_join("i0", ""));
                h.send_from("c0", 5, static_join("i0", ""));
            },
            &probes::STATIC_MEMBER_REPLACED,
        ),
    ];
    assert_probes_hit(Harness::default, cases);
}

#[test]
fn the_leader_fenced_while_completing_a_rebalance_counts_as_lost() {
    let hits = hits_of(|h| {
        h.send_from("c0", 5, static_join("i0", ""));
        h.send_from("c1", 5, static_join("i1", ""));
        h.advance(0);
        assert_eq!(h.state(), Some(GroupState::CompletingRebalance));
        // The leader's instance restarts with a new member id before it synced.
        h.send_from("c0", 5, static_join("i0", ""));
    });
    assert_eq!(hits.get(probes::LEADER_LOST_IN_COMPLETING_REBALANCE.name), Some(&1), "{hits:?}");
    assert_eq!(hits.get(probes::STATIC_MEMBER_REPLACED.name), Some(&1), "{hits:?}");
}

#[test]
fn a_settled_group_hits_no_rare_probe() {
    let hits = hits_of(|h| {
        let (ids, generation) = h.stable_group(2);
        h.advance_heartbeating(20_000, &ids, generation);
        h.send(2, commit_req(GROUP, &ids[0], generation, &[("t", 0, 5)]));
    });
    // Error answers, and the trigger point every new member's first join passes.
    let rare = |k: &String| {
        !k.starts_with(ANSWER.name) && k.as_str() != probes::MEMBER_ID_REQUIRED_ANSWERED.name
    };
    assert!(!hits.keys().any(rare), "{hits:?}");
}

#[test]
fn error_answers_are_counted_by_api_state_and_error() {
    let hits = hits_of(|h| {
        let (ids, generation) = preparing_group(h);
        h.send(3, hb_req(&ids[0], generation));
        h.send(3, hb_req("nobody", generation));
        h.send(3, sync_req(&ids[1], generation, &[]));
    });
    let answer = |detail: &str| hits.get(&format!("{}:{detail}", ANSWER.name)).copied();
    assert_eq!(answer("Heartbeat/PreparingRebalance/REBALANCE_IN_PROGRESS"), Some(1), "{hits:?}");
    assert_eq!(answer("Heartbeat/PreparingRebalance/UNKNOWN_MEMBER_ID"), Some(1), "{hits:?}");
    assert_eq!(answer("SyncGroup/PreparingRebalance/REBALANCE_IN_PROGRESS"), Some(1), "{hits:?}");
    // The first JoinGroup of each new member (MEMBER_ID_REQUIRED) is an error answer too.
    assert_eq!(answer("JoinGroup/Empty/MEMBER_ID_REQUIRED"), Some(1), "{hits:?}");
}

#[test]
fn a_parked_request_is_counted_with_the_state_its_answer_leaves_in() {
    // c0's SyncGroup waits in CompletingRebalance; c1 leaving starts a rebalance, which answers
    // it REBALANCE_IN_PROGRESS as the group moves to PreparingRebalance.
    let hits = hits_of(|h| {
        let (ids, generation) = completing_group(h);
        h.send(3, sync_req(&ids[1], generation, &[]));
        h.send(0, leave_req_v0(&ids[0]));
    });
    let key = format!("{}:SyncGroup/PreparingRebalance/REBALANCE_IN_PROGRESS", ANSWER.name);
    assert_eq!(hits.get(&key), Some(&1), "{hits:?}");
}
