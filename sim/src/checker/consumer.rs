//! KIP-848 consumer groups: the coordinator hands a partition to a new owner only after its
//! previous owner released it (Kafka tracks a per-partition owner epoch for this). Ownership
//! here is what the coordinator's own events say: a partition is a member's from
//! `PartitionsAssigned` until `PartitionsReleased` (it acknowledged the revocation, or was
//! fenced or left); a load replaces the group's owners with what the offsets log held.
//!
//! - `split-assignment`: a partition assigned to a member while another member still owns it.

use std::collections::BTreeMap;

use groupsim_coordinator::consumer_event::ConsumerGroupEvent;
use groupsim_wire::{Millis, TopicPartition};

use super::anomaly::{Anomaly, AnomalyClass};

/// (group, partition) -> (owner's member id, index of the event that assigned it).
#[derive(Debug, Default)]
pub(super) struct ConsumerOwners {
    owners: BTreeMap<(String, TopicPartition), (String, usize)>,
}

impl ConsumerOwners {
    /// Reads one consumer-group event (event `idx`).
    pub(super) fn apply(&mut self, idx: usize, event: &ConsumerGroupEvent) {
        match event {
            ConsumerGroupEvent::PartitionsAssigned { group, member_id, partitions, .. } => {
                for tp in partitions {
                    self.owners.insert((group.clone(), tp.clone()), (member_id.clone(), idx));
                }
            }
            ConsumerGroupEvent::PartitionsReleased { group, member_id, partitions, .. } => {
                for tp in partitions {
                    let key = (group.clone(), tp.clone());
                    if self.owners.get(&key).is_some_and(|(owner, _)| owner == member_id) {
                        self.owners.remove(&key);
                    }
                }
            }
            ConsumerGroupEvent::MemberRemoved { group, member_id, .. } => {
                self.owners.retain(|(g, _), (owner, _)| !(g == group && owner == member_id));
            }
            ConsumerGroupEvent::GroupLoaded { group, members, .. } => {
                self.owners.retain(|(g, _), _| g != group);
                for m in members {
                    for tp in &m.owned {
                        self.owners.insert((group.clone(), tp.clone()), (m.member_id.clone(), idx));
                    }
                }
            }
            // An upgrade: the classic members own their classic assignments in the consumer group.
            ConsumerGroupEvent::GroupUpgraded { group, members, .. } => {
                self.owners.retain(|(g, _), _| g != group);
                for m in members {
                    for tp in &m.partitions {
                        self.owners.insert((group.clone(), tp.clone()), (m.member_id.clone(), idx));
                    }
                }
            }
            // A downgrade: the group is a classic group again; consumer ownership ends.
            ConsumerGroupEvent::GroupDowngraded { group, .. } => {
                self.owners.retain(|(g, _), _| g != group);
            }
            ConsumerGroupEvent::MemberJoined { .. }
            | ConsumerGroupEvent::GroupEpochBumped { .. }
            | ConsumerGroupEvent::TargetAssignmentComputed { .. }
            | ConsumerGroupEvent::MemberEpochChanged { .. }
            | ConsumerGroupEvent::PartitionsRevoking { .. } => {}
        }
    }
}

/// `split-assignment` for a consumer group: event `idx` assigns partitions of which some are
/// still owned by another member (it has not released them).
pub(super) fn assigned_before_release(
    owners: &ConsumerOwners,
    idx: usize,
    at: Millis,
    event: &ConsumerGroupEvent,
) -> Vec<Anomaly> {
    let ConsumerGroupEvent::PartitionsAssigned { group, member_id, member_epoch, partitions } =
        event
    else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for tp in partitions {
        let Some((owner, since)) = owners.owners.get(&(group.clone(), tp.clone())) else {
            continue;
        };
        if owner != member_id {
            found.push(Anomaly::new(
                AnomalyClass::SplitAssignment,
                Some(tp),
                at,
                format!(
                    "{tp} assigned to {member_id} (member epoch {member_epoch}) while {owner} \
                     still owns it: the coordinator did not wait for its release"
                ),
                vec![*since, idx],
            ));
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use groupsim_coordinator::consumer_event::{ConsumerRemovalReason, LoadedMember};

    use super::*;

    fn tp(p: i32) -> TopicPartition {
        TopicPartition::new("orders", p)
    }

    fn assigned(member: &str, parts: &[i32]) -> ConsumerGroupEvent {
        ConsumerGroupEvent::PartitionsAssigned {
            group: "g".into(),
            member_id: member.into(),
            member_epoch: 2,
            partitions: parts.iter().map(|p| tp(*p)).collect(),
        }
    }

    fn released(member: &str, parts: &[i32]) -> ConsumerGroupEvent {
        ConsumerGroupEvent::PartitionsReleased {
            group: "g".into(),
            member_id: member.into(),
            member_epoch: 2,
            partitions: parts.iter().map(|p| tp(*p)).collect(),
        }
    }

    fn removed(member: &str) -> ConsumerGroupEvent {
        ConsumerGroupEvent::MemberRemoved {
            group: "g".into(),
            member_id: member.into(),
            member_epoch: 2,
            reason: ConsumerRemovalReason::SessionTimeout,
        }
    }

    fn loaded(members: &[(&str, &[i32])]) -> ConsumerGroupEvent {
        ConsumerGroupEvent::GroupLoaded {
            group: "g".into(),
            partition: 0,
            group_epoch: 3,
            assignment_epoch: 3,
            members: members
                .iter()
                .map(|(m, parts)| LoadedMember {
                    member_id: m.to_string(),
                    member_epoch: 3,
                    owned: parts.iter().map(|p| tp(*p)).collect(),
                    classic_protocol: false,
                })
                .collect(),
        }
    }

    /// The partitions flagged at each event: (event index, partitions).
    type Splits = Vec<(usize, Vec<String>)>;

    /// Replays `events` and returns the partitions flagged at each event.
    fn splits(events: &[ConsumerGroupEvent]) -> Splits {
        let mut owners = ConsumerOwners::default();
        let mut out = Vec::new();
        for (idx, e) in events.iter().enumerate() {
            let found = assigned_before_release(&owners, idx, idx as Millis, e);
            if !found.is_empty() {
                let tps = found
                    .iter()
                    .filter_map(|a| a.partition.as_ref())
                    .map(|tp| tp.to_string())
                    .collect();
                out.push((idx, tps));
            }
            owners.apply(idx, e);
        }
        out
    }

    #[test]
    fn a_partition_moves_only_after_its_owner_released_it() {
        // (behaviour, events, expected splits as (event index, partitions))
        let cases: Vec<(&str, Vec<ConsumerGroupEvent>, Splits)> = vec![
            (
                "released, then assigned elsewhere",
                vec![assigned("a", &[0, 1]), released("a", &[1]), assigned("b", &[1])],
                vec![],
            ),
            (
                "assigned elsewhere before the release",
                vec![assigned("a", &[0, 1]), assigned("b", &[1]), released("a", &[1])],
                vec![(1, vec!["orders-1".into()])],
            ),
            (
                "the same member assigned again (a later epoch)",
                vec![assigned("a", &[0]), assigned("a", &[0, 1])],
                vec![],
            ),
            (
                "a removed member's partitions are free",
                vec![assigned("a", &[0]), removed("a"), assigned("b", &[0])],
                vec![],
            ),
            (
                "a release by someone else frees nothing",
                vec![assigned("a", &[0]), released("b", &[0]), assigned("c", &[0])],
                vec![(2, vec!["orders-0".into()])],
            ),
            (
                "a load replaces the owners with the log's",
                vec![assigned("a", &[0]), loaded(&[("b", &[0])]), assigned("c", &[0])],
                vec![(2, vec!["orders-0".into()])],
            ),
            (
                "a load without the old owner frees its partitions",
                vec![assigned("a", &[0]), loaded(&[("b", &[1])]), assigned("c", &[0])],
                vec![],
            ),
        ];
        for (behaviour, events, expected) in cases {
            assert_eq!(splits(&events), expected, "{behaviour}");
        }
    }
}
