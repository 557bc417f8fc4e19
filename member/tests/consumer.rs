//! The consumer-protocol (KIP-848) member against scripted coordinator answers: joining with
//! epoch 0, reconciling in Kafka's order, fencing, leaving, commits under the member epoch, the
//! heartbeat interval, and where `java-consumer` and `librdkafka-consumer` differ.

mod common;

use common::{find_coordinator, list_offsets, offset_fetch, sb, tp};
use groupsim_member::{
    ClientProfile, ConsumerGroupMember, MemberConfig, MemberEvent, MemberOutput, MemberState,
    Millis, RequestId,
};
use kafka_protocol::error::ResponseError as E;
use kafka_protocol::messages::consumer_group_heartbeat_response::{Assignment, TopicPartitions};
use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::{
    BrokerId, ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse, MetadataResponse,
    RequestKind, ResponseKind, TopicName,
};
use uuid::Uuid;

const TOPIC_ID: Uuid = Uuid::from_bytes([1; 16]);

/// A consumer-protocol member under test plus the simulated clock.
struct C {
    m: ConsumerGroupMember,
    now: Millis,
}

impl C {
    fn new(profile: ClientProfile, instance: Option<&str>) -> Self {
        let mut config = MemberConfig::new("g", "c-1", vec!["t".into()]).with_profile(profile);
        config.commit_interval_ms = 60_000;
        config.group_instance_id = instance.map(str::to_string);
        Self { m: ConsumerGroupMember::new(config, 7), now: 0 }
    }

    fn out(&mut self) -> Vec<MemberOutput> {
        std::iter::from_fn(|| self.m.poll_output()).collect()
    }

    fn respond(&mut self, id: RequestId, r: ResponseKind) -> Vec<MemberOutput> {
        self.m.handle_response(self.now, id, r);
        self.out()
    }

    fn advance_to(&mut self, to: Millis) -> Vec<MemberOutput> {
        let mut outs = Vec::new();
        while let Some(t) = self.m.poll_timeout().filter(|t| *t <= to) {
            self.now = self.now.max(t);
            self.m.handle_timeout(self.now);
            outs.extend(self.out());
        }
        self.now = to;
        outs
    }

    /// Start, Metadata (with topic ids), FindCoordinator: returns the first heartbeat.
    fn first_heartbeat(&mut self) -> (RequestId, ConsumerGroupHeartbeatRequest) {
        self.m.start(0);
        let outs = self.out();
        let (id, _) = request(&outs, "Metadata");
        let outs = self.respond(id, metadata());
        let (id, _) = request(&outs, "FindCoordinator");
        let outs = self.respond(id, find_coordinator(1));
        heartbeat(&outs)
    }

    /// Joined at `epoch` owning `parts` (committed offsets 10 + partition), the ack answered.
    /// Returns the Fetch sent once the positions are known (left unanswered).
    fn joined(&mut self, epoch: i32, parts: &[i32]) -> (RequestId, RequestKind) {
        let (id, _) = self.first_heartbeat();
        let outs = self.respond(id, hb_ok(epoch, Some(parts)));
        let (ack, _) = heartbeat(&outs);
        let (id, _) = request(&outs, "OffsetFetch");
        let committed: Vec<(i32, i64)> = parts.iter().map(|p| (*p, 10 + *p as i64)).collect();
        // Positions known: the partitions are fetched (the Fetch stays unanswered here).
        let outs = self.respond(id, offset_fetch(&committed));
        assert_eq!(requests(&outs).len(), 1, "{outs:#?}");
        let fetch = request(&outs, "Fetch");
        assert!(requests(&self.respond(ack, hb_ok(epoch, None))).is_empty());
        assert_eq!(self.m.state(), MemberState::Stable);
        fetch
    }
}

fn name(r: &RequestKind) -> &'static str {
    match r {
        RequestKind::Metadata(_) => "Metadata",
        RequestKind::FindCoordinator(_) => "FindCoordinator",
        RequestKind::ConsumerGroupHeartbeat(_) => "ConsumerGroupHeartbeat",
        RequestKind::OffsetCommit(_) => "OffsetCommit",
        RequestKind::OffsetFetch(_) => "OffsetFetch",
        RequestKind::ListOffsets(_) => "ListOffsets",
        RequestKind::Fetch(_) => "Fetch",
        _ => "other",
    }
}

fn requests(outs: &[MemberOutput]) -> Vec<(RequestId, RequestKind)> {
    outs.iter()
        .filter_map(|o| match o {
            MemberOutput::Send { id, request, .. } => Some((*id, request.clone())),
            _ => None,
        })
        .collect()
}

fn request(outs: &[MemberOutput], api: &str) -> (RequestId, RequestKind) {
    let found: Vec<_> = requests(outs).into_iter().filter(|(_, r)| name(r) == api).collect();
    assert_eq!(found.len(), 1, "one {api} expected in {outs:#?}");
    found.into_iter().next().expect("checked")
}

fn heartbeat(outs: &[MemberOutput]) -> (RequestId, ConsumerGroupHeartbeatRequest) {
    match request(outs, "ConsumerGroupHeartbeat") {
        (id, RequestKind::ConsumerGroupHeartbeat(r)) => (id, r),
        _ => unreachable!(),
    }
}

/// The kinds of what happened, in order: requests by API, events by variant.
fn steps(outs: &[MemberOutput]) -> Vec<String> {
    outs.iter()
        .filter_map(|o| match o {
            MemberOutput::Send { request, .. } => Some(name(request).to_string()),
            MemberOutput::Event(e) => {
                let s = format!("{e:?}");
                Some(s.split([' ', '{']).next().unwrap_or_default().to_string())
            }
            MemberOutput::Close(_) => None,
        })
        .collect()
}

fn events(outs: &[MemberOutput]) -> Vec<MemberEvent> {
    outs.iter()
        .filter_map(|o| match o {
            MemberOutput::Event(e) => Some(e.clone()),
            _ => None,
        })
        .collect()
}

fn metadata() -> ResponseKind {
    let partitions = (0..4)
        .map(|p| {
            MetadataResponsePartition::default().with_partition_index(p).with_leader_id(BrokerId(1))
        })
        .collect();
    ResponseKind::Metadata(
        MetadataResponse::default()
            .with_brokers(vec![MetadataResponseBroker::default().with_node_id(BrokerId(1))])
            .with_topics(vec![MetadataResponseTopic::default()
                .with_name(Some(TopicName(sb("t"))))
                .with_topic_id(TOPIC_ID)
                .with_partitions(partitions)]),
    )
}

fn hb_ok(epoch: i32, parts: Option<&[i32]>) -> ResponseKind {
    let assignment = parts.map(|ps| {
        Assignment::default().with_topic_partitions(vec![TopicPartitions::default()
            .with_topic_id(TOPIC_ID)
            .with_partitions(ps.to_vec())])
    });
    ResponseKind::ConsumerGroupHeartbeat(
        ConsumerGroupHeartbeatResponse::default()
            .with_member_epoch(epoch)
            .with_heartbeat_interval_ms(2_000)
            .with_assignment(assignment),
    )
}

fn hb_err(code: i16) -> ResponseKind {
    ResponseKind::ConsumerGroupHeartbeat(
        ConsumerGroupHeartbeatResponse::default().with_error_code(code).with_member_epoch(-1),
    )
}

fn commit_ok(req: &RequestKind, code: i16) -> ResponseKind {
    common::commit_answer(req, code)
}

#[test]
fn joining_sends_epoch_zero_with_a_client_chosen_member_id_and_every_field() {
    let mut c = C::new(ClientProfile::JavaConsumer, None);
    let (_, hb) = c.first_heartbeat();
    assert_eq!(hb.member_epoch, 0);
    assert_eq!(hb.member_id.as_str(), c.m.member_id());
    assert_eq!(hb.member_id.len(), 22, "a UUID drawn by the client");
    assert_eq!(hb.rebalance_timeout_ms, 30_000);
    assert_eq!(hb.subscribed_topic_names.as_ref().map(Vec::len), Some(1));
    assert_eq!(hb.topic_partitions.as_deref(), Some(&[][..]), "owns nothing yet");
    assert_eq!(c.m.state(), MemberState::Joining);
    assert_eq!(c.m.coordinator(), Some(1), "the node FindCoordinator named");
}

#[test]
fn an_assignment_with_topic_ids_is_resolved_assigned_fetched_and_acknowledged() {
    let mut c = C::new(ClientProfile::JavaConsumer, None);
    let (id, _) = c.first_heartbeat();
    let outs = c.respond(id, hb_ok(5, Some(&[0, 2])));
    assert_eq!(
        steps(&outs),
        [
            "MemberEpochChanged",
            "AssignmentReceived",
            "Assigned",
            "ConsumerGroupHeartbeat",
            "OffsetFetch"
        ]
    );
    let (_, ack) = heartbeat(&outs);
    assert_eq!(ack.member_epoch, 5);
    let owned = ack.topic_partitions.expect("the ack carries the owned partitions");
    assert_eq!((owned[0].topic_id, owned[0].partitions.clone()), (TOPIC_ID, vec![0, 2]));
    assert_eq!(c.m.assigned(), [tp("t", 0), tp("t", 2)]);
    assert_eq!(c.m.state(), MemberState::Stable);
    let (id, RequestKind::OffsetFetch(f)) = request(&outs, "OffsetFetch") else { unreachable!() };
    assert_eq!(f.groups[0].member_epoch, 5, "OffsetFetch carries the member epoch");
    let outs = c.respond(id, offset_fetch(&[(0, 3), (2, -1)]));
    assert!(events(&outs)
        .iter()
        .any(|e| matches!(e, MemberEvent::PositionInitialized { position: 3, .. })));
    let (id, _) = request(&outs, "ListOffsets");
    let outs = c.respond(id, list_offsets(&[(2, 0)]));
    assert!(events(&outs)
        .iter()
        .any(|e| matches!(e, MemberEvent::PositionInitialized { position: 0, .. })));
}

#[test]
fn the_heartbeat_waits_for_the_interval_the_coordinator_returned() {
    let mut c = C::new(ClientProfile::JavaConsumer, None);
    let (id, _) = c.first_heartbeat();
    let outs = c.respond(id, hb_ok(1, Some(&[])));
    assert!(requests(&outs).is_empty(), "an empty assignment needs no ack: {outs:?}");
    assert_eq!(c.m.state(), MemberState::Stable);
    let early = c.advance_to(1_999);
    assert!(requests(&early).iter().all(|(_, r)| name(r) != "ConsumerGroupHeartbeat"));
    let due = c.advance_to(2_000);
    let (_, hb) = heartbeat(&due);
    assert!(
        hb.subscribed_topic_names.is_none() && hb.rebalance_timeout_ms == -1,
        "a delta heartbeat"
    );
}

/// Revocation in Kafka's order, per profile: Java commits every consumed offset before the
/// revoke callback (and the ack follows the commit's answer); librdkafka runs the callback first,
/// then commits only the revoked partitions; both acknowledge with what they still own.
#[test]
fn revocation_commits_in_each_profiles_order_before_the_ack() {
    for (profile, committed_parts, order) in [
        (ClientProfile::JavaConsumer, vec![0, 1], ["OffsetCommit", "Revoked"]),
        (ClientProfile::LibrdkafkaConsumer, vec![1], ["OffsetCommit", "Revoked"]),
    ] {
        let mut c = C::new(profile, None);
        c.joined(3, &[0, 1]);
        c.advance_to(1_900);
        let outs = c.advance_to(2_000);
        let (id, _) = heartbeat(&outs);
        let outs = c.respond(id, hb_ok(4, Some(&[0])));
        let (cid, commit) = request(&outs, "OffsetCommit");
        let RequestKind::OffsetCommit(r) = &commit else { unreachable!() };
        assert_eq!(r.generation_id_or_member_epoch, 4, "{profile:?}: committed under the epoch");
        let parts: Vec<i32> = r.topics[0].partitions.iter().map(|p| p.partition_index).collect();
        assert_eq!(parts, committed_parts, "{profile:?}");
        assert!(
            !steps(&outs).contains(&"ConsumerGroupHeartbeat".to_string()),
            "no ack before the commit"
        );
        let outs = c.respond(cid, commit_ok(&commit, 0));
        let s = steps(&outs);
        let pos = |x: &str| s.iter().position(|y| y == x);
        assert!(
            pos(order[1]).is_some() && pos("ConsumerGroupHeartbeat") > pos("Revoked"),
            "{profile:?}: {s:?}"
        );
        let (_, ack) = heartbeat(&outs);
        assert_eq!(ack.topic_partitions.expect("owned")[0].partitions, vec![0]);
        assert_eq!(c.m.assigned(), [tp("t", 0)]);
    }
}

#[test]
fn java_commits_before_an_assignment_that_only_adds_librdkafka_does_not() {
    for (profile, commits) in
        [(ClientProfile::JavaConsumer, 1), (ClientProfile::LibrdkafkaConsumer, 0)]
    {
        let mut c = C::new(profile, None);
        c.joined(3, &[0]);
        let outs = c.advance_to(2_000);
        let (id, _) = heartbeat(&outs);
        let outs = c.respond(id, hb_ok(4, Some(&[0, 1])));
        let n = requests(&outs).iter().filter(|(_, r)| name(r) == "OffsetCommit").count();
        assert_eq!(n, commits, "{profile:?}");
    }
}

/// FENCED_MEMBER_EPOCH and UNKNOWN_MEMBER_ID: the partitions are lost without a commit and the
/// member rejoins at once with epoch 0 and the same member id.
#[test]
fn fencing_loses_partitions_without_committing_and_rejoins_with_epoch_zero() {
    for code in [E::FencedMemberEpoch.code(), E::UnknownMemberId.code()] {
        let mut c = C::new(ClientProfile::JavaConsumer, None);
        c.joined(3, &[0, 1]);
        let member_id = c.m.member_id().to_string();
        let outs = c.advance_to(2_000);
        let (id, _) = heartbeat(&outs);
        let outs = c.respond(id, hb_err(code));
        assert_eq!(
            steps(&outs),
            ["HeartbeatFailed", "Fenced", "Lost", "MemberEpochChanged", "ConsumerGroupHeartbeat"],
            "code {code}"
        );
        let (_, rejoin) = heartbeat(&outs);
        assert_eq!((rejoin.member_epoch, rejoin.member_id.as_str()), (0, member_id.as_str()));
        assert!(rejoin.subscribed_topic_names.is_some(), "a full heartbeat");
        assert!(c.m.assigned().is_empty());
        assert_eq!(c.m.state(), MemberState::Joining);
    }
}

#[test]
fn leaving_sends_minus_one_or_minus_two_for_a_static_member_after_revoking() {
    for (instance, epoch) in [(None, -1), (Some("i-1"), -2)] {
        let mut c = C::new(ClientProfile::JavaConsumer, instance);
        c.joined(3, &[0]);
        c.m.leave(c.now);
        let outs = c.out();
        let (cid, commit) = request(&outs, "OffsetCommit");
        let outs = c.respond(cid, commit_ok(&commit, 0));
        assert_eq!(steps(&outs)[..3], ["CommitAcked", "Revoked", "ConsumerGroupHeartbeat"]);
        let (id, hb) = heartbeat(&outs);
        assert_eq!(hb.member_epoch, epoch);
        let outs = c.respond(id, hb_ok(epoch, None));
        assert_eq!(steps(&outs), ["Left"]);
        assert!(c.m.is_finished());
    }
}

/// Regression: a static librdkafka member's leave was refused, so it could not leave for a
/// moment.
///
/// Mechanism: librdkafka sends the group instance id only in full heartbeats, and the leave
/// heartbeat was built like any other, so after the first (full) heartbeat a static member's
/// leave with epoch -2 went out without its instance id. Kafka refuses such a request
/// (INVALID_REQUEST, "InstanceId can't be null."), so the coordinator never learnt of the
/// temporary leave: the restarted process was refused UNRELEASED_INSTANCE_ID (fatal) instead of
/// taking its assignment back. librdkafka's leave (`rd_kafka_cgrp_consumer_leave`), like the
/// Java consumer's heartbeats, always carries the instance id.
/// Regression: a member preparing to leave dropped the epoch of a heartbeat answer that was in
/// flight when it decided to leave, so its commit before leaving went out under the older
/// epoch. Mechanism: the answer is not taken as a new assignment while the member gives its
/// partitions up, and the model returned before recording the epoch too — librdkafka's
/// behaviour before 2.12 (its #4672). The Java consumer records the epoch in PREPARE_LEAVING
/// and only then ignores the assignment; librdkafka 2.12 does the same.
#[test]
fn an_answer_in_flight_when_the_member_decides_to_leave_still_brings_its_epoch() {
    for profile in [ClientProfile::JavaConsumer, ClientProfile::LibrdkafkaConsumer] {
        let mut c = C::new(profile, None);
        c.joined(3, &[0]);
        let due = c.advance_to(c.now + 2_000);
        let (in_flight, _) = heartbeat(&due);
        c.m.leave(c.now);
        let _ = c.out();
        assert_eq!(c.m.state(), MemberState::PrepareLeaving, "{profile:?}");
        let outs = c.respond(in_flight, hb_ok(4, Some(&[0, 1])));
        let changed = events(&outs)
            .into_iter()
            .any(|e| matches!(e, MemberEvent::MemberEpochChanged { previous: 3, epoch: 4, .. }));
        assert!(changed, "{profile:?}: {outs:?}");
        assert_eq!(c.m.state(), MemberState::PrepareLeaving, "{profile:?}: no new assignment");
    }
}

#[test]
fn a_static_members_leave_heartbeat_carries_its_instance_id_in_both_profiles() {
    for profile in [ClientProfile::JavaConsumer, ClientProfile::LibrdkafkaConsumer] {
        let mut c = C::new(profile, Some("i-1"));
        c.joined(3, &[0]);
        let outs = c.advance_to(2_000);
        let (id, beat) = heartbeat(&outs);
        c.respond(id, hb_ok(3, None));
        c.m.leave(c.now);
        let mut outs = c.out();
        if let Some((cid, commit)) =
            requests(&outs).into_iter().find(|(_, r)| name(r) == "OffsetCommit")
        {
            outs = c.respond(cid, commit_ok(&commit, 0));
        }
        outs.extend(c.advance_to(c.now + 100));
        let (_, leave) = heartbeat(&outs);
        assert_eq!(leave.member_epoch, -2, "{profile:?}");
        assert_eq!(leave.instance_id.as_deref(), Some("i-1"), "{profile:?}");
        if profile == ClientProfile::LibrdkafkaConsumer {
            assert!(beat.instance_id.is_none(), "a minimal librdkafka heartbeat has none");
        }
    }
}

/// STALE_MEMBER_EPOCH on the commit before revocation: Java retries it (with the latest epoch)
/// until it succeeds or the rebalance timeout passes, and only then revokes.
#[test]
fn a_stale_member_epoch_commit_before_revocation_is_retried_by_java() {
    let mut c = C::new(ClientProfile::JavaConsumer, None);
    c.joined(3, &[0, 1]);
    let outs = c.advance_to(2_000);
    let (id, _) = heartbeat(&outs);
    let outs = c.respond(id, hb_ok(4, Some(&[0])));
    let (cid, commit) = request(&outs, "OffsetCommit");
    let outs = c.respond(cid, commit_ok(&commit, E::StaleMemberEpoch.code()));
    assert!(!steps(&outs).contains(&"Revoked".to_string()), "not revoked yet: {outs:?}");
    let outs = c.advance_to(c.now + 100);
    let (cid, commit) = request(&outs, "OffsetCommit");
    let outs = c.respond(cid, commit_ok(&commit, 0));
    assert!(steps(&outs).contains(&"Revoked".to_string()));
}

/// librdkafka: an auto-commit answered STALE_MEMBER_EPOCH expedites a heartbeat and is sent
/// again after its answer; Java waits for the next interval.
#[test]
fn a_stale_member_epoch_auto_commit_differs_between_profiles() {
    for (profile, heartbeat_now) in
        [(ClientProfile::LibrdkafkaConsumer, true), (ClientProfile::JavaConsumer, false)]
    {
        let mut c = C::new(profile, None);
        c.m = {
            let mut config = c.m.config().clone();
            config.commit_interval_ms = 1_000;
            ConsumerGroupMember::new(config, 7)
        };
        c.joined(3, &[0]);
        let outs = c.advance_to(1_000);
        let (cid, commit) = request(&outs, "OffsetCommit");
        let outs = c.respond(cid, commit_ok(&commit, E::StaleMemberEpoch.code()));
        let outs = [outs, c.advance_to(c.now + 1)].concat();
        let sent_hb = requests(&outs).iter().any(|(_, r)| name(r) == "ConsumerGroupHeartbeat");
        assert_eq!(sent_hb, heartbeat_now, "{profile:?}: {outs:?}");
        if heartbeat_now {
            let (id, _) = heartbeat(&outs);
            let outs = c.respond(id, hb_ok(4, None));
            let (_, again) = request(&outs, "OffsetCommit");
            let RequestKind::OffsetCommit(r) = again else { unreachable!() };
            assert_eq!(r.generation_id_or_member_epoch, 4, "sent again under the new epoch");
        }
    }
}

// ---- fetching and processing (the loop the classic member runs) ------------------------------

/// A revoke callback that runs `ms` long.
#[derive(Debug)]
struct SlowRevoke {
    ms: u64,
}

impl groupsim_member::Application for SlowRevoke {
    fn on_partitions_revoked(
        &mut self,
        _: Millis,
        _: i32,
        _: &[groupsim_member::TopicPartition],
    ) -> u64 {
        self.ms
    }
}

fn with_slow_revoke(profile: ClientProfile, ms: u64) -> C {
    let mut config = MemberConfig::new("g", "c-1", vec!["t".into()]).with_profile(profile);
    config.commit_interval_ms = 60_000;
    C { m: ConsumerGroupMember::with_application(config, 7, Box::new(SlowRevoke { ms })), now: 0 }
}

/// `(partition, first, last, generation)` of each processed batch.
fn processed(outs: &[MemberOutput]) -> Vec<(i32, i64, i64, i32)> {
    events(outs)
        .into_iter()
        .filter_map(|e| match e {
            MemberEvent::RecordsProcessed {
                partition,
                first_offset,
                last_offset,
                generation,
                ..
            } => Some((partition.partition, first_offset, last_offset, generation)),
            _ => None,
        })
        .collect()
}

/// `(partition, offset)` of an OffsetCommit request, and the epoch it carries.
fn committed(req: &RequestKind) -> (Vec<(i32, i64)>, i32) {
    let RequestKind::OffsetCommit(r) = req else { panic!("not a commit: {req:?}") };
    let offsets = common::commit_offsets(req).into_iter().map(|(_, p, o)| (p, o)).collect();
    (offsets, r.generation_id_or_member_epoch)
}

/// Records fetched once the assignment's committed offsets are known are processed under the
/// member epoch, and the auto-commit sends their next offsets under that epoch.
#[test]
fn records_fetched_after_assignment_are_processed_and_committed_under_the_member_epoch() {
    for profile in [ClientProfile::JavaConsumer, ClientProfile::LibrdkafkaConsumer] {
        let mut c = C::new(profile, None);
        let (fid, fetch) = c.joined(5, &[0]);
        assert_eq!(common::fetch_positions(&fetch), vec![("t".to_string(), 0, 10)]);
        let mut outs = c.respond(fid, common::fetch_answer(&[(0, 0, 10..13)]));
        outs.extend(c.advance_to(1_000));
        assert_eq!(processed(&outs), vec![(0, 10, 12, 5)], "{profile:?}");
        let outs = c.advance_to(61_000);
        let (cid, commit) = request(&outs, "OffsetCommit");
        assert_eq!(committed(&commit), (vec![(0, 13)], 5), "{profile:?}");
        let outs = c.respond(cid, commit_ok(&commit, 0));
        assert!(events(&outs)
            .iter()
            .any(|e| matches!(e, MemberEvent::CommitAcked { generation: 5, offset: 13, .. })));
    }
}

/// Giving a partition up commits what was processed on it before the acknowledging heartbeat:
/// Java commits every consumed offset before the revoke callback; librdkafka commits the
/// revoked partitions' offsets after the callback returns (here 500 ms later).
#[test]
fn a_revoked_partitions_processed_offsets_are_committed_before_the_ack_in_each_profiles_order() {
    for (profile, expected, at_answer) in [
        (ClientProfile::JavaConsumer, vec![(0, 13), (1, 15)], true),
        (ClientProfile::LibrdkafkaConsumer, vec![(1, 15)], false),
    ] {
        let mut c = with_slow_revoke(profile, 500);
        let (fid, _) = c.joined(3, &[0, 1]);
        let mut outs = c.respond(fid, common::fetch_answer(&[(0, 0, 10..13), (1, 0, 11..15)]));
        outs.extend(c.advance_to(1_900));
        let done: Vec<i32> = processed(&outs).iter().map(|b| b.0).collect();
        assert_eq!(done, vec![0, 1], "{profile:?}: both batches processed");
        let outs = c.advance_to(2_000);
        let (id, _) = heartbeat(&outs);
        let answer = c.respond(id, hb_ok(4, Some(&[0])));
        let later = c.advance_to(2_600);
        let (outs, other) = if at_answer { (&answer, &later) } else { (&later, &answer) };
        assert!(steps(other).iter().all(|s| s != "OffsetCommit"), "{profile:?}: {other:#?}");
        let (cid, commit) = request(outs, "OffsetCommit");
        assert_eq!(committed(&commit), (expected, 4), "{profile:?}");
        assert!(steps(outs).iter().all(|s| s != "ConsumerGroupHeartbeat"), "no ack before it");
        let mut outs = c.respond(cid, commit_ok(&commit, 0));
        outs.extend(c.advance_to(3_200));
        let s = steps(&outs);
        let pos = |x: &str| s.iter().position(|y| y == x);
        assert!(pos("Revoked").is_some(), "{profile:?}: {s:?}");
        assert!(pos("Revoked") < pos("ConsumerGroupHeartbeat"), "{profile:?}: {s:?}");
        let (_, ack) = heartbeat(&outs);
        assert_eq!(ack.topic_partitions.expect("owned")[0].partitions, vec![0]);
    }
}

/// While a partition is being revoked its records are dropped and it is not fetched again;
/// once revoked it is never fetched; the partition kept goes on.
#[test]
fn fetching_stops_for_revoked_partitions() {
    for profile in [ClientProfile::JavaConsumer, ClientProfile::LibrdkafkaConsumer] {
        let mut c = with_slow_revoke(profile, 0);
        let (fid, fetch) = c.joined(3, &[0, 1]);
        assert_eq!(common::fetch_positions(&fetch).len(), 2);
        let outs = c.advance_to(2_000);
        let (id, _) = heartbeat(&outs);
        let mut outs = c.respond(id, hb_ok(4, Some(&[0])));
        let (cid, commit) = request(&outs, "OffsetCommit");
        // The revocation waits for its commit; the old Fetch is answered meanwhile.
        outs = c.respond(fid, common::fetch_answer(&[(0, 0, 10..12), (1, 0, 11..13)]));
        outs.extend(c.advance_to(2_500));
        let (_, next) = request(&outs, "Fetch");
        assert_eq!(common::fetch_positions(&next), vec![("t".to_string(), 0, 12)], "{profile:?}");
        assert_eq!(processed(&outs).iter().map(|b| b.0).collect::<Vec<_>>(), vec![0]);
        let outs = c.respond(cid, commit_ok(&commit, 0));
        assert!(steps(&outs).contains(&"Revoked".to_string()), "{profile:?}");
        assert_eq!(c.m.assigned(), [tp("t", 0)]);
        let fetched: Vec<i32> = requests(&c.advance_to(10_000))
            .iter()
            .filter(|(_, r)| name(r) == "Fetch")
            .flat_map(|(_, r)| common::fetch_positions(r).into_iter().map(|(_, p, _)| p))
            .collect();
        assert!(!fetched.contains(&1), "{profile:?}: {fetched:?}");
    }
}

/// Regression: a reconciliation that revoked some partitions stopped the ones it kept.
///
/// Mechanism: the shared core stamps every Fetch, OffsetFetch and ListOffsets request, fetched
/// batch and batch in progress with the assignment epoch, and drops what comes back under an
/// older one. Finishing a reconciliation bumped that epoch for every partition, so the answer
/// to a Fetch that was in flight across the revocation was dropped for the kept partitions too,
/// and their "fetch in flight" mark was never cleared: the member never fetched them again and
/// their commits stopped short of the log end (the consumer-protocol churn runs ended `stuck`).
/// The Java consumer and librdkafka touch only the partitions that move; requests and batches
/// of the kept partitions now carry over to the new epoch.
#[test]
fn a_kept_partition_goes_on_being_fetched_across_a_revocation() {
    for profile in [ClientProfile::JavaConsumer, ClientProfile::LibrdkafkaConsumer] {
        let mut c = with_slow_revoke(profile, 0);
        let (fid, _) = c.joined(3, &[0, 1]);
        let outs = c.advance_to(2_000);
        let (id, _) = heartbeat(&outs);
        let mut outs = c.respond(id, hb_ok(4, Some(&[0])));
        if let Some((cid, commit)) =
            requests(&outs).into_iter().find(|(_, r)| name(r) == "OffsetCommit")
        {
            outs = c.respond(cid, commit_ok(&commit, 0));
        }
        outs.extend(c.advance_to(c.now + 100));
        assert!(steps(&outs).contains(&"Revoked".to_string()), "{profile:?}: {outs:#?}");
        assert_eq!(c.m.assigned(), [tp("t", 0)]);
        // The Fetch sent before the revocation is answered only now.
        let mut outs = c.respond(fid, common::fetch_answer(&[(0, 0, 10..13), (1, 0, 11..14)]));
        outs.extend(c.advance_to(c.now + 500));
        assert_eq!(processed(&outs), vec![(0, 10, 12, 4)], "{profile:?}: the kept partition");
        let (_, next) = request(&outs, "Fetch");
        assert_eq!(common::fetch_positions(&next), vec![("t".to_string(), 0, 13)], "{profile:?}");
    }
}

/// StaleAck on the consumer-protocol member: the next batch is detached from revocation, so the
/// revoke does not wait for it; its ack arrives after the partition was given up, carrying the
/// epoch it ran under, and is dropped (its offset is never committed).
#[test]
fn a_stale_ack_outlives_the_revocation_and_is_not_committed() {
    let mut c = with_slow_revoke(ClientProfile::LibrdkafkaConsumer, 0);
    let (fid, _) = c.joined(3, &[0, 1]);
    c.m.inject(c.now, groupsim_member::MemberFault::StaleAck { delay_ms: 10_000 });
    let mut outs = c.respond(fid, common::fetch_answer(&[(1, 0, 11..13)]));
    outs.extend(c.advance_to(2_000));
    assert!(processed(&outs).is_empty(), "the detached batch is still running");
    let (id, _) = heartbeat(&outs);
    let outs = c.respond(id, hb_ok(4, Some(&[0])));
    // The revoke does not wait for the detached batch: it commits partition 1 where it stands
    // (its committed offset, nothing processed since) and completes.
    let (cid, commit) = request(&outs, "OffsetCommit");
    assert_eq!(committed(&commit), (vec![(1, 11)], 4));
    let outs = c.respond(cid, commit_ok(&commit, 0));
    assert!(steps(&outs).contains(&"Revoked".to_string()), "{outs:#?}");
    assert_eq!(c.m.assigned(), [tp("t", 0)]);
    let outs = c.advance_to(13_000);
    assert_eq!(processed(&outs), vec![(1, 11, 12, 3)], "acked late, under epoch 3");
    let outs = c.advance_to(70_000);
    for (_, r) in requests(&outs).iter().filter(|(_, r)| name(r) == "OffsetCommit") {
        assert!(committed(r).0.iter().all(|(p, _)| *p != 1), "stale ack committed: {r:?}");
    }
}

// ---- bug switches (each shown with the switch on and off on the same script) ----------------

/// A member of `profile` with `bugs`, `commit_interval_ms` and each record taking `record_ms`.
fn with_bugs(
    profile: ClientProfile,
    bugs: groupsim_member::MemberBugs,
    commit_interval_ms: u64,
    record_ms: u64,
) -> C {
    let mut config = MemberConfig::new("g", "c-1", vec!["t".into()]).with_profile(profile);
    config.commit_interval_ms = commit_interval_ms;
    config.processing_ms_per_record = (record_ms, record_ms);
    config.bugs = bugs;
    C { m: ConsumerGroupMember::new(config, 7), now: 0 }
}

/// KAFKA-18641: the Java consumer's background thread read the consumed positions for its
/// auto-commit while the application was still processing the records the last poll handed
/// it. With the switch, the auto-commit at 1 s covers the batch that finishes at 1.5 s; a
/// crash in between would lose those records. Without it, the commit stays at what was
/// processed.
#[test]
fn committing_unprocessed_positions_covers_the_batch_in_progress() {
    for (on, expected) in [(false, 10), (true, 13)] {
        let bugs =
            groupsim_member::MemberBugs { commits_unprocessed_positions: on, ..Default::default() };
        let mut c = with_bugs(ClientProfile::JavaConsumer, bugs, 1_000, 500);
        let (fid, _) = c.joined(3, &[0]);
        let start = c.now;
        let mut outs = c.respond(fid, common::fetch_answer(&[(0, 0, 10..13)]));
        outs.extend(c.advance_to(start + 1_000));
        assert!(processed(&outs).is_empty(), "the batch runs until 1.5 s");
        let (_, commit) = request(&outs, "OffsetCommit");
        assert_eq!(committed(&commit), (vec![(0, expected)], 3), "switch on: {on}");
        let outs = c.advance_to(start + 1_600);
        assert_eq!(processed(&outs), vec![(0, 10, 12, 3)]);
    }
}

/// A member that keeps its partitions when fenced rejoins still consuming them and, back in
/// the group, commits them under its new epoch although the coordinator gave them to others
/// with the fencing. Without the switch they are lost (no commit) before the rejoin.
#[test]
fn keeping_partitions_when_fenced_commits_them_under_the_new_epoch() {
    for on in [false, true] {
        let bugs =
            groupsim_member::MemberBugs { keeps_partitions_when_fenced: on, ..Default::default() };
        let mut c = with_bugs(ClientProfile::JavaConsumer, bugs, 60_000, 1);
        c.joined(3, &[0, 1]);
        let outs = c.advance_to(2_000);
        let (id, _) = heartbeat(&outs);
        let outs = c.respond(id, hb_err(E::FencedMemberEpoch.code()));
        assert_eq!(steps(&outs).contains(&"Lost".to_string()), !on, "{outs:#?}");
        let (id, rejoin) = heartbeat(&outs);
        assert_eq!(rejoin.member_epoch, 0);
        let reported = rejoin.topic_partitions.expect("a full heartbeat");
        assert!(reported.is_empty(), "a rejoin reports nothing owned");
        assert_eq!(c.m.assigned().len(), if on { 2 } else { 0 });
        // Back in the group at epoch 5 with partition 2 only.
        let outs = c.respond(id, hb_ok(5, Some(&[2])));
        let commits: Vec<_> = requests(&outs)
            .into_iter()
            .filter(|(_, r)| name(r) == "OffsetCommit")
            .map(|(_, r)| committed(&r))
            .collect();
        if on {
            assert_eq!(commits, vec![(vec![(0, 10), (1, 11)], 5)], "lost partitions committed");
        } else {
            assert!(commits.is_empty(), "{commits:?}");
        }
    }
}

/// `max.poll.interval.ms` (the rebalance timeout the member sends): a batch that runs past it
/// expires the poll timer. Both clients leave at once — a leave heartbeat with epoch -1, no
/// commit and no revoke callback — and go STALE with their partitions lost; the leave's answer
/// changes nothing; when the overrunning batch ends (the application polls again) the member
/// rejoins with epoch 0 and the member id it drew, and the late batch is never committed.
#[test]
fn a_batch_past_max_poll_leaves_goes_stale_and_rejoins_when_polled_again() {
    for profile in [ClientProfile::JavaConsumer, ClientProfile::LibrdkafkaConsumer] {
        let mut c = C::new(profile, None);
        let mut config = c.m.config().clone();
        config.rebalance_timeout_ms = 5_000;
        c.m = ConsumerGroupMember::new(config, 7);
        let (fid, _) = c.joined(3, &[0]);
        let member_id = c.m.member_id().to_string();
        c.m.inject(c.now, groupsim_member::MemberFault::SlowBatch { extra_ms: 20_000 });
        let mut outs = c.respond(fid, common::fetch_answer(&[(0, 0, 10..13)]));
        outs.extend(c.advance_to(4_900));
        for (id, r) in requests(&outs) {
            if name(&r) == "ConsumerGroupHeartbeat" {
                c.respond(id, hb_ok(3, None));
            }
        }
        assert_eq!(c.m.state(), MemberState::Stable, "{profile:?}");
        let outs = c.advance_to(5_100);
        let leave = requests(&outs)
            .into_iter()
            .find_map(|(id, r)| match r {
                RequestKind::ConsumerGroupHeartbeat(h) if h.member_epoch == -1 => Some(id),
                _ => None,
            })
            .unwrap_or_else(|| panic!("{profile:?}: no leave heartbeat in {outs:#?}"));
        assert!(requests(&outs).iter().all(|(_, r)| name(r) != "OffsetCommit"), "{profile:?}");
        assert!(events(&outs).iter().any(
            |e| matches!(e, MemberEvent::Lost { reason, partitions, .. } if reason == "POLL_TIMEOUT" && partitions == &[tp("t", 0)])
        ));
        assert_eq!(c.m.state(), MemberState::Stale);
        assert!(c.m.assigned().is_empty());
        assert!(c.respond(leave, hb_ok(-1, None)).is_empty(), "the leave's answer is ignored");
        assert!(!c.m.is_finished());
        let outs = c.advance_to(15_000);
        assert!(requests(&outs).is_empty(), "{profile:?}: a stale member sends nothing: {outs:#?}");
        let outs = c.advance_to(21_000);
        let (_, rejoin) = heartbeat(&outs);
        assert_eq!((rejoin.member_epoch, rejoin.member_id.as_str()), (0, member_id.as_str()));
        assert!(rejoin.subscribed_topic_names.is_some(), "a full heartbeat");
        assert_eq!(c.m.state(), MemberState::Joining);
        assert!(requests(&outs).iter().all(|(_, r)| name(r) != "OffsetCommit"), "{outs:#?}");
    }
}

/// A stale ack or slow batch injected while the member had nothing to process waits for the
/// next batch; when the faults end first, it is dropped: the first batch after the heal runs
/// at its own pace. (Swarm seed 20 with fault breadth: a member out of the group for the whole
/// fault phase carried a stale ack and a slow batch into the liveness phase, and its first
/// batch there took 50 s: a stalled member the faults, not the client, made.)
#[test]
fn faults_no_batch_took_up_are_dropped_when_the_faults_end() {
    for heal in [false, true] {
        let mut c = C::new(ClientProfile::JavaConsumer, None);
        c.m.inject(0, groupsim_member::MemberFault::StaleAck { delay_ms: 20_000 });
        c.m.inject(0, groupsim_member::MemberFault::SlowBatch { extra_ms: 20_000 });
        if heal {
            c.m.heal_pending_faults();
        }
        let (fid, _) = c.joined(3, &[0]);
        let mut outs = c.respond(fid, common::fetch_answer(&[(0, 0, 10..13)]));
        outs.extend(c.advance_to(1_000));
        let done = !processed(&outs).is_empty();
        assert_eq!(done, heal, "healed {heal}: processed within a second: {done}");
    }
}
