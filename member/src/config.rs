//! Member configuration, named after the Java consumer's settings.

use serde::{Deserialize, Serialize};

use crate::AssignorKind;

/// How a member behaves: group, subscription, timeouts, commit cadence and processing speed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MemberConfig {
    /// `group.id`.
    pub group_id: String,
    /// `client.id`, also used in logs.
    pub client_id: String,
    /// `group.instance.id` (static membership), if any.
    pub group_instance_id: Option<String>,
    /// Subscribed topics.
    pub topics: Vec<String>,
    /// Node id of the broker used for bootstrap Metadata and FindCoordinator requests.
    pub bootstrap_node: i32,
    /// `session.timeout.ms`.
    pub session_timeout_ms: i32,
    /// `max.poll.interval.ms`, sent as the rebalance timeout.
    pub rebalance_timeout_ms: i32,
    /// `heartbeat.interval.ms`.
    pub heartbeat_interval_ms: u64,
    /// `request.timeout.ms` for every request but JoinGroup (which waits for the rebalance and
    /// gets `rebalance_timeout_ms + request_timeout_ms`).
    pub request_timeout_ms: u64,
    /// `retry.backoff.ms`: pause before retrying after an error.
    pub retry_backoff_ms: u64,
    /// `auto.commit.interval.ms`: how often processed offsets are committed.
    pub commit_interval_ms: u64,
    /// Assignors offered in JoinGroup, in preference order.
    pub assignors: Vec<AssignorKind>,
    /// Most records taken from one partition per Fetch.
    pub max_records_per_fetch: usize,
    /// Pause before fetching again when a Fetch returned nothing.
    pub fetch_backoff_ms: u64,
    /// Processing time per record, drawn uniformly from this inclusive range (ms).
    pub processing_ms_per_record: (u64, u64),
    /// `fetch.max.wait.ms`: how long a broker may hold a Fetch waiting for data.
    #[serde(default = "default_fetch_max_wait_ms")]
    pub fetch_max_wait_ms: i32,
    /// `metadata.max.age.ms`: Metadata is refreshed at least this often (a changed partition
    /// count makes the member rejoin).
    #[serde(default = "default_metadata_max_age_ms")]
    pub metadata_max_age_ms: u64,
}

fn default_fetch_max_wait_ms() -> i32 {
    500
}

fn default_metadata_max_age_ms() -> u64 {
    300_000
}

impl MemberConfig {
    /// Defaults close to the Java consumer's, with faster commits and a modest session timeout.
    pub fn new(
        group_id: impl Into<String>,
        client_id: impl Into<String>,
        topics: Vec<String>,
    ) -> Self {
        Self {
            group_id: group_id.into(),
            client_id: client_id.into(),
            group_instance_id: None,
            topics,
            bootstrap_node: 0,
            session_timeout_ms: 10_000,
            rebalance_timeout_ms: 30_000,
            heartbeat_interval_ms: 3_000,
            request_timeout_ms: 5_000,
            retry_backoff_ms: 100,
            commit_interval_ms: 1_000,
            assignors: vec![AssignorKind::Range, AssignorKind::RoundRobin],
            max_records_per_fetch: 50,
            fetch_backoff_ms: 100,
            processing_ms_per_record: (1, 5),
            fetch_max_wait_ms: default_fetch_max_wait_ms(),
            metadata_max_age_ms: default_metadata_max_age_ms(),
        }
    }
}
