//! DescribeGroups and ListGroups, responses valid for every wire version, and determinism.

mod group_harness;

use group_harness::*;
use groupsim_coordinator::GroupState;
use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestGroup;
use kafka_protocol::messages::{
    DescribeGroupsRequest, GroupId, ListGroupsRequest, OffsetFetchRequest, ResponseKind,
};

fn describe(
    h: &mut Harness,
    version: i16,
    groups: &[&str],
) -> kafka_protocol::messages::DescribeGroupsResponse {
    let req = DescribeGroupsRequest::default()
        .with_groups(groups.iter().map(|g| GroupId(s(g))).collect());
    let id = h.send(version, req);
    match h.responses.get(&id) {
        Some(ResponseKind::DescribeGroups(r)) => r.clone(),
        other => panic!("{other:?}"),
    }
}

fn list(h: &mut Harness, version: i16, req: ListGroupsRequest) -> Vec<(String, String)> {
    let id = h.send(version, req);
    match h.responses.get(&id) {
        Some(ResponseKind::ListGroups(r)) => {
            r.groups.iter().map(|g| (g.group_id.0.to_string(), g.group_state.to_string())).collect()
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn describe_groups_shows_state_protocol_and_members_assignments_when_stable() {
    let mut h = Harness::default();
    let (ids, _) = h.stable_group(2);
    let r = describe(&mut h, 5, &[GROUP, "unknown"]);
    let g = &r.groups[0];
    assert_eq!(
        (g.group_state.as_str(), g.protocol_type.as_str(), g.protocol_data.as_str()),
        ("Stable", "consumer", "range")
    );
    let members: Vec<(String, String)> =
        g.members.iter().map(|m| (m.member_id.to_string(), m.client_id.to_string())).collect();
    assert_eq!(members, vec![(ids[0].clone(), "c0".into()), (ids[1].clone(), "c1".into())]);
    assert_eq!(g.members[1].member_assignment, assignment(&[("t", 1)]));
    assert_eq!(g.members[1].member_metadata.as_ref(), b"m");
    let unknown = &r.groups[1];
    assert_eq!((unknown.error_code, unknown.group_state.as_str()), (0, "Dead"));
    // During a rebalance neither protocol nor metadata are shown.
    h.send(5, join_req(&ids[0]));
    let r = describe(&mut h, 5, &[GROUP]);
    let g = &r.groups[0];
    assert_eq!((g.group_state.as_str(), g.protocol_data.as_str()), ("PreparingRebalance", ""));
    assert!(g
        .members
        .iter()
        .all(|m| m.member_assignment.is_empty() && m.member_metadata.is_empty()));
}

#[test]
fn list_groups_lists_every_group_sorted_and_filters_by_state_from_v4() {
    let mut h = Harness::default();
    h.stable_group(1);
    h.send(5, commit_req("offsets-only", "", -1, &[("t", 0, 1)]));
    let all = list(&mut h, 3, ListGroupsRequest::default());
    assert_eq!(all.iter().map(|g| g.0.as_str()).collect::<Vec<_>>(), vec![GROUP, "offsets-only"]);
    let stable =
        list(&mut h, 4, ListGroupsRequest::default().with_states_filter(vec![s("stable")]));
    assert_eq!(stable, vec![(GROUP.to_string(), "Stable".to_string())]);
    let consumer =
        list(&mut h, 5, ListGroupsRequest::default().with_types_filter(vec![s("consumer")]));
    assert!(consumer.is_empty(), "every group here is classic");
}

/// Runs one of each API at `version` (clamped to the API's range) through a full rebalance;
/// the harness encodes every response at its request's version.
fn exercise(
    join_v: i16,
    sync_v: i16,
    hb_v: i16,
    leave_v: i16,
    commit_v: i16,
    fetch_v: i16,
) -> Harness {
    let mut h = Harness::default();
    let mut member = String::new();
    let first = h.send(join_v, join_req(""));
    let j = if join_v >= 4 {
        member = h.join(first).member_id.to_string();
        h.send(join_v, join_req(&member))
    } else {
        first
    };
    h.advance(0);
    let resp = h.join(j).clone();
    assert_eq!(resp.error_code, 0, "JoinGroup v{join_v}");
    if member.is_empty() {
        member = resp.member_id.to_string();
    }
    assert_eq!(resp.protocol_type.is_some(), join_v >= 7, "JoinGroup v{join_v} protocol_type");
    let generation = resp.generation_id;
    let sy = h.send(sync_v, sync_req(&member, generation, &[(&member, assignment(&[("t", 0)]))]));
    assert_eq!(h.sync(sy).error_code, 0, "SyncGroup v{sync_v}");
    let hb = h.send(hb_v, hb_req(&member, generation));
    assert_eq!(h.heartbeat_error(hb), 0, "Heartbeat v{hb_v}");
    let cm = h.send(commit_v, commit_req(GROUP, &member, generation, &[("t", 0, 3)]));
    assert_eq!(h.commit_errors(cm), vec![0], "OffsetCommit v{commit_v}");
    let f = if fetch_v >= 8 {
        h.send(
            fetch_v,
            OffsetFetchRequest::default().with_groups(vec![OffsetFetchRequestGroup::default()
                .with_group_id(GroupId(s(GROUP)))
                .with_topics(None)]),
        )
    } else {
        h.send(fetch_v, fetch_req(GROUP, Some(&[("t", &[0])])))
    };
    let offsets: Vec<i64> = if fetch_v >= 8 {
        h.fetch(f).groups[0].topics[0].partitions.iter().map(|p| p.committed_offset).collect()
    } else {
        h.fetch(f).topics[0].partitions.iter().map(|p| p.committed_offset).collect()
    };
    assert_eq!(offsets, vec![3], "OffsetFetch v{fetch_v}");
    let l = if leave_v >= 3 {
        h.send(leave_v, leave_req_v3(&[(&member, None)]))
    } else {
        h.send(leave_v, leave_req_v0(&member))
    };
    assert_eq!(h.leave(l).error_code, 0, "LeaveGroup v{leave_v}");
    assert_eq!(
        h.leave(l).members.len(),
        if leave_v >= 3 { 1 } else { 0 },
        "LeaveGroup v{leave_v} members"
    );
    assert_eq!(h.state(), Some(GroupState::Empty));
    describe(&mut h, join_v.min(6), &[GROUP]);
    list(&mut h, join_v.min(5), ListGroupsRequest::default());
    h
}

#[test]
fn responses_are_valid_for_every_supported_version() {
    // JoinGroup 0-9, SyncGroup 0-5, Heartbeat 0-4, LeaveGroup 0-5, OffsetCommit 2-9,
    // OffsetFetch 1-9, DescribeGroups 0-6, ListGroups 0-5.
    for v in 0..=9i16 {
        exercise(v, v.min(5), v.min(4), v.min(5), v.clamp(2, 9), v.clamp(1, 9));
    }
}

#[test]
fn the_same_inputs_produce_the_same_outputs() {
    let run = || {
        let mut h = Harness::default();
        let (ids, generation) = h.stable_group(4);
        h.send(5, join_req(&ids[2]).with_protocols(protocols(&[("range", "changed")])));
        h.advance_heartbeating(40_000, &ids[..2], generation);
        h.log.join("\n")
    };
    let first = run();
    assert!(first.contains("MemberRemoved"), "the scenario exercises removals");
    assert_eq!(first, run());
}
