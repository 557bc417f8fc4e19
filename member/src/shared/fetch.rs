//! Fetching records (Kafka's `Fetcher`): the Fetch request per leader and the batches fetched
//! and not processed yet. Fetches in flight live in the in-flight table, retry deadlines per
//! broker in the timer table.

use std::collections::VecDeque;

use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::{FetchRequest, TopicName};

use super::metadata::Metadata;
use super::positions::SubscriptionState;
use crate::compat::sb;
use crate::{MemberConfig, TopicPartition};

/// `max.partition.fetch.bytes` (Java default 1 MiB).
const PARTITION_MAX_BYTES: i32 = 1 << 20;
/// `fetch.max.bytes` (Java default 50 MiB).
const FETCH_MAX_BYTES: i32 = 50 << 20;

/// Records fetched for one partition and not processed yet.
#[derive(Clone, Debug)]
pub(crate) struct FetchedBatch {
    pub(crate) tp: TopicPartition,
    pub(crate) first: i64,
    pub(crate) last: i64,
    pub(crate) count: usize,
    pub(crate) epoch: u64,
}

/// The fetched, unprocessed batches, oldest first.
#[derive(Debug, Default)]
pub(crate) struct Fetcher {
    pub(crate) buffered: VecDeque<FetchedBatch>,
    /// Room for the runs of records read from one answer's partition (first, last, count),
    /// kept between answers so that reading them allocates nothing once it has grown.
    pub(crate) runs: Vec<(i64, i64, usize)>,
}

impl Fetcher {
    /// Drops fetched records that were not processed yet; their partitions fetch again from the
    /// first dropped offset.
    pub(crate) fn drop_buffered(&mut self, positions: &mut SubscriptionState) {
        while let Some(b) = self.buffered.pop_front() {
            if b.epoch != positions.epoch {
                continue;
            }
            if let Some(ps) = positions.partitions.get_mut(&b.tp) {
                ps.buffered = false;
                ps.fetch_position = ps.fetch_position.min(b.first);
            }
        }
    }

    /// A Fetch of `parts` (partition, position; sorted) from one leader, and its timeout
    /// (`request.timeout.ms` plus `fetch.max.wait.ms`, as the broker may hold it that long).
    pub(crate) fn request(
        config: &MemberConfig,
        metadata: &Metadata,
        parts: &[(TopicPartition, i64)],
    ) -> (FetchRequest, u64) {
        // One entry per run of a topic's partitions (`parts` is sorted), each vector built at
        // its length.
        let topics: Vec<FetchTopic> = parts
            .chunk_by(|(a, _), (b, _)| a.topic == b.topic)
            .map(|run| {
                let topic = &*run[0].0.topic;
                let template = metadata
                    .topics
                    .get(topic)
                    .map(|m| m.fetch_template.clone())
                    .unwrap_or_else(|| FetchTopic::default().with_topic(TopicName(sb(topic))));
                let partitions = run
                    .iter()
                    .map(|(tp, position)| {
                        FetchPartition::default()
                            .with_partition(tp.partition)
                            .with_fetch_offset(*position)
                            .with_partition_max_bytes(PARTITION_MAX_BYTES)
                    })
                    .collect();
                template.with_partitions(partitions)
            })
            .collect();
        let req = FetchRequest::default()
            .with_max_wait_ms(config.fetch_max_wait_ms)
            .with_min_bytes(1)
            .with_max_bytes(FETCH_MAX_BYTES)
            .with_topics(topics);
        let timeout = config.request_timeout_ms + config.fetch_max_wait_ms.max(0) as u64;
        (req, timeout)
    }
}

#[cfg(test)]
mod tests {
    use super::super::positions::PartitionState;
    use super::*;

    #[test]
    fn dropped_batches_rewind_their_partition_to_the_first_dropped_offset() {
        let tp = TopicPartition::new("t", 0);
        let mut positions = SubscriptionState::default();
        let mut ps = PartitionState::new();
        ps.fetch_position = 30;
        ps.buffered = true;
        positions.partitions.insert(tp.clone(), ps);
        let mut f = Fetcher::default();
        let batch = |first, epoch| FetchedBatch {
            tp: tp.clone(),
            first,
            last: first + 9,
            count: 10,
            epoch,
        };
        f.buffered.push_back(batch(20, 0));
        f.buffered.push_back(batch(5, 7)); // an older assignment's batch: ignored
        f.drop_buffered(&mut positions);
        assert!(f.buffered.is_empty());
        let ps = &positions.partitions[&tp];
        assert_eq!((ps.fetch_position, ps.buffered), (20, false));
    }

    #[test]
    fn one_topic_entry_per_topic_and_the_wait_added_to_the_timeout() {
        let config = MemberConfig::new("g", "c", vec![]);
        let parts = [
            (TopicPartition::new("a", 0), 1),
            (TopicPartition::new("a", 1), 2),
            (TopicPartition::new("b", 0), 3),
        ];
        let (req, timeout) = Fetcher::request(&config, &Metadata::default(), &parts);
        assert_eq!(req.topics.len(), 2);
        assert_eq!(req.topics[0].partitions[1].fetch_offset, 2);
        assert_eq!(timeout, config.request_timeout_ms + config.fetch_max_wait_ms as u64);
    }
}
