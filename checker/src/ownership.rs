//! Ownership rules: only a member of the group's current generation may commit, only for a
//! partition that generation assigned to it, and a generation assigns each partition once.
//!
//! - `zombie-commit`: a commit accepted from a member that was no longer in the group, or under a
//!   generation that was not the group's current one, when the coordinator validated it.
//! - `unowned-commit`: a commit accepted for a partition the committer was not assigned in that
//!   generation, unless nobody was and the committer held it from before when it sent the
//!   commit (a cooperative member revoking a partition commits its progress under the
//!   generation that takes it away; KIP-429's first rebalance gives the partition to nobody
//!   until then).
//! - `split-assignment`: one generation's assignment gives a partition to two members.

use std::collections::BTreeMap;

use groupsim_history::MemberAssignment;
use groupsim_wire::{Millis, TopicPartition};

use super::anomaly::{Anomaly, AnomalyClass};
use super::views::{AcceptedCommit, Views};

/// `zombie-commit`: the member's commit was validated under a stale generation, or from a
/// member id that generation no longer held. It is judged by the group as it stood when the
/// coordinator validated it (`validated_at`), not when its append completed: Kafka validates a
/// commit once, when it arrives, and lands it even if the member is removed, or its generation
/// ends, while the append is replicated.
pub(super) fn zombie_commit(views: &Views, c: &AcceptedCommit<'_>) -> Option<Anomaly> {
    if !c.by_member() {
        return None;
    }
    let g = views.group(c.group);
    let (member_id, generation, offset, at) = (c.member_id, c.generation, c.offset, c.validated_at);
    if g.belonged_at(member_id, generation, at) {
        return None;
    }
    let (message, mut ev) = match g.generation_at(at) {
        Some((current, started)) if current != generation => (
            format!(
                "commit to {offset} from {member_id} validated at t={at}ms under generation \
                 {generation} while the group was in generation {current}"
            ),
            vec![started],
        ),
        _ => (
            format!(
                "commit to {offset} from {member_id} validated at t={at}ms, when it was not a \
                 member of generation {generation}"
            ),
            g.left_before(member_id, generation, at).into_iter().collect(),
        ),
    };
    ev.insert(0, c.idx);
    Some(Anomaly::new(AnomalyClass::ZombieCommit, Some(c.tp), c.at, message, ev))
}

/// `unowned-commit`: the member's commit is for a partition its generation's assignment did not
/// give it (unless nobody was given it and the member held it when the commit was validated).
pub(super) fn unowned_commit(views: &Views, c: &AcceptedCommit<'_>) -> Option<Anomaly> {
    if !c.by_member() {
        return None;
    }
    let g = views.group(c.group);
    let (member_id, generation, tp) = (c.member_id, c.generation, c.tp);
    let mut ev = vec![c.idx];
    let who = match g.owners.get(&generation).and_then(|o| o.get(tp)) {
        Some((owner, _)) if owner == member_id => return None,
        // A static replacement took the committer's place after the coordinator validated
        // the commit: the assignment it committed under was its own then.
        Some((owner, _)) if g.held_place_of(owner, member_id, c.validated_at) => return None,
        Some((owner, a)) => {
            ev.push(*a);
            format!("it is owned by {owner}")
        }
        // Revoking: the committer held the partition without a break and had not given it up
        // when the commit was validated, or when it sent it.
        None if views.commit_tenure(c).is_some() => return None,
        None => "no assignment of that generation gives it to anyone".to_string(),
    };
    Some(Anomaly::new(
        AnomalyClass::UnownedCommit,
        Some(tp),
        c.at,
        format!("{member_id} committed {tp} in generation {generation} but {who}"),
        ev,
    ))
}

/// `split-assignment`: the assignment stored for `generation` (event `idx`) gives a partition
/// to a second member.
pub(super) fn split_assignment(
    idx: usize,
    at: Millis,
    generation: i32,
    assignments: &[MemberAssignment],
) -> Vec<Anomaly> {
    let mut owners: BTreeMap<&TopicPartition, &str> = BTreeMap::new();
    let mut splits = Vec::new();
    for a in assignments {
        for tp in &a.partitions {
            if let Some(other) = owners.get(tp) {
                splits.push(Anomaly::new(
                    AnomalyClass::SplitAssignment,
                    Some(tp),
                    at,
                    format!(
                        "generation {generation} assigns {tp} to both {other} and {}",
                        a.member_id
                    ),
                    vec![idx],
                ));
            } else {
                owners.insert(tp, &a.member_id);
            }
        }
    }
    splits
}
