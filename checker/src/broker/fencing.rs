//! `wrong-error` for static members (KIP-345): which of UNKNOWN_MEMBER_ID and
//! FENCED_INSTANCE_ID a classic request naming a `group.instance.id` is refused with.
//!
//! Kafka looks the instance up before anything else about the member (ClassicGroup
//! `validateMember`, called by the heartbeat, sync, commit and leave paths, and the static
//! branch of a JoinGroup with a member id): an instance nobody holds is UNKNOWN_MEMBER_ID, an
//! instance held by another member id is FENCED_INSTANCE_ID. The difference matters to the
//! client: UNKNOWN_MEMBER_ID tells it to rejoin, which takes the instance back from its rightful
//! holder, so two processes configured with one instance id fence each other for ever, where
//! FENCED_INSTANCE_ID is fatal to the stale one (KIP-345, "fencing").
//!
//! Over the wire, both directions, each inside one era (the holder is in-memory state):
//!
//! - UNKNOWN_MEMBER_ID to a request from (`M`, instance `I`), when a JoinGroup answered NONE
//!   had given `I` to another id `H` before the request was written, and `H` was answered NONE
//!   on a request written after that answer was read (an OffsetCommit without a generation or
//!   without partitions does not count: Kafka takes the one from anyone while the group is
//!   Empty, and answers the other without asking the coordinator): `I` was held by
//!   `H` throughout (an id the coordinator removed is never let back in), so the answer had to
//!   be FENCED_INSTANCE_ID.
//! - UNKNOWN_MEMBER_ID to a request from (`M`, `I`) when `M`'s own rejoin under `I` right after
//!   was answered at the group's current generation: a replacement without a rebalance, which
//!   Kafka makes only of an instance someone holds (a new static member starts a rebalance).
//! - FENCED_INSTANCE_ID to a request from (`M`, `I`) when the last JoinGroup to give `I` away
//!   gave it to `M` itself and no other JoinGroup naming `I` was in flight since: no other id
//!   holds `I`.
//!
//! A member id the coordinator told MEMBER_ID_REQUIRED and that has not joined since is
//! pending, and a pending member is dynamic: Kafka refuses it naming an instance before looking
//! the instance up, so neither error is judged for it. A log in which a consumer-protocol member
//! spoke is not judged here: its static members change hands by ConsumerGroupHeartbeats, which
//! these rules do not read.

use std::collections::BTreeMap;

use super::eras::Eras;
use super::log::{answer_error, request_member, Answer, AnswerLog, Entry, Request, NONE};
use super::log::{Exchange, FENCED_INSTANCE_ID, UNKNOWN_MEMBER_ID};
use super::{BrokerAnomaly, BrokerRule};

/// How long after it was written a request never answered may still reach the broker: a
/// JoinGroup naming the instance written that long before a window may have changed its holder
/// inside it. A request held up in the network for longer is what these rules cannot know.
const REACH_MS: u64 = 60_000;

/// The member id and instance id of a classic request naming an instance.
fn static_request(r: &Request) -> Option<(&str, &str)> {
    let instance = match r {
        Request::Join { instance, member_id, .. } if !member_id.is_empty() => instance,
        Request::Sync { instance, .. }
        | Request::Heartbeat { instance, .. }
        | Request::Leave { instance, .. }
        | Request::Commit { instance, .. } => instance,
        _ => return None,
    };
    Some((request_member(r)?, instance.as_deref()?))
}

/// A JoinGroup naming `instance`: the id it was answered with (None: not answered NONE).
fn join_of<'a>(e: &'a Entry, instance: &str) -> Option<Option<&'a str>> {
    let (call, answer) = match e {
        Entry::Exchange(x) => (&x.request, Some(&x.answer)),
        Entry::Unanswered { call, .. } => (call, None),
        Entry::Mark { .. } => return None,
    };
    let Request::Join { instance: Some(i), .. } = call else { return None };
    if i != instance {
        return None;
    }
    Some(match answer {
        Some(Answer::Join { error: NONE, member_id, .. }) => Some(member_id.as_str()),
        _ => None,
    })
}

/// Every answer of the two kinds above that contradicts the instance's holder.
pub fn check(log: &AnswerLog) -> Vec<BrokerAnomaly> {
    let eras = Eras::of(log);
    let consumer_spoke = log.entries.iter().any(|e| match e {
        Entry::Exchange(x) => matches!(x.request, Request::ConsumerHeartbeat { .. }),
        Entry::Unanswered { call, .. } => matches!(call, Request::ConsumerHeartbeat { .. }),
        Entry::Mark { .. } => false,
    });
    // Member id -> the entries where a request naming it was answered NONE, in answer order.
    // An OffsetCommit without a generation proves nothing of its member id: Kafka takes it
    // from anyone while the group is Empty (ClassicGroup `validateOffsetCommit`: an admin's or
    // a simple consumer's commit). Nor does one of no partitions: Kafka answers it at once,
    // empty, without asking the coordinator (KafkaApis `handleOffsetCommitRequest`).
    let mut accepted: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, x) in log.exchanges() {
        let unproven = |r: &Request| match r {
            Request::Commit { generation, offsets, .. } => *generation < 0 || offsets.is_empty(),
            _ => false,
        };
        if unproven(&x.request) {
            continue;
        }
        if let Some(m) = request_member(&x.request) {
            if answer_error(&x.answer) == NONE && !m.is_empty() {
                accepted.entry(m).or_default().push(i);
            }
        }
    }
    let mut found = Vec::new();
    for (r, x) in log.exchanges() {
        let Some((member, instance)) = static_request(&x.request) else { continue };
        // A consumer group checks a classic member's instance too, but its static members may
        // have changed hands by ConsumerGroupHeartbeats, which these rules do not read, and its
        // OffsetCommit ignores the instance id altogether.
        if !eras.classic_at(r) {
            continue;
        }
        let error = answer_error(&x.answer);
        if error != UNKNOWN_MEMBER_ID && error != FENCED_INSTANCE_ID {
            continue;
        }
        // A member id told MEMBER_ID_REQUIRED and not joined since is pending, and pending
        // members are dynamic: Kafka refuses one that names an instance before it looks the
        // instance up (an IllegalStateException, answered UNKNOWN_SERVER_ERROR).
        if log.pending_when_written(member, x) {
            continue;
        }
        let Some((j, holder)) = holder_before(log, instance, x) else { continue };
        if !eras.same(j, r) {
            continue;
        }
        if error == UNKNOWN_MEMBER_ID {
            if let Some(j2) = replaced_without_rebalance(log, &eras, r, x, instance) {
                found.push(anomaly(
                    x,
                    format!(
                        "{member} (instance {instance}) answered UNKNOWN_MEMBER_ID, yet its rejoin \
                         took the instance over without a rebalance: someone held it"
                    ),
                    vec![r, j2],
                ));
                continue;
            }
        }
        if error == UNKNOWN_MEMBER_ID && holder != member {
            let later = accepted.get(holder).into_iter().flatten().find(|&&k| {
                matches!(&log.entries[k], Entry::Exchange(y) if y.sent_ms > x.answered_ms)
                    && eras.same(r, k)
            });
            if let Some(&k) = later {
                found.push(anomaly(
                    x,
                    format!(
                        "{member} (instance {instance}) answered UNKNOWN_MEMBER_ID while the \
                         instance was held by {holder}, not FENCED_INSTANCE_ID"
                    ),
                    vec![j, r, k],
                ));
            }
        }
        if error == FENCED_INSTANCE_ID && holder == member && !consumer_spoke {
            let contested = log.entries.iter().enumerate().any(|(k, e)| {
                k != j
                    && join_of(e, instance).is_some_and(|h| h != Some(member))
                    && match e {
                        Entry::Exchange(y) => {
                            y.sent_ms <= x.answered_ms && y.answered_ms >= joined_at(log, j)
                        }
                        Entry::Unanswered { sent_ms, .. } => {
                            sent_ms + REACH_MS >= joined_at(log, j) && *sent_ms <= x.answered_ms
                        }
                        Entry::Mark { .. } => false,
                    }
            });
            if !contested {
                found.push(anomaly(
                    x,
                    format!(
                        "{member} answered FENCED_INSTANCE_ID though instance {instance} was \
                         last given to it and to no other id since"
                    ),
                    vec![j, r],
                ));
            }
        }
    }
    found
}

/// The rejoin that proves `instance` was held when `x` (entry `r`) was answered
/// UNKNOWN_MEMBER_ID: the same actor's next JoinGroup naming the instance with no member id,
/// answered NONE at a generation handed out before `x` was written, in one era, with no other
/// JoinGroup naming the instance in between. A static member joining under an instance nobody
/// holds is a new member and starts a rebalance (a new generation); only a replacement in a
/// Stable group is answered at the group's generation (KIP-345, ClassicGroup
/// `replaceStaticMember`). Whoever held the instance then held it when `x` was answered: the
/// answer had to be FENCED_INSTANCE_ID, or, were the holder the asker, no UNKNOWN_MEMBER_ID.
fn replaced_without_rebalance(
    log: &AnswerLog,
    eras: &Eras,
    r: usize,
    x: &Exchange,
    instance: &str,
) -> Option<usize> {
    let (j2, y) = log.exchanges().find(|(k, y)| {
        *k > r
            && y.actor == x.actor
            && y.sent_ms >= x.answered_ms
            && join_of(&log.entries[*k], instance).is_some()
    })?;
    let (Request::Join { member_id, .. }, Answer::Join { error: NONE, generation, .. }) =
        (&y.request, &y.answer)
    else {
        return None;
    };
    if !member_id.is_empty() || !eras.same(r, j2) {
        return None;
    }
    let handed_out = log.exchanges().any(|(k, z)| {
        z.answered_ms < x.sent_ms
            && eras.same(k, r)
            && matches!(z.answer, Answer::Join { error: NONE, generation: g, .. } if g == *generation)
    });
    let contested = log.entries.iter().enumerate().any(|(k, e)| {
        k != j2
            && join_of(e, instance).is_some()
            && match e {
                Entry::Exchange(z) => z.sent_ms <= y.answered_ms && z.answered_ms >= x.sent_ms,
                Entry::Unanswered { sent_ms, .. } => {
                    sent_ms + REACH_MS >= x.sent_ms && *sent_ms <= y.answered_ms
                }
                Entry::Mark { .. } => false,
            }
    });
    (handed_out && !contested).then_some(j2)
}

/// The latest JoinGroup answered NONE that gave `instance` away, read before `x` was written.
fn holder_before<'a>(log: &'a AnswerLog, instance: &str, x: &Exchange) -> Option<(usize, &'a str)> {
    log.exchanges()
        .filter(|(_, y)| y.answered_ms < x.sent_ms)
        .filter_map(|(j, y)| Some((j, join_of(&log.entries[j], instance)??, y.answered_ms)))
        .max_by_key(|&(j, _, read)| (read, j))
        .map(|(j, holder, _)| (j, holder))
}

/// When entry `j` (an exchange) was read.
fn joined_at(log: &AnswerLog, j: usize) -> u64 {
    match &log.entries[j] {
        Entry::Exchange(y) => y.answered_ms,
        _ => 0,
    }
}

fn anomaly(x: &Exchange, summary: String, evidence: Vec<usize>) -> BrokerAnomaly {
    BrokerAnomaly {
        rule: BrokerRule::WrongError,
        at_ms: x.answered_ms,
        partition: None,
        summary,
        evidence,
    }
}
