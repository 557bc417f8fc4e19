//! The coordinator's view of the cluster's topics: names, ids and partition counts.
//!
//! A leaf module. KIP-848's coordinator assigns partitions itself, so unlike the classic
//! coordinator it must know which topics exist and how many partitions each has (Kafka reads
//! its metadata image). The broker refreshes this image from its partition logs before it hands
//! a consumer-group request over; unit tests set it directly. Topic ids come from
//! [`groupsim_wire::topic_id`], so every side of the wire agrees on them.

use std::collections::{BTreeMap, BTreeSet};

use uuid::Uuid;

use crate::TopicPartition;

/// Topic name -> partition count, with the derived topic ids.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TopicsImage {
    partitions: BTreeMap<String, i32>,
    names: BTreeMap<Uuid, String>,
}

impl TopicsImage {
    /// An image of `topics` (name, partition count).
    pub fn new<'a>(topics: impl IntoIterator<Item = (&'a str, i32)>) -> Self {
        let mut image = Self::default();
        for (name, count) in topics {
            image.partitions.insert(name.to_string(), count.max(0));
            image.names.insert(groupsim_wire::topic_id(name), name.to_string());
        }
        image
    }

    /// Partition count of `topic`, if it exists.
    pub fn partition_count(&self, topic: &str) -> Option<i32> {
        self.partitions.get(topic).copied()
    }

    /// The id of `topic` (whether or not it exists).
    pub fn id(&self, topic: &str) -> Uuid {
        groupsim_wire::topic_id(topic)
    }

    /// Every topic name, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.partitions.keys().map(String::as_str)
    }

    /// The name of the topic with id `id`, if it exists.
    pub fn name(&self, id: &Uuid) -> Option<&str> {
        self.names.get(id).map(String::as_str)
    }

    /// The partition counts of those of `topics` that exist: the subscription metadata whose
    /// change bumps a group epoch.
    pub fn subscription_metadata<'a>(
        &self,
        topics: impl IntoIterator<Item = &'a String>,
    ) -> BTreeMap<String, i32> {
        topics.into_iter().filter_map(|t| self.partition_count(t).map(|n| (t.clone(), n))).collect()
    }

    /// Every partition of the existing topics among `topics`, sorted.
    pub fn partitions_of<'a>(
        &self,
        topics: impl IntoIterator<Item = &'a String>,
    ) -> BTreeSet<TopicPartition> {
        let mut out = BTreeSet::new();
        for t in topics {
            for p in 0..self.partition_count(t).unwrap_or(0) {
                out.insert(TopicPartition::new(t.as_str(), p));
            }
        }
        out
    }

    /// `parts` grouped by topic (sorted by name), each with its partition indexes: the layout
    /// consumer group answers carry assignments in.
    pub fn by_topic(parts: &BTreeSet<TopicPartition>) -> BTreeMap<&str, Vec<i32>> {
        let mut out: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
        for tp in parts {
            out.entry(&*tp.topic).or_default().push(tp.partition);
        }
        out
    }
}
