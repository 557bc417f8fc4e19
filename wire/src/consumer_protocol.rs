//! The "consumer" embedded protocol carried inside JoinGroup metadata and SyncGroup assignments.
//!
//! Java-style clients prefix both structures with an i16 version that `kafka-protocol`'s
//! `ConsumerProtocolSubscription`/`ConsumerProtocolAssignment` encoders do not write, so the
//! prefix is written and read here.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::messages::consumer_protocol_assignment::TopicPartition as AssignedTopic;
use kafka_protocol::messages::consumer_protocol_subscription::TopicPartition as OwnedTopic;
use kafka_protocol::messages::{
    ConsumerProtocolAssignment, ConsumerProtocolSubscription, TopicName,
};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};

use crate::TopicPartition;

/// Version groupsim writes (v1: topics, user data, owned partitions; understood by every client).
pub const WRITE_VERSION: i16 = 1;

/// Malformed consumer-protocol bytes.
#[derive(Debug, thiserror::Error)]
pub enum ConsumerProtocolError {
    /// Fewer than two bytes: no version prefix.
    #[error("consumer protocol payload too short for its version prefix ({0} bytes)")]
    TooShort(usize),
    /// The body did not decode at the announced version.
    #[error("consumer protocol {what} v{version} did not decode: {reason}")]
    Body { what: &'static str, version: i16, reason: String },
}

/// A member's subscription, as carried in JoinGroup protocol metadata.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Subscription {
    /// Subscribed topics.
    pub topics: Vec<String>,
    /// Partitions the member owns now (cooperative protocol; empty for eager).
    pub owned_partitions: Vec<TopicPartition>,
    /// Opaque assignor data.
    pub user_data: Option<Bytes>,
}

/// A member's assignment, as carried in SyncGroup.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Assignment {
    /// Assigned partitions.
    pub partitions: Vec<TopicPartition>,
    /// Opaque assignor data.
    pub user_data: Option<Bytes>,
}

fn group_by_topic(parts: &[TopicPartition]) -> Vec<(String, Vec<i32>)> {
    let mut out: Vec<(String, Vec<i32>)> = Vec::new();
    let mut sorted = parts.to_vec();
    sorted.sort();
    for tp in sorted {
        match out.last_mut() {
            Some((t, ps)) if **t == *tp.topic => ps.push(tp.partition),
            _ => out.push((tp.topic.to_string(), vec![tp.partition])),
        }
    }
    out
}

fn topic_name(s: &str) -> TopicName {
    TopicName(StrBytes::from_string(s.to_string()))
}

fn clamp_version(v: i16, max: i16) -> i16 {
    v.clamp(0, max)
}

/// Encodes a subscription with the version prefix.
pub fn encode_subscription(sub: &Subscription) -> Bytes {
    let msg = ConsumerProtocolSubscription::default()
        .with_topics(sub.topics.iter().map(|t| StrBytes::from_string(t.clone())).collect())
        .with_user_data(sub.user_data.clone())
        .with_owned_partitions(
            group_by_topic(&sub.owned_partitions)
                .into_iter()
                .map(|(t, ps)| OwnedTopic::default().with_topic(topic_name(&t)).with_partitions(ps))
                .collect(),
        );
    let mut buf = BytesMut::new();
    buf.put_i16(WRITE_VERSION);
    msg.encode(&mut buf, WRITE_VERSION).expect("subscription v1 always encodes");
    buf.freeze()
}

/// Decodes a version-prefixed subscription. Versions newer than the library knows are read
/// with the newest layout it knows, as Kafka's own parser does.
pub fn decode_subscription(bytes: &[u8]) -> Result<Subscription, ConsumerProtocolError> {
    if bytes.len() < 2 {
        return Err(ConsumerProtocolError::TooShort(bytes.len()));
    }
    let mut buf = Bytes::copy_from_slice(bytes);
    let version = clamp_version(buf.get_i16(), 3);
    let msg = ConsumerProtocolSubscription::decode(&mut buf, version).map_err(|e| {
        ConsumerProtocolError::Body { what: "subscription", version, reason: e.to_string() }
    })?;
    Ok(Subscription {
        topics: msg.topics.iter().map(|t| t.as_str().to_string()).collect(),
        owned_partitions: msg
            .owned_partitions
            .iter()
            .flat_map(|t| {
                t.partitions.iter().map(move |p| TopicPartition::new(t.topic.0.as_str(), *p))
            })
            .collect(),
        user_data: msg.user_data,
    })
}

/// Encodes an assignment with the version prefix.
pub fn encode_assignment(a: &Assignment) -> Bytes {
    let msg = ConsumerProtocolAssignment::default()
        .with_assigned_partitions(
            group_by_topic(&a.partitions)
                .into_iter()
                .map(|(t, ps)| {
                    AssignedTopic::default().with_topic(topic_name(&t)).with_partitions(ps)
                })
                .collect(),
        )
        .with_user_data(a.user_data.clone());
    let mut buf = BytesMut::new();
    buf.put_i16(WRITE_VERSION);
    msg.encode(&mut buf, WRITE_VERSION).expect("assignment v1 always encodes");
    buf.freeze()
}

/// Decodes a version-prefixed assignment. An empty payload is an empty assignment (Kafka sends
/// zero bytes to members the leader left out).
pub fn decode_assignment(bytes: &[u8]) -> Result<Assignment, ConsumerProtocolError> {
    if bytes.is_empty() {
        return Ok(Assignment::default());
    }
    if bytes.len() < 2 {
        return Err(ConsumerProtocolError::TooShort(bytes.len()));
    }
    let mut buf = Bytes::copy_from_slice(bytes);
    let version = clamp_version(buf.get_i16(), 3);
    let msg = ConsumerProtocolAssignment::decode(&mut buf, version).map_err(|e| {
        ConsumerProtocolError::Body { what: "assignment", version, reason: e.to_string() }
    })?;
    let mut partitions: Vec<TopicPartition> = msg
        .assigned_partitions
        .iter()
        .flat_map(|t| t.partitions.iter().map(move |p| TopicPartition::new(t.topic.0.as_str(), *p)))
        .collect();
    partitions.sort();
    Ok(Assignment { partitions, user_data: msg.user_data })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subscription_round_trips_with_version_prefix() {
        let sub = Subscription {
            topics: vec!["a".into(), "b".into()],
            owned_partitions: vec![TopicPartition::new("a", 1), TopicPartition::new("a", 0)],
            user_data: None,
        };
        let bytes = encode_subscription(&sub);
        assert_eq!(&bytes[..2], &WRITE_VERSION.to_be_bytes());
        let back = decode_subscription(&bytes).unwrap();
        assert_eq!(back.topics, sub.topics);
        assert_eq!(
            back.owned_partitions,
            vec![TopicPartition::new("a", 0), TopicPartition::new("a", 1)]
        );
    }

    #[test]
    fn assignment_round_trips_and_empty_bytes_mean_nothing_assigned() {
        let a = Assignment { partitions: vec![TopicPartition::new("t", 3)], user_data: None };
        assert_eq!(decode_assignment(&encode_assignment(&a)).unwrap(), a);
        assert_eq!(decode_assignment(&[]).unwrap(), Assignment::default());
        assert!(decode_assignment(&[0]).is_err());
        assert!(decode_assignment(&[0, 1, 0xff]).is_err());
    }
}
