//! The wire tap: reads the frames a member writes and the frames its broker answers, and keeps
//! what the broker-side rules need ([`Request`], [`Answer`]) in the run's answer log. It decodes
//! with the wire crate's codec, apart from the member core, so what the log says is what went
//! over the wire.

use std::collections::BTreeMap;

use bytes::Bytes;
use groupsim_checker::broker::{Answer, AnswerLog, Entry, Exchange, Request};
use groupsim_wire::codec::{decode_request, decode_response, peek_correlation_id};
use groupsim_wire::consumer_protocol::decode_assignment;
use groupsim_wire::{Millis, TopicPartition};
use kafka_protocol::messages::{ApiKey, RequestKind, ResponseKind};
use kafka_protocol::records::RecordBatchDecoder;

/// Topic ids to names, for the APIs that name topics by id.
pub type TopicNames = BTreeMap<uuid::Uuid, String>;

/// A request written and not answered yet.
#[derive(Debug)]
struct Pending {
    api_key: ApiKey,
    version: i16,
    sent_ms: Millis,
    request: Request,
}

/// The answer log being written, with the requests in flight per connection.
#[derive(Debug)]
pub struct Tap {
    log: AnswerLog,
    names: TopicNames,
    /// (actor, connection, correlation id) -> the request.
    pending: BTreeMap<(String, u64, i32), Pending>,
}

impl Tap {
    /// A tap writing into `log`.
    pub fn new(log: AnswerLog, names: TopicNames) -> Self {
        Self { log, names, pending: BTreeMap::new() }
    }

    /// The log so far.
    pub fn log(&self) -> &AnswerLog {
        &self.log
    }

    /// Adds an entry as it is.
    pub fn push(&mut self, entry: Entry) {
        self.log.entries.push(entry);
    }

    /// `actor` wrote `frame` (a request, without its length prefix) on connection `conn`.
    pub fn sent(&mut self, actor: &str, conn: u64, now: Millis, frame: &Bytes) {
        let Ok(decoded) = decode_request(frame.clone()) else { return };
        let Some(request) = self.request(&decoded.request) else { return };
        let key = (actor.to_string(), conn, decoded.header.correlation_id);
        let pending =
            Pending { api_key: decoded.api_key, version: decoded.version, sent_ms: now, request };
        self.pending.insert(key, pending);
    }

    /// `actor` read `frame` (an answer) on connection `conn`.
    pub fn answered(&mut self, actor: &str, conn: u64, now: Millis, frame: &Bytes) {
        let Some(correlation_id) = peek_correlation_id(frame) else { return };
        let Some(p) = self.pending.remove(&(actor.to_string(), conn, correlation_id)) else {
            return;
        };
        let Ok((_, response)) = decode_response(frame.clone(), p.api_key, p.version) else {
            return self.unanswered(actor, p);
        };
        match self.answer(&response) {
            Some(answer) => self.log.entries.push(Entry::Exchange(Exchange {
                actor: actor.to_string(),
                sent_ms: p.sent_ms,
                answered_ms: now,
                request: p.request,
                answer,
            })),
            None => self.unanswered(actor, p),
        }
    }

    /// `actor`'s connection `conn` closed: what it had in flight is never answered.
    pub fn closed(&mut self, actor: &str, conn: u64) {
        let keys: Vec<_> =
            self.pending.keys().filter(|(a, c, _)| a == actor && *c == conn).cloned().collect();
        for k in keys {
            let p = self.pending.remove(&k).expect("listed above");
            self.unanswered(actor, p);
        }
    }

    /// Every request still in flight is never answered (the run is over); the log.
    pub fn finish(mut self) -> AnswerLog {
        for ((actor, _, _), p) in std::mem::take(&mut self.pending) {
            self.unanswered(&actor, p);
        }
        self.log
    }

    fn unanswered(&mut self, actor: &str, p: Pending) {
        let entry =
            Entry::Unanswered { actor: actor.to_string(), sent_ms: p.sent_ms, call: p.request };
        self.log.entries.push(entry);
    }

    fn name(&self, name: &str, id: &uuid::Uuid) -> String {
        if !name.is_empty() {
            return name.to_string();
        }
        self.names.get(id).cloned().unwrap_or_else(|| id.to_string())
    }

    fn request(&self, r: &RequestKind) -> Option<Request> {
        Some(match r {
            RequestKind::JoinGroup(r) => Request::Join {
                member_id: r.member_id.to_string(),
                instance: r.group_instance_id.as_ref().map(|i| i.to_string()),
            },
            RequestKind::SyncGroup(r) => {
                Request::Sync { member_id: r.member_id.to_string(), generation: r.generation_id }
            }
            RequestKind::Heartbeat(r) => Request::Heartbeat {
                member_id: r.member_id.to_string(),
                generation: r.generation_id,
            },
            RequestKind::LeaveGroup(r) => {
                let member_id = r.members.first().map(|m| m.member_id.to_string());
                Request::Leave { member_id: member_id.unwrap_or_else(|| r.member_id.to_string()) }
            }
            RequestKind::ConsumerGroupHeartbeat(r) => Request::ConsumerHeartbeat {
                member_id: r.member_id.to_string(),
                epoch: r.member_epoch,
                owned: r.topic_partitions.as_ref().map(|ts| {
                    ts.iter()
                        .flat_map(|t| {
                            let topic = self.name("", &t.topic_id);
                            t.partitions.iter().map(move |&p| TopicPartition::new(topic.clone(), p))
                        })
                        .collect()
                }),
            },
            RequestKind::OffsetCommit(r) => Request::Commit {
                member_id: r.member_id.to_string(),
                generation: r.generation_id_or_member_epoch,
                offsets: r
                    .topics
                    .iter()
                    .flat_map(|t| {
                        let topic = self.name(&t.name, &t.topic_id);
                        t.partitions.iter().map(move |p| {
                            (
                                TopicPartition::new(topic.clone(), p.partition_index),
                                p.committed_offset,
                            )
                        })
                    })
                    .collect(),
            },
            RequestKind::OffsetFetch(r) => {
                let mut partitions = Vec::new();
                for t in r.topics.iter().flatten() {
                    partitions.extend(
                        t.partition_indexes
                            .iter()
                            .map(|&p| TopicPartition::new(t.name.to_string(), p)),
                    );
                }
                for g in &r.groups {
                    for t in g.topics.iter().flatten() {
                        let topic = self.name(&t.name, &t.topic_id);
                        partitions.extend(
                            t.partition_indexes
                                .iter()
                                .map(|&p| TopicPartition::new(topic.clone(), p)),
                        );
                    }
                }
                Request::OffsetFetch { partitions }
            }
            RequestKind::Fetch(r) => Request::Fetch {
                partitions: r
                    .topics
                    .iter()
                    .flat_map(|t| {
                        let topic = self.name(&t.topic, &t.topic_id);
                        t.partitions.iter().map(move |p| {
                            (TopicPartition::new(topic.clone(), p.partition), p.fetch_offset)
                        })
                    })
                    .collect(),
            },
            _ => return None,
        })
    }

    /// What the rules keep of an answer (None: an API they do not read).
    pub fn summarize_answer(&self, r: &ResponseKind) -> Option<Answer> {
        self.answer(r)
    }

    fn answer(&self, r: &ResponseKind) -> Option<Answer> {
        Some(match r {
            ResponseKind::JoinGroup(a) => Answer::Join {
                error: a.error_code,
                generation: a.generation_id,
                member_id: a.member_id.to_string(),
                leader: a.leader.to_string(),
                members: a.members.iter().map(|m| m.member_id.to_string()).collect(),
            },
            ResponseKind::SyncGroup(a) => Answer::Sync {
                error: a.error_code,
                assignment: decode_assignment(&a.assignment)
                    .map(|x| x.partitions)
                    .unwrap_or_default(),
            },
            ResponseKind::Heartbeat(a) => Answer::Error { error: a.error_code },
            ResponseKind::LeaveGroup(a) => Answer::Error {
                error: if a.error_code != 0 {
                    a.error_code
                } else {
                    a.members.first().map(|m| m.error_code).unwrap_or(0)
                },
            },
            ResponseKind::ConsumerGroupHeartbeat(a) => Answer::ConsumerHeartbeat {
                error: a.error_code,
                member_id: a.member_id.as_ref().map(ToString::to_string).unwrap_or_default(),
                epoch: a.member_epoch,
                assignment: a.assignment.as_ref().map(|x| {
                    x.topic_partitions
                        .iter()
                        .flat_map(|t| {
                            let topic = self.name("", &t.topic_id);
                            t.partitions.iter().map(move |&p| TopicPartition::new(topic.clone(), p))
                        })
                        .collect()
                }),
            },
            ResponseKind::OffsetCommit(a) => Answer::Commit {
                errors: a
                    .topics
                    .iter()
                    .flat_map(|t| {
                        let topic = self.name(&t.name, &t.topic_id);
                        t.partitions.iter().map(move |p| {
                            (TopicPartition::new(topic.clone(), p.partition_index), p.error_code)
                        })
                    })
                    .collect(),
            },
            ResponseKind::OffsetFetch(a) => {
                let mut offsets = Vec::new();
                for t in &a.topics {
                    for p in &t.partitions {
                        let error = if a.error_code != 0 { a.error_code } else { p.error_code };
                        let tp = TopicPartition::new(t.name.to_string(), p.partition_index);
                        offsets.push((tp, p.committed_offset, error));
                    }
                }
                for g in &a.groups {
                    for t in &g.topics {
                        let topic = self.name(&t.name, &t.topic_id);
                        for p in &t.partitions {
                            let error = if g.error_code != 0 { g.error_code } else { p.error_code };
                            let tp = TopicPartition::new(topic.clone(), p.partition_index);
                            offsets.push((tp, p.committed_offset, error));
                        }
                    }
                }
                Answer::OffsetFetch { offsets }
            }
            ResponseKind::Fetch(a) => Answer::Fetch {
                partitions: a
                    .responses
                    .iter()
                    .flat_map(|t| {
                        let topic = self.name(&t.topic, &t.topic_id);
                        t.partitions.iter().map(move |p| {
                            let error = if a.error_code != 0 { a.error_code } else { p.error_code };
                            let tp = TopicPartition::new(topic.clone(), p.partition_index);
                            (tp, error, record_offsets(p.records.clone()))
                        })
                    })
                    .collect(),
            },
            _ => return None,
        })
    }
}

/// The offsets of the data records in a Fetch answer's record bytes, in order, repeats kept. A
/// truncated last batch (brokers may cut one short) ends the list.
pub fn record_offsets(records: Option<Bytes>) -> Vec<i64> {
    let Some(mut buf) = records else { return Vec::new() };
    // A batch claiming more records than there are bytes is garbage: refuse it before the
    // decoder sizes a vector by that count.
    if let Ok(infos) = RecordBatchDecoder::decode_batch_info(&mut buf.clone()) {
        if infos.iter().any(|i| i.record_count as usize > buf.len()) {
            return Vec::new();
        }
    }
    let mut offsets = Vec::new();
    while !buf.is_empty() {
        let Ok(set) = RecordBatchDecoder::decode(&mut buf) else { break };
        offsets.extend(set.records.iter().filter(|r| !r.control).map(|r| r.offset));
    }
    offsets
}

#[cfg(test)]
mod tests {
    use super::*;
    use groupsim_checker::broker::Protocol;
    use groupsim_wire::codec::{encode_request, encode_response, request_header};
    use kafka_protocol::messages::offset_commit_request::{
        OffsetCommitRequestPartition, OffsetCommitRequestTopic,
    };
    use kafka_protocol::messages::offset_commit_response::{
        OffsetCommitResponsePartition, OffsetCommitResponseTopic,
    };
    use kafka_protocol::messages::{OffsetCommitRequest, OffsetCommitResponse, TopicName};
    use kafka_protocol::protocol::StrBytes;

    fn commit_frames(correlation_id: i32) -> (Bytes, Bytes) {
        let name = TopicName(StrBytes::from_static_str("orders"));
        let request = OffsetCommitRequest::default()
            .with_generation_id_or_member_epoch(4)
            .with_member_id(StrBytes::from_static_str("m0-1"))
            .with_topics(vec![OffsetCommitRequestTopic::default()
                .with_name(name.clone())
                .with_partitions(vec![OffsetCommitRequestPartition::default()
                    .with_partition_index(2)
                    .with_committed_offset(17)])]);
        let header = request_header(
            ApiKey::OffsetCommit,
            8,
            correlation_id,
            &StrBytes::from_static_str("m0"),
        );
        let request = encode_request(&header, &RequestKind::OffsetCommit(request)).unwrap();
        let answer =
            OffsetCommitResponse::default().with_topics(vec![OffsetCommitResponseTopic::default()
                .with_name(name)
                .with_partitions(vec![OffsetCommitResponsePartition::default()
                    .with_partition_index(2)
                    .with_error_code(22)])]);
        let answer = encode_response(
            correlation_id,
            ApiKey::OffsetCommit,
            8,
            &ResponseKind::OffsetCommit(answer),
        )
        .unwrap();
        (request, answer)
    }

    fn tap() -> Tap {
        Tap::new(AnswerLog::new(Protocol::Classic, Vec::new()), TopicNames::new())
    }

    #[test]
    fn a_commit_written_and_answered_is_logged_with_both_sides() {
        let mut tap = tap();
        let (request, answer) = commit_frames(7);
        tap.sent("m0.0", 1, 10, &request);
        tap.answered("m0.0", 1, 15, &answer);
        let tp = TopicPartition::new("orders", 2);
        assert_eq!(
            tap.finish().entries,
            vec![Entry::Exchange(Exchange {
                actor: "m0.0".into(),
                sent_ms: 10,
                answered_ms: 15,
                request: Request::Commit {
                    member_id: "m0-1".into(),
                    generation: 4,
                    offsets: vec![(tp.clone(), 17)]
                },
                answer: Answer::Commit { errors: vec![(tp, 22)] },
            })]
        );
    }

    #[test]
    fn a_request_whose_connection_closed_is_logged_unanswered() {
        let mut tap = tap();
        let (request, answer) = commit_frames(3);
        tap.sent("m0.0", 1, 10, &request);
        tap.closed("m0.0", 1);
        tap.answered("m0.0", 1, 15, &answer); // too late: nothing waits for it
        let entries = tap.finish().entries;
        assert_eq!(entries.len(), 1, "{entries:?}");
        assert!(matches!(&entries[0], Entry::Unanswered { sent_ms: 10, .. }), "{entries:?}");
    }

    #[test]
    fn record_offsets_keep_repeats_and_order() {
        let mut bytes = groupsim_wire::test_util::record_batch(3..6).to_vec();
        bytes.extend_from_slice(&groupsim_wire::test_util::record_batch(5..7));
        assert_eq!(record_offsets(Some(Bytes::from(bytes))), vec![3, 4, 5, 5, 6]);
        assert_eq!(record_offsets(None), Vec::<i64>::new());
    }
}
