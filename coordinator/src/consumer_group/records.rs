//! The stored form of a consumer group in the offsets log.
//!
//! Kafka writes one record per change (ConsumerGroupMetadata for the group epoch,
//! ConsumerGroupMemberMetadata per member subscription, ConsumerGroupTargetAssignmentMember and
//! ConsumerGroupTargetAssignmentMetadata for the target and its epoch,
//! ConsumerGroupCurrentMemberAssignment per member's epoch, state and partitions) and the
//! compacted topic keeps the last of each key. We write the same content as one snapshot of the
//! whole group after every change: replaying the last snapshot gives what replaying Kafka's
//! compacted records gives. A value type only (it imports nothing but the member, a leaf):
//! building one from a group and a group from one live in `load.rs`.

use std::collections::{BTreeMap, BTreeSet};

use super::member::ConsumerMember;
use crate::{Millis, TopicPartition};

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
    /// Members (ConsumerGroupMemberMetadataValue and ConsumerGroupCurrentMemberAssignmentValue:
    /// ids, subscription, epochs, state and partitions), with no timer armed.
    pub members: Vec<ConsumerMember>,
    /// Target assignment per member (ConsumerGroupTargetAssignmentMemberValue).
    pub target: BTreeMap<String, BTreeSet<TopicPartition>>,
    /// When it was stored.
    pub stored_at: Millis,
}
