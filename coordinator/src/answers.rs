//! What the coordinator answers, before it is put in a Kafka API's layout.
//!
//! A leaf module: the group state machine answers JoinGroup and SyncGroup requests long after
//! they arrived (when the join phase completes, the leader's assignment is stored, a member is
//! removed or fenced, the group is unloaded), and the coordinator answers OffsetCommit when its
//! append completes. They queue these domain answers; the API modules (`api/`) encode each in
//! its API's layout for the request's version when the output is drained, so the group never
//! depends on the wire layouts.

use bytes::Bytes;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::{ResponseKind, TopicName};

use crate::RequestId;

/// A request the coordinator holds until the rebalance reaches the right phase (Kafka's
/// "awaiting callback").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Parked {
    pub id: RequestId,
    pub version: i16,
}

/// What a JoinGroup answer carries (Kafka's JoinGroupResult).
#[derive(Clone, Debug, Default)]
pub(crate) struct JoinResult {
    pub error: i16,
    pub member_id: String,
    pub generation_id: i32,
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    pub leader: String,
    /// Only the leader gets the members with their metadata.
    pub members: Vec<JoinedMember>,
    /// KIP-814 (JoinGroup v9+): the leader is told the group keeps its assignment, so it
    /// sends an empty SyncGroup and only watches the members' metadata.
    pub skip_assignment: bool,
}

/// One member as the leader sees it in its JoinGroup answer.
#[derive(Clone, Debug)]
pub(crate) struct JoinedMember {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub metadata: Bytes,
}

impl JoinResult {
    /// A failed join: no generation, no protocol, no leader.
    pub fn error(member_id: &str, error: ResponseError) -> Self {
        JoinResult {
            error: error.code(),
            member_id: member_id.to_string(),
            generation_id: -1,
            ..Default::default()
        }
    }
}

/// What a SyncGroup answer carries: the member's assignment, and the group's protocol (sent
/// only on success, from v5).
#[derive(Clone, Debug, Default)]
pub(crate) struct SyncResult {
    pub error: i16,
    pub assignment: Bytes,
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
}

impl SyncResult {
    /// A failed sync: no assignment, no protocol.
    pub fn error(error: ResponseError) -> Self {
        SyncResult { error: error.code(), ..Default::default() }
    }
}

/// One topic of an OffsetCommit answer: each partition's index and error code.
pub(crate) type CommitTopicResult = (TopicName, Vec<(i32, i16)>);

/// An answer to one request, as queued.
#[derive(Clone, Debug)]
pub(crate) enum Answer {
    /// Already in its API's layout.
    Encoded(ResponseKind),
    /// A JoinGroup of wire version `version`.
    Join { version: i16, result: JoinResult },
    /// A SyncGroup of wire version `version`.
    Sync { version: i16, result: SyncResult },
    /// An OffsetCommit, per topic in request order.
    Commit { topics: Vec<CommitTopicResult> },
}
