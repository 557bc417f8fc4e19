//! The group coordinator core: owns every group on this broker, its offsets and its timers.
//!
//! [`GroupCoordinator`] is sans-IO: the driver hands it decoded requests with the current
//! simulated time, asks [`GroupCoordinator::poll_timeout`] when it next has work, calls
//! [`GroupCoordinator::handle_timeout`] then, and drains responses and history events with
//! [`GroupCoordinator::poll_output`]. JoinGroup and SyncGroup answers may come much later than
//! their request (when the rebalance reaches the right phase); the driver keeps the connection
//! waiting for that request id.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use kafka_protocol::messages::{RequestKind, ResponseKind};

use crate::group::Group;
use crate::offsets::OffsetStore;
use crate::{CoordinatorConfig, CoordinatorEvent, GroupState, Millis, RequestId, TopicPartition};

/// What the coordinator asks its driver to do.
#[derive(Clone, Debug, PartialEq)]
pub enum CoordinatorOutput {
    /// Answer request `id` with `response` (encode with the request's version).
    Response { id: RequestId, response: ResponseKind },
    /// Record a ground-truth event in the history.
    Event(CoordinatorEvent),
}

/// Which timer an entry of the timer queue belongs to.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum TimerKey {
    /// End of a join phase (rebalance timeout, or a step of the initial delay).
    Join { group: String },
    /// End of the wait for SyncGroup from every member of a new generation.
    Sync { group: String },
    /// A member's session (or new-member join) deadline.
    Session { group: String, member: String },
    /// A pending member (told MEMBER_ID_REQUIRED) must have rejoined by then.
    PendingMember { group: String, member: String },
}

/// Outputs and timers, kept apart from the groups so a group can be borrowed mutably while it
/// queues answers and arms timers.
#[derive(Debug, Default)]
pub(crate) struct Effects {
    pub outputs: VecDeque<CoordinatorOutput>,
    /// Every armed timer, ordered by deadline; each owner stores its own deadline so an entry
    /// can be found and removed in O(log n).
    pub timers: BTreeSet<(Millis, TimerKey)>,
}

impl Effects {
    /// Queue an answer to request `id`.
    pub fn respond(&mut self, id: RequestId, response: impl Into<ResponseKind>) {
        self.outputs.push_back(CoordinatorOutput::Response { id, response: response.into() });
    }

    /// Queue a history event.
    pub fn event(&mut self, event: CoordinatorEvent) {
        self.outputs.push_back(CoordinatorOutput::Event(event));
    }

    /// (Re)arm the timer whose deadline is stored in `slot`.
    pub fn rearm(&mut self, slot: &mut Option<Millis>, key: TimerKey, at: Millis) {
        if let Some(old) = slot.take() {
            self.timers.remove(&(old, key.clone()));
        }
        self.timers.insert((at, key));
        *slot = Some(at);
    }

    /// Stop the timer whose deadline is stored in `slot`.
    pub fn disarm(&mut self, slot: &mut Option<Millis>, key: TimerKey) {
        if let Some(old) = slot.take() {
            self.timers.remove(&(old, key));
        }
    }
}

/// Sans-IO classic group coordinator.
#[derive(Debug)]
pub struct GroupCoordinator {
    pub(crate) config: CoordinatorConfig,
    pub(crate) groups: BTreeMap<String, Group>,
    pub(crate) offsets: OffsetStore,
    pub(crate) fx: Effects,
    /// Suffix of the next generated member id (ids are `{client_id}-{n}`, never random).
    pub(crate) next_member_seq: u64,
}

impl GroupCoordinator {
    /// A coordinator with no groups.
    pub fn new(config: CoordinatorConfig) -> Self {
        Self {
            config,
            groups: BTreeMap::new(),
            offsets: OffsetStore::default(),
            fx: Effects::default(),
            next_member_seq: 1,
        }
    }

    /// The configuration this coordinator runs with.
    pub fn config(&self) -> &CoordinatorConfig {
        &self.config
    }

    /// Whether [`Self::handle_request`] answers this kind of request. Drivers should route
    /// anything else elsewhere: the coordinator ignores it (with a warning) and never answers.
    pub fn handles(request: &RequestKind) -> bool {
        matches!(
            request,
            RequestKind::JoinGroup(_)
                | RequestKind::SyncGroup(_)
                | RequestKind::Heartbeat(_)
                | RequestKind::LeaveGroup(_)
                | RequestKind::OffsetCommit(_)
                | RequestKind::OffsetFetch(_)
                | RequestKind::DescribeGroups(_)
                | RequestKind::ListGroups(_)
        )
    }

    /// Handle a group API request (JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit,
    /// OffsetFetch, DescribeGroups, ListGroups) of wire version `version`. The answer is queued
    /// now or later. Member ids generated for it use an empty client id; drivers that know the
    /// request header should call [`Self::handle_request_from`].
    pub fn handle_request(
        &mut self,
        now: Millis,
        id: RequestId,
        version: i16,
        request: RequestKind,
    ) {
        self.handle_request_from(now, id, version, "", request);
    }

    /// [`Self::handle_request`] with the request header's client id, which Kafka uses to build
    /// member ids (`{client_id}-{n}`) and reports in DescribeGroups.
    pub fn handle_request_from(
        &mut self,
        now: Millis,
        id: RequestId,
        version: i16,
        client_id: &str,
        request: RequestKind,
    ) {
        match request {
            RequestKind::JoinGroup(r) => self.handle_join_group(now, id, version, client_id, r),
            RequestKind::SyncGroup(r) => self.handle_sync_group(now, id, version, r),
            RequestKind::Heartbeat(r) => self.handle_heartbeat(now, id, version, r),
            RequestKind::LeaveGroup(r) => self.handle_leave_group(now, id, version, r),
            RequestKind::OffsetCommit(r) => self.handle_offset_commit(now, id, version, r),
            RequestKind::OffsetFetch(r) => self.handle_offset_fetch(now, id, version, r),
            RequestKind::DescribeGroups(r) => self.handle_describe_groups(now, id, version, r),
            RequestKind::ListGroups(r) => self.handle_list_groups(now, id, version, r),
            other => {
                tracing::warn!(
                    ?id,
                    "group coordinator ignores a request it does not handle: {other:?}"
                )
            }
        }
    }

    /// The earliest instant at which [`Self::handle_timeout`] has work to do.
    pub fn poll_timeout(&self) -> Option<Millis> {
        self.fx.timers.first().map(|(at, _)| *at)
    }

    /// Fire every timer due at or before `now` (session expiry, rebalance completion, …).
    pub fn handle_timeout(&mut self, now: Millis) {
        while let Some((at, _)) = self.fx.timers.first() {
            if *at > now {
                break;
            }
            let (_, key) = self.fx.timers.pop_first().expect("checked non-empty");
            self.fire(now, key);
        }
    }

    fn fire(&mut self, now: Millis, key: TimerKey) {
        let cfg = &self.config;
        let fx = &mut self.fx;
        match key {
            TimerKey::Join { group } => {
                if let Some(g) = self.groups.get_mut(&group) {
                    g.on_join_timer(now, cfg, fx);
                }
            }
            TimerKey::Sync { group } => {
                if let Some(g) = self.groups.get_mut(&group) {
                    g.on_sync_timer(now, cfg, fx);
                }
            }
            TimerKey::Session { group, member } => {
                if let Some(g) = self.groups.get_mut(&group) {
                    g.on_session_timer(&member, now, cfg, fx);
                }
            }
            TimerKey::PendingMember { group, member } => {
                if let Some(g) = self.groups.get_mut(&group) {
                    g.on_pending_member_timer(&member, now, cfg, fx);
                }
            }
        }
    }

    /// Next queued output, in the order produced.
    pub fn poll_output(&mut self) -> Option<CoordinatorOutput> {
        self.fx.outputs.pop_front()
    }

    // ---- inspection (tests, drivers, checkers) --------------------------------------------

    /// A group, if this coordinator knows it.
    pub fn group(&self, group_id: &str) -> Option<&Group> {
        self.groups.get(group_id)
    }

    /// Ids of every known group, sorted.
    pub fn group_ids(&self) -> Vec<String> {
        self.groups.keys().cloned().collect()
    }

    /// State of a group.
    pub fn group_state(&self, group_id: &str) -> Option<GroupState> {
        self.groups.get(group_id).map(|g| g.state())
    }

    /// Current generation of a group.
    pub fn generation(&self, group_id: &str) -> Option<i32> {
        self.groups.get(group_id).map(|g| g.generation_id())
    }

    /// Leader of a group's current generation.
    pub fn leader(&self, group_id: &str) -> Option<String> {
        self.groups.get(group_id).and_then(|g| g.leader_id().map(str::to_string))
    }

    /// Member ids of a group, sorted.
    pub fn members(&self, group_id: &str) -> Vec<String> {
        let mut ids: Vec<String> = self
            .groups
            .get(group_id)
            .map(|g| g.members().map(|m| m.member_id.clone()).collect())
            .unwrap_or_default();
        ids.sort();
        ids
    }

    /// Committed offset of a partition for a group.
    pub fn committed_offset(&self, group_id: &str, partition: &TopicPartition) -> Option<i64> {
        self.offsets.get(group_id, partition).map(|c| c.offset)
    }

    /// The committed offsets store (read only).
    pub fn offsets(&self) -> &OffsetStore {
        &self.offsets
    }

    /// The committed offsets store, e.g. to preload offsets that outlived a previous
    /// coordinator before this one serves requests.
    pub fn offsets_mut(&mut self) -> &mut OffsetStore {
        &mut self.offsets
    }

    /// Sets the suffix of the next generated member id, so a coordinator that replaces another
    /// (failover, restart) does not hand out ids the old one used.
    pub fn set_next_member_seq(&mut self, next: u64) {
        self.next_member_seq = next;
    }

    /// Unloads every group (the coordinator moves away or shuts down): parked JoinGroup and
    /// SyncGroup requests are answered NOT_COORDINATOR, timers stop and the groups become Dead
    /// and are forgotten. Committed offsets stay in [`Self::offsets`].
    pub fn unload_all(&mut self) {
        let groups = std::mem::take(&mut self.groups);
        for (_, mut g) in groups {
            g.unload(&mut self.fx);
        }
    }
}

/// Generates the next member id: `{client_id}-{n}` (or `{group_instance_id}-{n}` for a static
/// member, as Kafka does), with `n` counting up per coordinator (`seq`).
pub(crate) fn generate_member_id(
    seq: &mut u64,
    client_id: &str,
    group_instance_id: Option<&str>,
) -> String {
    let prefix = match group_instance_id {
        Some(i) => i,
        None if client_id.is_empty() => "member",
        None => client_id,
    };
    let id = format!("{prefix}-{seq}");
    *seq += 1;
    id
}
