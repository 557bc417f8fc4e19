//! The vocabulary both cores and the simulation use: time, request tokens, topic partitions.

use serde::{Deserialize, Serialize};

/// Simulated time: milliseconds since the start of a run. Cores never read a clock; the driver
/// passes `now` into every call.
pub type Millis = u64;

/// Opaque token a driver attaches to each request so a core can answer it later (JoinGroup and
/// SyncGroup answers are delayed until the rebalance reaches the right phase).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct RequestId(pub u64);

/// A topic partition, named the way Kafka names it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct TopicPartition {
    /// Topic name.
    pub topic: String,
    /// Partition index within the topic.
    pub partition: i32,
}

impl TopicPartition {
    /// Builds a topic partition from a topic name and index.
    pub fn new(topic: impl Into<String>, partition: i32) -> Self {
        Self { topic: topic.into(), partition }
    }
}

impl std::fmt::Display for TopicPartition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.topic, self.partition)
    }
}
