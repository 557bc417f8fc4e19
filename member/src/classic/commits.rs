//! Offset commits (the commit half of Kafka's `ConsumerCoordinator`): the OffsetCommit request
//! and its per-partition answers, the offsets the `commit_after_revoke` / `keep_stale_acks` /
//! `sends_past_generation_commits` bugs smuggle into the next auto-commit, and what the
//! `commits_stale_stored_offset` and `retries_superseded_commit` bugs hold on to. The next auto-commit's deadline
//! lives in the timer table; a commit in flight, in the in-flight table.

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

impl Commits {
    /// Adds the bugs' extra offsets to an auto-commit (an owned partition's own offset wins),
    /// sorted; the extra offsets are used up.
    pub(super) fn add_extra(&mut self, offsets: &mut Vec<(TopicPartition, i64)>) {
        if !self.extra.is_empty() {
            // Bugs: offsets of partitions no longer owned, committed under the current generation.
            for (tp, o) in std::mem::take(&mut self.extra) {
                if !offsets.iter().any(|(t, _)| *t == tp) {
                    offsets.push((tp, o));
                }
            }
            offsets.sort();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp(t: &str, p: i32) -> TopicPartition {
        TopicPartition::new(t, p)
    }

    #[test]
    fn extra_offsets_join_the_commit_once_and_never_replace_an_owned_partition() {
        let mut c = Commits { extra: vec![(tp("t", 0), 5), (tp("a", 1), 9)], ..Default::default() };
        let mut offsets = vec![(tp("t", 0), 7)];
        c.add_extra(&mut offsets);
        assert_eq!(offsets, vec![(tp("a", 1), 9), (tp("t", 0), 7)]);
        assert!(c.extra.is_empty());
    }
}
