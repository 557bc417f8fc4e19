//! Appends to the offsets log: starting one, completing it (the record is replicated) and
//! running what waited for it (a commit's answer, the leader's assignment, a consumer group
//! heartbeat's answer), or failing it when the offsets partition moves away.

use kafka_protocol::error::ResponseError;

use super::{AppendDone, PendingAppend, PendingCommit};
use crate::offsets_log::{self, OffsetsRecord};
use crate::timers::TimerKey;
use crate::{probes, CoordinatorEvent, GroupCoordinator, GroupState, Millis, TopicPartition};

impl GroupCoordinator {
    // ---- appends to the offsets log ---------------------------------------------------------

    /// Starts an append; it completes `offsets_append_delay_ms` from now (at once when 0).
    pub(crate) fn append(
        &mut self,
        now: Millis,
        group: &str,
        records: Vec<OffsetsRecord>,
        then: AppendDone,
    ) {
        let append = PendingAppend { partition: self.partition_for(group), records, then };
        let delay = self.config.offsets_append_delay_ms;
        if delay == 0 {
            self.complete_append(now, append);
            return;
        }
        let seq = self.next_append;
        self.next_append += 1;
        self.appends.insert(seq, append);
        self.fx.timers.insert((now + delay, TimerKey::Append { seq }));
    }

    /// The append is replicated: write it to the log and run what waited for it.
    ///
    /// A commit was validated when its request arrived (member, generation, group state) and is
    /// not checked again: it is cached, recorded and acknowledged even if its member left or
    /// its generation ended while it was being replicated, as in Kafka, whose append callback
    /// (GroupMetadataManager.storeOffsets' putCacheCallback) applies the offsets to any group
    /// that is not Dead and answers NONE. An assignment takes effect (members answered, group
    /// Stable) only if the group is still completing that generation, as Kafka's storeGroup
    /// callback for SyncGroup checks; but its record is in the log either way — the callback
    /// runs after the append — so a coordinator that loads the group before the next
    /// generation's record is written loads the abandoned generation with its assignment, as
    /// Kafka's would.
    pub(super) fn complete_append(&mut self, now: Millis, append: PendingAppend) {
        let still_valid = match &append.then {
            AppendDone::Nothing => true,
            AppendDone::Commit(c) => {
                if self.commit_outlived_member(c) {
                    probes::APPEND_OUTLIVED_MEMBER.hit();
                }
                true
            }
            AppendDone::Assignment { group, generation, .. } => {
                let valid = self.groups.get(group).is_some_and(|g| {
                    g.state() == GroupState::CompletingRebalance && g.generation_id() == *generation
                });
                if !valid {
                    probes::ASSIGNMENT_WRITTEN_FOR_ABANDONED_GENERATION.hit();
                }
                valid
            }
            AppendDone::Heartbeat { .. }
            | AppendDone::ClassicJoin { .. }
            | AppendDone::Answer { .. } => true,
        };
        {
            let mut log = offsets_log::lock(&self.log);
            for record in append.records {
                log.append(append.partition, record);
            }
        }
        match append.then {
            AppendDone::Nothing => {}
            AppendDone::Commit(c) => self.finish_commit(c, None),
            AppendDone::Assignment { group, assignment, .. } => {
                let fx = &mut self.fx;
                if let (true, Some(g)) = (still_valid, self.groups.get_mut(&group)) {
                    g.store_assignment(assignment, now, fx);
                }
            }
            AppendDone::Heartbeat { id, response } => self.fx.respond(id, response),
            AppendDone::ClassicJoin {
                parked,
                group,
                session_timeout_ms,
                rebalance_timeout_ms,
                result,
            } => {
                if let Some(g) = self.consumer_groups.get_mut(&group) {
                    let (s, r) = (session_timeout_ms, rebalance_timeout_ms);
                    g.classic_joined(&result.member_id, now, s, r, &mut self.fx);
                }
                self.fx.answer_join(parked, result);
            }
            AppendDone::Answer { id, response, .. } => self.fx.respond(id, *response),
        }
    }

    /// Whether a member commit's member left the group, or its generation ended, while its
    /// append was under way (Kafka applies it all the same).
    fn commit_outlived_member(&self, c: &PendingCommit) -> bool {
        c.generation >= 0
            && self
                .groups
                .get(&c.group)
                .is_some_and(|g| !g.has(&c.member_id) || g.generation_id() != c.generation)
    }

    /// An append that will never complete (the partition moved away).
    pub(super) fn fail_append(&mut self, seq: u64) {
        let Some(append) = self.appends.remove(&seq) else { return };
        self.fx.timers.retain(|(_, k)| *k != TimerKey::Append { seq });
        match append.then {
            AppendDone::Commit(c) => {
                self.finish_commit(c, Some(ResponseError::NotCoordinator.code()))
            }
            AppendDone::Heartbeat { id, .. } => self.fx.respond(
                id,
                kafka_protocol::messages::ConsumerGroupHeartbeatResponse::default()
                    .with_error_code(ResponseError::NotCoordinator.code()),
            ),
            AppendDone::ClassicJoin { parked, result, .. } => {
                let e = ResponseError::NotCoordinator;
                self.fx
                    .answer_join(parked, crate::answers::JoinResult::error(&result.member_id, e));
            }
            AppendDone::Answer { id, on_failure, .. } => self.fx.respond(id, *on_failure),
            AppendDone::Nothing | AppendDone::Assignment { .. } => {}
        }
    }

    /// Answers an OffsetCommit: accepted partitions are cached and recorded unless `failure`
    /// says the append failed, in which case they get that error.
    pub(crate) fn finish_commit(&mut self, c: PendingCommit, failure: Option<i16>) {
        let mut topics = Vec::with_capacity(c.topics.len());
        for (name, parts) in c.topics {
            let mut partitions = Vec::with_capacity(parts.len());
            for (index, error, offset) in parts {
                let error = match (offset, failure) {
                    (Some(offset), None) => {
                        let tp = TopicPartition::new(name.0.as_str().to_owned(), index);
                        self.fx.event(CoordinatorEvent::OffsetCommitAccepted {
                            group: c.group.clone(),
                            member_id: c.member_id.clone(),
                            generation: c.generation,
                            partition: tp.clone(),
                            offset: offset.offset,
                            validated_at_ms: c.validated_at,
                        });
                        self.offsets.commit(&c.group, tp, offset);
                        error
                    }
                    (Some(offset), Some(code)) => {
                        self.fx.event(CoordinatorEvent::OffsetCommitRejected {
                            group: c.group.clone(),
                            member_id: c.member_id.clone(),
                            generation: c.generation,
                            partition: TopicPartition::new(name.0.as_str().to_owned(), index),
                            offset: offset.offset,
                            error: crate::error_name(code),
                        });
                        code
                    }
                    (None, _) => error,
                };
                partitions.push((index, error));
            }
            topics.push((name, partitions));
        }
        self.fx.answer_commit(c.id, topics);
    }

    /// Appends the snapshots groups queued: the fire-and-forget ones, then those an answer
    /// waits for.
    pub(crate) fn flush_stores(&mut self, now: Millis) {
        for record in std::mem::take(&mut self.fx.stores) {
            let group = record.group().to_string();
            self.append(now, &group, vec![record], AppendDone::Nothing);
        }
        for s in std::mem::take(&mut self.fx.stores_then_answer) {
            let group = s.record.group().to_string();
            let then = AppendDone::Answer {
                id: s.id,
                response: Box::new(s.response),
                on_failure: Box::new(s.on_failure),
            };
            self.append(now, &group, vec![s.record], then);
        }
    }
}
