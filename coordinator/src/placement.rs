//! Partition placement: where a broker is reached, which broker leads a partition at first,
//! and which offsets partition holds a group.
//!
//! A leaf module: the broker, the shared cluster state and the API handlers all apply these
//! rules, so they live below all of them.
//!
//! Every broker must be configured with the same broker list, in the same order. The leader of
//! partition `p` of any topic, the offsets topic (`__consumer_offsets`) included, starts at
//! `brokers[p % brokers.len()]` ([`partition_leader`]); the cluster's shared state
//! (`cluster.rs`) changes it when the world moves leadership. There is no replication, so
//! replicas and ISR are just the leader. A group's coordinator is the leader of its offsets
//! partition, `abs(javaHashCode(group_id)) % offsets_topic_partitions` ([`group_partition`]),
//! as in Kafka.

use serde::{Deserialize, Serialize};

/// Where a broker can be reached.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BrokerAddress {
    /// Kafka node id.
    pub node_id: i32,
    /// Host name clients connect to.
    pub host: String,
    /// Port clients connect to.
    pub port: i32,
}

/// The placement rule, in one place: partition `p` is led by `brokers[p % brokers.len()]`.
/// `None` when there are no brokers or `p` is negative.
pub fn partition_leader(brokers: &[BrokerAddress], partition: i32) -> Option<&BrokerAddress> {
    let p = usize::try_from(partition).ok()?;
    brokers.get(p.checked_rem(brokers.len())?)
}

/// Java's `String.hashCode`: `s[0]*31^(n-1) + … + s[n-1]` over UTF-16 code units, wrapping.
pub fn java_string_hash_code(s: &str) -> i32 {
    s.encode_utf16().fold(0i32, |h, unit| h.wrapping_mul(31).wrapping_add(unit as i32))
}

/// Kafka's `Utils.abs`: absolute value, except that `i32::MIN` maps to 0 (not to itself).
pub fn kafka_abs(n: i32) -> i32 {
    if n == i32::MIN {
        0
    } else {
        n.abs()
    }
}

/// Kafka's `partitionFor(groupId)`: the offsets partition holding `group_id`'s offsets.
/// `offsets_topic_partitions` below 1 is treated as 1.
pub fn group_partition(group_id: &str, offsets_topic_partitions: i32) -> i32 {
    kafka_abs(java_string_hash_code(group_id)) % offsets_topic_partitions.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_hash_code_matches_java() {
        assert_eq!(java_string_hash_code(""), 0);
        assert_eq!(java_string_hash_code("a"), 97);
        assert_eq!(java_string_hash_code("hello"), 99_162_322);
        // Overflow wraps as in Java: "polygenelubricants".hashCode() == Integer.MIN_VALUE.
        assert_eq!(java_string_hash_code("polygenelubricants"), i32::MIN);
        // UTF-16 code units, not bytes or chars: 'é' is one unit (233); '😀' is two surrogates.
        assert_eq!(java_string_hash_code("é"), 233);
        assert_eq!(java_string_hash_code("😀"), 0xD83D * 31 + 0xDE00);
    }

    #[test]
    fn group_partition_uses_kafka_abs() {
        assert_eq!(group_partition("polygenelubricants", 50), 0, "abs(MIN) is 0 in Kafka");
        assert_eq!(group_partition("hello", 50), 99_162_322 % 50);
        // A negative hash code: "Aa".repeat(..)-style strings; pick one and check abs.
        let negative = "zzzzzzzz";
        let h = java_string_hash_code(negative);
        assert!(h < 0, "{h}");
        assert_eq!(group_partition(negative, 7), h.abs() % 7);
        assert_eq!(group_partition("x", 0), 0, "partition count below 1 acts as 1");
    }

    #[test]
    fn placement_is_partition_modulo_broker_count() {
        let brokers: Vec<BrokerAddress> = (0..3)
            .map(|i| BrokerAddress { node_id: 10 + i, host: format!("b{i}"), port: 9092 })
            .collect();
        assert_eq!(partition_leader(&brokers, 4).map(|b| b.node_id), Some(11));
        assert_eq!(partition_leader(&brokers, -1), None);
        assert_eq!(partition_leader(&[], 0), None);
    }
}
