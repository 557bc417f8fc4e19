//! The answer log: what the clients of a run asked a broker and what it answered, in the order
//! the answers arrived, with lifecycle marks from the harness — `check-broker`'s, or one group's
//! part of a history's wire stream with marks read from its events ([`super::history`]). Its
//! entries are the history's own ([`groupsim_history::wire`]). It is all the broker-side rules
//! see. Times are the harness's milliseconds since the run
//! started; `sent_ms` is when the request was written, `answered_ms` when its answer was read.

use groupsim_wire::{Millis, TopicPartition};
use serde::{Deserialize, Serialize};

pub use groupsim_history::wire::{Answer, Entry, Exchange, Mark, Request};

/// The error codes the rules name, as the wire crate defines them.
pub use groupsim_wire::error_codes::{
    COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, FENCED_INSTANCE_ID,
    FENCED_MEMBER_EPOCH, ILLEGAL_GENERATION, MEMBER_ID_REQUIRED, NONE, NOT_COORDINATOR,
    REBALANCE_IN_PROGRESS, UNKNOWN_MEMBER_ID,
};

/// The group protocol the members of a run spoke.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Protocol {
    /// JoinGroup / SyncGroup / Heartbeat: generations.
    Classic,
    /// KIP-848 ConsumerGroupHeartbeat: member epochs.
    Consumer,
}

/// A run's answer log.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AnswerLog {
    /// The protocol the members spoke.
    pub protocol: Protocol,
    /// The partitions of the topic the group consumed.
    pub partitions: Vec<TopicPartition>,
    /// Entries in the order they happened (exchanges in answer order).
    pub entries: Vec<Entry>,
    /// The group size limits the coordinators enforced for the whole run, when the harness
    /// knows them (the simulated worlds and `serve`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_size: Option<MaxSize>,
}

/// The most members a coordinator lets into a group (`i32::MAX`: no limit).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MaxSize {
    /// `group.max.size`, for classic groups.
    pub classic: i32,
    /// `group.consumer.max.size`, for consumer groups.
    pub consumer: i32,
}

impl AnswerLog {
    /// An empty log.
    pub fn new(protocol: Protocol, partitions: Vec<TopicPartition>) -> Self {
        Self { protocol, partitions, entries: Vec::new(), max_size: None }
    }

    /// The exchanges, with their index in [`Self::entries`].
    pub fn exchanges(&self) -> impl Iterator<Item = (usize, &Exchange)> + '_ {
        self.entries.iter().enumerate().filter_map(|(i, e)| match e {
            Entry::Exchange(x) => Some((i, x)),
            _ => None,
        })
    }

    /// Whether `member_id` may have been pending when the request of exchange `x` was written:
    /// a JoinGroup answer read by then (in that millisecond too: excused, not judged) told it
    /// MEMBER_ID_REQUIRED, and none answered NONE certainly before (in an earlier millisecond: one
    /// read in the same millisecond may have been served after it) has let it in since (a
    /// refused JoinGroup of a pending id leaves it pending). A pending member id is no member yet
    /// — requests naming it are refused — yet its JoinGroup may still let it in, and it is
    /// dynamic.
    pub fn pending_when_written(&self, member_id: &str, x: &Exchange) -> bool {
        let answers = self
            .exchanges()
            .filter(|(_, y)| y.answered_ms <= x.sent_ms && !std::ptr::eq(*y, x))
            .filter_map(|(_, y)| match &y.answer {
                Answer::Join { error, member_id: m, .. } if m == member_id => {
                    Some((*error, y.answered_ms))
                }
                _ => None,
            });
        let mut pending = false;
        for (error, answered_ms) in answers {
            match error {
                MEMBER_ID_REQUIRED => pending = true,
                NONE if answered_ms < x.sent_ms => pending = false,
                _ => {}
            }
        }
        pending
    }

    /// Whether a JoinGroup answered NONE gave `member_id` a generation `fits` accepts, in an
    /// entry after `after` read by `by_ms` (in that millisecond too: it may have been read
    /// first). The rules ask it to learn whether a member was let back in, or its generations
    /// started over, since some proof about it.
    pub fn joined_after(
        &self,
        member_id: &str,
        after: usize,
        by_ms: Millis,
        fits: impl Fn(i32) -> bool,
    ) -> bool {
        self.exchanges().any(|(k, y)| {
            k > after
                && y.answered_ms <= by_ms
                && matches!(&y.answer, Answer::Join { error: NONE, member_id: m, generation: g, .. }
                    if m == member_id && fits(*g))
        })
    }

    /// The time of the first mark `mark`.
    pub fn mark_at(&self, mark: &Mark) -> Option<Millis> {
        self.entries.iter().find_map(|e| match e {
            Entry::Mark { at_ms, mark: m } if m == mark => Some(*at_ms),
            _ => None,
        })
    }

    /// A one-line description of entry `index`, for evidence.
    pub fn describe(&self, index: usize) -> String {
        match self.entries.get(index) {
            Some(e) => format!("#{index} {}", describe_entry(e)),
            None => format!("#{index} (no such entry)"),
        }
    }
}

/// A one-line description of one entry, for evidence.
pub fn describe_entry(entry: &Entry) -> String {
    match entry {
        Entry::Exchange(x) => format!(
            "{} sent {:?} at {} ms, answered {:?} at {} ms",
            x.actor, x.request, x.sent_ms, x.answer, x.answered_ms
        ),
        Entry::Unanswered { actor, sent_ms, call, .. } => {
            format!("{actor} sent {call:?} at {sent_ms} ms, never answered")
        }
        Entry::Mark { at_ms, mark } => format!("{mark:?} at {at_ms} ms"),
    }
}

/// Whether exchanges `a` and `b` went over one connection of one actor. A broker reads a
/// connection's next request only once it has answered the last (Kafka mutes a channel while a
/// request of it is in service; `serve` and the simulated brokers do the same), so of two such
/// exchanges the one answered first was decided before the other was read, however late the
/// client read its answer.
pub fn same_connection(a: &Exchange, b: &Exchange) -> bool {
    a.conn.is_some() && a.conn == b.conn && a.actor == b.actor
}

/// The member id a classic request names.
pub fn request_member(r: &Request) -> Option<&str> {
    match r {
        Request::Join { member_id, .. }
        | Request::Sync { member_id, .. }
        | Request::Heartbeat { member_id, .. }
        | Request::Leave { member_id, .. }
        | Request::Commit { member_id, .. } => Some(member_id),
        _ => None,
    }
}

/// The error an answer carries (a commit's: its first partition's).
pub fn answer_error(a: &Answer) -> i16 {
    match a {
        Answer::Join { error, .. } | Answer::Sync { error, .. } | Answer::Error { error } => *error,
        Answer::Commit { errors } => errors.first().map(|e| e.1).unwrap_or(NONE),
        _ => NONE,
    }
}
