//! The stored form of a consumer group in the offsets log.
//!
//! Kafka writes one record per change (ConsumerGroupMetadata for the group epoch,
//! ConsumerGroupMemberMetadata per member subscription, ConsumerGroupTargetAssignmentMember and
//! ConsumerGroupTargetAssignmentMetadata for the target and its epoch,
//! ConsumerGroupCurrentMemberAssignment per member's epoch, state and partitions) and the
//! compacted topic keeps the last of each key. We write the same content as one snapshot of the
//! whole group after every change: replaying the last snapshot gives what replaying Kafka's
//! compacted records gives. A value type only (a leaf): building one from a group and a group
//! from one live in `load.rs`.

use std::collections::{BTreeMap, BTreeSet};

use crate::{Millis, TopicPartition};

/// One member as stored (ConsumerGroupMemberMetadataValue + ConsumerGroupCurrentMemberAssignmentValue).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConsumerMemberValue {
    /// Member id.
    pub member_id: String,
    /// Instance id of a static member.
    pub instance_id: Option<String>,
    /// Rack id.
    pub rack_id: Option<String>,
    /// Client id.
    pub client_id: String,
    /// Client host.
    pub client_host: String,
    /// Rebalance timeout.
    pub rebalance_timeout_ms: i32,
    /// Subscribed topics.
    pub subscribed_topics: BTreeSet<String>,
    /// Server assignor asked for.
    pub server_assignor: Option<String>,
    /// Member epoch.
    pub member_epoch: i32,
    /// Previous member epoch.
    pub previous_member_epoch: i32,
    /// Reconciliation state, by Kafka's name.
    pub state: String,
    /// Assigned partitions.
    pub assigned: BTreeSet<TopicPartition>,
    /// Partitions pending revocation.
    pub pending_revocation: BTreeSet<TopicPartition>,
}

/// A consumer group as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConsumerGroupValue {
    /// Group id.
    pub group_id: String,
    /// Group epoch (ConsumerGroupMetadataValue).
    pub group_epoch: i32,
    /// Target assignment epoch (ConsumerGroupTargetAssignmentMetadataValue).
    pub assignment_epoch: i32,
    /// Partition counts of the subscribed topics the group epoch was computed with.
    pub subscription_metadata: BTreeMap<String, i32>,
    /// Members.
    pub members: Vec<ConsumerMemberValue>,
    /// Target assignment per member (ConsumerGroupTargetAssignmentMemberValue).
    pub target: BTreeMap<String, BTreeSet<TopicPartition>>,
    /// When it was stored.
    pub stored_at: Millis,
}
