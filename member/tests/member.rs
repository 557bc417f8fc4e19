//! Behaviour of the sans-IO member, driven with hand-built answers at chosen instants.

mod common;

use common::*;
use groupsim_member::{
    Member, MemberConfig, MemberEvent, MemberOutput, RequestFailure, RequestId, SentUnder, Target,
};
use groupsim_wire::consumer_protocol::decode_assignment;
use kafka_protocol::messages::RequestKind;

fn position_events(outs: &[MemberOutput]) -> Vec<(i32, Option<i64>, i64)> {
    events(outs)
        .into_iter()
        .filter_map(|e| match e {
            MemberEvent::PositionInitialized { partition, committed, position, .. } => {
                Some((partition.partition, committed, position))
            }
            _ => None,
        })
        .collect()
}

/// Index of the first line of `summary` starting with `prefix`.
fn pos(summary: &[String], prefix: &str) -> usize {
    summary
        .iter()
        .position(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no `{prefix}` in {summary:#?}"))
}

/// A follower owning `t-0` from offset 10 that fetched and processed 10..=14 (done at 10 ms).
fn follower_with_processed_records(h: &mut H) {
    let o = join_follower(h, &[0], &[(0, 10)]);
    let (id, target, req) = one(&o, "Fetch");
    assert_eq!(target, Target::Broker(1));
    assert_eq!(fetch_positions(&req), vec![("t".to_string(), 0, 10)]);
    h.respond(id, fetch_answer(&[(0, 0, 10..15)]));
    let o = h.advance_to(10);
    assert!(events(&o).iter().any(|e| matches!(
        e,
        MemberEvent::RecordsProcessed { first_offset: 10, last_offset: 14, generation: 1, .. }
    )));
}

#[test]
fn join_sends_member_id_required_rejoin_with_given_id() {
    let mut h = H::new(config());
    h.m.start(0);
    let o = h.out();
    let (id, _, _) = one(&o, "Metadata");
    let o = h.respond(id, metadata(&[("t", 4, 1)]));
    let (id, _, _) = one(&o, "FindCoordinator");
    let o = h.respond(id, find_coordinator(0));
    let MemberOutput::Send { id, target, request: RequestKind::JoinGroup(join), timeout_ms } = o
        .iter()
        .find(|x| matches!(x, MemberOutput::Send { request: RequestKind::JoinGroup(_), .. }))
        .unwrap()
        .clone()
    else {
        unreachable!()
    };
    assert_eq!(target, Target::Coordinator(0));
    assert_eq!(timeout_ms, 30_000 + 5_000, "JoinGroup waits rebalance timeout + request timeout");
    assert_eq!(join.member_id.as_str(), "");
    assert_eq!(join.protocol_type.as_str(), "consumer");
    assert_eq!(join.group_instance_id, None);
    assert_eq!(
        join.protocols.iter().map(|p| p.name.to_string()).collect::<Vec<_>>(),
        vec!["range", "roundrobin"]
    );
    assert_eq!((join.session_timeout_ms, join.rebalance_timeout_ms), (10_000, 30_000));

    let o = h.respond(id, join_err(MEMBER_ID_REQUIRED, "m-1"));
    let (_, _, RequestKind::JoinGroup(again)) = one(&o, "JoinGroup") else { unreachable!() };
    assert_eq!(again.member_id.as_str(), "m-1");
    assert_eq!(h.m.member_id(), "m-1");
}

#[test]
fn leader_computes_assignment_and_syncs() {
    let mut h = H::new(config());
    let (id, _, _) = to_first_join(&mut h);
    let o = h.respond(id, join_ok("m-0", 1, "m-0", "range", &[("m-0", &["t"]), ("m-1", &["t"])]));
    let ev = events(&o);
    assert!(ev
        .iter()
        .any(|e| matches!(e, MemberEvent::Joined { is_leader: true, generation: 1, .. })));
    let expected = vec![
        ("m-0".to_string(), vec![tp("t", 0), tp("t", 1)]),
        ("m-1".to_string(), vec![tp("t", 2), tp("t", 3)]),
    ];
    assert!(ev.contains(&MemberEvent::AssignmentComputed {
        generation: 1,
        protocol: "range".into(),
        assignments: expected.clone()
    }));
    let (_, target, RequestKind::SyncGroup(sync)) = one(&o, "SyncGroup") else { unreachable!() };
    assert_eq!(target, Target::Coordinator(0));
    assert_eq!((sync.generation_id, sync.member_id.as_str()), (1, "m-0"));
    let sent: Vec<(String, Vec<_>)> = sync
        .assignments
        .iter()
        .map(|a| (a.member_id.to_string(), decode_assignment(&a.assignment).unwrap().partitions))
        .collect();
    assert_eq!(sent, expected);
}

#[test]
fn leader_uses_roundrobin_when_the_coordinator_picks_it() {
    let mut h = H::new(config());
    let (id, _, _) = to_first_join(&mut h);
    let o =
        h.respond(id, join_ok("m-0", 1, "m-0", "roundrobin", &[("m-0", &["t"]), ("m-1", &["t"])]));
    assert!(events(&o).contains(&MemberEvent::AssignmentComputed {
        generation: 1,
        protocol: "roundrobin".into(),
        assignments: vec![
            ("m-0".to_string(), vec![tp("t", 0), tp("t", 2)]),
            ("m-1".to_string(), vec![tp("t", 1), tp("t", 3)]),
        ],
    }));
}

#[test]
fn leader_fetches_metadata_for_topics_only_other_members_subscribe() {
    let mut h = H::new(config());
    let (id, _, _) = to_first_join(&mut h);
    let o =
        h.respond(id, join_ok("m-0", 1, "m-0", "range", &[("m-0", &["t"]), ("m-1", &["t", "u"])]));
    assert!(sent(&o, "SyncGroup").is_empty(), "must not assign before knowing topic u");
    // Metadata is rate-limited to one per retry backoff.
    let o = h.advance(100);
    let (id, _, RequestKind::Metadata(md)) = one(&o, "Metadata") else { unreachable!() };
    let names: Vec<String> =
        md.topics.unwrap().iter().map(|t| t.name.as_ref().unwrap().0.to_string()).collect();
    assert_eq!(names, vec!["t", "u"]);
    let o = h.respond(id, metadata(&[("t", 2, 1), ("u", 2, 1)]));
    assert!(events(&o).contains(&MemberEvent::AssignmentComputed {
        generation: 1,
        protocol: "range".into(),
        assignments: vec![
            ("m-0".to_string(), vec![tp("t", 0)]),
            ("m-1".to_string(), vec![tp("t", 1), tp("u", 0), tp("u", 1)]),
        ],
    }));
    one(&o, "SyncGroup");
}

#[test]
fn follower_syncs_with_empty_assignments() {
    let mut h = H::new(config());
    let (id, _, _) = to_first_join(&mut h);
    let o = h.respond(id, join_ok("m-1", 3, "m-0", "range", &[]));
    assert!(events(&o)
        .iter()
        .any(|e| matches!(e, MemberEvent::Joined { is_leader: false, generation: 3, .. })));
    assert!(!events(&o).iter().any(|e| matches!(e, MemberEvent::AssignmentComputed { .. })));
    let (id, _, RequestKind::SyncGroup(sync)) = one(&o, "SyncGroup") else { unreachable!() };
    assert!(sync.assignments.is_empty());
    assert_eq!((sync.generation_id, sync.member_id.as_str()), (3, "m-1"));
    let o = h.respond(id, sync_ok(&[tp("t", 2)]));
    assert!(events(&o).contains(&MemberEvent::Assigned {
        member_id: "m-1".into(),
        generation: 3,
        partitions: vec![tp("t", 2)]
    }));
    assert_eq!(h.m.assigned(), &[tp("t", 2)]);
}

#[test]
fn assigned_partitions_start_at_committed_offset_or_earliest() {
    let mut h = H::new(config());
    let o = join_follower(&mut h, &[0, 1], &[(0, 42), (1, -1)]);
    assert_eq!(position_events(&o), vec![(0, Some(42), 42)]);
    let (id, target, RequestKind::ListOffsets(lo)) = one(&o, "ListOffsets") else { unreachable!() };
    assert_eq!(target, Target::Broker(1), "ListOffsets goes to the partition leader");
    assert_eq!(lo.replica_id.0, -1);
    assert_eq!(lo.topics[0].partitions[0].partition_index, 1);
    assert_eq!(lo.topics[0].partitions[0].timestamp, -2, "earliest");
    let (fetch_id, _, req) = one(&o, "Fetch");
    assert_eq!(fetch_positions(&req), vec![("t".to_string(), 0, 42)]);

    let o = h.respond(id, list_offsets(&[(1, 7)]));
    assert_eq!(position_events(&o), vec![(1, None, 7)]);
    // The node already has a fetch in flight; once it is answered both partitions are fetched.
    let o = h.respond(fetch_id, fetch_answer(&[(0, 0, 0..0)]));
    assert!(sent(&o, "Fetch").is_empty(), "an empty answer backs off");
    let o = h.advance(100);
    let (_, _, req) = one(&o, "Fetch");
    assert_eq!(fetch_positions(&req), vec![("t".to_string(), 0, 42), ("t".to_string(), 1, 7)]);
}

/// An empty Fetch answer paces the next Fetch from when the request went out: a broker that
/// held the request for its `fetch.max.wait.ms` (Kafka's long poll) is asked again at once, as
/// the Java consumer does; one that answered empty at once is asked again only
/// `fetch_backoff_ms` after the request, so a broker that never waits is not asked in a loop.
#[test]
fn an_empty_fetch_is_sent_again_at_once_after_a_held_answer_and_paced_after_a_quick_one() {
    let mut h = H::new(config());
    let o = join_follower(&mut h, &[0], &[(0, 10)]);
    let (id, _, _) = one(&o, "Fetch");
    let sent_at = h.now;
    // Answered empty at once: the next Fetch waits out the backoff from the send.
    let o = h.respond(id, fetch_answer(&[(0, 0, 10..10)]));
    assert!(sent(&o, "Fetch").is_empty(), "no Fetch straight after a quick empty answer");
    let o = h.advance_to(sent_at + config().fetch_backoff_ms - 1);
    assert!(sent(&o, "Fetch").is_empty());
    let o = h.advance_to(sent_at + config().fetch_backoff_ms);
    let (id, _, _) = one(&o, "Fetch");
    // Held by the broker past the backoff, then answered empty: fetched again at once.
    h.advance(500);
    let o = h.respond(id, fetch_answer(&[(0, 0, 10..10)]));
    let (_, _, next) = one(&o, "Fetch");
    assert_eq!(fetch_positions(&next), vec![("t".to_string(), 0, 10)]);
}

/// Java's consumer keeps a completed fetch and hands it to the application `max.poll.records`
/// at a time, and fetches a partition again only once none of its records is left buffered. So
/// the member skips the records below its position (the broker answers from the batch start),
/// processes the rest of the answer in runs of `max_records_per_fetch`, in offset order, and
/// asks for the partition again, from past the answer's last record, when the last run starts.
#[test]
fn a_fetched_answer_is_kept_and_handed_out_in_runs_the_next_fetch_once_the_last_starts() {
    let mut cfg = config();
    cfg.max_records_per_fetch = 3;
    let mut h = H::new(cfg);
    let o = join_follower(&mut h, &[0], &[(0, 12)]);
    let (id, _, _) = one(&o, "Fetch");
    let o = h.respond(id, fetch_answer(&[(0, 0, 10..20)]));
    assert!(sent(&o, "Fetch").is_empty(), "the answer's records are still buffered");
    let mut runs = Vec::new();
    let mut fetched_after = None;
    for _ in 0..1_000 {
        let o = h.advance(1);
        for e in events(&o) {
            if let MemberEvent::RecordsProcessed { first_offset, last_offset, .. } = e {
                runs.push((first_offset, last_offset));
            }
        }
        if let Some((_, _, next)) = sent(&o, "Fetch").first() {
            assert_eq!(fetch_positions(next), vec![("t".to_string(), 0, 20)]);
            fetched_after.get_or_insert(runs.len());
        }
        if runs.len() == 3 {
            break;
        }
    }
    assert_eq!(runs, [(12, 14), (15, 17), (18, 19)]);
    assert_eq!(fetched_after, Some(2), "fetched again as the last run started, not before");
}

#[test]
fn processed_records_are_committed_on_interval() {
    let mut h = H::new(config());
    follower_with_processed_records(&mut h);
    let o = h.advance_to(999);
    assert!(sent(&o, "OffsetCommit").is_empty());
    let o = h.advance_to(1000);
    let (id, target, req) = one(&o, "OffsetCommit");
    assert_eq!(target, Target::Coordinator(0));
    assert_eq!(commit_offsets(&req), vec![("t".to_string(), 0, 15)]);
    let RequestKind::OffsetCommit(c) = &req else { unreachable!() };
    assert_eq!((c.generation_id_or_member_epoch, c.member_id.as_str()), (1, "m-1"));
    assert!(events(&o).contains(&MemberEvent::CommitSent {
        member_id: "m-1".into(),
        generation: 1,
        partition: tp("t", 0),
        offset: 15
    }));
    let o = h.respond(id, commit_answer(&req, 0));
    assert!(events(&o).contains(&MemberEvent::CommitAcked {
        member_id: "m-1".into(),
        generation: 1,
        partition: tp("t", 0),
        offset: 15
    }));
    // Nothing new processed: the next interval commits nothing.
    let o = h.advance_to(2500);
    assert!(sent(&o, "OffsetCommit").is_empty());
}

#[test]
fn heartbeats_are_sent_every_interval_while_in_a_generation() {
    let mut h = H::new(config());
    join_follower(&mut h, &[], &[]);
    let o = h.advance_to(2999);
    assert!(sent(&o, "Heartbeat").is_empty());
    let o = h.advance_to(3000);
    let (id, target, RequestKind::Heartbeat(hb)) = one(&o, "Heartbeat") else { unreachable!() };
    assert_eq!(target, Target::Coordinator(0));
    assert_eq!((hb.generation_id, hb.member_id.as_str()), (1, "m-1"));
    h.respond(id, heartbeat(0));
    let o = h.advance_to(6000);
    assert_eq!(sent(&o, "Heartbeat").len(), 1);
}

#[test]
fn rebalance_in_progress_on_heartbeat_commits_then_rejoins() {
    let mut cfg = config();
    cfg.commit_interval_ms = 60_000;
    let mut h = H::new(cfg);
    follower_with_processed_records(&mut h);
    let o = h.advance_to(3000);
    let (id, _, _) = one(&o, "Heartbeat");
    let o = h.respond(id, heartbeat(REBALANCE_IN_PROGRESS));
    // Eager revoke: the processed offsets are committed first, and the join waits for the answer.
    let (cid, _, req) = one(&o, "OffsetCommit");
    assert_eq!(commit_offsets(&req), vec![("t".to_string(), 0, 15)]);
    assert!(sent(&o, "JoinGroup").is_empty());
    assert!(!h.m.is_stable());
    let o = h.respond(cid, commit_answer(&req, 0));
    let s = summary(&o);
    assert!(pos(&s, "event CommitAcked") < pos(&s, "event Revoked"));
    assert!(pos(&s, "event Revoked") < pos(&s, "send JoinGroup"));
    assert!(events(&o).contains(&MemberEvent::Revoked {
        member_id: "m-1".into(),
        generation: 1,
        partitions: vec![tp("t", 0)]
    }));
    let (_, _, RequestKind::JoinGroup(j)) = one(&o, "JoinGroup") else { unreachable!() };
    assert_eq!(j.member_id.as_str(), "m-1", "rejoins with its member id");
    assert!(h.m.assigned().is_empty());
}

#[test]
fn batch_in_progress_finishes_before_the_revoke_commit() {
    let mut cfg = config();
    cfg.commit_interval_ms = 60_000;
    cfg.heartbeat_interval_ms = 5;
    cfg.processing_ms_per_record = (100, 100);
    let mut h = H::new(cfg);
    let o = join_follower(&mut h, &[0], &[(0, 10)]);
    let (id, _, _) = one(&o, "Fetch");
    h.respond(id, fetch_answer(&[(0, 0, 10..15)]));
    let o = h.advance_to(5);
    let (hid, _, _) = one(&o, "Heartbeat");
    let o = h.respond(hid, heartbeat(REBALANCE_IN_PROGRESS));
    assert!(sent(&o, "OffsetCommit").is_empty(), "the batch in progress is atomic");
    let o = h.advance_to(499);
    assert!(sent(&o, "OffsetCommit").is_empty() && sent(&o, "JoinGroup").is_empty());
    let o = h.advance_to(500);
    let s = summary(&o);
    assert!(pos(&s, "event RecordsProcessed") < pos(&s, "send OffsetCommit"));
    let (_, _, req) = one(&o, "OffsetCommit");
    assert_eq!(commit_offsets(&req), vec![("t".to_string(), 0, 15)]);
}

#[test]
fn illegal_generation_on_commit_loses_partitions_without_commit() {
    let mut h = H::new(config());
    follower_with_processed_records(&mut h);
    let o = h.advance_to(1000);
    let (id, _, req) = one(&o, "OffsetCommit");
    let o = h.respond(id, commit_answer(&req, ILLEGAL_GENERATION));
    let ev = events(&o);
    assert!(ev.contains(&MemberEvent::CommitFailed {
        member_id: "m-1".into(),
        generation: 1,
        partition: tp("t", 0),
        offset: 15,
        error: "ILLEGAL_GENERATION".into()
    }));
    assert!(ev.contains(&MemberEvent::GenerationReset {
        member_id: "m-1".into(),
        generation: 1,
        error: "ILLEGAL_GENERATION".into(),
        reset_member_id: false,
        answer_about: None,
    }));
    assert!(ev.iter().any(
        |e| matches!(e, MemberEvent::Lost { partitions, .. } if partitions == &vec![tp("t", 0)])
    ));
    assert!(!ev.iter().any(|e| matches!(e, MemberEvent::Revoked { .. })));
    assert!(sent(&o, "OffsetCommit").is_empty(), "lost partitions are not committed");
    let (_, _, RequestKind::JoinGroup(j)) = one(&o, "JoinGroup") else { unreachable!() };
    assert_eq!(j.member_id.as_str(), "m-1");
    assert_eq!(h.m.generation(), -1);
}

#[test]
fn unknown_member_id_on_heartbeat_resets_member_id_and_rejoins() {
    let mut h = H::new(config());
    join_follower(&mut h, &[0], &[(0, 0)]);
    let o = h.advance_to(3000);
    let (id, _, _) = one(&o, "Heartbeat");
    let o = h.respond(id, heartbeat(UNKNOWN_MEMBER_ID));
    assert!(events(&o)
        .iter()
        .any(|e| matches!(e, MemberEvent::GenerationReset { reset_member_id: true, .. })));
    assert!(events(&o).iter().any(|e| matches!(e, MemberEvent::Lost { .. })));
    let (_, _, RequestKind::JoinGroup(j)) = one(&o, "JoinGroup") else { unreachable!() };
    assert_eq!(j.member_id.as_str(), "");
}

#[test]
fn stale_generation_error_does_not_reset_current_generation() {
    // Mechanism (KAFKA-9823): a heartbeat sent in generation 1 is answered only after the
    // member (here the leader, which rebalances on a partition-count change) has rejoined into
    // generation 2. Its ILLEGAL_GENERATION is about generation 1; if
    // the member applied it, it would drop a perfectly valid generation 2 and rebalance again.
    let (mut h, stale_hb) = leader_in_generation_2_with_a_heartbeat_from_1(config());
    let o = h.respond(stale_hb, heartbeat(ILLEGAL_GENERATION));
    assert!(events(&o).is_empty(), "{:?}", summary(&o));
    assert!(sent(&o, "JoinGroup").is_empty());
    assert_eq!(h.m.generation(), 2);
    assert_eq!(h.m.assigned(), &[tp("t", 1)]);
}

#[test]
fn bug_resets_generation_on_stale_response_drops_the_current_generation() {
    // Mechanism (KAFKA-9823, bug switch `resets_generation_on_stale_response`): the same stale
    // answer is applied to generation 2. The reset records which membership the answer was
    // about, so the checker can tell it from a reset the coordinator asked for.
    let mut cfg = config();
    cfg.bugs.resets_generation_on_stale_response = true;
    let (mut h, stale_hb) = leader_in_generation_2_with_a_heartbeat_from_1(cfg);
    let o = h.respond(stale_hb, heartbeat(ILLEGAL_GENERATION));
    assert!(events(&o).contains(&MemberEvent::GenerationReset {
        member_id: "m-0".into(),
        generation: 2,
        error: "ILLEGAL_GENERATION".into(),
        reset_member_id: false,
        answer_about: Some(SentUnder { member_id: "m-0".into(), generation: 1 }),
    }));
    assert_eq!(h.m.generation(), -1);
}

/// A leader in generation 2 (after a partition-count rebalance) holding the id of a heartbeat
/// it sent in generation 1 and has not had answered yet.
fn leader_in_generation_2_with_a_heartbeat_from_1(mut cfg: MemberConfig) -> (H, RequestId) {
    cfg.metadata_max_age_ms = 4_000;
    let mut h = H::new(cfg);
    let (id, _, _) = to_first_join(&mut h);
    let o = h.respond(id, join_ok("m-0", 1, "m-0", "range", &[("m-0", &["t"])]));
    let (id, _, _) = one(&o, "SyncGroup");
    let o = h.respond(id, sync_ok(&[tp("t", 0)]));
    let (id, _, _) = one(&o, "OffsetFetch");
    h.respond(id, offset_fetch(&[(0, 0)]));
    let o = h.advance_to(3000);
    let (stale_hb, _, _) = one(&o, "Heartbeat");
    // A periodic metadata refresh shows a new partition: the leader rebalances.
    let o = h.advance_to(4000);
    let (id, _, _) = one(&o, "Metadata");
    let o = h.respond(id, metadata(&[("t", 5, 1)]));
    assert!(events(&o).iter().any(|e| matches!(e, MemberEvent::Revoked { .. })));
    let (id, _, _) = one(&o, "JoinGroup");
    let o = h.respond(id, join_ok("m-0", 2, "m-0", "range", &[("m-0", &["t"])]));
    let (id, _, _) = one(&o, "SyncGroup");
    h.respond(id, sync_ok(&[tp("t", 1)]));
    assert_eq!(h.m.generation(), 2);
    (h, stale_hb)
}

#[test]
fn not_coordinator_triggers_find_coordinator() {
    let mut h = H::new(config());
    join_follower(&mut h, &[], &[]);
    let o = h.advance_to(3000);
    let (id, _, _) = one(&o, "Heartbeat");
    let o = h.respond(id, heartbeat(NOT_COORDINATOR));
    assert!(events(&o)
        .contains(&MemberEvent::CoordinatorLost { reason: "Heartbeat NOT_COORDINATOR".into() }));
    assert!(o.contains(&MemberOutput::Close(Target::Coordinator(0))));
    assert_eq!(h.m.coordinator(), None);
    assert!(sent(&o, "FindCoordinator").is_empty(), "rediscovery waits retry_backoff_ms");
    let o = h.advance(100);
    let (id, target, _) = one(&o, "FindCoordinator");
    assert!(matches!(target, Target::Broker(_)));
    let o = h.respond(id, find_coordinator(1));
    assert!(events(&o).contains(&MemberEvent::CoordinatorFound { node_id: 1 }));
    assert!(sent(&o, "JoinGroup").is_empty(), "still in its generation: no rejoin");
    let o = h.advance_to(6000);
    let (_, target, RequestKind::Heartbeat(hb)) = one(&o, "Heartbeat") else { unreachable!() };
    assert_eq!(target, Target::Coordinator(1));
    assert_eq!(hb.generation_id, 1);
}

#[test]
fn request_timeout_rediscovers_coordinator() {
    let mut h = H::new(config());
    follower_with_processed_records(&mut h);
    let o = h.advance_to(1000);
    let (commit_id, _, _) = one(&o, "OffsetCommit");
    let o = h.advance_to(3000);
    let (hb_id, _, _) = one(&o, "Heartbeat");
    let o = h.fail(hb_id, RequestFailure::Timeout);
    let ev = events(&o);
    assert!(ev.contains(&MemberEvent::CoordinatorLost { reason: "Heartbeat TIMEOUT".into() }));
    // The commit in flight on the same connection fails with it.
    assert!(ev.contains(&MemberEvent::CommitFailed {
        member_id: "m-1".into(),
        generation: 1,
        partition: tp("t", 0),
        offset: 15,
        error: "DISCONNECTED".into()
    }));
    // The driver's own Disconnected report for it is ignored.
    assert!(h.fail(commit_id, RequestFailure::Disconnected).is_empty());
    let o = h.advance(100);
    let (id, _, _) = one(&o, "FindCoordinator");
    // The commit is retried once the coordinator is back (its retry backoff has passed).
    let o = h.respond(id, find_coordinator(0));
    let (_, _, req) = one(&o, "OffsetCommit");
    assert_eq!(commit_offsets(&req), vec![("t".to_string(), 0, 15)]);
}

#[test]
fn join_group_timeout_rediscovers_then_rejoins() {
    let mut h = H::new(config());
    let (id, _, _) = to_first_join(&mut h);
    let o = h.fail(id, RequestFailure::Timeout);
    assert!(
        events(&o).contains(&MemberEvent::CoordinatorLost { reason: "JoinGroup TIMEOUT".into() })
    );
    let o = h.advance(100);
    let (id, _, _) = one(&o, "FindCoordinator");
    let o = h.respond(id, find_coordinator(1));
    let (_, target, _) = one(&o, "JoinGroup");
    assert_eq!(target, Target::Coordinator(1));
}

#[test]
fn coordinator_load_in_progress_on_join_backs_off_and_retries() {
    let mut h = H::new(config());
    let (id, _, _) = to_first_join(&mut h);
    let o = h.respond(id, join_err(COORDINATOR_LOAD_IN_PROGRESS, ""));
    assert!(sent(&o, "JoinGroup").is_empty());
    assert!(events(&o).is_empty(), "load in progress keeps the coordinator");
    let o = h.advance(100);
    one(&o, "JoinGroup");
}

#[test]
fn leave_commits_then_sends_leave_group() {
    let mut h = H::new(config());
    follower_with_processed_records(&mut h);
    h.m.leave(h.now);
    let o = h.out();
    let (cid, _, req) = one(&o, "OffsetCommit");
    assert_eq!(commit_offsets(&req), vec![("t".to_string(), 0, 15)]);
    assert!(sent(&o, "LeaveGroup").is_empty());
    let o = h.respond(cid, commit_answer(&req, 0));
    let s = summary(&o);
    assert!(pos(&s, "event CommitAcked") < pos(&s, "event Revoked"));
    assert!(pos(&s, "event Revoked") < pos(&s, "send LeaveGroup"));
    let (id, target, RequestKind::LeaveGroup(leave)) = one(&o, "LeaveGroup") else {
        unreachable!()
    };
    assert_eq!(target, Target::Coordinator(0));
    assert_eq!(leave.members.len(), 1);
    assert_eq!(leave.members[0].member_id.as_str(), "m-1");
    assert!(!h.m.is_finished());
    let o = h.respond(id, leave_ok());
    assert_eq!(events(&o), vec![MemberEvent::Left { member_id: "m-1".into() }]);
    assert!(h.m.is_finished());
    assert_eq!(h.m.poll_timeout(), None);
}

/// KIP-345: since Kafka 2.3 a static member (group.instance.id) never sends LeaveGroup on close
/// (the Java consumer's `maybeLeaveGroup` sends one for dynamic members only; librdkafka does
/// the same), so a bounce back within the session timeout replaces it without a rebalance. It
/// still commits and revokes before it stops.
#[test]
fn a_static_member_leaving_commits_and_revokes_but_sends_no_leave_group() {
    let mut c = config();
    c.group_instance_id = Some("i-1".into());
    let mut h = H::new(c);
    follower_with_processed_records(&mut h);
    h.m.leave(h.now);
    let o = h.out();
    let (cid, _, req) = one(&o, "OffsetCommit");
    let o = h.respond(cid, commit_answer(&req, 0));
    let s = summary(&o);
    assert!(pos(&s, "event CommitAcked") < pos(&s, "event Revoked"));
    assert!(sent(&o, "LeaveGroup").is_empty(), "{s:?}");
    assert!(events(&o).contains(&MemberEvent::Left { member_id: "m-1".into() }));
    assert!(h.m.is_finished());
}

#[test]
fn leave_group_timeout_still_finishes() {
    let mut h = H::new(config());
    join_follower(&mut h, &[], &[]);
    h.m.leave(h.now);
    let o = h.out();
    let (id, _, _) = one(&o, "LeaveGroup");
    let o = h.fail(id, RequestFailure::Timeout);
    assert!(events(&o).contains(&MemberEvent::Left { member_id: "m-1".into() }));
    assert!(h.m.is_finished());
}

#[test]
fn leave_before_join_just_stops() {
    let mut h = H::new(config());
    h.m.start(0);
    h.out();
    h.m.leave(0);
    assert!(h.out().is_empty());
    assert!(h.m.is_finished());
}

#[test]
fn fetch_out_of_range_resets_to_earliest() {
    let mut h = H::new(config());
    let o = join_follower(&mut h, &[0], &[(0, 100)]);
    let (id, _, _) = one(&o, "Fetch");
    let o = h.respond(id, fetch_answer(&[(0, OFFSET_OUT_OF_RANGE, 0..0)]));
    let (id, target, RequestKind::ListOffsets(lo)) = one(&o, "ListOffsets") else { unreachable!() };
    assert_eq!(target, Target::Broker(1));
    assert_eq!(lo.topics[0].partitions[0].timestamp, -2);
    let o = h.respond(id, list_offsets(&[(0, 20)]));
    assert_eq!(position_events(&o), vec![(0, Some(100), 20)]);
    let o = h.advance(100);
    let (_, _, req) = one(&o, "Fetch");
    assert_eq!(fetch_positions(&req), vec![("t".to_string(), 0, 20)]);
}

#[test]
fn not_leader_on_fetch_refreshes_metadata_and_follows_the_new_leader() {
    let mut h = H::new(config());
    let o = join_follower(&mut h, &[0], &[(0, 5)]);
    let (id, _, _) = one(&o, "Fetch");
    let o = h.respond(id, fetch_answer(&[(0, NOT_LEADER_OR_FOLLOWER, 0..0)]));
    assert!(sent(&o, "Metadata").is_empty(), "one Metadata per retry backoff");
    let o = h.advance(100);
    let (id, _, _) = one(&o, "Metadata");
    // Until the new metadata arrives the member retries the leader it knows.
    let (old_fetch, target, _) = one(&o, "Fetch");
    assert_eq!(target, Target::Broker(1));
    let o = h.respond(id, metadata(&[("t", 4, 0)]));
    assert!(sent(&o, "JoinGroup").is_empty(), "followers do not rebalance on metadata");
    let o = h.respond(old_fetch, fetch_answer(&[(0, NOT_LEADER_OR_FOLLOWER, 0..0)]));
    let (_, target, req) = one(&o, "Fetch");
    assert_eq!(target, Target::Broker(0));
    assert_eq!(fetch_positions(&req), vec![("t".to_string(), 0, 5)]);
}

#[test]
fn garbled_assignment_is_handled_without_panic() {
    let mut h = H::new(config());
    let (id, _, _) = to_first_join(&mut h);
    let o = h.respond(id, join_ok("m-1", 1, "m-0", "range", &[]));
    let (id, _, _) = one(&o, "SyncGroup");
    let o = h.respond(id, sync_raw(&[0, 1, 0xff]));
    assert!(!events(&o).iter().any(|e| matches!(e, MemberEvent::Assigned { .. })));
    assert!(sent(&o, "JoinGroup").is_empty());
    let o = h.advance(100);
    let (_, _, RequestKind::JoinGroup(j)) = one(&o, "JoinGroup") else { unreachable!() };
    assert_eq!(j.member_id.as_str(), "m-1");
}

#[test]
fn answer_of_the_wrong_kind_is_handled_without_panic() {
    let mut h = H::new(config());
    join_follower(&mut h, &[], &[]);
    let o = h.advance_to(3000);
    let (id, _, _) = one(&o, "Heartbeat");
    let o = h.respond(id, leave_ok());
    assert!(events(&o).is_empty());
    assert_eq!(h.m.coordinator(), Some(0));
    let o = h.advance(100);
    one(&o, "Heartbeat");
}

#[test]
fn fenced_instance_id_is_fatal() {
    let mut cfg = config();
    cfg.group_instance_id = Some("instance-1".into());
    let mut h = H::new(cfg);
    let (id, _, RequestKind::JoinGroup(j)) = to_first_join(&mut h) else { unreachable!() };
    assert_eq!(j.group_instance_id.as_ref().map(|s| s.as_str()), Some("instance-1"));
    let o = h.respond(id, join_ok("m-1", 1, "m-0", "range", &[]));
    let (id, _, _) = one(&o, "SyncGroup");
    h.respond(id, sync_ok(&[tp("t", 0)]));
    let o = h.advance_to(3000);
    let hb = sent(&o, "Heartbeat");
    let o = h.respond(hb[0].0, heartbeat(FENCED_INSTANCE_ID));
    let ev = events(&o);
    assert!(ev.iter().any(|e| matches!(e, MemberEvent::Lost { .. })));
    assert!(ev.contains(&MemberEvent::Fatal {
        member_id: "m-1".into(),
        generation: 1,
        error: "FENCED_INSTANCE_ID".into()
    }));
    assert!(h.m.is_finished());
}

#[test]
fn sync_rebalance_in_progress_rejoins_at_once() {
    let mut h = H::new(config());
    let (id, _, _) = to_first_join(&mut h);
    let o = h.respond(id, join_ok("m-1", 1, "m-0", "range", &[]));
    let (id, _, _) = one(&o, "SyncGroup");
    let o = h.respond(id, sync_err(REBALANCE_IN_PROGRESS));
    let (_, _, RequestKind::JoinGroup(j)) = one(&o, "JoinGroup") else { unreachable!() };
    assert_eq!(j.member_id.as_str(), "m-1");
}

#[test]
fn processing_times_come_from_the_seed() {
    let run = |seed: u64| {
        let mut cfg = config();
        cfg.processing_ms_per_record = (1, 5);
        let mut h = H { m: Member::new(cfg, seed), now: 0 };
        let o = join_follower(&mut h, &[0], &[(0, 0)]);
        let (id, _, _) = one(&o, "Fetch");
        h.respond(id, fetch_answer(&[(0, 0, 0..50)]));
        h.m.poll_timeout().unwrap()
    };
    let done = run(3);
    assert_eq!(done, run(3));
    assert!((50..=250).contains(&done), "{done}");
}

#[test]
fn leader_rejoins_when_a_partition_count_changes_but_not_when_leaders_move() {
    let mut cfg = config();
    cfg.metadata_max_age_ms = 1_000;
    cfg.commit_interval_ms = 60_000;
    let mut h = H::new(cfg);
    let (id, _, _) = to_first_join(&mut h);
    let o = h.respond(id, join_ok("m-0", 1, "m-0", "range", &[("m-0", &["t"])]));
    let (id, _, _) = one(&o, "SyncGroup");
    h.respond(id, sync_ok(&[tp("t", 0)]));
    let o = h.advance_to(1000);
    let (id, _, _) = one(&o, "Metadata");
    let o = h.respond(id, metadata(&[("t", 4, 0)]));
    assert!(sent(&o, "JoinGroup").is_empty(), "a leader move is not a rebalance");
    let o = h.advance_to(2000);
    let (id, _, _) = one(&o, "Metadata");
    let o = h.respond(id, metadata(&[("t", 6, 0)]));
    one(&o, "JoinGroup");
}

/// KIP-814 (KAFKA-13435): a replaced static leader answered with SkipAssignment (JoinGroup
/// v9+) must not compute an assignment (the coordinator keeps the generation's) yet must lead:
/// the Java consumer's `onLeaderElected` takes an assignment snapshot of the members' topics,
/// so this process, not the old one, rebalances the group when a topic grows. Without the
/// snapshot no member watches the partition counts and new partitions stay unassigned.
#[test]
fn leader_told_to_skip_the_assignment_syncs_empty_and_still_watches_partition_counts() {
    let mut cfg = config();
    cfg.metadata_max_age_ms = 1_000;
    cfg.commit_interval_ms = 60_000;
    let mut h = H::new(cfg);
    let (id, _, _) = to_first_join(&mut h);
    let kafka_protocol::messages::ResponseKind::JoinGroup(join) =
        join_ok("m-0", 4, "m-0", "range", &[("m-0", &["t"]), ("m-1", &["t"])])
    else {
        unreachable!()
    };
    let o = h.respond(
        id,
        kafka_protocol::messages::ResponseKind::JoinGroup(join.with_skip_assignment(true)),
    );
    let ev = events(&o);
    assert!(ev
        .iter()
        .any(|e| matches!(e, MemberEvent::Joined { is_leader: true, generation: 4, .. })));
    assert!(!ev.iter().any(|e| matches!(e, MemberEvent::AssignmentComputed { .. })));
    let (id, _, RequestKind::SyncGroup(sync)) = one(&o, "SyncGroup") else { unreachable!() };
    assert!(sync.assignments.is_empty(), "the coordinator keeps the assignment");
    let o = h.respond(id, sync_ok(&[tp("t", 0), tp("t", 1)]));
    assert!(events(&o).contains(&MemberEvent::Assigned {
        member_id: "m-0".into(),
        generation: 4,
        partitions: vec![tp("t", 0), tp("t", 1)]
    }));
    let o = h.advance_to(1000);
    let (id, _, _) = one(&o, "Metadata");
    let o = h.respond(id, metadata(&[("t", 6, 0)]));
    one(&o, "JoinGroup");
}

#[test]
fn join_answer_after_leave_is_ignored() {
    let mut h = H::new(config());
    let (id, _, _) = to_first_join(&mut h);
    let o = h.respond(id, join_err(MEMBER_ID_REQUIRED, "m-1"));
    let (join_id, _, _) = one(&o, "JoinGroup");
    h.m.leave(h.now);
    let o = h.out();
    let (leave_id, _, _) = one(&o, "LeaveGroup");
    let o = h.respond(join_id, join_ok("m-1", 1, "m-1", "range", &[("m-1", &["t"])]));
    assert!(o.is_empty(), "{:?}", summary(&o));
    let o = h.respond(leave_id, leave_ok());
    assert_eq!(events(&o), vec![MemberEvent::Left { member_id: "m-1".into() }]);
}

#[test]
fn member_is_send_so_a_driver_task_can_own_it() {
    fn assert_send<T: Send>() {}
    assert_send::<Member>();
}

#[test]
fn unknown_member_id_on_join_resets_member_id_and_rejoins_at_once() {
    let mut h = H::new(config());
    let (id, _, _) = to_first_join(&mut h);
    let o = h.respond(id, join_err(MEMBER_ID_REQUIRED, "m-1"));
    let (id, _, _) = one(&o, "JoinGroup");
    let o = h.respond(id, join_err(UNKNOWN_MEMBER_ID, "m-1"));
    assert!(events(&o)
        .iter()
        .any(|e| matches!(e, MemberEvent::GenerationReset { reset_member_id: true, .. })));
    let (_, _, RequestKind::JoinGroup(j)) = one(&o, "JoinGroup") else { unreachable!() };
    assert_eq!(j.member_id.as_str(), "");
}

#[test]
fn heartbeat_and_commit_deadlines_wake_the_member_only_when_they_can_act() {
    let mut cfg = config();
    cfg.commit_interval_ms = 60_000;
    let mut h = H::new(cfg);
    join_follower(&mut h, &[], &[]);
    assert_eq!(h.m.poll_timeout(), Some(100), "the Metadata backoff runs out");
    h.advance_to(2_999);
    assert_eq!(h.m.poll_timeout(), Some(3_000), "the first heartbeat");
    let o = h.advance_to(3_000);
    let (id, _, _) = one(&o, "Heartbeat");
    // The next heartbeat is due at 6 000, but not while this one is awaited.
    assert_eq!(h.m.poll_timeout(), Some(60_000), "the auto-commit");
    h.now = 3_010;
    h.respond(id, heartbeat(0));
    assert_eq!(h.m.poll_timeout(), Some(6_000));
    // Without a coordinator neither heartbeat nor commit wakes the member.
    let o = h.advance_to(6_000);
    let (id, _, _) = one(&o, "Heartbeat");
    let o = h.fail(id, RequestFailure::Disconnected);
    assert!(events(&o).iter().any(|e| matches!(e, MemberEvent::CoordinatorLost { .. })));
    assert_eq!(h.m.poll_timeout(), Some(6_000 + 100), "only the FindCoordinator backoff");
}

/// The Java consumer takes GROUP_MAX_SIZE_REACHED (group.max.size) and
/// INCONSISTENT_GROUP_PROTOCOL (no assignor in common) on JoinGroup as non-retriable: poll
/// throws and the application stops. brod backs off and joins again.
#[test]
fn a_java_member_refused_for_group_size_or_protocol_stops() {
    for code in [
        groupsim_wire::error_codes::GROUP_MAX_SIZE_REACHED,
        groupsim_wire::error_codes::INCONSISTENT_GROUP_PROTOCOL,
    ] {
        let mut h = H::new(config());
        let (id, _, _) = to_first_join(&mut h);
        let o = h.respond(id, join_err(code, ""));
        assert!(
            events(&o).iter().any(|e| matches!(e, MemberEvent::Fatal { .. })),
            "{code}: {:?}",
            summary(&o)
        );
        assert!(h.m.is_finished(), "{code}");
    }
    let mut h = H::new(config().with_profile(groupsim_member::ClientProfile::Brod));
    let (id, _, _) = to_first_join(&mut h);
    let o = h.respond(id, join_err(groupsim_wire::error_codes::GROUP_MAX_SIZE_REACHED, ""));
    assert!(!h.m.is_finished(), "{:?}", summary(&o));
}
