//! The member's view of the cluster (Kafka's `Metadata`): brokers, topics with their partition
//! leaders, and whether a refresh is wanted.

use std::collections::{BTreeMap, BTreeSet};

use groupsim_wire::error_codes as codes;
use kafka_protocol::messages::fetch_request::FetchTopic;
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::{MetadataRequest, MetadataResponse, TopicName};
use uuid::Uuid;

use crate::compat::sb;
use crate::TopicPartition;

/// What the member knows of one topic.
#[derive(Clone, Debug)]
pub(crate) struct TopicMeta {
    /// (partition index, leader node id; -1: no leader), sorted by index, one per index.
    pub(crate) leaders: Vec<(i32, i32)>,
    /// Name and topic id for Fetch requests (the id is needed from Fetch v13).
    pub(crate) fetch_template: FetchTopic,
}

/// Cluster metadata and the refresh bookkeeping.
#[derive(Debug, Default)]
pub(crate) struct Metadata {
    pub(crate) topics: BTreeMap<String, TopicMeta>,
    pub(crate) known_brokers: Vec<i32>,
    /// Which listed broker cluster-wide requests go to next (moves on after each failure).
    pub(crate) broker_cursor: usize,
    /// A Metadata answer was applied at least once.
    pub(crate) known: bool,
    /// Counts applied answers (the leader waits for one newer than its join).
    pub(crate) version: u64,
    /// A refresh is wanted.
    pub(crate) wanted: bool,
    /// Topics asked for besides the subscription (other members' topics, for the leader).
    pub(crate) extra_topics: BTreeSet<String>,
}

impl Metadata {
    /// A broker for cluster-wide requests (Metadata, FindCoordinator): the bootstrap node until
    /// Metadata lists brokers, then the listed brokers in turn, moving on after each failure.
    pub(crate) fn any_broker(&self, bootstrap_node: i32) -> i32 {
        if self.known_brokers.is_empty() {
            bootstrap_node
        } else {
            self.known_brokers[self.broker_cursor % self.known_brokers.len()]
        }
    }

    pub(crate) fn leader_of(&self, tp: &TopicPartition) -> Option<i32> {
        self.topics
            .get(&*tp.topic)
            .and_then(|m| {
                let at = m.leaders.binary_search_by_key(&tp.partition, |&(p, _)| p).ok()?;
                Some(m.leaders[at].1)
            })
            .filter(|l| *l >= 0)
    }

    /// The name of the topic with id `topic_id` (Metadata v10+ carries topic ids), if known.
    pub(crate) fn topic_named_by_id(&self, topic_id: &Uuid) -> Option<&str> {
        if topic_id.is_nil() {
            return None;
        }
        let mut named = self.topics.iter().filter(|(_, m)| m.fetch_template.topic_id == *topic_id);
        named.next().map(|(name, _)| name.as_str())
    }

    pub(crate) fn partition_count(&self, topic: &str) -> Option<i32> {
        self.topics.get(topic).map(|m| m.leaders.len() as i32)
    }

    /// The partition count of each topic (None: unknown topic).
    pub(crate) fn partition_counts<'a>(
        &self,
        topics: impl IntoIterator<Item = &'a String>,
    ) -> BTreeMap<String, Option<i32>> {
        topics.into_iter().map(|t| (t.clone(), self.partition_count(t))).collect()
    }

    /// Whether a known topic's partition count differs from `watched`.
    pub(crate) fn counts_changed(&self, watched: &BTreeMap<String, Option<i32>>) -> bool {
        watched.iter().any(|(t, count)| {
            let now = self.partition_count(t);
            now.is_some() && now != *count
        })
    }

    /// Wants a Metadata refresh that also covers `topic` (if it is not subscribed already).
    pub(crate) fn want_for(&mut self, topic: &str, subscribed: &[String]) {
        if !subscribed.iter().any(|t| t == topic) {
            self.extra_topics.insert(topic.to_string());
        }
        self.wanted = true;
    }

    /// Metadata for the subscribed topics and the extra ones.
    pub(crate) fn request(&self, subscribed: &[String]) -> MetadataRequest {
        let topics: BTreeSet<&String> = subscribed.iter().chain(self.extra_topics.iter()).collect();
        MetadataRequest::default().with_topics(Some(
            topics
                .into_iter()
                .map(|t| MetadataRequestTopic::default().with_name(Some(TopicName(sb(t)))))
                .collect(),
        ))
    }

    /// Applies a successful answer: brokers and topics (a topic or partition without a leader
    /// wants another refresh).
    pub(crate) fn apply(&mut self, resp: MetadataResponse) {
        let mut brokers: Vec<i32> = resp.brokers.iter().map(|b| b.node_id.0).collect();
        brokers.sort_unstable();
        brokers.dedup();
        if !brokers.is_empty() {
            self.known_brokers = brokers;
        }
        for t in resp.topics {
            let Some(name) = t.name.as_ref().map(|n| n.0.as_str().to_owned()) else {
                continue;
            };
            if t.error_code != codes::NONE {
                if t.error_code == codes::LEADER_NOT_AVAILABLE {
                    self.wanted = true;
                }
                continue;
            }
            if t.partitions.iter().any(|p| p.leader_id.0 < 0) {
                self.wanted = true;
            }
            // The last entry of an index listed twice wins, as a map insert would.
            let mut leaders: Vec<(i32, i32)> =
                t.partitions.iter().rev().map(|p| (p.partition_index, p.leader_id.0)).collect();
            leaders.sort_by_key(|&(p, _)| p);
            leaders.dedup_by_key(|&mut (p, _)| p);
            let fetch_template =
                FetchTopic::default().with_topic(TopicName(sb(&name))).with_topic_id(t.topic_id);
            self.topics.insert(name, TopicMeta { leaders, fetch_template });
        }
        self.known = true;
        self.version += 1;
    }
}

#[cfg(test)]
mod tests {
    use kafka_protocol::messages::metadata_response::{
        MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
    };
    use kafka_protocol::messages::BrokerId;

    use super::*;

    fn answer(leaders: &[i32]) -> MetadataResponse {
        MetadataResponse::default()
            .with_brokers(vec![
                MetadataResponseBroker::default().with_node_id(BrokerId(2)),
                MetadataResponseBroker::default().with_node_id(BrokerId(1)),
            ])
            .with_topics(vec![MetadataResponseTopic::default()
                .with_name(Some(TopicName(sb("t"))))
                .with_partitions(
                    leaders
                        .iter()
                        .enumerate()
                        .map(|(i, l)| {
                            MetadataResponsePartition::default()
                                .with_partition_index(i as i32)
                                .with_leader_id(BrokerId(*l))
                        })
                        .collect(),
                )])
    }

    #[test]
    fn cluster_requests_go_to_bootstrap_then_listed_brokers_in_turn() {
        let mut m = Metadata::default();
        assert_eq!(m.any_broker(7), 7);
        m.apply(answer(&[1, 2]));
        assert_eq!(m.any_broker(7), 1);
        m.broker_cursor += 1;
        assert_eq!(m.any_broker(7), 2);
        m.broker_cursor += 1;
        assert_eq!(m.any_broker(7), 1);
    }

    /// An answer that lists a partition twice keeps the last leader listed, and counts the
    /// partition once.
    #[test]
    fn a_partition_listed_twice_keeps_its_last_leader() {
        let mut m = Metadata::default();
        let mut resp = answer(&[1, 2]);
        let again = MetadataResponsePartition::default()
            .with_partition_index(0)
            .with_leader_id(BrokerId(3));
        resp.topics[0].partitions.push(again);
        m.apply(resp);
        assert_eq!(m.leader_of(&TopicPartition::new("t", 0)), Some(3));
        assert_eq!(m.leader_of(&TopicPartition::new("t", 1)), Some(2));
        assert_eq!(m.leader_of(&TopicPartition::new("t", 2)), None);
        assert_eq!(m.partition_count("t"), Some(2));
    }

    #[test]
    fn a_partition_without_leader_wants_another_refresh() {
        let mut m = Metadata::default();
        m.apply(answer(&[1, -1]));
        assert!(m.known && m.wanted);
        assert_eq!(m.version, 1);
        assert_eq!(m.leader_of(&TopicPartition::new("t", 0)), Some(1));
        assert_eq!(m.leader_of(&TopicPartition::new("t", 1)), None);
        assert_eq!(m.partition_count("t"), Some(2));
    }

    #[test]
    fn a_changed_partition_count_is_noticed_an_unknown_topic_is_not() {
        let mut m = Metadata::default();
        m.apply(answer(&[1, 1]));
        let watched = m.partition_counts(&["t".to_string(), "u".to_string()]);
        assert!(!m.counts_changed(&watched));
        m.apply(answer(&[1, 1, 2]));
        assert!(m.counts_changed(&watched));
    }

    #[test]
    fn extra_topics_are_asked_for_subscribed_ones_are_not_repeated() {
        let mut m = Metadata::default();
        let subscribed = vec!["t".to_string()];
        m.want_for("t", &subscribed);
        m.want_for("u", &subscribed);
        assert!(m.wanted);
        let names: Vec<String> = m
            .request(&subscribed)
            .topics
            .unwrap()
            .iter()
            .map(|t| t.name.as_ref().unwrap().0.to_string())
            .collect();
        assert_eq!(names, vec!["t", "u"]);
    }
}
