//! A live view of the group for the nemesis: what state the group is in, who leads it, who is in
//! the current generation, which broker coordinates it and whether it is still loading, read
//! from the history as the run records it. Triggers pick their targets from it, and the world's
//! probes name the group state a fault struck in.
//!
//! It only reads the history, so it can never change a run. KIP-848 consumer groups have a
//! view of their own (`consumer`). The simulation's nemesis and the served cluster's both read
//! it, and both turn what it saw into trigger events with [`Seen::trigger_point`]; a served
//! cluster may hold several groups, so its view watches one ([`GroupWatch::of_group`]).

pub mod consumer;

use std::collections::BTreeMap;

use std::collections::BTreeSet;

use self::consumer::{ConsumerSeen, ConsumerWatch};
use crate::triggers::TriggerEvent;
use groupsim_history::{
    ConsumerGroupEvent, CoordinatorEvent, Event, EventKind, GroupState, WorldEvent,
};
use groupsim_wire::Millis;

/// A protocol event the view saw, for triggers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Seen {
    /// The group entered CompletingRebalance; its leader, when known.
    CompletingRebalance { leader: Option<String> },
    /// A generation started with these members (names) and leader.
    GenerationStarted { leader: Option<String>, members: Vec<String> },
    /// The generation's assignment was stored; the generation's members.
    AssignmentStored { members: Vec<String> },
    /// An offset commit was appended for this member.
    CommitAppended { member: String },
    /// A rebalance of a group with members began; the current generation's members.
    PreparingRebalance { members: Vec<String> },
    /// A consumer-group member was asked to revoke partitions: the members the latest target
    /// gives those partitions to (their new owners), or the revoking member when none (names).
    RevocationRequested { members: Vec<String> },
    /// A consumer-group member was handed partitions another member released: the new owner,
    /// then the previous owners still in the group (names).
    HandedOver { members: Vec<String> },
    /// A consumer-group member in the group was moved to a newer member epoch (name).
    EpochAdvanced { member: String },
}

impl Seen {
    /// The trigger event this is, with the members a trigger fired on it may strike (one is
    /// drawn when several): the one mapping every nemesis uses.
    pub fn trigger_point(self) -> (TriggerEvent, Vec<String>) {
        match self {
            Seen::CompletingRebalance { leader } => {
                (TriggerEvent::CompletingRebalance, leader.into_iter().collect())
            }
            Seen::GenerationStarted { leader, .. } => {
                (TriggerEvent::JoinResponses, leader.into_iter().collect())
            }
            Seen::AssignmentStored { members } => (TriggerEvent::SyncResponses, members),
            Seen::CommitAppended { member } => (TriggerEvent::CommitAppended, vec![member]),
            Seen::PreparingRebalance { members } => (TriggerEvent::PreparingRebalance, members),
            Seen::RevocationRequested { members } => (TriggerEvent::RevocationRequested, members),
            Seen::HandedOver { members } => (TriggerEvent::PartitionHandedOver, members),
            Seen::EpochAdvanced { member } => (TriggerEvent::MemberEpochAdvanced, vec![member]),
        }
    }
}

/// The trigger events a [`GroupWatch`] reports ([`Seen::trigger_point`]'s); the others come
/// from member-side probes.
pub const WATCHED_TRIGGER_EVENTS: [TriggerEvent; 8] = [
    TriggerEvent::CompletingRebalance,
    TriggerEvent::JoinResponses,
    TriggerEvent::SyncResponses,
    TriggerEvent::CommitAppended,
    TriggerEvent::PreparingRebalance,
    TriggerEvent::RevocationRequested,
    TriggerEvent::PartitionHandedOver,
    TriggerEvent::MemberEpochAdvanced,
];

/// The group as the history shows it so far.
#[derive(Clone, Debug, Default)]
pub struct GroupWatch {
    /// The group's state at its current coordinator.
    pub state: Option<GroupState>,
    /// The broker that coordinates the group, once a move or load named it.
    pub coordinator: Option<i32>,
    /// Until when the current coordinator is loading the group (after a move).
    pub loading_until: Option<Millis>,
    /// The current generation's leader (member name).
    pub leader: Option<String>,
    /// The current generation's members (names).
    pub members: Vec<String>,
    /// When a rebalance of a group that had members began (the group entered PreparingRebalance
    /// from Stable or CompletingRebalance), while it lasts: its join phase ends a rebalance
    /// timeout later unless every member rejoins first.
    pub preparing_since: Option<Millis>,
    /// The generation `leader` and `members` belong to.
    generation: i32,
    /// The group entered CompletingRebalance for a generation whose start is not read yet.
    completing: Option<i32>,
    /// Member id -> member name (the client id), classic and consumer-group members alike.
    names: BTreeMap<String, String>,
    /// KIP-848 consumer groups.
    consumer: ConsumerWatch,
    /// Events read so far.
    seen: usize,
    /// The one group watched, when the history may hold several (empty until the first group
    /// forms: that one); `None` reads every group's events as one group's.
    group: Option<String>,
    /// The group's members now, by member id (classic and consumer groups alike), for picks.
    member_ids: BTreeSet<String>,
}

impl GroupWatch {
    /// A view of `group` only (empty: the first group that forms), for a history that may hold
    /// several groups.
    pub fn of_group(group: &str) -> Self {
        Self { group: Some(group.to_string()), ..Self::default() }
    }

    /// The group watched, once known (see [`Self::of_group`]).
    pub fn group(&self) -> Option<&str> {
        self.group.as_deref().filter(|g| !g.is_empty())
    }

    /// The member id `n` picks among the group's members now (sorted, counted modulo their
    /// number).
    pub fn pick(&self, n: u32) -> Option<String> {
        let len = self.member_ids.len();
        (len > 0).then(|| self.member_ids.iter().nth(n as usize % len).cloned()).flatten()
    }

    /// The member id of the group's member named `name` now: its client id is `name`, or an
    /// incarnation of it (`name.N`).
    pub fn member_id_named(&self, name: &str) -> Option<String> {
        self.member_ids
            .iter()
            .find(|id| {
                let n = self.name(id);
                n == name || n.strip_prefix(name).is_some_and(|rest| rest.starts_with('.'))
            })
            .cloned()
    }

    /// Whether the coordinator is loading the group at `now`.
    pub fn loading(&self, now: Millis) -> bool {
        self.loading_until.is_some_and(|until| now < until)
    }

    /// The group's state for reports: `Loading` while the coordinator loads, else the state.
    pub fn state_name(&self, now: Millis) -> String {
        if self.loading(now) {
            "Loading".to_string()
        } else {
            self.state.map(|s| format!("{s:?}")).unwrap_or_else(|| "NoGroup".to_string())
        }
    }

    /// When the join phase of the rebalance under way ends at the latest (its start plus the
    /// group's rebalance timeout, `rebalance_timeout_ms`), if a rebalance of a group with
    /// members is under way.
    pub fn join_deadline(&self, rebalance_timeout_ms: Millis) -> Option<Millis> {
        self.preparing_since.map(|since| since + rebalance_timeout_ms)
    }

    /// Reads the events recorded since the last call and returns the protocol events among them.
    pub fn update(&mut self, events: &[Event]) -> Vec<Seen> {
        let mut out = Vec::new();
        for e in &events[self.seen.min(events.len())..] {
            self.observe(e, &mut out);
        }
        self.seen = events.len();
        out
    }

    /// Reads `fresh`, the events recorded since the last read, when the caller has only those
    /// at hand (a served cluster's recorder hands out the new ones); as [`Self::update`].
    pub fn read_new(&mut self, fresh: &[Event]) -> Vec<Seen> {
        let mut out = Vec::new();
        for e in fresh {
            self.observe(e, &mut out);
        }
        self.seen += fresh.len();
        out
    }

    /// A member's name (its client id) by member id; the id itself when unknown.
    pub fn name(&self, member_id: &str) -> String {
        self.names.get(member_id).cloned().unwrap_or_else(|| member_id.to_string())
    }

    fn is_coordinator(&self, broker: i32) -> bool {
        self.coordinator.is_none_or(|c| c == broker)
    }

    /// Whether `event` concerns the group watched; adopts the first group that forms when none
    /// is named. Members joining are read from every group (their names are names anywhere).
    fn in_group(&mut self, event: &CoordinatorEvent) -> bool {
        let Some(group) = &mut self.group else { return true };
        if matches!(event, CoordinatorEvent::MemberAdded { .. }) {
            return true;
        }
        let of = match event {
            CoordinatorEvent::GroupStateChanged { group, .. }
            | CoordinatorEvent::MemberRemoved { group, .. }
            | CoordinatorEvent::GenerationStarted { group, .. }
            | CoordinatorEvent::AssignmentStored { group, .. }
            | CoordinatorEvent::OffsetCommitAccepted { group, .. }
            | CoordinatorEvent::OffsetCommitRejected { group, .. }
            | CoordinatorEvent::GroupLoaded { group, .. }
            | CoordinatorEvent::GroupUnloaded { group, .. }
            | CoordinatorEvent::MemberAdded { group, .. } => group.as_str(),
            CoordinatorEvent::ConsumerGroup(e) => e.group(),
        };
        if group.is_empty() {
            if !matches!(
                event,
                CoordinatorEvent::GroupStateChanged { .. } | CoordinatorEvent::ConsumerGroup(_)
            ) {
                return false;
            }
            *group = of.to_string();
        }
        of == group
    }

    /// Keeps the members by id (for picks) from a group event.
    fn track_members(&mut self, event: &CoordinatorEvent) {
        match event {
            CoordinatorEvent::GenerationStarted { members, .. }
            | CoordinatorEvent::GroupLoaded { members, .. } => {
                self.member_ids = members.iter().cloned().collect();
            }
            CoordinatorEvent::MemberRemoved { member_id, .. } => {
                self.member_ids.remove(member_id);
            }
            CoordinatorEvent::ConsumerGroup(e) => match e {
                ConsumerGroupEvent::MemberJoined { member_id, .. } => {
                    self.member_ids.insert(member_id.clone());
                }
                ConsumerGroupEvent::MemberRemoved { member_id, .. } => {
                    self.member_ids.remove(member_id);
                }
                ConsumerGroupEvent::GroupLoaded { members, .. } => {
                    self.member_ids = members.iter().map(|m| m.member_id.clone()).collect();
                }
                _ => {}
            },
            _ => {}
        }
    }

    fn observe(&mut self, e: &Event, out: &mut Vec<Seen>) {
        if let EventKind::Coordinator { event, .. } = &e.kind {
            if !self.in_group(event) {
                return;
            }
            self.track_members(event);
        }
        match &e.kind {
            EventKind::World(WorldEvent::CoordinatorMoved { to, load_ms, .. }) => {
                self.coordinator = Some(*to);
                self.loading_until = Some(e.at_ms + load_ms);
            }
            EventKind::Coordinator { broker, event } => match event {
                CoordinatorEvent::MemberAdded { member_id, client_id, .. } => {
                    self.names.insert(member_id.clone(), client_id.clone());
                }
                CoordinatorEvent::GroupLoaded { .. } if self.is_coordinator(*broker) => {
                    self.coordinator = Some(*broker);
                    self.loading_until = None;
                    self.preparing_since = None;
                }
                CoordinatorEvent::GroupStateChanged { from, to, generation, .. }
                    if self.is_coordinator(*broker) =>
                {
                    self.state = Some(*to);
                    self.preparing_since = match to {
                        GroupState::PreparingRebalance if *from != GroupState::Empty => {
                            out.push(Seen::PreparingRebalance { members: self.members.clone() });
                            Some(e.at_ms)
                        }
                        _ => None,
                    };
                    if *to == GroupState::CompletingRebalance {
                        // The state change and the generation's start may come in either order:
                        // report it once the generation's leader is known.
                        if self.generation == *generation {
                            out.push(Seen::CompletingRebalance { leader: self.leader.clone() });
                        } else {
                            self.completing = Some(*generation);
                        }
                    }
                }
                CoordinatorEvent::GenerationStarted { leader, members, generation, .. }
                    if self.is_coordinator(*broker) =>
                {
                    self.generation = *generation;
                    self.leader = leader.as_deref().map(|l| self.name(l));
                    self.members = members.iter().map(|m| self.name(m)).collect();
                    out.push(Seen::GenerationStarted {
                        leader: self.leader.clone(),
                        members: self.members.clone(),
                    });
                    if self.completing.take() == Some(*generation) {
                        out.push(Seen::CompletingRebalance { leader: self.leader.clone() });
                    }
                }
                CoordinatorEvent::AssignmentStored { .. } if self.is_coordinator(*broker) => {
                    out.push(Seen::AssignmentStored { members: self.members.clone() });
                }
                CoordinatorEvent::OffsetCommitAccepted { member_id, .. } => {
                    out.push(Seen::CommitAppended { member: self.name(member_id) });
                }
                CoordinatorEvent::ConsumerGroup(event) => {
                    let mut seen = Vec::new();
                    self.consumer.observe(event, &mut seen);
                    if let ConsumerGroupEvent::MemberJoined { member_id, client_id, .. } = event {
                        self.names.insert(member_id.clone(), client_id.clone());
                    }
                    for s in seen {
                        out.push(match s {
                            ConsumerSeen::RevocationRequested { member, new_owners } => {
                                let members =
                                    if new_owners.is_empty() { vec![member] } else { new_owners };
                                Seen::RevocationRequested {
                                    members: members.iter().map(|m| self.name(m)).collect(),
                                }
                            }
                            ConsumerSeen::HandedOver { new_owner, previous } => {
                                let members = std::iter::once(&new_owner).chain(&previous);
                                Seen::HandedOver {
                                    members: members.map(|m| self.name(m)).collect(),
                                }
                            }
                            ConsumerSeen::EpochAdvanced { member } => {
                                Seen::EpochAdvanced { member: self.name(&member) }
                            }
                        });
                    }
                }
                _ => {}
            },
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn changed(at_ms: Millis, from: GroupState, to: GroupState) -> Event {
        Event {
            at_ms,
            kind: EventKind::Coordinator {
                broker: 0,
                event: CoordinatorEvent::GroupStateChanged {
                    group: "g".into(),
                    from,
                    to,
                    generation: 1,
                },
            },
        }
    }

    #[test]
    fn a_rebalance_of_a_formed_group_is_seen_with_its_join_deadline() {
        use GroupState::*;
        let mut w = GroupWatch::default();
        let events = vec![changed(100, Empty, PreparingRebalance)];
        assert!(w.update(&events).is_empty(), "forming a group is not a rebalance of one");
        assert_eq!(w.join_deadline(15_000), None);
        let mut events = events;
        events.push(changed(3_100, PreparingRebalance, CompletingRebalance));
        events.push(changed(3_150, CompletingRebalance, Stable));
        events.push(changed(9_000, Stable, PreparingRebalance));
        let seen = w.update(&events);
        assert!(seen.contains(&Seen::PreparingRebalance { members: vec![] }), "{seen:?}");
        assert_eq!(w.join_deadline(15_000), Some(24_000));
        events.push(changed(12_000, PreparingRebalance, CompletingRebalance));
        w.update(&events);
        assert_eq!(w.join_deadline(15_000), None);
    }
}
