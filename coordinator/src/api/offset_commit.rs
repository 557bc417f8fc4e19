//! OffsetCommit (API 8): a member (or a simple consumer) stores its position.
//!
//! Rules, in Kafka's order (an error applies to every partition of the request):
//! - Unknown group: generation < 0 is a simple consumer (no group management) and is accepted,
//!   creating an Empty group; generation >= 0 is ILLEGAL_GENERATION (a member of a group this
//!   coordinator does not know, e.g. from before a coordinator move).
//! - A static member's stale member id: FENCED_INSTANCE_ID.
//! - Generation < 0 on an Empty group: accepted (the group only stores offsets).
//! - An instance id nobody holds: UNKNOWN_MEMBER_ID (Kafka's `validateMember`), whatever the
//!   member id.
//! - CompletingRebalance: REBALANCE_IN_PROGRESS (the new assignment is not known yet).
//! - Unknown member: UNKNOWN_MEMBER_ID. Another generation: ILLEGAL_GENERATION, the fence that
//!   keeps a zombie from overwriting the new owner's offsets.
//! - Stable or PreparingRebalance, known member, current generation: accepted. The commit also
//!   counts as a heartbeat. (During PreparingRebalance Kafka still accepts commits of the old
//!   generation so members can commit before revoking.)
//!
//! A KIP-848 consumer group checks member epochs instead (the generation field carries the
//! member epoch): UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH, UNSUPPORTED_VERSION below v9 (see
//! `consumer_group/offsets.rs`); an accepted commit does not count as a heartbeat there.
//!
//! Per partition, metadata longer than `offset.metadata.max.bytes` is OFFSET_METADATA_TOO_LARGE.
//!
//! Accepted partitions are appended to the offsets log; only when the append completes are they
//! cached, recorded (OffsetCommitAccepted, with the instant of this validation) and
//! acknowledged. The request is validated here only: a member removed, or a generation ended,
//! while the append is replicated does not undo it (Kafka's append callback applies the offsets
//! to any group that is not Dead). If the coordinator loses the partition first they get
//! NOT_COORDINATOR (recorded as OffsetCommitRejected). Refused
//! partitions are recorded as OffsetCommitRejected at once. The request is answered once, with
//! every partition's outcome.
//!
//! Deliberate bugs (`CoordinatorConfig::bugs`, off by default): `skip_commit_generation_check`
//! accepts any member and generation; `ack_commit_before_log_append` caches, records and answers
//! at once and appends later, so a crash in between loses an acknowledged commit.

use std::sync::Arc;

use groupsim_wire::topic_name::shared_topic;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::offset_commit_response::{
    OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use kafka_protocol::messages::{OffsetCommitRequest, OffsetCommitResponse};

use crate::answers::CommitTopicResult;
use crate::coordinator::{AppendDone, PendingCommit};
use crate::group::{Group, GroupState};
use crate::offsets::{CommittedOffset, OFFSET_METADATA_MAX_BYTES};
use crate::offsets_log::OffsetsRecord;
use crate::{probes, CoordinatorEvent, GroupCoordinator, Millis, RequestId, TopicPartition};

/// Builds an OffsetCommit response: each topic with its partitions' error codes, in request
/// order (the layout is the same in every version).
pub(crate) fn response(topics: Vec<CommitTopicResult>) -> OffsetCommitResponse {
    let topics = topics
        .into_iter()
        .map(|(name, partitions)| {
            let partitions = partitions
                .into_iter()
                .map(|(index, error)| {
                    OffsetCommitResponsePartition::default()
                        .with_partition_index(index)
                        .with_error_code(error)
                })
                .collect();
            OffsetCommitResponseTopic::default().with_name(name).with_partitions(partitions)
        })
        .collect();
    OffsetCommitResponse::default().with_topics(topics)
}

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
        // Bug `forgets_fenced_instances` reads no instance: the member id decides.
        let instance = (version >= 7 && !self.config.bugs.forgets_fenced_instances)
            .then(|| req.group_instance_id.as_ref().map(|s| s.to_string()))
            .flatten();

        let bugs = self.config.bugs.clone();
        // A consumer group checks member epochs instead (`consumer_group/offsets.rs`).
        let consumer_verdict = self
            .consumer_groups
            .get(&group_id)
            .map(|g| g.validate_offset_commit(&member_id, generation, version));
        let verdict: Result<(), ResponseError> = match consumer_verdict {
            _ if bugs.skip_commit_generation_check => {
                self.unfenced_commit_verdict(now, &group_id, &member_id)
            }
            Some(v) => v,
            None => self.classic_commit_verdict(now, &group_id, &member_id, generation, instance),
        };
        match verdict {
            Err(ResponseError::IllegalGeneration) => probes::COMMIT_STALE_GENERATION.hit(),
            Err(ResponseError::UnknownMemberId) => probes::COMMIT_UNKNOWN_MEMBER.hit(),
            Err(ResponseError::RebalanceInProgress) => probes::COMMIT_DURING_REBALANCE.hit(),
            _ => {}
        }

        let mut records = Vec::new();
        let mut topics = Vec::with_capacity(req.topics.len());
        for topic in req.topics {
            // One shared name per topic: each partition's key copies none.
            let name: Arc<str> = shared_topic(topic.name.0.as_str());
            let mut partitions = Vec::with_capacity(topic.partitions.len());
            for p in topic.partitions {
                let tp = TopicPartition::new(&name, p.partition_index);
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
                let accepted = if error == 0 {
                    let committed = CommittedOffset {
                        offset: p.committed_offset,
                        leader_epoch: if version >= 6 { p.committed_leader_epoch } else { -1 },
                        metadata,
                        commit_timestamp: now,
                    };
                    records.push(OffsetsRecord::Commit {
                        group: group_id.clone(),
                        partition: tp,
                        offset: committed.clone(),
                    });
                    Some(committed)
                } else {
                    self.fx.event(CoordinatorEvent::OffsetCommitRejected {
                        group: group_id.clone(),
                        member_id: member_id.clone(),
                        generation,
                        partition: tp,
                        offset: p.committed_offset,
                        error: crate::error_name(error),
                    });
                    None
                };
                partitions.push((p.partition_index, error, accepted));
            }
            topics.push((topic.name, partitions));
        }
        let commit = PendingCommit {
            id,
            group: group_id.clone(),
            member_id,
            generation,
            validated_at: now,
            topics,
        };
        if records.is_empty() {
            self.finish_commit(commit, None);
        } else if bugs.ack_commit_before_log_append {
            self.ack_commit_before_append(now, commit, records);
        } else {
            self.append(now, &group_id, records, AppendDone::Commit(commit));
        }
    }

    /// The classic group's verdict on a commit (see the module docs).
    fn classic_commit_verdict(
        &mut self,
        now: Millis,
        group_id: &str,
        member_id: &str,
        generation: i32,
        instance: Option<String>,
    ) -> Result<(), ResponseError> {
        match self.groups.get_mut(group_id) {
            None if generation < 0 => {
                self.groups.insert(group_id.to_string(), Group::new(group_id));
                Ok(())
            }
            None => Err(ResponseError::IllegalGeneration),
            Some(g) => {
                if g.is_static_member_fenced(member_id, instance.as_deref()) {
                    Err(ResponseError::FencedInstanceId)
                } else if generation < 0 && g.state == GroupState::Empty {
                    Ok(())
                } else if g.is_instance_unheld(instance.as_deref()) {
                    Err(ResponseError::UnknownMemberId)
                } else if g.state == GroupState::CompletingRebalance {
                    Err(ResponseError::RebalanceInProgress)
                } else if !g.has(member_id) {
                    Err(ResponseError::UnknownMemberId)
                } else if generation != g.generation_id {
                    Err(ResponseError::IllegalGeneration)
                } else {
                    g.touch(member_id, now, &mut self.fx);
                    Ok(())
                }
            }
        }
    }
}
