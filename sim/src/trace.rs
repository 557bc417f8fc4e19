//! Rebalance traces: a canonical, human-readable rendering of a history that keeps what matters
//! to a rebalance (members starting and leaving, group states, generations with leader and
//! members, assignments, revocations, rejected commits) and summarises the rest (accepted commits
//! and processed records per member and generation). Times are simulated milliseconds. Traces are
//! snapshot-compared with insta, so a behaviour change shows up as a reviewable diff.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use groupsim_coordinator::CoordinatorEvent;
use groupsim_member::MemberEvent;
use groupsim_wire::TopicPartition;

use crate::history::{EventKind, History, WorldEvent};

/// Compact partition list: `orders[0-2,5] payments[1]`.
pub fn partitions(parts: &[TopicPartition]) -> String {
    let mut by_topic: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
    for tp in parts {
        by_topic.entry(tp.topic.as_str()).or_default().push(tp.partition);
    }
    if by_topic.is_empty() {
        return "-".into();
    }
    let mut out = Vec::new();
    for (topic, mut ps) in by_topic {
        ps.sort_unstable();
        let mut runs: Vec<String> = Vec::new();
        let mut i = 0;
        while i < ps.len() {
            let mut j = i;
            while j + 1 < ps.len() && ps[j + 1] == ps[j] + 1 {
                j += 1;
            }
            runs.push(if i == j { ps[i].to_string() } else { format!("{}-{}", ps[i], ps[j]) });
            i = j + 1;
        }
        out.push(format!("{topic}[{}]", runs.join(",")));
    }
    out.join(" ")
}

#[derive(Default)]
struct Tally {
    commits: u64,
    processed: u64,
}

/// Renders the text trace of a history.
pub fn text(history: &History) -> String {
    let mut out = String::new();
    // (member name, generation) -> tally, flushed when the member's generation ends.
    let mut tallies: BTreeMap<(String, i32), Tally> = BTreeMap::new();
    let mut member_of_id: BTreeMap<String, String> = BTreeMap::new();
    let line = |out: &mut String, at: u64, s: String| {
        let _ = writeln!(out, "{at:>8}  {s}");
    };
    for e in history.events() {
        let at = e.at_ms;
        match &e.kind {
            EventKind::World(w) => match w {
                WorldEvent::RunStarted { scenario, seed } => {
                    line(&mut out, at, format!("run {scenario} seed {seed}"))
                }
                WorldEvent::TopicCreated { topic, partitions } => {
                    line(&mut out, at, format!("topic {topic} with {partitions} partitions"))
                }
                WorldEvent::MemberStarted { member, host, .. } => {
                    line(&mut out, at, format!("{member} starts on {host}"))
                }
                WorldEvent::MemberLeaveRequested { member } => {
                    line(&mut out, at, format!("{member} asked to leave"))
                }
                WorldEvent::MemberStopped { member } => line(&mut out, at, format!("{member} stopped")),
                WorldEvent::MemberExited { member, client_id, status, stderr_tail } => {
                    let last = stderr_tail.lines().last().unwrap_or("");
                    line(&mut out, at, format!("{member} ({client_id}) EXITED by itself ({status}): {last}"))
                }
                WorldEvent::ProducerStopped { log_end_offsets } => {
                    let total: i64 = log_end_offsets.iter().map(|(_, e)| e).sum();
                    line(&mut out, at, format!("producer stops: {total} records in all"))
                }
                WorldEvent::LivenessPhase { deadline_ms } => {
                    line(&mut out, at, format!("liveness phase: converge by {deadline_ms}"))
                }
                WorldEvent::LivenessHeld { since_ms, grace_ms } => line(
                    &mut out,
                    at,
                    format!("converged since {since_ms}, held for the {grace_ms} ms grace"),
                ),
                WorldEvent::RunEnded => line(&mut out, at, "run ends".into()),
                WorldEvent::BrokerCrashed { node } => line(&mut out, at, format!("broker-{node} CRASHES")),
                WorldEvent::BrokerFailureDetected { node } => {
                    line(&mut out, at, format!("broker-{node} failure detected"))
                }
                WorldEvent::BrokerRestarted { node } => line(&mut out, at, format!("broker-{node} restarts (empty state)")),
                WorldEvent::CoordinatorMoved { partition, groups, from, to, load_ms, reason } => line(
                    &mut out,
                    at,
                    format!(
                        "coordinator of offsets partition {partition} [{}] moves broker-{from} -> broker-{to} ({reason}, load {load_ms} ms)",
                        groups.join(", ")
                    ),
                ),
                WorldEvent::PartitionLeaderMoved { partition, from, to } => {
                    line(&mut out, at, format!("leader of {partition} moves broker-{from} -> broker-{to}"))
                }
                WorldEvent::SwarmChosen { description } => line(&mut out, at, format!("swarm: {description}")),
                WorldEvent::TriggerFired { trigger, target } => {
                    line(&mut out, at, format!("TRIGGER {trigger} -> {target}"))
                }
                WorldEvent::FaultInjected { fault, applied } => {
                    let skipped = if *applied { "" } else { " (no target: skipped)" };
                    line(&mut out, at, format!("FAULT {fault}{skipped}"))
                }
                WorldEvent::ServeFault { description, .. } => line(&mut out, at, format!("FAULT {description}")),
                WorldEvent::FaultHealed { description } => line(&mut out, at, format!("HEALED {description}")),
                WorldEvent::PartitionsAdded { topic, partitions } => {
                    line(&mut out, at, format!("topic {topic} grows to {partitions} partitions"))
                }
                WorldEvent::Produced { .. } => {}
            },
            EventKind::Coordinator { broker, event } => match event {
                CoordinatorEvent::GroupStateChanged { group, from, to, generation } => line(
                    &mut out,
                    at,
                    format!("broker-{broker} group {group}: {from:?} -> {to:?} (generation {generation})"),
                ),
                CoordinatorEvent::MemberAdded { member_id, .. } => {
                    line(&mut out, at, format!("broker-{broker} adds {member_id}"))
                }
                CoordinatorEvent::MemberRemoved { member_id, reason, .. } => {
                    line(&mut out, at, format!("broker-{broker} removes {member_id} ({reason:?})"))
                }
                CoordinatorEvent::GenerationStarted { generation, protocol, leader, members, .. } => {
                    line(
                        &mut out,
                        at,
                        format!(
                            "broker-{broker} generation {generation}: protocol {} leader {} members [{}]",
                            protocol.as_deref().unwrap_or("-"),
                            leader.as_deref().unwrap_or("-"),
                            members.join(", ")
                        ),
                    )
                }
                CoordinatorEvent::AssignmentStored { generation, assignments, .. } => {
                    for a in assignments {
                        line(
                            &mut out,
                            at,
                            format!("broker-{broker} generation {generation} assigns {} <- {}", a.member_id, partitions(&a.partitions)),
                        );
                    }
                }
                CoordinatorEvent::OffsetCommitAccepted { member_id, generation, .. } => {
                    if let Some(name) = member_of_id.get(member_id) {
                        tallies.entry((name.clone(), *generation)).or_default().commits += 1;
                    }
                }
                CoordinatorEvent::GroupLoaded { group, partition, state, generation, members, .. } => line(
                    &mut out,
                    at,
                    format!(
                        "broker-{broker} loads group {group} (offsets partition {partition}): {state:?} generation {generation} members [{}]",
                        members.join(", ")
                    ),
                ),
                CoordinatorEvent::GroupUnloaded { group, partition } => line(
                    &mut out,
                    at,
                    format!("broker-{broker} unloads group {group} (offsets partition {partition})"),
                ),
                // KIP-848 consumer groups: no scenario runs them yet; shown raw until one does.
                CoordinatorEvent::ConsumerGroup(e) => {
                    line(&mut out, at, format!("broker-{broker} consumer group: {e:?}"))
                }
                CoordinatorEvent::OffsetCommitRejected { member_id, generation, partition, offset, error, .. } => {
                    line(
                        &mut out,
                        at,
                        format!("broker-{broker} rejects commit {partition}@{offset} from {member_id} generation {generation}: {error}"),
                    )
                }
            },
            EventKind::Member { member, event } => match event {
                MemberEvent::Joined { member_id, generation, is_leader, .. } => {
                    member_of_id.insert(member_id.clone(), member.clone());
                    let role = if *is_leader { "leader" } else { "follower" };
                    line(&mut out, at, format!("{member} joined generation {generation} as {member_id} ({role})"))
                }
                MemberEvent::Revoked { generation, partitions: ps, .. } => {
                    flush(&mut out, &mut tallies, member, *generation, at);
                    line(&mut out, at, format!("{member} revokes {} (generation {generation})", partitions(ps)))
                }
                MemberEvent::Lost { generation, partitions: ps, reason, .. } => {
                    flush(&mut out, &mut tallies, member, *generation, at);
                    line(&mut out, at, format!("{member} loses {} (generation {generation}): {reason}", partitions(ps)))
                }
                MemberEvent::GenerationReset { generation, error, answer_about, .. } => {
                    let about = answer_about
                        .as_ref()
                        .map(|a| format!(" (an answer about generation {})", a.generation))
                        .unwrap_or_default();
                    line(&mut out, at, format!("{member} resets generation {generation} after {error}{about}"))
                }
                MemberEvent::CoordinatorLost { reason } => {
                    line(&mut out, at, format!("{member} lost its coordinator: {reason}"))
                }
                MemberEvent::RecordsProcessed { generation, first_offset, last_offset, .. } => {
                    tallies.entry((member.clone(), *generation)).or_default().processed +=
                        (last_offset - first_offset + 1).max(0) as u64;
                }
                MemberEvent::Left { member_id } => line(&mut out, at, format!("{member} left as {member_id}")),
                _ => {}
            },
        }
    }
    let end = history.events().last().map_or(0, |e| e.at_ms);
    for ((member, generation), t) in std::mem::take(&mut tallies) {
        let _ = writeln!(
            out,
            "{end:>8}  {member} generation {generation}: processed {} records, {} commits accepted",
            t.processed, t.commits
        );
    }
    out
}

fn flush(
    out: &mut String,
    tallies: &mut BTreeMap<(String, i32), Tally>,
    member: &str,
    generation: i32,
    at: u64,
) {
    if let Some(t) = tallies.remove(&(member.to_string(), generation)) {
        let _ = writeln!(
            out,
            "{at:>8}  {member} generation {generation}: processed {} records, {} commits accepted",
            t.processed, t.commits
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partition_lists_are_compact_and_sorted() {
        let ps = vec![
            TopicPartition::new("b", 1),
            TopicPartition::new("a", 2),
            TopicPartition::new("a", 0),
            TopicPartition::new("a", 1),
            TopicPartition::new("a", 5),
        ];
        assert_eq!(partitions(&ps), "a[0-2,5] b[1]");
        assert_eq!(partitions(&[]), "-");
    }
}
