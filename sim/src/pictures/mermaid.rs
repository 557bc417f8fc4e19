//! The Mermaid sequence diagram of one rebalance: from the group's move to PreparingRebalance
//! that led to the chosen generation until the next rebalance begins (or the run ends).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use groupsim_history::{
    partition_list, CoordinatorEvent, EventKind, GroupState, History, MemberEvent, WorldEvent,
};
use groupsim_wire::Millis;

use super::model::{member_names, natural_key};
use super::PictureError;

/// Text safe inside a Mermaid message or note: no statement separators, comment or entity
/// markers, or line breaks.
fn clean(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            ';' => ',',
            '#' => '_',
            '\n' | '\r' | '\t' => ' ',
            '%' => 'ᵖ',
            c => c,
        })
        .collect::<String>()
        .replace("-->", "->")
}

/// The generations a history started, with their member counts, in order.
pub(crate) fn generations(history: &History) -> Vec<(i32, usize)> {
    let mut out: Vec<(i32, usize)> = Vec::new();
    for e in history.events() {
        if let EventKind::Coordinator {
            event: CoordinatorEvent::GenerationStarted { generation, members, .. },
            ..
        } = &e.kind
        {
            if !out.iter().any(|(g, _)| g == generation) {
                out.push((*generation, members.len()));
            }
        }
    }
    out
}

/// Renders the sequence diagram of the rebalance that produced `generation` (default: the first
/// generation with more than one member).
pub(crate) fn render(history: &History, generation: Option<i32>) -> Result<String, PictureError> {
    let gens = generations(history);
    let known = || {
        if gens.is_empty() {
            "none".to_string()
        } else {
            gens.iter().map(|(g, _)| g.to_string()).collect::<Vec<_>>().join(", ")
        }
    };
    let chosen = match generation {
        Some(g) if gens.iter().any(|(k, _)| *k == g) => g,
        Some(g) => return Err(PictureError::UnknownGeneration { asked: g, known: known() }),
        None => match gens.iter().find(|(_, n)| *n > 1).or(gens.first()) {
            Some((g, _)) => *g,
            None => return Err(PictureError::NoGeneration),
        },
    };
    let events = history.events();
    let names = member_names(history);
    let name_of = |id: &str| names.get(id).cloned().unwrap_or_else(|| id.to_string());

    // The window: from the last move to PreparingRebalance before the generation started, to the
    // first move to PreparingRebalance after it (exclusive).
    let started = events
        .iter()
        .position(|e| {
            matches!(&e.kind, EventKind::Coordinator { event: CoordinatorEvent::GenerationStarted { generation, .. }, .. } if *generation == chosen)
        })
        .unwrap_or(0);
    let to_preparing = |e: &groupsim_history::Event| {
        matches!(
            &e.kind,
            EventKind::Coordinator {
                event: CoordinatorEvent::GroupStateChanged {
                    to: GroupState::PreparingRebalance,
                    ..
                },
                ..
            }
        )
    };
    let mut first = events[..started].iter().rposition(to_preparing).unwrap_or(0);
    // The join that triggered the rebalance is recorded just before the state change.
    while first > 0 && events[first - 1].at_ms == events[first].at_ms {
        first -= 1;
    }
    let last = events[started + 1..]
        .iter()
        .position(to_preparing)
        .map_or(events.len(), |p| started + 1 + p);
    let window = &events[first..last];
    let (from_ms, to_ms): (Millis, Millis) =
        (window.first().map_or(0, |e| e.at_ms), window.last().map_or(0, |e| e.at_ms));

    // Participants: brokers in order of appearance, then members in natural order.
    let mut brokers: Vec<i32> = Vec::new();
    let mut members: BTreeMap<(String, u64, String), String> = BTreeMap::new();
    let mut lines: Vec<String> = Vec::new();
    let add_member = |m: &str, members: &mut BTreeMap<(String, u64, String), String>| {
        members.insert(natural_key(m), m.to_string());
    };
    let bid = |b: i32| format!("b{b}");
    let mid = |m: &str| format!("m_{}", m.replace(|c: char| !c.is_ascii_alphanumeric(), "_"));
    let mut all_note = Vec::new(); // indices of lines that span every participant
    let mut scenario = String::new();
    let mut seed = 0;
    for e in events.iter().take(1) {
        if let EventKind::World(WorldEvent::RunStarted { scenario: s, seed: sd }) = &e.kind {
            scenario = s.clone();
            seed = *sd;
        }
    }
    let mut coordinator_of_group = None;
    for e in window {
        let t = e.at_ms;
        match &e.kind {
            EventKind::Coordinator { broker, event } => {
                if !brokers.contains(broker) {
                    brokers.push(*broker);
                }
                coordinator_of_group = Some(*broker);
                let b = bid(*broker);
                match event {
                    CoordinatorEvent::GroupStateChanged { from, to, generation, .. } => {
                        lines.push(format!(
                            "Note over {b}: t={t} {} -> {} (generation {generation})",
                            from.kafka_name(),
                            to.kafka_name()
                        ))
                    }
                    CoordinatorEvent::MemberAdded { member_id, .. } => {
                        let m = name_of(member_id);
                        add_member(&m, &mut members);
                        lines.push(format!(
                            "{}->>{b}: t={t} JoinGroup: added as {member_id}",
                            mid(&m)
                        ));
                    }
                    CoordinatorEvent::MemberRemoved { member_id, reason, .. } => {
                        let m = name_of(member_id);
                        add_member(&m, &mut members);
                        lines.push(format!(
                            "{b}-x{}: t={t} removed {member_id} ({reason:?})",
                            mid(&m)
                        ));
                    }
                    CoordinatorEvent::GenerationStarted {
                        generation,
                        protocol,
                        leader,
                        members: ms,
                        ..
                    } => {
                        let leader = leader.as_deref().map(name_of).unwrap_or_else(|| "-".into());
                        let ms: Vec<String> = ms.iter().map(|m| name_of(m)).collect();
                        lines.push(format!(
                            "Note over {b}: t={t} generation {generation} started, protocol {}, leader {leader}, members {}",
                            protocol.as_deref().unwrap_or("-"),
                            ms.join(" ")
                        ));
                    }
                    CoordinatorEvent::AssignmentStored { generation, assignments, .. } => {
                        let text: Vec<String> = assignments
                            .iter()
                            .map(|a| {
                                format!(
                                    "{} {}",
                                    name_of(&a.member_id),
                                    partition_list(&a.partitions)
                                )
                            })
                            .collect();
                        lines.push(format!(
                            "Note over {b}: t={t} generation {generation} assignment stored:<br/>{}",
                            text.join("<br/>")
                        ));
                    }
                    CoordinatorEvent::OffsetCommitRejected {
                        member_id,
                        generation,
                        partition,
                        offset,
                        error,
                        ..
                    } => {
                        let m = name_of(member_id);
                        add_member(&m, &mut members);
                        lines.push(format!(
                            "{b}--x{}: t={t} OffsetCommit {partition}@{offset} (generation {generation}) rejected: {error}",
                            mid(&m)
                        ));
                    }
                    CoordinatorEvent::GroupLoaded { state, generation, .. } => lines.push(format!(
                        "Note over {b}: t={t} group loaded: {} generation {generation}",
                        state.kafka_name()
                    )),
                    CoordinatorEvent::GroupUnloaded { .. } => lines
                        .push(format!("Note over {b}: t={t} group unloaded (coordinator moved)")),
                    CoordinatorEvent::OffsetCommitAccepted { .. } => {}
                    // KIP-848 consumer groups are not drawn yet.
                    CoordinatorEvent::ConsumerGroup(_) => {}
                }
            }
            EventKind::Member { member, event } => {
                let b = match coordinator_of_group {
                    Some(b) => b,
                    None => continue,
                };
                let (bn, m) = (bid(b), mid(member));
                let line = match event {
                    MemberEvent::Joined { generation, is_leader, member_id, .. } => {
                        let role = if *is_leader { "leader" } else { "follower" };
                        format!("{bn}-->>{m}: t={t} JoinGroup ok: generation {generation}, {member_id} is {role}")
                    }
                    MemberEvent::AssignmentComputed { generation, protocol, .. } => {
                        format!("{m}->>{bn}: t={t} SyncGroup with the {protocol} assignment of generation {generation}")
                    }
                    MemberEvent::Assigned { generation, partitions: ps, .. } => {
                        format!(
                            "{bn}-->>{m}: t={t} SyncGroup ok: generation {generation} owns {}",
                            partition_list(ps)
                        )
                    }
                    MemberEvent::Revoked { generation, partitions: ps, .. } => {
                        format!(
                            "Note over {m}: t={t} revokes {} (generation {generation})",
                            partition_list(ps)
                        )
                    }
                    MemberEvent::Lost { generation, partitions: ps, reason, .. } => {
                        format!(
                            "Note over {m}: t={t} loses {} (generation {generation}): {reason}",
                            partition_list(ps)
                        )
                    }
                    MemberEvent::GenerationReset { generation, error, .. } => {
                        format!("Note over {m}: t={t} resets generation {generation} after {error}")
                    }
                    MemberEvent::CoordinatorLost { reason } => {
                        format!("Note over {m}: t={t} lost its coordinator: {reason}")
                    }
                    MemberEvent::JoinRefused { error, .. } => {
                        format!("Note over {m}: t={t} JoinGroup refused: {error}")
                    }
                    MemberEvent::Left { member_id } => {
                        format!("{m}->>{bn}: t={t} LeaveGroup as {member_id}")
                    }
                    MemberEvent::Fatal { error, .. } => {
                        format!("Note over {m}: t={t} fatal: {error}")
                    }
                    _ => continue,
                };
                add_member(member, &mut members);
                lines.push(line);
            }
            EventKind::World(w) => {
                let text = match w {
                    WorldEvent::FaultInjected { fault, applied } => {
                        let skipped = if *applied { "" } else { " (no target: skipped)" };
                        format!("t={t} FAULT {fault}{skipped}")
                    }
                    WorldEvent::ServeFault { description, .. } => {
                        format!("t={t} FAULT {description}")
                    }
                    WorldEvent::FaultHealed { description } => {
                        format!("t={t} HEALED {description}")
                    }
                    WorldEvent::BrokerCrashed { node } => format!("t={t} broker-{node} crashes"),
                    WorldEvent::BrokerRestarted { node } => format!("t={t} broker-{node} restarts"),
                    WorldEvent::CoordinatorMoved { from, to, reason, .. } => {
                        format!("t={t} coordinator moves broker-{from} -> broker-{to} ({reason})")
                    }
                    WorldEvent::MemberStarted { member, .. }
                    | WorldEvent::MemberStopped { member }
                    | WorldEvent::MemberExited { member, .. }
                    | WorldEvent::MemberLeaveRequested { member } => {
                        let what = match w {
                            WorldEvent::MemberStarted { host, .. } => {
                                format!("process starts on {host}")
                            }
                            WorldEvent::MemberStopped { .. } => "process stops".to_string(),
                            WorldEvent::MemberExited { status, .. } => {
                                format!("process exits ({status})")
                            }
                            _ => "asked to leave".to_string(),
                        };
                        add_member(member, &mut members);
                        lines.push(format!("Note over {}: t={t} {what}", mid(member)));
                        continue;
                    }
                    _ => continue,
                };
                all_note.push(lines.len());
                lines.push(text);
            }
        }
    }
    if brokers.is_empty() {
        brokers.push(0);
    }
    let first_p = bid(brokers[0]);
    let last_p = members
        .values()
        .last()
        .map(|m| mid(m))
        .unwrap_or_else(|| bid(*brokers.last().unwrap_or(&0)));

    let mut out = String::from("sequenceDiagram\n");
    let _ = writeln!(
        out,
        "%% groupsim {} seed {seed}: the rebalance to generation {chosen}, t={from_ms}..{to_ms} ms",
        if scenario.is_empty() { "run" } else { &scenario }
    );
    for b in &brokers {
        let _ = writeln!(out, "    participant {} as broker-{b} (coordinator)", bid(*b));
    }
    for m in members.values() {
        let _ = writeln!(out, "    participant {} as {}", mid(m), clean(m));
    }
    let _ = writeln!(
        out,
        "    Note over {first_p},{last_p}: rebalance to generation {chosen} (t={from_ms}..{to_ms} ms)"
    );
    for (i, l) in lines.iter().enumerate() {
        if all_note.contains(&i) {
            let _ = writeln!(out, "    Note over {first_p},{last_p}: {}", clean(l));
        } else {
            // Keep the arrow or "Note over X:" head intact and clean only the text.
            let (head, text) = l.split_once(": ").unwrap_or((l, ""));
            let _ = writeln!(out, "    {head}: {}", clean(text));
        }
    }
    Ok(out)
}
