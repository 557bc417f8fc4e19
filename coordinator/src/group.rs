//! The classic group: its states, its members, and the rebalance state machine.
//!
//! A [`Group`] follows Kafka's classic protocol: members join (PreparingRebalance), the join
//! phase completes into a new generation (CompletingRebalance), the leader's SyncGroup stores the
//! assignment (Stable), and any membership change starts the next rebalance. The API handlers in
//! [`crate::api`] validate requests and call the operations here; every operation takes `now` and
//! queues its responses, history events and timers in [`Effects`].

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;
use indexmap::IndexMap;
use kafka_protocol::error::ResponseError;
use serde::{Deserialize, Serialize};

use crate::coordinator::{Effects, TimerKey};
use crate::event::MemberAssignment;
use crate::offsets_log::{GroupMetadataValue, MemberMetadataValue};
use crate::{CoordinatorConfig, CoordinatorEvent, Millis, RemovalReason, RequestId};

/// Kafka's classic group states.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum GroupState {
    /// No members; offsets may still be stored.
    Empty,
    /// Collecting JoinGroup requests for the next generation.
    PreparingRebalance,
    /// Join phase done; waiting for the leader's SyncGroup.
    CompletingRebalance,
    /// Every member has its assignment; heartbeats keep sessions alive.
    Stable,
    /// The group was removed (e.g. its coordinator moved away).
    Dead,
}

impl GroupState {
    /// Kafka's name for the state, as DescribeGroups reports it.
    pub fn kafka_name(self) -> &'static str {
        match self {
            GroupState::Empty => "Empty",
            GroupState::PreparingRebalance => "PreparingRebalance",
            GroupState::CompletingRebalance => "CompletingRebalance",
            GroupState::Stable => "Stable",
            GroupState::Dead => "Dead",
        }
    }

    /// Whether Kafka allows a group in `self` to move to `to` (GroupMetadata's
    /// `validPreviousStates`): Empty and Stable and CompletingRebalance may start a rebalance,
    /// only a completed join phase leads to CompletingRebalance (or Empty when nobody is left),
    /// only the leader's sync leads to Stable, and any state may die.
    pub fn can_transition_to(self, to: GroupState) -> bool {
        use GroupState::*;
        match to {
            Dead => true,
            PreparingRebalance => matches!(self, Stable | CompletingRebalance | Empty),
            CompletingRebalance => self == PreparingRebalance,
            Stable => self == CompletingRebalance,
            Empty => self == PreparingRebalance,
        }
    }
}

/// A request the coordinator holds until the rebalance reaches the right phase (Kafka's
/// "awaiting callback").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Parked {
    pub id: RequestId,
    pub version: i16,
}

/// One protocol (assignor) a member supports, with its subscription metadata.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemberProtocol {
    /// Protocol name, e.g. `range` or `cooperative-sticky`.
    pub name: String,
    /// Opaque metadata (for consumers: the version-prefixed subscription).
    pub metadata: Bytes,
}

/// A member of a classic group (Kafka's MemberMetadata).
#[derive(Clone, Debug)]
pub struct Member {
    /// Member id the coordinator handed out.
    pub member_id: String,
    /// `group.instance.id` of a static member.
    pub group_instance_id: Option<String>,
    /// Client id from the request header.
    pub client_id: String,
    /// Client host, as DescribeGroups reports it.
    pub client_host: String,
    /// How long the join phase may wait for this member to rejoin.
    pub rebalance_timeout_ms: i32,
    /// How long the member may go without a heartbeat.
    pub session_timeout_ms: i32,
    /// Protocol type, `consumer` for consumers.
    pub protocol_type: String,
    /// Supported protocols in preference order.
    pub protocols: Vec<MemberProtocol>,
    /// The member's assignment in the current generation (empty until the leader syncs).
    pub assignment: Bytes,
    pub(crate) awaiting_join: Option<Parked>,
    pub(crate) awaiting_sync: Option<Parked>,
    /// Added in the current join phase and not yet answered: session timeout does not apply,
    /// the new-member join timeout does.
    pub(crate) is_new: bool,
    /// When the member was added (a new member must be answered within the new-member join
    /// timeout of this instant).
    pub(crate) joined_at: Millis,
    pub(crate) session_deadline: Option<Millis>,
}

impl Member {
    /// Whether a JoinGroup of this member is parked until the join phase completes.
    pub fn is_awaiting_join(&self) -> bool {
        self.awaiting_join.is_some()
    }

    /// Whether a SyncGroup of this member is parked until the leader's assignment arrives.
    pub fn is_awaiting_sync(&self) -> bool {
        self.awaiting_sync.is_some()
    }

    /// Same protocols with the same metadata in the same order: a rejoin with unchanged
    /// metadata need not start a rebalance.
    pub fn matches(&self, protocols: &[MemberProtocol]) -> bool {
        self.protocols == protocols
    }

    /// The metadata this member sent for `protocol`.
    pub fn metadata(&self, protocol: &str) -> Bytes {
        self.protocols
            .iter()
            .find(|p| p.name == protocol)
            .map(|p| p.metadata.clone())
            .unwrap_or_default()
    }

    fn protocol_names(&self) -> BTreeSet<String> {
        self.protocols.iter().map(|p| p.name.clone()).collect()
    }

    /// The member's vote: its most preferred protocol among the candidates.
    fn vote<'a>(&'a self, candidates: &BTreeSet<&str>) -> Option<&'a str> {
        self.protocols.iter().map(|p| p.name.as_str()).find(|n| candidates.contains(n))
    }
}

/// The join phase's timer: Kafka's DelayedJoin, or InitialDelayedJoin for a group that was
/// Empty (which waits `group.initial.rebalance.delay.ms` more each time new members keep
/// arriving, until the rebalance timeout is used up).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct JoinTimer {
    pub deadline: Millis,
    /// `Some(remaining)` for the initial delayed join.
    pub initial_remaining_ms: Option<u64>,
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
    /// Members of this generation that have not sent SyncGroup yet.
    pub fn pending_sync_members(&self) -> impl Iterator<Item = &str> {
        self.pending_sync.iter().map(String::as_str)
    }
    /// Whether `member_id` is the leader.
    pub fn is_leader(&self, member_id: &str) -> bool {
        self.leader_id.as_deref() == Some(member_id)
    }
    /// Member id currently holding a static `group.instance.id`.
    pub fn static_member(&self, group_instance_id: &str) -> Option<&str> {
        self.static_members.get(group_instance_id).map(String::as_str)
    }

    /// The member id is stale for this instance id: another member id took the instance over.
    pub fn is_static_member_fenced(
        &self,
        member_id: &str,
        group_instance_id: Option<&str>,
    ) -> bool {
        match group_instance_id.and_then(|i| self.static_members.get(i)) {
            Some(current) => current != member_id,
            None => false,
        }
    }

    /// Largest rebalance timeout of the members: how long the join phase (and the wait for
    /// SyncGroup) may last.
    pub fn rebalance_timeout_ms(&self) -> u64 {
        self.members.values().map(|m| m.rebalance_timeout_ms.max(0) as u64).max().unwrap_or(0)
    }

    /// Kafka's `supportsProtocols`: an Empty group accepts any non-empty protocol type and list;
    /// otherwise the type must match and at least one protocol must be supported by everyone.
    pub fn supports_protocols(&self, protocol_type: &str, protocols: &BTreeSet<String>) -> bool {
        if self.state == GroupState::Empty {
            !protocol_type.is_empty() && !protocols.is_empty()
        } else {
            self.protocol_type.as_deref() == Some(protocol_type)
                && protocols.iter().any(|p| self.support_count(p) == self.members.len())
        }
    }

    fn support_count(&self, protocol: &str) -> usize {
        self.protocol_support.get(protocol).copied().unwrap_or(0)
    }

    /// Protocols every member supports.
    pub fn candidate_protocols(&self) -> BTreeSet<&str> {
        let n = self.members.len();
        self.protocol_support.iter().filter(|(_, c)| **c == n).map(|(p, _)| p.as_str()).collect()
    }

    /// Kafka's `selectProtocol`: among the protocols all members support, each member votes for
    /// its most preferred one and the most votes win. Ties go to the protocol whose first vote
    /// came from the earliest-joined member (Kafka leaves ties to hash order).
    pub fn select_protocol(&self) -> Option<String> {
        let candidates = self.candidate_protocols();
        let mut votes: IndexMap<&str, usize> = IndexMap::new();
        for m in self.members.values() {
            if let Some(v) = m.vote(&candidates) {
                *votes.entry(v).or_default() += 1;
            }
        }
        let mut best: Option<(&str, usize)> = None;
        for (p, c) in votes {
            if best.is_none_or(|(_, bc)| c > bc) {
                best = Some((p, c));
            }
        }
        best.map(|(p, _)| p.to_string())
    }

    /// Every member has a parked JoinGroup and no pending member is still expected.
    pub fn has_all_members_joined(&self) -> bool {
        self.pending_members.is_empty() && self.members.values().all(|m| m.awaiting_join.is_some())
    }

    // ---- persistence ----------------------------------------------------------------------

    /// The group's metadata as Kafka stores it (GroupMetadataManager.groupMetadataValue): the
    /// generation, protocol, leader and every member with the subscription it sent for the
    /// chosen protocol and its assignment (`assignment` overrides the members' current ones, for
    /// the leader's SyncGroup whose assignment is stored before it takes effect).
    pub fn snapshot(
        &self,
        assignment: Option<&BTreeMap<String, Bytes>>,
        now: Millis,
    ) -> GroupMetadataValue {
        let protocol = self.protocol_name.clone().unwrap_or_default();
        GroupMetadataValue {
            group_id: self.group_id.clone(),
            protocol_type: self.protocol_type.clone(),
            generation: self.generation_id,
            protocol_name: self.protocol_name.clone(),
            leader: self.leader_id.clone(),
            members: self
                .members
                .values()
                .map(|m| MemberMetadataValue {
                    member_id: m.member_id.clone(),
                    group_instance_id: m.group_instance_id.clone(),
                    client_id: m.client_id.clone(),
                    client_host: m.client_host.clone(),
                    rebalance_timeout_ms: m.rebalance_timeout_ms,
                    session_timeout_ms: m.session_timeout_ms,
                    subscription: m.metadata(&protocol),
                    assignment: match assignment {
                        Some(a) => a.get(&m.member_id).cloned().unwrap_or_default(),
                        None => m.assignment.clone(),
                    },
                })
                .collect(),
            stored_at: now,
        }
    }

    /// Rebuilds a group from its stored metadata (Kafka's GroupMetadata.loadGroup): Empty when
    /// it has no members, else Stable at the stored generation; each member supports just the
    /// stored protocol with its stored subscription. Session deadlines are armed by the caller.
    pub fn from_snapshot(v: &GroupMetadataValue) -> Group {
        let mut g = Group::new(v.group_id.clone());
        g.generation_id = v.generation;
        g.protocol_type = v.protocol_type.clone();
        g.protocol_name = v.protocol_name.clone();
        let protocol = v.protocol_name.clone().unwrap_or_default();
        for m in &v.members {
            let member = Member {
                member_id: m.member_id.clone(),
                group_instance_id: m.group_instance_id.clone(),
                client_id: m.client_id.clone(),
                client_host: m.client_host.clone(),
                rebalance_timeout_ms: m.rebalance_timeout_ms,
                session_timeout_ms: m.session_timeout_ms,
                protocol_type: v.protocol_type.clone().unwrap_or_default(),
                protocols: vec![MemberProtocol {
                    name: protocol.clone(),
                    metadata: m.subscription.clone(),
                }],
                assignment: m.assignment.clone(),
                awaiting_join: None,
                awaiting_sync: None,
                is_new: false,
                joined_at: 0,
                session_deadline: None,
            };
            for p in member.protocol_names() {
                *g.protocol_support.entry(p).or_default() += 1;
            }
            if let Some(instance) = &member.group_instance_id {
                g.static_members.insert(instance.clone(), member.member_id.clone());
            }
            g.members.insert(member.member_id.clone(), member);
        }
        g.leader_id = v.leader.clone().filter(|l| g.members.contains_key(l));
        if g.leader_id.is_none() {
            g.leader_id = g.members.keys().next().cloned();
        }
        g.state = if g.members.is_empty() { GroupState::Empty } else { GroupState::Stable };
        g
    }

    // ---- state machine --------------------------------------------------------------------

    /// Moves to `to` if Kafka allows it and records the change.
    pub(crate) fn transition_to(&mut self, to: GroupState, fx: &mut Effects) {
        if !self.state.can_transition_to(to) {
            tracing::error!(group = %self.group_id, from = ?self.state, ?to, "illegal group transition");
            debug_assert!(false, "illegal transition {:?} -> {:?}", self.state, to);
            return;
        }
        let from = self.state;
        self.state = to;
        fx.event(CoordinatorEvent::GroupStateChanged {
            group: self.group_id.clone(),
            from,
            to,
            generation: self.generation_id,
        });
    }

    fn session_key(&self, member_id: &str) -> TimerKey {
        TimerKey::Session { group: self.group_id.clone(), member: member_id.to_string() }
    }

    /// Kafka's completeAndScheduleNextHeartbeatExpiration: the member was heard from at `now`,
    /// its session ends `session_timeout_ms` later.
    pub(crate) fn touch(&mut self, member_id: &str, now: Millis, fx: &mut Effects) {
        let key = self.session_key(member_id);
        if let Some(m) = self.members.get_mut(member_id) {
            // At least 1 ms: a zero session timeout must not re-arm a kept-alive member at the
            // very instant being processed (handle_timeout would spin).
            let at = now + m.session_timeout_ms.max(1) as u64;
            fx.rearm(&mut m.session_deadline, key, at);
        }
    }

    fn arm_session(&mut self, member_id: &str, at: Millis, fx: &mut Effects) {
        let key = self.session_key(member_id);
        if let Some(m) = self.members.get_mut(member_id) {
            fx.rearm(&mut m.session_deadline, key, at);
        }
    }

    /// Adds a member (the first one fixes the protocol type, the first one leads).
    pub(crate) fn add(&mut self, member: Member, fx: &mut Effects) {
        if self.members.is_empty() {
            self.protocol_type = Some(member.protocol_type.clone());
        }
        if self.leader_id.is_none() {
            self.leader_id = Some(member.member_id.clone());
        }
        for p in member.protocol_names() {
            *self.protocol_support.entry(p).or_default() += 1;
        }
        if let Some(instance) = &member.group_instance_id {
            self.static_members.insert(instance.clone(), member.member_id.clone());
        }
        fx.event(CoordinatorEvent::MemberAdded {
            group: self.group_id.clone(),
            member_id: member.member_id.clone(),
            group_instance_id: member.group_instance_id.clone(),
            client_id: member.client_id.clone(),
        });
        self.members.insert(member.member_id.clone(), member);
    }

    /// Replaces a member's protocols (keeping the support counts right).
    pub(crate) fn update_protocols(&mut self, member_id: &str, protocols: Vec<MemberProtocol>) {
        let Some(m) = self.members.get_mut(member_id) else { return };
        for p in m.protocol_names() {
            if let Some(c) = self.protocol_support.get_mut(&p) {
                *c -= 1;
                if *c == 0 {
                    self.protocol_support.remove(&p);
                }
            }
        }
        m.protocols = protocols;
        for p in m.protocol_names() {
            *self.protocol_support.entry(p).or_default() += 1;
        }
    }

    /// Parks a JoinGroup for `member_id`. A JoinGroup it had parked already (a retry on another
    /// connection) is answered REBALANCE_IN_PROGRESS so the driver never holds an orphan.
    pub(crate) fn park_join(&mut self, member_id: &str, parked: Parked, fx: &mut Effects) {
        if let Some(m) = self.members.get_mut(member_id) {
            if let Some(old) = m.awaiting_join.replace(parked) {
                let r = JoinResult::error(member_id, ResponseError::RebalanceInProgress);
                fx.respond(old.id, crate::api::join_group::response(old.version, r));
            }
        }
    }

    /// Parks a SyncGroup for `member_id` (an older parked one is answered
    /// REBALANCE_IN_PROGRESS).
    pub(crate) fn park_sync(&mut self, member_id: &str, parked: Parked, fx: &mut Effects) {
        let (pt, pn) = (self.protocol_type.clone(), self.protocol_name.clone());
        if let Some(m) = self.members.get_mut(member_id) {
            if let Some(old) = m.awaiting_sync.replace(parked) {
                let err = ResponseError::RebalanceInProgress.code();
                let r = crate::api::sync_group::response(old.version, err, Bytes::new(), pt, pn);
                fx.respond(old.id, r);
            }
        }
    }

    /// Removes a member without any follow-up (no rebalance): answers its parked requests with
    /// UNKNOWN_MEMBER_ID, drops its timers, hands the leadership to the oldest remaining member.
    fn remove_raw(&mut self, member_id: &str, reason: RemovalReason, fx: &mut Effects) {
        let Some(mut m) = self.members.shift_remove(member_id) else { return };
        for p in m.protocol_names() {
            if let Some(c) = self.protocol_support.get_mut(&p) {
                *c -= 1;
                if *c == 0 {
                    self.protocol_support.remove(&p);
                }
            }
        }
        let key = self.session_key(member_id);
        fx.disarm(&mut m.session_deadline, key);
        if let Some(p) = m.awaiting_join.take() {
            let r = JoinResult::error("", ResponseError::UnknownMemberId);
            fx.respond(p.id, crate::api::join_group::response(p.version, r));
        }
        if let Some(p) = m.awaiting_sync.take() {
            let err = ResponseError::UnknownMemberId.code();
            let r = crate::api::sync_group::response(p.version, err, Bytes::new(), None, None);
            fx.respond(p.id, r);
        }
        if let Some(instance) = &m.group_instance_id {
            if self.static_members.get(instance).map(String::as_str) == Some(member_id) {
                self.static_members.remove(instance);
            }
        }
        self.pending_sync.remove(member_id);
        if self.is_leader(member_id) {
            self.leader_id = self.members.keys().next().cloned();
        }
        fx.event(CoordinatorEvent::MemberRemoved {
            group: self.group_id.clone(),
            member_id: member_id.to_string(),
            reason,
        });
    }

    /// Kafka's removeMemberAndUpdateGroup: remove, then rebalance (Stable, CompletingRebalance)
    /// or see whether the join phase can now complete (PreparingRebalance).
    pub(crate) fn remove_member(
        &mut self,
        member_id: &str,
        reason: RemovalReason,
        now: Millis,
        cfg: &CoordinatorConfig,
        fx: &mut Effects,
    ) {
        if !self.has(member_id) {
            return;
        }
        self.remove_raw(member_id, reason, fx);
        match self.state {
            GroupState::Stable | GroupState::CompletingRebalance => {
                self.maybe_prepare_rebalance(now, cfg, fx)
            }
            GroupState::PreparingRebalance => self.try_complete_join(now, cfg, fx),
            GroupState::Empty | GroupState::Dead => {}
        }
    }

    /// Registers a pending member (told MEMBER_ID_REQUIRED) that must rejoin by `now + timeout`.
    pub(crate) fn add_pending_member(
        &mut self,
        member_id: &str,
        now: Millis,
        timeout_ms: u64,
        fx: &mut Effects,
    ) {
        let at = now + timeout_ms;
        let key =
            TimerKey::PendingMember { group: self.group_id.clone(), member: member_id.to_string() };
        let mut slot = self.pending_members.get(member_id).copied();
        fx.rearm(&mut slot, key, at);
        self.pending_members.insert(member_id.to_string(), at);
    }

    /// Forgets a pending member; true if it was pending.
    pub(crate) fn remove_pending_member(&mut self, member_id: &str, fx: &mut Effects) -> bool {
        match self.pending_members.remove(member_id) {
            Some(at) => {
                let key = TimerKey::PendingMember {
                    group: self.group_id.clone(),
                    member: member_id.to_string(),
                };
                fx.disarm(&mut Some(at), key);
                true
            }
            None => false,
        }
    }

    /// Kafka's addMemberAndRebalance: a new member joins with its JoinGroup parked. Until the
    /// join phase answers it, the new-member join timeout (not the session timeout) bounds it.
    pub(crate) fn add_member_and_rebalance(
        &mut self,
        member: Member,
        parked: Parked,
        now: Millis,
        cfg: &CoordinatorConfig,
        fx: &mut Effects,
    ) {
        let member_id = member.member_id.clone();
        if self.state == GroupState::PreparingRebalance && self.generation_id == 0 {
            self.new_member_added = true;
        }
        self.remove_pending_member(&member_id, fx);
        let mut member = member;
        member.is_new = true;
        member.joined_at = now;
        member.awaiting_join = Some(parked);
        self.add(member, fx);
        self.arm_session(&member_id, now + cfg.new_member_join_timeout_ms.max(0) as u64, fx);
        self.maybe_prepare_rebalance(now, cfg, fx);
    }

    /// Kafka's updateMemberAndRebalance: a known member rejoins (with new metadata, or as the
    /// leader, or while a rebalance is under way).
    pub(crate) fn update_member_and_rebalance(
        &mut self,
        member_id: &str,
        protocols: Vec<MemberProtocol>,
        parked: Parked,
        now: Millis,
        cfg: &CoordinatorConfig,
        fx: &mut Effects,
    ) {
        self.update_protocols(member_id, protocols);
        self.park_join(member_id, parked, fx);
        self.maybe_prepare_rebalance(now, cfg, fx);
    }

    /// Starts a rebalance if the state allows one (Empty, Stable, CompletingRebalance).
    pub(crate) fn maybe_prepare_rebalance(
        &mut self,
        now: Millis,
        cfg: &CoordinatorConfig,
        fx: &mut Effects,
    ) {
        if self.state.can_transition_to(GroupState::PreparingRebalance) {
            self.prepare_rebalance(now, cfg, fx);
        }
    }

    /// Kafka's prepareRebalance: parked SyncGroups are told REBALANCE_IN_PROGRESS, the pending
    /// sync wait is dropped, and the join phase timer starts: the initial delay for an Empty
    /// group, else the largest rebalance timeout. A normal join phase completes at once if
    /// everyone has already rejoined.
    pub(crate) fn prepare_rebalance(
        &mut self,
        now: Millis,
        cfg: &CoordinatorConfig,
        fx: &mut Effects,
    ) {
        if self.state == GroupState::CompletingRebalance {
            self.reset_and_propagate_assignment_error(ResponseError::RebalanceInProgress, now, fx);
        }
        self.clear_pending_sync(fx);
        let rebalance_timeout = self.rebalance_timeout_ms();
        let timer = if self.state == GroupState::Empty {
            let delay = cfg.initial_rebalance_delay_ms.max(0) as u64;
            JoinTimer {
                deadline: now + delay,
                initial_remaining_ms: Some(rebalance_timeout.saturating_sub(delay)),
            }
        } else {
            JoinTimer { deadline: now + rebalance_timeout, initial_remaining_ms: None }
        };
        self.set_join_timer(Some(timer), fx);
        self.transition_to(GroupState::PreparingRebalance, fx);
        self.try_complete_join(now, cfg, fx);
    }

    pub(crate) fn set_join_timer(&mut self, timer: Option<JoinTimer>, fx: &mut Effects) {
        let key = TimerKey::Join { group: self.group_id.clone() };
        let mut slot = self.join_timer.map(|t| t.deadline);
        match timer {
            Some(t) => fx.rearm(&mut slot, key, t.deadline),
            None => fx.disarm(&mut slot, key),
        }
        self.join_timer = timer;
    }

    fn clear_pending_sync(&mut self, fx: &mut Effects) {
        self.pending_sync.clear();
        let key = TimerKey::Sync { group: self.group_id.clone() };
        fx.disarm(&mut self.sync_deadline, key);
    }

    /// Kafka's DelayedJoin.tryComplete: complete the join phase early once every member has
    /// rejoined (never for the initial delayed join, which always waits its delay).
    pub(crate) fn try_complete_join(
        &mut self,
        now: Millis,
        cfg: &CoordinatorConfig,
        fx: &mut Effects,
    ) {
        if self.state != GroupState::PreparingRebalance {
            return;
        }
        let normal = self.join_timer.is_some_and(|t| t.initial_remaining_ms.is_none());
        if normal && self.has_all_members_joined() {
            self.complete_join(now, cfg, fx);
        }
    }

    /// The join timer fired: extend the initial delay while new members keep arriving, else
    /// complete the join phase.
    pub(crate) fn on_join_timer(&mut self, now: Millis, cfg: &CoordinatorConfig, fx: &mut Effects) {
        let Some(timer) = self.join_timer.take() else { return };
        if self.state != GroupState::PreparingRebalance {
            return;
        }
        if let Some(remaining) = timer.initial_remaining_ms {
            if self.new_member_added && remaining > 0 {
                self.new_member_added = false;
                let delay = (cfg.initial_rebalance_delay_ms.max(0) as u64).min(remaining);
                let next = JoinTimer {
                    deadline: now + delay,
                    initial_remaining_ms: Some(remaining - delay),
                };
                self.set_join_timer(Some(next), fx);
                return;
            }
        }
        self.complete_join(now, cfg, fx);
    }

    /// Kafka's onCompleteJoin: dynamic members that did not rejoin are removed, the leader is
    /// re-elected among the rejoined members if needed, the generation is bumped, the protocol
    /// chosen, and every parked JoinGroup answered (the leader gets the members' metadata).
    /// Static members that did not rejoin stay (their session decides); if only such members
    /// remain the join phase waits another rebalance timeout.
    pub(crate) fn complete_join(
        &mut self,
        now: Millis,
        _cfg: &CoordinatorConfig,
        fx: &mut Effects,
    ) {
        self.set_join_timer(None, fx);
        self.new_member_added = false;
        let not_rejoined: Vec<String> = self
            .members
            .values()
            .filter(|m| m.awaiting_join.is_none() && m.group_instance_id.is_none())
            .map(|m| m.member_id.clone())
            .collect();
        for id in not_rejoined {
            self.remove_raw(&id, RemovalReason::RebalanceTimeout, fx);
        }
        if self.state == GroupState::Dead {
            return;
        }
        if !self.members.is_empty() && !self.maybe_elect_new_joined_leader() {
            // Only static members that have not rejoined are left: wait for them (or for their
            // sessions to expire) another rebalance timeout.
            let t = JoinTimer {
                deadline: now + self.rebalance_timeout_ms().max(1),
                initial_remaining_ms: None,
            };
            self.set_join_timer(Some(t), fx);
            return;
        }
        self.generation_id += 1;
        if self.members.is_empty() {
            self.protocol_name = None;
            self.leader_id = None;
            self.transition_to(GroupState::Empty, fx);
            self.generation_started(fx);
            // Kafka stores the Empty group (with no assignment) without waiting for it.
            fx.store_group(self.snapshot(None, now));
            return;
        }
        self.protocol_name = self.select_protocol();
        self.transition_to(GroupState::CompletingRebalance, fx);
        self.generation_started(fx);

        let protocol = self.protocol_name.clone().unwrap_or_default();
        let leader = self.leader_id.clone().unwrap_or_default();
        let all: Vec<JoinedMember> = self
            .members
            .values()
            .map(|m| JoinedMember {
                member_id: m.member_id.clone(),
                group_instance_id: m.group_instance_id.clone(),
                metadata: m.metadata(&protocol),
            })
            .collect();
        let ids: Vec<String> = self.members.keys().cloned().collect();
        for id in &ids {
            let m = self.members.get_mut(id).expect("member listed above");
            m.is_new = false;
            if let Some(p) = m.awaiting_join.take() {
                let result = JoinResult {
                    error: 0,
                    member_id: id.clone(),
                    generation_id: self.generation_id,
                    protocol_type: self.protocol_type.clone(),
                    protocol_name: self.protocol_name.clone(),
                    leader: leader.clone(),
                    members: if *id == leader { all.clone() } else { Vec::new() },
                };
                fx.respond(p.id, crate::api::join_group::response(p.version, result));
            }
            self.touch(id, now, fx);
        }
        // Kafka's pending-sync wait: whoever has not sent SyncGroup within the rebalance
        // timeout is removed, so a lost SyncGroup cannot leave the group stuck.
        self.pending_sync = ids.into_iter().collect();
        let key = TimerKey::Sync { group: self.group_id.clone() };
        let at = now + self.rebalance_timeout_ms();
        fx.rearm(&mut self.sync_deadline, key, at);
    }

    fn generation_started(&self, fx: &mut Effects) {
        let mut members: Vec<String> = self.members.keys().cloned().collect();
        members.sort();
        fx.event(CoordinatorEvent::GenerationStarted {
            group: self.group_id.clone(),
            generation: self.generation_id,
            protocol: self.protocol_name.clone(),
            leader: self.leader_id.clone(),
            members,
        });
    }

    /// Kafka's maybeElectNewJoinedLeader: keep the leader if it rejoined, else promote the
    /// first member that did. False if no member rejoined.
    fn maybe_elect_new_joined_leader(&mut self) -> bool {
        if let Some(l) = &self.leader_id {
            if self.members.get(l).is_some_and(|m| m.awaiting_join.is_some()) {
                return true;
            }
        }
        match self.members.values().find(|m| m.awaiting_join.is_some()) {
            Some(m) => {
                self.leader_id = Some(m.member_id.clone());
                true
            }
            None => false,
        }
    }

    /// Every member loses its assignment and parked SyncGroups get `error`.
    fn reset_and_propagate_assignment_error(
        &mut self,
        error: ResponseError,
        now: Millis,
        fx: &mut Effects,
    ) {
        for m in self.members.values_mut() {
            m.assignment = Bytes::new();
        }
        self.propagate_assignment(error.code(), now, fx);
    }

    /// Answers every parked SyncGroup with the member's assignment and restarts its session
    /// (it was kept alive while parked).
    fn propagate_assignment(&mut self, error: i16, now: Millis, fx: &mut Effects) {
        let (pt, pn) = (self.protocol_type.clone(), self.protocol_name.clone());
        let ids: Vec<String> = self.members.keys().cloned().collect();
        for id in ids {
            let m = self.members.get_mut(&id).expect("listed above");
            if let Some(p) = m.awaiting_sync.take() {
                let r = crate::api::sync_group::response(
                    p.version,
                    error,
                    m.assignment.clone(),
                    pt.clone(),
                    pn.clone(),
                );
                fx.respond(p.id, r);
                self.touch(&id, now, fx);
            }
        }
    }

    /// The leader's assignment arrived in CompletingRebalance: store it (members the leader
    /// left out get nothing), record it, move to Stable and answer every parked SyncGroup.
    pub(crate) fn store_assignment(
        &mut self,
        assignment: BTreeMap<String, Bytes>,
        now: Millis,
        fx: &mut Effects,
    ) {
        let mut decoded = Vec::with_capacity(self.members.len());
        for m in self.members.values_mut() {
            m.assignment = assignment.get(&m.member_id).cloned().unwrap_or_default();
            let partitions = match groupsim_wire::consumer_protocol::decode_assignment(
                &m.assignment,
            ) {
                Ok(a) => a.partitions,
                Err(e) => {
                    tracing::warn!(group = %self.group_id, member = %m.member_id, "undecodable assignment: {e}");
                    Vec::new()
                }
            };
            decoded.push(MemberAssignment { member_id: m.member_id.clone(), partitions });
        }
        decoded.sort_by(|a, b| a.member_id.cmp(&b.member_id));
        fx.event(CoordinatorEvent::AssignmentStored {
            group: self.group_id.clone(),
            generation: self.generation_id,
            assignments: decoded,
        });
        self.transition_to(GroupState::Stable, fx);
        self.propagate_assignment(0, now, fx);
    }

    /// A member sent its SyncGroup for this generation: it no longer holds up the group.
    pub(crate) fn sync_received(&mut self, member_id: &str, fx: &mut Effects) {
        self.pending_sync.remove(member_id);
        if self.pending_sync.is_empty() {
            let key = TimerKey::Sync { group: self.group_id.clone() };
            fx.disarm(&mut self.sync_deadline, key);
        }
    }

    /// Pending-sync timer: members of this generation that never sent SyncGroup are removed
    /// and the group rebalances.
    pub(crate) fn on_sync_timer(&mut self, now: Millis, cfg: &CoordinatorConfig, fx: &mut Effects) {
        self.sync_deadline = None;
        if !matches!(self.state, GroupState::CompletingRebalance | GroupState::Stable) {
            return;
        }
        let missing: Vec<String> = std::mem::take(&mut self.pending_sync).into_iter().collect();
        if missing.is_empty() {
            return;
        }
        for id in &missing {
            self.remove_raw(id, RemovalReason::RebalanceTimeout, fx);
        }
        self.maybe_prepare_rebalance(now, cfg, fx);
    }

    /// A member's session deadline passed. Kafka's shouldKeepAlive: a member with a parked
    /// JoinGroup is kept (unless it is new and the new-member join timeout ran out), so is one
    /// with a parked SyncGroup; anyone else has failed.
    pub(crate) fn on_session_timer(
        &mut self,
        member_id: &str,
        now: Millis,
        cfg: &CoordinatorConfig,
        fx: &mut Effects,
    ) {
        let Some(m) = self.members.get_mut(member_id) else { return };
        m.session_deadline = None;
        let reason = if m.awaiting_join.is_some() {
            let new_member_deadline = m.joined_at + cfg.new_member_join_timeout_ms.max(0) as u64;
            if m.is_new && now >= new_member_deadline {
                Some(RemovalReason::PendingJoinExpired)
            } else if m.is_new {
                self.arm_session(member_id, new_member_deadline, fx);
                return;
            } else {
                None
            }
        } else if m.awaiting_sync.is_some() {
            None
        } else {
            Some(RemovalReason::SessionTimeout)
        };
        match reason {
            Some(r) => self.remove_member(member_id, r, now, cfg, fx),
            None => self.touch(member_id, now, fx),
        }
    }

    /// A pending member never came back with its member id.
    pub(crate) fn on_pending_member_timer(
        &mut self,
        member_id: &str,
        now: Millis,
        cfg: &CoordinatorConfig,
        fx: &mut Effects,
    ) {
        if self.pending_members.remove(member_id).is_none() {
            return;
        }
        fx.event(CoordinatorEvent::MemberRemoved {
            group: self.group_id.clone(),
            member_id: member_id.to_string(),
            reason: RemovalReason::PendingJoinExpired,
        });
        self.try_complete_join(now, cfg, fx);
    }

    /// A pending member left (LeaveGroup) before rejoining.
    pub(crate) fn leave_pending_member(
        &mut self,
        member_id: &str,
        now: Millis,
        cfg: &CoordinatorConfig,
        fx: &mut Effects,
    ) {
        if self.remove_pending_member(member_id, fx) {
            fx.event(CoordinatorEvent::MemberRemoved {
                group: self.group_id.clone(),
                member_id: member_id.to_string(),
                reason: RemovalReason::LeaveGroup,
            });
            self.try_complete_join(now, cfg, fx);
        }
    }

    /// A static member came back with an unknown member id: `new_id` takes over the instance
    /// from `old_id`, keeping its place, leadership, assignment and pending sync. Requests the
    /// old member id had parked are answered FENCED_INSTANCE_ID.
    pub(crate) fn replace_static_member(
        &mut self,
        old_id: &str,
        new_id: &str,
        client_id: &str,
        now: Millis,
        fx: &mut Effects,
    ) {
        let Some(index) = self.members.get_index_of(old_id) else { return };
        let (_, mut m) = self.members.shift_remove_index(index).expect("index just looked up");
        let key = self.session_key(old_id);
        fx.disarm(&mut m.session_deadline, key);
        if let Some(p) = m.awaiting_join.take() {
            let r = JoinResult::error(old_id, ResponseError::FencedInstanceId);
            fx.respond(p.id, crate::api::join_group::response(p.version, r));
        }
        if let Some(p) = m.awaiting_sync.take() {
            let err = ResponseError::FencedInstanceId.code();
            fx.respond(
                p.id,
                crate::api::sync_group::response(p.version, err, Bytes::new(), None, None),
            );
        }
        fx.event(CoordinatorEvent::MemberRemoved {
            group: self.group_id.clone(),
            member_id: old_id.to_string(),
            reason: RemovalReason::Fenced,
        });
        m.member_id = new_id.to_string();
        m.client_id = client_id.to_string();
        if let Some(instance) = &m.group_instance_id {
            self.static_members.insert(instance.clone(), new_id.to_string());
        }
        if self.is_leader(old_id) {
            self.leader_id = Some(new_id.to_string());
        }
        if self.pending_sync.remove(old_id) {
            self.pending_sync.insert(new_id.to_string());
        }
        fx.event(CoordinatorEvent::MemberAdded {
            group: self.group_id.clone(),
            member_id: new_id.to_string(),
            group_instance_id: m.group_instance_id.clone(),
            client_id: client_id.to_string(),
        });
        self.members.shift_insert(index, new_id.to_string(), m);
        self.touch(new_id, now, fx);
    }

    /// The group leaves this coordinator (unloaded): parked requests get NOT_COORDINATOR, every
    /// timer stops, the group is Dead.
    pub(crate) fn unload(&mut self, fx: &mut Effects) {
        let ids: Vec<String> = self.members.keys().cloned().collect();
        for id in &ids {
            let key = self.session_key(id);
            let m = self.members.get_mut(id).expect("listed above");
            fx.disarm(&mut m.session_deadline, key);
            if let Some(p) = m.awaiting_join.take() {
                let r = JoinResult::error(id, ResponseError::NotCoordinator);
                fx.respond(p.id, crate::api::join_group::response(p.version, r));
            }
            if let Some(p) = m.awaiting_sync.take() {
                let err = ResponseError::NotCoordinator.code();
                fx.respond(
                    p.id,
                    crate::api::sync_group::response(p.version, err, Bytes::new(), None, None),
                );
            }
        }
        let pending: Vec<String> = self.pending_members.keys().cloned().collect();
        for id in pending {
            self.remove_pending_member(&id, fx);
        }
        self.set_join_timer(None, fx);
        self.clear_pending_sync(fx);
        if self.state != GroupState::Dead {
            self.transition_to(GroupState::Dead, fx);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_kafkas_transitions_are_legal() {
        use GroupState::*;
        let all = [Empty, PreparingRebalance, CompletingRebalance, Stable, Dead];
        let legal = [
            (Empty, PreparingRebalance),
            (PreparingRebalance, CompletingRebalance),
            (PreparingRebalance, Empty),
            (CompletingRebalance, PreparingRebalance),
            (CompletingRebalance, Stable),
            (Stable, PreparingRebalance),
        ];
        for from in all {
            for to in all {
                let expected = to == Dead || legal.contains(&(from, to));
                assert_eq!(from.can_transition_to(to), expected, "{from:?} -> {to:?}");
            }
        }
    }

    fn member(id: &str, protocols: &[&str]) -> Member {
        Member {
            member_id: id.into(),
            group_instance_id: None,
            client_id: "c".into(),
            client_host: String::new(),
            rebalance_timeout_ms: 1000,
            session_timeout_ms: 1000,
            protocol_type: "consumer".into(),
            protocols: protocols
                .iter()
                .map(|p| MemberProtocol { name: p.to_string(), metadata: Bytes::new() })
                .collect(),
            assignment: Bytes::new(),
            awaiting_join: None,
            awaiting_sync: None,
            is_new: false,
            joined_at: 0,
            session_deadline: None,
        }
    }

    #[test]
    fn select_protocol_votes_among_protocols_every_member_supports() {
        // (members' preference lists, expected choice)
        let cases: &[(&[&[&str]], &str)] = &[
            (&[&["range", "roundrobin"], &["roundrobin", "range"], &["roundrobin"]], "roundrobin"),
            (&[&["a", "b"], &["a", "b"], &["b", "a"]], "a"),
            // "c" has most first preferences but only two members support it.
            (&[&["c", "b"], &["c", "b"], &["b"]], "b"),
            // Tie: the earliest member's vote wins.
            (&[&["x", "y"], &["y", "x"]], "x"),
        ];
        for (prefs, expected) in cases {
            let mut fx = Effects::default();
            let mut g = Group::new("g");
            for (i, p) in prefs.iter().enumerate() {
                g.add(member(&format!("m{i}"), p), &mut fx);
            }
            assert_eq!(g.select_protocol().as_deref(), Some(*expected), "{prefs:?}");
        }
    }

    #[test]
    fn supports_protocols_requires_type_match_and_a_common_protocol() {
        let mut fx = Effects::default();
        let mut g = Group::new("g");
        let set = |ps: &[&str]| ps.iter().map(|p| p.to_string()).collect::<BTreeSet<_>>();
        assert!(!g.supports_protocols("", &set(&["range"])), "empty type");
        assert!(!g.supports_protocols("consumer", &set(&[])), "no protocols");
        g.add(member("m1", &["range", "sticky"]), &mut fx);
        g.state = GroupState::Stable;
        assert!(g.supports_protocols("consumer", &set(&["sticky"])));
        assert!(!g.supports_protocols("connect", &set(&["sticky"])));
        assert!(!g.supports_protocols("consumer", &set(&["roundrobin"])));
    }
}
