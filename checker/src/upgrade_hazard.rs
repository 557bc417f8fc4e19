//! The `upgrade-mid-rebalance` hazard: Kafka converts a classic group to a consumer group
//! (online upgrade, KIP-848) from each member's stored assignment. A rebalance that went back to
//! joining from CompletingRebalance (a member left before the leader's SyncGroup) reset every
//! stored assignment to empty, but a cooperative member keeps owning its partitions through a
//! rebalance until an assignment tells it to revoke them. The consumer group then counts those
//! partitions free and hands them to other members at once, while their previous owner still
//! processes and commits them under its new member epoch, which the coordinator accepts (a
//! consumer group's commit is checked against the member epoch, not the assignment).
//!
//! The history shows it acting: an upgrade converts a member with fewer partitions than the
//! member itself reports owning, and no error since its last assignment told it its generation
//! was gone (a member that keeps partitions then is at fault, not Kafka). For each such partition its effect lasts from the upgrade
//! until the member gives the partition up (or stops) and, when the member committed the
//! partition meanwhile, until the partition's committed offset is back at or past the highest
//! of those commits (the new owner, started below them, commits lower offsets until then).

use std::collections::{BTreeMap, BTreeSet};

use groupsim_history::{
    ConsumerGroupEvent, CoordinatorEvent, EventKind, History, MemberEvent, WorldEvent,
};
use groupsim_wire::TopicPartition;

use crate::hazard::{Hazard, Window};

/// One partition an upgrade took from a member that still owned it.
struct Open {
    cause: usize,
    from: usize,
    member_id: String,
    /// When the member gave the partition up (or stopped).
    released: Option<usize>,
    /// The highest offset the member committed on the partition while the window was open.
    reach: Option<i64>,
}

/// The windows in which the hazard's effect on a partition lasts.
pub(crate) fn windows(history: &History) -> Vec<Window> {
    // Member id -> (member name, the partitions the member reports owning).
    let mut owned: BTreeMap<String, (String, BTreeSet<TopicPartition>)> = BTreeMap::new();
    // Members told their generation is gone (a correct client gives its partitions up then;
    // one that keeps them owns nothing the upgrade could take).
    let mut reset: BTreeSet<String> = BTreeSet::new();
    let mut open: BTreeMap<TopicPartition, Open> = BTreeMap::new();
    let mut windows = Vec::new();
    let close = |windows: &mut Vec<Window>, tp: TopicPartition, o: Open, to: usize| {
        windows.push(Window {
            hazard: Hazard::UpgradeMidRebalance,
            cause: o.cause,
            partition: tp,
            from: o.from,
            to,
        });
    };
    for (idx, e) in history.events().iter().enumerate() {
        match &e.kind {
            EventKind::Member { member, event } => match event {
                MemberEvent::Assigned { member_id, partitions, .. } => {
                    reset.remove(member_id);
                    let entry = owned
                        .entry(member_id.clone())
                        .or_insert_with(|| (member.clone(), BTreeSet::new()));
                    entry.1.extend(partitions.iter().cloned());
                }
                MemberEvent::GenerationReset { member_id, .. } => {
                    reset.insert(member_id.clone());
                }
                MemberEvent::Revoked { member_id, partitions, .. }
                | MemberEvent::Lost { member_id, partitions, .. } => {
                    if let Some((_, held)) = owned.get_mut(member_id) {
                        for tp in partitions {
                            held.remove(tp);
                        }
                    }
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
            EventKind::World(WorldEvent::MemberStopped { member }) => {
                let ids: Vec<String> = owned
                    .iter()
                    .filter(|(_, (name, _))| name == member)
                    .map(|(id, _)| id.clone())
                    .collect();
                for id in ids {
                    owned.remove(&id);
                    for o in open.values_mut().filter(|o| o.member_id == id) {
                        o.released.get_or_insert(idx);
                    }
                }
            }
            EventKind::Coordinator {
                event:
                    CoordinatorEvent::ConsumerGroup(ConsumerGroupEvent::GroupUpgraded {
                        members, ..
                    }),
                ..
            } => {
                for m in members.iter().filter(|m| !reset.contains(&m.member_id)) {
                    let Some((_, held)) = owned.get(&m.member_id) else { continue };
                    for tp in held.iter().filter(|tp| !m.partitions.contains(tp)) {
                        if open.contains_key(tp) {
                            continue;
                        }
                        let o = Open {
                            cause: idx,
                            from: idx,
                            member_id: m.member_id.clone(),
                            released: None,
                            reach: None,
                        };
                        open.insert(tp.clone(), o);
                    }
                }
            }
            EventKind::Coordinator {
                event: CoordinatorEvent::OffsetCommitAccepted { member_id, partition, offset, .. },
                ..
            } => {
                let Some(o) = open.get_mut(partition) else { continue };
                if &o.member_id == member_id && o.released.is_none() {
                    o.reach = Some(o.reach.map_or(*offset, |r| r.max(*offset)));
                } else if o.released.is_some() && o.reach.is_none_or(|r| *offset >= r) {
                    if let Some(o) = open.remove(partition) {
                        close(&mut windows, partition.clone(), o, idx);
                    }
                }
            }
            _ => {}
        }
        // A window whose member gave the partition up without committing it closes there.
        let done: Vec<TopicPartition> = open
            .iter()
            .filter(|(_, o)| o.released.is_some() && o.reach.is_none())
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
