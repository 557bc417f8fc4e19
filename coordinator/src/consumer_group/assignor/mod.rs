//! Server-side assignors (KIP-848): the coordinator computes every member's target partitions.
//! `uniform` (the default) spreads partitions evenly and keeps members' previous partitions
//! where it can; `range` gives each member a contiguous range of every topic it subscribes to.
//! A member picks one with `ServerAssignor`; the group uses the one most members ask for.
//!
//! Both are deterministic: members and partitions are visited in sorted order, so the same
//! group and topics always give the same assignment.

use std::collections::{BTreeMap, BTreeSet};

use crate::topics::TopicsImage;
use crate::TopicPartition;

pub mod range;
pub mod uniform;

/// The uniform assignor's name (Kafka's default).
pub const UNIFORM: &str = "uniform";
/// The range assignor's name.
pub const RANGE: &str = "range";
/// Every supported server assignor, the default first.
pub const SUPPORTED: [&str; 2] = [UNIFORM, RANGE];

/// Whether `name` is a server assignor this coordinator has.
pub fn is_supported(name: &str) -> bool {
    SUPPORTED.contains(&name)
}

/// What an assignor works from.
#[derive(Clone, Copy, Debug)]
pub struct AssignmentSpec<'a> {
    /// Each member's subscribed topics.
    pub subscriptions: &'a BTreeMap<String, BTreeSet<String>>,
    /// The previous target assignment (for stickiness).
    pub previous: &'a BTreeMap<String, BTreeSet<TopicPartition>>,
    /// The topics that exist, with their partition counts.
    pub topics: &'a TopicsImage,
}

/// A target assignment: every member (even those given nothing) with its partitions.
pub type TargetAssignment = BTreeMap<String, BTreeSet<TopicPartition>>;

/// Runs assignor `name` (the default, `uniform`, for an unknown name).
pub fn assign(name: &str, spec: AssignmentSpec<'_>) -> TargetAssignment {
    match name {
        RANGE => range::assign(spec),
        _ => uniform::assign(spec),
    }
}
