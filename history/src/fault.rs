//! The faults a history records as injected: the history's own copy of the fault vocabulary
//! every mode shares (simulated runs, `serve`, `check-client`), with the client profiles and
//! assignors a rolling upgrade names and the group APIs and error answers the real-time
//! nemesis aims at. Each variant's display text is written here, once.

use std::fmt;

use groupsim_wire::Millis;
use serde::{Deserialize, Serialize};

/// One injected fault, as the history records it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Fault {
    /// Every connection of one member is reset.
    ConnectionDrop { member: String },
    /// A host is cut off from some peers until healed.
    NetworkPartition { host: String, peers: Vec<String>, heal_after_ms: Millis },
    /// A host's messages take up to `max_latency_ms` for a while.
    LatencySpike { host: String, max_latency_ms: Millis, duration_ms: Millis },
    /// The group's offsets partition moves to broker `to`, whose load takes `load_ms`.
    CoordinatorMove { group: String, to: i32, load_ms: Millis },
    /// A broker crashes and restarts after a while.
    BrokerCrash { node: i32, restart_after_ms: Millis },
    /// A member stops handling anything for `duration_ms`.
    MemberPause { member: String, duration_ms: Millis },
    /// A member process crashes and restarts as a new member.
    MemberCrash { member: String, restart_after_ms: Millis },
    /// A member leaves gracefully and restarts after a while.
    MemberLeave { member: String, restart_after_ms: Millis },
    /// A member leaves and restarts with a new client profile and assignors.
    MemberUpgrade {
        member: String,
        restart_after_ms: Millis,
        profile: ClientProfile,
        assignors: Vec<AssignorKind>,
    },
    /// Processing in progress at a member finishes `delay_ms` late.
    StaleAck { member: String, delay_ms: Millis },
    /// The batch a member's poll loop is processing (or its next) takes `extra_ms` longer, and
    /// the loop waits for it: the application is stuck (a slow downstream call), not polling.
    SlowBatch { member: String, extra_ms: Millis },
    /// Frames from `from` to `to` are lost until healed; the other direction still delivers.
    OneWayPartition { from: String, to: String, heal_after_ms: Millis },
    /// Each frame to or from `host` is lost with probability `per_mille`/1000 for a while and
    /// retransmitted after TCP's retransmission timeout: late, never lost for good.
    FrameLoss { host: String, per_mille: u32, duration_ms: Millis },
    /// A member's next revoke callback takes `extra_ms` longer.
    SlowRevoke { member: String, extra_ms: Millis },
    /// A member's revoke callback does not return before `until_ms`.
    SlowRevokeUntil { member: String, until_ms: Millis },
    /// A topic gains partitions.
    PartitionExpansion { topic: String, partitions: i32 },
    /// Every connection to one broker, or to every broker when `broker` is `None`, is closed.
    ConnectionReset { broker: Option<i32> },
    /// Only the connection a member sends its group requests on is closed, while idle.
    GroupConnectionReset { member: String },
    /// Every answer of `broker` (all brokers when `None`) is delayed `delay_ms` for a while.
    ResponseDelay { broker: Option<i32>, delay_ms: Millis, duration_ms: Millis },
    /// A broker reads requests but answers none for `duration_ms`.
    Unresponsive { broker: i32, duration_ms: Millis },
    /// The next answer to `api` is held back `hold_ms`.
    HoldResponse { api: GroupApi, hold_ms: Millis },
    /// The next `count` requests of `api` get `error` instead of reaching the coordinator.
    InjectError { api: GroupApi, error: InjectedError, count: u32 },
    /// The coordinator starts a rebalance of the group, as a membership change would.
    ForceRebalance { group: String },
    /// A member is expelled from its group as if its session had expired.
    ExpelMember { member: String },
    /// A Kafka hazard, not a bug: the group coordinator reads `member`'s next `api` request
    /// (sent within `within_ms`) and processes it only `delay_ms` later — a stalled request
    /// handler — after the member gave up on it, and after whatever the member sent since on
    /// another connection. Kafka orders requests per connection only, so a late OffsetCommit
    /// can move the committed offset back below a newer one.
    LateRequest { member: String, api: GroupApi, delay_ms: Millis, within_ms: Millis },
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fault::ConnectionDrop { member } => write!(f, "connection drop: {member}"),
            Fault::NetworkPartition { host, peers, heal_after_ms } => {
                write!(
                    f,
                    "network partition: {host} from [{}] for {heal_after_ms} ms",
                    peers.join(", ")
                )
            }
            Fault::LatencySpike { host, max_latency_ms, duration_ms } => {
                write!(f, "latency spike: {host} up to {max_latency_ms} ms for {duration_ms} ms")
            }
            Fault::CoordinatorMove { group, to, load_ms } => {
                write!(f, "coordinator move: {group} to broker-{to} (load {load_ms} ms)")
            }
            Fault::BrokerCrash { node, restart_after_ms } => {
                write!(f, "broker crash: broker-{node}, restart after {restart_after_ms} ms")
            }
            Fault::MemberPause { member, duration_ms } => {
                write!(f, "pause: {member} for {duration_ms} ms")
            }
            Fault::MemberCrash { member, restart_after_ms } => {
                write!(f, "member crash: {member}, restart after {restart_after_ms} ms")
            }
            Fault::MemberLeave { member, restart_after_ms } => {
                write!(f, "graceful leave: {member}, restart after {restart_after_ms} ms")
            }
            Fault::MemberUpgrade { member, restart_after_ms, profile, assignors } => {
                let names: Vec<&str> = assignors.iter().map(|a| a.protocol_name()).collect();
                write!(
                    f,
                    "upgrade: {member} restarts after {restart_after_ms} ms as {profile:?} [{}]",
                    names.join(", ")
                )
            }
            Fault::StaleAck { member, delay_ms } => {
                write!(f, "stale ack: {member} acks {delay_ms} ms late")
            }
            Fault::SlowRevoke { member, extra_ms } => {
                write!(f, "slow revoke: {member} +{extra_ms} ms")
            }
            Fault::SlowBatch { member, extra_ms } => {
                write!(f, "slow batch: {member}'s poll loop is stuck {extra_ms} ms longer")
            }
            Fault::OneWayPartition { from, to, heal_after_ms } => {
                write!(f, "one-way partition: {from} -> {to} lost for {heal_after_ms} ms")
            }
            Fault::FrameLoss { host, per_mille, duration_ms } => {
                write!(f, "frame loss: {per_mille}/1000 of {host}'s frames retransmitted for {duration_ms} ms")
            }
            Fault::SlowRevokeUntil { member, until_ms } => {
                write!(
                    f,
                    "slow revoke: {member}'s callback returns at t={until_ms}ms at the earliest"
                )
            }
            Fault::PartitionExpansion { topic, partitions } => {
                write!(f, "partition expansion: {topic} to {partitions} partitions")
            }
            Fault::ConnectionReset { broker: None } => write!(f, "connection reset: all"),
            Fault::ConnectionReset { broker: Some(b) } => {
                write!(f, "connection reset: broker-{b}")
            }
            Fault::GroupConnectionReset { member } => {
                write!(f, "connection reset: {member}'s idle coordinator connection")
            }
            Fault::ResponseDelay { broker, delay_ms, duration_ms } => {
                let on = broker.map_or("all brokers".to_string(), |b| format!("broker-{b}"));
                write!(f, "response delay: {on} +{delay_ms} ms for {duration_ms} ms")
            }
            Fault::Unresponsive { broker, duration_ms } => {
                write!(f, "unresponsive: broker-{broker} answers nothing for {duration_ms} ms")
            }
            Fault::HoldResponse { api, hold_ms } => {
                write!(f, "hold the next {api:?} answer {hold_ms} ms")
            }
            Fault::InjectError { api, error, count } => {
                write!(f, "answer the next {count} {api:?} with {error:?}")
            }
            Fault::ForceRebalance { group } if group.is_empty() => write!(f, "forced rebalance"),
            Fault::ForceRebalance { group } => write!(f, "forced rebalance: {group}"),
            Fault::ExpelMember { member } => write!(f, "expel {member} (session expiry)"),
            Fault::LateRequest { member, api, delay_ms, within_ms } => write!(
                f,
                "late request: {member}'s next {api:?} (within {within_ms} ms) processed \
                 {delay_ms} ms after it is read"
            ),
        }
    }
}

/// The client a member models, by the simulation's profile name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ClientProfile {
    /// Java consumer, eager protocol.
    JavaEager,
    /// Java consumer, incremental cooperative protocol.
    JavaCooperative,
    /// brod (Erlang).
    Brod,
    /// Elsa (Elixir, on brod).
    Elsa,
    /// kafka-go.
    KafkaGo,
    /// Java consumer with `group.protocol=consumer`.
    JavaConsumer,
    /// librdkafka with `group.protocol=consumer`.
    LibrdkafkaConsumer,
}

/// A client-side assignor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum AssignorKind {
    /// `range`.
    Range,
    /// `roundrobin`.
    RoundRobin,
    /// `sticky`.
    Sticky,
    /// `cooperative-sticky`.
    CooperativeSticky,
    /// brod's `roundrobin_v2`.
    RoundRobinV2,
}

impl AssignorKind {
    /// The protocol name offered in JoinGroup.
    pub fn protocol_name(self) -> &'static str {
        match self {
            AssignorKind::Range => "range",
            AssignorKind::RoundRobin => "roundrobin",
            AssignorKind::Sticky => "sticky",
            AssignorKind::CooperativeSticky => "cooperative-sticky",
            AssignorKind::RoundRobinV2 => "roundrobin_v2",
        }
    }
}

/// The group APIs an answer can be held back on or replaced with an error for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum GroupApi {
    JoinGroup,
    SyncGroup,
    Heartbeat,
    OffsetCommit,
    OffsetFetch,
    /// KIP-848's one membership API.
    ConsumerGroupHeartbeat,
}

/// An error answer given instead of the coordinator's (the request is not applied).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum InjectedError {
    NotCoordinator,
    CoordinatorLoadInProgress,
    CoordinatorNotAvailable,
    RebalanceInProgress,
    RequestTimedOut,
}

impl InjectedError {
    /// Kafka's error code.
    pub fn code(self) -> i16 {
        match self {
            InjectedError::RequestTimedOut => 7,
            InjectedError::CoordinatorLoadInProgress => 14,
            InjectedError::CoordinatorNotAvailable => 15,
            InjectedError::NotCoordinator => 16,
            InjectedError::RebalanceInProgress => 27,
        }
    }
}
