//! The `range` server assignor: for each topic, the members subscribed to it (sorted by member
//! id) get contiguous ranges of its partitions; the first `partitions % members` get one more.

use std::collections::BTreeSet;

use super::{AssignmentSpec, TargetAssignment};
use crate::TopicPartition;

/// Computes the range assignment.
pub fn assign(spec: AssignmentSpec<'_>) -> TargetAssignment {
    let mut out: TargetAssignment =
        spec.subscriptions.keys().map(|m| (m.clone(), BTreeSet::new())).collect();
    let topics: BTreeSet<&String> = spec.subscriptions.values().flatten().collect();
    for topic in topics {
        let Some(count) = spec.topics.partition_count(topic) else { continue };
        let members: Vec<&String> =
            spec.subscriptions.iter().filter(|(_, s)| s.contains(topic)).map(|(m, _)| m).collect();
        let n = members.len() as i32;
        if n == 0 {
            continue;
        }
        let (base, extra) = (count / n, count % n);
        let mut next = 0;
        for (i, m) in members.into_iter().enumerate() {
            let take = base + i32::from((i as i32) < extra);
            let parts = out.entry(m.clone()).or_default();
            for p in next..next + take {
                parts.insert(TopicPartition::new(topic.as_str(), p));
            }
            next += take;
        }
    }
    out
}
