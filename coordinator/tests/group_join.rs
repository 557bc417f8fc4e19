//! JoinGroup behaviour of the classic group coordinator, driven at chosen instants.

mod group_harness;

use group_harness::*;
use groupsim_coordinator::{CoordinatorConfig, CoordinatorEvent, GroupState, RemovalReason};
use kafka_protocol::messages::{GroupId, JoinGroupRequest};

#[test]
fn join_v4_without_member_id_gets_member_id_required_and_a_pending_member() {
    let mut h = Harness::default();
    let r = h.send_from("app", 4, join_req(""));
    let resp = h.join(r);
    assert_eq!(resp.error_code, code(E::MemberIdRequired));
    assert_eq!(resp.member_id.as_str(), "app-1", "member id is {{client_id}}-{{counter}}");
    let g = h.c.group(GROUP).unwrap();
    assert_eq!(g.pending_members().collect::<Vec<_>>(), vec!["app-1"]);
    assert!(h.c.members(GROUP).is_empty(), "a pending member is not a member yet");
    assert_eq!(h.state(), Some(GroupState::Empty), "no rebalance for a pending member");
}

#[test]
fn join_below_v4_adds_the_member_at_once() {
    let mut h = Harness::default();
    let r = h.send_from("old", 3, join_req(""));
    assert!(!h.answered(r), "parked until the join phase completes");
    assert_eq!(h.c.members(GROUP), vec!["old-1".to_string()]);
    assert_eq!(h.state(), Some(GroupState::PreparingRebalance));
    h.advance(0);
    let resp = h.join(r);
    assert_eq!(resp.error_code, 0);
    assert_eq!(resp.member_id.as_str(), "old-1");
    assert_eq!(resp.generation_id, 1);
    assert_eq!(h.state(), Some(GroupState::CompletingRebalance));
}

#[test]
fn member_ids_are_deterministic_client_id_and_counter() {
    let run = || {
        let mut h = Harness::default();
        let a = h.join_new("a").0;
        let b = h.join_new("b").0;
        let anon = h.send_from("", 4, join_req(""));
        (a, b, h.join(anon).member_id.to_string())
    };
    assert_eq!(run(), ("a-1".to_string(), "b-2".to_string(), "member-3".to_string()));
    assert_eq!(run(), run());
}

/// A member told MEMBER_ID_REQUIRED that never comes back is removed after the session timeout
/// its JoinGroup carried, as Kafka's coordinators do (`addPendingMemberExpiration(group,
/// newMemberId, sessionTimeoutMs)`), not after the new-member join timeout (five minutes), which
/// held a join phase waiting for a member whose answer was lost until the rebalance timeout.
#[test]
fn pending_member_expires_after_its_session_timeout() {
    let cfg = CoordinatorConfig { new_member_join_timeout_ms: 300_000, ..config() };
    let mut h = Harness::with_config(cfg);
    let r = h.send_from("p", 5, join_req(""));
    let id = h.join(r).member_id.to_string();
    h.advance(SESSION as u64 - 1);
    assert_eq!(h.c.group(GROUP).unwrap().pending_members().count(), 1);
    h.advance(1);
    assert_eq!(h.c.group(GROUP).unwrap().pending_members().count(), 0);
    assert_eq!(h.removed(), vec![(id.clone(), RemovalReason::PendingJoinExpired)]);
    // Coming back with the expired id is refused: it must start over.
    let again = h.send(5, join_req(&id));
    assert_eq!(h.join(again).error_code, code(E::UnknownMemberId));
}

#[test]
fn pending_member_rejoining_with_its_id_becomes_a_member() {
    let mut h = Harness::default();
    let (id, j) = h.join_new("c");
    assert_eq!(h.c.members(GROUP), vec![id.clone()]);
    assert!(h.events.iter().any(|(_, e)| matches!(e, CoordinatorEvent::MemberAdded { member_id, client_id, .. } if *member_id == id && client_id == "c")));
    h.advance(0);
    assert_eq!(h.join(j).error_code, 0);
}

#[test]
fn first_member_leads_and_only_the_leader_gets_member_metadata() {
    let mut h = Harness::default();
    let (a, ja) =
        h.join_new_with("a", join_req("").with_protocols(protocols(&[("range", "meta-a")])));
    let (b, jb) =
        h.join_new_with("b", join_req("").with_protocols(protocols(&[("range", "meta-b")])));
    h.advance(0);
    let (ra, rb) = (h.join(ja).clone(), h.join(jb).clone());
    assert_eq!(ra.leader.as_str(), a);
    assert_eq!(rb.leader.as_str(), a);
    assert_eq!(ra.protocol_name.as_deref().map(|s| s.to_string()), Some("range".to_string()));
    let members: Vec<(String, Vec<u8>)> =
        ra.members.iter().map(|m| (m.member_id.to_string(), m.metadata.to_vec())).collect();
    assert_eq!(members, vec![(a.clone(), b"meta-a".to_vec()), (b.clone(), b"meta-b".to_vec())]);
    assert!(rb.members.is_empty(), "followers get no member list");
    assert_eq!(
        h.generations(),
        vec![(1, Some(a.clone()), {
            let mut v = vec![a, b];
            v.sort();
            v
        })]
    );
}

#[test]
fn protocol_is_chosen_by_vote_among_protocols_all_members_support() {
    // (each member's preference list, expected protocol)
    let cases: &[(&[&[&str]], &str)] = &[
        (
            &[&["range", "roundrobin"], &["roundrobin", "range"], &["roundrobin", "range"]],
            "roundrobin",
        ),
        (&[&["sticky", "range"], &["range", "sticky"], &["range"]], "range"),
        (&[&["coop"], &["coop", "range"]], "coop"),
    ];
    for (prefs, expected) in cases {
        let mut h = Harness::default();
        let mut joins = Vec::new();
        for (i, p) in prefs.iter().enumerate() {
            let list: Vec<(&str, &str)> = p.iter().map(|n| (*n, "m")).collect();
            joins.push(
                h.join_new_with(&format!("c{i}"), join_req("").with_protocols(protocols(&list))).1,
            );
        }
        h.advance(0);
        for j in joins {
            let r = h.join(j);
            assert_eq!(r.error_code, 0, "{prefs:?}");
            assert_eq!(
                r.protocol_name.as_ref().map(|p| p.to_string()).as_deref(),
                Some(*expected),
                "{prefs:?}"
            );
        }
    }
}

#[test]
fn invalid_joins_get_kafkas_errors() {
    // (name, setup a Stable group first?, version, request, expected error)
    let stable_member = "c0-1";
    let cases: Vec<(&str, bool, i16, JoinGroupRequest, E)> = vec![
        ("empty group id", false, 5, join_req("").with_group_id(GroupId(s(""))), E::InvalidGroupId),
        (
            "session below min",
            false,
            5,
            join_req("").with_session_timeout_ms(5_999),
            E::InvalidSessionTimeout,
        ),
        (
            "session above max",
            false,
            5,
            join_req("").with_session_timeout_ms(1_800_001),
            E::InvalidSessionTimeout,
        ),
        ("member id for an unknown group", false, 5, join_req("ghost-9"), E::UnknownMemberId),
        (
            "unknown member id in an existing group",
            true,
            5,
            join_req("ghost-9"),
            E::UnknownMemberId,
        ),
        (
            "empty protocol type on a new group",
            false,
            3,
            join_req("").with_protocol_type(s("")),
            E::InconsistentGroupProtocol,
        ),
        (
            "no protocols on a new group",
            false,
            3,
            join_req("").with_protocols(vec![]),
            E::InconsistentGroupProtocol,
        ),
        (
            "protocol type mismatch",
            true,
            3,
            join_req("").with_protocol_type(s("connect")),
            E::InconsistentGroupProtocol,
        ),
        (
            "no common protocol",
            true,
            3,
            join_req("").with_protocols(protocols(&[("sticky", "m")])),
            E::InconsistentGroupProtocol,
        ),
        (
            "known member switching to an unsupported protocol",
            true,
            5,
            join_req(stable_member).with_protocols(protocols(&[("sticky", "m")])),
            E::InconsistentGroupProtocol,
        ),
    ];
    for (name, stable, version, req, expected) in cases {
        let mut h = Harness::default();
        if stable {
            let (ids, _) = h.stable_group(1);
            assert_eq!(ids[0], stable_member);
        }
        let before = h.c.members(GROUP);
        let r = h.send(version, req);
        let resp = h.join(r);
        assert_eq!(resp.error_code, code(expected), "{name}: {resp:?}");
        assert_eq!(resp.generation_id, -1, "{name}");
        assert_eq!(h.c.members(GROUP), before, "{name}: membership unchanged");
    }
}

#[test]
fn group_max_size_refuses_new_members() {
    let cfg = CoordinatorConfig { group_max_size: 2, ..config() };
    let mut h = Harness::with_config(cfg);
    h.join_new("a");
    // A pending member counts against the limit too.
    let pending = h.send_from("b", 5, join_req(""));
    assert_eq!(h.join(pending).error_code, code(E::MemberIdRequired));
    let third = h.send_from("c", 5, join_req(""));
    assert_eq!(h.join(third).error_code, code(E::GroupMaxSizeReached));
    // The pending one may still come in.
    let b = h.join(pending).member_id.to_string();
    let jb = h.send(5, join_req(&b));
    h.advance(0);
    assert_eq!(h.join(jb).error_code, 0);
    assert_eq!(h.c.members(GROUP).len(), 2);
}

#[test]
fn unchanged_follower_rejoin_in_stable_gets_current_generation_without_rebalance() {
    let mut h = Harness::default();
    let (ids, generation) = h.stable_group(2);
    let r = h.send(5, join_req(&ids[1]));
    let resp = h.join(r);
    assert_eq!((resp.error_code, resp.generation_id), (0, generation));
    assert_eq!(resp.leader.as_str(), ids[0]);
    assert!(resp.members.is_empty());
    assert_eq!(h.state(), Some(GroupState::Stable));
}

#[test]
fn leader_rejoin_or_changed_metadata_in_stable_starts_a_rebalance() {
    // (who rejoins: 0 = leader, 1 = follower; new metadata)
    for (who, metadata) in [(0usize, "m"), (1, "changed")] {
        let mut h = Harness::default();
        let (ids, generation) = h.stable_group(2);
        let r = h.send(5, join_req(&ids[who]).with_protocols(protocols(&[("range", metadata)])));
        assert!(!h.answered(r), "parked: rebalance under way");
        assert_eq!(h.state(), Some(GroupState::PreparingRebalance));
        let other = h.send(5, join_req(&ids[1 - who]));
        // Everyone has rejoined: the join phase completes at once.
        assert_eq!(h.state(), Some(GroupState::CompletingRebalance));
        assert_eq!(h.join(r).generation_id, generation + 1);
        assert_eq!(h.join(other).generation_id, generation + 1);
    }
}

#[test]
fn generation_increments_on_each_completed_join_phase() {
    let mut h = Harness::default();
    let (ids, g1) = h.stable_group(1);
    assert_eq!(g1, 1);
    for expected in 2..=4 {
        let r = h.send(5, join_req(&ids[0]));
        assert_eq!(h.join(r).generation_id, expected);
        let sy = h.send(3, sync_req(&ids[0], expected, &[]));
        assert_eq!(h.sync(sy).error_code, 0);
    }
    let gens: Vec<i32> = h.generations().into_iter().map(|g| g.0).collect();
    assert_eq!(gens, vec![1, 2, 3, 4]);
}

#[test]
fn join_phase_waits_for_known_members_until_the_rebalance_timeout_then_drops_them() {
    let mut h = Harness::default();
    let (ids, generation) = h.stable_group(3);
    let t0 = h.now;
    let r0 = h.send(5, join_req(&ids[0]));
    // ids[2] never rejoins but keeps heartbeating (a consumer stuck in its poll loop): its
    // session stays alive, its place in the next generation does not.
    h.advance_heartbeating(9_000, &ids[1..], generation);
    let r1 = h.send(5, join_req(&ids[1]));
    assert!(!h.answered(r0) && !h.answered(r1));
    h.advance_heartbeating((t0 + REBALANCE as u64 - 1) - h.now, &ids[2..], generation);
    assert!(!h.answered(r0), "still waiting just before the rebalance timeout");
    h.advance(1);
    assert_eq!(h.join(r0).generation_id, generation + 1);
    assert_eq!(h.join(r1).generation_id, generation + 1);
    assert_eq!(h.c.members(GROUP), {
        let mut v = vec![ids[0].clone(), ids[1].clone()];
        v.sort();
        v
    });
    assert!(h.removed().contains(&(ids[2].clone(), RemovalReason::RebalanceTimeout)));
}

#[test]
fn join_phase_with_nobody_rejoining_leaves_the_group_empty_with_a_new_generation() {
    let mut h = Harness::default();
    let (ids, generation) = h.stable_group(2);
    let l = h.send(0, leave_req_v0(&ids[0]));
    assert_eq!(h.leave(l).error_code, 0);
    assert_eq!(h.state(), Some(GroupState::PreparingRebalance));
    // ids[1] heartbeats (REBALANCE_IN_PROGRESS) but never rejoins.
    h.advance_heartbeating(REBALANCE as u64, &ids[1..], generation);
    assert_eq!(h.state(), Some(GroupState::Empty));
    assert_eq!(h.generation(), generation + 1, "Kafka bumps the generation even when empty");
    assert!(h.removed().contains(&(ids[1].clone(), RemovalReason::RebalanceTimeout)));
    assert_eq!(h.generations().last().unwrap(), &(generation + 1, None, vec![]));
}

#[test]
fn initial_rebalance_delay_extends_while_members_arrive_bounded_by_rebalance_timeout() {
    // Kafka's InitialDelayedJoin: delay 3 s, rebalance timeout 10 s -> at most 3 + 7 s.
    let cfg = CoordinatorConfig { initial_rebalance_delay_ms: 3_000, ..config() };
    let mut h = Harness::with_config(cfg);
    let req = || join_req("").with_rebalance_timeout_ms(10_000);
    let (_, j0) = h.join_new_with("a", req());
    h.advance(2_000);
    let (_, j1) = h.join_new_with("b", req()); // arrives within the first delay: extend
    h.advance(1_000); // t = 3 s: extended to 6 s
    assert!(!h.answered(j0));
    h.advance(2_000);
    let (_, j2) = h.join_new_with("c", req()); // t = 5 s: extend again to 9 s
    h.advance(1_000); // t = 6 s
    assert!(!h.answered(j0));
    h.advance(2_999); // t = 8.999 s
    assert!(!h.answered(j0));
    h.advance(1); // t = 9 s: nobody new since 6 s, complete
    for j in [j0, j1, j2] {
        assert_eq!(h.join(j).generation_id, 1);
    }

    // Members arriving continuously: bounded by the rebalance timeout (3 + 3 + 3 + 1 s).
    let mut h =
        Harness::with_config(CoordinatorConfig { initial_rebalance_delay_ms: 3_000, ..config() });
    let (_, first) = h.join_new_with("a", req());
    let mut t = 0;
    while !h.answered(first) {
        h.advance(500);
        t += 500;
        h.join_new_with("x", req());
        assert!(t <= 10_000, "initial delay ran past the rebalance timeout");
    }
    assert_eq!(t, 10_000);
}

#[test]
fn initial_delay_does_not_complete_early_even_if_everyone_joined() {
    let cfg = CoordinatorConfig { initial_rebalance_delay_ms: 3_000, ..config() };
    let mut h = Harness::with_config(cfg);
    let (_, j) = h.join_new("a");
    h.advance(2_999);
    assert!(!h.answered(j));
    h.advance(1);
    assert_eq!(h.join(j).error_code, 0);
}

#[test]
fn leader_leaving_during_join_phase_hands_leadership_to_a_rejoined_member() {
    let mut h = Harness::default();
    let (ids, generation) = h.stable_group(3);
    let r2 = h.send(5, join_req(&ids[2]).with_protocols(protocols(&[("range", "new")])));
    let l = h.send(0, leave_req_v0(&ids[0]));
    assert_eq!(h.leave(l).error_code, 0);
    let r1 = h.send(5, join_req(&ids[1]));
    let resp = h.join(r1);
    assert_eq!(resp.generation_id, generation + 1);
    assert_eq!(resp.leader.as_str(), ids[1], "the oldest remaining member leads");
    assert_eq!(h.join(r2).leader.as_str(), ids[1]);
    assert_eq!(h.join(r1).members.len(), 2);
}

#[test]
fn rejoin_during_completing_rebalance_with_same_metadata_resends_the_generation() {
    let mut h = Harness::default();
    let (a, ja) = h.join_new("a");
    let (b, _) = h.join_new("b");
    h.advance(0);
    assert_eq!(h.state(), Some(GroupState::CompletingRebalance));
    // The leader lost its answer and asks again: same generation, members included.
    let again = h.send(5, join_req(&a));
    let r = h.join(again);
    assert_eq!(r.generation_id, h.join(ja).generation_id);
    assert_eq!(r.members.len(), 2);
    let fb = h.send(5, join_req(&b));
    assert!(h.join(fb).members.is_empty());
    assert_eq!(h.state(), Some(GroupState::CompletingRebalance));
}

#[test]
fn new_member_during_completing_rebalance_restarts_the_rebalance() {
    let mut h = Harness::default();
    let (a, ja) = h.join_new("a");
    let (b, jb) = h.join_new("b");
    h.advance(0);
    let generation = h.join(ja).generation_id;
    let _ = jb;
    let sb = h.send(3, sync_req(&b, generation, &[]));
    assert!(!h.answered(sb), "follower waits for the leader");
    let (_, jc) = h.join_new("c");
    assert_eq!(h.sync(sb).error_code, code(E::RebalanceInProgress));
    assert_eq!(h.state(), Some(GroupState::PreparingRebalance));
    let ra = h.send(5, join_req(&a));
    let rb = h.send(5, join_req(&b));
    for j in [ra, rb, jc] {
        assert_eq!(h.join(j).generation_id, generation + 1);
    }
}

#[test]
fn a_retried_join_supersedes_the_parked_one() {
    let mut h = Harness::default();
    let (ids, _) = h.stable_group(2);
    let first = h.send(5, join_req(&ids[0]));
    let retry = h.send(5, join_req(&ids[0]));
    assert_eq!(h.join(first).error_code, code(E::RebalanceInProgress));
    assert!(!h.answered(retry));
    h.send(5, join_req(&ids[1]));
    assert_eq!(h.join(retry).error_code, 0);
}

#[test]
fn a_pending_member_holds_the_join_phase_until_it_rejoins() {
    // Kafka's hasAllMembersJoined also waits for members told MEMBER_ID_REQUIRED: they are
    // expected back at once, and completing without them would cost another rebalance.
    let mut h = Harness::default();
    let (ids, generation) = h.stable_group(1);
    let first = h.send_from("late", 5, join_req(""));
    let late = h.join(first).member_id.to_string();
    let r0 = h.send(5, join_req(&ids[0]));
    assert!(!h.answered(r0), "waits for the pending member");
    h.advance(1_000);
    let rl = h.send(5, join_req(&late));
    assert_eq!(h.join(r0).generation_id, generation + 1);
    assert_eq!(h.join(rl).generation_id, generation + 1);
}

#[test]
fn zero_timeouts_do_not_make_timers_spin() {
    let cfg = CoordinatorConfig { min_session_timeout_ms: 0, ..config() };
    let mut h = Harness::with_config(cfg);
    let r = h.send(3, join_req("").with_session_timeout_ms(0).with_rebalance_timeout_ms(0));
    h.advance(0);
    assert_eq!(h.join(r).error_code, 0);
    h.advance(5);
    assert_eq!(h.state(), Some(GroupState::Empty), "the silent member expired");
}

#[test]
fn hundreds_of_members_rebalance_in_one_join_phase() {
    let mut h = Harness::default();
    let (ids, generation) = h.stable_group(300);
    assert_eq!(h.c.members(GROUP).len(), 300);
    let joins: Vec<_> = ids.iter().map(|m| h.send(5, join_req(m))).collect();
    assert!(joins.iter().all(|j| h.join(*j).generation_id == generation + 1));
    assert_eq!(h.join(joins[0]).members.len(), 300);
}
