//! The `uniform` server assignor (Kafka's default): every partition of the subscribed topics to
//! exactly one subscribed member, counts as even as the subscriptions allow, and as many
//! members as possible keep the partitions they had.
//!
//! Three passes, each in sorted order: (1) members keep their previous partitions that are
//! still valid for them (the topic exists, they still subscribe to it), down to a fair share
//! when the whole group subscribes to the same topics; (2) every partition left goes to the
//! subscribed member holding the fewest; (3) while a member holds two or more partitions more
//! than another member that could take one of them, the partition moves.

use std::collections::{BTreeMap, BTreeSet};

use super::{AssignmentSpec, TargetAssignment};
use crate::TopicPartition;

/// Computes the uniform assignment.
pub fn assign(spec: AssignmentSpec<'_>) -> TargetAssignment {
    let subs = spec.subscriptions;
    let mut out: TargetAssignment = subs.keys().map(|m| (m.clone(), BTreeSet::new())).collect();
    let all_topics: BTreeSet<&String> = subs.values().flatten().collect();
    let all = spec.topics.partitions_of(all_topics.iter().copied());
    if subs.is_empty() || all.is_empty() {
        return out;
    }
    let eligible =
        |m: &str, tp: &TopicPartition| subs.get(m).is_some_and(|s| s.contains(&*tp.topic));
    // With identical subscriptions nobody may keep more than the ceiling of a fair share.
    let homogeneous = subs.values().all(|s| Some(s) == subs.values().next());
    let cap = if homogeneous { all.len().div_ceil(subs.len()) } else { usize::MAX };

    // (1) Stickiness.
    let mut taken: BTreeSet<TopicPartition> = BTreeSet::new();
    for (m, previous) in spec.previous {
        let Some(mine) = out.get_mut(m) else { continue };
        for tp in previous {
            if mine.len() < cap && all.contains(tp) && eligible(m, tp) && taken.insert(tp.clone()) {
                mine.insert(tp.clone());
            }
        }
    }
    // (2) Every free partition to the eligible member with the fewest.
    for tp in all.iter().filter(|tp| !taken.contains(*tp)) {
        let best = out
            .iter()
            .filter(|(m, _)| eligible(m, tp))
            .min_by(|(a, pa), (b, pb)| pa.len().cmp(&pb.len()).then(a.cmp(b)))
            .map(|(m, _)| m.clone());
        if let Some(m) = best {
            out.entry(m).or_default().insert(tp.clone());
        }
    }
    // (3) Balance: move partitions from the fullest to the emptiest eligible member.
    let bound = all.len() * subs.len();
    for _ in 0..bound {
        if !move_one(&mut out, &eligible) {
            break;
        }
    }
    out
}

/// Moves one partition from a member to another eligible member holding at least two fewer;
/// false when the assignment is as balanced as the subscriptions allow.
fn move_one(
    out: &mut BTreeMap<String, BTreeSet<TopicPartition>>,
    eligible: &impl Fn(&str, &TopicPartition) -> bool,
) -> bool {
    let mut by_load: Vec<(usize, String)> = out.iter().map(|(m, p)| (p.len(), m.clone())).collect();
    // Fullest first; among equals, the larger member id gives first (a fixed order).
    by_load.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.cmp(&a.1)));
    for (load, from) in &by_load {
        let parts: Vec<TopicPartition> = out[from].iter().rev().cloned().collect();
        for tp in parts {
            let to = out
                .iter()
                .filter(|(m, p)| *m != from && p.len() + 1 < *load && eligible(m, &tp))
                .min_by(|(a, pa), (b, pb)| pa.len().cmp(&pb.len()).then(a.cmp(b)))
                .map(|(m, _)| m.clone());
            if let Some(to) = to {
                out.get_mut(from).map(|p| p.remove(&tp));
                out.entry(to).or_default().insert(tp);
                return true;
            }
        }
    }
    false
}
