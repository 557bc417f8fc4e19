//! Views over the history: what each group, partition and member looks like as the events are
//! read in order. The rules read these views; only [`Views::apply`] changes them. Each view is
//! built from what the history says, never from the coordinator's or a member's own state.

use std::collections::{BTreeMap, BTreeSet};

use groupsim_coordinator::{CoordinatorEvent, GroupState, RemovalReason};
use groupsim_member::MemberEvent;
use groupsim_wire::{Millis, TopicPartition};

use super::metrics::Metrics;
use super::ranges::RangeSet;
use crate::history::{Event, EventKind, WorldEvent};

/// One group as its coordinators reported it.
#[derive(Default)]
pub(super) struct GroupView {
    /// Its state, as its current coordinator reported it.
    pub(super) state: Option<GroupState>,
    /// The current generation and the event that started (or loaded) it.
    pub(super) generation: i32,
    pub(super) generation_event: Option<usize>,
    /// Member ids in the current generation.
    pub(super) members: BTreeSet<String>,
    /// Member id -> the event that removed it.
    pub(super) removed_event: BTreeMap<String, usize>,
    /// generation -> partition -> (owner, AssignmentStored event)
    pub(super) owners: BTreeMap<i32, BTreeMap<TopicPartition, (String, usize)>>,
    /// Static members fenced by a newer member id with the same group.instance.id, by instance
    /// id: the old member id and whether it belonged to the current generation.
    pub(super) fenced_static: BTreeMap<String, (String, bool)>,
    /// Member id -> group.instance.id, for static members.
    pub(super) instance_of: BTreeMap<String, String>,
    /// The broker coordinating the group: the first to report it, then each broker that loads it.
    pub(super) coordinator: Option<i32>,
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

/// One member process (by stable name) as it reported itself.
#[derive(Default)]
pub(super) struct MemberView {
    /// The group it joins.
    pub(super) group: String,
    /// Its member id and generation, as of its last join or assignment.
    pub(super) member_id: Option<String>,
    pub(super) generation: i32,
    /// Whether its process is running.
    pub(super) live: bool,
    /// generation -> (Assigned event index)
    pub(super) assigned_at: BTreeMap<i32, usize>,
    /// Partitions it owns now.
    pub(super) owned: BTreeSet<TopicPartition>,
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
        })
    }

    /// Generation -1 commits on an Empty group are admin / simple-consumer commits: they are
    /// not made by a group member, so ownership rules do not apply.
    pub(super) fn by_member(&self) -> bool {
        self.generation >= 0
    }
}

/// How a member held a partition when it processed records of it or committed it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
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
    pub(super) processed: BTreeMap<(String, Holding, TopicPartition), (RangeSet, usize)>,
    /// (member id, partition) -> the tenure in which the member holds the partition now.
    pub(super) tenure_now: BTreeMap<(String, TopicPartition), usize>,
    /// (member id, generation, partition) -> the tenure that generation's assignment was part of.
    pub(super) tenure_of: BTreeMap<(String, i32, TopicPartition), usize>,
    /// Member processes by stable name.
    pub(super) members: BTreeMap<String, MemberView>,
    /// Topics and their partition counts.
    pub(super) topics: BTreeMap<String, i32>,
    /// When the liveness phase ends, once it has begun.
    pub(super) liveness_deadline: Option<Millis>,
    /// The time of the last event read.
    pub(super) end_ms: Millis,
}

impl Views {
    /// The group's view, or an empty one if no event named it yet.
    pub(super) fn group(&self, group: &str) -> &GroupView {
        static EMPTY: std::sync::OnceLock<GroupView> = std::sync::OnceLock::new();
        self.groups.get(group).unwrap_or_else(|| EMPTY.get_or_init(GroupView::default))
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
            EventKind::World(w) => self.world(at, w, metrics),
        }
    }

    fn world(&mut self, at: Millis, w: &WorldEvent, metrics: &mut Metrics) {
        match w {
            WorldEvent::TopicCreated { topic, partitions } => {
                self.topics.insert(topic.clone(), *partitions);
                for p in 0..*partitions {
                    self.partitions.entry(TopicPartition::new(topic.clone(), p)).or_default();
                }
            }
            WorldEvent::Produced { count, .. } => metrics.stats.records_produced += *count as u64,
            WorldEvent::MemberStarted { member, group, .. } => {
                let m = self.members.entry(member.clone()).or_default();
                m.group = group.clone();
                m.live = true;
            }
            WorldEvent::MemberStopped { member } => {
                let owned: Vec<TopicPartition> = match self.members.get_mut(member) {
                    Some(m) => {
                        m.live = false;
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
            WorldEvent::LivenessPhase { deadline_ms } => {
                self.liveness_deadline = Some(*deadline_ms)
            }
            WorldEvent::PartitionsAdded { topic, partitions } => {
                self.topics.insert(topic.clone(), *partitions);
                for p in 0..*partitions {
                    self.partitions.entry(TopicPartition::new(topic.clone(), p)).or_default();
                }
            }
            WorldEvent::RunStarted { .. }
            | WorldEvent::MemberLeaveRequested { .. }
            | WorldEvent::SwarmChosen { .. }
            | WorldEvent::TriggerFired { .. }
            | WorldEvent::FaultInjected { .. }
            | WorldEvent::ServeFault { .. }
            | WorldEvent::FaultHealed { .. }
            | WorldEvent::BrokerCrashed { .. }
            | WorldEvent::BrokerFailureDetected { .. }
            | WorldEvent::BrokerRestarted { .. }
            | WorldEvent::CoordinatorMoved { .. }
            | WorldEvent::PartitionLeaderMoved { .. }
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
            MemberEvent::Joined { member_id, generation, .. } => {
                let m = self.members.entry(name.to_string()).or_default();
                m.member_id = Some(member_id.clone());
                m.generation = *generation;
            }
            MemberEvent::Assigned { member_id, generation, partitions } => {
                for tp in partitions {
                    let tenure =
                        *self.tenure_now.entry((member_id.clone(), tp.clone())).or_insert(idx);
                    self.tenure_of.insert((member_id.clone(), *generation, tp.clone()), tenure);
                }
                let m = self.members.entry(name.to_string()).or_default();
                m.member_id = Some(member_id.clone());
                m.generation = *generation;
                m.assigned_at.insert(*generation, idx);
                let newly: Vec<TopicPartition> =
                    partitions.iter().filter(|tp| m.owned.insert((*tp).clone())).cloned().collect();
                for tp in newly {
                    metrics.acquire(&tp, at);
                }
            }
            MemberEvent::Revoked { member_id, partitions, .. }
            | MemberEvent::Lost { member_id, partitions, .. } => {
                for tp in partitions {
                    self.tenure_now.remove(&(member_id.clone(), tp.clone()));
                }
                let gone: Vec<TopicPartition> = match self.members.get_mut(name) {
                    Some(m) => {
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
                let (start, end) = (*first_offset, *last_offset + 1);
                let n = (end - start).max(0) as u64;
                metrics.stats.records_processed += n;
                let pv = self.partitions.entry(partition.clone()).or_default();
                metrics.stats.records_reprocessed += pv.processed_any.overlap(start, end) as u64;
                pv.processed_any.insert(start, end);
                let holding = self.holding(member_id, *generation, partition);
                let entry = self
                    .processed
                    .entry((member_id.clone(), holding, partition.clone()))
                    .or_insert_with(|| (RangeSet::default(), idx));
                entry.0.insert(start, end);
                entry.1 = idx;
            }
            MemberEvent::CommitAcked { partition, offset, .. } => {
                let pv = self.partitions.entry(partition.clone()).or_default();
                pv.acked.push((idx, *offset));
                pv.acked_by.push((idx, *offset, name.to_string()));
            }
            _ => {}
        }
    }

    /// Whether `member_id` holds `tp` now: assigned it and not yet revoked or lost it.
    pub(super) fn holds(&self, member_id: &str, tp: &TopicPartition) -> bool {
        self.tenure_now.contains_key(&(member_id.to_string(), tp.clone()))
    }

    /// How `member_id` held `tp` while in `generation`: in the tenure that generation's
    /// assignment was part of, else (between a JoinGroup answer and the next assignment, or
    /// while revoking) in the tenure it holds the partition in now, else by generation alone.
    pub(super) fn holding(&self, member_id: &str, generation: i32, tp: &TopicPartition) -> Holding {
        let key = (member_id.to_string(), generation, tp.clone());
        self.tenure_of
            .get(&key)
            .or_else(|| self.tenure_now.get(&(member_id.to_string(), tp.clone())))
            .map_or(Holding::Generation(generation), |t| Holding::Tenure(*t))
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
                        g.members.insert(member_id.clone());
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
                let was_member = g.members.remove(member_id);
                g.removed_event.insert(member_id.clone(), idx);
                if *reason == RemovalReason::Fenced {
                    if let Some(instance) = g.instance_of.get(member_id).cloned() {
                        g.fenced_static.insert(instance, (member_id.clone(), was_member));
                    }
                }
            }
            CoordinatorEvent::GenerationStarted { group, generation, members, .. } => {
                metrics.stats.rebalances += 1;
                metrics.stats.last_generation_at_ms = Some(at);
                let g = self.groups.entry(group.clone()).or_default();
                g.generation = *generation;
                g.generation_event = Some(idx);
                g.members = members.iter().cloned().collect();
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
                self.groups.entry(group.clone()).or_default().owners.insert(*generation, owners);
            }
            CoordinatorEvent::OffsetCommitAccepted { .. } => {
                metrics.stats.commits_accepted += 1;
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
                members,
                assignments,
                ..
            } => {
                let g = self.groups.entry(group.clone()).or_default();
                g.coordinator = Some(broker);
                g.state = Some(*state);
                g.generation = *generation;
                g.generation_event = Some(idx);
                g.members = members.iter().cloned().collect();
                if !assignments.is_empty() {
                    let owners = assignments
                        .iter()
                        .flat_map(|a| {
                            a.partitions.iter().map(|tp| (tp.clone(), (a.member_id.clone(), idx)))
                        })
                        .collect();
                    g.owners.insert(*generation, owners);
                }
            }
            CoordinatorEvent::GroupUnloaded { .. } => {}
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
