//! A live view of the group for the nemesis: what state the group is in, who leads it, who is in
//! the current generation, which broker coordinates it and whether it is still loading, read
//! from the history as the run records it. Triggers pick their targets from it, and the world's
//! probes name the group state a fault struck in.
//!
//! It only reads the history, so it can never change a run. KIP-848 consumer groups have a
//! view of their own (`consumer`).

pub mod consumer;

use std::collections::BTreeMap;

use self::consumer::{ConsumerSeen, ConsumerWatch};
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
}

impl GroupWatch {
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

    fn name(&self, member_id: &str) -> String {
        self.names.get(member_id).cloned().unwrap_or_else(|| member_id.to_string())
    }

    fn is_coordinator(&self, broker: i32) -> bool {
        self.coordinator.is_none_or(|c| c == broker)
    }

    fn observe(&mut self, e: &Event, out: &mut Vec<Seen>) {
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
