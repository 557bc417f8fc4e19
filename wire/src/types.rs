//! The vocabulary both cores and the simulation use: time, request tokens, topic partitions,
//! topic ids.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::topic_name::shared_topic;

/// Simulated time: milliseconds since the start of a run. Cores never read a clock; the driver
/// passes `now` into every call.
pub type Millis = u64;

/// Opaque token a driver attaches to each request so a core can answer it later (JoinGroup and
/// SyncGroup answers are delayed until the rebalance reaches the right phase).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct RequestId(pub u64);

/// A topic partition, named the way Kafka names it. Ordered by topic name, then index.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TopicPartition {
    /// Topic name, shared: a partition's key is copied far more often than a topic is named.
    pub topic: Arc<str>,
    /// Partition index within the topic.
    pub partition: i32,
}

impl TopicPartition {
    /// Builds a topic partition from a topic name and index.
    pub fn new(topic: impl IntoTopic, partition: i32) -> Self {
        Self { topic: topic.into_shared(), partition }
    }
}

impl Ord for TopicPartition {
    /// As the fields' own orders compare them, but two keys sharing one name skip comparing its
    /// text (ordered maps of partitions compare keys at every level, mostly of one topic).
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        let topic = if Arc::ptr_eq(&self.topic, &other.topic) {
            std::cmp::Ordering::Equal
        } else {
            self.topic.cmp(&other.topic)
        };
        topic.then(self.partition.cmp(&other.partition))
    }
}

impl PartialOrd for TopicPartition {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// What names a topic for [`TopicPartition::new`]: a string of any kind (its thread's shared
/// name for it, [`shared_topic`]), or a shared name (taken as it is, without copying the name).
pub trait IntoTopic {
    /// The name as a shared string.
    fn into_shared(self) -> Arc<str>;
}

impl IntoTopic for Arc<str> {
    fn into_shared(self) -> Arc<str> {
        self
    }
}

impl IntoTopic for &Arc<str> {
    fn into_shared(self) -> Arc<str> {
        self.clone()
    }
}

impl IntoTopic for &str {
    fn into_shared(self) -> Arc<str> {
        shared_topic(self)
    }
}

impl IntoTopic for String {
    fn into_shared(self) -> Arc<str> {
        shared_topic(&self)
    }
}

impl IntoTopic for &String {
    fn into_shared(self) -> Arc<str> {
        shared_topic(self)
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

    /// A partition key built from a shared name shares it (no copy); one built from any string
    /// compares and orders as that string.
    #[test]
    fn a_partition_key_shares_a_shared_name_and_reads_as_its_string() {
        let name: Arc<str> = Arc::from("orders");
        let a = TopicPartition::new(&name, 3);
        assert!(Arc::ptr_eq(&a.topic, &name));
        let b = TopicPartition::new(String::from("orders"), 3);
        assert!(!Arc::ptr_eq(&b.topic, &name));
        assert_eq!(a, b);
        // Keys named by strings on one thread share the thread's name for the topic.
        assert!(Arc::ptr_eq(&b.topic, &TopicPartition::new("orders", 0).topic));
        assert!(TopicPartition::new("orders", 2) < a && a < TopicPartition::new("ordersx", 0));
    }

    /// Keys order as (name, index) whether or not they share their name.
    #[test]
    fn partition_keys_order_by_name_then_index_shared_or_not() {
        let names = ["", "a", "orders", "ordersx", "payments"];
        let shared: Vec<Arc<str>> = names.iter().map(|n| Arc::from(*n)).collect();
        let keys = |own: bool| -> Vec<TopicPartition> {
            let mut keys = Vec::new();
            for (i, n) in names.iter().enumerate() {
                for p in [-1, 0, 1, 7] {
                    keys.push(if own {
                        TopicPartition::new(*n, p)
                    } else {
                        TopicPartition::new(&shared[i], p)
                    });
                }
            }
            keys
        };
        let (own, sharing) = (keys(true), keys(false));
        for a in own.iter().chain(&sharing) {
            for b in own.iter().chain(&sharing) {
                let by_fields = (&*a.topic, a.partition).cmp(&(&*b.topic, b.partition));
                assert_eq!(a.cmp(b), by_fields, "{a} against {b}");
                assert_eq!(a.partial_cmp(b), Some(by_fields));
                assert_eq!(a == b, by_fields.is_eq());
            }
        }
    }

    #[test]
    fn topic_ids_are_stable_distinct_and_never_nil() {
        assert_eq!(topic_id("t"), topic_id("t"));
        assert_ne!(topic_id("t"), topic_id("u"));
        assert!(!topic_id("").is_nil());
    }
}
