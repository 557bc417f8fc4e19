//! What the member does with each answer.

use std::collections::BTreeMap;

use groupsim_member::{MemberEvent, Millis, Target, TopicPartition};
use groupsim_wire::consumer_protocol::{
    decode_assignment, decode_subscription, encode_assignment, Assignment,
};
use groupsim_wire::error_codes::{self as codes, error_name};
use groupsim_wire::records::offsets_in;
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use kafka_protocol::messages::{
    BrokerId, FetchResponse, GroupId, JoinGroupResponse, ListOffsetsRequest, ListOffsetsResponse,
    MetadataResponse, OffsetCommitResponse, OffsetFetchResponse, RequestKind, ResponseKind,
    SyncGroupRequest, TopicName,
};

use crate::assign;
use crate::member::{sb, Call, Phase, SimpleConsumer, Under, MAX_RECORDS, PROTOCOL};

/// Errors that mean "ask another broker who the coordinator is".
fn coordinator_moved(code: i16) -> bool {
    matches!(
        code,
        codes::NOT_COORDINATOR
            | codes::COORDINATOR_NOT_AVAILABLE
            | codes::COORDINATOR_LOAD_IN_PROGRESS
    )
}

impl SimpleConsumer {
    pub(crate) fn on_answer(&mut self, now: Millis, call: Call, response: ResponseKind) {
        match (call, response) {
            (Call::Metadata, ResponseKind::Metadata(r)) => self.on_metadata(now, r),
            (Call::FindCoordinator, ResponseKind::FindCoordinator(r)) => {
                let (code, node) = match r.coordinators.first() {
                    Some(c) => (c.error_code, c.node_id.0),
                    None => (r.error_code, r.node_id.0),
                };
                if code == codes::NONE && node >= 0 {
                    self.coordinator = Some(node);
                    self.event(MemberEvent::CoordinatorFound { node_id: node });
                } else {
                    self.back_off(now);
                }
            }
            (Call::Join, ResponseKind::JoinGroup(r)) => self.on_join(now, r),
            (Call::Sync(under), ResponseKind::SyncGroup(r)) => {
                if self.phase != Phase::Syncing || under != self.under() {
                    return;
                }
                match r.error_code {
                    codes::NONE => self.on_assignment(now, &r.assignment),
                    codes::REBALANCE_IN_PROGRESS => self.phase = Phase::Joining,
                    code if coordinator_moved(code) => {
                        self.phase = Phase::Joining;
                        self.lose_coordinator(now, error_name(code));
                    }
                    code @ codes::UNKNOWN_MEMBER_ID => self.reset(now, &under, code, true),
                    code => self.reset(now, &under, code, false),
                }
            }
            (Call::Heartbeat(under), ResponseKind::Heartbeat(r)) => match r.error_code {
                codes::NONE => {}
                codes::REBALANCE_IN_PROGRESS if under == self.under() => self.rebalance(),
                code if coordinator_moved(code) => self.lose_coordinator(now, error_name(code)),
                code @ codes::UNKNOWN_MEMBER_ID => self.reset(now, &under, code, true),
                code @ (codes::ILLEGAL_GENERATION | codes::FENCED_INSTANCE_ID) => {
                    self.reset(now, &under, code, code == codes::FENCED_INSTANCE_ID)
                }
                _ => {}
            },
            (Call::OffsetFetch(epoch), ResponseKind::OffsetFetch(r)) if epoch == self.epoch => {
                self.on_committed(now, r)
            }
            (Call::ListOffsets(epoch), ResponseKind::ListOffsets(r)) if epoch == self.epoch => {
                self.on_log_start(now, r)
            }
            (Call::Fetch(leader, epoch), ResponseKind::Fetch(r)) => {
                self.fetching.retain(|&b| b != leader);
                if epoch == self.epoch && self.phase == Phase::Stable {
                    self.on_records(now, r);
                }
            }
            (Call::Commit { under, offsets, then_revoke }, ResponseKind::OffsetCommit(r)) => {
                self.on_commit(now, &under, &offsets, r);
                if then_revoke {
                    self.revoked(now);
                }
            }
            (Call::Leave, ResponseKind::LeaveGroup(_)) => self.stop(),
            // An answer about an assignment given up since, or of a shape the member does not
            // expect: nothing to do.
            _ => {}
        }
    }

    fn on_metadata(&mut self, now: Millis, r: MetadataResponse) {
        let mut complete = true;
        for t in &r.topics {
            let Some(name) = t.name.as_ref().map(|n| n.0.to_string()) else { continue };
            if t.error_code != codes::NONE || t.partitions.is_empty() {
                complete = false;
                continue;
            }
            self.topic_ids.insert(name.clone(), t.topic_id);
            self.counts.insert(name.clone(), t.partitions.len() as i32);
            for p in &t.partitions {
                let tp = TopicPartition::new(&name, p.partition_index);
                self.leaders.insert(tp, p.leader_id.0);
                complete &= p.leader_id.0 >= 0;
            }
        }
        self.metadata_wanted = !complete;
        if !complete {
            self.back_off(now);
        }
    }

    fn on_join(&mut self, now: Millis, r: JoinGroupResponse) {
        if self.phase != Phase::Joining {
            return;
        }
        match r.error_code {
            codes::NONE => {
                self.member_id = r.member_id.to_string();
                self.generation = r.generation_id;
                let is_leader = r.leader == r.member_id;
                self.event(MemberEvent::Joined {
                    member_id: self.member_id.clone(),
                    generation: self.generation,
                    leader: r.leader.to_string(),
                    protocol: r.protocol_name.as_ref().map(|p| p.to_string()).unwrap_or_default(),
                    is_leader,
                });
                let assignments = if is_leader { self.lead(&r) } else { Vec::new() };
                let req = SyncGroupRequest::default()
                    .with_group_id(GroupId(sb(&self.config.group_id)))
                    .with_generation_id(self.generation)
                    .with_member_id(sb(&self.member_id))
                    .with_group_instance_id(self.config.group_instance_id.as_deref().map(sb))
                    .with_protocol_type(Some(sb("consumer")))
                    .with_protocol_name(Some(sb(PROTOCOL)))
                    .with_assignments(assignments);
                let node = self.coordinator.unwrap_or(self.config.bootstrap_node);
                self.phase = Phase::Syncing;
                let (timeout, call) = (self.config.request_timeout_ms, Call::Sync(self.under()));
                self.send(Target::Coordinator(node), RequestKind::SyncGroup(req), timeout, call);
            }
            codes::MEMBER_ID_REQUIRED => self.member_id = r.member_id.to_string(),
            code if coordinator_moved(code) => self.lose_coordinator(now, error_name(code)),
            code @ codes::UNKNOWN_MEMBER_ID => {
                let under = self.under();
                self.reset(now, &under, code, true);
            }
            _ => self.back_off(now),
        }
    }

    /// The leader's assignment of this generation, recorded and encoded for SyncGroup.
    fn lead(&mut self, r: &JoinGroupResponse) -> Vec<SyncGroupRequestAssignment> {
        let subscriptions: BTreeMap<String, Vec<String>> = r
            .members
            .iter()
            .map(|m| {
                let topics = decode_subscription(&m.metadata).map(|s| s.topics).unwrap_or_default();
                (m.member_id.to_string(), topics)
            })
            .collect();
        let plan = assign::range(&subscriptions, &self.counts);
        self.event(MemberEvent::AssignmentComputed {
            generation: self.generation,
            protocol: PROTOCOL.to_string(),
            assignments: plan.iter().map(|(m, ps)| (m.clone(), ps.clone())).collect(),
        });
        plan.into_iter()
            .map(|(member, partitions)| {
                let bytes = encode_assignment(&Assignment { partitions, ..Default::default() });
                SyncGroupRequestAssignment::default()
                    .with_member_id(sb(&member))
                    .with_assignment(bytes)
            })
            .collect()
    }

    fn on_assignment(&mut self, now: Millis, bytes: &[u8]) {
        let partitions = decode_assignment(bytes).map(|a| a.partitions).unwrap_or_default();
        self.epoch += 1;
        self.owned = partitions.iter().map(|tp| (tp.clone(), Default::default())).collect();
        self.event(MemberEvent::Assigned {
            member_id: self.member_id.clone(),
            generation: self.generation,
            partitions,
        });
        self.phase = Phase::Stable;
        self.heartbeat_at = Some(now + self.config.heartbeat_interval_ms.max(1));
        self.commit_at = Some(now + self.config.commit_interval_ms.max(1));
    }

    fn on_committed(&mut self, now: Millis, r: OffsetFetchResponse) {
        let mut found: Vec<(TopicPartition, i64, i16)> = Vec::new();
        let mut error = r.error_code;
        if let Some(g) = r.groups.first() {
            error = g.error_code;
            for t in &g.topics {
                for p in &t.partitions {
                    let tp = TopicPartition::new(t.name.0.as_str(), p.partition_index);
                    found.push((tp, p.committed_offset, p.error_code));
                }
            }
        } else {
            for t in &r.topics {
                for p in &t.partitions {
                    let tp = TopicPartition::new(t.name.0.as_str(), p.partition_index);
                    found.push((tp, p.committed_offset, p.error_code));
                }
            }
        }
        if error != codes::NONE {
            for o in self.owned.values_mut() {
                o.initialising = false;
            }
            if coordinator_moved(error) {
                self.lose_coordinator(now, error_name(error));
            } else {
                self.back_off(now);
            }
            return;
        }
        let mut from_log_start: Vec<TopicPartition> = Vec::new();
        for (tp, committed, code) in found {
            let Some(o) = self.owned.get_mut(&tp) else { continue };
            if code != codes::NONE {
                o.initialising = false;
            } else if committed >= 0 {
                o.position = Some(committed);
                o.initialising = false;
                self.event(MemberEvent::PositionInitialized {
                    member_id: self.member_id.clone(),
                    generation: self.generation,
                    partition: tp,
                    committed: Some(committed),
                    position: committed,
                    reset_after: None,
                });
            } else {
                from_log_start.push(tp);
            }
        }
        self.ask_log_start(from_log_start);
    }

    /// `auto.offset.reset=earliest`: ListOffsets for the log start of partitions never
    /// committed, one request per leader.
    fn ask_log_start(&mut self, partitions: Vec<TopicPartition>) {
        let mut by_leader: BTreeMap<i32, Vec<TopicPartition>> = BTreeMap::new();
        for tp in partitions {
            let leader = self.leaders.get(&tp).copied().unwrap_or(self.config.bootstrap_node);
            by_leader.entry(leader).or_default().push(tp);
        }
        for (leader, tps) in by_leader {
            let mut topics: Vec<ListOffsetsTopic> = Vec::new();
            for tp in &tps {
                let p = ListOffsetsPartition::default()
                    .with_partition_index(tp.partition)
                    .with_timestamp(-2);
                match topics.last_mut() {
                    Some(t) if t.name.0.as_str() == &*tp.topic => t.partitions.push(p),
                    _ => topics.push(
                        ListOffsetsTopic::default()
                            .with_name(TopicName(sb(&tp.topic)))
                            .with_partitions(vec![p]),
                    ),
                }
            }
            let req =
                ListOffsetsRequest::default().with_replica_id(BrokerId(-1)).with_topics(topics);
            let (timeout, call) = (self.config.request_timeout_ms, Call::ListOffsets(self.epoch));
            self.send(Target::Broker(leader), RequestKind::ListOffsets(req), timeout, call);
        }
    }

    fn on_log_start(&mut self, now: Millis, r: ListOffsetsResponse) {
        for t in &r.topics {
            for p in &t.partitions {
                let tp = TopicPartition::new(t.name.0.as_str(), p.partition_index);
                let Some(o) = self.owned.get_mut(&tp) else { continue };
                o.initialising = false;
                if p.error_code != codes::NONE || p.offset < 0 {
                    self.metadata_wanted = true;
                    self.back_off(now);
                    continue;
                }
                o.position = Some(p.offset);
                self.event(MemberEvent::PositionInitialized {
                    member_id: self.member_id.clone(),
                    generation: self.generation,
                    partition: tp,
                    committed: None,
                    position: p.offset,
                    reset_after: None,
                });
            }
        }
    }

    /// Processes the records of a Fetch answer at once, in order.
    fn on_records(&mut self, now: Millis, r: FetchResponse) {
        for t in r.responses {
            let Some(topic) = self.topic_named(t.topic.0.as_str(), t.topic_id) else { continue };
            for p in t.partitions {
                let tp = TopicPartition::new(&topic, p.partition_index);
                let Some(position) = self.owned.get(&tp).and_then(|o| o.position) else { continue };
                if p.error_code != codes::NONE {
                    // A moved leader or an offset out of range: refresh, and start again from
                    // the committed offset.
                    self.metadata_wanted = true;
                    if p.error_code == codes::OFFSET_OUT_OF_RANGE {
                        self.owned.insert(tp, Default::default());
                    }
                    self.back_off(now);
                    continue;
                }
                let Some((first, last, count)) = offsets_in(p.records, position, MAX_RECORDS)
                else {
                    continue;
                };
                if count == 0 {
                    continue;
                }
                self.event(MemberEvent::RecordsProcessed {
                    member_id: self.member_id.clone(),
                    generation: self.generation,
                    partition: tp.clone(),
                    first_offset: first,
                    last_offset: last,
                });
                self.processed.insert(tp.clone(), last + 1);
                if let Some(o) = self.owned.get_mut(&tp) {
                    o.position = Some(last + 1);
                }
            }
        }
    }

    fn on_commit(
        &mut self,
        now: Millis,
        under: &Under,
        offsets: &[(TopicPartition, i64)],
        r: OffsetCommitResponse,
    ) {
        let mut errors: BTreeMap<TopicPartition, i16> = BTreeMap::new();
        for t in &r.topics {
            let topic = self.topic_named(t.name.0.as_str(), t.topic_id).unwrap_or_default();
            for p in &t.partitions {
                errors.insert(TopicPartition::new(&topic, p.partition_index), p.error_code);
            }
        }
        let mut worst = codes::NONE;
        for (tp, offset) in offsets {
            let code = errors.get(tp).copied().unwrap_or(codes::UNKNOWN_TOPIC_OR_PARTITION);
            let (member_id, generation) = (under.member_id.clone(), under.generation);
            let (partition, offset) = (tp.clone(), *offset);
            if code == codes::NONE {
                self.committed.insert(tp.clone(), offset);
                self.event(MemberEvent::CommitAcked { member_id, generation, partition, offset });
            } else {
                let error = error_name(code);
                self.event(MemberEvent::CommitFailed {
                    member_id,
                    generation,
                    partition,
                    offset,
                    error,
                });
                worst = code;
            }
        }
        match worst {
            codes::NONE => {}
            codes::REBALANCE_IN_PROGRESS if *under == self.under() => self.rebalance(),
            code if coordinator_moved(code) => self.lose_coordinator(now, error_name(code)),
            code @ codes::UNKNOWN_MEMBER_ID => self.reset(now, under, code, true),
            code @ codes::ILLEGAL_GENERATION => self.reset(now, under, code, false),
            _ => {}
        }
    }
}
