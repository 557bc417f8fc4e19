//! ConsumerGroupHeartbeat (API 68, KIP-848): a consumer-protocol member joins, heartbeats,
//! acknowledges revocations and leaves, all with this one request; the answer carries its
//! member epoch, the heartbeat interval and, when it changed, its assignment.
//!
//! Before it gets here (`api/mod.rs`): a group not coordinated here gets NOT_COORDINATOR, and
//! one whose offsets partition is loading COORDINATOR_LOAD_IN_PROGRESS.
//!
//! Rules (Kafka's throwIfConsumerGroupHeartbeatRequestIsInvalid, then consumerGroupHeartbeat
//! and consumerGroupLeave), in order:
//! - INVALID_REQUEST for a malformed request: an empty member id from v1 (members choose their
//!   own id) or with epoch > 0 or -1; an empty group, instance or rack id; a join (epoch 0)
//!   without rebalance timeout, with owned partitions (it must own none), or with neither topic
//!   names nor a topic regex (an empty list or an empty regex is a member subscribed to
//!   nothing, as in Kafka 4.1); epoch -2 without instance id; an epoch below -2.
//! - UNSUPPORTED_ASSIGNOR for a `ServerAssignor` this coordinator does not have.
//! - INVALID_REGULAR_EXPRESSION (after the member lookup, `consumer_group/heartbeat.rs`) for a
//!   `SubscribedTopicRegex` that does not compile, checked when a member brings a regex it did
//!   not have (`consumer_group/topic_regex.rs`).
//! - Leave (epoch -1, or -2 for a static member's temporary leave): the group must be a consumer
//!   group (else GROUP_ID_NOT_FOUND), the member known (UNKNOWN_MEMBER_ID; for a static member
//!   also FENCED_INSTANCE_ID when another member id holds the instance id). -1 fences the member
//!   (partitions released, group epoch bumped; if it was the last consumer-protocol member of a
//!   group of classic members, the group may be downgraded to a classic group instead); -2 keeps
//!   it (`static_members.rs`). The answer
//!   echoes the member id and the epoch sent.
//! - Otherwise: a join creates the group if needed (an *empty* classic group of that id is
//!   replaced; a classic group with members is upgraded to a consumer group if
//!   `group.consumer.migration.policy` allows it, else GROUP_ID_NOT_FOUND: see
//!   `consumer_group/migration.rs`); a heartbeat to a group that does not exist gets
//!   GROUP_ID_NOT_FOUND. v0 members
//!   may send an empty id and get one (`{client_id}-{n}`, never random). Then the group rules
//!   (`consumer_group/heartbeat.rs`): GROUP_MAX_SIZE_REACHED, UNKNOWN_MEMBER_ID,
//!   FENCED_MEMBER_EPOCH, UNRELEASED_INSTANCE_ID, FENCED_INSTANCE_ID.
//!
//! An error is answered at once (nothing changed). A success changes the group, whose snapshot
//! is appended to the offsets log; the answer goes out when the append completes, as Kafka
//! answers once its records are committed (NOT_COORDINATOR if the partition moves first).

use std::collections::BTreeSet;
use std::sync::Arc;

use groupsim_wire::topic_name::shared_topic;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::consumer_group_heartbeat_response::{Assignment, TopicPartitions};
use kafka_protocol::messages::{ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse};
use kafka_protocol::protocol::StrBytes;

use crate::consumer_event::ConsumerRemovalReason;
use crate::consumer_group::assignor;
use crate::consumer_group::topic_regex::TopicRegex;
use crate::consumer_group::{
    ConsumerGroup, HeartbeatContext, HeartbeatInput, LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
};
use crate::coordinator::{generate_member_id, AppendDone};
use crate::offsets_log::OffsetsRecord;
use crate::topics::TopicsImage;
use crate::{error_name, probes, GroupCoordinator, Millis, RequestId, TopicPartition};

/// A refused heartbeat: the error and Kafka's message for it.
type Refusal = (ResponseError, String);

fn invalid(msg: &str) -> Refusal {
    (ResponseError::InvalidRequest, msg.to_string())
}

fn empty(s: Option<&StrBytes>) -> bool {
    s.is_some_and(|s| s.is_empty())
}

/// Kafka's throwIfConsumerGroupHeartbeatRequestIsInvalid for wire version `version`.
pub(crate) fn validate(version: i16, r: &ConsumerGroupHeartbeatRequest) -> Result<(), Refusal> {
    let epoch = r.member_epoch;
    if (version >= 1 || epoch > 0 || epoch == LEAVE_GROUP_MEMBER_EPOCH) && r.member_id.is_empty() {
        return Err(invalid("MemberId can't be empty."));
    }
    if r.group_id.is_empty() {
        return Err(invalid("GroupId can't be empty."));
    }
    if empty(r.instance_id.as_ref()) {
        return Err(invalid("InstanceId can't be empty."));
    }
    if empty(r.rack_id.as_ref()) {
        return Err(invalid("RackId can't be empty."));
    }
    if epoch == 0 {
        if r.rebalance_timeout_ms == -1 {
            return Err(invalid("RebalanceTimeoutMs must be provided in first request."));
        }
        if r.topic_partitions.as_ref().is_none_or(|t| !t.is_empty()) {
            return Err(invalid("TopicPartitions must be empty when (re-)joining."));
        }
        if r.subscribed_topic_names.is_none() && r.subscribed_topic_regex.is_none() {
            return Err(invalid(
                "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when \
                 (re-)joining.",
            ));
        }
    } else if epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH {
        if r.instance_id.is_none() {
            return Err(invalid("InstanceId can't be null."));
        }
    } else if epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH {
        return Err(invalid("MemberEpoch is invalid."));
    }
    if let Some(a) = &r.server_assignor {
        if !assignor::is_supported(a) {
            let msg = format!(
                "ServerAssignor {a} is not supported. Supported assignors: {}.",
                assignor::SUPPORTED.join(", ")
            );
            return Err((ResponseError::UnsupportedAssignor, msg));
        }
    }
    Ok(())
}

/// Kafka's message for a refused heartbeat: the compile error for a regex that does not
/// compile, the error's own description otherwise.
fn refusal_message(e: ResponseError, r: &ConsumerGroupHeartbeatRequest) -> String {
    let regex = r.subscribed_topic_regex.as_ref().map(|s| s.as_str()).unwrap_or_default();
    match (e, TopicRegex::compile(regex)) {
        (ResponseError::InvalidRegularExpression, Err(msg)) => msg,
        _ => e.to_string(),
    }
}

/// Owned partitions of a request, by name (an unknown topic id keeps its id as name, so it
/// matches nothing the group handed out).
fn owned(
    topics: &TopicsImage,
    r: &ConsumerGroupHeartbeatRequest,
) -> Option<BTreeSet<TopicPartition>> {
    r.topic_partitions.as_ref().map(|tps| {
        let mut out = BTreeSet::new();
        for t in tps {
            // One shared name per topic: each partition's key copies none.
            let name: Arc<str> = topics
                .name(&t.topic_id)
                .map_or_else(|| shared_topic(&t.topic_id.to_string()), shared_topic);
            out.extend(t.partitions.iter().map(|p| TopicPartition::new(&name, *p)));
        }
        out
    })
}

/// An assignment in the answer's layout: per topic id, its partitions, topics sorted by name.
pub(crate) fn assignment(topics: &TopicsImage, parts: &BTreeSet<TopicPartition>) -> Assignment {
    let topic_partitions = TopicsImage::by_topic(parts)
        .into_iter()
        .map(|(t, ps)| TopicPartitions::default().with_topic_id(topics.id(t)).with_partitions(ps))
        .collect();
    Assignment::default().with_topic_partitions(topic_partitions)
}

impl GroupCoordinator {
    /// ConsumerGroupHeartbeat: see the module documentation for the rules.
    pub(crate) fn handle_consumer_group_heartbeat(
        &mut self,
        now: Millis,
        id: RequestId,
        version: i16,
        client_id: &str,
        req: ConsumerGroupHeartbeatRequest,
    ) {
        match self.consumer_heartbeat(now, version, client_id, &req) {
            Err((e, msg)) => {
                probes::CONSUMER_HEARTBEAT_ERROR.hit_as(format_args!("{}", error_name(e.code())));
                let response = ConsumerGroupHeartbeatResponse::default()
                    .with_error_code(e.code())
                    .with_error_message(Some(StrBytes::from_string(msg)));
                self.fx.respond(id, response);
            }
            Ok(response) => {
                let group = req.group_id.to_string();
                let records = self
                    .consumer_groups
                    .get(&group)
                    .map(|g| vec![OffsetsRecord::ConsumerGroup(g.snapshot(now))])
                    .unwrap_or_default();
                self.append(now, &group, records, AppendDone::Heartbeat { id, response });
            }
        }
    }

    fn consumer_heartbeat(
        &mut self,
        now: Millis,
        version: i16,
        client_id: &str,
        req: &ConsumerGroupHeartbeatRequest,
    ) -> Result<ConsumerGroupHeartbeatResponse, Refusal> {
        validate(version, req)?;
        let group_id = req.group_id.to_string();
        let not_found = || (ResponseError::GroupIdNotFound, format!("Group {group_id} not found."));
        let instance = req.instance_id.as_ref().map(|s| s.to_string());
        let epoch = req.member_epoch;
        if epoch == LEAVE_GROUP_MEMBER_EPOCH || epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH {
            let g = self.consumer_groups.get_mut(&group_id).ok_or_else(not_found)?;
            let member_id = req.member_id.to_string();
            match &instance {
                None if g.member(&member_id).is_none() => {
                    return Err((ResponseError::UnknownMemberId, "Unknown member.".into()))
                }
                None => {}
                Some(i) => match g.static_member_id(i) {
                    None => return Err((ResponseError::UnknownMemberId, format!("Instance id {i} is unknown."))),
                    Some(holder) if holder != member_id => {
                        return Err((ResponseError::FencedInstanceId, format!("Static member {member_id} with instance id {i} was fenced by member {holder}.")))
                    }
                    Some(_) => {}
                },
            }
            if epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH {
                g.leave_temporarily(&member_id, &mut self.fx);
            } else {
                self.fence_consumer_member(now, &group_id, &member_id, ConsumerRemovalReason::Left);
            }
            return Ok(ConsumerGroupHeartbeatResponse::default()
                .with_member_id(Some(req.member_id.clone()))
                .with_member_epoch(epoch));
        }

        let mut group = match self.consumer_groups.remove(&group_id) {
            Some(g) => g,
            None if epoch != 0 => return Err(not_found()),
            // A classic group with members: an online upgrade, if allowed.
            None if self.groups.get(&group_id).is_some_and(|g| g.members().next().is_some()) => {
                self.upgrade(now, &group_id, &req.member_id)?
            }
            None => ConsumerGroup::new(group_id.clone()),
        };
        let member_id = if req.member_id.is_empty() {
            generate_member_id(&mut self.next_member_seq, client_id, instance.as_deref())
        } else {
            req.member_id.to_string()
        };
        let input = HeartbeatInput {
            member_id,
            member_epoch: epoch,
            instance_id: instance,
            rack_id: req.rack_id.as_ref().map(|s| s.to_string()),
            rebalance_timeout_ms: req.rebalance_timeout_ms,
            subscribed_topics: req
                .subscribed_topic_names
                .as_ref()
                .map(|ts| ts.iter().map(|t| t.to_string()).collect()),
            subscribed_topic_regex: req.subscribed_topic_regex.as_ref().map(|r| r.to_string()),
            server_assignor: req.server_assignor.as_ref().map(|s| s.to_string()),
            owned: owned(&self.topics, req),
            client_id: client_id.to_string(),
            client_host: String::new(),
        };
        let ctx = HeartbeatContext {
            topics: &self.topics,
            session_timeout_ms: self.config.consumer_session_timeout_ms,
            max_size: self.config.consumer_group_max_size,
            bugs: &self.config.bugs,
        };
        let result = group.heartbeat(now, &input, ctx, &mut self.fx);
        let keep = result.is_ok() || group.group_epoch() > 0 || !group.is_empty();
        if keep {
            // An empty classic group of this id gives way to the consumer group (its offsets stay).
            self.groups.remove(&group_id);
            self.consumer_groups.insert(group_id, group);
        }
        let answer = result.map_err(|e| (e, refusal_message(e, req)))?;
        Ok(ConsumerGroupHeartbeatResponse::default()
            .with_member_id(Some(StrBytes::from_string(answer.member_id)))
            .with_member_epoch(answer.member_epoch)
            .with_heartbeat_interval_ms(self.config.consumer_heartbeat_interval_ms)
            .with_assignment(answer.assignment.map(|a| assignment(&self.topics, &a))))
    }
}
