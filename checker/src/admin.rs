//! What admin clients were told, held against the history: a describe or list answer must show
//! the group as it really was on that broker at some instant between the request's sending and
//! the answer's arrival (the broker processed it somewhere in that window).
//!
//! Rules, for an answer without error from broker N:
//! - a described member was a member of the group on N at some instant of the window;
//! - a member that was in the group on N throughout the window is described (unless the group
//!   is described Dead: DescribeGroups below v6 shows a consumer group so);
//! - a Stable classic group's described assignment is the stored assignment of a generation
//!   current on N at some instant of the window;
//! - ListGroups from N lists the group when it had members on N throughout the window.
//!
//! Membership is what the coordinator recorded (members added, removed, loaded, converted;
//! cleared when N unloads the group or crashes). Empty groups are not judged: Kafka creates and
//! drops them silently (a JoinGroup answered MEMBER_ID_REQUIRED, an empty group giving way to
//! the other protocol), so the history cannot say whether one existed.

use std::collections::{BTreeMap, BTreeSet};

use groupsim_history::{
    ConsumerGroupEvent, CoordinatorEvent, DescribedMember, EventKind, GroupState, History,
    MemberEvent, WorldEvent,
};
use groupsim_wire::{Millis, TopicPartition};

use crate::anomaly::{Anomaly, AnomalyClass};

/// Members and their partitions, by member id.
type Assignment = BTreeMap<String, Vec<TopicPartition>>;

/// The group on one broker after one change.
#[derive(Clone, Debug, Default, PartialEq)]
struct Snapshot {
    members: BTreeSet<String>,
    /// The classic group's state (None: not a classic group there, or not known).
    classic_state: Option<GroupState>,
    /// The stored assignment of the classic group's current generation.
    assignment: Option<Assignment>,
}

/// One broker's view of one group over time: (history index of the change, snapshot after it).
#[derive(Debug, Default)]
struct Timeline {
    changes: Vec<(usize, Millis, Snapshot)>,
}

impl Timeline {
    fn current(&self) -> Snapshot {
        self.changes.last().map(|c| c.2.clone()).unwrap_or_default()
    }

    fn push(&mut self, idx: usize, at: Millis, snapshot: Snapshot) {
        if self.changes.last().map(|c| &c.2) != Some(&snapshot) {
            self.changes.push((idx, at, snapshot));
        }
    }

    /// The snapshots in force at some instant from `sent` until history index `answer`: the
    /// one in force before the first change at or after `sent`, and every later change
    /// recorded before the answer.
    fn window(&self, sent: Millis, answer: usize) -> Vec<&Snapshot> {
        static EMPTY: std::sync::OnceLock<Snapshot> = std::sync::OnceLock::new();
        let first = self.changes.iter().position(|c| c.1 >= sent).unwrap_or(self.changes.len());
        let mut out = Vec::new();
        match first.checked_sub(1) {
            Some(i) => out.push(&self.changes[i].2),
            None => out.push(EMPTY.get_or_init(Snapshot::default)),
        }
        out.extend(self.changes[first..].iter().filter(|c| c.0 < answer).map(|c| &c.2));
        out
    }
}

/// Every broker's timeline of every group, built as the history is read.
#[derive(Debug, Default)]
struct Timelines {
    by: BTreeMap<(i32, String), Timeline>,
}

impl Timelines {
    fn change(
        &mut self,
        idx: usize,
        at: Millis,
        node: i32,
        group: &str,
        f: impl FnOnce(&mut Snapshot),
    ) {
        let t = self.by.entry((node, group.to_string())).or_default();
        let mut s = t.current();
        f(&mut s);
        t.push(idx, at, s);
    }

    fn clear_node(&mut self, idx: usize, at: Millis, node: i32) {
        for (_, t) in self.by.iter_mut().filter(|((n, _), _)| *n == node) {
            t.push(idx, at, Snapshot::default());
        }
    }

    fn coordinator(&mut self, idx: usize, at: Millis, node: i32, e: &CoordinatorEvent) {
        match e {
            CoordinatorEvent::MemberAdded { group, member_id, .. } => {
                self.change(idx, at, node, group, |s| {
                    s.members.insert(member_id.clone());
                })
            }
            CoordinatorEvent::MemberRemoved { group, member_id, .. } => {
                self.change(idx, at, node, group, |s| {
                    s.members.remove(member_id);
                })
            }
            CoordinatorEvent::GroupStateChanged { group, to, .. } => {
                self.change(idx, at, node, group, |s| s.classic_state = Some(*to))
            }
            CoordinatorEvent::GenerationStarted { group, .. } => {
                self.change(idx, at, node, group, |s| s.assignment = None)
            }
            CoordinatorEvent::AssignmentStored { group, assignments, .. } => {
                let a = assignments.iter().map(|m| (m.member_id.clone(), m.partitions.clone()));
                let a: Assignment = a.collect();
                self.change(idx, at, node, group, |s| s.assignment = Some(a))
            }
            CoordinatorEvent::GroupLoaded { group, state, members, assignments, .. } => {
                let a: Assignment = assignments
                    .iter()
                    .map(|m| (m.member_id.clone(), m.partitions.clone()))
                    .collect();
                self.change(idx, at, node, group, |s| {
                    *s = Snapshot {
                        members: members.iter().cloned().collect(),
                        classic_state: Some(*state),
                        assignment: (!a.is_empty()).then_some(a),
                    }
                })
            }
            CoordinatorEvent::GroupUnloaded { group, .. } => {
                self.change(idx, at, node, group, |s| *s = Snapshot::default())
            }
            CoordinatorEvent::ConsumerGroup(c) => self.consumer(idx, at, node, c),
            CoordinatorEvent::OffsetCommitAccepted { .. }
            | CoordinatorEvent::OffsetCommitRejected { .. } => {}
        }
    }

    fn consumer(&mut self, idx: usize, at: Millis, node: i32, e: &ConsumerGroupEvent) {
        let group = e.group();
        match e {
            ConsumerGroupEvent::MemberJoined { member_id, .. } => {
                self.change(idx, at, node, group, |s| {
                    s.members.insert(member_id.clone());
                    s.classic_state = None;
                })
            }
            ConsumerGroupEvent::MemberRemoved { member_id, .. } => {
                self.change(idx, at, node, group, |s| {
                    s.members.remove(member_id);
                })
            }
            ConsumerGroupEvent::GroupLoaded { members, .. } => {
                let members = members.iter().map(|m| m.member_id.clone()).collect();
                self.change(idx, at, node, group, |s| {
                    *s = Snapshot { members, ..Default::default() }
                })
            }
            ConsumerGroupEvent::GroupUpgraded { members, .. } => {
                let members = members.iter().map(|m| m.member_id.clone()).collect();
                self.change(idx, at, node, group, |s| {
                    *s = Snapshot { members, ..Default::default() }
                })
            }
            ConsumerGroupEvent::GroupDowngraded { members, leaving_member, .. } => {
                let members =
                    members.iter().map(|m| m.member_id.clone()).filter(|m| m != leaving_member);
                let members = members.collect();
                // The downgraded group is written, then rebalances (its state change follows).
                self.change(idx, at, node, group, |s| {
                    *s = Snapshot { members, ..Default::default() }
                })
            }
            ConsumerGroupEvent::GroupEpochBumped { .. }
            | ConsumerGroupEvent::TargetAssignmentComputed { .. }
            | ConsumerGroupEvent::MemberEpochChanged { .. }
            | ConsumerGroupEvent::PartitionsAssigned { .. }
            | ConsumerGroupEvent::PartitionsRevoking { .. }
            | ConsumerGroupEvent::PartitionsReleased { .. }
            | ConsumerGroupEvent::UpgradeRefused { .. }
            | ConsumerGroupEvent::EmptyGroupDeleted { .. } => {}
        }
    }
}

/// Kafka's name of a classic group state, as DescribeGroups and ListGroups give it.
fn kafka_name(s: GroupState) -> &'static str {
    match s {
        GroupState::Empty => "Empty",
        GroupState::PreparingRebalance => "PreparingRebalance",
        GroupState::CompletingRebalance => "CompletingRebalance",
        GroupState::Stable => "Stable",
        GroupState::Dead => "Dead",
    }
}

/// The admin-answer anomalies of `history` (see the module docs).
pub(crate) fn check(history: &History) -> Vec<Anomaly> {
    let mut timelines = Timelines::default();
    let mut groups: BTreeMap<String, String> = BTreeMap::new();
    let mut out = Vec::new();
    for (idx, e) in history.events().iter().enumerate() {
        let at = e.at_ms;
        match &e.kind {
            EventKind::Coordinator { broker, event } => {
                timelines.coordinator(idx, at, *broker, event)
            }
            EventKind::World(WorldEvent::BrokerCrashed { node })
            | EventKind::World(WorldEvent::BrokerRestarted { node }) => {
                timelines.clear_node(idx, at, *node)
            }
            EventKind::World(WorldEvent::ObserverStarted { observer, group, .. }) => {
                groups.insert(observer.clone(), group.clone());
            }
            EventKind::Member { member, event } => {
                let Some(group) = groups.get(member) else { continue };
                let empty = Timeline::default();
                match event {
                    MemberEvent::GroupDescribed {
                        node_id,
                        sent_at,
                        api,
                        error: None,
                        state,
                        members,
                        ..
                    } => {
                        let t = timelines.by.get(&(*node_id, group.clone())).unwrap_or(&empty);
                        let window = t.window(*sent_at, idx);
                        let say = |what: String| {
                            Anomaly::new(
                                AnomalyClass::AdminMismatch,
                                None,
                                at,
                                format!("{member}'s {api} (sent at {sent_at} ms) from broker-{node_id}: {what}"),
                                vec![idx],
                            )
                        };
                        let classic = api == "DescribeGroups";
                        let wrong = described(&window, classic, state, members);
                        out.extend(wrong.into_iter().map(say));
                    }
                    MemberEvent::GroupsListed { node_id, sent_at, error: None, groups: listed } => {
                        let t = timelines.by.get(&(*node_id, group.clone())).unwrap_or(&empty);
                        let window = t.window(*sent_at, idx);
                        let always = window.iter().all(|s| !s.members.is_empty());
                        if always && !listed.iter().any(|l| &l.group == group) {
                            out.push(Anomaly::new(
                                AnomalyClass::AdminMismatch,
                                None,
                                at,
                                format!(
                                    "{member}'s ListGroups (sent at {sent_at} ms) from broker-{node_id} \
                                     leaves out group {group}, which had members there throughout"
                                ),
                                vec![idx],
                            ));
                        }
                    }
                    _ => {}
                }
            }
            EventKind::World(_) => {}
        }
    }
    out
}

/// What is wrong with a describe answer (`state`, `members`) given the snapshots of its window.
fn described(
    window: &[&Snapshot],
    classic: bool,
    state: &str,
    members: &[DescribedMember],
) -> Vec<String> {
    let mut wrong = Vec::new();
    for m in members {
        if !window.iter().any(|s| s.members.contains(&m.member_id)) {
            wrong.push(format!("describes {} who was not a member then", m.member_id));
        }
    }
    if state != "Dead" {
        let throughout = window.iter().skip(1).fold(window[0].members.clone(), |acc, s| {
            acc.intersection(&s.members).cloned().collect()
        });
        for id in throughout {
            if !members.iter().any(|m| m.member_id == id) {
                wrong.push(format!("leaves out member {id}, in the group throughout"));
            }
        }
    }
    let shown: Option<Assignment> =
        members.iter().map(|m| m.partitions.clone().map(|p| (m.member_id.clone(), p))).collect();
    if classic && state == kafka_name(GroupState::Stable) {
        let stable_with = |s: &&&Snapshot| s.classic_state == Some(GroupState::Stable);
        let candidates: Vec<&Assignment> =
            window.iter().filter(stable_with).filter_map(|s| s.assignment.as_ref()).collect();
        if let Some(shown) = shown.filter(|a| !a.is_empty()) {
            if !candidates.is_empty() && !candidates.contains(&&shown) {
                wrong.push(format!(
                    "shows an assignment no generation current then had stored ({} members)",
                    shown.len()
                ));
            }
        }
        if !window.iter().any(|s| s.classic_state == Some(GroupState::Stable)) {
            wrong.push("describes the classic group Stable; it was not Stable then".into());
        }
    }
    wrong
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(members: &[&str], state: Option<GroupState>) -> Snapshot {
        Snapshot {
            members: members.iter().map(|m| m.to_string()).collect(),
            classic_state: state,
            assignment: None,
        }
    }

    fn member(id: &str) -> DescribedMember {
        DescribedMember { member_id: id.into(), instance_id: None, partitions: None, epoch: None }
    }

    #[test]
    fn a_member_in_the_group_at_some_instant_of_the_window_may_be_described() {
        let (a, b) = (snap(&["m1"], None), snap(&["m1", "m2"], None));
        assert!(described(&[&a, &b], false, "Stable", &[member("m1"), member("m2")]).is_empty());
        assert!(described(&[&a, &b], false, "Stable", &[member("m1")]).is_empty());
    }

    #[test]
    fn a_member_never_in_the_group_then_or_one_left_out_throughout_is_wrong() {
        let a = snap(&["m1", "m2"], None);
        let wrong = described(&[&a], false, "Stable", &[member("m1"), member("m9")]);
        assert_eq!(wrong.len(), 2, "{wrong:?}");
        assert!(wrong[0].contains("m9") && wrong[1].contains("m2"), "{wrong:?}");
        // A Dead answer shows no members and leaves nobody out.
        assert!(described(&[&a], false, "Dead", &[]).is_empty());
    }

    #[test]
    fn a_stable_classic_group_shows_a_stored_assignment_of_its_window() {
        let tp = |p| TopicPartition::new("t", p);
        let mut s = snap(&["m1"], Some(GroupState::Stable));
        s.assignment = Some([("m1".to_string(), vec![tp(0)])].into());
        let mut shown = member("m1");
        shown.partitions = Some(vec![tp(0)]);
        assert!(described(&[&s], true, "Stable", &[shown.clone()]).is_empty());
        shown.partitions = Some(vec![tp(1)]);
        assert_eq!(described(&[&s], true, "Stable", &[shown.clone()]).len(), 1);
        let rebalancing = snap(&["m1"], Some(GroupState::PreparingRebalance));
        assert_eq!(described(&[&rebalancing], true, "Stable", &[member("m1")]).len(), 1);
    }

    #[test]
    fn the_window_starts_with_the_snapshot_in_force_when_the_request_was_sent() {
        let mut t = Timeline::default();
        t.push(1, 100, snap(&["m1"], None));
        t.push(5, 200, snap(&["m2"], None));
        t.push(9, 300, snap(&[], None));
        let w = t.window(150, 8);
        assert_eq!(w, vec![&snap(&["m1"], None), &snap(&["m2"], None)]);
        // Sent before anything was recorded: the group had no members yet.
        assert_eq!(t.window(50, 2), vec![&Snapshot::default(), &snap(&["m1"], None)]);
    }
}
