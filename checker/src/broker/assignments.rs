//! `split-assignment`: a partition given to two members at once.
//!
//! Classic protocol: the SyncGroup answers of one generation must give each partition to one
//! member at most (judged while the group is plainly classic: in a consumer group each classic
//! member's generation is its own member epoch) (cooperative members included: a partition being moved is in nobody's
//! assignment for the generation that revokes it). A static member's replacement takes over
//! the replaced id's assignment in the same generation ([`super::statics`]).
//!
//! Consumer protocol (KIP-848): the coordinator may give a partition to a member only once its
//! previous owner has released it — acknowledged the revocation in a heartbeat listing its
//! partitions without it — or been removed. The proof of a split: member Y was given a
//! partition (answer read before X's request was written); X was given it too, before Y wrote
//! any heartbeat releasing it; and Y's next heartbeat, written after X's answer was read, was
//! answered NONE (not a rejoin; releasing it then is too late). A member the broker had removed
//! meanwhile would have been answered an error, not NONE.

use std::collections::{BTreeMap, BTreeSet};

use groupsim_wire::{Millis, TopicPartition};

use super::eras::Eras;
use super::log::{Answer, AnswerLog, Entry, Protocol, Request, NONE};
use super::statics;
use super::{BrokerAnomaly, BrokerRule};

/// Finds every split assignment in `log`.
pub fn check(log: &AnswerLog) -> Vec<BrokerAnomaly> {
    let mut found = classic(log);
    if log.protocol == Protocol::Consumer {
        found.extend(consumer(log));
    }
    found
}

fn classic(log: &AnswerLog) -> Vec<BrokerAnomaly> {
    // generation -> partition -> (member id, entry) of its first holder
    let mut holders: BTreeMap<i32, BTreeMap<TopicPartition, (String, usize)>> = BTreeMap::new();
    let mut found = Vec::new();
    let replacements = statics::replacements(log);
    let eras = Eras::of(log);
    for (i, x) in log.exchanges() {
        let (Request::Sync { member_id, generation, .. }, Answer::Sync { error: NONE, assignment }) =
            (&x.request, &x.answer)
        else {
            continue;
        };
        if !eras.classic_at(i) {
            continue; // a consumer group's classic members: each at its own member epoch
        }
        let of_generation = holders.entry(*generation).or_default();
        for tp in assignment {
            // Whether `member_id` may hold what `old` held: it replaced `old` (or an id `old`
            // replaced), or the two took the instance over together, in an order the log
            // cannot tell.
            let replaced = |old: &str| {
                replacements.iter().any(|r| {
                    let together =
                        |a: &str, b: &str| r.new == a && r.alongside.as_deref() == Some(b);
                    r.entry < i
                        && ((r.new == *member_id
                            && (r.old == old || r.earlier.iter().any(|e| e == old)))
                            || together(member_id, old)
                            || together(old, member_id))
                })
            };
            match of_generation.get(tp) {
                Some((other, _)) if replaced(other) => {
                    of_generation.insert(tp.clone(), (member_id.clone(), i));
                }
                Some((other, j)) if other != member_id => found.push(BrokerAnomaly {
                    rule: BrokerRule::SplitAssignment,
                    at_ms: x.answered_ms,
                    partition: Some(tp.clone()),
                    summary: format!(
                        "generation {generation} gives {tp} to both {other} and {member_id}"
                    ),
                    evidence: vec![*j, i],
                }),
                Some(_) => {}
                None => {
                    of_generation.insert(tp.clone(), (member_id.clone(), i));
                }
            }
        }
    }
    found
}

/// One consumer-group heartbeat answer to a member, with what it then held.
#[derive(Clone, Debug)]
pub(crate) struct Holding {
    pub(crate) entry: usize,
    pub(crate) sent_ms: Millis,
    pub(crate) answered_ms: Millis,
    /// The partitions the broker said the member holds after this answer.
    pub(crate) held: BTreeSet<TopicPartition>,
    /// Whether this answer kept the member in the group (NONE, not a leave).
    pub(crate) member: bool,
    /// Whether the request was a join (member epoch 0).
    pub(crate) rejoin: bool,
    /// Whether the request was a leave (member epoch -1 or -2).
    pub(crate) leave: bool,
    /// The partitions the request said the member owns, when it said.
    pub(crate) owned: Option<BTreeSet<TopicPartition>>,
}

/// Each member id's heartbeat answers in order, with what each left it holding.
pub(crate) fn holdings(log: &AnswerLog) -> BTreeMap<String, Vec<Holding>> {
    let mut by_member: BTreeMap<String, Vec<Holding>> = BTreeMap::new();
    for (i, x) in log.exchanges() {
        let (
            Request::ConsumerHeartbeat { member_id: asked, epoch: sent_epoch, owned, .. },
            Answer::ConsumerHeartbeat { error, member_id, epoch: _, assignment, .. },
        ) = (&x.request, &x.answer)
        else {
            continue;
        };
        let id = if member_id.is_empty() { asked.clone() } else { member_id.clone() };
        let list = by_member.entry(id).or_default();
        let before = list.last().filter(|h| h.member).map(|h| h.held.clone()).unwrap_or_default();
        let member = *error == NONE && *sent_epoch >= 0;
        let held = match (member, assignment) {
            (false, _) => BTreeSet::new(),
            (true, Some(a)) => a.iter().cloned().collect(),
            (true, None) => before,
        };
        list.push(Holding {
            entry: i,
            sent_ms: x.sent_ms,
            answered_ms: x.answered_ms,
            held,
            member,
            rejoin: *sent_epoch == 0,
            leave: *sent_epoch < 0,
            owned: owned.as_ref().map(|o| o.iter().cloned().collect()),
        });
    }
    by_member
}

/// A heartbeat never answered: written at, member epoch sent, partitions it said it owns.
type Lost = (Millis, i32, Option<BTreeSet<TopicPartition>>);

/// Each member id's heartbeats that were never answered: the broker may have applied them.
fn unanswered_heartbeats(log: &AnswerLog) -> BTreeMap<&str, Vec<Lost>> {
    let mut by_member: BTreeMap<&str, Vec<_>> = BTreeMap::new();
    for e in &log.entries {
        if let Entry::Unanswered {
            sent_ms,
            call: Request::ConsumerHeartbeat { member_id, epoch, owned, .. },
            ..
        } = e
        {
            let owned = owned.as_ref().map(|o| o.iter().cloned().collect());
            by_member.entry(member_id.as_str()).or_default().push((*sent_ms, *epoch, owned));
        }
    }
    by_member
}

fn consumer(log: &AnswerLog) -> Vec<BrokerAnomaly> {
    let by_member = holdings(log);
    let lost = unanswered_heartbeats(log);
    let mut found = Vec::new();
    let mut reported: BTreeSet<(TopicPartition, String, String)> = BTreeSet::new();
    for (x_id, x_list) in &by_member {
        for (k, grant) in x_list.iter().enumerate() {
            for tp in acquired(x_list, k) {
                for (y_id, y_list) in &by_member {
                    let key = (tp.clone(), x_id.clone(), y_id.clone());
                    if y_id == x_id || reported.contains(&key) {
                        continue;
                    }
                    let lost = lost.get(y_id.as_str()).map(Vec::as_slice).unwrap_or_default();
                    let Some((given, still)) = unreleased(y_list, lost, &tp, grant) else {
                        continue;
                    };
                    found.push(BrokerAnomaly {
                        rule: BrokerRule::SplitAssignment,
                        at_ms: grant.answered_ms,
                        partition: Some(tp.clone()),
                        summary: format!(
                            "{tp} given to member {x_id} before member {y_id}, still in the \
                             group, released it"
                        ),
                        evidence: vec![given.entry, grant.entry, still.entry],
                    });
                    reported.insert(key);
                }
            }
        }
    }
    found
}

/// The partitions holding `k` of a member gave it that its previous holding did not.
fn acquired(list: &[Holding], k: usize) -> Vec<TopicPartition> {
    let before = k.checked_sub(1).map(|j| list[j].held.clone()).unwrap_or_default();
    list[k].held.difference(&before).cloned().collect()
}

/// Proof that this member still owned `tp` when `grant` gave it to another: it was given `tp`
/// in an answer read before `grant`'s request was written, wrote no heartbeat releasing it (one
/// listing its partitions without `tp`, or a leave; answered or not: the broker may have read
/// one whose answer never came) before `grant`'s answer was read, and its first heartbeat
/// written after that was answered NONE (not a rejoin): the broker had not removed it. The
/// answer that gave it and that answer are returned.
fn unreleased<'a>(
    list: &'a [Holding],
    lost: &[Lost],
    tp: &TopicPartition,
    grant: &Holding,
) -> Option<(&'a Holding, &'a Holding)> {
    let given = list
        .iter()
        .enumerate()
        .rev()
        .find(|(k, h)| h.answered_ms < grant.sent_ms && acquired(list, *k).contains(tp))?;
    let after = &list[given.0..];
    let released = after.iter().any(|h| {
        h.sent_ms <= grant.answered_ms
            && (h.leave || !h.member || h.owned.as_ref().is_some_and(|o| !o.contains(tp)))
    });
    let released_unanswered = lost.iter().any(|(sent_ms, epoch, owned)| {
        *sent_ms > given.1.sent_ms
            && *sent_ms <= grant.answered_ms
            && (*epoch < 0 || owned.as_ref().is_some_and(|o| !o.contains(tp)))
    });
    if released || released_unanswered {
        return None;
    }
    let still = after
        .iter()
        .find(|h| h.sent_ms > grant.answered_ms)
        .filter(|h| h.member && !h.rejoin && !h.leave)?;
    Some((given.1, still))
}
