//! Consumer groups and the shared parts: OffsetCommit/OffsetFetch checked against member
//! epochs, ConsumerGroupDescribe, and the group rebuilt from the offsets log by another
//! coordinator (a coordinator move).

mod consumer_harness;

use consumer_harness::*;
use groupsim_coordinator::offsets_log::{OffsetsLog, SharedOffsetsLog};
use groupsim_coordinator::{ConsumerGroupEvent, ConsumerGroupState, GroupCoordinator};
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopics,
};
use kafka_protocol::messages::*;

fn commit(member: &str, epoch: i32, partition: i32, offset: i64) -> OffsetCommitRequest {
    OffsetCommitRequest::default()
        .with_group_id(GroupId(s(GROUP)))
        .with_member_id(s(member))
        .with_generation_id_or_member_epoch(epoch)
        .with_topics(vec![OffsetCommitRequestTopic::default()
            .with_name(TopicName(s("t")))
            .with_partitions(vec![OffsetCommitRequestPartition::default()
                .with_partition_index(partition)
                .with_committed_offset(offset)])])
}

fn commit_error(h: &mut Harness, v: i16, req: OffsetCommitRequest) -> i16 {
    let id = h.send(v, req);
    match h.response(id) {
        Some(ResponseKind::OffsetCommit(r)) => r.topics[0].partitions[0].error_code,
        other => panic!("{other:?}"),
    }
}

fn fetch_v9(member: Option<&str>, epoch: i32) -> OffsetFetchRequest {
    OffsetFetchRequest::default().with_groups(vec![OffsetFetchRequestGroup::default()
        .with_group_id(GroupId(s(GROUP)))
        .with_member_id(member.map(s))
        .with_member_epoch(epoch)
        .with_topics(Some(vec![OffsetFetchRequestTopics::default()
            .with_name(TopicName(s("t")))
            .with_partition_indexes(vec![0])]))])
}

fn fetched(h: &mut Harness, req: OffsetFetchRequest) -> (i16, i64) {
    let id = h.send(9, req);
    match h.response(id) {
        Some(ResponseKind::OffsetFetch(r)) => {
            let g = &r.groups[0];
            (g.error_code, g.topics.first().map_or(-1, |t| t.partitions[0].committed_offset))
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn commits_are_checked_against_member_epochs() {
    let mut h = Harness::default();
    let (_, all) = h.joined("a", &["t"]);
    h.joined("b", &["t"]);
    h.hb(beat("a", 1, &all)); // revoking, still at epoch 1
    let cases: Vec<(&str, i16, OffsetCommitRequest, i16)> = vec![
        ("commit before revoking, at the current epoch", 9, commit("a", 1, 4, 10), 0),
        ("stale epoch", 9, commit("a", 0, 4, 11), E::StaleMemberEpoch.code()),
        ("epoch ahead", 9, commit("a", 2, 4, 12), E::StaleMemberEpoch.code()),
        ("unknown member", 9, commit("x", 1, 4, 13), E::UnknownMemberId.code()),
        ("consumer member below v9", 8, commit("a", 1, 4, 14), E::UnsupportedVersion.code()),
        (
            "no member, negative epoch, group with members",
            9,
            commit("", -1, 4, 15),
            E::UnknownMemberId.code(),
        ),
    ];
    for (name, v, req, expected) in cases {
        assert_eq!(commit_error(&mut h, v, req), expected, "{name}");
    }
    assert_eq!(h.c.committed_offset(GROUP, &tp("t", 4)), Some(10));
}

#[test]
fn a_fenced_members_commit_is_refused() {
    let mut h = Harness::default();
    h.joined("a", &["t"]);
    h.advance(45_000);
    assert!(h.group().member("a").is_none());
    assert_eq!(commit_error(&mut h, 9, commit("a", 1, 0, 5)), E::UnknownMemberId.code());
    // With nobody left, an admin commit (epoch -1) is accepted.
    assert_eq!(commit_error(&mut h, 9, commit("", -1, 0, 6)), 0);
}

#[test]
fn offset_fetch_v9_checks_the_member_epoch() {
    let mut h = Harness::default();
    h.joined("a", &["t"]);
    assert_eq!(commit_error(&mut h, 9, commit("a", 1, 0, 42)), 0);
    assert_eq!(fetched(&mut h, fetch_v9(Some("a"), 1)), (0, 42));
    assert_eq!(fetched(&mut h, fetch_v9(None, -1)), (0, 42), "an admin fetch");
    assert_eq!(fetched(&mut h, fetch_v9(Some("a"), 0)).0, E::StaleMemberEpoch.code());
    assert_eq!(fetched(&mut h, fetch_v9(Some("x"), 1)).0, E::UnknownMemberId.code());
}

#[test]
fn describe_reports_epochs_state_assignor_and_members() {
    let mut h = Harness::default();
    let (_, all) = h.joined("a", &["t"]);
    h.joined("b", &["t"]);
    h.hb(beat("a", 1, &all));
    let id = h.send(
        1,
        ConsumerGroupDescribeRequest::default()
            .with_group_ids(vec![GroupId(s(GROUP)), GroupId(s("nope"))]),
    );
    let Some(ResponseKind::ConsumerGroupDescribe(r)) = h.response(id).cloned() else {
        panic!("no describe answer")
    };
    let g = &r.groups[0];
    assert_eq!(g.error_code, 0);
    assert_eq!(g.group_state.as_str(), "Reconciling");
    assert_eq!((g.group_epoch, g.assignment_epoch), (2, 2));
    assert_eq!(g.assignor_name.as_str(), "uniform");
    let ids: Vec<&str> = g.members.iter().map(|m| m.member_id.as_str()).collect();
    assert_eq!(ids, ["a", "b"]);
    let a = &g.members[0];
    assert_eq!(a.member_epoch, 1);
    assert_eq!(a.assignment.topic_partitions[0].partitions.len(), 3, "a keeps 3 after revoking");
    assert_eq!(a.target_assignment.topic_partitions[0].topic_name.as_str(), "t");
    assert_eq!(a.member_type, 1);
    assert_eq!(r.groups[1].error_code, E::GroupIdNotFound.code());
}

/// The group's first coordinator, on offsets partition 0 of `log` (leader epoch 1).
fn first_coordinator(log: &SharedOffsetsLog) -> Harness {
    let mut c = GroupCoordinator::with_offsets_log(config(), log.clone());
    c.load_partition(0, 0, 1, 0);
    Harness::with(c)
}

/// The coordinator the group moves to: it loads partition 0 of `log` at 1 s (leader epoch 2).
fn next_coordinator(log: SharedOffsetsLog) -> Harness {
    let mut c = GroupCoordinator::with_offsets_log(config(), log);
    c.set_topics(topics());
    let mut h = Harness::with(c);
    h.now = 1_000;
    h.c.load_partition(h.now, 0, 2, 0);
    h.drain();
    h
}

/// A coordinator move: the group is rebuilt from the offsets log with its epochs, members,
/// assignments and target, and its members carry on at their epochs.
#[test]
fn a_consumer_group_survives_a_coordinator_move() {
    let log = OffsetsLog::new(1).shared();
    let mut h = first_coordinator(&log);
    let (_, all) = h.joined("a", &["t"]);
    h.joined("b", &["t"]);
    h.hb(beat("a", 1, &all)); // a revoking at epoch 1
    let before = h.group().clone();
    h.c.unload_partition(0);
    h.drain();
    assert!(h.c.consumer_group(GROUP).is_none());

    let mut h2 = next_coordinator(log);
    let g = h2.group();
    assert_eq!(
        (g.group_epoch(), g.assignment_epoch()),
        (before.group_epoch(), before.assignment_epoch())
    );
    assert_eq!(g.member("a").unwrap().member_epoch, 1);
    assert_eq!(g.member("a").unwrap().assigned, before.member("a").unwrap().assigned);
    assert_eq!(
        g.member("a").unwrap().pending_revocation,
        before.member("a").unwrap().pending_revocation
    );
    assert_eq!(g.target_of("b"), before.target_of("b"));
    assert_eq!(g.state(), ConsumerGroupState::Reconciling);
    assert!(h2.events.iter().any(|e| matches!(e, ConsumerGroupEvent::GroupLoaded { .. })));
    // a finishes revoking with the new coordinator; b then gets its partitions.
    let a_target = h2.group().target_of("a");
    assert_eq!(h2.hb(beat("a", 1, &a_target)).member_epoch, 2);
    let r = h2.hb(beat("b", 2, &Default::default()));
    assert_eq!(h2.assigned(&r).unwrap(), h2.group().target_of("b"));
    // The loaded members got fresh sessions and the revoking one a rebalance timeout: a silent
    // member is fenced a session after the load.
    h2.advance(45_000);
    assert!(h2.c.consumer_group(GROUP).unwrap().is_empty());
}

/// A coordinator that loads a consumer group arms a session for every member it loads (Kafka
/// schedules each loaded member's session timeout on load): a member that never heartbeats to
/// the new coordinator is fenced a session after the load, not kept for ever. Without those
/// timers a member whose process died during the move would hold its partitions in the loaded
/// group with nothing to remove it.
#[test]
fn loaded_members_that_never_heartbeat_again_expire_a_session_after_the_load() {
    let log = OffsetsLog::new(1).shared();
    let mut h = first_coordinator(&log);
    let (_, all) = h.joined("a", &["t"]);
    h.hb(beat("a", 1, &all));
    h.c.unload_partition(0);
    h.drain();

    let mut h2 = next_coordinator(log);
    assert!(h2.group().member("a").is_some());
    h2.advance(config().consumer_session_timeout_ms as u64 + 1_000);
    assert!(h2.c.consumer_group(GROUP).is_none_or(|g| g.member("a").is_none()));
}

#[test]
fn the_heartbeat_answer_waits_for_its_append_and_fails_if_the_partition_moves() {
    let log = OffsetsLog::new(1).shared();
    let cfg = groupsim_coordinator::CoordinatorConfig { offsets_append_delay_ms: 5, ..config() };
    let mut c = GroupCoordinator::with_offsets_log(cfg, log);
    c.load_partition(0, 0, 1, 0);
    let mut h = Harness::with(c);
    let id = h.send(1, join("a", &["t"]));
    assert!(h.response(id).is_none(), "answered once the append completes");
    h.advance(5);
    assert!(
        matches!(h.response(id), Some(ResponseKind::ConsumerGroupHeartbeat(r)) if r.error_code == 0)
    );
    let id = h.send(1, join("b", &["t"]));
    h.c.unload_partition(0);
    h.drain();
    assert!(matches!(h.response(id),
        Some(ResponseKind::ConsumerGroupHeartbeat(r)) if r.error_code == E::NotCoordinator.code()));
}
