//! KIP-848 consumer groups (Kafka 4.0's consumer group protocol), beside the classic group.
//!
//! A [`ConsumerGroup`] carries Kafka's three epochs: the *group epoch*, bumped whenever
//! membership, a subscription or the subscribed topics change; the *target assignment epoch*,
//! the group epoch a server-side assignor last computed the target assignment for; and each
//! member's *member epoch*, which reaches the target epoch only through reconciliation (the
//! member first revokes what moves away; a partition reaches its new owner only once the
//! previous owner released it). Members drive everything with ConsumerGroupHeartbeat; the
//! coordinator never waits for a whole group as the classic protocol does.
//!
//! This file holds the group's data and its read-only view; each concern is a file of its own:
//! - `member.rs`: one member and its reconciliation state;
//! - `epochs.rs`: per-partition owner epochs;
//! - `reconciliation.rs`: one reconciliation step (Kafka's CurrentAssignmentBuilder);
//! - `assignor/`: the `uniform` and `range` server assignors;
//! - `target.rs`: computing the target assignment (Kafka's TargetAssignmentBuilder);
//! - `membership.rs`: putting and removing members, with their events and owner epochs;
//! - `request.rs` and `heartbeat.rs`: a member's heartbeat, from member lookup to
//!   reconciliation;
//! - `static_members.rs`: instance ids, replacement and temporary leave;
//! - `timers.rs`: session and rebalance timeouts;
//! - `offsets.rs`: member-epoch checks of OffsetCommit and OffsetFetch;
//! - `topic_regex.rs`: subscriptions by regex, matched against the topics here;
//! - `records.rs` and `load.rs`: the stored form and rebuilding a group from it;
//! - `classic_join.rs` and `classic_members.rs`: members speaking the classic protocol inside
//!   the group (JoinGroup, SyncGroup, Heartbeat, LeaveGroup);
//! - `migration.rs`: converting a classic group into a consumer group and back.

use std::collections::{BTreeMap, BTreeSet};

use crate::TopicPartition;

pub mod assignor;
mod bugs;
pub(crate) mod classic_join;
mod classic_members;
pub mod epochs;
mod heartbeat;
mod load;
pub mod member;
mod membership;
pub(crate) mod migration;
mod offsets;
pub mod reconciliation;
pub mod records;
mod request;
mod static_members;
mod target;
pub(crate) mod timers;
pub mod topic_regex;

pub use epochs::PartitionEpochs;
pub use member::{
    ClassicMemberMetadata, ClassicProtocol, ConsumerMember, MemberState, LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
};
pub(crate) use request::HeartbeatContext;
pub use request::{HeartbeatAnswer, HeartbeatInput};

/// Kafka's consumer group states, derived from the epochs and the members. Kafka's DEAD (a group
/// being removed) has no counterpart: this coordinator takes a group out of its map at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ConsumerGroupState {
    /// No members.
    Empty,
    /// The group epoch is ahead of the target assignment epoch.
    Assigning,
    /// Some member is not yet reconciled to the target assignment.
    Reconciling,
    /// Every member is reconciled to the target assignment.
    Stable,
}

impl ConsumerGroupState {
    /// Kafka's name for the state, as ConsumerGroupDescribe and ListGroups report it.
    pub fn kafka_name(self) -> &'static str {
        match self {
            ConsumerGroupState::Empty => "Empty",
            ConsumerGroupState::Assigning => "Assigning",
            ConsumerGroupState::Reconciling => "Reconciling",
            ConsumerGroupState::Stable => "Stable",
        }
    }
}

/// A consumer group (Kafka's ConsumerGroup).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConsumerGroup {
    pub(crate) group_id: String,
    pub(crate) group_epoch: i32,
    pub(crate) assignment_epoch: i32,
    pub(crate) members: BTreeMap<String, ConsumerMember>,
    /// Instance id -> member id of static members.
    pub(crate) static_members: BTreeMap<String, String>,
    /// Target partitions per member id, for `assignment_epoch`.
    pub(crate) target: BTreeMap<String, BTreeSet<TopicPartition>>,
    pub(crate) epochs: PartitionEpochs,
    /// Partition counts of the subscribed topics at the last group epoch.
    pub(crate) subscription_metadata: BTreeMap<String, i32>,
}

impl ConsumerGroup {
    /// A new, empty group at epoch 0.
    pub fn new(group_id: impl Into<String>) -> Self {
        Self {
            group_id: group_id.into(),
            group_epoch: 0,
            assignment_epoch: 0,
            members: BTreeMap::new(),
            static_members: BTreeMap::new(),
            target: BTreeMap::new(),
            epochs: PartitionEpochs::default(),
            subscription_metadata: BTreeMap::new(),
        }
    }

    /// The group id.
    pub fn group_id(&self) -> &str {
        &self.group_id
    }
    /// The group epoch.
    pub fn group_epoch(&self) -> i32 {
        self.group_epoch
    }
    /// The target assignment epoch.
    pub fn assignment_epoch(&self) -> i32 {
        self.assignment_epoch
    }
    /// Members, by member id.
    pub fn members(&self) -> impl Iterator<Item = &ConsumerMember> {
        self.members.values()
    }
    /// One member.
    pub fn member(&self, member_id: &str) -> Option<&ConsumerMember> {
        self.members.get(member_id)
    }
    /// Whether the group has no members.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }
    /// A member's target partitions.
    pub fn target_of(&self, member_id: &str) -> BTreeSet<TopicPartition> {
        self.target.get(member_id).cloned().unwrap_or_default()
    }
    /// Per-partition owner epochs.
    pub fn partition_epochs(&self) -> &PartitionEpochs {
        &self.epochs
    }
    /// The member id holding instance id `instance`.
    pub fn static_member_id(&self, instance: &str) -> Option<&str> {
        self.static_members.get(instance).map(String::as_str)
    }

    /// Kafka's maybeUpdateGroupState: Empty without members, Assigning while the group epoch is
    /// ahead of the target, Reconciling while a member is not reconciled to it, else Stable.
    pub fn state(&self) -> ConsumerGroupState {
        if self.members.is_empty() {
            ConsumerGroupState::Empty
        } else if self.group_epoch > self.assignment_epoch {
            ConsumerGroupState::Assigning
        } else if self.members.values().any(|m| !m.is_reconciled_to(self.assignment_epoch)) {
            ConsumerGroupState::Reconciling
        } else {
            ConsumerGroupState::Stable
        }
    }

    /// The assignor the group uses: the one most members ask for (ties to the smaller name),
    /// else the default (`uniform`).
    pub fn preferred_assignor(&self) -> &'static str {
        assignor::preferred_among(self.members.values())
    }
}
