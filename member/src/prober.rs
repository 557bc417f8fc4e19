//! A misbehaving client: it sends the group's coordinator requests that Kafka must refuse in
//! every state of the group — malformed ConsumerGroupHeartbeats, JoinGroups with an empty group
//! id or a session timeout out of bounds, and group requests from a member id the group never
//! gave — the way a buggy or outdated client, a fuzzer or a port scanner would. Each answer is a
//! history event, so the checker can insist every one was refused and that none changed the
//! group. It joins nothing and commits nothing the coordinator should accept.
//!
//! The cases follow Kafka's request validation (GroupMetadataManager's
//! `throwIfConsumerGroupHeartbeatRequestIsInvalid`, the classic group's join, sync, heartbeat,
//! leave and offset-commit member checks, FindCoordinator's key type). NOT_COORDINATOR,
//! COORDINATOR_NOT_AVAILABLE and a failed request make it find the coordinator again.

use std::collections::BTreeMap;

use groupsim_wire::error_codes::{self as codes, error_name};
use kafka_protocol::messages::consumer_group_heartbeat_request::TopicPartitions;
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::leave_group_request::MemberIdentity;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::{
    ConsumerGroupHeartbeatRequest, FindCoordinatorRequest, GroupId, HeartbeatRequest,
    JoinGroupRequest, LeaveGroupRequest, OffsetCommitRequest, RequestKind, ResponseKind,
    SyncGroupRequest, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use rand::{RngExt, SeedableRng};

use crate::compat::sb;
use crate::shared::discovery::Discovery;
use crate::shared::outputs::Outputs;
use crate::{MemberConfig, MemberEvent, MemberFault, MemberOutput, Millis};
use crate::{RequestFailure, RequestId, Target};

/// Shortest and longest pause between two probes.
const CYCLE_MS: (u64, u64) = (300, 1_200);

/// A member id no coordinator gave (coordinators derive theirs from the client id).
const STRANGER: &str = "prober-stranger-0";

/// One request Kafka refuses in every group state, by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InvalidCase {
    /// ConsumerGroupHeartbeat at epoch 5 with an empty member id.
    HeartbeatEmptyMemberId,
    /// ConsumerGroupHeartbeat naming an empty group.
    HeartbeatEmptyGroupId,
    /// ConsumerGroupHeartbeat with an empty instance id.
    HeartbeatEmptyInstanceId,
    /// ConsumerGroupHeartbeat with an empty rack id.
    HeartbeatEmptyRackId,
    /// A join (epoch 0) without a rebalance timeout.
    HeartbeatJoinWithoutRebalanceTimeout,
    /// A join (epoch 0) claiming owned partitions.
    HeartbeatJoinOwningPartitions,
    /// A join (epoch 0) with neither topic names nor a regex.
    HeartbeatJoinWithoutSubscription,
    /// A static leave (epoch -2) without an instance id.
    HeartbeatStaticLeaveWithoutInstance,
    /// An epoch below -2.
    HeartbeatEpochBelowStaticLeave,
    /// A server assignor the broker does not have.
    HeartbeatUnknownAssignor,
    /// A heartbeat (epoch 3) from a member id the group never gave.
    HeartbeatStranger,
    /// A static member's heartbeat (epoch 3) for an instance id nobody holds.
    HeartbeatUnknownInstance,
    /// JoinGroup naming an empty group.
    JoinEmptyGroupId,
    /// JoinGroup with a session timeout below the broker's minimum.
    JoinSessionTimeoutTooShort,
    /// JoinGroup from a member id the group never gave.
    JoinStranger,
    /// JoinGroup from a stranger with a protocol type other than the group's.
    JoinForeignProtocolType,
    /// SyncGroup from a member id the group never gave.
    SyncStranger,
    /// Heartbeat from a member id the group never gave.
    ClassicHeartbeatStranger,
    /// LeaveGroup (a batch of one) for a member id the group never gave.
    LeaveStranger,
    /// OffsetCommit at generation 1 from a member id the group never gave.
    CommitStranger,
    /// FindCoordinator with a key type Kafka does not know.
    FindCoordinatorUnknownKeyType,
}

impl InvalidCase {
    /// Every case, in the order the seed draws from.
    pub const ALL: [InvalidCase; 21] = [
        InvalidCase::HeartbeatEmptyMemberId,
        InvalidCase::HeartbeatEmptyGroupId,
        InvalidCase::HeartbeatEmptyInstanceId,
        InvalidCase::HeartbeatEmptyRackId,
        InvalidCase::HeartbeatJoinWithoutRebalanceTimeout,
        InvalidCase::HeartbeatJoinOwningPartitions,
        InvalidCase::HeartbeatJoinWithoutSubscription,
        InvalidCase::HeartbeatStaticLeaveWithoutInstance,
        InvalidCase::HeartbeatEpochBelowStaticLeave,
        InvalidCase::HeartbeatUnknownAssignor,
        InvalidCase::HeartbeatStranger,
        InvalidCase::HeartbeatUnknownInstance,
        InvalidCase::JoinEmptyGroupId,
        InvalidCase::JoinSessionTimeoutTooShort,
        InvalidCase::JoinStranger,
        InvalidCase::JoinForeignProtocolType,
        InvalidCase::SyncStranger,
        InvalidCase::ClassicHeartbeatStranger,
        InvalidCase::LeaveStranger,
        InvalidCase::CommitStranger,
        InvalidCase::FindCoordinatorUnknownKeyType,
    ];

    /// The name in history events and reports.
    pub fn name(self) -> &'static str {
        match self {
            InvalidCase::HeartbeatEmptyMemberId => "heartbeat-empty-member-id",
            InvalidCase::HeartbeatEmptyGroupId => "heartbeat-empty-group-id",
            InvalidCase::HeartbeatEmptyInstanceId => "heartbeat-empty-instance-id",
            InvalidCase::HeartbeatEmptyRackId => "heartbeat-empty-rack-id",
            InvalidCase::HeartbeatJoinWithoutRebalanceTimeout => "heartbeat-join-no-timeout",
            InvalidCase::HeartbeatJoinOwningPartitions => "heartbeat-join-owning-partitions",
            InvalidCase::HeartbeatJoinWithoutSubscription => "heartbeat-join-no-subscription",
            InvalidCase::HeartbeatStaticLeaveWithoutInstance => {
                "heartbeat-static-leave-no-instance"
            }
            InvalidCase::HeartbeatEpochBelowStaticLeave => "heartbeat-epoch-below-minus-2",
            InvalidCase::HeartbeatUnknownAssignor => "heartbeat-unknown-assignor",
            InvalidCase::HeartbeatStranger => "heartbeat-stranger",
            InvalidCase::HeartbeatUnknownInstance => "heartbeat-unknown-instance",
            InvalidCase::JoinEmptyGroupId => "join-empty-group-id",
            InvalidCase::JoinSessionTimeoutTooShort => "join-session-timeout-too-short",
            InvalidCase::JoinStranger => "join-stranger",
            InvalidCase::JoinForeignProtocolType => "join-foreign-protocol-type",
            InvalidCase::SyncStranger => "sync-stranger",
            InvalidCase::ClassicHeartbeatStranger => "classic-heartbeat-stranger",
            InvalidCase::LeaveStranger => "leave-stranger",
            InvalidCase::CommitStranger => "commit-stranger",
            InvalidCase::FindCoordinatorUnknownKeyType => "find-coordinator-unknown-key-type",
        }
    }
}

/// What a request in flight was.
#[derive(Clone, Copy, Debug)]
enum Asked {
    FindCoordinator,
    Probe { case: InvalidCase, node: i32, sent_at: Millis },
}

/// The misbehaving client (see the module docs).
#[derive(Debug)]
pub struct InvalidRequestProber {
    config: MemberConfig,
    rng: rand_chacha::ChaCha8Rng,
    out: Outputs,
    coordinator: Option<i32>,
    in_flight: BTreeMap<RequestId, Asked>,
    next_cycle: Option<Millis>,
    finished: bool,
}

impl InvalidRequestProber {
    /// A prober of `config.group_id`, first reaching `config.bootstrap_node`.
    pub fn new(config: MemberConfig, seed: u64) -> Self {
        Self {
            config,
            rng: rand_chacha::ChaCha8Rng::seed_from_u64(seed),
            out: Outputs::default(),
            coordinator: None,
            in_flight: BTreeMap::new(),
            next_cycle: None,
            finished: false,
        }
    }

    /// Starts its first cycle at `now`.
    pub fn start(&mut self, now: Millis) {
        self.cycle(now);
    }

    /// Stops for good (it has no group to leave).
    pub fn leave(&mut self, _now: Millis) {
        self.finished = true;
        self.next_cycle = None;
    }

    /// A fault aimed at a member's processing: it has none to slow.
    pub fn inject(&mut self, _now: Millis, _fault: MemberFault) {}

    /// Nothing pending to heal.
    pub fn heal_pending_faults(&mut self) {}

    /// It has no member id.
    pub fn member_id(&self) -> &str {
        ""
    }

    /// Whether it stopped for good.
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// When the next cycle is due.
    pub fn poll_timeout(&self) -> Option<Millis> {
        self.next_cycle
    }

    /// Starts the cycle that is due.
    pub fn handle_timeout(&mut self, now: Millis) {
        if self.next_cycle.is_some_and(|t| t <= now) {
            self.cycle(now);
        }
    }

    /// The next output for the driver.
    pub fn poll_output(&mut self) -> Option<MemberOutput> {
        self.out.pop()
    }

    /// One cycle: find the coordinator, or send it one drawn case; the next cycle is drawn.
    fn cycle(&mut self, now: Millis) {
        if self.finished {
            return;
        }
        match self.coordinator {
            None => {
                let req = Discovery::request(&self.config.group_id);
                let id = self.out.send(
                    Target::Broker(self.config.bootstrap_node),
                    RequestKind::FindCoordinator(req),
                    self.config.request_timeout_ms,
                );
                self.in_flight.insert(id, Asked::FindCoordinator);
            }
            Some(node) => {
                let case = InvalidCase::ALL[self.rng.random_range(0..InvalidCase::ALL.len())];
                let id = self.out.send(
                    Target::Coordinator(node),
                    request(case, &self.config.group_id, &self.config.topics),
                    self.config.request_timeout_ms,
                );
                self.in_flight.insert(id, Asked::Probe { case, node, sent_at: now });
            }
        }
        self.next_cycle = Some(now + self.rng.random_range(CYCLE_MS.0..=CYCLE_MS.1));
    }

    /// The answer to request `id`.
    pub fn handle_response(&mut self, _now: Millis, id: RequestId, response: ResponseKind) {
        match self.in_flight.remove(&id) {
            Some(Asked::FindCoordinator) => {
                if let ResponseKind::FindCoordinator(r) = response {
                    self.coordinator = Discovery::read_answer(&r, &self.config.group_id);
                }
            }
            Some(Asked::Probe { case, node, sent_at }) => {
                let code = answer_code(&response);
                if code == codes::NOT_COORDINATOR || code == codes::COORDINATOR_NOT_AVAILABLE {
                    self.coordinator = None;
                }
                self.out.emit(MemberEvent::InvalidRequestAnswered {
                    node_id: node,
                    sent_at,
                    case: case.name().into(),
                    error: (code != codes::NONE).then(|| error_name(code)),
                });
            }
            None => {}
        }
    }

    /// Request `id` got no answer: the coordinator is found again next cycle.
    pub fn handle_failure(&mut self, _now: Millis, id: RequestId, _failure: RequestFailure) {
        if self.in_flight.remove(&id).is_some() {
            self.coordinator = None;
        }
    }
}

/// The request for `case` to group `group` (subscribed to `topics` where a case needs some).
fn request(case: InvalidCase, group: &str, topics: &[String]) -> RequestKind {
    use InvalidCase as C;
    let names = Some(topics.iter().map(|t| TopicName(sb(t))).collect::<Vec<_>>());
    // A join as the Java consumer sends it, which each heartbeat case spoils in one field.
    let join = ConsumerGroupHeartbeatRequest::default()
        .with_group_id(GroupId(sb(group)))
        .with_member_id(sb(STRANGER))
        .with_member_epoch(0)
        .with_rebalance_timeout_ms(30_000)
        .with_subscribed_topic_names(names)
        .with_topic_partitions(Some(Vec::new()));
    let heartbeat = match case {
        C::HeartbeatEmptyMemberId => {
            Some(join.with_member_id(StrBytes::default()).with_member_epoch(5))
        }
        C::HeartbeatEmptyGroupId => Some(join.with_group_id(GroupId(StrBytes::default()))),
        C::HeartbeatEmptyInstanceId => Some(join.with_instance_id(Some(StrBytes::default()))),
        C::HeartbeatEmptyRackId => Some(join.with_rack_id(Some(StrBytes::default()))),
        C::HeartbeatJoinWithoutRebalanceTimeout => Some(join.with_rebalance_timeout_ms(-1)),
        C::HeartbeatJoinOwningPartitions => {
            let owned = TopicPartitions::default().with_partitions(vec![0]);
            Some(join.with_topic_partitions(Some(vec![owned])))
        }
        C::HeartbeatJoinWithoutSubscription => Some(join.with_subscribed_topic_names(None)),
        C::HeartbeatStaticLeaveWithoutInstance => Some(join.with_member_epoch(-2)),
        C::HeartbeatEpochBelowStaticLeave => Some(join.with_member_epoch(-3)),
        C::HeartbeatUnknownAssignor => {
            Some(join.with_server_assignor(Some(sb("no-such-assignor"))))
        }
        C::HeartbeatStranger => Some(join.with_member_epoch(3)),
        C::HeartbeatUnknownInstance => {
            Some(join.with_member_epoch(3).with_instance_id(Some(sb("prober-instance"))))
        }
        _ => None,
    };
    if let Some(h) = heartbeat {
        return RequestKind::ConsumerGroupHeartbeat(h);
    }
    // Both protocols the catalogue's groups use, so the group's protocol check passes.
    let protocols = ["range", "cooperative-sticky"]
        .map(|name| JoinGroupRequestProtocol::default().with_name(sb(name)))
        .to_vec();
    let classic_join = JoinGroupRequest::default()
        .with_group_id(GroupId(sb(group)))
        .with_session_timeout_ms(10_000)
        .with_rebalance_timeout_ms(30_000)
        .with_member_id(sb(STRANGER))
        .with_protocol_type(sb("consumer"))
        .with_protocols(protocols);
    match case {
        C::JoinEmptyGroupId => {
            RequestKind::JoinGroup(classic_join.with_group_id(GroupId(StrBytes::default())))
        }
        C::JoinSessionTimeoutTooShort => RequestKind::JoinGroup(
            classic_join.with_member_id(StrBytes::default()).with_session_timeout_ms(1),
        ),
        C::JoinStranger => RequestKind::JoinGroup(classic_join),
        C::JoinForeignProtocolType => {
            RequestKind::JoinGroup(classic_join.with_protocol_type(sb("connect")))
        }
        C::SyncStranger => RequestKind::SyncGroup(
            SyncGroupRequest::default()
                .with_group_id(GroupId(sb(group)))
                .with_generation_id(1)
                .with_member_id(sb(STRANGER))
                .with_protocol_type(Some(sb("consumer")))
                .with_protocol_name(Some(sb("range"))),
        ),
        C::ClassicHeartbeatStranger => RequestKind::Heartbeat(
            HeartbeatRequest::default()
                .with_group_id(GroupId(sb(group)))
                .with_generation_id(1)
                .with_member_id(sb(STRANGER)),
        ),
        C::LeaveStranger => RequestKind::LeaveGroup(
            LeaveGroupRequest::default()
                .with_group_id(GroupId(sb(group)))
                .with_members(vec![MemberIdentity::default().with_member_id(sb(STRANGER))]),
        ),
        C::CommitStranger => {
            let topic = topics.first().map(String::as_str).unwrap_or("orders");
            let partition = OffsetCommitRequestPartition::default()
                .with_partition_index(0)
                .with_committed_offset(1);
            RequestKind::OffsetCommit(
                OffsetCommitRequest::default()
                    .with_group_id(GroupId(sb(group)))
                    .with_generation_id_or_member_epoch(1)
                    .with_member_id(sb(STRANGER))
                    .with_topics(vec![OffsetCommitRequestTopic::default()
                        .with_name(TopicName(sb(topic)))
                        .with_partitions(vec![partition])]),
            )
        }
        _ => RequestKind::FindCoordinator(
            FindCoordinatorRequest::default()
                .with_key_type(7)
                .with_coordinator_keys(vec![sb(group)]),
        ),
    }
}

/// The error an answer gives the probe: the top-level code, or for answers that carry one per
/// member or partition, the first that is not NONE (NONE when all are).
fn answer_code(response: &ResponseKind) -> i16 {
    match response {
        ResponseKind::ConsumerGroupHeartbeat(r) => r.error_code,
        ResponseKind::JoinGroup(r) => r.error_code,
        ResponseKind::SyncGroup(r) => r.error_code,
        ResponseKind::Heartbeat(r) => r.error_code,
        ResponseKind::LeaveGroup(r) if r.error_code != codes::NONE => r.error_code,
        ResponseKind::LeaveGroup(r) => r
            .members
            .iter()
            .map(|m| m.error_code)
            .find(|&c| c != codes::NONE)
            .unwrap_or(codes::NONE),
        ResponseKind::OffsetCommit(r) => (r.topics.iter())
            .flat_map(|t| t.partitions.iter().map(|p| p.error_code))
            .find(|&c| c != codes::NONE)
            .unwrap_or(codes::NONE),
        ResponseKind::FindCoordinator(r) if r.error_code != codes::NONE => r.error_code,
        ResponseKind::FindCoordinator(r) => (r.coordinators.iter())
            .map(|c| c.error_code)
            .find(|&c| c != codes::NONE)
            .unwrap_or(codes::NONE),
        _ => codes::NONE,
    }
}

#[cfg(test)]
#[path = "prober_tests.rs"]
mod tests;
