//! `split-assignment`: a partition given to two members at once.
//!
//! Classic protocol: the SyncGroup answers of one generation must give each partition to one
//! member at most (cooperative members included: a partition being moved is in nobody's
//! assignment for the generation that revokes it).
//!
//! Consumer protocol (KIP-848): the coordinator may give a partition to a member only once its
//! previous owner has released it (or been removed). The proof of a split: member Y was given a
//! partition (answer read before X's request was written), member X was then given it too, and
//! a later heartbeat of Y (written after X's answer was read, not a rejoin) was answered NONE
//! with Y still holding it — while every answer X got to requests written before that one was
//! answered kept it with X. A member the broker had removed meanwhile would have been answered
//! an error, not NONE.

use std::collections::{BTreeMap, BTreeSet};

use groupsim_wire::{Millis, TopicPartition};

use super::log::{Answer, AnswerLog, Protocol, Request, NONE};
use super::{BrokerAnomaly, BrokerRule};

/// Finds every split assignment in `log`.
pub fn check(log: &AnswerLog) -> Vec<BrokerAnomaly> {
    match log.protocol {
        Protocol::Classic => classic(log),
        Protocol::Consumer => consumer(log),
    }
}

fn classic(log: &AnswerLog) -> Vec<BrokerAnomaly> {
    // generation -> partition -> (member id, entry) of its first holder
    let mut holders: BTreeMap<i32, BTreeMap<TopicPartition, (String, usize)>> = BTreeMap::new();
    let mut found = Vec::new();
    for (i, x) in log.exchanges() {
        let (Request::Sync { member_id, generation }, Answer::Sync { error: NONE, assignment }) =
            (&x.request, &x.answer)
        else {
            continue;
        };
        let of_generation = holders.entry(*generation).or_default();
        for tp in assignment {
            match of_generation.get(tp) {
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
}

/// Each member id's heartbeat answers in order, with what each left it holding.
pub(crate) fn holdings(log: &AnswerLog) -> BTreeMap<String, Vec<Holding>> {
    let mut by_member: BTreeMap<String, Vec<Holding>> = BTreeMap::new();
    for (i, x) in log.exchanges() {
        let (
            Request::ConsumerHeartbeat { member_id: asked, epoch: sent_epoch, .. },
            Answer::ConsumerHeartbeat { error, member_id, epoch: _, assignment },
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
        });
    }
    by_member
}

fn consumer(log: &AnswerLog) -> Vec<BrokerAnomaly> {
    let by_member = holdings(log);
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
                    let Some(confirm) = held_across(y_list, &tp, grant) else { continue };
                    // X kept it in every answer to a request written before Y's was answered.
                    let x_kept = x_list[k..]
                        .iter()
                        .filter(|h| h.sent_ms < confirm.answered_ms)
                        .all(|h| h.member && h.held.contains(&tp));
                    if x_kept {
                        found.push(BrokerAnomaly {
                            rule: BrokerRule::SplitAssignment,
                            at_ms: confirm.answered_ms,
                            partition: Some(tp.clone()),
                            summary: format!(
                                "{tp} given to member {x_id} while member {y_id} still held it"
                            ),
                            evidence: vec![grant.entry, confirm.entry],
                        });
                        reported.insert(key);
                    }
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

/// A holding of `tp` by this member that spans `grant`: the member acquired `tp` in an answer
/// read before `grant`'s request was written and kept it in every answer until one to a
/// request written after `grant`'s answer was read (returned).
fn held_across<'a>(
    list: &'a [Holding],
    tp: &TopicPartition,
    grant: &Holding,
) -> Option<&'a Holding> {
    let mut since: Option<Millis> = None;
    for (k, h) in list.iter().enumerate() {
        if !(h.member && h.held.contains(tp)) {
            since = None;
            continue;
        }
        if acquired(list, k).contains(tp) {
            since = Some(h.answered_ms);
        }
        let early = since.is_some_and(|t| t < grant.sent_ms);
        if early && h.sent_ms > grant.answered_ms && !h.rejoin {
            return Some(h);
        }
    }
    None
}
