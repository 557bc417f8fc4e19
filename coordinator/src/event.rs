//! Events the coordinator reports as they become true: the server half of a run's history.

use crate::consumer_event::ConsumerGroupEvent;
use crate::state::GroupState;
use crate::{Millis, TopicPartition};

/// Why a member left a group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RemovalReason {
    /// The member sent LeaveGroup.
    LeaveGroup,
    /// No heartbeat (or commit, or join/sync) within the session timeout.
    SessionTimeout,
    /// The member did not rejoin before the rebalance timeout ended the join phase.
    RebalanceTimeout,
    /// A pending member (told MEMBER_ID_REQUIRED) never came back.
    PendingJoinExpired,
    /// A static member's instance id was taken over by a newer member id.
    Fenced,
}

/// One ground-truth fact from the coordinator. The driver stamps it with the simulated time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CoordinatorEvent {
    /// The group moved between states (only Kafka's legal transitions occur).
    GroupStateChanged { group: String, from: GroupState, to: GroupState, generation: i32 },
    /// A member was added to the group (not a pending one).
    MemberAdded {
        group: String,
        member_id: String,
        group_instance_id: Option<String>,
        client_id: String,
    },
    /// A member was removed from the group.
    MemberRemoved { group: String, member_id: String, reason: RemovalReason },
    /// The join phase completed: a new generation with its leader, protocol and members.
    GenerationStarted {
        group: String,
        generation: i32,
        protocol: Option<String>,
        leader: Option<String>,
        members: Vec<String>,
    },
    /// The leader's SyncGroup was accepted: the assignment of this generation, decoded from the
    /// consumer protocol (members the leader left out appear with no partitions).
    AssignmentStored { group: String, generation: i32, assignments: Vec<MemberAssignment> },
    /// An offset commit was written to the offsets store and will be acknowledged. It is
    /// recorded when its append to the offsets log completes; `validated_at_ms` is when the
    /// coordinator checked the request against the group (member, generation, state), which
    /// may be before a rebalance that ended the member's generation while the append was under
    /// way (Kafka does not check again when the append completes).
    OffsetCommitAccepted {
        group: String,
        member_id: String,
        generation: i32,
        partition: TopicPartition,
        offset: i64,
        validated_at_ms: Millis,
    },
    /// An offset commit was refused; `error` is Kafka's error name.
    OffsetCommitRejected {
        group: String,
        member_id: String,
        generation: i32,
        partition: TopicPartition,
        offset: i64,
        error: String,
    },
    /// The group was loaded from the offsets log by the broker that now leads its offsets
    /// partition (Kafka's onGroupLoaded): Stable at the last stored generation with its members
    /// and assignment (or Empty when it had none). The stored generation may be older than the
    /// last GenerationStarted when a move interrupted a rebalance before its assignment was
    /// stored. Loaded members get fresh session deadlines.
    GroupLoaded {
        group: String,
        partition: i32,
        state: GroupState,
        generation: i32,
        protocol: Option<String>,
        leader: Option<String>,
        members: Vec<String>,
        assignments: Vec<MemberAssignment>,
        /// The committed offsets the group was loaded with, sorted by partition: what
        /// OffsetFetch serves from now on.
        offsets: Vec<(TopicPartition, i64)>,
    },
    /// The group was unloaded from this broker (its offsets partition moved away): it went Dead
    /// here, parked requests were answered NOT_COORDINATOR and its cache was dropped.
    GroupUnloaded { group: String, partition: i32 },
    /// A fact about a KIP-848 consumer group (see `consumer_event.rs`).
    ConsumerGroup(ConsumerGroupEvent),
}

/// One member's share of a generation's assignment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemberAssignment {
    /// The member id.
    pub member_id: String,
    /// Partitions assigned to it, sorted.
    pub partitions: Vec<TopicPartition>,
}
