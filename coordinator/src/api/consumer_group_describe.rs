//! ConsumerGroupDescribe (API 69, KIP-848): the state of consumer groups, with every member's
//! epoch, subscription, current and target assignment.
//!
//! Rules (Kafka's consumerGroupDescribe), per group of the request, in request order:
//! - Its offsets partition loading here: COORDINATOR_LOAD_IN_PROGRESS; not owned here:
//!   NOT_COORDINATOR (the broker fills in the groups it does not coordinate).
//! - No such group: GROUP_ID_NOT_FOUND ("Group {id} not found."); a classic group:
//!   GROUP_ID_NOT_FOUND ("Group {id} is not a consumer group.").
//! - Otherwise the group: state (Empty, Assigning, Reconciling, Stable), group epoch, target
//!   assignment epoch, the assignor it uses, and its members sorted by member id, each with its
//!   member type from v1 (0 for a member speaking the classic protocol, 1 for the consumer
//!   protocol: KIP-1099).

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::consumer_group_describe_response::{
    Assignment, DescribedGroup, Member, TopicPartitions,
};
use kafka_protocol::messages::{
    ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse, GroupId, TopicName,
};
use kafka_protocol::protocol::StrBytes;

use std::collections::BTreeSet;

use crate::consumer_group::ConsumerGroup;
use crate::topics::TopicsImage;
use crate::{GroupCoordinator, RequestId, TopicPartition};

/// Member type of a member speaking the classic protocol (v1+).
const CLASSIC_MEMBER_TYPE: i8 = 0;
/// Member type of a consumer-protocol member (v1+).
const CONSUMER_MEMBER_TYPE: i8 = 1;

fn sb(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}

fn described_assignment(topics: &TopicsImage, parts: &BTreeSet<TopicPartition>) -> Assignment {
    Assignment::default().with_topic_partitions(
        TopicsImage::by_topic(parts)
            .into_iter()
            .map(|(t, ps)| {
                TopicPartitions::default()
                    .with_topic_id(topics.id(t))
                    .with_topic_name(TopicName(sb(t)))
                    .with_partitions(ps)
            })
            .collect(),
    )
}

fn describe(g: &ConsumerGroup, topics: &TopicsImage) -> DescribedGroup {
    let members = g
        .members()
        .map(|m| {
            Member::default()
                .with_member_id(sb(&m.member_id))
                .with_instance_id(m.instance_id.as_deref().map(sb))
                .with_rack_id(m.rack_id.as_deref().map(sb))
                .with_member_epoch(m.member_epoch)
                .with_client_id(sb(&m.client_id))
                .with_client_host(sb(&m.client_host))
                .with_subscribed_topic_names(
                    m.subscribed_topics.iter().map(|t| TopicName(sb(t))).collect(),
                )
                .with_subscribed_topic_regex(m.subscribed_topic_regex.as_deref().map(sb))
                .with_assignment(described_assignment(topics, &m.assigned))
                .with_target_assignment(described_assignment(topics, &g.target_of(&m.member_id)))
                .with_member_type(if m.uses_classic_protocol() {
                    CLASSIC_MEMBER_TYPE
                } else {
                    CONSUMER_MEMBER_TYPE
                })
        })
        .collect();
    DescribedGroup::default()
        .with_group_id(GroupId(sb(g.group_id())))
        .with_group_state(sb(g.state().kafka_name()))
        .with_group_epoch(g.group_epoch())
        .with_assignment_epoch(g.assignment_epoch())
        .with_assignor_name(sb(g.preferred_assignor()))
        .with_members(members)
        .with_authorized_operations(i32::MIN)
}

impl GroupCoordinator {
    /// ConsumerGroupDescribe: see the module documentation for the rules.
    pub(crate) fn handle_consumer_group_describe(
        &mut self,
        id: RequestId,
        req: ConsumerGroupDescribeRequest,
    ) {
        let groups = req
            .group_ids
            .into_iter()
            .map(|gid| {
                let error = |e: ResponseError, msg: Option<String>| {
                    DescribedGroup::default()
                        .with_group_id(gid.clone())
                        .with_error_code(e.code())
                        .with_error_message(msg.map(StrBytes::from_string))
                        .with_authorized_operations(i32::MIN)
                };
                if let Some(e) = self.group_status(gid.as_str()).batched_error() {
                    return error(e, None);
                }
                match self.consumer_groups.get(gid.as_str()) {
                    Some(g) => describe(g, &self.topics),
                    None if self.groups.contains_key(gid.as_str()) => error(
                        ResponseError::GroupIdNotFound,
                        Some(format!("Group {} is not a consumer group.", gid.as_str())),
                    ),
                    None => error(
                        ResponseError::GroupIdNotFound,
                        Some(format!("Group {} not found.", gid.as_str())),
                    ),
                }
            })
            .collect();
        self.fx.respond(id, ConsumerGroupDescribeResponse::default().with_groups(groups));
    }
}
