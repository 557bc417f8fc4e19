//! OffsetCommit (API 8): a member (or a simple consumer) stores its position.
//!
//! Rules, in Kafka's order (an error applies to every partition of the request):
//! - Unknown group: generation < 0 is a simple consumer (no group management) and is accepted,
//!   creating an Empty group; generation >= 0 is ILLEGAL_GENERATION (a member of a group this
//!   coordinator does not know, e.g. from before a coordinator move).
//! - A static member's stale member id: FENCED_INSTANCE_ID.
//! - Generation < 0 on an Empty group: accepted (the group only stores offsets).
//! - CompletingRebalance: REBALANCE_IN_PROGRESS (the new assignment is not known yet).
//! - Unknown member: UNKNOWN_MEMBER_ID. Another generation: ILLEGAL_GENERATION, the fence that
//!   keeps a zombie from overwriting the new owner's offsets.
//! - Stable or PreparingRebalance, known member, current generation: accepted. The commit also
//!   counts as a heartbeat. (During PreparingRebalance Kafka still accepts commits of the old
//!   generation so members can commit before revoking.)
//!
//! Per partition, metadata longer than `offset.metadata.max.bytes` is OFFSET_METADATA_TOO_LARGE.
//! Each partition's outcome is recorded as OffsetCommitAccepted or OffsetCommitRejected.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::offset_commit_response::{
    OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use kafka_protocol::messages::{OffsetCommitRequest, OffsetCommitResponse};

use crate::group::{Group, GroupState};
use crate::offsets::{CommittedOffset, OFFSET_METADATA_MAX_BYTES};
use crate::{CoordinatorEvent, GroupCoordinator, Millis, RequestId, TopicPartition};

impl GroupCoordinator {
    /// OffsetCommit: see the module documentation for the rules.
    pub(crate) fn handle_offset_commit(
        &mut self,
        now: Millis,
        id: RequestId,
        version: i16,
        req: OffsetCommitRequest,
    ) {
        let group_id = req.group_id.0.to_string();
        let member_id = req.member_id.to_string();
        let generation = req.generation_id_or_member_epoch;
        let instance =
            if version >= 7 { req.group_instance_id.as_ref().map(|s| s.to_string()) } else { None };

        let verdict: Result<(), ResponseError> = match self.groups.get_mut(&group_id) {
            None if generation < 0 => {
                self.groups.insert(group_id.clone(), Group::new(group_id.clone()));
                Ok(())
            }
            None => Err(ResponseError::IllegalGeneration),
            Some(g) => {
                if g.state == GroupState::Dead {
                    Err(ResponseError::CoordinatorNotAvailable)
                } else if g.is_static_member_fenced(&member_id, instance.as_deref()) {
                    Err(ResponseError::FencedInstanceId)
                } else if generation < 0 && g.state == GroupState::Empty {
                    Ok(())
                } else if g.state == GroupState::CompletingRebalance {
                    Err(ResponseError::RebalanceInProgress)
                } else if !g.has(&member_id) {
                    Err(ResponseError::UnknownMemberId)
                } else if generation != g.generation_id {
                    Err(ResponseError::IllegalGeneration)
                } else {
                    g.touch(&member_id, now, &mut self.fx);
                    Ok(())
                }
            }
        };

        let mut topics = Vec::with_capacity(req.topics.len());
        for topic in req.topics {
            let name = topic.name.0.to_string();
            let mut partitions = Vec::with_capacity(topic.partitions.len());
            for p in topic.partitions {
                let tp = TopicPartition::new(name.clone(), p.partition_index);
                let metadata = p.committed_metadata.as_ref().map(|m| m.to_string());
                let error = match verdict {
                    Err(e) => e.code(),
                    Ok(())
                        if metadata
                            .as_ref()
                            .is_some_and(|m| m.len() > OFFSET_METADATA_MAX_BYTES) =>
                    {
                        ResponseError::OffsetMetadataTooLarge.code()
                    }
                    Ok(()) => 0,
                };
                if error == 0 {
                    let committed = CommittedOffset {
                        offset: p.committed_offset,
                        leader_epoch: if version >= 6 { p.committed_leader_epoch } else { -1 },
                        metadata,
                        commit_timestamp: now,
                    };
                    self.offsets.commit(&group_id, tp.clone(), committed);
                    self.fx.event(CoordinatorEvent::OffsetCommitAccepted {
                        group: group_id.clone(),
                        member_id: member_id.clone(),
                        generation,
                        partition: tp,
                        offset: p.committed_offset,
                    });
                } else {
                    self.fx.event(CoordinatorEvent::OffsetCommitRejected {
                        group: group_id.clone(),
                        member_id: member_id.clone(),
                        generation,
                        partition: tp,
                        offset: p.committed_offset,
                        error: crate::error_name(error),
                    });
                }
                partitions.push(
                    OffsetCommitResponsePartition::default()
                        .with_partition_index(p.partition_index)
                        .with_error_code(error),
                );
            }
            topics.push(
                OffsetCommitResponseTopic::default()
                    .with_name(topic.name)
                    .with_partitions(partitions),
            );
        }
        self.fx.respond(id, OffsetCommitResponse::default().with_topics(topics));
    }
}
