//! The vocabulary both cores and the simulation use: time, request tokens, topic partitions,
//! topic ids.

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

/// The topic id of topic `name`: Kafka gives every topic a random UUID when it is created; we
/// derive it from the name instead (two FNV-1a 64-bit hashes with different offsets), so runs
/// are deterministic and every broker, member and checker agrees on it without a lookup. Never
/// the nil UUID (Kafka's "no topic id").
pub fn topic_id(name: &str) -> uuid::Uuid {
    fn fnv1a(seed: u64, bytes: &[u8]) -> u64 {
        bytes.iter().fold(seed, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3))
    }
    let hi = fnv1a(0xcbf2_9ce4_8422_2325, name.as_bytes());
    let lo = fnv1a(0x8422_2325_cbf2_9ce4, name.as_bytes());
    let id = (u128::from(hi) << 64) | u128::from(lo);
    uuid::Uuid::from_u128(if id == 0 { 1 } else { id })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topic_ids_are_stable_distinct_and_never_nil() {
        assert_eq!(topic_id("t"), topic_id("t"));
        assert_ne!(topic_id("t"), topic_id("u"));
        assert!(!topic_id("").is_nil());
    }
}
