//! Offset commits (the commit half of Kafka's `ConsumerCoordinator`): the OffsetCommit request
//! and its per-partition answers, the offsets the `commit_after_revoke` / `keep_stale_acks` /
//! `sends_past_generation_commits` bugs smuggle into the next auto-commit, and what the
//! `commits_stale_stored_offset` and `retries_superseded_commit` bugs hold on to. The next auto-commit's deadline
//! lives in the timer table; a commit in flight, in the in-flight table.

use std::collections::BTreeMap;

use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::{OffsetCommitRequest, OffsetCommitResponse, TopicName};

use crate::compat::sb;
use crate::shared::{group_id, instance_id};
use crate::{MemberConfig, TopicPartition};

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

    /// OffsetCommit of `offsets` (sorted by partition) under `generation` as `member_id`.
    pub(super) fn request(
        config: &MemberConfig,
        generation: i32,
        member_id: &str,
        offsets: &[(TopicPartition, i64)],
    ) -> OffsetCommitRequest {
        let mut topics: Vec<OffsetCommitRequestTopic> = Vec::new();
        for (tp, offset) in offsets {
            let part = OffsetCommitRequestPartition::default()
                .with_partition_index(tp.partition)
                .with_committed_offset(*offset);
            match topics.last_mut() {
                Some(t) if t.name.0.as_str() == tp.topic => t.partitions.push(part),
                _ => topics.push(
                    OffsetCommitRequestTopic::default()
                        .with_name(TopicName(sb(&tp.topic)))
                        .with_partitions(vec![part]),
                ),
            }
        }
        OffsetCommitRequest::default()
            .with_group_id(group_id(config))
            .with_generation_id_or_member_epoch(generation)
            .with_member_id(sb(member_id))
            .with_group_instance_id(instance_id(config))
            .with_topics(topics)
    }

    /// The error code answered for each partition.
    pub(super) fn answers(resp: &OffsetCommitResponse) -> BTreeMap<TopicPartition, i16> {
        let mut answers: BTreeMap<TopicPartition, i16> = BTreeMap::new();
        for t in &resp.topics {
            for p in &t.partitions {
                answers.insert(
                    TopicPartition::new(t.name.0.as_str(), p.partition_index),
                    p.error_code,
                );
            }
        }
        answers
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

    #[test]
    fn the_request_groups_partitions_by_topic() {
        let config = MemberConfig::new("g", "c", vec![]);
        let offsets = [(tp("a", 0), 1), (tp("a", 1), 2), (tp("b", 0), 3)];
        let r = Commits::request(&config, 2, "m", &offsets);
        assert_eq!(r.generation_id_or_member_epoch, 2);
        assert_eq!(r.topics.len(), 2);
        assert_eq!(r.topics[0].partitions.len(), 2);
        assert_eq!(r.topics[1].partitions[0].committed_offset, 3);
    }
}
