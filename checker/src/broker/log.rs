//! The answer log: what the members and the observer of a `check-broker` run asked a broker and
//! what it answered, in the order the answers arrived, with lifecycle marks from the harness.
//! It is all the broker-side rules see. Times are the harness's milliseconds since the run
//! started; `sent_ms` is when the request was written, `answered_ms` when its answer was read.

use groupsim_wire::{Millis, TopicPartition};
use serde::{Deserialize, Serialize};

/// Kafka's error code for success.
pub const NONE: i16 = 0;
/// ILLEGAL_GENERATION.
pub const ILLEGAL_GENERATION: i16 = 22;
/// UNKNOWN_MEMBER_ID.
pub const UNKNOWN_MEMBER_ID: i16 = 25;
/// FENCED_MEMBER_EPOCH.
pub const FENCED_MEMBER_EPOCH: i16 = 110;

/// The group protocol the members of a run spoke.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Protocol {
    /// JoinGroup / SyncGroup / Heartbeat: generations.
    Classic,
    /// KIP-848 ConsumerGroupHeartbeat: member epochs.
    Consumer,
}

/// One entry of the log.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Entry {
    /// A request and the answer to it.
    Exchange(Exchange),
    /// A request whose answer never came (the connection dropped, or the run ended): the
    /// broker may or may not have applied it.
    Unanswered { actor: String, sent_ms: Millis, call: Request },
    /// Something the harness did.
    Mark { at_ms: Millis, mark: Mark },
}

/// What the harness did, as the rules need it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Mark {
    /// A member incarnation started (its actor name, e.g. `m0.1`).
    Started(String),
    /// A member incarnation stopped (crashed, left, or the run ended).
    Stopped(String),
    /// The user's broker-restart command (`--restart-cmd`) was started.
    RestartStarted,
    /// Every fault was lifted: from here the group must converge.
    Heal,
    /// The run ended: the convergence rule judges the group as it stood then.
    End,
}

/// One request and its answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Exchange {
    /// Who asked: a member incarnation (`m0.1`) or the observer (`observer`).
    pub actor: String,
    /// When the request was written.
    pub sent_ms: Millis,
    /// When the answer was read.
    pub answered_ms: Millis,
    /// What was asked.
    pub request: Request,
    /// What the broker said.
    pub answer: Answer,
}

/// The parts of a request the rules read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Request {
    /// JoinGroup, with the `group.instance.id` of a static member.
    Join {
        member_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        instance: Option<String>,
    },
    /// SyncGroup.
    Sync { member_id: String, generation: i32 },
    /// Heartbeat.
    Heartbeat { member_id: String, generation: i32 },
    /// LeaveGroup (one member per request, as the members send it).
    Leave { member_id: String },
    /// ConsumerGroupHeartbeat: the member epoch sent (0 joins, -1 leaves), and the partitions
    /// the member says it owns when it says (`None`: unchanged since its last heartbeat).
    ConsumerHeartbeat { member_id: String, epoch: i32, owned: Option<Vec<TopicPartition>> },
    /// OffsetCommit: the member id and generation (member epoch, in a consumer group) sent.
    Commit { member_id: String, generation: i32, offsets: Vec<(TopicPartition, i64)> },
    /// OffsetFetch.
    OffsetFetch { partitions: Vec<TopicPartition> },
    /// Fetch: the offset asked for per partition.
    Fetch { partitions: Vec<(TopicPartition, i64)> },
}

/// The parts of an answer the rules read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Answer {
    /// JoinGroup: the generation, the member id given, the leader, and the members (listed to
    /// the leader only).
    Join { error: i16, generation: i32, member_id: String, leader: String, members: Vec<String> },
    /// SyncGroup: the member's assignment.
    Sync { error: i16, assignment: Vec<TopicPartition> },
    /// Heartbeat or LeaveGroup: an error code.
    Error { error: i16 },
    /// ConsumerGroupHeartbeat: the member id and epoch given, and the assignment when sent.
    ConsumerHeartbeat {
        error: i16,
        member_id: String,
        epoch: i32,
        assignment: Option<Vec<TopicPartition>>,
    },
    /// OffsetCommit: an error code per partition.
    Commit { errors: Vec<(TopicPartition, i16)> },
    /// OffsetFetch: the committed offset per partition (-1: none) and its error.
    OffsetFetch { offsets: Vec<(TopicPartition, i64, i16)> },
    /// Fetch: per partition, its error and the offsets of the records returned, in order.
    Fetch { partitions: Vec<(TopicPartition, i16, Vec<i64>)> },
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
}

impl AnswerLog {
    /// An empty log.
    pub fn new(protocol: Protocol, partitions: Vec<TopicPartition>) -> Self {
        Self { protocol, partitions, entries: Vec::new() }
    }

    /// The exchanges, with their index in [`Self::entries`].
    pub fn exchanges(&self) -> impl Iterator<Item = (usize, &Exchange)> + '_ {
        self.entries.iter().enumerate().filter_map(|(i, e)| match e {
            Entry::Exchange(x) => Some((i, x)),
            _ => None,
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
            Some(Entry::Exchange(x)) => format!(
                "#{index} {} sent {:?} at {} ms, answered {:?} at {} ms",
                x.actor, x.request, x.sent_ms, x.answer, x.answered_ms
            ),
            Some(Entry::Unanswered { actor, sent_ms, call }) => {
                format!("#{index} {actor} sent {call:?} at {sent_ms} ms, never answered")
            }
            Some(Entry::Mark { at_ms, mark }) => format!("#{index} {mark:?} at {at_ms} ms"),
            None => format!("#{index} (no such entry)"),
        }
    }
}
