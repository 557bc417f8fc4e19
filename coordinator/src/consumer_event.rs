//! History events of KIP-848 consumer groups: what the coordinator decided about member epochs,
//! target assignments and partition ownership, recorded as it happens.
//!
//! A leaf module beside `event.rs`, wrapped in [`crate::CoordinatorEvent::ConsumerGroup`] so
//! classic histories never see these. Ownership in a consumer group follows these events: a
//! partition is the member's from `PartitionsAssigned` until `PartitionsReleased` (the member
//! acknowledged revoking it, or was fenced or left), and the coordinator hands a partition to a
//! new owner only after the previous owner's release. Every list is sorted.

use crate::TopicPartition;

/// Why a member left a consumer group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConsumerRemovalReason {
    /// It sent a heartbeat with member epoch -1 (or a static member left for good).
    Left,
    /// No heartbeat within the session timeout.
    SessionTimeout,
    /// It did not acknowledge revoking its partitions within its rebalance timeout.
    RebalanceTimeout,
    /// A static member whose instance id a new member id took over.
    Replaced,
    /// A classic member told to rejoin did not rejoin within its rebalance timeout.
    JoinTimeout,
    /// A classic member did not send SyncGroup within its rebalance timeout after joining.
    SyncTimeout,
}

/// One member's share of a target assignment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TargetShare {
    /// The member id.
    pub member_id: String,
    /// Its target partitions.
    pub partitions: Vec<TopicPartition>,
}

/// One member as loaded from the offsets log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadedMember {
    /// The member id.
    pub member_id: String,
    /// Its `group.instance.id`, when static.
    pub group_instance_id: Option<String>,
    /// Its member epoch.
    pub member_epoch: i32,
    /// Partitions it owns (assigned, and pending revocation).
    pub owned: Vec<TopicPartition>,
    /// Of those, the partitions it must revoke.
    pub revoking: Vec<TopicPartition>,
    /// Its reconciliation state (Kafka's name: `STABLE`, `UNREVOKED_PARTITIONS`, ...).
    pub state: String,
    /// Its partitions in the loaded target assignment.
    pub target: Vec<TopicPartition>,
    /// It speaks the classic protocol (a group loaded mid-migration).
    pub classic_protocol: bool,
}

/// One member of a group converted between the protocols.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConvertedMember {
    /// The member id.
    pub member_id: String,
    /// Its member epoch (upgrade: the classic generation; downgrade: its epoch before).
    pub member_epoch: i32,
    /// Upgrade: the partitions it owns in the consumer group (its classic assignment).
    /// Downgrade: the assignment the classic group stores for it (its target assignment).
    pub partitions: Vec<TopicPartition>,
}

/// One fact about a consumer group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConsumerGroupEvent {
    /// A member joined (member epoch 0 heartbeat accepted).
    MemberJoined {
        group: String,
        member_id: String,
        group_instance_id: Option<String>,
        client_id: String,
        /// It joined with JoinGroup (a classic-protocol member inside the consumer group).
        classic_protocol: bool,
    },
    /// The group epoch was bumped (membership, subscriptions or subscribed topics changed).
    GroupEpochBumped { group: String, epoch: i32 },
    /// A new target assignment was computed for `epoch` by `assignor`.
    TargetAssignmentComputed {
        group: String,
        epoch: i32,
        assignor: String,
        assignments: Vec<TargetShare>,
    },
    /// A member's epoch or reconciliation state changed.
    MemberEpochChanged { group: String, member_id: String, from: i32, to: i32, state: String },
    /// Partitions were handed to a member (it will find them in its heartbeat answer).
    PartitionsAssigned {
        group: String,
        member_id: String,
        member_epoch: i32,
        partitions: Vec<TopicPartition>,
    },
    /// A member was asked to revoke partitions; it still owns them until it acknowledges.
    PartitionsRevoking {
        group: String,
        member_id: String,
        member_epoch: i32,
        partitions: Vec<TopicPartition>,
    },
    /// A member no longer owns partitions: it acknowledged their revocation, or it was removed.
    PartitionsReleased {
        group: String,
        member_id: String,
        member_epoch: i32,
        partitions: Vec<TopicPartition>,
    },
    /// A member was removed from the group (fenced, left, or replaced).
    MemberRemoved {
        group: String,
        member_id: String,
        member_epoch: i32,
        reason: ConsumerRemovalReason,
    },
    /// The group was rebuilt from the offsets log by the coordinator that now owns its partition.
    GroupLoaded {
        group: String,
        partition: i32,
        group_epoch: i32,
        assignment_epoch: i32,
        members: Vec<LoadedMember>,
    },
    /// Online upgrade (Kafka's convertToConsumerGroup): a ConsumerGroupHeartbeat joining a
    /// classic group of generation `generation` made it a consumer group at group epoch and
    /// target assignment epoch `generation`, whose members are the classic members, each at
    /// member epoch `generation`, Stable, owning its classic assignment (which is also its
    /// target). The classic group's parked JoinGroup and SyncGroup requests were answered
    /// REBALANCE_IN_PROGRESS. The joining member follows as `MemberJoined`.
    GroupUpgraded { group: String, generation: i32, members: Vec<ConvertedMember> },
    /// Online downgrade (Kafka's convertToClassicGroup): the last consumer-protocol member
    /// (`leaving_member`, already removed and released) left a group of classic members, so it
    /// became a classic group, Stable at generation `group_epoch`, each member storing its target
    /// assignment; a rebalance follows (GroupStateChanged to PreparingRebalance).
    GroupDowngraded {
        group: String,
        group_epoch: i32,
        leaving_member: String,
        members: Vec<ConvertedMember>,
    },
    /// Kafka's validateOnlineUpgrade (or the conversion itself) refused to make classic group
    /// `group` a consumer group for joining consumer-protocol member `member_id`, which was
    /// answered GROUP_ID_NOT_FOUND; `reason` is `policy` (group.consumer.migration.policy),
    /// `protocol` (not the consumer protocol type), `size` (above group.consumer.max.size) or
    /// `malformed` (an embedded assignment or subscription that does not parse).
    UpgradeRefused { group: String, member_id: String, reason: String },
    /// A classic JoinGroup found consumer group `group` empty and deleted it (Kafka's
    /// maybeDeleteEmptyConsumerGroup), whatever the join's answer: a classic group may take the
    /// id, or none (a join naming a member id is answered UNKNOWN_MEMBER_ID).
    EmptyGroupDeleted { group: String },
}

impl ConsumerGroupEvent {
    /// The group the event is about.
    pub fn group(&self) -> &str {
        match self {
            ConsumerGroupEvent::MemberJoined { group, .. }
            | ConsumerGroupEvent::GroupEpochBumped { group, .. }
            | ConsumerGroupEvent::TargetAssignmentComputed { group, .. }
            | ConsumerGroupEvent::MemberEpochChanged { group, .. }
            | ConsumerGroupEvent::PartitionsAssigned { group, .. }
            | ConsumerGroupEvent::PartitionsRevoking { group, .. }
            | ConsumerGroupEvent::PartitionsReleased { group, .. }
            | ConsumerGroupEvent::MemberRemoved { group, .. }
            | ConsumerGroupEvent::GroupLoaded { group, .. }
            | ConsumerGroupEvent::GroupUpgraded { group, .. }
            | ConsumerGroupEvent::GroupDowngraded { group, .. }
            | ConsumerGroupEvent::UpgradeRefused { group, .. }
            | ConsumerGroupEvent::EmptyGroupDeleted { group } => group,
        }
    }
}
