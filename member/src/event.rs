//! Events a member reports as they become true: the client half of a run's history.

use crate::{Millis, TopicPartition};

/// One ground-truth fact from a member. The driver stamps it with the simulated time and the
/// member's name. `member_id` and `generation` are the member's view when the fact happened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MemberEvent {
    /// FindCoordinator answered with this broker.
    CoordinatorFound { node_id: i32 },
    /// The member stopped trusting its coordinator (error, timeout or disconnect).
    CoordinatorLost { reason: String },
    /// JoinGroup answered successfully: the member is in `generation`.
    Joined { member_id: String, generation: i32, leader: String, protocol: String, is_leader: bool },
    /// The leader computed this generation's assignment.
    AssignmentComputed {
        generation: i32,
        protocol: String,
        assignments: Vec<(String, Vec<TopicPartition>)>,
    },
    /// SyncGroup answered: the member owns these partitions in `generation`.
    Assigned { member_id: String, generation: i32, partitions: Vec<TopicPartition> },
    /// The member gave up its partitions cleanly (after trying to commit what it processed).
    Revoked { member_id: String, generation: i32, partitions: Vec<TopicPartition> },
    /// The member lost its partitions without committing (generation or member id reset).
    Lost { member_id: String, generation: i32, partitions: Vec<TopicPartition>, reason: String },
    /// OffsetFetch (and ListOffsets for partitions with no commit) set the starting position.
    PositionInitialized {
        member_id: String,
        generation: i32,
        partition: TopicPartition,
        committed: Option<i64>,
        position: i64,
        /// Set when the member applied its reset policy after this OffsetFetch error instead of
        /// learning the committed offset (bug `resets_position_on_offset_fetch_failure`).
        reset_after: Option<String>,
    },
    /// The application finished processing records `first_offset..=last_offset`.
    RecordsProcessed {
        member_id: String,
        generation: i32,
        partition: TopicPartition,
        first_offset: i64,
        last_offset: i64,
    },
    /// OffsetCommit was sent for this partition.
    CommitSent { member_id: String, generation: i32, partition: TopicPartition, offset: i64 },
    /// The coordinator acknowledged the commit.
    CommitAcked { member_id: String, generation: i32, partition: TopicPartition, offset: i64 },
    /// The commit failed (`error` is Kafka's error name, or TIMEOUT / DISCONNECTED).
    CommitFailed {
        member_id: String,
        generation: i32,
        partition: TopicPartition,
        offset: i64,
        error: String,
    },
    /// The member's generation / member id were reset after an error.
    GenerationReset {
        member_id: String,
        generation: i32,
        error: String,
        reset_member_id: bool,
        /// The membership the answered request was sent under, when it is not the one being
        /// reset (the answer was about an earlier generation or member id; KAFKA-9823). Absent
        /// when they are the same, or when no answer caused the reset.
        answer_about: Option<SentUnder>,
    },
    /// A JoinGroup was refused with an error the client retries after a backoff though no retry
    /// cures it while the group stays as it is (INCONSISTENT_GROUP_PROTOCOL,
    /// GROUP_MAX_SIZE_REACHED); `protocols`: the assignors the request offered.
    JoinRefused { error: String, protocols: Vec<String> },
    /// LeaveGroup was answered (or gave up) and the member stopped.
    Left { member_id: String },
    /// A fatal error (FENCED_INSTANCE_ID): the member stopped without leaving the group.
    Fatal { member_id: String, generation: i32, error: String },
    /// Consumer protocol (KIP-848): the coordinator gave the member a new member epoch
    /// (`previous` is the epoch it held: 0 when joining).
    MemberEpochChanged { member_id: String, previous: i32, epoch: i32 },
    /// Consumer protocol: a ConsumerGroupHeartbeat answer carried a target assignment, resolved
    /// to topic names through Metadata topic ids (`unresolved`: topic ids not known yet).
    AssignmentReceived {
        member_id: String,
        epoch: i32,
        partitions: Vec<TopicPartition>,
        unresolved: Vec<String>,
    },
    /// Consumer protocol: the coordinator fenced the member (FENCED_MEMBER_EPOCH or
    /// UNKNOWN_MEMBER_ID); it releases its partitions as lost and rejoins with epoch 0.
    Fenced { member_id: String, epoch: i32, error: String },
    /// Consumer protocol: a ConsumerGroupHeartbeat was answered with an error (or got none).
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

/// One member as a describe answer shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
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
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListedGroup {
    /// The group id.
    pub group: String,
    /// Its state, in Kafka's words.
    pub state: String,
    /// `classic` or `consumer`.
    pub group_type: String,
}

/// The member id and generation a request was sent under.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SentUnder {
    /// The member id the request carried.
    pub member_id: String,
    /// The generation the request carried.
    pub generation: i32,
}
