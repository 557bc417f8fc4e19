//! The group coordinator core: owns every group on this broker, its offsets and its timers.
//!
//! [`GroupCoordinator`] is sans-IO: the driver hands it decoded requests with the current
//! simulated time, asks [`GroupCoordinator::poll_timeout`] when it next has work, calls
//! [`GroupCoordinator::handle_timeout`] then, and drains responses and history events with
//! [`GroupCoordinator::poll_output`]. JoinGroup and SyncGroup answers may come much later than
//! their request (when the rebalance reaches the right phase); the driver keeps the connection
//! waiting for that request id.
//!
//! This file is the core: the groups, the offsets cache, the timer queue, the offsets
//! partitions it owns and the appends under way. The Kafka-facing half of the contract,
//! [`GroupCoordinator::handle_request`] and [`GroupCoordinator::poll_output`] (which encodes the
//! queued answers), lives in `api/mod.rs`, above this file, with one module per API.
//!
//! # Offsets partitions, loading and the offsets log
//! Groups live in the partitions of the offsets topic (`partitionFor(group)`). A coordinator
//! built with [`GroupCoordinator::new`] owns every partition from the start (one broker, tests).
//! One built with [`GroupCoordinator::with_offsets_log`] owns only the partitions it is told to
//! load ([`GroupCoordinator::load_partition`]): while one loads, its groups' requests get Kafka's
//! loading answers (COORDINATOR_LOAD_IN_PROGRESS for JoinGroup, OffsetCommit, OffsetFetch,
//! LeaveGroup and DescribeGroups; REBALANCE_IN_PROGRESS for SyncGroup; NONE for Heartbeat); once
//! loaded, the cache is rebuilt from the offsets log. A group of a partition it does not own
//! gets NOT_COORDINATOR. [`GroupCoordinator::unload_partition`] gives a partition up.
//!
//! Commits and the leader's assignment are appended to the offsets log and take effect when the
//! append completes (`offsets_append_delay_ms` later, a timer): only then is the commit cached,
//! recorded (OffsetCommitAccepted, with the instant it was validated) and acknowledged, and the
//! group moved to Stable. A commit is validated once, when its request arrives, as in Kafka.

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::TopicName;

use crate::consumer_group::timers::MemberTimer;
use crate::consumer_group::ConsumerGroup;
use crate::effects::Effects;
use crate::event::MemberAssignment;
use crate::group::Group;
use crate::offsets::{CommittedOffset, OffsetStore};
use crate::offsets_log::{self, OffsetsLog, OffsetsRecord, SharedOffsetsLog};
use crate::placement::group_partition;
use crate::timers::TimerKey;
use crate::topics::TopicsImage;
use crate::{
    probes, CoordinatorConfig, CoordinatorEvent, GroupState, Millis, RequestId, TopicPartition,
};

// The output type lives with the effects queue; this path stays for code that imports it here.
pub use crate::effects::CoordinatorOutput;

/// Whether an offsets partition is being loaded or is served, and the leader epoch it was
/// taken over at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PartitionLoad {
    /// Loading until the load timer fires: requests get the loading answers.
    Loading { epoch: i32 },
    /// Loaded and served.
    Loaded { epoch: i32 },
}

impl PartitionLoad {
    /// The leader epoch the partition was taken over at.
    pub fn epoch(self) -> i32 {
        match self {
            PartitionLoad::Loading { epoch } | PartitionLoad::Loaded { epoch } => epoch,
        }
    }
}

/// Whether this coordinator can answer for a group now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum GroupStatus {
    /// Its partition is loaded here.
    Ready,
    /// Its partition is loading here.
    Loading,
    /// Its partition is not owned here.
    NotOwned,
}

impl GroupStatus {
    /// The per-group error of a batched request (DescribeGroups, OffsetFetch v8+):
    /// COORDINATOR_LOAD_IN_PROGRESS while the group's partition loads, NOT_COORDINATOR when it
    /// is not owned here, none when the group can be served.
    pub(crate) fn batched_error(self) -> Option<ResponseError> {
        match self {
            GroupStatus::Ready => None,
            GroupStatus::Loading => Some(ResponseError::CoordinatorLoadInProgress),
            GroupStatus::NotOwned => Some(ResponseError::NotCoordinator),
        }
    }
}

/// What to do when an append to the offsets log completes.
#[derive(Clone, Debug)]
pub(crate) enum AppendDone {
    /// Nothing waits for it.
    Nothing,
    /// An OffsetCommit: cache and record the accepted partitions, then answer.
    Commit(PendingCommit),
    /// The leader's SyncGroup: store the assignment and move to Stable if the generation is
    /// still the one being completed.
    Assignment { group: String, generation: i32, assignment: BTreeMap<String, Bytes> },
    /// A consumer group's change: answer the ConsumerGroupHeartbeat that made it (Kafka answers
    /// once the records are committed). Failing, it is answered NOT_COORDINATOR.
    Heartbeat { id: RequestId, response: kafka_protocol::messages::ConsumerGroupHeartbeatResponse },
    /// A classic JoinGroup served by a consumer group: start the member's timers and answer
    /// (Kafka answers once the records are committed). Failing, it is answered NOT_COORDINATOR.
    ClassicJoin {
        parked: crate::answers::Parked,
        group: String,
        session_timeout_ms: i32,
        rebalance_timeout_ms: i32,
        result: crate::answers::JoinResult,
    },
    /// Any other answer that waits for the records: `response` once they are written,
    /// `on_failure` if the partition moves first.
    Answer {
        id: RequestId,
        response: Box<kafka_protocol::messages::ResponseKind>,
        on_failure: Box<kafka_protocol::messages::ResponseKind>,
    },
}

/// An OffsetCommit waiting for its append.
#[derive(Clone, Debug)]
pub(crate) struct PendingCommit {
    pub id: RequestId,
    pub group: String,
    pub member_id: String,
    pub generation: i32,
    /// When the request was validated against the group.
    pub validated_at: Millis,
    /// Per topic, its partitions' outcomes.
    pub topics: Vec<(TopicName, Vec<CommitOutcome>)>,
}

/// One partition of an OffsetCommit: (index, error decided at validation, offset to store if
/// accepted).
pub(crate) type CommitOutcome = (i32, i16, Option<CommittedOffset>);

/// An append on its way to the offsets log.
#[derive(Clone, Debug)]
pub(crate) struct PendingAppend {
    partition: i32,
    records: Vec<OffsetsRecord>,
    then: AppendDone,
}

/// Sans-IO classic group coordinator.
#[derive(Debug)]
pub struct GroupCoordinator {
    pub(crate) config: CoordinatorConfig,
    /// Classic groups. Never a Dead one: a group becomes Dead only as it is unloaded, and it is
    /// taken out of the map first, so the request handlers need no Dead-group answer.
    pub(crate) groups: BTreeMap<String, Group>,
    /// KIP-848 consumer groups. A group id names a classic group or a consumer group, never both.
    pub(crate) consumer_groups: BTreeMap<String, ConsumerGroup>,
    /// The topics consumer groups are assigned from (refreshed by the broker).
    pub(crate) topics: TopicsImage,
    pub(crate) offsets: OffsetStore,
    pub(crate) fx: Effects,
    /// Suffix of the next generated member id (ids are `{client_id}-{n}`, never random).
    pub(crate) next_member_seq: u64,
    /// The offsets log this coordinator appends to and loads from.
    log: SharedOffsetsLog,
    /// Owned offsets partitions; `None` means every partition, loaded from the start.
    partitions: Option<BTreeMap<i32, PartitionLoad>>,
    /// Counts changes to `partitions`, so a driver can tell the set is as it last saw it.
    owned_changes: u64,
    /// Appends not yet complete, by sequence number.
    appends: BTreeMap<u64, PendingAppend>,
    next_append: u64,
    /// The group each single-group request not yet answered names, so an error answer can be
    /// counted with its group's state when it is drained (the `coordinator.answer` probes).
    pub(crate) asked: BTreeMap<RequestId, String>,
}

impl GroupCoordinator {
    /// A coordinator with no groups that owns every offsets partition (a private one-partition
    /// offsets log): the single-broker and unit-test setting.
    pub fn new(config: CoordinatorConfig) -> Self {
        let mut c = Self::with_offsets_log(config, OffsetsLog::new(1).shared());
        c.partitions = None;
        c
    }

    /// A coordinator appending to (and loading from) a shared offsets log. It owns no offsets
    /// partition until told to load one ([`Self::load_partition`]).
    pub fn with_offsets_log(config: CoordinatorConfig, log: SharedOffsetsLog) -> Self {
        Self {
            config,
            groups: BTreeMap::new(),
            consumer_groups: BTreeMap::new(),
            topics: TopicsImage::default(),
            offsets: OffsetStore::default(),
            fx: Effects::default(),
            next_member_seq: 1,
            log,
            partitions: Some(BTreeMap::new()),
            owned_changes: 0,
            appends: BTreeMap::new(),
            next_append: 0,
            asked: BTreeMap::new(),
        }
    }

    /// The offsets log this coordinator writes.
    pub fn offsets_log(&self) -> &SharedOffsetsLog {
        &self.log
    }

    /// The offsets partition holding `group_id` (Kafka's partitionFor).
    pub fn partition_for(&self, group_id: &str) -> i32 {
        group_partition(group_id, offsets_log::lock(&self.log).partition_count())
    }

    /// Owned offsets partitions with their load state, ascending; `None` when this coordinator
    /// owns every partition ([`Self::new`]).
    pub fn owned_partitions(&self) -> Option<impl Iterator<Item = (i32, PartitionLoad)> + '_> {
        self.partitions.as_ref().map(|m| m.iter().map(|(p, l)| (*p, *l)))
    }

    /// How many times the owned partitions or their load states changed: equal counts mean
    /// [`Self::owned_partitions`] is what it was.
    pub fn owned_changes(&self) -> u64 {
        self.owned_changes
    }

    pub(crate) fn group_status(&self, group_id: &str) -> GroupStatus {
        let Some(owned) = &self.partitions else { return GroupStatus::Ready };
        match owned.get(&self.partition_for(group_id)) {
            Some(PartitionLoad::Loaded { .. }) => GroupStatus::Ready,
            Some(PartitionLoad::Loading { .. }) => GroupStatus::Loading,
            None => GroupStatus::NotOwned,
        }
    }

    /// Whether any owned partition is still loading (ListGroups reports it).
    pub(crate) fn any_loading(&self) -> bool {
        self.partitions
            .as_ref()
            .is_some_and(|m| m.values().any(|l| matches!(l, PartitionLoad::Loading { .. })))
    }

    /// The configuration this coordinator runs with.
    pub fn config(&self) -> &CoordinatorConfig {
        &self.config
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
            self.flush_stores(now);
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
                    g.on_pending_member_timer(&member, now, fx);
                }
            }
            TimerKey::Append { seq } => {
                if let Some(append) = self.appends.remove(&seq) {
                    self.complete_append(now, append);
                }
            }
            TimerKey::Load { partition } => self.finish_load(now, partition),
            TimerKey::ConsumerSession { group, member } => {
                self.on_consumer_timer(now, &group, &member, MemberTimer::Session)
            }
            TimerKey::ConsumerRebalance { group, member } => {
                self.on_consumer_timer(now, &group, &member, MemberTimer::Rebalance)
            }
            TimerKey::ConsumerClassicJoin { group, member } => {
                self.on_consumer_timer(now, &group, &member, MemberTimer::ClassicJoin)
            }
            TimerKey::ConsumerClassicSync { group, member } => {
                self.on_consumer_timer(now, &group, &member, MemberTimer::ClassicSync)
            }
        }
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

    /// The suffix the next generated member id will use.
    pub fn next_member_seq(&self) -> u64 {
        self.next_member_seq
    }

    /// Unloads every group (the coordinator moves away or shuts down): parked JoinGroup and
    /// SyncGroup requests are answered NOT_COORDINATOR, timers stop and the groups become Dead
    /// and are forgotten, and appends not yet complete fail (their commits get
    /// NOT_COORDINATOR). Committed offsets stay in [`Self::offsets`].
    pub fn unload_all(&mut self) {
        let groups = std::mem::take(&mut self.groups);
        for (_, mut g) in groups {
            g.unload(&mut self.fx);
        }
        for id in self.consumer_groups.keys().cloned().collect::<Vec<_>>() {
            self.unload_consumer_group(&id);
        }
        let seqs: Vec<u64> = self.appends.keys().copied().collect();
        for seq in seqs {
            self.fail_append(seq);
        }
    }

    // ---- offsets partitions: load and unload -----------------------------------------------

    /// Takes over offsets partition `partition` at leader epoch `epoch`: its groups get the
    /// loading answers until `load_ms` from now, when the partition is replayed from the
    /// offsets log (at once when `load_ms` is 0). Taking over a partition already owned at the
    /// same epoch does nothing; at another epoch it is unloaded and loaded again.
    pub fn load_partition(&mut self, now: Millis, partition: i32, epoch: i32, load_ms: Millis) {
        let owned = self.partitions.get_or_insert_with(BTreeMap::new);
        match owned.get(&partition) {
            Some(l) if l.epoch() == epoch => return,
            Some(_) => self.unload_partition(partition),
            None => {}
        }
        let owned = self.partitions.get_or_insert_with(BTreeMap::new);
        owned.insert(partition, PartitionLoad::Loading { epoch });
        self.owned_changes += 1;
        if load_ms == 0 {
            self.finish_load(now, partition);
        } else {
            self.fx.timers.insert((now + load_ms, TimerKey::Load { partition }));
        }
    }

    /// Kafka's loadGroupsAndOffsets + onGroupLoaded: replays the partition, rebuilds its groups
    /// (Stable at the stored generation, or Empty with no members) and their offsets, and gives
    /// every loaded member a fresh session deadline.
    fn finish_load(&mut self, now: Millis, partition: i32) {
        let Some(owned) = self.partitions.as_mut() else { return };
        let Some(PartitionLoad::Loading { epoch }) = owned.get(&partition).copied() else {
            return;
        };
        owned.insert(partition, PartitionLoad::Loaded { epoch });
        self.owned_changes += 1;
        let loaded = offsets_log::lock(&self.log).load(partition);
        for (group, offsets) in &loaded.offsets {
            for (tp, offset) in offsets {
                self.offsets.commit(group, tp.clone(), offset.clone());
            }
        }
        for (id, value) in &loaded.consumer_groups {
            self.load_consumer_group(now, partition, value);
            self.groups.remove(id);
        }
        let mut ids: BTreeSet<&String> = loaded.groups.keys().collect();
        ids.extend(loaded.offsets.keys().filter(|g| !loaded.consumer_groups.contains_key(*g)));
        for id in ids {
            let group = match loaded.groups.get(id) {
                Some(snapshot) => Group::from_snapshot(snapshot),
                None => Group::new(id.clone()),
            };
            for m in group.members() {
                if let Some(seq) =
                    m.member_id.rsplit('-').next().and_then(|n| n.parse::<u64>().ok())
                {
                    self.next_member_seq = self.next_member_seq.max(seq + 1);
                }
            }
            let mut assignments: Vec<MemberAssignment> = group
                .members()
                .map(|m| MemberAssignment {
                    member_id: m.member_id.clone(),
                    partitions: groupsim_wire::consumer_protocol::decode_assignment(&m.assignment)
                        .map(|a| a.partitions)
                        .unwrap_or_default(),
                })
                .collect();
            assignments.sort_by(|a, b| a.member_id.cmp(&b.member_id));
            let mut members: Vec<String> = group.members().map(|m| m.member_id.clone()).collect();
            members.sort();
            self.fx.event(CoordinatorEvent::GroupLoaded {
                group: id.clone(),
                partition,
                state: group.state(),
                generation: group.generation_id(),
                protocol: group.protocol_name().map(str::to_string),
                leader: group.leader_id().map(str::to_string),
                members,
                assignments,
                offsets: loaded
                    .offsets
                    .get(id)
                    .map(|o| o.iter().map(|(tp, c)| (tp.clone(), c.offset)).collect())
                    .unwrap_or_default(),
            });
            // Kafka gives every loaded member a fresh session deadline, however long it was silent.
            // The log keeps no heartbeats: the group's last logged activity (its snapshot or a
            // commit) is the latest sign of life a loading coordinator can see.
            if let Some(last) = loaded.last_logged_at(id) {
                let silent = now.saturating_sub(last);
                if group.members().any(|m| silent > m.session_timeout_ms.max(0) as u64) {
                    probes::LOAD_WITH_STALE_MEMBERS.hit();
                }
            }
            let g = self.groups.entry(id.clone()).or_insert(group);
            let member_ids: Vec<String> = g.members().map(|m| m.member_id.clone()).collect();
            for m in member_ids {
                g.touch(&m, now, &mut self.fx);
            }
        }
    }

    /// Gives up offsets partition `partition` (Kafka's onGroupUnloaded for each of its groups):
    /// groups go Dead and are forgotten with their cached offsets, parked JoinGroup and
    /// SyncGroup requests get NOT_COORDINATOR, appends not yet complete fail (commits get
    /// NOT_COORDINATOR), and later requests get NOT_COORDINATOR. Nothing if not owned.
    pub fn unload_partition(&mut self, partition: i32) {
        let Some(owned) = self.partitions.as_mut() else { return };
        let Some(load) = owned.remove(&partition) else { return };
        self.owned_changes += 1;
        if let PartitionLoad::Loading { .. } = load {
            self.fx.timers.retain(|(_, k)| *k != TimerKey::Load { partition });
        }
        let seqs: Vec<u64> = self
            .appends
            .iter()
            .filter(|(_, a)| a.partition == partition)
            .map(|(s, _)| *s)
            .collect();
        for seq in seqs {
            self.fail_append(seq);
        }
        let ids: Vec<String> =
            self.groups.keys().filter(|g| self.partition_for(g) == partition).cloned().collect();
        for id in ids {
            if let Some(mut g) = self.groups.remove(&id) {
                g.unload(&mut self.fx);
                self.fx.event(CoordinatorEvent::GroupUnloaded { group: id.clone(), partition });
            }
            self.offsets.remove_group(&id);
        }
        let consumer: Vec<String> = self
            .consumer_groups
            .keys()
            .filter(|g| self.partition_for(g) == partition)
            .cloned()
            .collect();
        for id in consumer {
            self.unload_consumer_group(&id);
            self.fx.event(CoordinatorEvent::GroupUnloaded { group: id.clone(), partition });
            self.offsets.remove_group(&id);
        }
        // Offsets of groups without group state (simple consumers) go too.
        let orphans: Vec<String> = self
            .offsets
            .groups()
            .filter(|g| self.partition_for(g) == partition)
            .map(str::to_string)
            .collect();
        for id in orphans {
            self.offsets.remove_group(&id);
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

mod admin;
mod appends;
mod bugs;
mod consumer;
mod migration;
