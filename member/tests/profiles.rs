//! Client profiles, fault hooks and bug switches of the sans-IO member, driven with hand-built
//! answers at chosen instants.

mod common;

use common::*;
use groupsim_member::{
    ClientProfile, MemberEvent, MemberFault, MemberOutput, RequestFailure, RequestId,
    TopicPartition,
};
use groupsim_wire::consumer_protocol::{decode_assignment, decode_subscription};
use kafka_protocol::messages::RequestKind;

fn revoked(outs: &[MemberOutput]) -> Vec<(i32, Vec<TopicPartition>)> {
    events(outs)
        .into_iter()
        .filter_map(|e| match e {
            MemberEvent::Revoked { generation, partitions, .. } => Some((generation, partitions)),
            _ => None,
        })
        .collect()
}

#[test]
fn cooperative_keeps_owned_partitions_and_revokes_only_those_taken_away() {
    let mut h = H::new(profile_config(ClientProfile::JavaCooperative));
    assert!(h.m.is_cooperative());
    follower_processed(&mut h, &[0, 1]);
    let o = rebalance_announced(&mut h);
    // Processed offsets are committed before rejoining, under the current generation.
    let (cid, _, req) = one(&o, "OffsetCommit");
    assert_eq!(commit_offsets(&req), vec![("t".to_string(), 0, 15)]);
    let o = h.respond(cid, commit_answer(&req, 0));
    assert!(revoked(&o).is_empty(), "nothing is revoked before the assignment");
    let (jid, _, RequestKind::JoinGroup(join)) = one(&o, "JoinGroup") else { unreachable!() };
    assert_eq!(join.protocols[0].name.as_str(), "cooperative-sticky");
    let sub = decode_subscription(&join.protocols[0].metadata).unwrap();
    assert_eq!(sub.owned_partitions, vec![tp("t", 0), tp("t", 1)]);
    assert_eq!(h.m.assigned(), &[tp("t", 0), tp("t", 1)]);

    let o = h.respond(jid, join_ok("m-1", 2, "m-0", "cooperative-sticky", &[]));
    let (sid, _, _) = one(&o, "SyncGroup");
    let o = h.respond(sid, sync_ok(&[tp("t", 0)]));
    // t-1 was taken away: revoked in generation 2; t-0 kept: no OffsetFetch, fetching goes on
    // from the processed position; and the member rejoins at once for the second rebalance.
    assert_eq!(revoked(&o), vec![(2, vec![tp("t", 1)])]);
    assert!(sent(&o, "OffsetFetch").is_empty(), "{:?}", summary(&o));
    assert_eq!(sent(&o, "JoinGroup").len(), 1, "{:?}", summary(&o));
    let (_, _, RequestKind::JoinGroup(again)) = one(&o, "JoinGroup") else { unreachable!() };
    let sub = decode_subscription(&again.protocols[0].metadata).unwrap();
    assert_eq!(sub.owned_partitions, vec![tp("t", 0)]);
}

/// A Java cooperative member owning t-0 and t-1 that rejoined with t-0's progress (to 15) not
/// committed (the commit before rejoining was refused) and joined generation 2: returns the
/// member and its SyncGroup's id.
fn cooperative_syncing_with_uncommitted_progress() -> (H, RequestId) {
    let mut h = H::new(profile_config(ClientProfile::JavaCooperative));
    follower_processed(&mut h, &[0, 1]);
    let o = rebalance_announced(&mut h);
    let (cid, _, req) = one(&o, "OffsetCommit");
    let o = h.respond(cid, commit_answer(&req, REBALANCE_IN_PROGRESS));
    let (jid, _, _) = one(&o, "JoinGroup");
    let o = h.respond(jid, join_ok("m-1", 2, "m-0", "cooperative-sticky", &[]));
    let (sid, _, _) = one(&o, "SyncGroup");
    (h, sid)
}

/// The Java profile commits in `onPartitionsRevoked`. A cooperative member runs it after the
/// assignment, for the partitions taken away, still owning them: what it processed of them is
/// committed under the new generation, and only then are they revoked.
#[test]
fn cooperative_revoke_callback_commits_the_partitions_taken_away_before_revoking_them() {
    let (mut h, sid) = cooperative_syncing_with_uncommitted_progress();
    let o = h.respond(sid, sync_ok(&[tp("t", 1)]));
    let (cid, _, RequestKind::OffsetCommit(commit)) = one(&o, "OffsetCommit") else {
        unreachable!()
    };
    assert_eq!(commit.generation_id_or_member_epoch, 2);
    let req = RequestKind::OffsetCommit(commit);
    assert_eq!(commit_offsets(&req), vec![("t".to_string(), 0, 15)]);
    assert!(revoked(&o).is_empty(), "t-0 is still owned while the callback commits it");
    assert!(sent(&o, "JoinGroup").is_empty());
    let o = h.respond(cid, commit_answer(&req, 0));
    assert_eq!(revoked(&o), vec![(2, vec![tp("t", 0)])]);
    one(&o, "JoinGroup");
}

/// A cooperative member keeps its partitions through a failed SyncGroup and rejoins. The Java
/// consumer commits before rejoining once per rebalance, from its stable generation
/// (`onJoinPrepare`, `generationIfStable`); it never commits under the generation whose
/// SyncGroup failed, a generation it never completed.
#[test]
fn cooperative_member_rejoining_after_a_failed_sync_commits_nothing_first() {
    let (mut h, sid) = cooperative_syncing_with_uncommitted_progress();
    let o = h.respond(sid, sync_err(REBALANCE_IN_PROGRESS));
    assert!(sent(&o, "OffsetCommit").is_empty(), "{:?}", summary(&o));
    let (_, _, RequestKind::JoinGroup(join)) = one(&o, "JoinGroup") else { unreachable!() };
    let sub = decode_subscription(&join.protocols[0].metadata).unwrap();
    assert_eq!(sub.owned_partitions, vec![tp("t", 0), tp("t", 1)], "it keeps its partitions");
}

/// A revoke slowdown waits for the member's next revoke callback. When the faults heal (the
/// liveness phase) the member drops it, eager or cooperative: the next rebalance may come long
/// after the heal (an eager member revokes when a late rejoin starts one), and no fault may act
/// after the heal — the liveness bound counts from it. Seeds swarm 819 and 2676 failed `stuck`
/// when an eager member took a slowdown pending since the safety phase into a rebalance 57 s
/// after the heal.
#[test]
fn healing_drops_a_pending_revoke_slowdown_eager_or_cooperative() {
    let mut h = H::new(profile_config(ClientProfile::JavaCooperative));
    follower_processed(&mut h, &[0, 1]);
    h.m.inject(h.now, MemberFault::SlowRevoke { extra_ms: 40_000 });
    h.m.heal_pending_faults();
    let o = rebalance_announced(&mut h);
    let (cid, _, req) = one(&o, "OffsetCommit");
    let o = h.respond(cid, commit_answer(&req, 0));
    let (jid, _, _) = one(&o, "JoinGroup");
    let o = h.respond(jid, join_ok("m-1", 2, "m-0", "cooperative-sticky", &[]));
    let (sid, _, _) = one(&o, "SyncGroup");
    let o = h.respond(sid, sync_ok(&[tp("t", 1)]));
    assert_eq!(revoked(&o), vec![(2, vec![tp("t", 0)])], "the callback took no time");

    let mut h = H::new(profile_config(ClientProfile::JavaEager));
    follower_processed(&mut h, &[0]);
    h.m.inject(h.now, MemberFault::SlowRevoke { extra_ms: 40_000 });
    h.m.heal_pending_faults();
    let o = rebalance_announced(&mut h);
    let (cid, _, req) = one(&o, "OffsetCommit");
    let o = h.respond(cid, commit_answer(&req, 0));
    one(&o, "JoinGroup");
}

/// Several slowdowns injected before one revoke callback describe that one slow callback: the
/// longest holds. Summed, four drawn slowdowns of at most 25 s made one 56 s callback (swarm
/// 819), a fault no draw asked for, longer than any liveness bound the scenario's timeouts
/// imply.
#[test]
fn revoke_slowdowns_before_one_callback_do_not_add_up() {
    let mut h = H::new(profile_config(ClientProfile::JavaEager));
    follower_processed(&mut h, &[0]);
    h.m.inject(h.now, MemberFault::SlowRevoke { extra_ms: 4_000 });
    h.m.inject(h.now, MemberFault::SlowRevoke { extra_ms: 6_000 });
    h.m.inject(h.now, MemberFault::SlowRevoke { extra_ms: 5_000 });
    let o = rebalance_announced(&mut h);
    let (cid, _, req) = one(&o, "OffsetCommit");
    let o = h.respond(cid, commit_answer(&req, 0));
    let start = h.now;
    assert!(sent(&o, "JoinGroup").is_empty(), "the callback is slow");
    let o = h.advance_to(start + 5_500);
    assert!(sent(&o, "JoinGroup").is_empty(), "the longest slowdown holds, not the last");
    let o = h.advance_to(start + 6_050);
    one(&o, "JoinGroup");
}

#[test]
fn java_revoke_callback_past_max_poll_interval_leaves_the_group_and_loses_partitions() {
    let mut h = H::new(profile_config(ClientProfile::JavaEager));
    follower_processed(&mut h, &[0]);
    h.m.inject(h.now, MemberFault::SlowRevoke { extra_ms: 40_000 });
    let o = rebalance_announced(&mut h);
    let (cid, _, req) = one(&o, "OffsetCommit");
    let o = h.respond(cid, commit_answer(&req, 0));
    assert!(sent(&o, "JoinGroup").is_empty(), "the revoke callback is still running");
    // max.poll.interval.ms is the rebalance timeout (30 s).
    let o = h.advance_to(3_000 + 30_000);
    let (_, _, RequestKind::LeaveGroup(leave)) = one(&o, "LeaveGroup") else { unreachable!() };
    assert_eq!(leave.members[0].member_id.as_str(), "m-1");
    let ev = events(&o);
    assert!(ev.iter().any(|e| matches!(e, MemberEvent::GenerationReset { error, reset_member_id: true, .. } if error == "POLL_TIMEOUT")));
    assert!(ev.iter().any(|e| matches!(e, MemberEvent::Lost { .. })));
    assert!(revoked(&o).is_empty());
    // When the callback returns the member rejoins as a new member.
    let o = h.advance_to(3_000 + 40_000);
    let (_, _, RequestKind::JoinGroup(j)) = one(&o, "JoinGroup") else { unreachable!() };
    assert_eq!(j.member_id.as_str(), "");
}

#[test]
fn brod_stale_ack_is_recorded_under_its_generation_and_dropped() {
    let mut cfg = profile_config(ClientProfile::Brod);
    cfg.processing_ms_per_record = (100, 100);
    let mut h = H::new(cfg);
    let o = join_follower(&mut h, &[0], &[(0, 10)]);
    let (id, _, _) = one(&o, "Fetch");
    h.respond(id, fetch_answer(&[(0, 0, 10..15)]));
    h.advance_to(1);
    h.m.inject(h.now, MemberFault::StaleAck { delay_ms: 10_000 });
    let o = rebalance_announced(&mut h);
    // brod does not wait for the batch: nothing processed to commit, revoke, rejoin.
    assert!(sent(&o, "OffsetCommit").is_empty());
    assert_eq!(revoked(&o), vec![(1, vec![tp("t", 0)])]);
    let (jid, _, _) = one(&o, "JoinGroup");
    let o = h.respond(jid, join_ok("m-1", 2, "m-0", "roundrobin_v2", &[]));
    let (sid, _, _) = one(&o, "SyncGroup");
    let o = h.respond(sid, sync_ok(&[tp("t", 0)]));
    let (fid, _, _) = one(&o, "OffsetFetch");
    h.respond(fid, offset_fetch(&[(0, 10)]));
    // The stale batch finishes at 0 + 500 + 10 000 ms, in generation 2.
    let o = h.advance_to(10_600);
    assert!(events(&o).iter().any(|e| matches!(
        e,
        MemberEvent::RecordsProcessed { generation: 1, first_offset: 10, last_offset: 14, .. }
    )));
    // Its ack is dropped: the commit timer in generation 2 has nothing at 15 to commit.
    let o = h.advance_to(70_000);
    for (_, _, req) in sent(&o, "OffsetCommit") {
        assert!(!commit_offsets(&req).contains(&("t".to_string(), 0, 15)), "stale ack applied");
    }
}

#[test]
fn keep_stale_acks_bug_commits_a_stale_ack_under_the_new_generation() {
    let mut cfg = profile_config(ClientProfile::Brod);
    cfg.processing_ms_per_record = (100, 100);
    cfg.bugs.keep_stale_acks = true;
    let mut h = H::new(cfg);
    let o = join_follower(&mut h, &[0], &[(0, 10)]);
    let (id, _, _) = one(&o, "Fetch");
    h.respond(id, fetch_answer(&[(0, 0, 10..15)]));
    h.advance_to(1);
    h.m.inject(h.now, MemberFault::StaleAck { delay_ms: 10_000 });
    let o = rebalance_announced(&mut h);
    let (jid, _, _) = one(&o, "JoinGroup");
    let o = h.respond(jid, join_ok("m-1", 2, "m-0", "roundrobin_v2", &[]));
    let (sid, _, _) = one(&o, "SyncGroup");
    let o = h.respond(sid, sync_ok(&[tp("t", 0)]));
    let (fid, _, _) = one(&o, "OffsetFetch");
    h.respond(fid, offset_fetch(&[(0, 10)]));
    let o = h.advance_to(70_000);
    let commits: Vec<(String, i32, i64)> =
        sent(&o, "OffsetCommit").iter().flat_map(|(_, _, r)| commit_offsets(r)).collect();
    assert!(commits.contains(&("t".to_string(), 0, 15)), "{commits:?}");
}

#[test]
fn kafka_go_does_not_commit_on_revoke() {
    let mut h = H::new(profile_config(ClientProfile::KafkaGo));
    follower_processed(&mut h, &[0]);
    let o = rebalance_announced(&mut h);
    assert!(sent(&o, "OffsetCommit").is_empty());
    assert_eq!(revoked(&o), vec![(1, vec![tp("t", 0)])]);
    one(&o, "JoinGroup");
}

#[test]
fn kafka_go_backs_off_before_rejoining_after_a_join_error() {
    let mut h = H::new(profile_config(ClientProfile::KafkaGo));
    let (id, _, _) = to_first_join(&mut h);
    let o = h.respond(id, join_err(COORDINATOR_LOAD_IN_PROGRESS, ""));
    assert!(sent(&o, "JoinGroup").is_empty());
    assert!(sent(&h.advance_to(4_999), "JoinGroup").is_empty());
    one(&h.advance_to(5_000), "JoinGroup");
}

#[test]
fn kafka_go_partition_watcher_rejoins_when_a_topic_grows() {
    let mut h = H::new(profile_config(ClientProfile::KafkaGo));
    join_follower(&mut h, &[0], &[(0, 10)]);
    let o = h.advance_to(5_000);
    let (mid, _, _) = one(&o, "Metadata");
    let o = h.respond(mid, metadata(&[("t", 6, 1)]));
    assert_eq!(revoked(&o).len(), 1, "{:?}", summary(&o));
    one(&o, "JoinGroup");
}

#[test]
fn brod_rejoins_with_an_empty_member_id_after_losing_the_coordinator() {
    let mut h = H::new(profile_config(ClientProfile::Brod));
    follower_processed(&mut h, &[0]);
    let o = h.advance_to(3_000);
    let (id, _, _) = one(&o, "Heartbeat");
    let o = h.fail(id, RequestFailure::Disconnected);
    assert!(events(&o).iter().any(|e| matches!(e, MemberEvent::CoordinatorLost { .. })));
    let o = h.advance_to(3_100);
    let (fid, _, _) = one(&o, "FindCoordinator");
    let o = h.respond(fid, find_coordinator(0));
    // One commit attempt before rejoining, then revoke and JoinGroup with an empty member id.
    let (cid, _, req) = one(&o, "OffsetCommit");
    let o = h.respond(cid, commit_answer(&req, 0));
    assert_eq!(revoked(&o), vec![(1, vec![tp("t", 0)])]);
    let (_, _, RequestKind::JoinGroup(j)) = one(&o, "JoinGroup") else { unreachable!() };
    assert_eq!(j.member_id.as_str(), "");
}

#[test]
fn brod_retries_a_failed_join_at_once_then_after_the_rejoin_delay() {
    let mut h = H::new(profile_config(ClientProfile::Brod));
    let (id, _, _) = to_first_join(&mut h);
    let o = h.respond(id, join_err(COORDINATOR_LOAD_IN_PROGRESS, ""));
    let (id, _, _) = one(&o, "JoinGroup");
    let o = h.respond(id, join_err(COORDINATOR_LOAD_IN_PROGRESS, ""));
    assert!(sent(&o, "JoinGroup").is_empty());
    one(&h.advance_to(1_000), "JoinGroup");
}

#[test]
fn elsa_workers_process_partitions_concurrently() {
    let mut cfg = profile_config(ClientProfile::Elsa);
    cfg.processing_ms_per_record = (100, 100);
    let mut h = H::new(cfg);
    let o = join_follower(&mut h, &[0, 1], &[(0, 10), (1, 10)]);
    let (id, _, _) = one(&o, "Fetch");
    h.respond(id, fetch_answer(&[(0, 0, 10..15), (1, 0, 10..15)]));
    // One worker per partition: both batches finish at 500 ms (one after the other: 1 000 ms).
    let o = h.advance_to(500);
    let done = events(&o)
        .into_iter()
        .filter(|e| matches!(e, MemberEvent::RecordsProcessed { .. }))
        .count();
    assert_eq!(done, 2);
}

#[test]
fn elsa_revoke_stops_workers_without_acking() {
    let mut cfg = profile_config(ClientProfile::Elsa);
    cfg.processing_ms_per_record = (1_000, 1_000);
    let mut h = H::new(cfg);
    let o = join_follower(&mut h, &[0], &[(0, 10)]);
    let (id, _, _) = one(&o, "Fetch");
    h.respond(id, fetch_answer(&[(0, 0, 10..15)]));
    let o = rebalance_announced(&mut h);
    assert_eq!(revoked(&o), vec![(1, vec![tp("t", 0)])]);
    let o = h.advance_to(10_000);
    assert!(!events(&o).iter().any(|e| matches!(e, MemberEvent::RecordsProcessed { .. })));
}

#[test]
fn double_assign_bug_gives_one_partition_to_two_members() {
    let mut cfg = profile_config(ClientProfile::JavaEager);
    cfg.bugs.double_assign = true;
    let mut h = H::new(cfg);
    let (id, _, _) = to_first_join(&mut h);
    let o = h.respond(id, join_ok("m-0", 1, "m-0", "range", &[("m-0", &["t"]), ("m-1", &["t"])]));
    let (_, _, RequestKind::SyncGroup(sync)) = one(&o, "SyncGroup") else { unreachable!() };
    let parts: Vec<Vec<TopicPartition>> = sync
        .assignments
        .iter()
        .map(|a| decode_assignment(&a.assignment).unwrap().partitions)
        .collect();
    assert!(parts[0].iter().any(|tp| parts[1].contains(tp)), "{parts:?}");
}

#[test]
fn profiles_round_trip_their_names_and_default_to_java_eager() {
    for p in ClientProfile::CLASSIC {
        assert_eq!(ClientProfile::from_name(p.name()), Some(p));
    }
    assert_eq!(config().profile, ClientProfile::JavaEager);
    assert!(!config().bugs.any());
}

/// A user-modelled application: fixed batch time, a 500 ms revoke callback, hooks recorded.
#[derive(Debug, Default)]
struct RecordingApp {
    calls: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl groupsim_member::Application for RecordingApp {
    fn processing_ms(&mut self, _: &TopicPartition, _: i64, _: i64, _: usize) -> Option<u64> {
        Some(1_000)
    }

    fn on_partitions_assigned(&mut self, now: u64, generation: i32, p: &[TopicPartition]) {
        self.calls.lock().unwrap().push(format!("assigned {now} g{generation} {}", p.len()));
    }

    fn on_partitions_revoked(&mut self, now: u64, generation: i32, p: &[TopicPartition]) -> u64 {
        self.calls.lock().unwrap().push(format!("revoked {now} g{generation} {}", p.len()));
        500
    }

    fn on_partitions_lost(&mut self, now: u64, generation: i32, p: &[TopicPartition]) {
        self.calls.lock().unwrap().push(format!("lost {now} g{generation} {}", p.len()));
    }
}

#[test]
fn application_sets_processing_time_and_listener_hooks_run_at_rebalance() {
    let app = RecordingApp::default();
    let calls = app.calls.clone();
    let cfg = profile_config(ClientProfile::JavaEager);
    let assignors = cfg.assignors.iter().map(|k| k.assignor()).collect();
    let mut h = H {
        m: groupsim_member::Member::with_application(cfg, 7, assignors, Box::new(app)),
        now: 0,
    };
    let o = join_follower(&mut h, &[0], &[(0, 10)]);
    let (id, _, _) = one(&o, "Fetch");
    h.respond(id, fetch_answer(&[(0, 0, 10..15)]));
    assert!(!events(&h.advance_to(999))
        .iter()
        .any(|e| matches!(e, MemberEvent::RecordsProcessed { .. })));
    assert!(events(&h.advance_to(1_000))
        .iter()
        .any(|e| matches!(e, MemberEvent::RecordsProcessed { .. })));
    let o = rebalance_announced(&mut h);
    let (cid, _, req) = one(&o, "OffsetCommit");
    let o = h.respond(cid, commit_answer(&req, 0));
    assert!(sent(&o, "JoinGroup").is_empty(), "the revoke callback runs 500 ms");
    one(&h.advance_to(3_500), "JoinGroup");
    assert_eq!(
        *calls.lock().unwrap(),
        vec!["assigned 0 g1 1".to_string(), "revoked 3000 g1 1".to_string()]
    );
}

/// An application that takes 40 s per batch: longer than `max.poll.interval.ms` (30 s).
#[derive(Debug)]
struct SlowApp;

impl groupsim_member::Application for SlowApp {
    fn processing_ms(&mut self, _: &TopicPartition, _: i64, _: i64, _: usize) -> Option<u64> {
        Some(40_000)
    }
}

#[test]
fn java_processing_stall_past_max_poll_interval_leaves_and_rejoins_after_the_batch() {
    let cfg = profile_config(ClientProfile::JavaEager);
    let assignors = cfg.assignors.iter().map(|k| k.assignor()).collect();
    let mut h = H {
        m: groupsim_member::Member::with_application(cfg, 7, assignors, Box::new(SlowApp)),
        now: 0,
    };
    let o = join_follower(&mut h, &[0], &[(0, 10)]);
    let (id, _, _) = one(&o, "Fetch");
    h.respond(id, fetch_answer(&[(0, 0, 10..15)]));
    // Heartbeats keep the session alive meanwhile.
    for t in (3_000..30_000).step_by(3_000) {
        let o = h.advance_to(t);
        if let Some((hid, _, _)) = sent(&o, "Heartbeat").into_iter().next() {
            h.respond(hid, heartbeat(0));
        }
    }
    let o = h.advance_to(30_000);
    one(&o, "LeaveGroup");
    assert!(events(&o).iter().any(|e| matches!(e, MemberEvent::Lost { .. })));
    assert!(sent(&o, "JoinGroup").is_empty(), "the application is still busy");
    let o = h.advance_to(40_000);
    // The batch ends under the generation it ran in; its ack is dropped; then a fresh join.
    assert!(events(&o)
        .iter()
        .any(|e| matches!(e, MemberEvent::RecordsProcessed { generation: 1, .. })));
    assert!(sent(&o, "OffsetCommit").is_empty());
    let (_, _, RequestKind::JoinGroup(j)) = one(&o, "JoinGroup") else { unreachable!() };
    assert_eq!(j.member_id.as_str(), "");
}

/// kafka-go's leader reads the subscribed topics' partitions before it assigns, on the
/// coordinator connection that has just answered its JoinGroup (`assignTopicPartitions` calls
/// `readPartitions` on it), not on an ordinary broker link that may have died unnoticed; the
/// answer lets it assign and send SyncGroup.
#[test]
fn kafka_go_leader_reads_partitions_on_the_coordinator_connection() {
    let mut h = H::new(profile_config(ClientProfile::KafkaGo));
    let (id, _, _) = to_first_join(&mut h);
    let o = h.respond(id, join_ok("m-1", 1, "m-1", "range", &[("m-1", &["t"])]));
    assert!(sent(&o, "SyncGroup").is_empty(), "{:?}", summary(&o));
    let (mid, target, _) = one(&o, "Metadata");
    assert_eq!(target, groupsim_member::Target::Coordinator(0));
    let o = h.respond(mid, metadata(&[("t", 4, 1)]));
    one(&o, "SyncGroup");
}

/// The JoinGroup's member id, and the member ids of every LeaveGroup sent.
fn join_and_leaves(o: &[MemberOutput]) -> (Option<String>, Vec<String>) {
    let join = sent(o, "JoinGroup").into_iter().map(|(_, _, r)| match r {
        RequestKind::JoinGroup(j) => j.member_id.to_string(),
        _ => unreachable!(),
    });
    let leaves = sent(o, "LeaveGroup").into_iter().flat_map(|(_, _, r)| match r {
        RequestKind::LeaveGroup(l) => l.members.iter().map(|m| m.member_id.to_string()).collect(),
        _ => Vec::new(),
    });
    (join.last(), leaves.collect())
}

fn gave_up(o: &[MemberOutput], id: &str) -> bool {
    events(o).iter().any(|e| {
        matches!(e, MemberEvent::GenerationReset { member_id, reset_member_id: true, .. } if member_id == id)
    })
}

/// kafka-go's `joinGroup` returns an empty member id with its error, and `ConsumerGroup.run`
/// waits `JoinGroupBackoff`: a member whose rejoin fails joins next as a new member, 5 s later,
/// with no LeaveGroup (it has no id left to leave with). The Java clients keep the id.
#[test]
fn kafka_go_gives_its_member_id_up_after_a_failed_join() {
    let mut h = H::new(profile_config(ClientProfile::KafkaGo));
    follower_processed(&mut h, &[0]);
    let o = rebalance_announced(&mut h);
    let (id, _, _) = one(&o, "JoinGroup");
    assert_eq!(join_and_leaves(&o).0.as_deref(), Some("m-1"));
    let at = h.now;
    let o = h.respond(id, join_err(COORDINATOR_LOAD_IN_PROGRESS, "m-1"));
    assert!(gave_up(&o, "m-1"), "{:?}", summary(&o));
    assert_eq!(join_and_leaves(&o), (None, vec![]));
    assert_eq!(join_and_leaves(&h.advance_to(at + 4_999)), (None, vec![]));
    assert_eq!(join_and_leaves(&h.advance_to(at + 5_000)), (Some(String::new()), vec![]));
}

/// A SyncGroup that fails other than by REBALANCE_IN_PROGRESS ends kafka-go's round: LeaveGroup
/// under the round's member id, the id given up, a fresh JoinGroup after `JoinGroupBackoff`.
#[test]
fn kafka_go_leaves_and_gives_its_id_up_after_a_failed_sync() {
    for failure in [Some(ILLEGAL_GENERATION), None] {
        let mut h = H::new(profile_config(ClientProfile::KafkaGo));
        let (id, _, _) = to_first_join(&mut h);
        let o = h.respond(id, join_ok("m-1", 1, "m-0", "range", &[]));
        let (sid, _, _) = one(&o, "SyncGroup");
        let o = match failure {
            Some(code) => h.respond(sid, sync_err(code)),
            None => h.fail(sid, RequestFailure::Timeout),
        };
        assert!(gave_up(&o, "m-1"), "{failure:?}: {:?}", summary(&o));
        let leaves = match failure {
            Some(_) => join_and_leaves(&o).1,
            // A timed-out request loses the coordinator; the leave waits for it.
            None => {
                let o = h.advance(100);
                let (fid, _, _) = one(&o, "FindCoordinator");
                join_and_leaves(&h.respond(fid, find_coordinator(0))).1
            }
        };
        assert_eq!(leaves, ["m-1"], "{failure:?}");
        assert_eq!(join_and_leaves(&h.advance_to(4_999)).0, None, "{failure:?}");
        assert_eq!(join_and_leaves(&h.advance_to(5_000)).0.as_deref(), Some(""), "{failure:?}");
    }
}

/// REBALANCE_IN_PROGRESS on SyncGroup is the one failure kafka-go's loop neither leaves nor
/// backs off on: it joins again at once under the same member id.
#[test]
fn kafka_go_rejoins_at_once_with_its_id_after_a_sync_rebalance_in_progress() {
    let mut h = H::new(profile_config(ClientProfile::KafkaGo));
    let (id, _, _) = to_first_join(&mut h);
    let o = h.respond(id, join_ok("m-1", 1, "m-0", "range", &[]));
    let (sid, _, _) = one(&o, "SyncGroup");
    let o = h.respond(sid, sync_err(REBALANCE_IN_PROGRESS));
    assert!(!gave_up(&o, "m-1"));
    assert_eq!(join_and_leaves(&o), (Some("m-1".to_string()), vec![]));
}

/// The leader's partition read is part of kafka-go's round: when it fails, the leader leaves
/// under its id (once it has found the coordinator again) and joins afresh after the backoff,
/// instead of retrying the read elsewhere.
#[test]
fn kafka_go_leader_whose_partition_read_fails_leaves_and_gives_its_id_up() {
    let mut h = H::new(profile_config(ClientProfile::KafkaGo));
    let (id, _, _) = to_first_join(&mut h);
    let o = h.respond(id, join_ok("m-1", 1, "m-1", "range", &[("m-1", &["t"])]));
    let (mid, _, _) = one(&o, "Metadata");
    let o = h.fail(mid, RequestFailure::Disconnected);
    assert!(gave_up(&o, "m-1"), "{:?}", summary(&o));
    assert!(sent(&o, "SyncGroup").is_empty() && sent(&o, "Metadata").is_empty());
    let o = h.advance(100);
    let (fid, _, _) = one(&o, "FindCoordinator");
    let o = h.respond(fid, find_coordinator(0));
    assert_eq!(join_and_leaves(&o), (None, vec!["m-1".to_string()]));
    assert_eq!(join_and_leaves(&h.advance_to(4_999)).0, None);
    assert_eq!(join_and_leaves(&h.advance_to(5_000)).0.as_deref(), Some(""));
}

/// kafka-go's heartbeat goroutine returns on any error, and the generation ends with it: the
/// member rejoins under its member id, where the Java clients retry the heartbeat and keep the
/// generation. A lost heartbeat also loses the coordinator, so the rejoin waits for it; after
/// UNKNOWN_MEMBER_ID kafka-go still rejoins with the id (and gives it up when that fails).
#[test]
fn kafka_go_rejoins_with_its_id_when_a_heartbeat_fails() {
    for failure in [None, Some(NOT_COORDINATOR), Some(UNKNOWN_MEMBER_ID)] {
        let mut h = H::new(profile_config(ClientProfile::KafkaGo));
        follower_processed(&mut h, &[0]);
        let o = h.advance_to(3_000);
        let (id, _, _) = one(&o, "Heartbeat");
        let mut o = match failure {
            Some(code) => h.respond(id, heartbeat(code)),
            None => h.fail(id, RequestFailure::Disconnected),
        };
        if failure != Some(UNKNOWN_MEMBER_ID) {
            o = h.advance(100);
            let (fid, _, _) = one(&o, "FindCoordinator");
            o = h.respond(fid, find_coordinator(0));
        }
        assert_eq!(join_and_leaves(&o), (Some("m-1".to_string()), vec![]), "{failure:?}");
        assert!(!gave_up(&o, "m-1"), "{failure:?}");
    }
    // The Java consumer keeps its generation through a lost heartbeat.
    let mut h = H::new(profile_config(ClientProfile::JavaEager));
    follower_processed(&mut h, &[0]);
    let o = h.advance_to(3_000);
    let (id, _, _) = one(&o, "Heartbeat");
    h.fail(id, RequestFailure::Disconnected);
    let o = h.advance(100);
    let (fid, _, _) = one(&o, "FindCoordinator");
    let o = h.respond(fid, find_coordinator(0));
    assert!(sent(&o, "JoinGroup").is_empty(), "{:?}", summary(&o));
}

/// kafka-go fetches the committed offsets inside its round (`nextGeneration`'s
/// `fetchOffsets`, before the generation starts): when that fetch is lost the round fails like
/// any other, so the member leaves under its id once it finds the coordinator again and joins
/// afresh after the backoff; the Java consumer retries the fetch in its generation.
#[test]
fn kafka_go_leaves_and_gives_its_id_up_when_the_offset_fetch_fails() {
    let mut h = H::new(profile_config(ClientProfile::KafkaGo));
    let (id, _, _) = to_first_join(&mut h);
    let o = h.respond(id, join_ok("m-1", 1, "m-0", "range", &[]));
    let (sid, _, _) = one(&o, "SyncGroup");
    let o = h.respond(sid, sync_ok(&[tp("t", 0)]));
    let (fid, _, _) = one(&o, "OffsetFetch");
    let at = h.now;
    let o = h.fail(fid, RequestFailure::Timeout);
    assert!(gave_up(&o, "m-1"), "{:?}", summary(&o));
    let o = h.advance(100);
    let (cid, _, _) = one(&o, "FindCoordinator");
    let o = h.respond(cid, find_coordinator(0));
    assert_eq!(join_and_leaves(&o), (None, vec!["m-1".to_string()]));
    assert!(sent(&h.advance_to(at + 4_999), "OffsetFetch").is_empty());
    assert_eq!(join_and_leaves(&h.advance_to(at + 5_000)).0.as_deref(), Some(""));
}
