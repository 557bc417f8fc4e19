//! The liveness rule, `stuck`: at the end of the liveness phase every group with live members
//! is Stable with every live member in the latest generation, every partition assigned and
//! commits at the log end; a group without live members is Empty. A KIP-848 consumer group
//! converges by member epochs instead: every live member reconciled to the target assignment
//! of the group epoch, nothing revoking, every partition owned, commits at the log end.

use std::collections::{BTreeMap, BTreeSet};

use groupsim_history::{partition_list, GroupState};
use groupsim_wire::{Millis, TopicPartition};

use super::anomaly::{Anomaly, AnomalyClass};
use super::consumer_view::{ConsumerGroupView, STABLE};
use super::hazard::{Explained, Hazard};
use super::member_views::MemberView;
use super::views::{GroupView, Views};

/// `stuck`, at the liveness deadline, proved by the last event (`last_idx`): up to six of the
/// problems found, and how many more. Problems a hazard explains make a `stuck` of their own,
/// returned as explained (proved by the hazard's event too): one per hazard that acted.
///
/// `overtaken`: member id -> the event where an overtaken rejoin gave it partitions it never
/// heard of (the `overtaken-rejoin` hazard, read from the wire stream).
pub(super) fn stuck(
    views: &Views,
    last_idx: usize,
    overtaken: &BTreeMap<String, usize>,
) -> (Option<Anomaly>, Vec<Explained>) {
    let deadline = views.liveness_deadline.unwrap_or(views.end_ms);
    let (problems, excused) = problems(views, overtaken);
    let anomaly = stuck_of(problems, deadline, vec![last_idx]);
    let mut by_hazard: BTreeMap<Hazard, (usize, Problems)> = BTreeMap::new();
    for (hazard, cause, p) in excused {
        by_hazard.entry(hazard).or_insert((cause, Vec::new())).1.push(p);
    }
    let explained = by_hazard
        .into_iter()
        .filter_map(|(hazard, (cause, problems))| {
            let anomaly = stuck_of(problems, deadline, vec![cause, last_idx])?;
            Some(Explained { hazard, cause, anomaly })
        })
        .collect();
    (anomaly, explained)
}

/// The `stuck` anomaly listing `problems`, if there are any.
fn stuck_of(problems: Problems, deadline: Millis, events: Vec<usize>) -> Option<Anomaly> {
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
        events,
    ))
}

/// Whether the group has converged as the views stand: what `stuck` demands at the deadline.
pub(super) fn holds(views: &Views) -> bool {
    let (problems, excused) = problems(views, &BTreeMap::new());
    problems.is_empty() && excused.is_empty()
}

/// One way the views fall short of convergence, with the partition it concerns.
type Problem = (Option<TopicPartition>, String);
/// Ways the views fall short of convergence.
type Problems = Vec<Problem>;

/// Problems a hazard Kafka allows explains, each with the hazard and the event where it acted.
type Excused = Vec<(Hazard, usize, Problem)>;

/// Every way the views fall short of convergence, each with the partition it concerns: those no
/// hazard explains, and those the `lost-downgrade-rebalance` or `static-upgrade-orphans` hazard
/// does.
fn problems(views: &Views, overtaken: &BTreeMap<String, usize>) -> (Problems, Excused) {
    let mut problems: Problems = Vec::new();
    let mut excused: Excused = Vec::new();
    let groups: BTreeSet<&str> = views.members.values().map(|m| m.group.as_str()).collect();
    for group in groups {
        let live: BTreeMap<&String, &MemberView> =
            views.members.iter().filter(|(_, m)| m.group == group && m.live).collect();
        if let Some(cg) = views.consumer_group(group) {
            let mut group_problems = Problems::new();
            let unheard =
                consumer_problems(views, group, cg, &live, overtaken, &mut group_problems);
            // Two live classic twins taking one instance from each other keep the group from
            // settling while both run: every problem of the group is theirs.
            if let Some(cause) = live_twins(cg, &live) {
                let twins = group_problems
                    .into_iter()
                    .map(|p| (Hazard::ClassicTwinsReplaceEachOther, cause, p));
                excused.extend(twins);
                continue;
            }
            // A member an overtaken rejoin gave partitions it never heard of: its own problem
            // and those of the partitions are the hazard's.
            let mut sources = Vec::new();
            for (cause, partitions, problem) in &unheard {
                sources.push((Hazard::OvertakenRejoin, *cause, partitions));
                excused.push((Hazard::OvertakenRejoin, *cause, problem.clone()));
            }
            excuse_orphans(views, &sources, group, group_problems, &mut problems, &mut excused);
            continue;
        }
        let Some(g) = views.groups.get(group) else {
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
        let live_ids: BTreeSet<&str> =
            live.values().filter_map(|m| m.member_id.as_deref()).collect();
        for (name, m) in &live {
            let problem = match &m.member_id {
                Some(id) if g.members.contains(id) && m.generation == g.generation => continue,
                Some(id) => format!(
                    "live member {name} ({id}, generation {}) is not in generation {}",
                    m.generation, g.generation
                ),
                None => format!("live member {name} never joined"),
            };
            match locked_out(g, m) {
                Some(load) => {
                    excused.push((Hazard::LoadedGroupRefusesProtocol, load, (None, problem)))
                }
                None => problems.push((None, problem)),
            }
        }
        for id in g.members.iter().filter(|id| !live_ids.contains(id.as_str())) {
            problems.push((
                None,
                format!("generation {} still holds {id}, which is not live", g.generation),
            ));
        }
        let owners = g.owners.get(&g.generation);
        let mut partition_problems = Problems::new();
        for tp in all_partitions(views) {
            if owners.is_none_or(|o| !o.contains_key(&tp)) {
                partition_problems.push((
                    Some(tp.clone()),
                    format!("{tp} is unassigned in generation {}", g.generation),
                ));
            }
            commits_at_log_end(views, &tp, &mut partition_problems);
        }
        // The generation a downgrade wrote, loaded after its rebalance was lost: its assignment
        // stays as written until a membership change starts another rebalance.
        match g.lost_rebalance {
            Some(cause) => excused.extend(
                partition_problems.into_iter().map(|p| (Hazard::LostDowngradeRebalance, cause, p)),
            ),
            None => {
                let mut classic = Vec::new();
                if let Some(s) = &g.skip_leader {
                    classic.push((Hazard::StaticLeaderSkipsNewPartitions, s.0, &s.1));
                }
                let revoked = revoked_by_replaced(g);
                if let Some((cause, partitions)) = &revoked {
                    classic.push((
                        Hazard::ReplacedMemberSkipsFollowUpRebalance,
                        *cause,
                        partitions,
                    ));
                }
                let found = partition_problems;
                excuse_orphans(views, &classic, group, found, &mut problems, &mut excused)
            }
        }
    }
    (problems, excused)
}

/// Sorts `group`'s problems: those about a partition an upgrade left to nobody, while no target
/// assignment or generation has covered it since, are the `static-upgrade-orphans` hazard's (a
/// static member that takes its instance over bumps no group epoch, so nothing hands them out
/// until the membership changes); those about partitions added while a consumer group held
/// classic members only are `classic-members-miss-new-partitions`'; those about partitions
/// added before a replaced static leader skipped the assignment are
/// `static-leader-skips-new-partitions`', and those a cooperative generation revoked from a
/// member replaced since are `replaced-member-skips-follow-up-rebalance`' (`classic`: hazard,
/// cause, partitions); the rest are problems.
fn excuse_orphans(
    views: &Views,
    classic: &[(Hazard, usize, &BTreeSet<TopicPartition>)],
    group: &str,
    found: Problems,
    problems: &mut Problems,
    excused: &mut Excused,
) {
    let orphaned = views.orphaned.get(group).map(|o| (Hazard::StaticUpgradeOrphans, o));
    let unseen =
        views.unseen_growth.get(group).map(|o| (Hazard::ClassicMembersMissNewPartitions, o));
    let classic = classic.iter().map(|(h, cause, partitions)| (*h, *cause, *partitions));
    let sources: Vec<(Hazard, usize, &BTreeSet<TopicPartition>)> = [orphaned, unseen]
        .into_iter()
        .flatten()
        .map(|(h, (cause, partitions))| (h, *cause, partitions))
        .chain(classic)
        .collect();
    for p in found {
        let hazard = sources
            .iter()
            .find(|(_, _, partitions)| p.0.as_ref().is_some_and(|tp| partitions.contains(tp)));
        match hazard {
            Some((hazard, cause, _)) => excused.push((*hazard, *cause, p)),
            None => problems.push(p),
        }
    }
}

/// The partitions the current (cooperative) generation's stored assignment gives to nobody whose
/// last owner, in the latest stored generation before that gave them to anyone, is a member
/// whose static instance was taken over since the current generation began, with that
/// generation's start (event index): that member, still revoking them, would have rejoined for
/// the follow-up rebalance, and its replacement, kept without a rebalance (KIP-345), has
/// nothing to revoke and does not.
fn revoked_by_replaced(g: &GroupView) -> Option<(usize, BTreeSet<TopicPartition>)> {
    let now = g.owners.get(&g.generation)?;
    // When the current generation began: loads of the same generation since do not restart it.
    let same: Vec<&(Millis, i32, usize)> =
        g.generations.iter().rev().take_while(|(_, n, _)| *n == g.generation).collect();
    let &&(began, _, cause) = same.last()?;
    let replaced: BTreeSet<&String> =
        g.took_over.values().filter(|(_, at)| *at >= began).map(|(old, _)| old).collect();
    let mut revoked = BTreeSet::new();
    let mut seen: BTreeSet<&TopicPartition> = now.keys().collect();
    for (_, owners) in g.owners.range(..g.generation).rev() {
        for (tp, (owner, _)) in owners {
            if seen.insert(tp) && replaced.contains(owner) {
                revoked.insert(tp.clone());
            }
        }
    }
    (!revoked.is_empty()).then_some((cause, revoked))
}

/// The event where two classic clients of consumer group `cg`, both live, took one static
/// instance from each other (the `classic-twins-replace-each-other` hazard), if any did.
fn live_twins(cg: &ConsumerGroupView, live: &BTreeMap<&String, &MemberView>) -> Option<usize> {
    cg.contested
        .values()
        .find(|(_, clients)| clients.iter().all(|c| live.contains_key(c)))
        .map(|(cause, _)| *cause)
}

/// The load (event index) that locks member `m` out of group `g`: the group, loaded from the
/// offsets log and not rebalanced since, knows its members by the protocol it chose only, and
/// the member's last JoinGroup since, not offering that protocol, was refused
/// INCONSISTENT_GROUP_PROTOCOL (the `loaded-group-refuses-protocol` hazard).
fn locked_out(g: &GroupView, m: &MemberView) -> Option<usize> {
    let (protocol, load) = g.loaded_protocol.as_ref()?;
    let (error, offered, refused) = m.join_refused.as_ref()?;
    (error == "INCONSISTENT_GROUP_PROTOCOL" && refused > load && !offered.contains(protocol))
        .then_some(*load)
}

/// Every partition of every topic, in order.
fn all_partitions(views: &Views) -> Vec<TopicPartition> {
    // One shared name per topic, not one per partition.
    views
        .topics
        .iter()
        .flat_map(|(topic, n)| {
            let name = groupsim_wire::topic_name::shared_topic(topic);
            (0..*n).map(move |p| TopicPartition::new(name.clone(), p))
        })
        .collect()
}

/// Commits of `tp` must have reached its log end.
fn commits_at_log_end(views: &Views, tp: &TopicPartition, problems: &mut Problems) {
    let pv = views.partitions.get(tp);
    let end = pv.and_then(|v| v.log_end).unwrap_or(0);
    let committed = pv.and_then(|v| v.committed).map_or(0, |(o, _)| o);
    if committed < end {
        problems.push((Some(tp.clone()), format!("{tp} committed {committed} < log end {end}")));
    }
}

/// A KIP-848 consumer group has converged when the target assignment is of the group epoch,
/// every live member is in the group at that epoch, reconciled (`STABLE`) and owns exactly its
/// target — as the coordinator says and as the member itself reports —, the group holds no
/// member that is not live, nothing waits to be revoked, every partition is owned, and commits
/// are at the log end. Without live members the group must hold no member.
///
/// A live member short of its target because an overtaken rejoin gave it partitions it never
/// heard of (`overtaken`: member id -> the event) is the `overtaken-rejoin` hazard's: its problem
/// is returned instead of kept, with the event and the partitions it lacks, for the caller to
/// excuse with the problems of those partitions.
fn consumer_problems(
    views: &Views,
    group: &str,
    cg: &ConsumerGroupView,
    live: &BTreeMap<&String, &MemberView>,
    overtaken: &BTreeMap<String, usize>,
    problems: &mut Problems,
) -> Vec<(usize, BTreeSet<TopicPartition>, Problem)> {
    let mut unheard = Vec::new();
    if live.is_empty() {
        if !cg.members.is_empty() {
            let held: Vec<&String> = cg.members.keys().collect();
            problems.push((None, format!("group {group} has no live members but holds {held:?}")));
        }
        return unheard;
    }
    let epoch = cg.assignment_epoch;
    if cg.group_epoch != epoch {
        problems.push((
            None,
            format!("group {group} is at epoch {} but its target at {epoch}", cg.group_epoch),
        ));
    }
    for (name, m) in live {
        let Some(id) = &m.member_id else {
            problems.push((None, format!("live member {name} never joined")));
            continue;
        };
        match cg.members.get(id) {
            None => problems.push((None, format!("live member {name} ({id}) is not in the group"))),
            Some(cm) if cm.epoch != epoch || cm.state != STABLE => problems.push((
                None,
                format!(
                    "live member {name} ({id}) is at epoch {} ({}), not reconciled to {epoch}",
                    cm.epoch, cm.state
                ),
            )),
            Some(_) => {}
        }
        if m.generation != epoch {
            problems.push((
                None,
                format!("live member {name} ({id}) reports epoch {}, not {epoch}", m.generation),
            ));
        }
        let target = cg.target.get(id).cloned().unwrap_or_default();
        if m.owned != target {
            let problem = (
                None,
                format!(
                    "live member {name} ({id}) owns {} but its target is {}",
                    partition_list(&m.owned.iter().cloned().collect::<Vec<_>>()),
                    partition_list(&target.iter().cloned().collect::<Vec<_>>())
                ),
            );
            let missing: BTreeSet<TopicPartition> = target.difference(&m.owned).cloned().collect();
            match overtaken.get(id) {
                Some(&cause) if !missing.is_empty() => unheard.push((cause, missing, problem)),
                _ => problems.push(problem),
            }
        }
    }
    let live_ids: BTreeSet<&String> = live.values().filter_map(|m| m.member_id.as_ref()).collect();
    for id in cg.members.keys().filter(|id| !live_ids.contains(id)) {
        problems.push((None, format!("group {group} still holds {id}, which is not live")));
    }
    for (tp, member) in &cg.revoking {
        problems.push((Some(tp.clone()), format!("{tp} still being revoked by {member}")));
    }
    for tp in all_partitions(views) {
        if !cg.owners.contains_key(&tp) {
            problems.push((Some(tp.clone()), format!("{tp} is owned by no member")));
        }
        commits_at_log_end(views, &tp, problems);
    }
    unheard
}

#[cfg(test)]
mod tests {
    use groupsim_history::MemberEvent;

    use crate::tests::{clean, loaded_generation_1};
    use crate::{check, AnomalyClass, Hazard};

    /// Swarm_mixed 649: a Java cooperative member alone formed the group on cooperative-sticky;
    /// the coordinator moved, and the new one loaded the group knowing that member by
    /// cooperative-sticky only (Kafka's loadGroup keeps each member's subscription for the
    /// chosen protocol). kafka-go, brod and Elsa members, offering roundrobin and not
    /// cooperative-sticky, were refused INCONSISTENT_GROUP_PROTOCOL on every retry, and the
    /// refusals start no rebalance that would let the loaded member offer roundrobin again:
    /// they never joined. Kafka allows it, so it is the `loaded-group-refuses-protocol` hazard;
    /// a refusal the load does not explain (the member offered the loaded protocol, or was
    /// refused before the load) is not.
    #[test]
    fn a_member_the_loaded_group_refuses_for_its_protocols_is_the_hazard_not_stuck() {
        let run = |offered: &[&str], refused_before_load: bool| {
            let mut h = clean();
            h.started("m2");
            let refusal = MemberEvent::JoinRefused {
                error: "INCONSISTENT_GROUP_PROTOCOL".into(),
                protocols: offered.iter().map(|p| p.to_string()).collect(),
            };
            if refused_before_load {
                h.member("m2", refusal.clone());
            }
            h.coord(loaded_generation_1(0));
            if !refused_before_load {
                h.member("m2", refusal);
            }
            check(&h.finish(&[(0, 10), (1, 10)]))
        };
        let v = run(&["roundrobin"], false);
        assert!(v.anomalies.is_empty(), "{:?}", v.anomalies);
        assert_eq!(v.hazards.len(), 1, "{:?}", v.hazards);
        assert_eq!(v.hazards[0].hazard, Hazard::LoadedGroupRefusesProtocol);
        assert!(v.hazards[0].anomaly.message.contains("m2 never joined"));

        let stuck = |v: crate::Verdict| v.anomalies.iter().any(|a| a.class == AnomalyClass::Stuck);
        assert!(stuck(run(&["range", "roundrobin"], false)), "it offered the loaded protocol");
        assert!(stuck(run(&["roundrobin"], true)), "the refusal came before the load");
    }
}
