//! The classic group: its states and members. (Helper A fills in the state machine.)

use serde::{Deserialize, Serialize};

/// Kafka's classic group states.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum GroupState {
    /// No members; offsets may still be stored.
    Empty,
    /// Collecting JoinGroup requests for the next generation.
    PreparingRebalance,
    /// Join phase done; waiting for the leader's SyncGroup.
    CompletingRebalance,
    /// Every member has its assignment; heartbeats keep sessions alive.
    Stable,
    /// The group was removed (e.g. its coordinator moved away).
    Dead,
}

impl GroupState {
    /// Kafka's name for the state, as DescribeGroups reports it.
    pub fn kafka_name(self) -> &'static str {
        match self {
            GroupState::Empty => "Empty",
            GroupState::PreparingRebalance => "PreparingRebalance",
            GroupState::CompletingRebalance => "CompletingRebalance",
            GroupState::Stable => "Stable",
            GroupState::Dead => "Dead",
        }
    }
}
