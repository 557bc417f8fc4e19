//! Partitions the coordinator handed to another member while their owner still held them, in
//! ways Kafka allows; each is a hazard of its own, and this module finds where each acted.
//!
//! - `upgrade-mid-rebalance`: Kafka converts a classic group to a consumer group (online
//!   upgrade, KIP-848) from each member's stored assignment. A rebalance that went back to
//!   joining from CompletingRebalance (a member left before the leader's SyncGroup) reset every
//!   stored assignment to empty, but a cooperative member keeps owning its partitions through a
//!   rebalance until an assignment tells it to revoke them. The consumer group then counts those
//!   partitions free and hands them out at once, while their previous owner still processes and
//!   commits them under its new member epoch, which the coordinator accepts (a consumer group's
//!   commit is checked against the member epoch, not the assignment). The history shows it: an
//!   upgrade converts a member with fewer partitions than the member reports owning.
//! - `static-member-missed-rebalance`: a static member (KIP-345) that does not rejoin, cut off
//!   within its session, stays in the next generation with the subscription it last sent, whose
//!   owned partitions are those of the generation before; the leader's cooperative assignor takes
//!   that for what it owns and may give a partition it got since to another member. The static
//!   member, back, is told the new assignment and revokes the partition, committing it under
//!   the current generation after its new owner did. The history shows it: a generation's stored
//!   assignment gives another member a partition a static member of that generation, which had
//!   not joined it, reports owning.
//! - `removed-classic-member-rejoins`: a consumer group that removes a classic member (its
//!   session expired while it was cut off), or was upgraded from a classic group that removed
//!   it so, re-creates it when it rejoins under the same member id (Kafka's classic join to a consumer group creates an unknown member id it is given). The
//!   client hears no UNKNOWN_MEMBER_ID, so a cooperative member still owns the partitions its
//!   removal released, which others may hold by now, and its commits on revoking them are
//!   accepted under its new member epoch. The history shows it: a classic member joins a
//!   consumer group under an id the group removed, reporting partitions it owns.
//! - `lost-downgrade-rebalance`: Kafka writes a group downgraded to the classic protocol with
//!   each member's target assignment and starts the rebalance that follows in memory only. A
//!   coordinator that takes the group over before that rebalance ran loads the written
//!   generation as Stable, so a partition a member was still revoking in the consumer group
//!   (its target gave it to another member) is the other member's, and the owner, rejoining, is
//!   answered that generation without it and commits it on revoking, under the generation that
//!   gave it away. The history shows it: a load of the generation a downgrade wrote, nothing
//!   stored since, gives another member a partition a member reports owning.
//!
//! Each way the member must have heard no error since its last assignment that told it its
//! generation was gone (a member that keeps partitions then is at fault, not Kafka). For each
//! partition the effect lasts until the member gives the partition up (or stops; a commit it
//! sent before, taken after, is one of its commits meanwhile) and, when the member committed
//! the partition meanwhile, until the partition's committed offset is back at
//! or past the highest offset committed on it before those commits, or of the commits
//! themselves: what they moved it back from (the new owner, started below, recommits records
//! until then).

use std::collections::{BTreeMap, BTreeSet};

use groupsim_history::{
    ConsumerGroupEvent, CoordinatorEvent, EventKind, History, MemberEvent, RemovalReason,
    WorldEvent,
};
use groupsim_wire::TopicPartition;

use crate::hazard::{Hazard, Window};

/// The partitions each member id reports owning, read from the members' own events: an
/// assignment adds to them (a cooperative member keeps what it is not told to revoke), a
/// revocation or a loss takes away, and a stopped process owns nothing.
#[derive(Default)]
pub(crate) struct ReportedOwnership {
    /// Member id -> (member name, the partitions it reports owning).
    owned: BTreeMap<String, (String, BTreeSet<TopicPartition>)>,
}

impl ReportedOwnership {
    /// Reads one event; returns the member ids a process that stopped with it held.
    pub(crate) fn read(&mut self, kind: &EventKind) -> Vec<String> {
        match kind {
            EventKind::Member {
                member,
                event: MemberEvent::Assigned { member_id, partitions, .. },
            } => {
                let entry = self
                    .owned
                    .entry(member_id.clone())
                    .or_insert_with(|| (member.clone(), BTreeSet::new()));
                entry.1.extend(partitions.iter().cloned());
            }
            EventKind::Member {
                event:
                    MemberEvent::Revoked { member_id, partitions, .. }
                    | MemberEvent::Lost { member_id, partitions, .. },
                ..
            } => {
                if let Some((_, held)) = self.owned.get_mut(member_id) {
                    for tp in partitions {
                        held.remove(tp);
                    }
                }
            }
            EventKind::World(WorldEvent::MemberStopped { member }) => {
                let ids: Vec<String> = self
                    .owned
                    .iter()
                    .filter(|(_, (name, _))| name == member)
                    .map(|(id, _)| id.clone())
                    .collect();
                for id in &ids {
                    self.owned.remove(id);
                }
                return ids;
            }
            _ => {}
        }
        Vec::new()
    }

    /// The partitions `member_id` reports owning.
    pub(crate) fn held(&self, member_id: &str) -> Option<&BTreeSet<TopicPartition>> {
        self.owned.get(member_id).map(|(_, held)| held)
    }
}

/// One partition taken from a member that still owned it.
struct Open {
    hazard: Hazard,
    cause: usize,
    from: usize,
    member_id: String,
    /// When the member gave the partition up (or stopped).
    released: Option<usize>,
    /// The highest offset the member committed on the partition while the window was open.
    reach: Option<i64>,
    /// The offsets of commits on the partition the member sent while it held the partition and
    /// whose fate nobody has recorded yet (the coordinator's acceptance or refusal, the
    /// member's ack or failure): one sent in the instant the member stopped may be taken after,
    /// and is the member's as much as one taken before.
    in_flight: Vec<i64>,
}

impl Open {
    /// A commit of `offset` met its fate: no longer in flight. Whether it was.
    fn settle(&mut self, offset: i64) -> bool {
        let found = self.in_flight.iter().position(|&o| o == offset);
        found.map(|i| self.in_flight.swap_remove(i)).is_some()
    }
}

/// The windows in which the hazard's effect on a partition lasts.
pub(crate) fn windows(history: &History) -> Vec<Window> {
    let mut owned = ReportedOwnership::default();
    // Members told their generation is gone (a correct client gives its partitions up then;
    // one that keeps them owns nothing the upgrade could take).
    let mut reset: BTreeSet<String> = BTreeSet::new();
    let mut open: BTreeMap<TopicPartition, Open> = BTreeMap::new();
    // Member id -> the last generation it was told it joined, and when; static member ids; the
    // members of each generation started, and when (a coordinator that loaded an older
    // generation starts a generation number again).
    let mut joined: BTreeMap<String, (i32, usize)> = BTreeMap::new();
    let mut statics: BTreeSet<String> = BTreeSet::new();
    // Member ids a consumer group removed, or a classic group removed on a session timeout
    // before an upgrade (their classic clients may rejoin a consumer group under them).
    let mut removed: BTreeSet<String> = BTreeSet::new();
    // The highest offset accepted on each partition so far: what a member's commits on a taken
    // partition move the committed offset back from.
    let mut high: BTreeMap<TopicPartition, i64> = BTreeMap::new();
    let mut generation_members: BTreeMap<i32, (usize, Vec<String>)> = BTreeMap::new();
    // Group -> the generation its last downgrade wrote, while no later generation is stored.
    let mut downgrade_written: BTreeMap<String, i32> = BTreeMap::new();
    let mut windows = Vec::new();
    let close = |windows: &mut Vec<Window>, tp: TopicPartition, o: Open, to: usize| {
        windows.push(Window { hazard: o.hazard, cause: o.cause, partition: tp, from: o.from, to });
    };
    for (idx, e) in history.events().iter().enumerate() {
        for id in owned.read(&e.kind) {
            for o in open.values_mut().filter(|o| o.member_id == id) {
                o.released.get_or_insert(idx);
            }
        }
        match &e.kind {
            EventKind::Member { event, .. } => match event {
                MemberEvent::Assigned { member_id, .. } => {
                    reset.remove(member_id);
                }
                MemberEvent::GenerationReset { member_id, .. } => {
                    reset.insert(member_id.clone());
                }
                MemberEvent::Joined { member_id, generation, .. } => {
                    joined.insert(member_id.clone(), (*generation, idx));
                }
                MemberEvent::CommitSent { member_id, partition, offset, .. } => {
                    if let Some(o) = open.get_mut(partition) {
                        if &o.member_id == member_id && o.released.is_none() {
                            o.in_flight.push(*offset);
                        }
                    }
                }
                MemberEvent::CommitAcked { member_id, partition, offset, .. }
                | MemberEvent::CommitFailed { member_id, partition, offset, .. } => {
                    if let Some(o) = open.get_mut(partition) {
                        if &o.member_id == member_id {
                            o.settle(*offset);
                        }
                    }
                }
                MemberEvent::Revoked { member_id, partitions, .. }
                | MemberEvent::Lost { member_id, partitions, .. } => {
                    for tp in partitions {
                        if let Some(o) = open.get_mut(tp) {
                            if &o.member_id == member_id && o.released.is_none() {
                                o.released = Some(idx);
                            }
                        }
                    }
                }
                _ => {}
            },
            EventKind::Coordinator {
                event:
                    CoordinatorEvent::ConsumerGroup(ConsumerGroupEvent::GroupUpgraded {
                        members, ..
                    }),
                ..
            } => {
                for m in members.iter().filter(|m| !reset.contains(&m.member_id)) {
                    let Some(held) = owned.held(&m.member_id) else { continue };
                    let taken = held.iter().filter(|tp| !m.partitions.contains(tp));
                    let hazard = Hazard::UpgradeMidRebalance;
                    take(&mut open, taken, hazard, idx, &m.member_id);
                }
            }
            // A static member: added to a classic group, or a classic one that joined a consumer
            // group (static too in the classic group a downgrade makes of it).
            EventKind::Coordinator {
                event: CoordinatorEvent::MemberAdded { member_id, group_instance_id: Some(_), .. },
                ..
            }
            | EventKind::Coordinator {
                event:
                    CoordinatorEvent::ConsumerGroup(ConsumerGroupEvent::MemberJoined {
                        member_id,
                        group_instance_id: Some(_),
                        classic_protocol: true,
                        ..
                    }),
                ..
            } => {
                statics.insert(member_id.clone());
            }
            EventKind::Coordinator {
                event:
                    CoordinatorEvent::ConsumerGroup(ConsumerGroupEvent::MemberRemoved {
                        member_id, ..
                    }),
                ..
            } => {
                removed.insert(member_id.clone());
            }
            // A classic group's expiry: a consumer group the group is upgraded to later keeps no
            // memory of it, and re-creates the id if its client rejoins under it.
            EventKind::Coordinator {
                event:
                    CoordinatorEvent::MemberRemoved {
                        member_id,
                        reason: RemovalReason::SessionTimeout,
                        ..
                    },
                ..
            } => {
                removed.insert(member_id.clone());
            }
            // A consumer group re-creates a classic member that rejoins under the id it was
            // removed with: whatever that member still holds was released at the removal.
            EventKind::Coordinator {
                event:
                    CoordinatorEvent::ConsumerGroup(ConsumerGroupEvent::MemberJoined {
                        member_id,
                        classic_protocol: true,
                        ..
                    }),
                ..
            } => {
                let rejoined = removed.remove(member_id) && !reset.contains(member_id);
                if let Some(held) = owned.held(member_id).filter(|_| rejoined) {
                    let hazard = Hazard::RemovedClassicMemberRejoins;
                    take(&mut open, held.iter(), hazard, idx, member_id);
                }
            }
            EventKind::Coordinator {
                event:
                    CoordinatorEvent::ConsumerGroup(ConsumerGroupEvent::GroupDowngraded {
                        group,
                        group_epoch,
                        ..
                    }),
                ..
            } => {
                downgrade_written.insert(group.clone(), *group_epoch);
            }
            // The generation a downgrade wrote, loaded by the next coordinator after the
            // downgrade's rebalance was lost with the last one: each member holds its target as
            // written, so a partition a member still owned (revoking it in the consumer group) is
            // another's now, with no rebalance to make the owner give it up first.
            EventKind::Coordinator {
                event: CoordinatorEvent::GroupLoaded { group, generation, assignments, .. },
                ..
            } => {
                if downgrade_written.get(group) != Some(generation) {
                    continue;
                }
                for a in assignments.iter().filter(|a| !reset.contains(&a.member_id)) {
                    let Some(held) = owned.held(&a.member_id) else { continue };
                    let elsewhere: BTreeSet<&TopicPartition> = assignments
                        .iter()
                        .filter(|b| b.member_id != a.member_id)
                        .flat_map(|b| b.partitions.iter())
                        .collect();
                    let taken = held.iter().filter(|tp| elsewhere.contains(tp));
                    take(&mut open, taken, Hazard::LostDowngradeRebalance, idx, &a.member_id);
                }
            }
            EventKind::Coordinator {
                event: CoordinatorEvent::GenerationStarted { generation, members, .. },
                ..
            } => {
                generation_members.insert(*generation, (idx, members.clone()));
            }
            EventKind::Coordinator {
                event: CoordinatorEvent::AssignmentStored { group, generation, assignments },
                ..
            } => {
                if downgrade_written.get(group).is_some_and(|w| generation > w) {
                    downgrade_written.remove(group);
                }
                let Some((started, members)) = generation_members.get(generation) else { continue };
                let missed = members.iter().filter(|id| {
                    statics.contains(*id)
                        && !reset.contains(*id)
                        && joined.get(*id).is_none_or(|(g, at)| g != generation || at < started)
                });
                for id in missed {
                    let Some(held) = owned.held(id) else { continue };
                    let elsewhere: BTreeSet<&TopicPartition> = assignments
                        .iter()
                        .filter(|a| &a.member_id != id)
                        .flat_map(|a| a.partitions.iter())
                        .collect();
                    let taken = held.iter().filter(|tp| elsewhere.contains(tp));
                    take(&mut open, taken, Hazard::StaticMemberMissedRebalance, idx, id);
                }
            }
            EventKind::Coordinator {
                event: CoordinatorEvent::OffsetCommitAccepted { member_id, partition, offset, .. },
                ..
            } => {
                let before = high.get(partition).copied();
                let top = before.map_or(*offset, |h| h.max(*offset));
                high.insert(partition.clone(), top);
                let Some(o) = open.get_mut(partition) else { continue };
                let own = &o.member_id == member_id;
                let was_in_flight = own && o.settle(*offset);
                if own && (o.released.is_none() || was_in_flight) {
                    // The damage lasts until the committed offset is back where the member's
                    // commits moved it back from (as for a late request).
                    let back_from = before.map_or(*offset, |h| h.max(*offset));
                    o.reach = Some(o.reach.map_or(back_from, |r| r.max(back_from)));
                } else if o.released.is_some()
                    && o.in_flight.is_empty()
                    && o.reach.is_none_or(|r| *offset >= r)
                {
                    if let Some(o) = open.remove(partition) {
                        close(&mut windows, partition.clone(), o, idx);
                    }
                }
            }
            EventKind::Coordinator {
                event: CoordinatorEvent::OffsetCommitRejected { member_id, partition, offset, .. },
                ..
            } => {
                if let Some(o) = open.get_mut(partition) {
                    if &o.member_id == member_id {
                        o.settle(*offset);
                    }
                }
            }
            _ => {}
        }
        // A window whose member gave the partition up without committing it (nor a commit of
        // its still on its way) closes there.
        let done: Vec<TopicPartition> = open
            .iter()
            .filter(|(_, o)| o.released.is_some() && o.reach.is_none() && o.in_flight.is_empty())
            .map(|(tp, _)| tp.clone())
            .collect();
        for tp in done {
            if let Some(o) = open.remove(&tp) {
                let to = o.released.unwrap_or(idx);
                close(&mut windows, tp, o, to);
            }
        }
    }
    let end = history.len().saturating_sub(1);
    for (tp, o) in open {
        close(&mut windows, tp, o, end);
    }
    windows
}

/// Opens a window at event `idx` for each of `taken`, the partitions `member_id` still owned,
/// unless one is open on it already.
fn take<'a>(
    open: &mut BTreeMap<TopicPartition, Open>,
    taken: impl Iterator<Item = &'a TopicPartition>,
    hazard: Hazard,
    idx: usize,
    member_id: &str,
) {
    for tp in taken {
        if open.contains_key(tp) {
            continue;
        }
        let member_id = member_id.to_string();
        let o = Open {
            hazard,
            cause: idx,
            from: idx,
            member_id,
            released: None,
            reach: None,
            in_flight: Vec::new(),
        };
        open.insert(tp.clone(), o);
    }
}
