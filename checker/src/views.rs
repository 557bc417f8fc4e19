//! Views over the history: what each group, partition and member looks like as the events are
//! read in order. The rules read these views; only [`Views::apply`] changes them. Each view is
//! built from what the history says, never from the coordinator's or a member's own state.

use std::collections::{BTreeMap, BTreeSet};

use groupsim_history::{
    ConsumerGroupEvent, ConsumerRemovalReason, CoordinatorEvent, Event, EventKind, Fault,
    GroupState, MemberEvent, RemovalReason, WorldEvent,
};
use groupsim_wire::{Millis, TopicPartition};

use super::consumer_view::ConsumerGroupView;
use super::fixed_hash::LookupMap;
use super::interned::{Interned, MemberKey, PartitionKey};
use super::member_views::MemberViews;
use super::metrics::Metrics;
use super::protocols::{Judged, Protocol, ProtocolHistory};
use super::ranges::RangeSet;
use super::spans::Belonging;

/// One group as its coordinators reported it.
#[derive(Default)]
pub(super) struct GroupView {
    /// Its state, as its current coordinator reported it.
    pub(super) state: Option<GroupState>,
    /// The current generation.
    pub(super) generation: i32,
    /// Every generation the group was in, in order: (when, generation, the event that started
    /// or loaded it).
    pub(super) generations: Vec<(Millis, i32, usize)>,
    /// Member ids in the current generation.
    pub(super) members: BTreeSet<String>,
    /// (member id, generation) -> the stretches in which the member belonged to that generation,
    /// so a commit can be judged by the group as it stood when the coordinator validated it.
    pub(super) belonged: BTreeMap<(String, i32), Vec<Belonging>>,
    /// generation -> partition -> (owner, AssignmentStored event)
    pub(super) owners: BTreeMap<i32, BTreeMap<TopicPartition, (String, usize)>>,
    /// Static members fenced by a newer member id with the same group.instance.id, by instance
    /// id: the old member id and whether it belonged to the current generation.
    pub(super) fenced_static: BTreeMap<String, (String, bool)>,
    /// Member id -> group.instance.id, for static members.
    pub(super) instance_of: BTreeMap<String, String>,
    /// The broker coordinating the group: the first to report it, then each broker that loads it.
    pub(super) coordinator: Option<i32>,
    /// The downgrade (event index) whose rebalance has not completed yet: Kafka starts it in
    /// memory only, after writing the converted group.
    pub(super) downgrade_rebalance: Option<usize>,
    /// The unload (event index) that lost a downgrade's rebalance, while the generation the
    /// downgrade wrote lasts: the `lost-downgrade-rebalance` hazard.
    pub(super) lost_rebalance: Option<usize>,
    /// The generation a downgrade wrote (starting a rebalance), while no later generation has
    /// been stored: a generation formed in memory and lost before its SyncGroup stored it
    /// leaves this one for the next coordinator to load.
    pub(super) downgrade_written: Option<i32>,
    /// The protocol of a non-empty group its coordinator loaded from the offsets log, and the
    /// load (event index), until a generation starts: until then the group's members support
    /// only that protocol.
    pub(super) loaded_protocol: Option<(String, usize)>,
    /// Static replacements within a generation: new member id -> (the fenced member id whose
    /// place and assignment it took, when).
    pub(super) took_over: BTreeMap<String, (String, Millis)>,
    /// A replaced static leader that joined the current generation without assigning it
    /// (KIP-814's SkipAssignment): its join (event index) and the partitions added to the
    /// topics before it that the generation's assignment lacks, until the next generation.
    pub(super) skip_leader: Option<(usize, BTreeSet<TopicPartition>)>,
}

impl GroupView {
    /// Whether `member_id` belonged to `generation` at some moment of millisecond `at`. The
    /// history stamps events in milliseconds, so within the millisecond of a change either side
    /// counts: a correct coordinator validated the commit at a moment it belonged.
    pub(super) fn belonged_at(&self, member_id: &str, generation: i32, at: Millis) -> bool {
        self.belonged
            .get(&(member_id.to_string(), generation))
            .is_some_and(|spans| spans.iter().any(|b| b.covers(at)))
    }

    /// Whether `member_id` held the place `owner` has in the current generation at `at`: `owner`
    /// took it over (a static replacement, perhaps one of several in a row) from `member_id` at
    /// or after `at`. Within the millisecond of the replacement either side counts, as for
    /// belonging.
    pub(super) fn held_place_of(&self, owner: &str, member_id: &str, at: Millis) -> bool {
        let mut current = owner;
        while let Some((old, when)) = self.took_over.get(current) {
            if old == member_id {
                return at <= *when;
            }
            current = old;
        }
        false
    }

    /// The event that last ended `member_id`'s belonging to `generation` before `at`, if any.
    pub(super) fn left_before(
        &self,
        member_id: &str,
        generation: i32,
        at: Millis,
    ) -> Option<usize> {
        let spans = self.belonged.get(&(member_id.to_string(), generation))?;
        spans.iter().rev().find_map(|b| b.until.filter(|(until, _)| *until < at).map(|(_, i)| i))
    }

    /// The generation the group was in at millisecond `at` (the last one begun by then) and the
    /// event that began it.
    pub(super) fn generation_at(&self, at: Millis) -> Option<(i32, usize)> {
        self.generations.iter().rev().find(|(t, _, _)| *t <= at).map(|(_, g, i)| (*g, *i))
    }

    /// `member_id` now belongs to the current generation.
    fn enter(&mut self, member_id: &str, at: Millis) {
        self.members.insert(member_id.to_string());
        let spans = self.belonged.entry((member_id.to_string(), self.generation)).or_default();
        if spans.last().is_none_or(|b| b.until.is_some()) {
            spans.push(Belonging { from: at, until: None });
        }
    }

    /// `member_id` no longer belongs to the current generation (event `idx`).
    fn leave(&mut self, member_id: &str, at: Millis, idx: usize) -> bool {
        let was_member = self.members.remove(member_id);
        if was_member {
            self.close(member_id, at, idx);
        }
        was_member
    }

    /// Ends `member_id`'s belonging to the current generation at `at` (event `idx`).
    pub(super) fn close(&mut self, member_id: &str, at: Millis, idx: usize) {
        let key = (member_id.to_string(), self.generation);
        if let Some(b) = self.belonged.get_mut(&key).and_then(|spans| spans.last_mut()) {
            b.until.get_or_insert((at, idx));
        }
    }

    /// A coordinator (`broker`) holds the group as `state` at `generation` with `members` and
    /// their stored assignments (a load, or a downgrade from a consumer group; event `idx`).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn take_over<'a>(
        &mut self,
        at: Millis,
        idx: usize,
        broker: i32,
        state: GroupState,
        generation: i32,
        members: &[String],
        stored: impl Iterator<Item = (&'a String, &'a Vec<TopicPartition>)>,
    ) {
        self.coordinator = Some(broker);
        self.state = Some(state);
        self.begin_generation(at, idx, generation, members);
        let stored: Vec<_> = stored.collect();
        if !stored.is_empty() {
            let owners = stored
                .into_iter()
                .flat_map(|(m, ps)| ps.iter().map(move |tp| (tp.clone(), (m.clone(), idx))))
                .collect();
            self.owners.insert(generation, owners);
        }
    }

    /// The group is now in `generation` with `members` (a generation started or was loaded,
    /// event `idx`): everyone leaves the previous one.
    fn begin_generation(&mut self, at: Millis, idx: usize, generation: i32, members: &[String]) {
        self.downgrade_rebalance = None;
        self.lost_rebalance = None;
        self.loaded_protocol = None;
        self.skip_leader = None;
        if members.is_empty() {
            // Kafka writes an Empty generation.
            self.downgrade_written = None;
        }
        for m in std::mem::take(&mut self.members) {
            self.close(&m, at, idx);
        }
        self.generation = generation;
        self.generations.push((at, generation, idx));
        for m in members {
            self.enter(m, at);
        }
    }
}

/// One partition: its commits, what they covered, what was processed, its log end.
#[derive(Default)]
pub(super) struct PartitionView {
    /// The last accepted commit: (offset, event index).
    pub(super) committed: Option<(i64, usize)>,
    /// Accepted commits in order: (event index, offset).
    pub(super) accepted: Vec<(usize, i64)>,
    /// Commits acknowledged to members, in order: (event index, offset).
    pub(super) acked: Vec<(usize, i64)>,
    /// The same, with the member told: (event index, offset, member name).
    pub(super) acked_by: Vec<(usize, i64, String)>,
    /// Offsets covered by accepted commits, with the covering commit for evidence.
    pub(super) covered: Vec<(i64, i64, usize)>,
    /// The offsets of `covered`, merged.
    pub(super) covered_set: RangeSet,
    /// Offsets processed by anyone, in any generation.
    pub(super) processed_any: RangeSet,
    /// The log end when the producer stopped.
    pub(super) log_end: Option<i64>,
}

/// A commit the coordinator accepted, as the commit rules read it.
pub(super) struct AcceptedCommit<'a> {
    /// The OffsetCommitAccepted event.
    pub(super) idx: usize,
    pub(super) at: Millis,
    pub(super) group: &'a str,
    pub(super) member_id: &'a str,
    pub(super) generation: i32,
    pub(super) tp: &'a TopicPartition,
    pub(super) offset: i64,
    /// When the coordinator validated it (it is recorded when its append completed, later).
    pub(super) validated_at: Millis,
}

impl<'a> AcceptedCommit<'a> {
    /// The commit `event` (number `idx`, at `at`) accepted, if it is an OffsetCommitAccepted.
    pub(super) fn of(idx: usize, at: Millis, event: &'a CoordinatorEvent) -> Option<Self> {
        let CoordinatorEvent::OffsetCommitAccepted {
            group,
            member_id,
            generation,
            partition,
            offset,
            validated_at_ms,
        } = event
        else {
            return None;
        };
        Some(Self {
            idx,
            at,
            group,
            member_id,
            generation: *generation,
            tp: partition,
            offset: *offset,
            validated_at: *validated_at_ms,
        })
    }

    /// Generation -1 commits on an Empty group are admin / simple-consumer commits: they are
    /// not made by a group member, so ownership rules do not apply.
    pub(super) fn by_member(&self) -> bool {
        self.generation >= 0
    }
}

/// One tenure in time: (tenure id, from, until), `until` being `None` while it lasts.
pub(super) type TenureSpan = (usize, Millis, Option<Millis>);

/// How a member held a partition when it processed records of it or committed it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) enum Holding {
    /// In a tenure of continuous ownership (its id is the index of the assignment that began it).
    Tenure(usize),
    /// With no assignment of its own on record, in this generation.
    Generation(i32),
}

/// Every view, as of the events read so far.
#[derive(Default)]
pub(super) struct Views {
    pub(super) groups: BTreeMap<String, GroupView>,
    pub(super) partitions: BTreeMap<TopicPartition, PartitionView>,
    /// (member id, tenure, partition) -> offsets processed while the member held the partition
    /// in that tenure. A tenure is one stretch of continuous ownership: it begins with the
    /// assignment that gave the member the partition (the tenure's id is that event's index)
    /// and lasts, across generations, until the member revokes or loses it. A cooperative
    /// member keeps a partition through a rebalance and commits, under the new generation, what
    /// it processed under the old one: correct Kafka behaviour, so commits are judged against
    /// the tenure, not the generation.
    /// A member that never received an assignment for the partition (a static member that took
    /// over its predecessor's) holds it by generation.
    /// Looked up only (hence hashed).
    pub(super) processed: LookupMap<(MemberKey, Holding, PartitionKey), (RangeSet, usize)>,
    /// (member id, partition) -> the tenure in which the member holds the partition now.
    /// Looked up only (hence hashed).
    pub(super) tenure_now: LookupMap<(MemberKey, PartitionKey), usize>,
    /// (member id, partition) -> every tenure in which the member held the partition. Commits
    /// are judged by what the member held when the coordinator validated them.
    pub(super) tenures: BTreeMap<(MemberKey, PartitionKey), Vec<TenureSpan>>,
    /// (member id, generation, partition) -> the tenure that generation's assignment was part of.
    pub(super) tenure_of: BTreeMap<(MemberKey, i32, PartitionKey), usize>,
    /// (member id, generation, partition, offset) of the last commit a member sent with those
    /// values -> the tenure in which it held the partition when it sent it (absent: it did not
    /// hold it). A commit sent while the member holds the partition may be validated after it
    /// gave the partition up (a revoke callback's commit still on the wire when the member's
    /// connection dropped: it takes the commit as failed and revokes, the coordinator still
    /// reads and accepts it); what it covers was processed while held.
    pub(super) sent_in_tenure: BTreeMap<(MemberKey, i32, PartitionKey, i64), usize>,
    /// The numbers the maps of holdings above key member ids and partitions by.
    pub(super) ids: Interned,
    /// Member processes by stable name.
    pub(super) members: MemberViews,
    /// Topics and their partition counts.
    pub(super) topics: BTreeMap<String, i32>,
    /// KIP-848 consumer groups by group id, as the coordinators' events describe them.
    pub(super) consumer_groups: BTreeMap<String, ConsumerGroupView>,
    /// Groups that converted between the protocols: which one they spoke when.
    pub(super) protocols: BTreeMap<String, ProtocolHistory>,
    /// When the liveness phase ends, once it has begun.
    pub(super) liveness_deadline: Option<Millis>,
    /// When the liveness phase began (the faults healed), and the stall bound it recorded.
    pub(super) healed_at: Option<Millis>,
    pub(super) stall_ms: Option<Millis>,
    /// Member id -> when (and by which event) its path to its coordinator last worked for its
    /// membership, restarting its session there: a generation started with it, or a heartbeat
    /// moved its member epoch, and it got the answer (it knows to heartbeat), or a classic group's
    /// coordinator validated a commit of it (a KIP-848 coordinator does not count a commit as a
    /// heartbeat). A generation started is not
    /// contact by itself: the join it completes may have been read long before, and its answer
    /// lost with the connection.
    pub(super) contact: BTreeMap<String, (Millis, usize)>,
    /// (member id, generation or member epoch) -> when (and by which event) the coordinator
    /// started that generation with it, or moved it to that epoch.
    started_with: BTreeMap<(String, i32), (Millis, usize)>,
    /// The consumer-group member a coordinator last replaced with a static member of the same
    /// instance id (a downgrade right after it is the replacement's, which starts no rebalance).
    pub(super) replaced_member: Option<String>,
    /// Groups upgraded to the consumer protocol with partitions no converted member held, by
    /// group id: the upgrade (event index) and those partitions, until a target assignment or a
    /// classic generation covers them again (the `static-upgrade-orphans` hazard).
    pub(super) orphaned: BTreeMap<String, (usize, BTreeSet<TopicPartition>)>,
    /// Partitions added to the topics while a consumer group held classic-protocol members
    /// only, by group id: the growth (event index) and those partitions, until a target
    /// assignment covers them (the `classic-members-miss-new-partitions` hazard).
    pub(super) unseen_growth: BTreeMap<String, (usize, BTreeSet<TopicPartition>)>,
    /// Every partition a topic grew by during the run.
    pub(super) grown: BTreeSet<TopicPartition>,
    /// The time of the last event read.
    pub(super) end_ms: Millis,
}

impl Views {
    /// Member id `member_id`'s path to its coordinator worked at `at` (event `idx`).
    fn contacted(&mut self, member_id: &str, at: Millis, idx: usize) {
        let seen = self.contact.entry(member_id.to_string()).or_insert((0, idx));
        if at >= seen.0 {
            *seen = (at, idx);
        }
    }

    /// The event that gave member `name` `partition` for the position it starts in
    /// `generation`. A consumer-protocol member's epoch may move on between its assignment and
    /// the answer to its OffsetFetch: its assignment is the one that began its holding.
    pub(super) fn assignment_of(
        &self,
        name: &str,
        generation: i32,
        partition: &TopicPartition,
    ) -> Option<usize> {
        let member = self.members.get(name)?;
        match member.assigned_at.get(&generation) {
            Some(&idx) => Some(idx),
            None if member.consumer => {
                let key = self.ids.find(member.member_id.as_deref()?, partition)?;
                self.tenure_now.get(&key).copied()
            }
            None => None,
        }
    }

    /// The group's view, or an empty one if no event named it yet.
    pub(super) fn group(&self, group: &str) -> &GroupView {
        static EMPTY: std::sync::OnceLock<GroupView> = std::sync::OnceLock::new();
        self.groups.get(group).unwrap_or_else(|| EMPTY.get_or_init(GroupView::default))
    }

    /// Whether member `name`'s consumer group had removed `member_id` before `at` (a session
    /// expired, the member was fenced): what the member does as that id from then on is a
    /// zombie's, until it hears so. A consumer-protocol member the coordinator removed stays
    /// removed when the group becomes a classic group after (a paused member reads answers
    /// the group gave it before both).
    pub(super) fn removed_from_consumer_group(
        &self,
        name: &str,
        member_id: &str,
        at: Millis,
    ) -> bool {
        let Some(m) = self.members.get(name) else { return false };
        match self.consumer_group(&m.group) {
            Some(cg) => cg.left_before(member_id, at).is_some(),
            None => {
                m.consumer
                    && self
                        .consumer_groups
                        .get(&m.group)
                        .is_some_and(|cg| cg.removed_before(member_id, at))
            }
        }
    }

    /// `group` as a KIP-848 consumer group, when it is one now: a group that converted between
    /// the protocols is one while its last conversion (or load) made it one; any other group
    /// when it has a consumer view and no classic generation.
    pub(super) fn consumer_group(&self, group: &str) -> Option<&ConsumerGroupView> {
        let cg = self.consumer_groups.get(group)?;
        if let Some(h) = self.protocols.get(group) {
            return (h.current() == Some(Protocol::Consumer)).then_some(cg);
        }
        self.groups.get(group).is_none_or(|g| g.generations.is_empty()).then_some(cg)
    }

    /// How a commit is judged, and the consumer group it is judged in by member epochs. A group
    /// that converted between the protocols is judged by the protocol it spoke when the
    /// coordinator validated the commit (`protocols.rs`). Any other group by member epochs when
    /// it has a KIP-848 view that knows the committer, or the committer never belonged to a
    /// classic generation of it.
    pub(super) fn commit_judged(
        &self,
        c: &AcceptedCommit<'_>,
    ) -> (Judged, Option<&ConsumerGroupView>) {
        let Some(cg) = self.consumer_groups.get(c.group) else { return (Judged::Classic, None) };
        if let Some(h) = self.protocols.get(c.group) {
            return (h.judged_at(c.validated_at), Some(cg));
        }
        let classic = || self.group(c.group).belonged.keys().any(|(m, _)| m == c.member_id);
        if cg.known.contains(c.member_id) || !classic() {
            (Judged::Consumer, Some(cg))
        } else {
            (Judged::Classic, None)
        }
    }

    /// The partition's view, or an empty one if no event named it yet.
    pub(super) fn partition(&self, tp: &TopicPartition) -> &PartitionView {
        static EMPTY: std::sync::OnceLock<PartitionView> = std::sync::OnceLock::new();
        self.partitions.get(tp).unwrap_or_else(|| EMPTY.get_or_init(PartitionView::default))
    }

    /// Reads event `idx` into the views and the run's figures.
    pub(super) fn apply(&mut self, idx: usize, event: &Event, metrics: &mut Metrics) {
        let at = event.at_ms;
        self.end_ms = at;
        match &event.kind {
            EventKind::Coordinator { broker, event } => {
                self.coordinator(idx, at, *broker, event, metrics)
            }
            EventKind::Member { member, event } => self.member(idx, at, member, event, metrics),
            EventKind::World(w) => self.world(idx, at, w, metrics),
        }
    }

    fn world(&mut self, idx: usize, at: Millis, w: &WorldEvent, metrics: &mut Metrics) {
        match w {
            WorldEvent::TopicCreated { topic, partitions } => {
                self.topics.insert(topic.clone(), *partitions);
                for p in 0..*partitions {
                    self.partitions.entry(TopicPartition::new(topic.as_str(), p)).or_default();
                }
            }
            WorldEvent::Produced { count, .. } => metrics.stats.records_produced += *count as u64,
            WorldEvent::MemberStarted { member, group, .. } => {
                let m = self.members.entry(member);
                m.group = group.clone();
                m.live = true;
                m.leave_requested = false;
                m.progress.clear();
                m.pending.clear();
                m.started_at = at;
            }
            WorldEvent::FaultInjected {
                fault: Fault::MemberPause { member, duration_ms },
                applied: true,
            } => {
                let m = self.members.entry(member);
                m.paused_until = m.paused_until.max(at + duration_ms);
            }
            WorldEvent::MemberLeaveRequested { member }
            | WorldEvent::FaultInjected {
                fault: Fault::MemberLeave { member, .. } | Fault::MemberUpgrade { member, .. },
                applied: true,
            } => {
                self.members.entry(member).leave_requested = true;
            }
            WorldEvent::MemberStopped { member } => {
                let owned: Vec<TopicPartition> = match self.members.get_mut(member) {
                    Some(m) => {
                        m.live = false;
                        m.progress.clear();
                        m.pending.clear();
                        std::mem::take(&mut m.owned).into_iter().collect()
                    }
                    None => Vec::new(),
                };
                for tp in owned {
                    metrics.release(&tp, at);
                }
            }
            WorldEvent::ProducerStopped { log_end_offsets } => {
                for (tp, end) in log_end_offsets {
                    self.partitions.entry(tp.clone()).or_default().log_end = Some(*end);
                }
            }
            WorldEvent::LivenessPhase { deadline_ms, stall_ms } => {
                self.liveness_deadline = Some(*deadline_ms);
                self.healed_at = Some(at);
                self.stall_ms = *stall_ms;
            }
            WorldEvent::PartitionsAdded { topic, partitions } => {
                let before = self.topics.get(topic).copied().unwrap_or(0);
                let added: BTreeSet<TopicPartition> =
                    (before..*partitions).map(|p| TopicPartition::new(topic.as_str(), p)).collect();
                let groups: Vec<String> = (self.consumer_groups.iter())
                    .filter(|(g, cg)| cg.all_classic() && self.consumer_group(g).is_some())
                    .map(|(g, _)| g.clone())
                    .collect();
                for g in groups {
                    let entry = self.unseen_growth.entry(g).or_insert((idx, BTreeSet::new()));
                    entry.1.extend(added.iter().cloned());
                }
                self.grown.extend(added);
                self.topics.insert(topic.clone(), *partitions);
                for p in 0..*partitions {
                    self.partitions.entry(TopicPartition::new(topic.as_str(), p)).or_default();
                }
            }
            WorldEvent::RunStarted { .. }
            | WorldEvent::ObserverStarted { .. }
            | WorldEvent::MemberExited { .. }
            | WorldEvent::CloseTimedOut { .. }
            | WorldEvent::SwarmChosen { .. }
            | WorldEvent::TriggerFired { .. }
            | WorldEvent::FaultInjected { .. }
            | WorldEvent::ServeFault { .. }
            | WorldEvent::FaultHealed { .. }
            | WorldEvent::RequestProcessedLate { .. }
            | WorldEvent::BrokerCrashed { .. }
            | WorldEvent::BrokerFailureDetected { .. }
            | WorldEvent::BrokerRestarted { .. }
            | WorldEvent::CoordinatorMoved { .. }
            | WorldEvent::PartitionLeaderMoved { .. }
            | WorldEvent::LivenessHeld { .. }
            | WorldEvent::RunEnded => {}
        }
    }

    fn member(
        &mut self,
        idx: usize,
        at: Millis,
        name: &str,
        event: &MemberEvent,
        metrics: &mut Metrics,
    ) {
        match event {
            MemberEvent::Joined { member_id, generation, is_leader, .. } => {
                // A static replacement joined as leader of the generation it took its place in
                // (KIP-814): it assigns nothing and watches the counts from now on.
                for g in self.groups.values_mut() {
                    let Some(owners) = g.owners.get(generation) else { continue };
                    if !*is_leader || g.generation != *generation {
                        continue;
                    }
                    if !g.took_over.contains_key(member_id) {
                        continue;
                    }
                    let missing: BTreeSet<TopicPartition> =
                        self.grown.iter().filter(|tp| !owners.contains_key(*tp)).cloned().collect();
                    g.skip_leader = Some((idx, missing));
                }
                let key = (member_id.clone(), *generation);
                if let Some((started, by)) = self.started_with.remove(&key) {
                    self.contacted(member_id, started, by);
                }
                let m = self.members.entry(name);
                m.member_id = Some(member_id.clone());
                m.id_at = at;
                m.generation = *generation;
                m.join_refused = None;
            }
            MemberEvent::JoinRefused { error, protocols } => {
                let m = self.members.entry(name);
                m.join_refused = Some((error.clone(), protocols.clone(), idx));
            }
            MemberEvent::Assigned { member_id, generation, partitions } => {
                let m = self.ids.member(member_id);
                for tp in partitions {
                    let p = self.ids.partition(tp);
                    if !self.tenure_now.contains_key(&(m, p)) {
                        // Generations only grow within one membership.
                        self.forget_tenures_from(m, *generation, p);
                        self.tenure_now.insert((m, p), idx);
                        self.tenures.entry((m, p)).or_default().push((idx, at, None));
                    }
                    let tenure = self.tenure_now[&(m, p)];
                    self.tenure_of.insert((m, *generation, p), tenure);
                }
                let m = self.members.entry(name);
                m.member_id = Some(member_id.clone());
                m.id_at = at;
                m.generation = *generation;
                m.assigned_at.insert(*generation, idx);
                for tp in partitions {
                    m.pending.remove(tp);
                }
                let newly: Vec<TopicPartition> =
                    partitions.iter().filter(|tp| m.owned.insert((*tp).clone())).cloned().collect();
                for tp in newly {
                    m.progress.insert(tp.clone(), at);
                    metrics.acquire(&tp, at);
                }
            }
            MemberEvent::Revoked { member_id, partitions, .. }
            | MemberEvent::Lost { member_id, partitions, .. } => {
                for tp in partitions {
                    let Some(key) = self.ids.find(member_id, tp) else { continue };
                    if self.tenure_now.remove(&key).is_some() {
                        if let Some(last) = self.tenures.get_mut(&key).and_then(|t| t.last_mut()) {
                            last.2.get_or_insert(at);
                        }
                    }
                }
                let gone: Vec<TopicPartition> = match self.members.get_mut(name) {
                    Some(m) => {
                        for tp in partitions {
                            m.progress.remove(tp);
                        }
                        partitions.iter().filter(|tp| m.owned.remove(*tp)).cloned().collect()
                    }
                    None => Vec::new(),
                };
                for tp in gone {
                    metrics.release(&tp, at);
                }
            }
            MemberEvent::RecordsProcessed {
                member_id,
                generation,
                partition,
                first_offset,
                last_offset,
                ..
            } => {
                if let Some(since) =
                    self.members.get_mut(name).and_then(|m| m.progress.get_mut(partition))
                {
                    *since = at;
                }
                let (start, end) = (*first_offset, *last_offset + 1);
                let n = (end - start).max(0) as u64;
                metrics.stats.records_processed += n;
                // One lookup (a partition key's copy shares its name).
                let pv = self.partitions.entry(partition.clone()).or_default();
                metrics.stats.records_reprocessed += pv.processed_any.overlap(start, end) as u64;
                pv.processed_any.insert(start, end);
                let (m, p) = (self.ids.member(member_id), self.ids.partition(partition));
                let holding = self.holding(m, *generation, p);
                let entry = self
                    .processed
                    .get_or_insert_with((m, holding, p), || (RangeSet::default(), idx));
                entry.0.insert(start, end);
                entry.1 = idx;
            }
            MemberEvent::CommitSent { member_id, generation, partition, offset } => {
                let (m, p) = (self.ids.member(member_id), self.ids.partition(partition));
                let key = (m, *generation, p, *offset);
                match self.tenure_now.get(&(m, p)) {
                    Some(&tenure) => self.sent_in_tenure.insert(key, tenure),
                    None => self.sent_in_tenure.remove(&key),
                };
            }
            MemberEvent::AssignmentReceived { partitions, .. } => {
                let m = self.members.entry(name);
                let target: BTreeSet<&TopicPartition> = partitions.iter().collect();
                m.pending.retain(|tp, _| target.contains(tp));
                for tp in partitions.iter().filter(|tp| !m.owned.contains(*tp)) {
                    m.pending.entry(tp.clone()).or_insert(at);
                }
            }
            MemberEvent::GenerationReset { reset_member_id: true, .. } => {
                // The process gave its member id up: it holds none until its next join answer.
                let m = self.members.entry(name);
                m.pending.clear();
                m.member_id = None;
            }
            MemberEvent::Fenced { .. }
            | MemberEvent::GenerationReset { .. }
            | MemberEvent::Left { .. }
            | MemberEvent::Fatal { .. } => {
                self.members.entry(name).pending.clear();
            }
            MemberEvent::MemberEpochChanged { member_id, epoch, .. } => {
                if let Some((moved, by)) = self.started_with.remove(&(member_id.clone(), *epoch)) {
                    self.contacted(member_id, moved, by);
                }
                let m = self.members.entry(name);
                m.consumer = true;
                m.member_id = Some(member_id.clone());
                m.id_at = at;
                m.generation = *epoch;
            }
            MemberEvent::CommitAcked { partition, offset, .. } => {
                let pv = self.partitions.entry(partition.clone()).or_default();
                pv.acked.push((idx, *offset));
                pv.acked_by.push((idx, *offset, name.to_string()));
            }
            _ => {}
        }
    }

    fn coordinator(
        &mut self,
        idx: usize,
        at: Millis,
        broker: i32,
        event: &CoordinatorEvent,
        metrics: &mut Metrics,
    ) {
        match event {
            CoordinatorEvent::GroupStateChanged { group, to, .. } => {
                let g = self.groups.entry(group.clone()).or_default();
                // The group's state is its current coordinator's. Within one simulation step the
                // old coordinator's unload (-> Dead) may be recorded after the new coordinator
                // loaded the group (or created it afresh), so a Dead transition from a broker
                // that no longer coordinates the group is not the group's state. Any other
                // transition comes from the coordinator.
                let stale_unload =
                    *to == GroupState::Dead && g.coordinator.is_some_and(|c| c != broker);
                if !stale_unload {
                    g.coordinator = Some(broker);
                    g.state = Some(*to);
                }
                if *to == GroupState::CompletingRebalance {
                    g.downgrade_rebalance = None;
                }
            }
            CoordinatorEvent::MemberAdded { group, member_id, group_instance_id, .. } => {
                let g = self.groups.entry(group.clone()).or_default();
                let Some(instance) = group_instance_id else { return };
                g.instance_of.insert(member_id.clone(), instance.clone());
                // Static membership: a member id that replaces a fenced one with the same
                // group.instance.id takes over its place in the generation and its assignment
                // (Kafka replaces the member without a rebalance).
                if let Some((old, in_generation)) = g.fenced_static.remove(instance) {
                    if in_generation {
                        g.took_over.insert(member_id.clone(), (old.clone(), at));
                        g.enter(member_id, at);
                        let generation = g.generation;
                        if let Some(owners) = g.owners.get_mut(&generation) {
                            for (owner, _) in owners.values_mut() {
                                if *owner == old {
                                    *owner = member_id.clone();
                                }
                            }
                        }
                    }
                }
            }
            CoordinatorEvent::MemberRemoved { group, member_id, reason } => {
                let g = self.groups.entry(group.clone()).or_default();
                let was_member = g.leave(member_id, at, idx);
                if *reason == RemovalReason::Fenced {
                    if let Some(instance) = g.instance_of.get(member_id).cloned() {
                        g.fenced_static.insert(instance, (member_id.clone(), was_member));
                    }
                }
            }
            CoordinatorEvent::GenerationStarted { group, generation, members, .. } => {
                self.back_to_classic(group, at, idx);
                metrics.stats.rebalances += 1;
                metrics.stats.last_generation_at_ms = Some(at);
                for m in members {
                    self.started_with.insert((m.clone(), *generation), (at, idx));
                }
                self.orphaned.remove(group);
                let g = self.groups.entry(group.clone()).or_default();
                g.begin_generation(at, idx, *generation, members);
            }
            CoordinatorEvent::AssignmentStored { group, generation, assignments } => {
                // The first member a partition is given to owns it; a second is a split
                // assignment (see the ownership rules).
                let mut owners: BTreeMap<TopicPartition, (String, usize)> = BTreeMap::new();
                for a in assignments {
                    for tp in &a.partitions {
                        owners.entry(tp.clone()).or_insert_with(|| (a.member_id.clone(), idx));
                    }
                }
                let g = self.groups.entry(group.clone()).or_default();
                g.owners.insert(*generation, owners);
                g.downgrade_written = None;
            }
            CoordinatorEvent::OffsetCommitAccepted {
                group, member_id, validated_at_ms, ..
            } => {
                metrics.stats.commits_accepted += 1;
                // A classic group's coordinator counts a member's accepted commit as a heartbeat;
                // a consumer group's does not (only its heartbeats renew a session there).
                if self.consumer_group(group).is_none() {
                    self.contacted(member_id, *validated_at_ms, idx);
                }
                if let Some(c) = AcceptedCommit::of(idx, at, event) {
                    self.accepted_commit(&c);
                }
            }
            CoordinatorEvent::OffsetCommitRejected { .. } => metrics.stats.commits_rejected += 1,
            // A coordinator took the group over from the offsets log: the group is what was last
            // stored, which may be an older generation than the last one started.
            CoordinatorEvent::GroupLoaded {
                group,
                state,
                generation,
                protocol,
                members,
                assignments,
                ..
            } => {
                self.back_to_classic(group, at, idx);
                let g = self.groups.entry(group.clone()).or_default();
                let stored = assignments.iter().map(|a| (&a.member_id, &a.partitions));
                // A load while a downgrade's rebalance is pending (its unload may be recorded
                // after it) loses that rebalance too.
                // So does a load of the generation a downgrade wrote, with nothing stored since:
                // the rebalances after it were lost with their coordinators.
                let written = g.downgrade_written.filter(|w| w == generation).map(|_| idx);
                let lost = g.lost_rebalance.or(g.downgrade_rebalance.map(|_| idx)).or(written);
                // A load of the generation the group was in keeps a leader that skipped the
                // assignment: it still watches counts that already include the growth.
                let skipped = g.skip_leader.take().filter(|_| g.generation == *generation);
                g.take_over(at, idx, broker, *state, *generation, members, stored);
                g.lost_rebalance = lost;
                g.skip_leader = skipped;
                if g.downgrade_written != Some(*generation) {
                    g.downgrade_written = None;
                }
                g.loaded_protocol = match protocol {
                    Some(p) if !members.is_empty() => Some((p.clone(), idx)),
                    _ => None,
                };
            }
            // A coordinator gave the group up: a downgrade's rebalance it had not completed is
            // lost with its memory (the offsets log holds the converted group only), and so is a
            // consumer group it never stored (see `ConsumerGroupView::apply`).
            CoordinatorEvent::GroupUnloaded { group, .. } => {
                let g = self.groups.entry(group.clone()).or_default();
                if g.downgrade_rebalance.take().is_some() {
                    g.lost_rebalance = Some(idx);
                }
                if let Some(cg) = self.consumer_groups.get_mut(group) {
                    cg.unload(broker);
                }
            }
            CoordinatorEvent::ConsumerGroup(e) => {
                if let ConsumerGroupEvent::TargetAssignmentComputed { group, .. } = e {
                    self.orphaned.remove(group);
                    self.unseen_growth.remove(group);
                    metrics.stats.rebalances += 1;
                    metrics.stats.last_generation_at_ms = Some(at);
                }
                if let ConsumerGroupEvent::MemberEpochChanged { member_id, to, .. } = e {
                    self.started_with.insert((member_id.clone(), *to), (at, idx));
                }
                // A static member of a consumer group keeps its instance id in the classic
                // group a downgrade makes of it (where a static replacement looks it up).
                if let ConsumerGroupEvent::MemberJoined {
                    group,
                    member_id,
                    group_instance_id: Some(instance),
                    ..
                } = e
                {
                    let g = self.groups.entry(group.clone()).or_default();
                    g.instance_of.insert(member_id.clone(), instance.clone());
                }
                if let ConsumerGroupEvent::MemberRemoved { member_id, reason, .. } = e {
                    let replaced = *reason == ConsumerRemovalReason::Replaced;
                    self.replaced_member = replaced.then(|| member_id.clone());
                }
                self.convert(idx, at, broker, e);
                let cg = self.consumer_groups.entry(e.group().to_string()).or_default();
                // The classic members an upgrade converts keep their instance ids (where a
                // static replacement later finds the target it inherits).
                if let ConsumerGroupEvent::GroupUpgraded { group, members, .. } = e {
                    if let Some(g) = self.groups.get(group) {
                        for m in members {
                            if let Some(instance) = g.instance_of.get(&m.member_id) {
                                cg.learn_instance(&m.member_id, instance);
                            }
                        }
                    }
                }
                cg.spoken_by(idx, at, broker, e);
                cg.apply(idx, at, e)
            }
        }
    }

    /// The partition's committed offset moves to the accepted commit, which covers the records
    /// between the previous committed offset and its own.
    fn accepted_commit(&mut self, c: &AcceptedCommit<'_>) {
        self.groups.entry(c.group.to_string()).or_default();
        let pv = self.partitions.entry(c.tp.clone()).or_default();
        let start = pv.committed.map_or(0, |(o, _)| o);
        if c.offset > start {
            pv.covered.push((start, c.offset, c.idx));
            pv.covered_set.insert(start, c.offset);
        }
        pv.committed = Some((c.offset, c.idx));
        pv.accepted.push((c.idx, c.offset));
    }
}
