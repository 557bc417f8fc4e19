//! What the group coordinator records: the history's own copy of the coordinator's events.
//!
//! The shapes follow the coordinator's events field for field (sim converts them at the edge),
//! so the JSON form and the debug text of a history do not depend on the core's types.

use groupsim_wire::{Millis, TopicPartition};
use serde::{Deserialize, Serialize};

use crate::consumer::ConsumerGroupEvent;

/// A classic group's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum GroupState {
    /// No members.
    Empty,
    /// Collecting JoinGroup requests.
    PreparingRebalance,
    /// Waiting for the leader's SyncGroup.
    CompletingRebalance,
    /// Every member has its assignment.
    Stable,
    /// The group was removed here.
    Dead,
}

impl GroupState {
    /// Kafka's name for the state, as DescribeGroups reports it.
    pub fn kafka_name(self) -> &'static str {
        match self {
            GroupState::Empty => "Empty",
            GroupState::PreparingRebalance => "PreparingRebalance",
            GroupState::CompletingRebalance => "CompletingRebalance",
            GroupState::Stable => "Stable",
            GroupState::Dead => "Dead",
        }
    }
}

/// Why a member left a classic group.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum RemovalReason {
    /// It sent LeaveGroup.
    LeaveGroup,
    /// Its session expired.
    SessionTimeout,
    /// It did not rejoin within the rebalance timeout.
    RebalanceTimeout,
    /// A pending member never came back.
    PendingJoinExpired,
    /// A newer member id took over its static instance id.
    Fenced,
}

/// One fact from a group coordinator.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum CoordinatorEvent {
    /// The group changed state.
    GroupStateChanged { group: String, from: GroupState, to: GroupState, generation: i32 },
    /// A member joined the group.
    MemberAdded {
        group: String,
        member_id: String,
        group_instance_id: Option<String>,
        client_id: String,
    },
    /// A member left the group.
    MemberRemoved { group: String, member_id: String, reason: RemovalReason },
    /// A join phase completed with a new generation.
    GenerationStarted {
        group: String,
        generation: i32,
        protocol: Option<String>,
        leader: Option<String>,
        members: Vec<String>,
    },
    /// The leader's assignment of a generation was stored.
    AssignmentStored { group: String, generation: i32, assignments: Vec<MemberAssignment> },
    /// A commit's append completed; `validated_at_ms` is when it was checked against the group.
    OffsetCommitAccepted {
        group: String,
        member_id: String,
        generation: i32,
        partition: TopicPartition,
        offset: i64,
        validated_at_ms: Millis,
    },
    /// A commit was refused with Kafka's error `error`.
    OffsetCommitRejected {
        group: String,
        member_id: String,
        generation: i32,
        partition: TopicPartition,
        offset: i64,
        error: String,
    },
    /// The group was loaded from the offsets log, with its committed offsets.
    GroupLoaded {
        group: String,
        partition: i32,
        state: GroupState,
        generation: i32,
        protocol: Option<String>,
        leader: Option<String>,
        members: Vec<String>,
        assignments: Vec<MemberAssignment>,
        #[serde(default)]
        offsets: Vec<(TopicPartition, i64)>,
    },
    /// The group was unloaded from this broker.
    GroupUnloaded { group: String, partition: i32 },
    /// A fact about a KIP-848 consumer group.
    ConsumerGroup(ConsumerGroupEvent),
}

/// One member's share of a classic generation's assignment.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemberAssignment {
    /// The member id.
    pub member_id: String,
    /// Its partitions, sorted.
    pub partitions: Vec<TopicPartition>,
}
