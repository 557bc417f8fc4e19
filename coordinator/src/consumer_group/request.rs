//! What a consumer group heartbeat carries in and out, once the API layer resolved topic ids
//! to names: a leaf, so the group's files and the API share it without importing each other.

use std::collections::BTreeSet;

use crate::config::CoordinatorBugs;
use crate::topics::TopicsImage;
use crate::TopicPartition;

/// A heartbeat with topic ids resolved to names.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HeartbeatInput {
    /// Member id (never empty here: v0 ids are generated before).
    pub member_id: String,
    /// Member epoch sent (0 to join; > 0 afterwards; leaves are handled elsewhere).
    pub member_epoch: i32,
    /// Instance id of a static member.
    pub instance_id: Option<String>,
    /// Rack id.
    pub rack_id: Option<String>,
    /// Rebalance timeout, -1 if not sent.
    pub rebalance_timeout_ms: i32,
    /// Subscribed topics, `None` if unchanged.
    pub subscribed_topics: Option<BTreeSet<String>>,
    /// Subscribed topic regex, `None` if unchanged; an empty one clears it.
    pub subscribed_topic_regex: Option<String>,
    /// Server assignor, `None` if unchanged.
    pub server_assignor: Option<String>,
    /// Owned partitions, `None` if not sent.
    pub owned: Option<BTreeSet<TopicPartition>>,
    /// Client id of the request header.
    pub client_id: String,
    /// Client host.
    pub client_host: String,
}

/// What a successful heartbeat answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeartbeatAnswer {
    /// The member id.
    pub member_id: String,
    /// The member's epoch now.
    pub member_epoch: i32,
    /// Its assigned partitions, when the answer carries them.
    pub assignment: Option<BTreeSet<TopicPartition>>,
}

/// What a heartbeat needs besides the group.
#[derive(Clone, Copy, Debug)]
pub(crate) struct HeartbeatContext<'a> {
    pub topics: &'a TopicsImage,
    pub session_timeout_ms: i32,
    pub max_size: i32,
    /// Deliberate coordinator bugs (all off normally).
    pub bugs: &'a CoordinatorBugs,
}
