//! The classic group: its members and the rebalance state machine.
//!
//! A [`Group`] follows Kafka's classic protocol: members join (PreparingRebalance), the join
//! phase completes into a new generation (CompletingRebalance), the leader's SyncGroup stores the
//! assignment (Stable), and any membership change starts the next rebalance. The API handlers in
//! [`crate::api`] validate requests and call the operations here; every operation takes `now` and
//! queues its answers (in domain form, see `answers.rs`), history events and timers in
//! `Effects` (`effects.rs`).
//!
//! This file holds the group's data and its read-only view; each concern of the state machine
//! is a file of its own:
//! - `member.rs`: one member and its parked requests;
//! - `protocols.rs`: protocol support and Kafka's protocol vote;
//! - `membership.rs`: adding and removing members, pending (MEMBER_ID_REQUIRED) members;
//! - `static_membership.rs`: `group.instance.id` lookups, fencing and takeover;
//! - `join.rs`: the join phase (prepare, extend, complete a rebalance);
//! - `sync.rs`: the leader's assignment and the wait for every member's SyncGroup;
//! - `session.rs`: session deadlines and what happens when one passes;
//! - `transitions.rs`: state changes and unloading;
//! - `snapshot.rs`: the stored form of a group and loading it back;
//! - `conversion.rs`: handing the members over to a consumer group and being rebuilt from one
//!   (online migration between the protocols).

use std::collections::{BTreeMap, BTreeSet};

use indexmap::IndexMap;

use crate::Millis;

mod conversion;
mod join;
mod member;
mod membership;
mod protocols;
mod session;
mod snapshot;
mod static_membership;
mod sync;
mod transitions;

pub use member::{Member, MemberProtocol};
// The group's states live in a leaf module; this path stays for code that imports them here.
pub use crate::state::GroupState;

/// The join phase's timer: Kafka's DelayedJoin, or InitialDelayedJoin for a group that was
/// Empty (which waits `group.initial.rebalance.delay.ms` more each time new members keep
/// arriving, until the rebalance timeout is used up).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct JoinTimer {
    pub deadline: Millis,
    /// `Some(remaining)` for the initial delayed join.
    pub initial_remaining_ms: Option<u64>,
}

/// A classic group with its members and rebalance bookkeeping (Kafka's GroupMetadata).
#[derive(Clone, Debug)]
pub struct Group {
    pub(crate) group_id: String,
    pub(crate) state: GroupState,
    pub(crate) generation_id: i32,
    pub(crate) protocol_type: Option<String>,
    pub(crate) protocol_name: Option<String>,
    pub(crate) leader_id: Option<String>,
    /// Members in the order they joined; the order decides leader succession.
    pub(crate) members: IndexMap<String, Member>,
    /// Dynamic members told MEMBER_ID_REQUIRED, with the instant they expire.
    pub(crate) pending_members: BTreeMap<String, Millis>,
    /// `group.instance.id` -> member id of static members.
    pub(crate) static_members: BTreeMap<String, String>,
    /// Members of the current generation that have not sent SyncGroup yet.
    pub(crate) pending_sync: BTreeSet<String>,
    /// How many members support each protocol name.
    protocol_support: BTreeMap<String, usize>,
    /// A new member joined during the initial delayed join (it may be extended).
    pub(crate) new_member_added: bool,
    pub(crate) join_timer: Option<JoinTimer>,
    pub(crate) sync_deadline: Option<Millis>,
}

/// The group's state and membership as seen from outside (tests, drivers, DescribeGroups).
impl Group {
    /// A new group: Empty, generation 0.
    pub fn new(group_id: impl Into<String>) -> Self {
        Group {
            group_id: group_id.into(),
            state: GroupState::Empty,
            generation_id: 0,
            protocol_type: None,
            protocol_name: None,
            leader_id: None,
            members: IndexMap::new(),
            pending_members: BTreeMap::new(),
            static_members: BTreeMap::new(),
            pending_sync: BTreeSet::new(),
            protocol_support: BTreeMap::new(),
            new_member_added: false,
            join_timer: None,
            sync_deadline: None,
        }
    }

    /// The group id.
    pub fn group_id(&self) -> &str {
        &self.group_id
    }
    /// Current state.
    pub fn state(&self) -> GroupState {
        self.state
    }
    /// Current generation id.
    pub fn generation_id(&self) -> i32 {
        self.generation_id
    }
    /// Protocol type of the members (`consumer`).
    pub fn protocol_type(&self) -> Option<&str> {
        self.protocol_type.as_deref()
    }
    /// Protocol chosen for the current generation.
    pub fn protocol_name(&self) -> Option<&str> {
        self.protocol_name.as_deref()
    }
    /// Current leader.
    pub fn leader_id(&self) -> Option<&str> {
        self.leader_id.as_deref()
    }
    /// Members in join order.
    pub fn members(&self) -> impl Iterator<Item = &Member> {
        self.members.values()
    }
    /// One member.
    pub fn member(&self, member_id: &str) -> Option<&Member> {
        self.members.get(member_id)
    }
    /// Whether `member_id` is a member.
    pub fn has(&self, member_id: &str) -> bool {
        self.members.contains_key(member_id)
    }
    /// Pending member ids (told MEMBER_ID_REQUIRED, not yet rejoined).
    pub fn pending_members(&self) -> impl Iterator<Item = &str> {
        self.pending_members.keys().map(String::as_str)
    }
    /// Whether `member_id` is the leader.
    pub fn is_leader(&self, member_id: &str) -> bool {
        self.leader_id.as_deref() == Some(member_id)
    }

    /// Largest rebalance timeout of the members: how long the join phase (and the wait for
    /// SyncGroup) may last.
    pub fn rebalance_timeout_ms(&self) -> u64 {
        self.members.values().map(|m| m.rebalance_timeout_ms.max(0) as u64).max().unwrap_or(0)
    }

    /// Every member has a parked JoinGroup and no pending member is still expected.
    pub fn has_all_members_joined(&self) -> bool {
        self.pending_members.is_empty() && self.members.values().all(|m| m.awaiting_join.is_some())
    }
}
