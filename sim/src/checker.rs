//! The checker: reads only a run's [`History`] and proves (or refutes) that no committed offset
//! was lost or duplicated across rebalances, that no zombie committed, and that the group
//! recovered. It never calls the coordinator or a member, so a bug there cannot hide itself.
//!
//! Rules (each anomaly names its class, the partition and the events that prove it):
//! - `offset-regression`: an accepted commit is lower than the partition's previous one.
//! - `duplicate-commit`: a record is covered by two accepted commits (a commit covers the
//!   records between the previous committed offset and its own).
//! - `uncovered-commit`: an accepted commit covers records the committing member did not process
//!   in the committing generation: they were never processed by anyone who could vouch for them,
//!   so they are lost to the application.
//! - `zombie-commit`: a commit accepted from a member that is no longer in the group, or under a
//!   generation that is not the group's current one.
//! - `unowned-commit`: a commit accepted for a partition the committer was not assigned in that
//!   generation.
//! - `split-assignment`: one generation's assignment gives a partition to two members.
//! - `lost-commit`: a member resumed from an offset lower than a commit that had been accepted
//!   before its assignment (the acknowledged commit vanished).
//! - `stuck`: at the end of the liveness phase the group is not Stable with every live member in
//!   the latest generation, every partition assigned and commits at the log end.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use groupsim_coordinator::{CoordinatorEvent, GroupState, RemovalReason};
use groupsim_member::MemberEvent;
use groupsim_wire::{Millis, TopicPartition};
use serde::{Deserialize, Serialize};

use crate::history::{EventKind, History, WorldEvent};

/// The kinds of anomaly the checker reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum AnomalyClass {
    /// An acknowledged commit later missing from what OffsetFetch returned.
    LostCommit,
    /// Committed offset went backwards.
    OffsetRegression,
    /// A record covered by two accepted commits.
    DuplicateCommit,
    /// Committed records the committer never processed in that generation.
    UncoveredCommit,
    /// A commit accepted from a removed member or a stale generation.
    ZombieCommit,
    /// A commit accepted for a partition the committer did not own.
    UnownedCommit,
    /// A partition assigned to two members in one generation.
    SplitAssignment,
    /// The group did not converge in the liveness phase.
    Stuck,
}

impl AnomalyClass {
    /// Every class, in report order.
    pub const ALL: [AnomalyClass; 8] = [
        AnomalyClass::LostCommit,
        AnomalyClass::OffsetRegression,
        AnomalyClass::DuplicateCommit,
        AnomalyClass::UncoveredCommit,
        AnomalyClass::ZombieCommit,
        AnomalyClass::UnownedCommit,
        AnomalyClass::SplitAssignment,
        AnomalyClass::Stuck,
    ];

    /// The kebab-case name used in reports and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            AnomalyClass::LostCommit => "lost-commit",
            AnomalyClass::OffsetRegression => "offset-regression",
            AnomalyClass::DuplicateCommit => "duplicate-commit",
            AnomalyClass::UncoveredCommit => "uncovered-commit",
            AnomalyClass::ZombieCommit => "zombie-commit",
            AnomalyClass::UnownedCommit => "unowned-commit",
            AnomalyClass::SplitAssignment => "split-assignment",
            AnomalyClass::Stuck => "stuck",
        }
    }

    /// Parses a kebab-case name.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.name() == name)
    }
}

impl fmt::Display for AnomalyClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One violation, with the history events (by index) that prove it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Anomaly {
    /// Which rule was broken.
    pub class: AnomalyClass,
    /// The partition concerned, if the rule is about one.
    pub partition: Option<TopicPartition>,
    /// When it became visible.
    pub at_ms: Millis,
    /// What went wrong, in a sentence.
    pub message: String,
    /// Indices into the history of the events that prove it, in order.
    pub events: Vec<usize>,
}

impl Anomaly {
    /// A multi-line report: the anomaly and each proving event.
    pub fn render(&self, history: &History) -> String {
        let mut out = format!("{} at t={}ms", self.class, self.at_ms);
        if let Some(tp) = &self.partition {
            out.push_str(&format!(" on {tp}"));
        }
        out.push_str(&format!(": {}\n", self.message));
        for &i in &self.events {
            if let Some(e) = history.events().get(i) {
                out.push_str(&format!("    #{i} {e}\n"));
            }
        }
        out
    }
}

/// Figures about a run that are not anomalies.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stats {
    /// Completed join phases (generations started), all groups.
    pub rebalances: u64,
    /// Offset commits accepted, per partition.
    pub commits_accepted: u64,
    /// Offset commits rejected, per partition.
    pub commits_rejected: u64,
    /// Records the producer appended.
    pub records_produced: u64,
    /// Records processed, counting repeats.
    pub records_processed: u64,
    /// Records processed more than once (at-least-once redelivery; not an anomaly).
    pub records_reprocessed: u64,
    /// Longest time any partition went without an owner after it was first assigned.
    pub max_unowned_ms: Millis,
    /// When the last generation of the run started (convergence point), if any.
    pub last_generation_at_ms: Option<Millis>,
}

/// The checker's conclusion about a run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verdict {
    /// Every anomaly found, in the order found.
    pub anomalies: Vec<Anomaly>,
    /// Run figures.
    pub stats: Stats,
}

impl Verdict {
    /// Whether the run is clean.
    pub fn is_ok(&self) -> bool {
        self.anomalies.is_empty()
    }

    /// The first anomaly, if any.
    pub fn first(&self) -> Option<&Anomaly> {
        self.anomalies.first()
    }

    /// Anomaly counts by class.
    pub fn counts(&self) -> BTreeMap<AnomalyClass, usize> {
        let mut m = BTreeMap::new();
        for a in &self.anomalies {
            *m.entry(a.class).or_insert(0) += 1;
        }
        m
    }
}

/// Half-open offset ranges `[start, end)`, kept sorted and disjoint.
#[derive(Clone, Debug, Default)]
struct RangeSet {
    ranges: Vec<(i64, i64)>,
}

impl RangeSet {
    /// Number of offsets of `[start, end)` already in the set.
    fn overlap(&self, start: i64, end: i64) -> i64 {
        self.ranges.iter().map(|&(s, e)| (e.min(end) - s.max(start)).max(0)).sum()
    }

    /// The first sub-range of `[start, end)` not in the set.
    fn first_gap(&self, start: i64, end: i64) -> Option<(i64, i64)> {
        let mut cursor = start;
        for &(s, e) in &self.ranges {
            if e <= cursor {
                continue;
            }
            if s > cursor {
                return Some((cursor, s.min(end)));
            }
            cursor = e;
            if cursor >= end {
                return None;
            }
        }
        (cursor < end).then_some((cursor, end))
    }

    fn insert(&mut self, start: i64, end: i64) {
        if start >= end {
            return;
        }
        self.ranges.push((start, end));
        self.ranges.sort_unstable();
        let mut merged: Vec<(i64, i64)> = Vec::with_capacity(self.ranges.len());
        for &(s, e) in &self.ranges {
            match merged.last_mut() {
                Some(last) if s <= last.1 => last.1 = last.1.max(e),
                _ => merged.push((s, e)),
            }
        }
        self.ranges = merged;
    }
}

#[derive(Default)]
struct GroupView {
    state: Option<GroupState>,
    generation: i32,
    generation_event: Option<usize>,
    members: BTreeSet<String>,
    removed_event: BTreeMap<String, usize>,
    /// generation -> partition -> (owner, AssignmentStored event)
    owners: BTreeMap<i32, BTreeMap<TopicPartition, (String, usize)>>,
    /// Static members fenced by a newer member id with the same group.instance.id, by instance
    /// id: the old member id and whether it belonged to the current generation.
    fenced_static: BTreeMap<String, (String, bool)>,
    /// Member id -> group.instance.id, for static members.
    instance_of: BTreeMap<String, String>,
    /// The broker coordinating the group: the first to report it, then each broker that loads it.
    coordinator: Option<i32>,
}

#[derive(Default)]
struct PartitionView {
    committed: Option<(i64, usize)>,
    /// Accepted commits in order: (event index, offset).
    accepted: Vec<(usize, i64)>,
    /// Commits acknowledged to members, in order: (event index, offset).
    acked: Vec<(usize, i64)>,
    /// The same, with the member told: (event index, offset, member name).
    acked_by: Vec<(usize, i64, String)>,
    /// Offsets covered by accepted commits, with the covering commit for evidence.
    covered: Vec<(i64, i64, usize)>,
    covered_set: RangeSet,
    processed_any: RangeSet,
    log_end: Option<i64>,
}

#[derive(Default)]
struct MemberView {
    group: String,
    member_id: Option<String>,
    generation: i32,
    live: bool,
    /// generation -> (Assigned event index)
    assigned_at: BTreeMap<i32, usize>,
    owned: BTreeSet<TopicPartition>,
}

/// Checks a history against every rule. Pure: the same history gives the same verdict.
pub fn check(history: &History) -> Verdict {
    Checker::default().run(history)
}

#[derive(Default)]
struct Checker {
    anomalies: Vec<Anomaly>,
    stats: Stats,
    groups: BTreeMap<String, GroupView>,
    partitions: BTreeMap<TopicPartition, PartitionView>,
    /// (member id, generation, partition) -> processed offsets
    processed: BTreeMap<(String, i32, TopicPartition), (RangeSet, usize)>,
    members: BTreeMap<String, MemberView>,
    topics: BTreeMap<String, i32>,
    liveness_deadline: Option<Millis>,
    /// partition -> (owners now, time it became unowned)
    owner_count: BTreeMap<TopicPartition, (usize, Option<Millis>)>,
    end_ms: Millis,
}

impl Checker {
    fn run(mut self, history: &History) -> Verdict {
        for (idx, event) in history.events().iter().enumerate() {
            let at = event.at_ms;
            self.end_ms = at;
            match &event.kind {
                EventKind::Coordinator { broker, event } => {
                    self.coordinator(idx, at, *broker, event)
                }
                EventKind::Member { member, event } => self.member(idx, at, member, event),
                EventKind::World(w) => self.world(idx, at, w),
            }
        }
        if self.liveness_deadline.is_some() {
            self.liveness(history);
        }
        let end = self.end_ms;
        for (count, since) in self.owner_count.values() {
            if *count == 0 {
                if let Some(s) = since {
                    self.stats.max_unowned_ms = self.stats.max_unowned_ms.max(end - s);
                }
            }
        }
        Verdict { anomalies: self.anomalies, stats: self.stats }
    }

    fn flag(
        &mut self,
        class: AnomalyClass,
        partition: Option<&TopicPartition>,
        at_ms: Millis,
        message: String,
        mut events: Vec<usize>,
    ) {
        events.sort_unstable();
        events.dedup();
        self.anomalies.push(Anomaly {
            class,
            partition: partition.cloned(),
            at_ms,
            message,
            events,
        });
    }

    fn world(&mut self, idx: usize, at: Millis, w: &WorldEvent) {
        let _ = idx;
        match w {
            WorldEvent::TopicCreated { topic, partitions } => {
                self.topics.insert(topic.clone(), *partitions);
                for p in 0..*partitions {
                    self.partitions.entry(TopicPartition::new(topic.clone(), p)).or_default();
                }
            }
            WorldEvent::Produced { count, .. } => self.stats.records_produced += *count as u64,
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
                    self.release(&tp, at);
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
            | WorldEvent::FaultInjected { .. }
            | WorldEvent::FaultHealed { .. }
            | WorldEvent::BrokerCrashed { .. }
            | WorldEvent::BrokerFailureDetected { .. }
            | WorldEvent::BrokerRestarted { .. }
            | WorldEvent::CoordinatorMoved { .. }
            | WorldEvent::PartitionLeaderMoved { .. }
            | WorldEvent::RunEnded => {}
        }
    }

    fn acquire(&mut self, tp: &TopicPartition, at: Millis) {
        let e = self.owner_count.entry(tp.clone()).or_insert((0, None));
        if e.0 == 0 {
            if let Some(since) = e.1.take() {
                self.stats.max_unowned_ms = self.stats.max_unowned_ms.max(at - since);
            }
        }
        e.0 += 1;
    }

    fn release(&mut self, tp: &TopicPartition, at: Millis) {
        if let Some(e) = self.owner_count.get_mut(tp) {
            e.0 = e.0.saturating_sub(1);
            if e.0 == 0 {
                e.1 = Some(at);
            }
        }
    }

    fn member(&mut self, idx: usize, at: Millis, name: &str, event: &MemberEvent) {
        match event {
            MemberEvent::Joined { member_id, generation, .. } => {
                let m = self.members.entry(name.to_string()).or_default();
                m.member_id = Some(member_id.clone());
                m.generation = *generation;
            }
            MemberEvent::Assigned { member_id, generation, partitions } => {
                let m = self.members.entry(name.to_string()).or_default();
                m.member_id = Some(member_id.clone());
                m.generation = *generation;
                m.assigned_at.insert(*generation, idx);
                let newly: Vec<TopicPartition> =
                    partitions.iter().filter(|tp| m.owned.insert((*tp).clone())).cloned().collect();
                for tp in newly {
                    self.acquire(&tp, at);
                }
            }
            MemberEvent::Revoked { partitions, .. } | MemberEvent::Lost { partitions, .. } => {
                let gone: Vec<TopicPartition> = match self.members.get_mut(name) {
                    Some(m) => {
                        partitions.iter().filter(|tp| m.owned.remove(*tp)).cloned().collect()
                    }
                    None => Vec::new(),
                };
                for tp in gone {
                    self.release(&tp, at);
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
                self.stats.records_processed += n;
                let pv = self.partitions.entry(partition.clone()).or_default();
                self.stats.records_reprocessed += pv.processed_any.overlap(start, end) as u64;
                pv.processed_any.insert(start, end);
                let entry = self
                    .processed
                    .entry((member_id.clone(), *generation, partition.clone()))
                    .or_insert_with(|| (RangeSet::default(), idx));
                entry.0.insert(start, end);
                entry.1 = idx;
            }
            MemberEvent::CommitAcked { partition, offset, .. } => {
                let pv = self.partitions.entry(partition.clone()).or_default();
                pv.acked.push((idx, *offset));
                pv.acked_by.push((idx, *offset, name.to_string()));
            }
            MemberEvent::PositionInitialized { generation, partition, committed, .. } => {
                let Some(assigned_idx) =
                    self.members.get(name).and_then(|m| m.assigned_at.get(generation)).copied()
                else {
                    return;
                };
                let pv = self.partitions.entry(partition.clone()).or_default();
                // What must be visible: the last commit the coordinator accepted, and the last
                // one a member was told succeeded, before this assignment.
                let accepted = pv.accepted.iter().rev().find(|(i, _)| *i < assigned_idx).copied();
                let acked = pv.acked.iter().rev().find(|(i, _)| *i < assigned_idx).copied();
                let before = match (accepted, acked) {
                    (Some(a), Some(b)) => Some(if b.1 > a.1 { b } else { a }),
                    (a, b) => a.or(b),
                };
                if let Some((commit_idx, offset)) = before {
                    if committed.is_none_or(|c| c < offset) {
                        let seen = committed.map_or("no offset".to_string(), |c| c.to_string());
                        self.flag(
                            AnomalyClass::LostCommit,
                            Some(partition),
                            at,
                            format!(
                                "{name} resumed in generation {generation} from {seen}, but \
                                 offset {offset} had been committed and acknowledged before \
                                 its assignment"
                            ),
                            vec![commit_idx, assigned_idx, idx],
                        );
                    }
                }
            }
            _ => {}
        }
    }

    fn coordinator(&mut self, idx: usize, at: Millis, broker: i32, event: &CoordinatorEvent) {
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
                self.stats.rebalances += 1;
                self.stats.last_generation_at_ms = Some(at);
                let g = self.groups.entry(group.clone()).or_default();
                g.generation = *generation;
                g.generation_event = Some(idx);
                g.members = members.iter().cloned().collect();
            }
            CoordinatorEvent::AssignmentStored { group, generation, assignments } => {
                let mut owners: BTreeMap<TopicPartition, (String, usize)> = BTreeMap::new();
                let mut splits = Vec::new();
                for a in assignments {
                    for tp in &a.partitions {
                        if let Some((other, _)) = owners.get(tp) {
                            splits.push((tp.clone(), other.clone(), a.member_id.clone()));
                        } else {
                            owners.insert(tp.clone(), (a.member_id.clone(), idx));
                        }
                    }
                }
                self.groups.entry(group.clone()).or_default().owners.insert(*generation, owners);
                for (tp, a, b) in splits {
                    self.flag(
                        AnomalyClass::SplitAssignment,
                        Some(&tp),
                        at,
                        format!("generation {generation} assigns {tp} to both {a} and {b}"),
                        vec![idx],
                    );
                }
            }
            CoordinatorEvent::OffsetCommitAccepted {
                group,
                member_id,
                generation,
                partition,
                offset,
            } => self.accepted_commit(idx, at, group, member_id, *generation, partition, *offset),
            CoordinatorEvent::OffsetCommitRejected { .. } => self.stats.commits_rejected += 1,
            // A coordinator took the group over from the offsets log: the group is what was last
            // stored, which may be an older generation than the last one started (helper D).
            CoordinatorEvent::GroupLoaded {
                group,
                state,
                generation,
                members,
                assignments,
                offsets,
                ..
            } => {
                self.loaded_offsets(idx, at, group, offsets);
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

    /// A coordinator loaded the group: every commit a member of the group was told succeeded
    /// must be in what it loaded (what OffsetFetch serves from now on).
    fn loaded_offsets(
        &mut self,
        idx: usize,
        at: Millis,
        group: &str,
        offsets: &[(TopicPartition, i64)],
    ) {
        let loaded: BTreeMap<&TopicPartition, i64> =
            offsets.iter().map(|(tp, o)| (tp, *o)).collect();
        let mut lost = Vec::new();
        for (tp, pv) in &self.partitions {
            let Some(&(ack_idx, acked, ref member)) = pv.acked_by.last() else { continue };
            if self.members.get(member).is_none_or(|m| m.group != group) {
                continue;
            }
            let have = loaded.get(tp).copied();
            if have.is_none_or(|o| o < acked) {
                let seen = have.map_or("no offset".to_string(), |o| o.to_string());
                lost.push((
                    tp.clone(),
                    ack_idx,
                    format!(
                        "commit {acked} acknowledged to {member} is missing from the offsets the \
                     coordinator loaded ({seen})"
                    ),
                ));
            }
        }
        for (tp, ack_idx, message) in lost {
            self.flag(AnomalyClass::LostCommit, Some(&tp), at, message, vec![ack_idx, idx]);
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn accepted_commit(
        &mut self,
        idx: usize,
        at: Millis,
        group: &str,
        member_id: &str,
        generation: i32,
        tp: &TopicPartition,
        offset: i64,
    ) {
        self.stats.commits_accepted += 1;
        let g = self.groups.entry(group.to_string()).or_default();
        // Generation -1 commits on an Empty group are admin / simple-consumer commits: they are
        // not made by a group member, so ownership rules do not apply.
        let member_commit = generation >= 0;
        let mut found = Vec::new();
        if member_commit {
            if generation != g.generation {
                let mut ev = vec![idx];
                ev.extend(g.generation_event);
                found.push((
                    AnomalyClass::ZombieCommit,
                    format!(
                        "commit to {offset} from {member_id} accepted under generation \
                         {generation} while the group is in generation {}",
                        g.generation
                    ),
                    ev,
                ));
            } else if !g.members.contains(member_id) {
                let mut ev = vec![idx];
                ev.extend(g.removed_event.get(member_id));
                found.push((
                    AnomalyClass::ZombieCommit,
                    format!(
                        "commit to {offset} accepted from {member_id}, which is not a member of \
                         generation {generation}"
                    ),
                    ev,
                ));
            }
            match g.owners.get(&generation).and_then(|o| o.get(tp)) {
                Some((owner, _)) if owner == member_id => {}
                other => {
                    let mut ev = vec![idx];
                    let who = match other {
                        Some((owner, a)) => {
                            ev.push(*a);
                            format!("it is owned by {owner}")
                        }
                        None => "no assignment of that generation gives it to anyone".to_string(),
                    };
                    found.push((
                        AnomalyClass::UnownedCommit,
                        format!("{member_id} committed {tp} in generation {generation} but {who}"),
                        ev,
                    ));
                }
            }
        }
        let pv = self.partitions.entry(tp.clone()).or_default();
        let prev = pv.committed;
        let start = prev.map_or(0, |(o, _)| o);
        if let Some((prev_offset, prev_idx)) = prev {
            if offset < prev_offset {
                found.push((
                    AnomalyClass::OffsetRegression,
                    format!("committed offset went back from {prev_offset} to {offset}"),
                    vec![prev_idx, idx],
                ));
            }
        }
        if offset > start {
            if pv.covered_set.overlap(start, offset) > 0 {
                let earlier: Vec<usize> = pv
                    .covered
                    .iter()
                    .filter(|(s, e, _)| *s < offset && start < *e)
                    .map(|(_, _, i)| *i)
                    .collect();
                let mut ev = earlier.clone();
                ev.push(idx);
                found.push((
                    AnomalyClass::DuplicateCommit,
                    format!(
                        "commit to {offset} covers records {start}..{offset} that earlier \
                         commits already covered"
                    ),
                    ev,
                ));
            }
            if member_commit {
                let key = (member_id.to_string(), generation, tp.clone());
                let gap = match self.processed.get(&key) {
                    Some((set, _)) => set.first_gap(start, offset),
                    None => Some((start, offset)),
                };
                if let Some((gs, ge)) = gap {
                    let mut ev = vec![idx];
                    ev.extend(self.processed.get(&key).map(|(_, i)| *i));
                    found.push((
                        AnomalyClass::UncoveredCommit,
                        format!(
                            "{member_id} committed {offset} in generation {generation} but never \
                             processed records {gs}..{ge} in that generation: they are lost"
                        ),
                        ev,
                    ));
                }
            }
            let pv = self.partitions.entry(tp.clone()).or_default();
            pv.covered.push((start, offset, idx));
            pv.covered_set.insert(start, offset);
        }
        let pv = self.partitions.entry(tp.clone()).or_default();
        pv.committed = Some((offset, idx));
        pv.accepted.push((idx, offset));
        for (class, message, events) in found {
            self.flag(class, Some(tp), at, message, events);
        }
    }

    fn liveness(&mut self, history: &History) {
        let deadline = self.liveness_deadline.unwrap_or(self.end_ms);
        let last_idx = history.len().saturating_sub(1);
        let mut problems: Vec<(Option<TopicPartition>, String)> = Vec::new();
        let groups: BTreeSet<String> = self.members.values().map(|m| m.group.clone()).collect();
        for group in groups {
            let live: BTreeMap<&String, &MemberView> =
                self.members.iter().filter(|(_, m)| m.group == group && m.live).collect();
            let Some(g) = self.groups.get(&group) else {
                if !live.is_empty() {
                    problems.push((None, format!("group {group} never formed")));
                }
                continue;
            };
            if live.is_empty() {
                if g.state != Some(GroupState::Empty) {
                    problems.push((
                        None,
                        format!("group {group} has no live members but is {:?}", g.state),
                    ));
                }
                continue;
            }
            if g.state != Some(GroupState::Stable) {
                problems.push((None, format!("group {group} is {:?}, not Stable", g.state)));
            }
            let live_ids: BTreeSet<String> =
                live.values().filter_map(|m| m.member_id.clone()).collect();
            for (name, m) in &live {
                match &m.member_id {
                    Some(id) if g.members.contains(id) && m.generation == g.generation => {}
                    Some(id) => problems.push((
                        None,
                        format!(
                            "live member {name} ({id}, generation {}) is not in generation {}",
                            m.generation, g.generation
                        ),
                    )),
                    None => problems.push((None, format!("live member {name} never joined"))),
                }
            }
            for id in g.members.difference(&live_ids) {
                problems.push((
                    None,
                    format!("generation {} still holds {id}, which is not live", g.generation),
                ));
            }
            let owners = g.owners.get(&g.generation);
            for (topic, n) in &self.topics {
                for p in 0..*n {
                    let tp = TopicPartition::new(topic.clone(), p);
                    if owners.is_none_or(|o| !o.contains_key(&tp)) {
                        problems.push((
                            Some(tp.clone()),
                            format!("{tp} is unassigned in generation {}", g.generation),
                        ));
                    }
                    let pv = self.partitions.get(&tp);
                    let end = pv.and_then(|v| v.log_end).unwrap_or(0);
                    let committed = pv.and_then(|v| v.committed).map_or(0, |(o, _)| o);
                    if committed < end {
                        problems.push((
                            Some(tp.clone()),
                            format!("{tp} committed {committed} < log end {end}"),
                        ));
                    }
                }
            }
        }
        if !problems.is_empty() {
            let first_tp = problems.iter().find_map(|(tp, _)| tp.clone());
            let n = problems.len();
            let shown: Vec<String> = problems.into_iter().take(6).map(|(_, m)| m).collect();
            let more = if n > 6 { format!(" (+{} more)", n - 6) } else { String::new() };
            self.flag(
                AnomalyClass::Stuck,
                first_tp.as_ref(),
                deadline,
                format!("not converged by the liveness deadline: {}{more}", shown.join("; ")),
                vec![last_idx],
            );
        }
    }
}

#[cfg(test)]
mod tests;
