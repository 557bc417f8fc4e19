//! The member's contract with the world ([`SansIoMember`]), its timers, and the transitions
//! between generations: committing, revoking, losing partitions, resetting.

use groupsim_member::{
    MemberEvent, MemberOutput, Millis, RequestFailure, RequestId, SansIoMember, Target,
    TopicPartition,
};
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::{
    GroupId, OffsetCommitRequest, RequestKind, ResponseKind, TopicName,
};

use crate::member::{sb, Call, Mistake, Phase, SimpleConsumer, Under};

impl SansIoMember for SimpleConsumer {
    fn start(&mut self, now: Millis) {
        self.phase = Phase::Joining;
        self.drive(now);
    }

    fn leave(&mut self, now: Millis) {
        match self.phase {
            Phase::Idle | Phase::Done | Phase::Leaving => {}
            _ if self.member_id.is_empty() => self.stop(),
            _ => {
                self.give_up_partitions();
                self.phase = Phase::Leaving;
                self.drive(now);
            }
        }
    }

    fn handle_response(&mut self, now: Millis, id: RequestId, response: ResponseKind) {
        if let Some(call) = self.calls.remove(&id) {
            if !self.finished {
                self.on_answer(now, call, response);
                self.drive(now);
            }
        }
    }

    fn handle_failure(&mut self, now: Millis, id: RequestId, failure: RequestFailure) {
        let Some(call) = self.calls.remove(&id) else { return };
        if self.finished {
            return;
        }
        let reason = match &failure {
            RequestFailure::Timeout => "TIMEOUT".to_string(),
            RequestFailure::Disconnected => "DISCONNECTED".to_string(),
            RequestFailure::Unsupported(what) => format!("UNSUPPORTED {what}"),
        };
        if call.to_coordinator() {
            self.lose_coordinator(now, reason.clone());
        }
        match call {
            Call::Metadata => {
                self.metadata_wanted = true;
                self.back_off(now);
            }
            Call::FindCoordinator => self.back_off(now),
            Call::Sync(_) => self.phase = Phase::Joining,
            Call::OffsetFetch(epoch) | Call::ListOffsets(epoch) if epoch == self.epoch => {
                for o in self.owned.values_mut() {
                    o.initialising = false;
                }
                self.back_off(now);
            }
            Call::Fetch(leader, _) => {
                self.fetching.retain(|&b| b != leader);
                self.metadata_wanted = true;
                self.back_off(now);
            }
            Call::Commit { under, offsets, then_revoke } => {
                for (tp, offset) in offsets {
                    let (member_id, generation) = (under.member_id.clone(), under.generation);
                    let error = reason.clone();
                    let e = MemberEvent::CommitFailed {
                        member_id,
                        generation,
                        partition: tp,
                        offset,
                        error,
                    };
                    self.event(e);
                }
                if then_revoke {
                    self.revoked(now);
                }
            }
            Call::Leave => self.stop(),
            _ => {}
        }
        self.drive(now);
    }

    fn poll_timeout(&self) -> Option<Millis> {
        [self.backoff_until, self.heartbeat_at, self.commit_at].into_iter().flatten().min()
    }

    fn handle_timeout(&mut self, now: Millis) {
        if self.backoff_until.is_some_and(|t| t <= now) {
            self.backoff_until = None;
        }
        if self.heartbeat_at.is_some_and(|t| t <= now) {
            self.heartbeat_at = Some(now + self.config.heartbeat_interval_ms.max(1));
            self.heartbeat();
        }
        if self.commit_at.is_some_and(|t| t <= now) {
            self.commit_at = Some(now + self.config.commit_interval_ms.max(1));
            if self.phase == Phase::Stable {
                self.commit(false);
            }
        }
        self.drive(now);
    }

    fn poll_output(&mut self) -> Option<MemberOutput> {
        self.out.pop_front()
    }

    fn is_finished(&self) -> bool {
        self.finished
    }

    fn member_id(&self) -> &str {
        &self.member_id
    }
}

impl SimpleConsumer {
    fn heartbeat(&mut self) {
        let in_group = matches!(self.phase, Phase::Stable | Phase::Revoking);
        let Some(node) = self.coordinator.filter(|_| in_group) else { return };
        if self.in_flight(|c| matches!(c, Call::Heartbeat(_))) {
            return;
        }
        let req = kafka_protocol::messages::HeartbeatRequest::default()
            .with_group_id(GroupId(sb(&self.config.group_id)))
            .with_generation_id(self.generation)
            .with_member_id(sb(&self.member_id))
            .with_group_instance_id(self.config.group_instance_id.as_deref().map(sb));
        let (timeout, call) = (self.config.request_timeout_ms, Call::Heartbeat(self.under()));
        self.send(Target::Coordinator(node), RequestKind::Heartbeat(req), timeout, call);
    }

    /// Commits what was processed and not yet acknowledged; `then_revoke`: the partitions are
    /// given up once it is answered (or at once, with nothing to commit or no coordinator).
    pub(crate) fn commit(&mut self, then_revoke: bool) {
        let offsets: Vec<(TopicPartition, i64)> = self
            .processed
            .iter()
            .filter(|(tp, &o)| {
                if self.owned.contains_key(*tp) {
                    self.committed.get(*tp) != Some(&o)
                } else {
                    // The mistake: the offsets map is never pruned, so every commit sends the
                    // offsets of partitions given up long ago again.
                    self.mistake == Mistake::StaleOffsets
                }
            })
            .map(|(tp, &o)| (tp.clone(), o))
            .collect();
        let Some(node) = self.coordinator.filter(|_| !offsets.is_empty()) else {
            if then_revoke {
                self.revoked(0);
            }
            return;
        };
        let mut topics: Vec<OffsetCommitRequestTopic> = Vec::new();
        for (tp, offset) in &offsets {
            let p = OffsetCommitRequestPartition::default()
                .with_partition_index(tp.partition)
                .with_committed_offset(*offset);
            match topics.last_mut() {
                Some(t) if t.name.0.as_str() == &*tp.topic => t.partitions.push(p),
                _ => topics.push(
                    OffsetCommitRequestTopic::default()
                        .with_name(TopicName(sb(&tp.topic)))
                        .with_partitions(vec![p]),
                ),
            }
        }
        let req = OffsetCommitRequest::default()
            .with_group_id(GroupId(sb(&self.config.group_id)))
            .with_generation_id_or_member_epoch(self.generation)
            .with_member_id(sb(&self.member_id))
            .with_group_instance_id(self.config.group_instance_id.as_deref().map(sb))
            .with_topics(topics);
        for (tp, offset) in &offsets {
            let (member_id, generation) = (self.member_id.clone(), self.generation);
            let e = MemberEvent::CommitSent {
                member_id,
                generation,
                partition: tp.clone(),
                offset: *offset,
            };
            self.event(e);
        }
        let call = Call::Commit { under: self.under(), offsets, then_revoke };
        let timeout = self.config.request_timeout_ms;
        self.send(Target::Coordinator(node), RequestKind::OffsetCommit(req), timeout, call);
    }

    /// The coordinator started a rebalance: commit, give the partitions up, rejoin.
    pub(crate) fn rebalance(&mut self) {
        if self.phase == Phase::Stable {
            self.phase = Phase::Revoking;
            self.commit(true);
        }
    }

    /// The revoking commit was answered: the partitions are given up and the member rejoins.
    pub(crate) fn revoked(&mut self, _now: Millis) {
        if self.phase == Phase::Revoking {
            self.give_up_partitions();
            self.phase = Phase::Joining;
        }
    }

    /// Gives every owned partition up cleanly (`Revoked`).
    fn give_up_partitions(&mut self) {
        let partitions: Vec<TopicPartition> = self.owned.keys().cloned().collect();
        if !partitions.is_empty() {
            let (member_id, generation) = (self.member_id.clone(), self.generation);
            self.event(MemberEvent::Revoked { member_id, generation, partitions });
        }
        self.drop_assignment();
    }

    /// Forgets the assignment (the processed offsets too, unless the member makes its mistake).
    fn drop_assignment(&mut self) {
        if self.mistake != Mistake::StaleOffsets {
            let owned = std::mem::take(&mut self.owned);
            self.processed.retain(|tp, _| !owned.contains_key(tp));
        }
        self.owned.clear();
        self.fetching.clear();
        self.epoch += 1;
        self.heartbeat_at = None;
        self.commit_at = None;
    }

    /// An answer about the membership it was sent under says the member is out of the
    /// generation (or the group): it loses its partitions without committing and rejoins.
    /// Answers about an earlier membership are ignored (KAFKA-9823).
    pub(crate) fn reset(&mut self, now: Millis, under: &Under, error: i16, forget_id: bool) {
        if *under != self.under() {
            return;
        }
        let error = groupsim_wire::error_codes::error_name(error);
        let partitions: Vec<TopicPartition> = self.owned.keys().cloned().collect();
        let (member_id, generation) = (self.member_id.clone(), self.generation);
        if !partitions.is_empty() {
            let reason = error.clone();
            self.event(MemberEvent::Lost {
                member_id: member_id.clone(),
                generation,
                partitions,
                reason,
            });
        }
        self.event(MemberEvent::GenerationReset {
            member_id,
            generation,
            error,
            reset_member_id: forget_id,
            answer_about: None,
        });
        self.drop_assignment();
        self.generation = -1;
        if forget_id {
            self.member_id.clear();
        }
        self.phase = Phase::Joining;
        self.back_off(now);
    }

    /// Stops for good.
    pub(crate) fn stop(&mut self) {
        let member_id = self.member_id.clone();
        self.event(MemberEvent::Left { member_id });
        self.phase = Phase::Done;
        self.finished = true;
        self.backoff_until = None;
        self.heartbeat_at = None;
        self.commit_at = None;
    }
}
