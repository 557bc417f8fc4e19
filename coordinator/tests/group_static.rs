//! Static membership (group.instance.id, KIP-345) in the coordinator.

mod group_harness;

use group_harness::*;
use groupsim_coordinator::{CoordinatorEvent, GroupState, RemovalReason};
use kafka_protocol::messages::RequestKind;

fn static_join(instance: &str, member_id: &str) -> kafka_protocol::messages::JoinGroupRequest {
    join_req(member_id).with_group_instance_id(Some(s(instance)))
}

/// A Stable group of static members `i0..`, all joined with v5 (no MEMBER_ID_REQUIRED for
/// static members). Returns member ids in join order and the generation.
fn stable_static_group(h: &mut Harness, n: usize) -> (Vec<String>, i32) {
    let joins: Vec<_> = (0..n)
        .map(|i| h.send_from(&format!("c{i}"), 5, static_join(&format!("i{i}"), "")))
        .collect();
    h.advance(0);
    let ids: Vec<String> = joins.iter().map(|j| h.join(*j).member_id.to_string()).collect();
    let generation = h.join(joins[0]).generation_id;
    let assignments: Vec<(&str, bytes::Bytes)> =
        ids.iter().enumerate().map(|(i, m)| (m.as_str(), assignment(&[("t", i as i32)]))).collect();
    h.send(3, sync_req(&ids[0], generation, &assignments).with_group_instance_id(Some(s("i0"))));
    for (i, m) in ids.iter().enumerate().skip(1) {
        h.send(3, sync_req(m, generation, &[]).with_group_instance_id(Some(s(&format!("i{i}")))));
    }
    assert_eq!(h.state(), Some(GroupState::Stable));
    (ids, generation)
}

#[test]
fn static_member_joins_without_member_id_required_and_its_id_starts_with_the_instance_id() {
    let mut h = Harness::default();
    let (ids, _) = stable_static_group(&mut h, 2);
    assert_eq!(ids, vec!["i0-1".to_string(), "i1-2".to_string()]);
}

#[test]
fn static_member_rejoining_with_unchanged_metadata_replaces_its_member_id_without_rebalance() {
    let mut h = Harness::default();
    let (ids, generation) = stable_static_group(&mut h, 2);
    let rejoin = h.send_from("c1-restarted", 5, static_join("i1", ""));
    let resp = h.join(rejoin).clone();
    assert_eq!(resp.error_code, 0);
    let new_id = resp.member_id.to_string();
    assert_ne!(new_id, ids[1]);
    assert_eq!(resp.generation_id, generation, "no new generation");
    assert_eq!(resp.leader.as_str(), ids[0]);
    assert_eq!(h.state(), Some(GroupState::Stable));
    // The new member id gets the old one's assignment.
    let sy = h.send(3, sync_req(&new_id, generation, &[]).with_group_instance_id(Some(s("i1"))));
    assert_eq!(h.sync(sy).assignment, assignment(&[("t", 1)]));
    // The old member id is fenced everywhere.
    let hb = h.send(3, hb_req(&ids[1], generation).with_group_instance_id(Some(s("i1"))));
    assert_eq!(h.heartbeat_error(hb), code(E::FencedInstanceId));
    let sy = h.send(3, sync_req(&ids[1], generation, &[]).with_group_instance_id(Some(s("i1"))));
    assert_eq!(h.sync(sy).error_code, code(E::FencedInstanceId));
    let cm = h.send(
        7,
        commit_req(GROUP, &ids[1], generation, &[("t", 1, 5)])
            .with_group_instance_id(Some(s("i1"))),
    );
    assert_eq!(h.commit_errors(cm), vec![code(E::FencedInstanceId)]);
    let jn = h.send(5, static_join("i1", &ids[1]));
    assert_eq!(h.join(jn).error_code, code(E::FencedInstanceId));
    assert!(h.removed().contains(&(ids[1].clone(), RemovalReason::Fenced)));
    assert!(h.events.iter().any(|(_, e)| matches!(e,
        CoordinatorEvent::MemberAdded { member_id, group_instance_id: Some(i), client_id, .. }
            if *member_id == new_id && i == "i1" && client_id == "c1-restarted")));
    assert_eq!(h.generations().len(), 1);
}

#[test]
fn static_leader_rejoining_below_v9_keeps_the_group_and_is_not_told_it_leads() {
    let mut h = Harness::default();
    let (ids, generation) = stable_static_group(&mut h, 2);
    let rejoin = h.send(5, static_join("i0", ""));
    let resp = h.join(rejoin);
    assert_eq!(resp.generation_id, generation);
    assert_eq!(
        resp.leader.as_str(),
        ids[0],
        "the old leader id, so the new member does not assign"
    );
    let new_id = resp.member_id.to_string();
    assert_eq!(
        h.c.leader(GROUP).as_deref(),
        Some(new_id.as_str()),
        "leadership moves to the new id"
    );
    assert!(!resp.skip_assignment, "SkipAssignment is a v9 field");
    assert!(resp.members.is_empty());
    assert_eq!(h.state(), Some(GroupState::Stable));
}

/// KIP-814 (KAFKA-13435). Before it, a static leader's replacement in a Stable group with
/// unchanged metadata was answered with the old leader id: the new process took itself for a
/// follower, and since only the leader watches the topics' partition counts, partitions added
/// later were never assigned until some other rebalance. From JoinGroup v9 the coordinator
/// names the new member id as leader, lists the members and sets SkipAssignment, so the leader
/// keeps the generation's assignment (no rebalance) and watches the metadata again.
#[test]
fn static_leader_rejoining_at_v9_is_told_it_leads_and_to_skip_the_assignment() {
    let mut h = Harness::default();
    let (ids, generation) = stable_static_group(&mut h, 2);
    let rejoin = h.send(9, static_join("i0", ""));
    let resp = h.join(rejoin).clone();
    assert_eq!(resp.error_code, 0);
    assert_eq!(resp.generation_id, generation, "no new generation");
    let new_id = resp.member_id.to_string();
    assert_ne!(new_id, ids[0]);
    assert_eq!(resp.leader.as_str(), new_id, "the leader as it now is");
    assert!(resp.skip_assignment);
    let mut listed: Vec<(String, Option<String>)> = resp
        .members
        .iter()
        .map(|m| (m.member_id.to_string(), m.group_instance_id.as_ref().map(|i| i.to_string())))
        .collect();
    listed.sort();
    let mut expected =
        vec![(new_id.clone(), Some("i0".to_string())), (ids[1].clone(), Some("i1".to_string()))];
    expected.sort();
    assert_eq!(listed, expected, "the members, under the new id");
    // The leader's SyncGroup without assignments gets the assignment the group keeps.
    let sy = h.send(5, sync_req(&new_id, generation, &[]).with_group_instance_id(Some(s("i0"))));
    assert_eq!(h.sync(sy).assignment, assignment(&[("t", 0)]));
    assert_eq!(h.state(), Some(GroupState::Stable));
    assert_eq!(h.generations().len(), 1, "no rebalance");
}

/// KIP-814 tells only the leader to skip: a follower's replacement at v9 hears the current
/// leader and no members.
#[test]
fn static_follower_rejoining_at_v9_hears_the_leader_and_no_skip() {
    let mut h = Harness::default();
    let (ids, generation) = stable_static_group(&mut h, 2);
    let rejoin = h.send(9, static_join("i1", ""));
    let resp = h.join(rejoin);
    assert_eq!(resp.generation_id, generation);
    assert_eq!(resp.leader.as_str(), ids[0]);
    assert!(!resp.skip_assignment);
    assert!(resp.members.is_empty());
}

/// Kafka's updateStaticMemberThenRebalanceOrCompleteJoin stores the new process's protocols and
/// rebalances a Stable group only if the protocol it would select changes: a new subscription
/// under the same protocol (a cooperative member's owned partitions differ after a restart)
/// keeps the generation.
#[test]
fn static_member_rejoining_with_new_metadata_under_the_same_protocol_keeps_the_generation() {
    let mut h = Harness::default();
    let (_, generation) = stable_static_group(&mut h, 2);
    let rejoin =
        h.send(5, static_join("i1", "").with_protocols(protocols(&[("range", "new-topics")])));
    assert_eq!(h.join(rejoin).generation_id, generation, "no rebalance");
    assert_eq!(h.state(), Some(GroupState::Stable));
    assert_eq!(h.generations().len(), 1);
}

/// A replacement whose protocols change the group's selection (here every member would now
/// vote roundrobin) starts a rebalance.
#[test]
fn static_member_rejoining_with_protocols_that_change_the_selection_triggers_a_rebalance() {
    let mut h = Harness::default();
    let joins: Vec<_> = (0..2)
        .map(|i| {
            let req = static_join(&format!("i{i}"), "")
                .with_protocols(protocols(&[("range", "m"), ("roundrobin", "m")]));
            h.send_from(&format!("c{i}"), 5, req)
        })
        .collect();
    h.advance(0);
    let ids: Vec<String> = joins.iter().map(|j| h.join(*j).member_id.to_string()).collect();
    let generation = h.join(joins[0]).generation_id;
    h.send(3, sync_req(&ids[0], generation, &[]).with_group_instance_id(Some(s("i0"))));
    h.send(3, sync_req(&ids[1], generation, &[]).with_group_instance_id(Some(s("i1"))));
    assert_eq!(h.state(), Some(GroupState::Stable));
    // Only roundrobin now: the selection among common protocols becomes roundrobin.
    let rejoin = h.send(5, static_join("i1", "").with_protocols(protocols(&[("roundrobin", "m")])));
    assert!(!h.answered(rejoin));
    assert_eq!(h.state(), Some(GroupState::PreparingRebalance));
    let r0 = h.send(
        5,
        static_join("i0", &ids[0])
            .with_protocols(protocols(&[("range", "m"), ("roundrobin", "m")])),
    );
    assert_eq!(h.join(r0).generation_id, generation + 1);
    assert_eq!(h.join(rejoin).generation_id, generation + 1);
    assert_eq!(h.join(rejoin).protocol_name.as_deref(), Some("roundrobin"));
}

/// The situation a correct client reaches ILLEGAL_GENERATION on OffsetCommit from: a static
/// member (session timeout longer than the rebalance timeout, to ride out restarts) is paused
/// past the rebalance timeout while the group rebalances. The join phase ends without it and
/// Kafka keeps it in the new generation; when it resumes, the commit it sends still carries the
/// generation it knew. The member is known, the generation is not the group's: refused with
/// ILLEGAL_GENERATION (the `coordinator.offset_commit.illegal_generation` probe).
#[test]
fn static_member_kept_through_a_rebalance_it_missed_gets_illegal_generation_on_commit() {
    let mut h = Harness::default();
    let (ids, generation) = stable_static_group(&mut h, 2);
    let r0 = h.send(5, static_join("i0", &ids[0]).with_protocols(protocols(&[("range", "x")])));
    // (The harness keeps i1's session alive, as its long session timeout would.)
    h.advance_heartbeating(REBALANCE as u64, &ids[1..], generation);
    assert_eq!(h.join(r0).generation_id, generation + 1);
    let s0 = h.send(3, sync_req(&ids[0], generation + 1, &[]));
    h.advance(0);
    assert_eq!(h.sync(s0).error_code, 0);
    assert_eq!(h.state(), Some(GroupState::Stable));
    let ((), hits) = groupsim_wire::probe::record(|| {
        let commit = h.send(7, commit_req(GROUP, &ids[1], generation, &[("t", 0, 5)]));
        h.advance(0);
        assert_eq!(h.commit_errors(commit), vec![code(E::IllegalGeneration)]);
    });
    let probe = groupsim_coordinator::probes::COMMIT_STALE_GENERATION.name;
    assert_eq!(hits.get(probe), Some(&1), "{hits:?}");
}

#[test]
fn static_member_that_does_not_rejoin_stays_in_the_next_generation() {
    let mut h = Harness::default();
    let (ids, generation) = stable_static_group(&mut h, 2);
    let r0 = h.send(5, static_join("i0", &ids[0]).with_protocols(protocols(&[("range", "x")])));
    // i1 keeps heartbeating but does not rejoin within the rebalance timeout.
    h.advance_heartbeating(REBALANCE as u64, &ids[1..], generation);
    assert_eq!(h.join(r0).generation_id, generation + 1);
    assert_eq!(h.join(r0).members.len(), 2, "the static member is still part of the group");
    assert!(h.removed().is_empty());
    // Its next heartbeat tells it to rejoin, and it gets the current generation back.
    let hb = h.send(3, hb_req(&ids[1], generation).with_group_instance_id(Some(s("i1"))));
    assert_eq!(h.heartbeat_error(hb), code(E::IllegalGeneration));
    let rj = h.send(5, static_join("i1", &ids[1]));
    assert_eq!(h.join(rj).generation_id, generation + 1);
}

#[test]
fn leave_group_naming_the_instance_id_removes_the_static_member() {
    let mut h = Harness::default();
    let (ids, _) = stable_static_group(&mut h, 2);
    let l = h.send(3, leave_req_v3(&[("", Some("i1")), ("", Some("unknown-instance"))]));
    let errors: Vec<i16> = h.leave(l).members.iter().map(|m| m.error_code).collect();
    assert_eq!(errors, vec![0, code(E::UnknownMemberId)]);
    assert_eq!(h.c.members(GROUP), vec![ids[0].clone()]);
    assert!(h.c.group(GROUP).unwrap().static_member("i1").is_none());
    assert_eq!(h.state(), Some(GroupState::PreparingRebalance));
}

#[test]
fn leave_group_with_a_fenced_member_id_is_fenced_instance_id() {
    let mut h = Harness::default();
    let (ids, _) = stable_static_group(&mut h, 2);
    h.send(5, static_join("i1", ""));
    let l = h.send(3, leave_req_v3(&[(&ids[1], Some("i1"))]));
    assert_eq!(h.leave(l).members[0].error_code, code(E::FencedInstanceId));
    assert_eq!(h.c.members(GROUP).len(), 2);
}

#[test]
fn takeover_while_the_old_member_waits_in_a_join_fences_its_parked_request() {
    let mut h = Harness::default();
    let (ids, _) = stable_static_group(&mut h, 2);
    let old = h.send(5, static_join("i1", &ids[1]).with_protocols(protocols(&[("range", "y")])));
    assert!(!h.answered(old));
    let newer = h.send(5, static_join("i1", ""));
    assert_eq!(h.join(old).error_code, code(E::FencedInstanceId));
    assert!(!h.answered(newer), "waits in the join phase");
    h.send(5, static_join("i0", &ids[0]));
    assert_eq!(h.join(newer).error_code, 0);
}

#[test]
fn requests_the_coordinator_does_not_handle_are_ignored() {
    let mut h = Harness::default();
    let req = RequestKind::Metadata(Default::default());
    assert!(!groupsim_coordinator::GroupCoordinator::handles(&req));
    h.c.handle_request(0, groupsim_wire::RequestId(999), 5, req);
    assert!(h.c.poll_output().is_none());
}

#[test]
fn unloading_answers_parked_requests_not_coordinator_and_kills_the_groups() {
    let mut h = Harness::default();
    let (ids, generation) = stable_static_group(&mut h, 2);
    h.send(5, commit_req(GROUP, &ids[1], generation, &[("t", 0, 1)]));
    let parked = h.send(5, static_join("i0", &ids[0]).with_protocols(protocols(&[("range", "z")])));
    h.c.unload_all();
    h.advance(0);
    assert_eq!(h.join(parked).error_code, code(E::NotCoordinator));
    assert!(h.events.iter().any(|(_, e)| matches!(
        e,
        CoordinatorEvent::GroupStateChanged { to: GroupState::Dead, .. }
    )));
    assert_eq!(h.c.group_state(GROUP), None, "the group is forgotten");
    assert_eq!(h.c.poll_timeout(), None, "no timers left");
    let f = h.send(5, fetch_req(GROUP, Some(&[("t", &[0])])));
    assert_eq!(h.fetch(f).topics[0].partitions[0].committed_offset, 1, "offsets outlive the group");
}

/// Found by the coordinator fuzz target (`fuzz/harness/coordinator.rs`): a dynamic member's
/// SyncGroup naming an instance id nobody holds was answered NONE, because the coordinator
/// checked the instance only for a stale holder and then found the member id. Kafka's
/// `validateMember` looks a request naming an instance up by its instance: nobody holding it is
/// UNKNOWN_MEMBER_ID, whatever the member id. The same holds for Heartbeat, OffsetCommit and a
/// LeaveGroup naming the instance, which must not remove the dynamic member either.
#[test]
fn a_request_naming_an_instance_nobody_holds_is_an_unknown_member() {
    let mut h = Harness::default();
    let (ids, generation) = h.stable_group(2);
    let stranger = Some(s("i9"));
    let hb = h.send(3, hb_req(&ids[1], generation).with_group_instance_id(stranger.clone()));
    assert_eq!(h.heartbeat_error(hb), code(E::UnknownMemberId));
    let sy = h.send(3, sync_req(&ids[1], generation, &[]).with_group_instance_id(stranger.clone()));
    assert_eq!(h.sync(sy).error_code, code(E::UnknownMemberId));
    let cm = h.send(
        7,
        commit_req(GROUP, &ids[1], generation, &[("t", 1, 5)]).with_group_instance_id(stranger),
    );
    assert_eq!(h.commit_errors(cm), vec![code(E::UnknownMemberId)]);
    let lv = h.send(3, leave_req_v3(&[(&ids[1], Some("i9"))]));
    assert_eq!(h.leave(lv).members[0].error_code, code(E::UnknownMemberId));
    // The member itself is untouched: without the stranger's instance it is served as before.
    assert!(h.removed().is_empty(), "{:?}", h.removed());
    let hb = h.send(3, hb_req(&ids[1], generation));
    assert_eq!(h.heartbeat_error(hb), 0);
}
