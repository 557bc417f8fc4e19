//! Committed offsets per group and partition.
//!
//! Kafka keeps these in the `__consumer_offsets` topic; the coordinator here keeps them in
//! memory, ordered (BTreeMap) so every listing is deterministic. A group's offsets live on
//! whether or not the group has members, as in Kafka (an Empty group lingers with its offsets).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::{Millis, TopicPartition};

/// Kafka's default `offset.metadata.max.bytes`: longer commit metadata is refused with
/// OFFSET_METADATA_TOO_LARGE.
pub const OFFSET_METADATA_MAX_BYTES: usize = 4096;

/// One committed offset (Kafka's OffsetAndMetadata).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommittedOffset {
    /// The next offset the group will consume.
    pub offset: i64,
    /// Leader epoch of the committed record, -1 when unknown.
    pub leader_epoch: i32,
    /// Free-form metadata the committer attached.
    pub metadata: Option<String>,
    /// Simulated time the commit was stored.
    pub commit_timestamp: Millis,
}

/// Committed offsets of every group.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OffsetStore {
    groups: BTreeMap<String, BTreeMap<TopicPartition, CommittedOffset>>,
}

impl OffsetStore {
    /// Stores (or overwrites) a group's committed offset for a partition.
    pub fn commit(&mut self, group: &str, partition: TopicPartition, offset: CommittedOffset) {
        self.groups.entry(group.to_string()).or_default().insert(partition, offset);
    }

    /// A group's committed offset for a partition.
    pub fn get(&self, group: &str, partition: &TopicPartition) -> Option<&CommittedOffset> {
        self.groups.get(group).and_then(|g| g.get(partition))
    }

    /// Every committed offset of a group, ordered by topic then partition.
    pub fn group_offsets(
        &self,
        group: &str,
    ) -> impl Iterator<Item = (&TopicPartition, &CommittedOffset)> {
        self.groups.get(group).into_iter().flat_map(|g| g.iter())
    }

    /// Whether the group has any committed offset.
    pub fn has_offsets(&self, group: &str) -> bool {
        self.groups.get(group).is_some_and(|g| !g.is_empty())
    }

    /// Forgets every offset of a group (its offsets partition was unloaded).
    pub fn remove_group(&mut self, group: &str) {
        self.groups.remove(group);
    }

    /// Groups with committed offsets, sorted.
    pub fn groups(&self) -> impl Iterator<Item = &str> {
        self.groups.keys().map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(offset: i64, t: Millis) -> CommittedOffset {
        CommittedOffset { offset, leader_epoch: -1, metadata: None, commit_timestamp: t }
    }

    #[test]
    fn later_commit_overwrites_and_listing_is_ordered() {
        let mut s = OffsetStore::default();
        s.commit("g", TopicPartition::new("t", 1), at(5, 1));
        s.commit("g", TopicPartition::new("a", 0), at(7, 2));
        s.commit("g", TopicPartition::new("t", 1), at(9, 3));
        assert_eq!(s.get("g", &TopicPartition::new("t", 1)).map(|c| c.offset), Some(9));
        assert_eq!(s.get("other", &TopicPartition::new("t", 1)), None);
        let listed: Vec<String> = s.group_offsets("g").map(|(tp, _)| tp.to_string()).collect();
        assert_eq!(listed, vec!["a-0", "t-1"]);
        assert!(s.has_offsets("g") && !s.has_offsets("other"));
    }
}
