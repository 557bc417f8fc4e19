//! groupsim-coordinator: a sans-IO model of Apache Kafka's classic consumer-group coordinator,
//! the broker-side APIs a consumer needs (Metadata, ListOffsets, Fetch, FindCoordinator,
//! ApiVersions), and the Kafka wire layer shared with the simulated members.
//!
//! The cores ([`GroupCoordinator`], [`broker::Broker`]) are plain state machines: every call
//! takes the current simulated time in milliseconds and queues outputs (responses and history
//! events) that the caller drains with `poll_output`. Nothing here reads a clock, opens a socket
//! or spawns a task, so the same code runs under turmoil, on real tokio sockets, and in unit tests
//! that drive it at chosen instants (as Kafka's GroupCoordinatorTest does with MockTime).

pub mod api;
pub mod broker;
pub mod cluster;
pub mod config;
pub mod consumer_protocol;
pub mod coordinator;
pub mod event;
pub mod group;
pub mod log;
pub mod offsets;
pub mod offsets_log;
pub mod wire;

pub use config::{CoordinatorBugs, CoordinatorConfig};
pub use coordinator::{CoordinatorOutput, GroupCoordinator};
pub use event::{CoordinatorEvent, RemovalReason};
pub use group::GroupState;

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

/// Kafka's name for an error code (`ILLEGAL_GENERATION`, `NONE`, …), for histories and logs.
pub fn error_name(code: i16) -> String {
    use kafka_protocol::error::ParseResponseErrorCode;
    match code.err() {
        None => "NONE".to_string(),
        Some(e) => {
            // ResponseError's Debug is CamelCase; Kafka spells codes in SCREAMING_SNAKE_CASE.
            let camel = format!("{e:?}");
            let mut out = String::with_capacity(camel.len() + 8);
            for (i, ch) in camel.chars().enumerate() {
                if ch.is_ascii_uppercase() && i > 0 {
                    out.push('_');
                }
                out.push(ch.to_ascii_uppercase());
            }
            out
        }
    }
}
