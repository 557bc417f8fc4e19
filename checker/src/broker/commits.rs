//! The commit rules.
//!
//! `zombie-commit`: an OffsetCommit answered NONE although, before it was written, the broker
//! had already said its sender was no longer that generation's member. Classic protocol: a
//! SyncGroup answered NONE at a later generation (that generation was written; Kafka accepts a
//! commit only at the current one), or its static instance given to another member id; and,
//! from the same coordinator ([`super::eras`]: a classic group's other changes are in memory
//! only, and a coordinator change undoes them), a JoinGroup answer of a later generation, the
//! member answered UNKNOWN_MEMBER_ID or its LeaveGroup accepted, or the leader's member list of
//! that very generation leaving it out (unless the member took a static member's place in it). Consumer protocol: the member had left (member epoch -1 answered) or
//! been fenced (UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH) and not rejoined since. Commits without
//! a generation (-1: an admin's commit) are not judged.
//!
//! `offset-regression`: a committed offset read (OffsetFetch) lower than one known committed
//! earlier — read before, or acknowledged to a commit answered before the read was written —
//! with no commit asking for the lower offset that the broker could have applied in between (one
//! not refused for that partition, written before the lower read was answered, and not answered
//! before the earlier knowledge began).

use std::collections::{BTreeMap, BTreeSet};

use groupsim_wire::{Millis, TopicPartition};

use super::eras::Eras;
use super::log::{Answer, AnswerLog, Entry, Request, FENCED_MEMBER_EPOCH, NONE, UNKNOWN_MEMBER_ID};
use super::statics::{self, Replacement};
use super::{BrokerAnomaly, BrokerRule};

/// Evidence that a member id stopped being a member at some instant.
struct Removal {
    /// When the harness read the proof.
    at_ms: Millis,
    entry: usize,
    why: String,
}

/// Finds every commit accepted from a member the broker had already removed or moved past.
pub fn zombie_commits(log: &AnswerLog) -> Vec<BrokerAnomaly> {
    let mut found = Vec::new();
    let replacements = statics::replacements(log);
    let static_joins = statics::static_joins(log);
    let eras = Eras::of(log);
    let consumer_members: BTreeSet<&str> = log
        .exchanges()
        .flat_map(|(_, x)| match (&x.request, &x.answer) {
            (
                Request::ConsumerHeartbeat { member_id: asked, .. },
                Answer::ConsumerHeartbeat { member_id: given, .. },
            ) => [Some(asked.as_str()), Some(given.as_str())],
            _ => [None, None],
        })
        .flatten()
        .collect();
    for (i, x) in log.exchanges() {
        let (Request::Commit { member_id, generation, offsets: _ }, Answer::Commit { errors }) =
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
        let removal = match consumer_members.contains(member_id.as_str()) {
            false => {
                classic_removal(log, &eras, &replacements, &static_joins, member_id, *generation, i)
            }
            true => consumer_removal(log, member_id, x.sent_ms),
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

/// The first proof, read before `commit`'s request was written, that `member_id` was not a
/// member of `generation` when the commit was validated. Persisted proofs ([`super::eras`]) —
/// its static instance given to another member id, a SyncGroup answered NONE at a later
/// generation (any member's while the group is plainly classic, its own after consumer members
/// appeared) — hold for the rest of the log; in-memory ones — a JoinGroup answer of a later
/// generation, its generation's member list without it, its LeaveGroup accepted, an answer
/// UNKNOWN_MEMBER_ID — only in their era, while the group is plainly classic (a consumer group
/// creates a classic member a JoinGroup names when it does not know it), and until a JoinGroup
/// lets the member id back in at the commit's generation.
fn classic_removal(
    log: &AnswerLog,
    eras: &Eras,
    replacements: &[Replacement],
    static_joins: &BTreeSet<(String, i32)>,
    member_id: &str,
    generation: i32,
    commit: usize,
) -> Option<Removal> {
    let Some(Entry::Exchange(c)) = log.entries.get(commit) else { return None };
    // Let back in at the commit's generation (or later) since entry `i`.
    let rejoined = |i: usize| log.joined_after(member_id, i, c.sent_ms, |g| g >= generation);
    // Given the commit's generation or a lower one since entry `i`: a consumer group deleted
    // and made again starts its epochs over.
    let restarted = |i: usize| log.joined_after(member_id, i, c.sent_ms, |g| g <= generation);
    for (i, x) in log.exchanges() {
        if x.answered_ms >= c.sent_ms || i >= commit {
            continue;
        }
        if let Some(r) = statics::at_entry(replacements, i).filter(|r| r.old == member_id) {
            let why = format!("its instance {} was given to {}", r.instance, r.new);
            return Some(Removal { at_ms: x.answered_ms, entry: i, why });
        }
        let classic = eras.classic_at(i);
        let same_era = eras.same(i, commit);
        let own = request_member(&x.request) == Some(member_id);
        let why = match (&x.request, &x.answer) {
            (Request::Sync { generation: g, .. }, Answer::Sync { error: NONE, .. })
                if *g > generation && (classic || (own && !restarted(i))) =>
            {
                format!("a SyncGroup answered NONE at generation {g}")
            }
            (_, Answer::Join { error: NONE, generation: g, .. })
                if *g > generation && classic && same_era =>
            {
                format!("a JoinGroup answer of generation {g} from the same coordinator")
            }
            (_, Answer::Join { error: NONE, generation: g, leader, members, member_id: to })
                if *g == generation
                    && classic
                    && same_era
                    && leader == to
                    && !members.is_empty()
                    && !members.iter().any(|m| m == member_id)
                    && !statics::replaced_into(replacements, member_id, generation)
                    && !static_joins.contains(&(member_id.to_string(), generation)) =>
            {
                format!("generation {g}'s member list without it")
            }
            (Request::Leave { member_id: m }, Answer::Error { error: NONE })
                if m == member_id && same_era && classic && !rejoined(i) =>
            {
                "its LeaveGroup was accepted by the same coordinator".to_string()
            }
            (r, a)
                if request_member(r) == Some(member_id)
                    && answer_error(a) == UNKNOWN_MEMBER_ID
                    && same_era
                    && classic
                    && !rejoined(i) =>
            {
                "the same coordinator answered it UNKNOWN_MEMBER_ID".to_string()
            }
            _ => continue,
        };
        return Some(Removal { at_ms: x.answered_ms, entry: i, why });
    }
    None
}

/// The last leave or fencing of `member_id` read before `before_ms`, if it did not rejoin since.
fn consumer_removal(log: &AnswerLog, member_id: &str, before_ms: Millis) -> Option<Removal> {
    let mut last: Option<Removal> = None;
    for (i, x) in log.exchanges() {
        if x.answered_ms >= before_ms {
            continue;
        }
        let (
            Request::ConsumerHeartbeat { member_id: asked, epoch, .. },
            Answer::ConsumerHeartbeat { error, member_id: given, .. },
        ) = (&x.request, &x.answer)
        else {
            continue;
        };
        if asked != member_id && given != member_id {
            continue;
        }
        match (*error, *epoch) {
            (NONE, -1) | (NONE, -2) => {
                let why = "its leave heartbeat was accepted".to_string();
                last = Some(Removal { at_ms: x.answered_ms, entry: i, why });
            }
            (NONE, _) => last = None,
            (UNKNOWN_MEMBER_ID | FENCED_MEMBER_EPOCH, _) => {
                let why = format!("it was fenced ({})", error_name(*error));
                last = Some(Removal { at_ms: x.answered_ms, entry: i, why });
            }
            _ => {}
        }
    }
    last.filter(|r| r.at_ms < before_ms)
}

fn error_name(code: i16) -> &'static str {
    match code {
        UNKNOWN_MEMBER_ID => "UNKNOWN_MEMBER_ID",
        FENCED_MEMBER_EPOCH => "FENCED_MEMBER_EPOCH",
        _ => "an error",
    }
}

fn request_member(r: &Request) -> Option<&str> {
    match r {
        Request::Join { member_id, .. }
        | Request::Sync { member_id, .. }
        | Request::Heartbeat { member_id, .. }
        | Request::Leave { member_id }
        | Request::Commit { member_id, .. } => Some(member_id),
        _ => None,
    }
}

fn answer_error(a: &Answer) -> i16 {
    match a {
        Answer::Join { error, .. } | Answer::Sync { error, .. } | Answer::Error { error } => *error,
        Answer::Commit { errors } => errors.first().map(|e| e.1).unwrap_or(NONE),
        _ => NONE,
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
