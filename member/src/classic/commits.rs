//! Offset commits (the commit half of Kafka's `ConsumerCoordinator`): the OffsetCommit request
//! and its per-partition answers, the offsets the `commit_after_revoke` / `keep_stale_acks` /
//! `sends_past_generation_commits` bugs smuggle into the next auto-commit, and what the
//! `commits_stale_stored_offset` and `retries_superseded_commit` bugs hold on to. The next auto-commit's deadline
//! lives in the timer table; a commit in flight, in the in-flight table. What the bugs do with
//! these slots is in `handlers/bugs.rs`.

use std::collections::BTreeMap;

use crate::TopicPartition;

/// Commit state.
#[derive(Debug, Default)]
pub(super) struct Commits {
    /// Bugs `commit_after_revoke` / `keep_stale_acks`: offsets of partitions the member does not
    /// own any more, committed with its next auto-commit.
    pub(super) extra: Vec<(TopicPartition, i64)>,
    /// Bug `commits_stale_stored_offset`: the stored (processed) offset of each partition given
    /// up, never cleared, reused when the partition comes back.
    pub(super) stale_stored: BTreeMap<TopicPartition, i64>,
    /// Bug `retries_superseded_commit`: offsets of commits refused with REBALANCE_IN_PROGRESS,
    /// kept for a retry after the next revoke commit.
    pub(super) saved_for_retry: BTreeMap<TopicPartition, i64>,
}
