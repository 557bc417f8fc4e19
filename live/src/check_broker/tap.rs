//! The wire tap: reads the frames a member writes and the frames its broker answers, and keeps
//! what the broker-side rules need ([`Request`], [`Answer`]) in the run's answer log. It decodes
//! with the wire crate's codec, apart from the member core, so what the log says is what went
//! over the wire.

use std::collections::BTreeMap;

use bytes::Bytes;
use groupsim_checker::broker::{Answer, AnswerLog, Entry, Exchange, Request};
use groupsim_wire::codec::{decode_request, decode_response, peek_correlation_id};
use groupsim_wire::Millis;
use kafka_protocol::messages::{ApiKey, RequestKind, ResponseKind};

use groupsim::exchange;
pub use groupsim::exchange::TopicNames;

/// A request written and not answered yet.
#[derive(Debug)]
struct Pending {
    api_key: ApiKey,
    version: i16,
    sent_ms: Millis,
    request: Request,
    group: String,
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
        let Some(request) = self.request(&decoded.request, decoded.version) else { return };
        let key = (actor.to_string(), conn, decoded.header.correlation_id);
        let (api_key, version) = (decoded.api_key, decoded.version);
        let group = exchange::group(&decoded.request);
        let pending = Pending { api_key, version, sent_ms: now, request, group };
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
        match self.summarize_answer(&response) {
            Some(answer) => self.log.entries.push(Entry::Exchange(Exchange {
                actor: actor.to_string(),
                sent_ms: p.sent_ms,
                answered_ms: now,
                request: p.request,
                answer,
                group: p.group,
                node: None,
                conn: Some(conn),
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
        let (actor, sent_ms, call, group) = (actor.to_string(), p.sent_ms, p.request, p.group);
        let entry = Entry::Unanswered { actor, sent_ms, call, group };
        self.log.entries.push(entry);
    }

    fn request(&self, r: &RequestKind, version: i16) -> Option<Request> {
        exchange::request(r, version, &self.names)
    }

    /// What the rules keep of an answer (None: an API they do not read).
    pub fn summarize_answer(&self, r: &ResponseKind) -> Option<Answer> {
        exchange::answer(r, &self.names)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use groupsim_checker::broker::Protocol;
    use groupsim_wire::codec::{encode_request, encode_response, request_header};
    use groupsim_wire::TopicPartition;
    use kafka_protocol::messages::offset_commit_request::{
        OffsetCommitRequestPartition, OffsetCommitRequestTopic,
    };
    use kafka_protocol::messages::offset_commit_response::{
        OffsetCommitResponsePartition, OffsetCommitResponseTopic,
    };
    use kafka_protocol::messages::{GroupId, OffsetCommitRequest, OffsetCommitResponse, TopicName};
    use kafka_protocol::protocol::StrBytes;

    fn commit_frames(correlation_id: i32) -> (Bytes, Bytes) {
        let name = TopicName(StrBytes::from_static_str("orders"));
        let request = OffsetCommitRequest::default()
            .with_group_id(GroupId(StrBytes::from_static_str("g")))
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
                    offsets: vec![(tp.clone(), 17)],
                    instance: None,
                },
                answer: Answer::Commit { errors: vec![(tp, 22)] },
                group: "g".into(),
                node: None,
                conn: Some(1),
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
}
