//! The rebalance story of a history: one [`Unit`] per rebalance (a classic group's generation, a
//! consumer group's target assignment epoch), what preceded it and what happened during it, the
//! assignment it settled on and the commits made under it; then how the run ended.
//!
//! The classic and consumer halves (`classic.rs`, `consumer.rs`) decide where a rebalance starts
//! and ends; this file holds the model, reads the world's events and the commits, and files
//! every [`Item`] under the rebalance it belongs to once the units are known.

use std::collections::{BTreeMap, BTreeSet};

use groupsim_history::CoordinatorEvent;
use groupsim_wire::{Millis, TopicPartition};

use super::items::{self, Item, What};
use groupsim_history::{Event, EventKind, History, WorldEvent};

/// What a unit counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    /// A classic group's generation.
    Generation,
    /// A consumer group's target assignment epoch.
    TargetEpoch,
}

/// How a rebalance ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Outcome {
    /// Classic: the leader's assignment was stored. Consumer: every member of the target
    /// reached its epoch, reconciled.
    Settled(Millis),
    /// Classic: the join phase ended with no member; the group is Empty.
    Empty,
    /// Classic: the group went back to PreparingRebalance before the assignment was stored.
    Abandoned(Millis),
    /// The group stopped rebalancing here for the reason given (unloaded, converted).
    Interrupted(Millis, &'static str),
    /// Consumer: the group epoch moved on before every member reached this target.
    Superseded(Millis),
    /// Still rebalancing when the run ended.
    Unsettled,
}

/// Commits one member made under one rebalance.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Tally {
    /// Commits accepted (one per partition).
    pub(super) accepted: u64,
    /// Commits refused, by Kafka's error name.
    pub(super) refused: BTreeMap<String, u64>,
}

/// One rebalance.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Unit {
    /// The group.
    pub(super) group: String,
    /// Generation or target epoch.
    pub(super) kind: Kind,
    /// The generation or target epoch it formed (the one expected, if it never formed).
    pub(super) number: i32,
    /// When the group began rebalancing towards it.
    pub(super) started_ms: Millis,
    /// When its membership was fixed (join phase completed, target computed); `None` if never.
    pub(super) formed_ms: Option<Millis>,
    /// How it ended.
    pub(super) outcome: Outcome,
    /// Classic: the protocol (assignor) chosen. Consumer: the server assignor.
    pub(super) protocol: Option<String>,
    /// Classic: the leader's member id.
    pub(super) leader: Option<String>,
    /// Member ids, sorted.
    pub(super) members: Vec<String>,
    /// Member id -> partitions, once known (stored assignment, target assignment).
    pub(super) assignment: Option<BTreeMap<String, Vec<TopicPartition>>>,
    /// What happened between the previous rebalance and its start (or at its start).
    pub(super) why: Vec<Item>,
    /// What happened while it was under way.
    pub(super) during: Vec<Item>,
    /// Member id -> the commits made under it.
    pub(super) commits: BTreeMap<String, Tally>,
}

impl Unit {
    /// A unit that began at `started_ms` and formed now.
    pub(super) fn formed(
        group: &str,
        kind: Kind,
        number: i32,
        started_ms: Millis,
        at: Millis,
    ) -> Self {
        Self {
            group: group.to_string(),
            kind,
            number,
            started_ms,
            formed_ms: Some(at),
            outcome: Outcome::Unsettled,
            protocol: None,
            leader: None,
            members: Vec::new(),
            assignment: None,
            why: Vec::new(),
            during: Vec::new(),
            commits: BTreeMap::new(),
        }
    }

    /// When it stopped being under way, if it did.
    pub(super) fn end_ms(&self) -> Option<Millis> {
        match self.outcome {
            Outcome::Settled(t)
            | Outcome::Abandoned(t)
            | Outcome::Interrupted(t, _)
            | Outcome::Superseded(t) => Some(t),
            Outcome::Empty => self.formed_ms,
            Outcome::Unsettled => None,
        }
    }

    /// Whether it settled.
    pub(super) fn settled(&self) -> bool {
        matches!(self.outcome, Outcome::Settled(_))
    }

    /// Whether it is still under way.
    pub(super) fn open(&self) -> bool {
        self.outcome == Outcome::Unsettled
    }
}

/// How the run ended.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Ending {
    /// The liveness phase's deadline, if the run had one.
    pub(super) deadline_ms: Option<Millis>,
    /// The liveness rule held since this instant for this grace (an early end).
    pub(super) held: Option<(Millis, Millis)>,
    /// The last event's instant.
    pub(super) ended_ms: Millis,
}

/// A run's rebalance story.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Story {
    /// Scenario and seed, from `RunStarted`.
    pub(super) run: Option<(String, u64)>,
    /// Topics as created, with their partition counts.
    pub(super) topics: Vec<(String, i32)>,
    /// The seed's swarm choice, if any.
    pub(super) swarm: Option<String>,
    /// Every rebalance, by start.
    pub(super) units: Vec<Unit>,
    /// What happened after the last rebalance ended.
    pub(super) after: Vec<Item>,
    /// How the run ended.
    pub(super) ending: Ending,
}

/// Where a group's rebalancing stands while the history is read.
#[derive(Default)]
pub(super) struct Track {
    /// A rebalance under way whose unit does not exist yet: when it began and the generation
    /// or epoch it should form.
    pub(super) pending: Option<(Millis, i32, Kind)>,
    /// Index of the group's latest unit.
    pub(super) current: Option<usize>,
    /// Consumer groups: member id -> (member epoch, reconciliation state).
    pub(super) epochs: BTreeMap<String, (i32, String)>,
}

/// Reads a history into its story.
pub(super) fn build(history: &History) -> Story {
    let mut b = Builder::default();
    let events = history.events();
    for e in events {
        b.event(e);
    }
    b.story.ending.ended_ms = events.last().map_or(0, |e| e.at_ms);
    b.finish()
}

/// The story so far, the groups' tracks and the items not yet filed.
#[derive(Default)]
pub(super) struct Builder {
    pub(super) story: Story,
    pub(super) tracks: BTreeMap<String, Track>,
    pub(super) items: Vec<Item>,
    /// A trigger that fired at this instant: the fault that follows is its.
    trigger: Option<(Millis, String)>,
}

impl Builder {
    fn event(&mut self, e: &Event) {
        let at = e.at_ms;
        match &e.kind {
            EventKind::World(w) => self.world(at, w),
            EventKind::Coordinator { event, .. } => match event {
                CoordinatorEvent::OffsetCommitAccepted { group, member_id, generation, .. } => {
                    if let Some(t) = self.tally(group, member_id, *generation) {
                        t.accepted += 1;
                    }
                }
                CoordinatorEvent::OffsetCommitRejected {
                    group,
                    member_id,
                    generation,
                    error,
                    ..
                } => {
                    if let Some(t) = self.tally(group, member_id, *generation) {
                        *t.refused.entry(error.clone()).or_insert(0) += 1;
                    }
                }
                CoordinatorEvent::ConsumerGroup(c) => self.consumer(at, c),
                other => self.classic(at, other),
            },
            EventKind::Member { .. } => {}
        }
    }

    fn world(&mut self, at: Millis, w: &WorldEvent) {
        let text = match w {
            WorldEvent::RunStarted { scenario, seed } => {
                self.story.run = Some((scenario.clone(), *seed));
                return;
            }
            WorldEvent::TopicCreated { topic, partitions } => {
                self.story.topics.push((topic.clone(), *partitions));
                return;
            }
            WorldEvent::SwarmChosen { description } => {
                self.story.swarm = Some(description.clone());
                return;
            }
            WorldEvent::LivenessPhase { deadline_ms, .. } => {
                self.story.ending.deadline_ms = Some(*deadline_ms);
                return;
            }
            WorldEvent::LivenessHeld { since_ms, grace_ms } => {
                self.story.ending.held = Some((*since_ms, *grace_ms));
                return;
            }
            WorldEvent::TriggerFired { trigger, .. } => {
                self.trigger = Some((at, items::trigger_event(trigger).to_string()));
                return;
            }
            WorldEvent::FaultInjected { fault, applied } => {
                let mut text = items::fault(fault);
                if let Some((_, on)) = self.trigger.take().filter(|(t, _)| *t == at) {
                    text.push_str(&format!(" [on {on}]"));
                }
                if !applied {
                    text.push_str(" (skipped: no target)");
                }
                text
            }
            WorldEvent::ServeFault { description, .. } => description.clone(),
            WorldEvent::MemberExited { member, status, .. } => {
                format!("{member} exited ({status})")
            }
            _ => return,
        };
        self.item(at, None, What::Text(text));
    }

    /// Notes an item for filing once the units are known.
    pub(super) fn item(&mut self, at_ms: Millis, group: Option<&str>, what: What) {
        self.items.push(Item { at_ms, group: group.map(str::to_string), what });
    }

    /// The group's track.
    pub(super) fn track(&mut self, group: &str) -> &mut Track {
        self.tracks.entry(group.to_string()).or_default()
    }

    /// The group's latest unit, if it is still under way.
    pub(super) fn open_unit(&mut self, group: &str) -> Option<&mut Unit> {
        let i = self.tracks.get(group)?.current?;
        Some(&mut self.story.units[i]).filter(|u| u.open())
    }

    /// Adds a unit as the group's latest.
    pub(super) fn push(&mut self, unit: Unit) -> usize {
        let i = self.story.units.len();
        let group = unit.group.clone();
        self.story.units.push(unit);
        self.track(&group).current = Some(i);
        i
    }

    /// The tally of a commit made by `member_id` under `generation` (a consumer member's
    /// epoch): counted under the group's latest rebalance that formed that generation or an
    /// earlier one (the latest one for a commit made under none, such as generation -1).
    fn tally(&mut self, group: &str, member_id: &str, generation: i32) -> Option<&mut Tally> {
        let mine = || self.story.units.iter().enumerate().rev().filter(|(_, u)| u.group == group);
        let i = mine()
            .find(|(_, u)| u.number <= generation)
            .or_else(|| mine().next())
            .map(|(i, _)| i)?;
        Some(self.story.units[i].commits.entry(member_id.to_string()).or_default())
    }

    /// Closes the story: a rebalance still forming becomes an unsettled unit, units go in
    /// start order, and every item is filed under its rebalance.
    fn finish(mut self) -> Story {
        let pending: Vec<(String, (Millis, i32, Kind))> =
            self.tracks.iter().filter_map(|(g, t)| t.pending.map(|p| (g.clone(), p))).collect();
        for (group, (started, number, kind)) in pending {
            let mut u = Unit::formed(&group, kind, number, started, started);
            u.formed_ms = None;
            self.push(u);
        }
        let mut units = std::mem::take(&mut self.story.units);
        // Stable: units of one instant keep the order they formed in.
        units.sort_by_key(|u| u.started_ms);
        let groups: BTreeSet<String> = units.iter().map(|u| u.group.clone()).collect();
        for item in std::mem::take(&mut self.items) {
            let concerned: Vec<&String> = match &item.group {
                Some(g) => vec![g],
                None => groups.iter().collect(),
            };
            let mut filed = false;
            for g in concerned {
                if let Some(slot) = file(&mut units, g, item.at_ms) {
                    slot.push(item.clone());
                    filed = true;
                }
            }
            if !filed {
                self.story.after.push(item);
            }
        }
        self.story.units = units;
        self.story
    }
}

/// Where an item of `group` at `at` belongs: the why of the rebalance that starts at that
/// instant, else the during of the one under way, else the why of the next one (`None`: after
/// the group's last rebalance).
fn file<'a>(units: &'a mut [Unit], group: &str, at: Millis) -> Option<&'a mut Vec<Item>> {
    let mine = |u: &Unit| u.group == group;
    if let Some(i) = units.iter().position(|u| mine(u) && u.started_ms == at) {
        return Some(&mut units[i].why);
    }
    let under_way =
        |u: &Unit| mine(u) && u.started_ms < at && u.end_ms().is_none_or(|end| at <= end);
    if let Some(i) = units.iter().position(under_way) {
        return Some(&mut units[i].during);
    }
    let i = units.iter().position(|u| mine(u) && u.started_ms > at)?;
    Some(&mut units[i].why)
}
