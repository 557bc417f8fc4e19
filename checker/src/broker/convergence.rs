//! `not-converged`: when the run ends, after the heal and the time the harness gave the group,
//! the group must be stable: every live member's last group answer NONE, all of them in one
//! generation (classic) or at one member epoch (consumer protocol), and their assignments
//! disjoint and covering every partition of the topic. A live member is one the harness started
//! and had not stopped by the end mark.

use std::collections::{BTreeMap, BTreeSet};

use groupsim_wire::TopicPartition;

use super::assignments::holdings;
use super::log::{Answer, AnswerLog, Entry, Mark, Protocol, Request, NONE};
use super::{BrokerAnomaly, BrokerRule};

/// What one live member last heard: its generation or epoch, its assignment, and its last
/// group answer's error (with that answer's entry).
#[derive(Clone, Debug, Default)]
struct Standing {
    generation: Option<i32>,
    assignment: BTreeSet<TopicPartition>,
    last_error: i16,
    entry: Option<usize>,
}

/// Judges the group as it stood at the end mark (nothing if the log has none).
pub fn check(log: &AnswerLog) -> Vec<BrokerAnomaly> {
    let Some(end_ms) = log.mark_at(&Mark::End) else { return Vec::new() };
    let mut live: BTreeSet<String> = BTreeSet::new();
    for e in &log.entries {
        match e {
            Entry::Mark { mark: Mark::End, .. } => break,
            Entry::Mark { mark: Mark::Started(a), .. } => {
                live.insert(a.clone());
            }
            Entry::Mark { mark: Mark::Stopped(a), .. } => {
                live.remove(a);
            }
            _ => {}
        }
    }
    // A group that migrated between the protocols has members of both: each live member
    // stands where its last group answer of either kind left it.
    let mut standings = classic(log, &live);
    if log.protocol == Protocol::Consumer {
        for (actor, s) in consumer(log, &live) {
            match standings.get(&actor) {
                Some(c) if c.entry > s.entry => {}
                _ => {
                    standings.insert(actor, s);
                }
            }
        }
    }
    let mut problems = Vec::new();
    let mut evidence = Vec::new();
    for actor in &live {
        match standings.get(actor) {
            None => problems.push(format!("{actor} was never answered")),
            Some(s) => {
                evidence.extend(s.entry);
                if s.last_error != NONE {
                    problems
                        .push(format!("{actor}'s last group answer was error {}", s.last_error));
                }
            }
        }
    }
    let generations: BTreeSet<i32> = standings.values().filter_map(|s| s.generation).collect();
    if generations.len() > 1 {
        problems.push(format!("live members in generations/epochs {generations:?}"));
    }
    let mut owners: BTreeMap<&TopicPartition, usize> = BTreeMap::new();
    for s in standings.values() {
        for tp in &s.assignment {
            *owners.entry(tp).or_default() += 1;
        }
    }
    if !live.is_empty() {
        let missing: Vec<String> = log
            .partitions
            .iter()
            .filter(|tp| !owners.contains_key(tp))
            .map(ToString::to_string)
            .collect();
        if !missing.is_empty() {
            problems.push(format!("partitions assigned to nobody: {}", missing.join(", ")));
        }
    }
    let doubled: Vec<String> =
        owners.iter().filter(|(_, n)| **n > 1).map(|(tp, _)| tp.to_string()).collect();
    if !doubled.is_empty() {
        problems.push(format!("partitions assigned twice: {}", doubled.join(", ")));
    }
    if problems.is_empty() {
        return Vec::new();
    }
    vec![BrokerAnomaly {
        rule: BrokerRule::NotConverged,
        at_ms: end_ms,
        partition: None,
        summary: format!("at the end: {}", problems.join("; ")),
        evidence,
    }]
}

fn classic(log: &AnswerLog, live: &BTreeSet<String>) -> BTreeMap<String, Standing> {
    let mut standings: BTreeMap<String, Standing> = BTreeMap::new();
    for (i, x) in log.exchanges() {
        if !live.contains(&x.actor) {
            continue;
        }
        let s = standings.entry(x.actor.clone()).or_default();
        match (&x.request, &x.answer) {
            (Request::Sync { generation, .. }, Answer::Sync { error, assignment }) => {
                s.last_error = *error;
                s.entry = Some(i);
                if *error == NONE {
                    s.generation = Some(*generation);
                    s.assignment = assignment.iter().cloned().collect();
                }
            }
            (_, Answer::Join { error, .. }) => {
                s.last_error = *error;
                s.entry = Some(i);
            }
            (Request::Heartbeat { .. }, Answer::Error { error }) => {
                s.last_error = *error;
                s.entry = Some(i);
            }
            _ => {}
        }
    }
    standings
}

fn consumer(log: &AnswerLog, live: &BTreeSet<String>) -> BTreeMap<String, Standing> {
    // Holdings are by member id; map each to the live actor that last spoke for it.
    let mut actor_of: BTreeMap<String, String> = BTreeMap::new();
    let mut epochs: BTreeMap<String, (i16, i32)> = BTreeMap::new();
    for (_, x) in log.exchanges() {
        if let Answer::ConsumerHeartbeat { error, member_id, epoch, .. } = &x.answer {
            let Request::ConsumerHeartbeat { member_id: asked, .. } = &x.request else { continue };
            let id = if member_id.is_empty() { asked } else { member_id };
            actor_of.insert(id.clone(), x.actor.clone());
            epochs.insert(x.actor.clone(), (*error, *epoch));
        }
    }
    let mut standings = BTreeMap::new();
    for (id, list) in holdings(log) {
        let Some(actor) = actor_of.get(&id).filter(|a| live.contains(*a)) else { continue };
        let Some(last) = list.last() else { continue };
        let &(error, epoch) = epochs.get(actor).expect("recorded with the actor");
        // The actor's newest member id is the one that counts.
        let newest = log
            .exchanges()
            .filter(|(_, x)| &x.actor == actor)
            .filter_map(|(_, x)| match &x.answer {
                Answer::ConsumerHeartbeat { member_id, .. } if !member_id.is_empty() => {
                    Some(member_id.clone())
                }
                _ => None,
            })
            .last();
        if newest.as_deref() != Some(id.as_str()) {
            continue;
        }
        standings.insert(
            actor.clone(),
            Standing {
                generation: Some(epoch),
                assignment: last.held.clone(),
                last_error: error,
                entry: Some(last.entry),
            },
        );
    }
    standings
}
