//! Coverage probes of the member: each test drives a member with hand-made answers into the
//! rare situation a probe names and checks the probe counted it (`probe::record`), and where a
//! near miss is easy to make, that the probe stays quiet. Probes are counted outside the
//! history; these tests only check that they sit where their situation happens.

mod common;

use common::*;
use groupsim_member::probes::{self, ERROR_HANDLED};
use groupsim_member::{
    ClientProfile, MemberConfig, MemberFault, MemberOutput, RequestFailure, RequestId,
};
use groupsim_wire::error_codes::COORDINATOR_NOT_AVAILABLE;
use groupsim_wire::probe::{self, Probe, ProbeHits};
use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::leave_group_response::MemberResponse;
use kafka_protocol::messages::{
    FindCoordinatorResponse, LeaveGroupResponse, RequestKind, ResponseKind,
};

/// Runs `drive` while recording probe hits (what it returns is dropped).
fn hits<T>(drive: impl FnOnce() -> T) -> ProbeHits {
    probe::record(drive).1
}

/// How often `p` was hit.
fn count(hits: &ProbeHits, p: &Probe) -> u64 {
    hits.get(p.name).copied().unwrap_or(0)
}

/// How often the `member.error` family member `detail` was hit.
fn errors(hits: &ProbeHits, detail: &str) -> u64 {
    hits.get(&format!("{}:{detail}", ERROR_HANDLED.name)).copied().unwrap_or(0)
}

/// A `profile` follower owning `parts` that processed records and was then told of a
/// rebalance: the member, its commit before rejoining (id and request), and the probe hits of
/// the rebalance announcement.
fn rebalancing(profile: ClientProfile, parts: &[i32]) -> (H, RequestId, RequestKind, ProbeHits) {
    let mut h = H::new(profile_config(profile));
    follower_processed(&mut h, parts);
    let (o, hits) = probe::record(|| rebalance_announced(&mut h));
    let (id, _, req) = one(&o, "OffsetCommit");
    (h, id, req, hits)
}

#[test]
fn an_eager_revoke_starts_once_when_its_commit_is_sent() {
    let (mut h, cid, req, started) = rebalancing(ClientProfile::JavaEager, &[0]);
    assert_eq!(count(&started, &probes::REVOKE_STARTED), 1);
    // The commit's answer lets the callback run and the revoke finish: the same revoke.
    let rest = hits(|| {
        let o = h.respond(cid, commit_answer(&req, 0));
        one(&o, "JoinGroup");
    });
    assert_eq!(count(&rest, &probes::REVOKE_STARTED), 0, "{rest:?}");
}

#[test]
fn a_brod_revoke_starts_with_its_callback() {
    let (_, _, _, started) = rebalancing(ClientProfile::Brod, &[0]);
    assert_eq!(count(&started, &probes::REVOKE_STARTED), 1);
}

#[test]
fn a_cooperative_revoke_starts_when_the_new_assignment_takes_a_partition_away() {
    let (mut h, cid, req, announced) = rebalancing(ClientProfile::JavaCooperative, &[0, 1]);
    let (o, committed) = probe::record(|| h.respond(cid, commit_answer(&req, 0)));
    let before =
        count(&announced, &probes::REVOKE_STARTED) + count(&committed, &probes::REVOKE_STARTED);
    assert_eq!(before, 0, "the commit before rejoining revokes nothing");
    let (jid, _, _) = one(&o, "JoinGroup");
    let o = h.respond(jid, join_ok("m-1", 2, "m-0", "cooperative-sticky", &[]));
    let (sid, _, _) = one(&o, "SyncGroup");
    let revoke = hits(|| h.respond(sid, sync_ok(&[tp("t", 0)])));
    assert_eq!(count(&revoke, &probes::REVOKE_STARTED), 1);
}

/// The probe hits of a new follower's first Fetch (of `t-0` from 10) answered with `answer`.
fn first_fetch_answered(answer: ResponseKind) -> ProbeHits {
    let mut h = H::new(config());
    let o = join_follower(&mut h, &[0], &[(0, 10)]);
    let (id, _, _) = one(&o, "Fetch");
    hits(|| h.respond(id, answer))
}

#[test]
fn a_batch_starting_to_process_is_a_processing_probe() {
    let started = first_fetch_answered(fetch_answer(&[(0, 0, 10..15)]));
    assert_eq!(count(&started, &probes::PROCESSING_STARTED), 1);
}

#[test]
fn a_rejoin_after_unknown_member_id_while_an_auto_commit_is_in_flight() {
    let mut h = H::new(config());
    follower_processed(&mut h, &[0]);
    let o = h.advance_to(1_000);
    one(&o, "OffsetCommit");
    let o = h.advance_to(3_000);
    let (hid, _, _) = one(&o, "Heartbeat");
    let rejoin = hits(|| {
        let o = h.respond(hid, heartbeat(UNKNOWN_MEMBER_ID));
        one(&o, "JoinGroup");
    });
    assert_eq!(count(&rejoin, &probes::REJOIN_WITH_COMMIT_IN_FLIGHT), 1);
    assert_eq!(count(&rejoin, &probes::GENERATION_RESET), 1);
    assert_eq!(errors(&rejoin, "JavaEager/Heartbeat/UNKNOWN_MEMBER_ID"), 1);
    assert_eq!(count(&rejoin, &probes::SESSION_LOST_DURING_REVOKE), 0, "no revoke under way");
}

#[test]
fn a_commit_that_times_out_lost_its_answer_but_an_error_answer_did_not() {
    let mut h = H::new(config());
    follower_processed(&mut h, &[0]);
    let o = h.advance_to(1_000);
    let (id, _, req) = one(&o, "OffsetCommit");
    let answered = hits(|| h.respond(id, commit_answer(&req, COORDINATOR_LOAD_IN_PROGRESS)));
    assert_eq!(count(&answered, &probes::COMMIT_ANSWER_LOST), 0);
    assert_eq!(errors(&answered, "JavaEager/OffsetCommit/COORDINATOR_LOAD_IN_PROGRESS"), 1);
    let o = h.advance_to(1_100);
    let (id, _, _) = one(&o, "OffsetCommit");
    let lost = hits(|| h.fail(id, RequestFailure::Timeout));
    assert_eq!(count(&lost, &probes::COMMIT_ANSWER_LOST), 1);
}

#[test]
fn the_revoke_commit_answered_unknown_member_id_loses_the_session_while_revoking() {
    let (mut h, cid, req, _) = rebalancing(ClientProfile::JavaEager, &[0]);
    let fenced = hits(|| h.respond(cid, commit_answer(&req, UNKNOWN_MEMBER_ID)));
    assert_eq!(count(&fenced, &probes::SESSION_LOST_DURING_REVOKE), 1);
    assert_eq!(count(&fenced, &probes::GENERATION_RESET), 1);
    assert_eq!(errors(&fenced, "JavaEager/OffsetCommit/UNKNOWN_MEMBER_ID"), 1);
}

#[test]
fn a_revoke_callback_past_max_poll_loses_the_session_while_revoking() {
    let (mut h, cid, req, _) = rebalancing(ClientProfile::JavaEager, &[0]);
    // The callback runs once the commit is answered; it takes 40 s, past max.poll (30 s).
    h.m.inject(h.now, MemberFault::SlowRevoke { extra_ms: 40_000 });
    h.respond(cid, commit_answer(&req, 0));
    let timeout = hits(|| {
        let o = h.advance_to(3_000 + 30_000);
        one(&o, "LeaveGroup");
    });
    assert_eq!(count(&timeout, &probes::SESSION_LOST_DURING_REVOKE), 1);
    assert_eq!(count(&timeout, &probes::GENERATION_RESET), 1);
}

#[test]
fn illegal_generation_on_a_heartbeat_while_stable_resets_the_generation_outside_a_revoke() {
    let mut h = H::new(config());
    join_follower(&mut h, &[0], &[(0, 0)]);
    let reset = hits(|| heartbeat_answered(&mut h, ILLEGAL_GENERATION));
    assert_eq!(count(&reset, &probes::GENERATION_RESET), 1);
    assert_eq!(count(&reset, &probes::SESSION_LOST_DURING_REVOKE), 0);
    assert_eq!(errors(&reset, "JavaEager/Heartbeat/ILLEGAL_GENERATION"), 1);
}

/// brod follower whose batch of 10..=14 (500 ms) is detached by a StaleAck of 10 s, rebalanced
/// into generation 2 at 3 s: the batch acks at 10.5 s.
fn brod_with_a_stale_batch(h: &mut H) {
    let o = join_follower(h, &[0], &[(0, 10)]);
    let (id, _, _) = one(&o, "Fetch");
    h.respond(id, fetch_answer(&[(0, 0, 10..15)]));
    h.advance_to(1);
    h.m.inject(h.now, MemberFault::StaleAck { delay_ms: 10_000 });
    let o = rebalance_announced(h);
    rejoin_into(h, o, 2);
}

/// Answers the JoinGroup in `o` with generation `generation`, keeps `t-0`, committed at 10.
fn rejoin_into(h: &mut H, o: Vec<MemberOutput>, generation: i32) {
    let (jid, _, _) = one(&o, "JoinGroup");
    let o = h.respond(jid, join_ok("m-1", generation, "m-0", "roundrobin_v2", &[]));
    let (sid, _, _) = one(&o, "SyncGroup");
    let o = h.respond(sid, sync_ok(&[tp("t", 0)]));
    let (fid, _, _) = one(&o, "OffsetFetch");
    h.respond(fid, offset_fetch(&[(0, 10)]));
}

fn brod_config() -> MemberConfig {
    let mut cfg = profile_config(ClientProfile::Brod);
    cfg.processing_ms_per_record = (100, 100);
    cfg
}

/// The probe hits of the stale batch's ack, arriving in `generation` (2, or 3 after another
/// rebalance at 6 s).
fn stale_ack_in_generation(generation: i32) -> ProbeHits {
    let mut h = H::new(brod_config());
    brod_with_a_stale_batch(&mut h);
    if generation == 3 {
        let o = h.advance_to(6_000);
        let (hid, _, _) = one(&o, "Heartbeat");
        let o = h.respond(hid, heartbeat(REBALANCE_IN_PROGRESS));
        rejoin_into(&mut h, o, 3);
    }
    hits(|| h.advance_to(10_600))
}

#[test]
fn an_ack_of_the_previous_generation_is_stale_but_not_older() {
    let ack = stale_ack_in_generation(2);
    assert_eq!(count(&ack, &probes::STALE_ACK), 1);
    assert_eq!(count(&ack, &probes::ACK_OLDER_THAN_PREVIOUS_GENERATION), 0);
}

#[test]
fn an_ack_two_generations_old_is_older_than_the_previous_generation() {
    let ack = stale_ack_in_generation(3);
    assert_eq!(count(&ack, &probes::STALE_ACK), 1);
    assert_eq!(count(&ack, &probes::ACK_OLDER_THAN_PREVIOUS_GENERATION), 1);
}

#[test]
fn an_ack_of_the_current_generation_is_not_stale() {
    let mut h = H::new(config());
    let ack = hits(|| follower_processed(&mut h, &[0]));
    assert_eq!(count(&ack, &probes::PROCESSING_STARTED), 1);
    assert_eq!(count(&ack, &probes::STALE_ACK), 0);
}

#[test]
fn a_cooperative_rejoin_after_a_refused_commit_keeps_uncommitted_progress() {
    let (mut h, cid, req, _) = rebalancing(ClientProfile::JavaCooperative, &[0, 1]);
    let join = hits(|| {
        let o = h.respond(cid, commit_answer(&req, REBALANCE_IN_PROGRESS));
        one(&o, "JoinGroup");
    });
    assert_eq!(count(&join, &probes::COOPERATIVE_REBALANCE_WITH_PROGRESS), 1);
}

#[test]
fn a_rejoin_with_its_progress_committed_or_an_eager_one_is_not_a_cooperative_probe() {
    let (mut h, cid, req, _) = rebalancing(ClientProfile::JavaCooperative, &[0, 1]);
    let committed = hits(|| h.respond(cid, commit_answer(&req, 0)));
    assert_eq!(count(&committed, &probes::COOPERATIVE_REBALANCE_WITH_PROGRESS), 0);

    let (mut h, cid, req, _) = rebalancing(ClientProfile::JavaEager, &[0]);
    let eager = hits(|| h.respond(cid, commit_answer(&req, REBALANCE_IN_PROGRESS)));
    assert_eq!(count(&eager, &probes::COOPERATIVE_REBALANCE_WITH_PROGRESS), 0);
}

/// Start and Metadata: returns the FindCoordinator request's id.
fn to_find_coordinator(h: &mut H) -> RequestId {
    h.m.start(h.now);
    let o = h.out();
    let (id, _, _) = one(&o, "Metadata");
    let o = h.respond(id, metadata(&[("t", 4, 1)]));
    one(&o, "FindCoordinator").0
}

#[test]
fn find_coordinator_answered_an_error_or_failing_is_a_failed_discovery() {
    let mut h = H::new(config());
    let id = to_find_coordinator(&mut h);
    let failed = hits(|| h.fail(id, RequestFailure::Disconnected));
    assert_eq!(count(&failed, &probes::DISCOVERY_FAILED), 1);
    let (id, _, _) = one(&h.advance(100), "FindCoordinator");
    let answer =
        ResponseKind::FindCoordinator(FindCoordinatorResponse::default().with_coordinators(vec![
            Coordinator::default().with_key(sb("g")).with_error_code(COORDINATOR_NOT_AVAILABLE),
        ]));
    let refused = hits(|| h.respond(id, answer));
    assert_eq!(count(&refused, &probes::DISCOVERY_FAILED), 1);
    assert_eq!(errors(&refused, "JavaEager/FindCoordinator/COORDINATOR_NOT_AVAILABLE"), 1);
    let (id, _, _) = one(&h.advance(100), "FindCoordinator");
    let found = hits(|| h.respond(id, find_coordinator(0)));
    assert_eq!(count(&found, &probes::DISCOVERY_FAILED), 0);
}

#[test]
fn a_fetch_answered_not_leader_reached_a_stale_leader() {
    let stale = first_fetch_answered(fetch_answer(&[(0, NOT_LEADER_OR_FOLLOWER, 0..0)]));
    assert_eq!(count(&stale, &probes::FETCH_STALE_LEADER), 1);
    assert_eq!(errors(&stale, "JavaEager/Fetch/NOT_LEADER_OR_FOLLOWER"), 1);
}

#[test]
fn handled_errors_are_counted_by_profile_api_and_error() {
    // JoinGroup MEMBER_ID_REQUIRED (not a group error, handled on its own) for kafka-go.
    let mut h = H::new(config().with_profile(ClientProfile::KafkaGo));
    let (id, _, _) = to_first_join(&mut h);
    let join = hits(|| h.respond(id, join_err(MEMBER_ID_REQUIRED, "m-1")));
    assert_eq!(errors(&join, "KafkaGo/JoinGroup/MEMBER_ID_REQUIRED"), 1);

    // SyncGroup REBALANCE_IN_PROGRESS for brod.
    let mut h = H::new(config().with_profile(ClientProfile::Brod));
    let (id, _, _) = to_first_join(&mut h);
    let o = h.respond(id, join_ok("m-1", 1, "m-0", "roundrobin_v2", &[]));
    let (sid, _, _) = one(&o, "SyncGroup");
    let sync = hits(|| h.respond(sid, sync_err(REBALANCE_IN_PROGRESS)));
    assert_eq!(errors(&sync, "Brod/SyncGroup/REBALANCE_IN_PROGRESS"), 1);

    // OffsetFetch per partition, ListOffsets per partition, LeaveGroup per member.
    let mut h = H::new(config());
    let (id, _, _) = to_first_join(&mut h);
    let o = h.respond(id, join_ok("m-1", 1, "m-0", "range", &[]));
    let (sid, _, _) = one(&o, "SyncGroup");
    let o = h.respond(sid, sync_ok(&[tp("t", 0)]));
    let (fid, _, _) = one(&o, "OffsetFetch");
    let mut answer = offset_fetch(&[(0, 0)]);
    if let ResponseKind::OffsetFetch(r) = &mut answer {
        r.groups[0].topics[0].partitions[0].error_code = COORDINATOR_LOAD_IN_PROGRESS;
    }
    let fetch = hits(|| h.respond(fid, answer));
    assert_eq!(errors(&fetch, "JavaEager/OffsetFetch/COORDINATOR_LOAD_IN_PROGRESS"), 1);
    let o = h.advance(100);
    let (fid, _, _) = one(&o, "OffsetFetch");
    let o = h.respond(fid, offset_fetch(&[(0, -1)]));
    let (lid, _, _) = one(&o, "ListOffsets");
    let mut answer = list_offsets(&[(0, -1)]);
    if let ResponseKind::ListOffsets(r) = &mut answer {
        r.topics[0].partitions[0].error_code = NOT_LEADER_OR_FOLLOWER;
    }
    let list = hits(|| h.respond(lid, answer));
    assert_eq!(errors(&list, "JavaEager/ListOffsets/NOT_LEADER_OR_FOLLOWER"), 1);
    h.m.leave(h.now);
    let o = h.out();
    let (leave_id, _, _) = one(&o, "LeaveGroup");
    let answer = ResponseKind::LeaveGroup(LeaveGroupResponse::default().with_members(vec![
        MemberResponse::default().with_member_id(sb("m-1")).with_error_code(UNKNOWN_MEMBER_ID),
    ]));
    let leave = hits(|| h.respond(leave_id, answer));
    assert_eq!(errors(&leave, "JavaEager/LeaveGroup/UNKNOWN_MEMBER_ID"), 1);
    assert!(h.m.is_finished());
}

#[test]
fn every_member_probe_is_in_the_catalogue_under_the_member_prefix() {
    assert_eq!(probes::ALL.len(), 35);
    assert!(probes::ALL.iter().all(|p| p.name.starts_with("member.")));
}
