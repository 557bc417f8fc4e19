//! OffsetCommit as both protocols send it: the request (the generation id field carries the
//! classic generation or the KIP-848 member epoch) and its per-partition answers.

use std::collections::BTreeMap;

use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::{OffsetCommitRequest, OffsetCommitResponse, TopicName};

use super::{group_id, instance_id};
use crate::compat::sb;
use crate::{MemberConfig, TopicPartition};

/// OffsetCommit of `offsets` (sorted by partition) under `generation` as `member_id`.
pub(crate) fn request(
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
            Some(t) if t.name.0.as_str() == &*tp.topic => t.partitions.push(part),
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
pub(crate) fn answers(resp: &OffsetCommitResponse) -> BTreeMap<TopicPartition, i16> {
    let mut answers: BTreeMap<TopicPartition, i16> = BTreeMap::new();
    for t in &resp.topics {
        for p in &t.partitions {
            answers.insert(TopicPartition::new(t.name.0.as_str(), p.partition_index), p.error_code);
        }
    }
    answers
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp(t: &str, p: i32) -> TopicPartition {
        TopicPartition::new(t, p)
    }

    #[test]
    fn the_request_groups_partitions_by_topic() {
        let config = MemberConfig::new("g", "c", vec![]);
        let offsets = [(tp("a", 0), 1), (tp("a", 1), 2), (tp("b", 0), 3)];
        let r = request(&config, 2, "m", &offsets);
        assert_eq!(r.generation_id_or_member_epoch, 2);
        assert_eq!(r.topics.len(), 2);
        assert_eq!(r.topics[0].partitions.len(), 2);
        assert_eq!(r.topics[1].partitions[0].committed_offset, 3);
    }
}
