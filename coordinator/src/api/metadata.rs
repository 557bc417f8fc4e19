//! Metadata: the brokers, the controller, and the partitions (with leaders) of the topics asked
//! for.
//!
//! Rules:
//! - Which topics: v0 treats an empty list as "all topics"; from v1 a null list means all and
//!   an empty list means none (Kafka's rule). "All" lists topics in name order.
//! - Topics are never created here: an unknown name gets UNKNOWN_TOPIC_OR_PARTITION, whatever
//!   `allow_auto_topic_creation` says, so a scenario controls exactly which topics exist.
//! - Every topic carries its id (v10+; [`groupsim_wire::topic_id`], the id the consumer-group
//!   coordinator hands out in KIP-848 assignments, which clients resolve to names here). A
//!   topic asked for by id only (v10+, name null) is answered by that id's topic, or
//!   UNKNOWN_TOPIC_ID when no topic has it.
//! - Leaders come from the shared cluster state (`cluster.rs`: initial placement `p % n`, then
//!   whatever moves happened); replicas and ISR are the leader alone; the leader epoch reported
//!   is 0 (Fetch and ListOffsets do not fence on epochs). A partition whose leader is unknown
//!   reports LEADER_NOT_AVAILABLE.
//! - Only live brokers are listed (as Kafka's metadata cache does once a broker's death is
//!   detected); the controller is the first live broker.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::{BrokerId, MetadataRequest, MetadataResponse, TopicName};
use kafka_protocol::protocol::StrBytes;

use crate::cluster::ClusterState;
use crate::log::PartitionLogs;
use crate::TopicPartition;

/// Answers a Metadata request of `version` for the cluster named `cluster_id`.
pub fn handle(
    version: i16,
    request: &MetadataRequest,
    cluster_id: &str,
    cluster: &ClusterState,
    logs: &PartitionLogs,
) -> MetadataResponse {
    let all_topics = match &request.topics {
        None => true,
        Some(topics) => version == 0 && topics.is_empty(),
    };
    let topics: Vec<MetadataResponseTopic> = if all_topics {
        logs.topics().map(|name| topic(name, cluster, logs)).collect()
    } else {
        request
            .topics
            .iter()
            .flatten()
            .map(|t| match &t.name {
                Some(name) => topic(name, cluster, logs),
                None => {
                    match logs.topics().find(|name| groupsim_wire::topic_id(name) == t.topic_id) {
                        Some(name) => topic(name, cluster, logs),
                        None => MetadataResponseTopic::default()
                            .with_name(None)
                            .with_topic_id(t.topic_id)
                            .with_error_code(ResponseError::UnknownTopicId.code()),
                    }
                }
            })
            .collect()
    };
    let brokers = cluster
        .live_brokers()
        .map(|b| {
            MetadataResponseBroker::default()
                .with_node_id(BrokerId(b.node_id))
                .with_host(StrBytes::from_string(b.host.clone()))
                .with_port(b.port)
        })
        .collect();
    let controller = cluster.live_brokers().next().map_or(-1, |b| b.node_id);
    MetadataResponse::default()
        .with_brokers(brokers)
        .with_cluster_id(Some(StrBytes::from_string(cluster_id.to_string())))
        .with_controller_id(BrokerId(controller))
        .with_topics(topics)
}

fn topic(name: &str, cluster: &ClusterState, logs: &PartitionLogs) -> MetadataResponseTopic {
    let response = MetadataResponseTopic::default()
        .with_name(Some(TopicName(StrBytes::from_string(name.to_string()))));
    let Some(count) = logs.partition_count(name) else {
        // Kafka answers an unknown name with the zero id.
        return response.with_error_code(ResponseError::UnknownTopicOrPartition.code());
    };
    let response = response.with_topic_id(groupsim_wire::topic_id(name));
    // One key for the topic (a key per partition would copy the name per partition).
    let mut tp = TopicPartition::new(name, 0);
    let partitions = (0..count)
        .map(|p| {
            let partition =
                MetadataResponsePartition::default().with_partition_index(p).with_leader_epoch(0);
            tp.partition = p;
            match cluster.partition_leader(&tp) {
                Some(leader) => partition
                    .with_leader_id(BrokerId(leader.node_id))
                    .with_replica_nodes(vec![BrokerId(leader.node_id)])
                    .with_isr_nodes(vec![BrokerId(leader.node_id)]),
                None => partition
                    .with_leader_id(BrokerId(-1))
                    .with_error_code(ResponseError::LeaderNotAvailable.code()),
            }
        })
        .collect();
    response.with_partitions(partitions)
}
