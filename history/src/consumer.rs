//! What the coordinator records about KIP-848 consumer groups: the history's own copy.
//!
//! Ownership follows these events: a partition is a member's from `PartitionsAssigned` until
//! `PartitionsReleased`. Optional fields and `false` flags are left out of the JSON form, so
//! histories of groups that never use them keep their bytes.

use groupsim_wire::TopicPartition;
use serde::{Deserialize, Serialize};

/// Why a member left a consumer group.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ConsumerRemovalReason {
    /// It left (member epoch -1).
    Left,
    /// Its session expired.
    SessionTimeout,
    /// It did not revoke within its rebalance timeout.
    RebalanceTimeout,
    /// A new member id took over its static instance id.
    Replaced,
    /// A classic member did not rejoin in time.
    JoinTimeout,
    /// A classic member did not sync in time.
    SyncTimeout,
}

/// One member's share of a target assignment.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TargetShare {
    /// The member id.
    pub member_id: String,
    /// Its target partitions.
    pub partitions: Vec<TopicPartition>,
}

/// One member as loaded from the offsets log.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoadedMember {
    /// The member id.
    pub member_id: String,
    /// Its `group.instance.id`, when static.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_instance_id: Option<String>,
    /// Its member epoch.
    pub member_epoch: i32,
    /// Partitions it owns (pending revocation included).
    pub owned: Vec<TopicPartition>,
    /// Of those, the ones it must revoke.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub revoking: Vec<TopicPartition>,
    /// Its reconciliation state, in Kafka's name.
    #[serde(default)]
    pub state: String,
    /// Its partitions in the loaded target assignment.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub target: Vec<TopicPartition>,
    /// It speaks the classic protocol.
    #[serde(default, skip_serializing_if = "is_false")]
    pub classic_protocol: bool,
}

/// One member of a group converted between the protocols.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConvertedMember {
    /// The member id.
    pub member_id: String,
    /// Its member epoch.
    pub member_epoch: i32,
    /// Upgrade: the partitions it owns; downgrade: its stored assignment.
    pub partitions: Vec<TopicPartition>,
}

/// One fact about a consumer group.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ConsumerGroupEvent {
    /// A member joined.
    MemberJoined {
        group: String,
        member_id: String,
        group_instance_id: Option<String>,
        client_id: String,
        #[serde(default, skip_serializing_if = "is_false")]
        classic_protocol: bool,
    },
    /// The group epoch was bumped.
    GroupEpochBumped { group: String, epoch: i32 },
    /// A target assignment was computed for `epoch`.
    TargetAssignmentComputed {
        group: String,
        epoch: i32,
        assignor: String,
        assignments: Vec<TargetShare>,
    },
    /// A member's epoch or reconciliation state changed.
    MemberEpochChanged { group: String, member_id: String, from: i32, to: i32, state: String },
    /// Partitions were handed to a member.
    PartitionsAssigned {
        group: String,
        member_id: String,
        member_epoch: i32,
        partitions: Vec<TopicPartition>,
    },
    /// A member was asked to revoke partitions it still owns.
    PartitionsRevoking {
        group: String,
        member_id: String,
        member_epoch: i32,
        partitions: Vec<TopicPartition>,
    },
    /// A member no longer owns partitions.
    PartitionsReleased {
        group: String,
        member_id: String,
        member_epoch: i32,
        partitions: Vec<TopicPartition>,
    },
    /// A member was removed.
    MemberRemoved {
        group: String,
        member_id: String,
        member_epoch: i32,
        reason: ConsumerRemovalReason,
    },
    /// The group was rebuilt from the offsets log.
    GroupLoaded {
        group: String,
        partition: i32,
        group_epoch: i32,
        assignment_epoch: i32,
        members: Vec<LoadedMember>,
    },
    /// A classic group of `generation` became a consumer group (online upgrade).
    GroupUpgraded { group: String, generation: i32, members: Vec<ConvertedMember> },
    /// The last consumer-protocol member left; the group became classic (online downgrade).
    GroupDowngraded {
        group: String,
        group_epoch: i32,
        leaving_member: String,
        members: Vec<ConvertedMember>,
    },
    /// A classic group was not converted for a joining consumer-protocol member, which was
    /// answered GROUP_ID_NOT_FOUND (`reason`: policy, protocol, size or malformed).
    UpgradeRefused { group: String, member_id: String, reason: String },
    /// A classic JoinGroup found the consumer group empty and deleted it.
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

/// Serde: a `false` flag is left out.
fn is_false(b: &bool) -> bool {
    !*b
}
