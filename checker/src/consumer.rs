//! KIP-848 consumer groups: ownership follows member epochs and the coordinator's
//! assign / revoke / release events (`consumer_view`), not classic generations.
//!
//! - `split-assignment`: a partition assigned to a member while another member still owns it
//!   (the coordinator hands a partition over only after its previous owner released it; Kafka
//!   tracks a per-partition owner epoch for this).
//! - `zombie-commit`: a commit accepted under a member epoch that was not the committer's
//!   member epoch when the coordinator validated it, or from a member the group no longer held
//!   (fenced, left, replaced). Kafka 4.0's ConsumerGroup.validateOffsetCommit answers any epoch
//!   other than the member's current one with STALE_MEMBER_EPOCH and an unknown member with
//!   UNKNOWN_MEMBER_ID. (KIP-1251, Kafka 4.3, relaxes the epoch check per partition; this
//!   checker judges the 4.0 rule the coordinator models.)
//! - `unowned-commit`: a commit accepted for a partition the coordinator did not count the
//!   committer the owner of (assigned, or pending revocation) when it validated the commit.
//!   Kafka does not check partitions on commit: a client that commits what it does not own
//!   gets it in, and this rule catches it.
//! - `fenced-join`: a ConsumerGroupHeartbeat at member epoch 0 (a join, or a fenced member's
//!   rejoin with its member id) answered FENCED_MEMBER_EPOCH. A join carries no epoch to be
//!   fenced at: KIP-848 has a member fenced on its side rejoin at epoch 0, and Kafka accepts
//!   that rejoin with the member's current state (KAFKA-19233, apache/kafka#21305). A
//!   coordinator that fences it again keeps the member out, its partitions held for it and
//!   consumed by nobody, until its session runs out.

use std::collections::BTreeMap;

use groupsim_history::{ConsumerGroupEvent, EventKind, MemberEvent};
use groupsim_wire::Millis;

use super::anomaly::{Anomaly, AnomalyClass};
use super::consumer_view::ConsumerGroupView;
use super::views::AcceptedCommit;

/// `split-assignment` for a consumer group: event `idx` assigns partitions of which some are
/// still owned by another member (it has not released them).
pub(super) fn assigned_before_release(
    group: Option<&ConsumerGroupView>,
    idx: usize,
    at: Millis,
    event: &ConsumerGroupEvent,
) -> Vec<Anomaly> {
    let ConsumerGroupEvent::PartitionsAssigned { member_id, member_epoch, partitions, .. } = event
    else {
        return Vec::new();
    };
    let Some(group) = group else { return Vec::new() };
    let mut found = Vec::new();
    for tp in partitions {
        let Some((owner, since)) = group.owners.get(tp) else { continue };
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

/// `zombie-commit` in a consumer group: the commit's member epoch was not the committer's
/// when the coordinator validated it (`validated_at`), or the committer was not a member then.
pub(super) fn zombie_commit(group: &ConsumerGroupView, c: &AcceptedCommit<'_>) -> Option<Anomaly> {
    if !c.by_member() {
        return None;
    }
    let (member_id, epoch, offset, at) = (c.member_id, c.generation, c.offset, c.validated_at);
    if group.held_epoch_at(member_id, epoch, at) {
        return None;
    }
    let (message, mut ev) = match group.epoch_at(member_id, at) {
        Some(current) => (
            format!(
                "commit to {offset} from {member_id} validated at t={at}ms under member epoch \
                 {epoch} while its member epoch was {current} (STALE_MEMBER_EPOCH)"
            ),
            Vec::new(),
        ),
        None => (
            format!(
                "commit to {offset} from {member_id} (member epoch {epoch}) validated at \
                 t={at}ms, when the group did not hold it (UNKNOWN_MEMBER_ID)"
            ),
            group.left_before(member_id, at).into_iter().collect(),
        ),
    };
    ev.insert(0, c.idx);
    Some(Anomaly::new(AnomalyClass::ZombieCommit, Some(c.tp), c.at, message, ev))
}

/// `unowned-commit` in a consumer group: the coordinator did not count the committer the owner
/// of the partition when it validated the commit.
pub(super) fn unowned_commit(group: &ConsumerGroupView, c: &AcceptedCommit<'_>) -> Option<Anomaly> {
    if !c.by_member() || group.owned_at(c.member_id, c.tp, c.validated_at) {
        return None;
    }
    let (member_id, epoch, tp, at) = (c.member_id, c.generation, c.tp, c.validated_at);
    let mut ev = vec![c.idx];
    let who = match group.owners.get(tp) {
        Some((owner, given)) if owner != member_id => {
            ev.push(*given);
            format!("{owner} owns it")
        }
        _ => "the coordinator had not given it to it".to_string(),
    };
    Some(Anomaly::new(
        AnomalyClass::UnownedCommit,
        Some(tp),
        c.at,
        format!(
            "{member_id} committed {tp} under member epoch {epoch} (validated at t={at}ms) but \
             {who}"
        ),
        ev,
    ))
}

/// `fenced-join`, shown by `member`'s `HeartbeatFailed` at history index `idx`: the heartbeat it
/// sent at member epoch 0 was answered FENCED_MEMBER_EPOCH. `groups` name the last epoch a
/// group held the member id at (the answer may arrive after the group removed it).
pub(super) fn fenced_join(
    groups: &BTreeMap<String, ConsumerGroupView>,
    idx: usize,
    at: Millis,
    member: &str,
    event: &MemberEvent,
) -> Option<Anomaly> {
    let MemberEvent::HeartbeatFailed { member_id, epoch: 0, error } = event else {
        return None;
    };
    if error != "FENCED_MEMBER_EPOCH" {
        return None;
    }
    let last = groups.values().find_map(|g| g.epochs.get(member_id)?.last());
    let held = last.map_or_else(
        || "a member id no group held".to_string(),
        |s| format!("the group held {member_id} last at member epoch {}", s.epoch),
    );
    Some(Anomaly::new(
        AnomalyClass::FencedJoin,
        None,
        at,
        format!(
            "{member} joined with member epoch 0 ({held}) and was answered \
             FENCED_MEMBER_EPOCH: a join has no epoch to be fenced at (KAFKA-19233)"
        ),
        vec![idx],
    ))
}

/// One `fenced-join` per member id: a coordinator that refuses a rejoin at epoch 0 refuses the
/// member's every retry until its session ends (hundreds in a run), all one fault. The first
/// refusal is reported, with the count of them all.
#[derive(Default)]
pub(super) struct FencedJoins {
    /// Member id -> (index of its anomaly in the verdict's list, refusals seen).
    first: BTreeMap<String, (usize, usize)>,
}

impl FencedJoins {
    /// Whether `anomaly`, found at `event`, is to be listed (at index `next`): only the first
    /// `fenced-join` of a member id is; later ones are counted.
    pub(super) fn admit(&mut self, event: &EventKind, anomaly: &Anomaly, next: usize) -> bool {
        let EventKind::Member { event: MemberEvent::HeartbeatFailed { member_id, .. }, .. } = event
        else {
            return true;
        };
        if anomaly.class != AnomalyClass::FencedJoin {
            return true;
        }
        let entry = self.first.entry(member_id.clone()).or_insert((next, 0));
        entry.1 += 1;
        entry.1 == 1
    }

    /// Adds the refusal counts to the listed anomalies.
    pub(super) fn finish(self, anomalies: &mut [Anomaly]) {
        for (idx, count) in self.first.into_values() {
            if count > 1 {
                anomalies[idx].message.push_str(&format!(" (refused {count} times in all)"));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use groupsim_history::{ConsumerRemovalReason, LoadedMember};

    use super::*;
    use groupsim_wire::TopicPartition;

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
                    group_instance_id: None,
                    member_epoch: 3,
                    owned: parts.iter().map(|p| tp(*p)).collect(),
                    revoking: Vec::new(),
                    state: "STABLE".into(),
                    target: parts.iter().map(|p| tp(*p)).collect(),
                    classic_protocol: false,
                })
                .collect(),
        }
    }

    /// The partitions flagged at each event: (event index, partitions).
    type Splits = Vec<(usize, Vec<String>)>;

    /// Replays `events` and returns the partitions flagged at each event.
    fn splits(events: &[ConsumerGroupEvent]) -> Splits {
        let mut group = ConsumerGroupView::default();
        let mut out = Vec::new();
        for (idx, e) in events.iter().enumerate() {
            let found = assigned_before_release(Some(&group), idx, idx as Millis, e);
            if !found.is_empty() {
                let tps = found
                    .iter()
                    .filter_map(|a| a.partition.as_ref())
                    .map(|tp| tp.to_string())
                    .collect();
                out.push((idx, tps));
            }
            group.apply(idx, idx as Millis, e);
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
