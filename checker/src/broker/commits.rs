//! The commit rules.
//!
//! `zombie-commit`: an OffsetCommit answered NONE although, before it was written, the broker
//! had already said its sender was no longer that generation's member (or had said so of the
//! member's own earlier request on the same connection, which it answered before reading the
//! commit: [`super::log::same_connection`]). Classic protocol: a
//! SyncGroup answered NONE at a later generation (that generation was written; Kafka accepts a
//! commit only at the current one), or its static instance given to another member id; and,
//! from the same coordinator ([`super::eras`]: a classic group's other changes are in memory
//! only, and a coordinator change undoes them), a JoinGroup answer of a later generation, the
//! member answered UNKNOWN_MEMBER_ID or its LeaveGroup accepted, its session expired, or the
//! leader's member list of that very generation leaving it out (unless the member took a static
//! member's place in it): [`super::removals`]. Consumer protocol: the member had left (member epoch -1 answered) or
//! been removed (UNKNOWN_MEMBER_ID), or its heartbeat at the commit's very epoch was answered
//! FENCED_MEMBER_EPOCH, and it had not rejoined since. Commits without
//! a generation (-1: an admin's commit) are not judged.
//!
//! `offset-regression`: a committed offset read (OffsetFetch) lower than one known committed
//! earlier — read before, or acknowledged to a commit answered before the read was written —
//! with no commit asking for the lower offset that the broker could have applied in between (one
//! not refused for that partition, written before the lower read was answered, and not answered
//! before the earlier knowledge began).

use std::collections::BTreeMap;

use groupsim_wire::{Millis, TopicPartition};

use super::log::{
    same_connection, Answer, AnswerLog, Entry, Exchange, Request, FENCED_MEMBER_EPOCH, NONE,
    UNKNOWN_MEMBER_ID,
};
use super::removals::{Kind, Removal, Removals};
use super::{BrokerAnomaly, BrokerRule};

/// Finds every commit accepted from a member the broker had already removed or moved past.
pub fn zombie_commits(log: &AnswerLog) -> Vec<BrokerAnomaly> {
    let mut found = Vec::new();
    let removals = Removals::of(log);
    // Each consumer-protocol member's heartbeats, in log order: what a commit of that member
    // is judged by (a walk over the whole log per commit made the rule quadratic).
    let mut heartbeats: BTreeMap<&str, Vec<(usize, &Exchange)>> = BTreeMap::new();
    // Each member's heartbeats, answered or not: (entry, when written, when read if ever), for
    // proofs taken from a connection's order.
    let mut writes: BTreeMap<&str, Vec<Write>> = BTreeMap::new();
    for (i, e) in log.entries.iter().enumerate() {
        match e {
            Entry::Exchange(x) => {
                if let (
                    Request::ConsumerHeartbeat { member_id: asked, .. },
                    Answer::ConsumerHeartbeat { member_id: given, .. },
                ) = (&x.request, &x.answer)
                {
                    heartbeats.entry(asked).or_default().push((i, x));
                    writes.entry(asked).or_default().push((i, x.sent_ms, Some(x.answered_ms)));
                    if given != asked {
                        heartbeats.entry(given).or_default().push((i, x));
                        writes.entry(given).or_default().push((i, x.sent_ms, Some(x.answered_ms)));
                    }
                }
            }
            Entry::Unanswered {
                call: Request::ConsumerHeartbeat { member_id, .. },
                sent_ms,
                ..
            } => writes.entry(member_id).or_default().push((i, *sent_ms, None)),
            _ => {}
        }
    }
    for (i, x) in log.exchanges() {
        let (Request::Commit { member_id, generation, .. }, Answer::Commit { errors }) =
            (&x.request, &x.answer)
        else {
            continue;
        };
        if *generation < 0 {
            continue;
        }
        let accepted: Vec<&TopicPartition> =
            errors.iter().filter(|(_, e)| *e == NONE).map(|(tp, _)| tp).collect();
        let Some(&first) = accepted.first() else { continue };
        // A member id is judged by the protocol it spoke: consumer-protocol members by their
        // heartbeats, classic ones (in a classic group or a consumer group) by the rest.
        let removal = match heartbeats.get(member_id.as_str()) {
            None => removals.first(member_id, *generation, i, |_| true),
            Some(beats) => {
                let writes = writes.get(member_id.as_str()).map_or(&[][..], |w| w.as_slice());
                consumer_removal(beats, writes, *generation, (i, x))
            }
        };
        if let Some(r) = removal {
            found.push(BrokerAnomaly {
                rule: BrokerRule::ZombieCommit,
                at_ms: x.answered_ms,
                partition: Some(first.clone()),
                summary: format!(
                    "OffsetCommit of member {member_id} at generation {generation} answered \
                     NONE for {} partition(s), after {}",
                    accepted.len(),
                    r.why
                ),
                evidence: vec![r.entry, i],
            });
        }
    }
    found
}

/// The last leave or fencing decided before the commit (entry `judged`, exchange `c`) was read
/// among one member's heartbeats (`beats`, in log order), if it did not rejoin since, that
/// rules out a commit at member epoch `commit_epoch`. Decided before: read before the commit
/// was written, or answered before it on the same connection ([`same_connection`]) with no other
/// heartbeat of the member (`writes`: when each was written and read) that may have been served
/// between the two. UNKNOWN_MEMBER_ID says the member is gone; FENCED_MEMBER_EPOCH only that the
/// heartbeat's epoch is not the member's (Kafka's epoch check throws and changes nothing: the
/// member keeps its epoch and its session), so it rules out commits at that epoch and no other
/// (a client that heartbeats at a stale epoch, as librdkafka 2.16 did in check-client's
/// confluent-kafka consumer seed 3, may still commit at its current one).
fn consumer_removal(
    beats: &[(usize, &Exchange)],
    writes: &[Write],
    commit_epoch: i32,
    (judged, c): (usize, &Exchange),
) -> Option<Removal> {
    let mut last: Option<Removal> = None;
    for &(i, x) in beats {
        let read_before = x.answered_ms < c.sent_ms;
        let queued_before = i < judged && same_connection(x, c) && alone(i, x, writes, c);
        if !(read_before || queued_before) {
            continue;
        }
        let (Request::ConsumerHeartbeat { epoch, .. }, Answer::ConsumerHeartbeat { error, .. }) =
            (&x.request, &x.answer)
        else {
            continue;
        };
        match (*error, *epoch) {
            (NONE, -1) | (NONE, -2) => {
                let why = "its leave heartbeat was accepted".to_string();
                last = Some(Removal { at_ms: x.answered_ms, entry: i, why, kind: Kind::Left });
            }
            (NONE, _) => last = None,
            (FENCED_MEMBER_EPOCH, fenced) if fenced != commit_epoch => {}
            (UNKNOWN_MEMBER_ID | FENCED_MEMBER_EPOCH, _) => {
                let why = format!("it was fenced ({})", error_name(*error));
                last = Some(Removal { at_ms: x.answered_ms, entry: i, why, kind: Kind::Left });
            }
            _ => {}
        }
    }
    last
}

/// A heartbeat of a member: its entry, when it was written, and when its answer was read (never:
/// `None`).
type Write = (usize, Millis, Option<Millis>);

/// Whether no heartbeat of the member but `x` (entry `i`) may have been served between `x` and
/// `c`: every other one was written after `c`'s answer was read, or read before `x` was written.
fn alone(i: usize, x: &Exchange, writes: &[Write], c: &Exchange) -> bool {
    !writes.iter().any(|&(k, sent, read)| {
        k != i && sent <= c.answered_ms && read.is_none_or(|read| read >= x.sent_ms)
    })
}

fn error_name(code: i16) -> &'static str {
    match code {
        UNKNOWN_MEMBER_ID => "UNKNOWN_MEMBER_ID",
        FENCED_MEMBER_EPOCH => "FENCED_MEMBER_EPOCH",
        _ => "an error",
    }
}

/// A committed offset known to have been in force at some instant of `[from_ms, to_ms]`.
#[derive(Clone, Copy)]
struct Known {
    offset: i64,
    from_ms: Millis,
    to_ms: Millis,
    entry: usize,
}

/// A commit request for one partition that the broker may have applied.
struct Asked {
    offset: i64,
    sent_ms: Millis,
    /// When its answer was read (None: never).
    answered_ms: Option<Millis>,
}

/// Finds every committed offset that went back with no commit asking for it.
pub fn regressions(log: &AnswerLog) -> Vec<BrokerAnomaly> {
    let mut asked: BTreeMap<TopicPartition, Vec<Asked>> = BTreeMap::new();
    for e in &log.entries {
        match e {
            Entry::Exchange(x) => {
                if let (Request::Commit { offsets, .. }, Answer::Commit { errors }) =
                    (&x.request, &x.answer)
                {
                    for (tp, offset) in offsets {
                        let refused = errors.iter().any(|(t, e)| t == tp && *e != NONE);
                        if !refused {
                            asked.entry(tp.clone()).or_default().push(Asked {
                                offset: *offset,
                                sent_ms: x.sent_ms,
                                answered_ms: Some(x.answered_ms),
                            });
                        }
                    }
                }
            }
            Entry::Unanswered { sent_ms, call: Request::Commit { offsets, .. }, .. } => {
                for (tp, offset) in offsets {
                    asked.entry(tp.clone()).or_default().push(Asked {
                        offset: *offset,
                        sent_ms: *sent_ms,
                        answered_ms: None,
                    });
                }
            }
            _ => {}
        }
    }
    let mut known: BTreeMap<TopicPartition, Vec<Known>> = BTreeMap::new();
    let mut found = Vec::new();
    for (i, x) in log.exchanges() {
        match &x.answer {
            Answer::Commit { errors } => {
                let Request::Commit { offsets, .. } = &x.request else { continue };
                for (tp, offset) in offsets {
                    if errors.iter().any(|(t, e)| t == tp && *e == NONE) {
                        let k = Known {
                            offset: *offset,
                            from_ms: x.sent_ms,
                            to_ms: x.answered_ms,
                            entry: i,
                        };
                        known.entry(tp.clone()).or_default().push(k);
                    }
                }
            }
            Answer::OffsetFetch { offsets } => {
                for (tp, offset, error) in offsets {
                    if *error != NONE {
                        continue;
                    }
                    let read = Known {
                        offset: *offset,
                        from_ms: x.sent_ms,
                        to_ms: x.answered_ms,
                        entry: i,
                    };
                    let earlier = known
                        .get(tp)
                        .into_iter()
                        .flatten()
                        .filter(|k| k.to_ms < read.from_ms && k.offset > read.offset);
                    let unexplained = earlier
                        .filter(|k| {
                            !asked.get(tp).into_iter().flatten().any(|a| {
                                a.offset == read.offset
                                    && a.sent_ms < read.to_ms
                                    && a.answered_ms.is_none_or(|t| t > k.from_ms)
                            })
                        })
                        .max_by_key(|k| k.offset);
                    if let Some(k) = unexplained {
                        found.push(BrokerAnomaly {
                            rule: BrokerRule::OffsetRegression,
                            at_ms: x.answered_ms,
                            partition: Some(tp.clone()),
                            summary: format!(
                                "{tp}'s committed offset read as {} after {} was committed, \
                                 and no commit asked for {}",
                                read.offset, k.offset, read.offset
                            ),
                            evidence: vec![k.entry, i],
                        });
                    }
                    known.entry(tp.clone()).or_default().push(read);
                }
            }
            _ => {}
        }
    }
    found
}
