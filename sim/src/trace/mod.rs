//! Rebalance traces: a canonical, human-readable rendering of a history that keeps what matters
//! to a rebalance (members starting and leaving, group states, generations with leader and
//! members, assignments, revocations, rejected commits) and summarises the rest (accepted commits
//! and processed records per member and generation). Times are simulated milliseconds.
//! For review, [`summary`] tells the same run rebalance by rebalance in tens of lines: that is
//! what the insta snapshots hold, so a behaviour change shows up as a reviewable diff.

mod consumer;
mod summary;

use std::collections::BTreeMap;
use std::fmt::Write as _;

use groupsim_history::{
    partition_list, CoordinatorEvent, EventKind, History, MemberEvent, WorldEvent,
};

use self::consumer::ConsumerTrace;
pub use self::summary::summary;

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
    // What each admin client's last describe showed (traced when it changes).
    let mut described: BTreeMap<String, String> = BTreeMap::new();
    let mut consumer = ConsumerTrace::new(history);
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
                WorldEvent::ObserverStarted { observer, host, .. } => {
                    line(&mut out, at, format!("{observer} (admin client) starts on {host}"))
                }
                WorldEvent::MemberLeaveRequested { member } => {
                    line(&mut out, at, format!("{member} asked to leave"))
                }
                WorldEvent::MemberStopped { member } => line(&mut out, at, format!("{member} stopped")),
                WorldEvent::CloseTimedOut { member } => {
                    line(&mut out, at, format!("{member} killed: not exited by its close deadline"))
                }
                WorldEvent::MemberExited { member, client_id, status, stderr_tail } => {
                    let last = stderr_tail.lines().last().unwrap_or("");
                    line(&mut out, at, format!("{member} ({client_id}) EXITED by itself ({status}): {last}"))
                }
                WorldEvent::ProducerStopped { log_end_offsets } => {
                    let total: i64 = log_end_offsets.iter().map(|(_, e)| e).sum();
                    line(&mut out, at, format!("producer stops: {total} records in all"))
                }
                WorldEvent::LivenessPhase { deadline_ms, .. } => {
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
                WorldEvent::RequestProcessedLate { node, member, api, member_id, read_at_ms } => {
                    let id = member_id.as_deref().map(|id| format!(" ({id})")).unwrap_or_default();
                    line(&mut out, at, format!("LATE broker-{node} processes {member}{id}'s {api:?} read at {read_at_ms}"))
                }
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
                            format!("broker-{broker} generation {generation} assigns {} <- {}", a.member_id, partition_list(&a.partitions)),
                        );
                    }
                }
                CoordinatorEvent::OffsetCommitAccepted { member_id, generation, .. } => {
                    let classic = !consumer.commit_accepted(member_id, *generation);
                    if let Some(name) = member_of_id.get(member_id).filter(|_| classic) {
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
                CoordinatorEvent::ConsumerGroup(e) => {
                    for l in consumer.coordinator(*broker, e) {
                        line(&mut out, at, l);
                    }
                }
                CoordinatorEvent::OffsetCommitRejected { member_id, generation, partition, offset, error, .. } => {
                    let from = match consumer.member_id(member_id) {
                        Some(m) => format!("{m} epoch {generation}"),
                        None => format!("{member_id} generation {generation}"),
                    };
                    line(&mut out, at, format!("broker-{broker} rejects commit {partition}@{offset} from {from}: {error}"))
                }
            },
            EventKind::Member { member, event } => match consumer.member(member, event) {
                Some(lines) => {
                    for l in lines {
                        line(&mut out, at, l);
                    }
                }
                None => match event {
                MemberEvent::Joined { member_id, generation, is_leader, .. } => {
                    member_of_id.insert(member_id.clone(), member.clone());
                    let role = if *is_leader { "leader" } else { "follower" };
                    line(&mut out, at, format!("{member} joined generation {generation} as {member_id} ({role})"))
                }
                MemberEvent::Revoked { generation, partitions: ps, .. } => {
                    flush(&mut out, &mut tallies, member, *generation, at);
                    line(&mut out, at, format!("{member} revokes {} (generation {generation})", partition_list(ps)))
                }
                MemberEvent::Lost { generation, partitions: ps, reason, .. } => {
                    flush(&mut out, &mut tallies, member, *generation, at);
                    line(&mut out, at, format!("{member} loses {} (generation {generation}): {reason}", partition_list(ps)))
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
                MemberEvent::JoinRefused { error, protocols } => line(
                    &mut out,
                    at,
                    format!("{member}'s JoinGroup offering [{}] refused: {error}", protocols.join(", ")),
                ),
                MemberEvent::RecordsProcessed { generation, first_offset, last_offset, .. } => {
                    tallies.entry((member.clone(), *generation)).or_default().processed +=
                        (last_offset - first_offset + 1).max(0) as u64;
                }
                MemberEvent::Left { member_id } => line(&mut out, at, format!("{member} left as {member_id}")),
                MemberEvent::GroupDescribed { node_id, api, error, state, members, .. } => {
                    // An admin client describes every second or so: a line when the picture changes.
                    let seen = match error {
                        Some(e) => format!("{api}: {e}"),
                        None => format!("{api}: {state}, {} members", members.len()),
                    };
                    if described.get(member) != Some(&seen) {
                        line(&mut out, at, format!("{member} describes the group at broker-{node_id} ({seen})"));
                        described.insert(member.clone(), seen);
                    }
                }
                _ => {}
                },
            },
        }
    }
    let end = history.events().last().map_or(0, |e| e.at_ms);
    for l in consumer.finish() {
        let _ = writeln!(out, "{end:>8}  {l}");
    }
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
