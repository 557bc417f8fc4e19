//! The liveness rule, `stuck`: at the end of the liveness phase every group with live members
//! is Stable with every live member in the latest generation, every partition assigned and
//! commits at the log end; a group without live members is Empty.

use std::collections::{BTreeMap, BTreeSet};

use groupsim_coordinator::GroupState;
use groupsim_wire::TopicPartition;

use super::anomaly::{Anomaly, AnomalyClass};
use super::views::{MemberView, Views};

/// `stuck`, at the liveness deadline, proved by the last event (`last_idx`): up to six of the
/// problems found, and how many more.
pub(super) fn stuck(views: &Views, last_idx: usize) -> Option<Anomaly> {
    let deadline = views.liveness_deadline.unwrap_or(views.end_ms);
    let problems = problems(views);
    if problems.is_empty() {
        return None;
    }
    let first_tp = problems.iter().find_map(|(tp, _)| tp.clone());
    let n = problems.len();
    let shown: Vec<String> = problems.into_iter().take(6).map(|(_, m)| m).collect();
    let more = if n > 6 { format!(" (+{} more)", n - 6) } else { String::new() };
    Some(Anomaly::new(
        AnomalyClass::Stuck,
        first_tp.as_ref(),
        deadline,
        format!("not converged by the liveness deadline: {}{more}", shown.join("; ")),
        vec![last_idx],
    ))
}

/// Whether the group has converged as the views stand: what `stuck` demands at the deadline.
pub(super) fn holds(views: &Views) -> bool {
    problems(views).is_empty()
}

/// Every way the views fall short of convergence, each with the partition it concerns.
fn problems(views: &Views) -> Vec<(Option<TopicPartition>, String)> {
    let mut problems: Vec<(Option<TopicPartition>, String)> = Vec::new();
    let groups: BTreeSet<String> = views.members.values().map(|m| m.group.clone()).collect();
    for group in groups {
        let live: BTreeMap<&String, &MemberView> =
            views.members.iter().filter(|(_, m)| m.group == group && m.live).collect();
        let Some(g) = views.groups.get(&group) else {
            if !live.is_empty() {
                problems.push((None, format!("group {group} never formed")));
            }
            continue;
        };
        if live.is_empty() {
            if g.state != Some(GroupState::Empty) {
                problems.push((
                    None,
                    format!("group {group} has no live members but is {:?}", g.state),
                ));
            }
            continue;
        }
        if g.state != Some(GroupState::Stable) {
            problems.push((None, format!("group {group} is {:?}, not Stable", g.state)));
        }
        let live_ids: BTreeSet<String> =
            live.values().filter_map(|m| m.member_id.clone()).collect();
        for (name, m) in &live {
            match &m.member_id {
                Some(id) if g.members.contains(id) && m.generation == g.generation => {}
                Some(id) => problems.push((
                    None,
                    format!(
                        "live member {name} ({id}, generation {}) is not in generation {}",
                        m.generation, g.generation
                    ),
                )),
                None => problems.push((None, format!("live member {name} never joined"))),
            }
        }
        for id in g.members.difference(&live_ids) {
            problems.push((
                None,
                format!("generation {} still holds {id}, which is not live", g.generation),
            ));
        }
        let owners = g.owners.get(&g.generation);
        for (topic, n) in &views.topics {
            for p in 0..*n {
                let tp = TopicPartition::new(topic.clone(), p);
                if owners.is_none_or(|o| !o.contains_key(&tp)) {
                    problems.push((
                        Some(tp.clone()),
                        format!("{tp} is unassigned in generation {}", g.generation),
                    ));
                }
                let pv = views.partitions.get(&tp);
                let end = pv.and_then(|v| v.log_end).unwrap_or(0);
                let committed = pv.and_then(|v| v.committed).map_or(0, |(o, _)| o);
                if committed < end {
                    problems.push((
                        Some(tp.clone()),
                        format!("{tp} committed {committed} < log end {end}"),
                    ));
                }
            }
        }
    }
    problems
}
