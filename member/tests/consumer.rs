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
    fn joined(&mut self, epoch: i32, parts: &[i32]) {
        let (id, _) = self.first_heartbeat();
        let outs = self.respond(id, hb_ok(epoch, Some(parts)));
        let (ack, _) = heartbeat(&outs);
        let (id, _) = request(&outs, "OffsetFetch");
        let committed: Vec<(i32, i64)> = parts.iter().map(|p| (*p, 10 + *p as i64)).collect();
        assert!(requests(&self.respond(id, offset_fetch(&committed))).is_empty());
        assert!(requests(&self.respond(ack, hb_ok(epoch, None))).is_empty());
        assert_eq!(self.m.state(), MemberState::Stable);
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
