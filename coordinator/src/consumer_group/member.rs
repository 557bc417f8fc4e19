//! One member of a consumer group (Kafka's ConsumerGroupMember): who it is, what it subscribes
//! to, its member epoch and where it stands in reconciling towards its target assignment.

use std::collections::BTreeSet;

use bytes::Bytes;

use super::topic_regex::matching_topics;
use crate::topics::TopicsImage;
use crate::{Millis, TopicPartition};

/// Member epoch a member sends to leave the group for good.
pub const LEAVE_GROUP_MEMBER_EPOCH: i32 = -1;
/// Member epoch a static member sends to leave temporarily (it keeps its instance id and
/// assignment until its session ends or a new member id takes the instance id over).
pub const LEAVE_GROUP_STATIC_MEMBER_EPOCH: i32 = -2;

/// Where a member stands in reconciling its assignment (Kafka's MemberState).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum MemberState {
    /// Its assignment is its target at its epoch (or it waits for a newer target).
    Stable,
    /// It must revoke partitions before it may move to the target epoch.
    UnrevokedPartitions,
    /// It is at the target epoch but some target partitions are still owned by others.
    UnreleasedPartitions,
}

impl MemberState {
    /// Kafka's name for the state.
    pub fn kafka_name(self) -> &'static str {
        match self {
            MemberState::Stable => "STABLE",
            MemberState::UnrevokedPartitions => "UNREVOKED_PARTITIONS",
            MemberState::UnreleasedPartitions => "UNRELEASED_PARTITIONS",
        }
    }
}

/// One protocol (assignor) a classic member offered, with its subscription metadata (the
/// classic group's MemberProtocol, kept apart so this leaf imports nothing of the classic group).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClassicProtocol {
    /// Protocol name, e.g. `range`.
    pub name: String,
    /// The version-prefixed consumer-protocol subscription sent with it.
    pub metadata: Bytes,
}

/// What a member using the classic protocol inside a consumer group sent in its last JoinGroup
/// (Kafka's ClassicMemberMetadata): its session timeout, and its protocols with their metadata,
/// which a downgrade hands back to the classic group and SyncGroup answers are encoded for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClassicMemberMetadata {
    /// Session timeout of its JoinGroup.
    pub session_timeout_ms: i32,
    /// Protocols (assignor names and subscriptions) in preference order.
    pub protocols: Vec<ClassicProtocol>,
}

/// A consumer group member.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConsumerMember {
    /// Member id (chosen by the client from v1).
    pub member_id: String,
    /// `group.instance.id` of a static member.
    pub instance_id: Option<String>,
    /// Rack id.
    pub rack_id: Option<String>,
    /// Client id from the request header.
    pub client_id: String,
    /// Client host.
    pub client_host: String,
    /// How long it may take to revoke partitions.
    pub rebalance_timeout_ms: i32,
    /// Subscribed topic names.
    pub subscribed_topics: BTreeSet<String>,
    /// Subscribed topic regex (`SubscribedTopicRegex`), if any: the topics whose whole name
    /// matches are subscribed too (see `topic_regex.rs`).
    pub subscribed_topic_regex: Option<String>,
    /// The server assignor it asked for, if any.
    pub server_assignor: Option<String>,
    /// Its member epoch.
    pub member_epoch: i32,
    /// Its epoch before the last change (a heartbeat at this epoch is still accepted, since the
    /// answer that moved it on may have been lost).
    pub previous_member_epoch: i32,
    /// Reconciliation state.
    pub state: MemberState,
    /// Partitions it owns and keeps.
    pub assigned: BTreeSet<TopicPartition>,
    /// Partitions it owns and must revoke.
    pub pending_revocation: BTreeSet<TopicPartition>,
    /// Set for a member that speaks the classic protocol (JoinGroup/SyncGroup/Heartbeat) inside
    /// the consumer group: a member of an upgraded classic group, or a classic member that joined.
    pub classic: Option<ClassicMemberMetadata>,
    /// Session deadline (timer slot).
    pub(crate) session_deadline: Option<Millis>,
    /// Rebalance deadline (timer slot) and the epoch it was armed at.
    pub(crate) rebalance_deadline: Option<Millis>,
    pub(crate) rebalance_epoch: i32,
    /// A classic member's join deadline (timer slot): it was told to rejoin and must do so
    /// within its rebalance timeout.
    pub(crate) join_deadline: Option<Millis>,
    /// A classic member's sync deadline (timer slot): it joined and must send SyncGroup within
    /// its rebalance timeout.
    pub(crate) sync_deadline: Option<Millis>,
}

impl ConsumerMember {
    /// A new member at epoch 0 with nothing assigned.
    pub fn new(member_id: impl Into<String>) -> Self {
        Self {
            member_id: member_id.into(),
            instance_id: None,
            rack_id: None,
            client_id: String::new(),
            client_host: String::new(),
            rebalance_timeout_ms: -1,
            subscribed_topics: BTreeSet::new(),
            subscribed_topic_regex: None,
            server_assignor: None,
            member_epoch: 0,
            previous_member_epoch: 0,
            state: MemberState::Stable,
            assigned: BTreeSet::new(),
            pending_revocation: BTreeSet::new(),
            classic: None,
            session_deadline: None,
            rebalance_deadline: None,
            rebalance_epoch: 0,
            join_deadline: None,
            sync_deadline: None,
        }
    }

    /// Whether it speaks the classic protocol (Kafka's useClassicProtocol).
    pub fn uses_classic_protocol(&self) -> bool {
        self.classic.is_some()
    }

    /// The session timeout a classic member asked for (0 for a consumer-protocol member).
    pub fn classic_session_timeout(&self) -> i32 {
        self.classic.as_ref().map_or(0, |c| c.session_timeout_ms)
    }

    /// The member without its timer slots: what is stored and compared across coordinators.
    pub(crate) fn without_timers(&self) -> ConsumerMember {
        ConsumerMember {
            session_deadline: None,
            rebalance_deadline: None,
            join_deadline: None,
            sync_deadline: None,
            ..self.clone()
        }
    }

    /// Every topic it subscribes to in `topics`: its topic names and the topics its regex
    /// matches.
    pub fn subscription(&self, topics: &TopicsImage) -> BTreeSet<String> {
        let mut all = self.subscribed_topics.clone();
        if let Some(regex) = &self.subscribed_topic_regex {
            all.extend(matching_topics(regex, topics));
        }
        all
    }

    /// Whether it is fully reconciled to the target assignment of `epoch`.
    pub fn is_reconciled_to(&self, epoch: i32) -> bool {
        self.state == MemberState::Stable && self.member_epoch == epoch
    }

    /// Every partition it owns: assigned and pending revocation.
    pub fn owned(&self) -> BTreeSet<TopicPartition> {
        self.assigned.union(&self.pending_revocation).cloned().collect()
    }

    /// Kafka's updateMemberEpoch: moves it to `epoch` and remembers the epoch it had, even when
    /// the two are equal (so a member that stays at its epoch through two steps of
    /// reconciliation no longer has an older epoch accepted).
    pub(crate) fn update_epoch(&mut self, epoch: i32) {
        self.previous_member_epoch = self.member_epoch;
        self.member_epoch = epoch;
    }
}
