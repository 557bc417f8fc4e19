//! The nemesis' view of KIP-848 consumer groups, read from the coordinator's consumer-group
//! events: who each member is, where the latest target assignment sends each partition, and
//! which member last owned each partition. From it come the consumer-group trigger points: a
//! member asked to revoke partitions, a partition handed to a new owner after its previous
//! owner released it, and a member moved on to a newer member epoch.

use std::collections::{BTreeMap, BTreeSet};

use groupsim_history::ConsumerGroupEvent;
use groupsim_wire::TopicPartition;

/// A consumer-group protocol event, with the members it concerns (member ids).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConsumerSeen {
    /// `member` was asked to revoke partitions, which the latest target gives to `new_owners`.
    RevocationRequested { member: String, new_owners: Vec<String> },
    /// `new_owner` was handed partitions last owned by `previous` (members still in the group).
    HandedOver { new_owner: String, previous: Vec<String> },
    /// `member`, already in the group at an epoch, was moved to a newer member epoch.
    EpochAdvanced { member: String },
}

/// Consumer groups as their events show them so far.
#[derive(Clone, Debug, Default)]
pub struct ConsumerWatch {
    /// Member id -> client id, for every member that joined.
    pub names: BTreeMap<String, String>,
    /// Partition -> the member id the latest target assignment gives it to.
    target: BTreeMap<TopicPartition, String>,
    /// Partition -> the member id that owns it now, or owned it last.
    last_owner: BTreeMap<TopicPartition, String>,
    /// Members in the group (joined, not removed).
    members: BTreeSet<String>,
}

impl ConsumerWatch {
    /// Reads one event, adding the trigger points it makes to `out`.
    pub fn observe(&mut self, event: &ConsumerGroupEvent, out: &mut Vec<ConsumerSeen>) {
        match event {
            ConsumerGroupEvent::MemberJoined { member_id, client_id, .. } => {
                self.names.insert(member_id.clone(), client_id.clone());
                self.members.insert(member_id.clone());
            }
            ConsumerGroupEvent::MemberRemoved { member_id, .. } => {
                self.members.remove(member_id);
            }
            ConsumerGroupEvent::TargetAssignmentComputed { assignments, .. } => {
                self.target = assignments
                    .iter()
                    .flat_map(|s| s.partitions.iter().map(|tp| (tp.clone(), s.member_id.clone())))
                    .collect();
            }
            ConsumerGroupEvent::PartitionsRevoking { member_id, partitions, .. } => {
                let new_owners: BTreeSet<String> = partitions
                    .iter()
                    .filter_map(|tp| self.target.get(tp))
                    .filter(|m| *m != member_id)
                    .cloned()
                    .collect();
                let new_owners = new_owners.into_iter().collect();
                out.push(ConsumerSeen::RevocationRequested {
                    member: member_id.clone(),
                    new_owners,
                });
            }
            ConsumerGroupEvent::PartitionsAssigned { member_id, partitions, .. } => {
                let previous: BTreeSet<String> = partitions
                    .iter()
                    .filter_map(|tp| self.last_owner.insert(tp.clone(), member_id.clone()))
                    .filter(|m| m != member_id && self.members.contains(m))
                    .collect();
                if !previous.is_empty() {
                    let previous = previous.into_iter().collect();
                    out.push(ConsumerSeen::HandedOver { new_owner: member_id.clone(), previous });
                }
            }
            ConsumerGroupEvent::GroupLoaded { members, .. } => {
                for m in members {
                    self.members.insert(m.member_id.clone());
                    for tp in &m.owned {
                        self.last_owner.insert(tp.clone(), m.member_id.clone());
                    }
                }
            }
            // An upgraded group's classic members become its members, owning their classic
            // assignment; a downgraded group is classic again and leaves this view.
            ConsumerGroupEvent::GroupUpgraded { members, .. } => {
                for m in members {
                    self.members.insert(m.member_id.clone());
                    for tp in &m.partitions {
                        self.last_owner.insert(tp.clone(), m.member_id.clone());
                    }
                }
            }
            ConsumerGroupEvent::GroupDowngraded { members, leaving_member, .. } => {
                self.members.remove(leaving_member);
                for m in members {
                    self.members.remove(&m.member_id);
                }
                self.target.clear();
                self.last_owner.clear();
            }
            ConsumerGroupEvent::MemberEpochChanged { member_id, from, to, .. }
                if *from > 0 && to > from =>
            {
                out.push(ConsumerSeen::EpochAdvanced { member: member_id.clone() });
            }
            ConsumerGroupEvent::GroupEpochBumped { .. }
            | ConsumerGroupEvent::MemberEpochChanged { .. }
            | ConsumerGroupEvent::PartitionsReleased { .. }
            | ConsumerGroupEvent::UpgradeRefused { .. }
            | ConsumerGroupEvent::EmptyGroupDeleted { .. } => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use groupsim_history::TargetShare;

    fn tp(p: i32) -> TopicPartition {
        TopicPartition::new("t", p)
    }

    fn joined(m: &str) -> ConsumerGroupEvent {
        ConsumerGroupEvent::MemberJoined {
            group: "g".into(),
            member_id: m.into(),
            group_instance_id: None,
            client_id: format!("name-{m}"),
            classic_protocol: false,
        }
    }

    fn target(shares: &[(&str, &[i32])]) -> ConsumerGroupEvent {
        ConsumerGroupEvent::TargetAssignmentComputed {
            group: "g".into(),
            epoch: 1,
            assignor: "uniform".into(),
            assignments: shares
                .iter()
                .map(|(m, ps)| TargetShare {
                    member_id: m.to_string(),
                    partitions: ps.iter().map(|p| tp(*p)).collect(),
                })
                .collect(),
        }
    }

    fn assigned(m: &str, ps: &[i32]) -> ConsumerGroupEvent {
        ConsumerGroupEvent::PartitionsAssigned {
            group: "g".into(),
            member_id: m.into(),
            member_epoch: 1,
            partitions: ps.iter().map(|p| tp(*p)).collect(),
        }
    }

    #[test]
    fn a_revocation_names_the_partitions_new_owners_and_a_handover_the_previous_owner() {
        let mut w = ConsumerWatch::default();
        let mut out = Vec::new();
        for e in [joined("a"), target(&[("a", &[0, 1])]), assigned("a", &[0, 1])] {
            w.observe(&e, &mut out);
        }
        assert!(out.is_empty(), "a first assignment hands nothing over: {out:?}");
        w.observe(&joined("b"), &mut out);
        w.observe(&target(&[("a", &[0]), ("b", &[1])]), &mut out);
        w.observe(
            &ConsumerGroupEvent::PartitionsRevoking {
                group: "g".into(),
                member_id: "a".into(),
                member_epoch: 1,
                partitions: vec![tp(1)],
            },
            &mut out,
        );
        assert_eq!(
            out,
            vec![ConsumerSeen::RevocationRequested {
                member: "a".into(),
                new_owners: vec!["b".into()]
            }]
        );
        out.clear();
        w.observe(&assigned("b", &[1]), &mut out);
        assert_eq!(
            out,
            vec![ConsumerSeen::HandedOver { new_owner: "b".into(), previous: vec!["a".into()] }]
        );
        assert_eq!(w.names.get("b").map(String::as_str), Some("name-b"));
    }

    #[test]
    fn only_a_move_of_a_member_in_the_group_to_a_newer_epoch_is_an_advance() {
        // (behaviour, from, to, seen)
        let cases = [
            ("a join", 0, 3, false),
            ("an advance", 3, 4, true),
            ("a state change at the same epoch", 4, 4, false),
            ("a temporary leave", 4, -2, false),
        ];
        for (behaviour, from, to, seen) in cases {
            let mut out = Vec::new();
            let changed = ConsumerGroupEvent::MemberEpochChanged {
                group: "g".into(),
                member_id: "a".into(),
                from,
                to,
                state: "STABLE".into(),
            };
            ConsumerWatch::default().observe(&changed, &mut out);
            let expected = if seen {
                vec![ConsumerSeen::EpochAdvanced { member: "a".into() }]
            } else {
                vec![]
            };
            assert_eq!(out, expected, "{behaviour}");
        }
    }
}
