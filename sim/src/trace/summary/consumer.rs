//! Consumer groups (KIP-848): a rebalance starts when the group epoch is bumped, forms when the
//! target assignment of that epoch is computed, and settles when every member of the target has
//! reached the epoch with nothing left to revoke or wait for (`STABLE`). A bump before that
//! supersedes it. An online upgrade or downgrade interrupts a rebalance under way.

use groupsim_history::ConsumerGroupEvent;
use groupsim_wire::Millis;

use super::items::{self, What};
use super::story::{Builder, Kind, Outcome, Unit};

/// Kafka's name of a reconciled member's state.
const STABLE: &str = "STABLE";

impl Builder {
    /// Reads a consumer-group event.
    pub(super) fn consumer(&mut self, at: Millis, e: &ConsumerGroupEvent) {
        let group = e.group();
        match e {
            ConsumerGroupEvent::MemberJoined { member_id, .. } => {
                self.item(at, Some(group), What::Joined(member_id.clone()));
                self.track(group).epochs.insert(member_id.clone(), (0, String::new()));
            }
            ConsumerGroupEvent::MemberRemoved { member_id, reason, .. } => {
                let why = items::consumer_removal(*reason);
                self.item(at, Some(group), What::Removed(member_id.clone(), why));
                self.track(group).epochs.remove(member_id);
            }
            ConsumerGroupEvent::GroupEpochBumped { epoch, .. } => {
                if let Some(u) = self.open_unit(group) {
                    u.outcome = Outcome::Superseded(at);
                }
                let track = self.track(group);
                match &mut track.pending {
                    Some((_, number, _)) => *number = *epoch,
                    None => track.pending = Some((at, *epoch, Kind::TargetEpoch)),
                }
            }
            ConsumerGroupEvent::TargetAssignmentComputed {
                epoch, assignor, assignments, ..
            } => {
                if let Some(u) = self.open_unit(group) {
                    u.outcome = Outcome::Superseded(at);
                }
                let started = self.track(group).pending.take().map_or(at, |(t, _, _)| t);
                let mut u = Unit::formed(group, Kind::TargetEpoch, *epoch, started, at);
                u.protocol = Some(assignor.clone());
                let mut members: Vec<String> =
                    assignments.iter().map(|a| a.member_id.clone()).collect();
                members.sort();
                u.members = members;
                u.assignment = Some(
                    assignments
                        .iter()
                        .map(|a| (a.member_id.clone(), a.partitions.clone()))
                        .collect(),
                );
                self.push(u);
                self.settle_if_reconciled(at, group);
            }
            ConsumerGroupEvent::MemberEpochChanged { member_id, to, state, .. } => {
                self.track(group).epochs.insert(member_id.clone(), (*to, state.clone()));
                self.settle_if_reconciled(at, group);
            }
            ConsumerGroupEvent::GroupLoaded { members, .. } => {
                let track = self.track(group);
                track.epochs = members
                    .iter()
                    .map(|m| (m.member_id.clone(), (m.member_epoch, m.state.clone())))
                    .collect();
                self.settle_if_reconciled(at, group);
            }
            ConsumerGroupEvent::GroupUpgraded { generation, members, .. } => {
                if let Some(u) = self.open_unit(group) {
                    u.outcome = Outcome::Interrupted(at, "the group was upgraded");
                }
                self.item(at, Some(group), What::Text("upgraded to a consumer group".into()));
                self.track(group).epochs = members
                    .iter()
                    .map(|m| (m.member_id.clone(), (*generation, STABLE.to_string())))
                    .collect();
            }
            ConsumerGroupEvent::GroupDowngraded { .. } => {
                if let Some(u) = self.open_unit(group) {
                    u.outcome = Outcome::Interrupted(at, "the group was downgraded");
                }
                self.item(at, Some(group), What::Text("downgraded to a classic group".into()));
                let track = self.track(group);
                track.epochs.clear();
                track.pending = None;
            }
            ConsumerGroupEvent::UpgradeRefused { reason, .. } => {
                self.item(at, Some(group), What::Text(format!("upgrade refused ({reason})")));
            }
            ConsumerGroupEvent::EmptyGroupDeleted { .. } => {
                self.item(at, Some(group), What::Text("empty group deleted (classic join)".into()));
            }
            ConsumerGroupEvent::PartitionsAssigned { .. }
            | ConsumerGroupEvent::PartitionsRevoking { .. }
            | ConsumerGroupEvent::PartitionsReleased { .. } => {}
        }
    }

    /// Settles the group's target epoch under way once every member of it still in the group
    /// is at that epoch (or later) and reconciled.
    fn settle_if_reconciled(&mut self, at: Millis, group: &str) {
        let Some(track) = self.tracks.get(group) else { return };
        let Some(i) = track.current else { return };
        let u = &self.story.units[i];
        if u.kind != Kind::TargetEpoch || !u.open() {
            return;
        }
        let reconciled = u.members.iter().all(|m| match track.epochs.get(m) {
            Some((epoch, state)) => *epoch >= u.number && state == STABLE,
            None => true,
        });
        if reconciled {
            self.story.units[i].outcome = Outcome::Settled(at);
        }
    }
}
