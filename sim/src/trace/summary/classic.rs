//! Classic groups: a rebalance starts when the group enters PreparingRebalance, forms when the
//! join phase completes a generation, and settles when the leader's assignment is stored. It is
//! abandoned when the group goes back to PreparingRebalance first (a member joined or rejoined
//! during the sync phase) and interrupted when the group is unloaded (its coordinator moved);
//! the group then rebalances again, from that instant.

use groupsim_history::{CoordinatorEvent, GroupState};
use groupsim_wire::Millis;

use super::items::{self, What};
use super::story::{Builder, Kind, Outcome, Unit};

impl Builder {
    /// Reads a classic coordinator event (commits and consumer-group events are read elsewhere).
    pub(super) fn classic(&mut self, at: Millis, e: &CoordinatorEvent) {
        match e {
            CoordinatorEvent::MemberAdded { group, member_id, .. } => {
                self.item(at, Some(group), What::Joined(member_id.clone()));
            }
            CoordinatorEvent::MemberRemoved { group, member_id, reason } => {
                let why = items::classic_removal(*reason);
                self.item(at, Some(group), What::Removed(member_id.clone(), why));
            }
            CoordinatorEvent::GroupStateChanged { group, from, to, generation } => {
                self.state_changed(at, group, *from, *to, *generation);
            }
            CoordinatorEvent::GenerationStarted {
                group,
                generation,
                protocol,
                leader,
                members,
            } => {
                if let Some(u) = self.open_unit(group) {
                    u.outcome = Outcome::Abandoned(at);
                }
                let started = self.track(group).pending.take().map_or(at, |(t, _, _)| t);
                let mut u = Unit::formed(group, Kind::Generation, *generation, started, at);
                u.protocol = protocol.clone();
                u.leader = leader.clone();
                u.members = members.clone();
                if members.is_empty() {
                    u.outcome = Outcome::Empty;
                }
                self.push(u);
            }
            CoordinatorEvent::AssignmentStored { group, generation, assignments } => {
                if let Some(u) = self.open_unit(group).filter(|u| u.number == *generation) {
                    let stored = assignments
                        .iter()
                        .map(|a| (a.member_id.clone(), a.partitions.clone()))
                        .collect();
                    u.assignment = Some(stored);
                    u.outcome = Outcome::Settled(at);
                }
            }
            _ => {}
        }
    }

    fn state_changed(
        &mut self,
        at: Millis,
        group: &str,
        from: GroupState,
        to: GroupState,
        generation: i32,
    ) {
        let ended = match (from, to) {
            (GroupState::CompletingRebalance, GroupState::Stable) => None,
            (GroupState::CompletingRebalance, GroupState::Dead) => {
                Some(Outcome::Interrupted(at, "the group was unloaded"))
            }
            (GroupState::CompletingRebalance, _) => Some(Outcome::Abandoned(at)),
            _ => None,
        };
        if let Some(outcome) = ended {
            if let Some(u) = self.open_unit(group) {
                u.outcome = outcome;
            }
        }
        let track = self.track(group);
        // A rebalance cut short goes on: from here, towards the next generation.
        let rebalancing = to == GroupState::PreparingRebalance
            || (from == GroupState::CompletingRebalance && to == GroupState::Dead);
        if rebalancing && track.pending.is_none() {
            track.pending = Some((at, generation + 1, Kind::Generation));
        }
        // Everyone left before the join phase ended: the generation that follows is empty,
        // formed by GenerationStarted; a group that empties otherwise rebalances no more.
        if to == GroupState::Empty && from != GroupState::PreparingRebalance {
            track.pending = None;
        }
    }
}
