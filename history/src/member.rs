//! What a member records: the history's own copy of the member's events. `member_id` and
//! `generation` (or `epoch`) are the member's view when the fact happened.

use groupsim_wire::{Millis, TopicPartition};
use serde::{Deserialize, Serialize};

/// One fact from a member.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum MemberEvent {
    /// FindCoordinator answered with this broker.
    CoordinatorFound { node_id: i32 },
    /// The member stopped trusting its coordinator.
    CoordinatorLost { reason: String },
    /// JoinGroup answered: the member is in `generation`.
    Joined { member_id: String, generation: i32, leader: String, protocol: String, is_leader: bool },
    /// The leader computed this generation's assignment.
    AssignmentComputed {
        generation: i32,
        protocol: String,
        assignments: Vec<(String, Vec<TopicPartition>)>,
    },
    /// SyncGroup answered: the member owns these partitions in `generation`.
    Assigned { member_id: String, generation: i32, partitions: Vec<TopicPartition> },
    /// The member gave up partitions cleanly.
    Revoked { member_id: String, generation: i32, partitions: Vec<TopicPartition> },
    /// The member lost partitions without committing.
    Lost { member_id: String, generation: i32, partitions: Vec<TopicPartition>, reason: String },
    /// The starting position of a partition was set (`committed`: what OffsetFetch found).
    PositionInitialized {
        member_id: String,
        generation: i32,
        partition: TopicPartition,
        committed: Option<i64>,
        position: i64,
        /// The member did not learn the committed offset: it applied its reset policy after
        /// this error (a correct client retries the OffsetFetch instead).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reset_after: Option<String>,
    },
    /// The application processed records `first_offset..=last_offset`.
    RecordsProcessed {
        member_id: String,
        generation: i32,
        partition: TopicPartition,
        first_offset: i64,
        last_offset: i64,
    },
    /// OffsetCommit was sent.
    CommitSent { member_id: String, generation: i32, partition: TopicPartition, offset: i64 },
    /// The commit was acknowledged.
    CommitAcked { member_id: String, generation: i32, partition: TopicPartition, offset: i64 },
    /// The commit failed with `error`.
    CommitFailed {
        member_id: String,
        generation: i32,
        partition: TopicPartition,
        offset: i64,
        error: String,
    },
    /// The generation / member id were reset; `answer_about`: the membership the answered
    /// request was sent under, when not the one reset.
    GenerationReset {
        member_id: String,
        generation: i32,
        error: String,
        reset_member_id: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        answer_about: Option<SentUnder>,
    },
    /// A JoinGroup refused with an error the client retries though no retry cures it while the
    /// group stays as it is; `protocols`: the assignors the request offered.
    JoinRefused { error: String, protocols: Vec<String> },
    /// LeaveGroup was answered (or gave up) and the member stopped.
    Left { member_id: String },
    /// A fatal error stopped the member without leaving.
    Fatal { member_id: String, generation: i32, error: String },
    /// KIP-848: a new member epoch (`previous`: 0 when joining).
    MemberEpochChanged { member_id: String, previous: i32, epoch: i32 },
    /// KIP-848: a heartbeat answer carried this target (`unresolved`: unknown topic ids).
    AssignmentReceived {
        member_id: String,
        epoch: i32,
        partitions: Vec<TopicPartition>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        unresolved: Vec<String>,
    },
    /// KIP-848: the member was fenced and rejoins with epoch 0.
    Fenced { member_id: String, epoch: i32, error: String },
    /// KIP-848: a heartbeat failed with `error`.
    HeartbeatFailed { member_id: String, epoch: i32, error: String },
    /// An admin client's describe of the group, answered by broker `node_id` to the request
    /// it sent at `sent_at` (`api`: ConsumerGroupDescribe or DescribeGroups).
    GroupDescribed {
        node_id: i32,
        sent_at: Millis,
        api: String,
        error: Option<String>,
        state: String,
        /// The group epoch (ConsumerGroupDescribe without error).
        epoch: Option<i32>,
        members: Vec<DescribedMember>,
    },
    /// An admin client's ListGroups, answered by broker `node_id` to the request it sent at
    /// `sent_at`.
    GroupsListed { node_id: i32, sent_at: Millis, error: Option<String>, groups: Vec<ListedGroup> },
    /// An admin client's OffsetFetch of every committed offset of the group, answered by
    /// broker `node_id` to the request it sent at `sent_at`: the offsets without error.
    OffsetsFetched {
        node_id: i32,
        sent_at: Millis,
        error: Option<String>,
        offsets: Vec<(TopicPartition, i64)>,
    },
    /// A misbehaving client's request that Kafka refuses in every group state (`case` names
    /// it), sent at `sent_at` and answered by broker `node_id` with `error` (None: accepted).
    InvalidRequestAnswered { node_id: i32, sent_at: Millis, case: String, error: Option<String> },
}

/// The member id and generation a request was sent under.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SentUnder {
    /// The member id the request carried.
    pub member_id: String,
    /// The generation the request carried.
    pub generation: i32,
}

/// One member as a describe answer shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DescribedMember {
    /// Its member id.
    pub member_id: String,
    /// Its static instance id.
    pub instance_id: Option<String>,
    /// Its partitions, sorted (None: not shown, as DescribeGroups outside a Stable group).
    pub partitions: Option<Vec<TopicPartition>>,
    /// Its member epoch (ConsumerGroupDescribe).
    pub epoch: Option<i32>,
}

/// One group of a ListGroups answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListedGroup {
    /// The group id.
    pub group: String,
    /// Its state, in Kafka's words.
    pub state: String,
    /// `classic` or `consumer`.
    pub group_type: String,
}
