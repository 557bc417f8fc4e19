//! The wire stream of a history: every request a client of the run wrote to a broker and the
//! answer it read, or that none came, as the client saw them. It is recorded beside the events
//! (never among them: the events' hash does not change when the stream does) by the one
//! connection layer every world drives, and read by the protocol rules, which judge a
//! coordinator by what it answered rather than by what it left behind.
//!
//! Only the parts of requests and answers the rules read are kept, in the history's own types:
//! no core's and no codec's type reaches this crate.

use groupsim_wire::{Millis, TopicPartition};
use serde::{Deserialize, Serialize};

/// One entry of an answer log: an exchange, a request never answered, or a mark of the
/// harness's.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Entry {
    /// A request and the answer to it.
    Exchange(Exchange),
    /// A request whose answer never came (the connection dropped, or the run ended): the
    /// broker may or may not have applied it.
    Unanswered {
        actor: String,
        sent_ms: Millis,
        call: Request,
        /// The group the request named (empty: an API without one, such as Fetch).
        #[serde(default, skip_serializing_if = "String::is_empty")]
        group: String,
    },
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
    /// The harness asked a member incarnation to close cleanly (leave the group).
    Leaving(String),
    /// A member incarnation was killed: crashed by a fault, or at the harness's close deadline.
    Killed(String),
    /// The harness had the coordinator expire a member incarnation's session (a fault): the
    /// coordinator may fence it however lately it heartbeated.
    Expelled(String),
    /// The harness held or delayed a broker's answers (a held answer, a slow or unresponsive
    /// broker): a request written since may not have been read, so its absence from the stream
    /// proves nothing.
    AnswersHeld,
    /// The user's broker-restart command (`--restart-cmd`) was started.
    RestartStarted,
    /// The harness crashed or restarted a broker, or moved a group's coordinator: a group may
    /// be loaded afresh from what was written.
    CoordinatorMoved,
    /// Every fault was lifted: from here the group must converge.
    Heal,
    /// The run ended: the convergence rule judges the group as it stood then.
    End,
    /// The most members the coordinators let into a group, as configured for the whole run
    /// (`group.max.size` for classic groups, `group.consumer.max.size` for consumer groups;
    /// `i32::MAX`: no limit).
    GroupMaxSize { classic: i32, consumer: i32 },
}

/// One request and its answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Exchange {
    /// Who asked: a member incarnation (`m0.1`: member `m0`'s second start) or an admin client.
    pub actor: String,
    /// When the request was written.
    pub sent_ms: Millis,
    /// When the answer was read.
    pub answered_ms: Millis,
    /// What was asked.
    pub request: Request,
    /// What the broker said.
    pub answer: Answer,
    /// The group the request named (empty: an API without one, such as Fetch).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub group: String,
    /// The broker node that answered, when the recorder knows it: a coordinator change shows
    /// as another node answering the group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<i32>,
    /// The actor's connection the request was written on, when the recorder knows it (an actor
    /// never reuses a number). A broker reads a connection's next request only once it has
    /// answered the last, so an exchange answered earlier on the same connection was decided
    /// before a later one was read, however late its answer was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conn: Option<u64>,
}

/// The parts of a request the rules read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Request {
    /// JoinGroup, with the `group.instance.id` of a static member, the session timeout asked
    /// for and the request's version (both absent in histories recorded before they were kept).
    Join {
        member_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        instance: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        session_timeout_ms: Option<i32>,
        /// The rebalance timeout asked for (the session timeout at v0, as Kafka takes it).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        rebalance_timeout_ms: Option<i32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        version: Option<i16>,
    },
    /// SyncGroup, with the `group.instance.id` of a static member (KIP-345: a fenced instance
    /// is answered FENCED_INSTANCE_ID, not UNKNOWN_MEMBER_ID).
    Sync {
        member_id: String,
        generation: i32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        instance: Option<String>,
    },
    /// Heartbeat, with the `group.instance.id` of a static member.
    Heartbeat {
        member_id: String,
        generation: i32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        instance: Option<String>,
    },
    /// LeaveGroup (one member per request, as the members send it), with its instance id.
    Leave {
        member_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        instance: Option<String>,
    },
    /// ConsumerGroupHeartbeat: the member epoch sent (0 joins, -1 leaves), the partitions the
    /// member says it owns when it says (`None`: unchanged since its last heartbeat), and a
    /// static member's instance id when the request carries it (its join).
    ConsumerHeartbeat {
        member_id: String,
        epoch: i32,
        owned: Option<Vec<TopicPartition>>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        instance: Option<String>,
    },
    /// OffsetCommit: the member id and generation (member epoch, in a consumer group) sent,
    /// with the instance id of a static member (v7+).
    Commit {
        member_id: String,
        generation: i32,
        offsets: Vec<(TopicPartition, i64)>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        instance: Option<String>,
    },
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
    /// ConsumerGroupHeartbeat: the member id and epoch given, the assignment when sent, and the
    /// heartbeat interval asked for when one is (Kafka keeps it below the session timeout).
    ConsumerHeartbeat {
        error: i16,
        member_id: String,
        epoch: i32,
        assignment: Option<Vec<TopicPartition>>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        interval_ms: Option<i32>,
    },
    /// OffsetCommit: an error code per partition.
    Commit { errors: Vec<(TopicPartition, i16)> },
    /// OffsetFetch: the committed offset per partition (-1: none) and its error.
    OffsetFetch { offsets: Vec<(TopicPartition, i64, i16)> },
    /// Fetch: per partition, its error and the offsets of the records returned, in order.
    Fetch { partitions: Vec<(TopicPartition, i16, Vec<i64>)> },
}

impl Request {
    /// The Kafka API the request belongs to.
    pub fn api(&self) -> &'static str {
        match self {
            Request::Join { .. } => "JoinGroup",
            Request::Sync { .. } => "SyncGroup",
            Request::Heartbeat { .. } => "Heartbeat",
            Request::Leave { .. } => "LeaveGroup",
            Request::ConsumerHeartbeat { .. } => "ConsumerGroupHeartbeat",
            Request::Commit { .. } => "OffsetCommit",
            Request::OffsetFetch { .. } => "OffsetFetch",
            Request::Fetch { .. } => "Fetch",
        }
    }
}

impl Answer {
    /// The answer's error code: its own, or for the APIs answered per partition, its first
    /// partition's (0 when it lists none).
    pub fn error(&self) -> i16 {
        match self {
            Answer::Join { error, .. }
            | Answer::Sync { error, .. }
            | Answer::Error { error }
            | Answer::ConsumerHeartbeat { error, .. } => *error,
            Answer::Commit { errors } => errors.first().map_or(0, |e| e.1),
            Answer::OffsetFetch { offsets } => offsets.first().map_or(0, |e| e.2),
            Answer::Fetch { partitions } => partitions.first().map_or(0, |p| p.1),
        }
    }
}

/// One entry of a history's wire stream, with its place among the events: it happened after
/// the first `after` events and before the rest.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireRecord {
    /// How many events the history held when this was recorded.
    pub after: usize,
    /// The exchange, or the request never answered.
    pub wire: Entry,
}
