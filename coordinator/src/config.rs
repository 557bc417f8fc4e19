//! Coordinator configuration: Kafka's group.* broker settings.

use serde::{Deserialize, Serialize};

/// Broker-side group settings, named after Kafka's (`group.min.session.timeout.ms`, …).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CoordinatorConfig {
    /// This broker's node id (reported as the coordinator in FindCoordinator answers).
    pub node_id: i32,
    /// `group.min.session.timeout.ms`: smallest session timeout a member may ask for.
    pub min_session_timeout_ms: i32,
    /// `group.max.session.timeout.ms`: largest session timeout a member may ask for.
    pub max_session_timeout_ms: i32,
    /// `group.initial.rebalance.delay.ms`: how long a new (Empty) group waits for more members
    /// before completing its first rebalance; bounded by the rebalance timeout.
    pub initial_rebalance_delay_ms: i32,
    /// `group.max.size`: most members a group may hold.
    pub group_max_size: i32,
    /// How long a member that was told MEMBER_ID_REQUIRED (or a new member waiting in a join)
    /// has to come back before it is dropped (Kafka: 5 minutes for new members).
    pub new_member_join_timeout_ms: i32,
}

impl Default for CoordinatorConfig {
    fn default() -> Self {
        Self {
            node_id: 0,
            min_session_timeout_ms: 6_000,
            max_session_timeout_ms: 1_800_000,
            initial_rebalance_delay_ms: 3_000,
            group_max_size: i32::MAX,
            new_member_join_timeout_ms: 300_000,
        }
    }
}
