//! `group-over-max-size`: a classic generation with more members than `group.max.size`.
//!
//! Kafka lets a new member into a classic group only while the group is below its maximum: in
//! PreparingRebalance while fewer members than the maximum await their join answers, otherwise
//! while the group has fewer members than it (GroupMetadataManager `acceptJoiningMember`; an
//! existing member is refused too once the maximum rejoined before it), and it answers the rest
//! GROUP_MAX_SIZE_REACHED. A generation is made of the members whose joins were awaited when the
//! join phase ended, so with the configuration unchanged no generation lists more members than
//! the maximum. The leader's JoinGroup answer lists the generation's members: one longer than
//! the maximum proves a member let in past it.
//!
//! A consumer group (`group.consumer.max.size`) lists no members in its answers, so its count
//! is proved from sessions: Kafka refuses a ConsumerGroupHeartbeat from a member id it does not
//! know once the group holds the maximum (GroupMetadataManager `throwIfConsumerGroupIsFull`).
//! Each member whose session the answers prove running (as `live-member-fenced` proves it: a
//! heartbeat answered NONE, read before the new member's heartbeat was written, whose interval
//! outlasts that heartbeat's answer, with nothing in between that may have removed it) was in
//! the group when the new member was let in; as many as the maximum, besides the new one, is a
//! member let in past it. A member counts only while the same coordinator kept the group, and
//! not while it may be revoking (its rebalance timeout may run), if it is static, or if any
//! request of its in the window was refused or went unanswered. The new member is one the
//! coordinator cannot have known: a dynamic join at member epoch 0 whose member id no earlier
//! request had accepted or left unanswered.
//!
//! Judged only where the harness knows the configuration for the whole run ([`MaxSize`]: the
//! simulated worlds and `serve`).

use std::collections::{BTreeMap, BTreeSet};

use groupsim_wire::Millis;

use super::consumer_sessions::{observe, Member, Proof, Sessions};
use super::log::{answer_error, Answer, AnswerLog, Entry, Exchange, MaxSize, Request, NONE};

use super::{BrokerAnomaly, BrokerRule};

/// Finds every group let past its maximum: a classic generation listing more members, or a
/// consumer group letting a new member in while the maximum were proved in it.
pub fn check(log: &AnswerLog) -> Vec<BrokerAnomaly> {
    let Some(MaxSize { classic, consumer }) = log.max_size else { return Vec::new() };
    let mut found = classic_generations(log, classic);
    found.extend(consumer_joins(log, consumer));
    found
}

/// Every leader's JoinGroup answer listing more members than `max`.
fn classic_generations(log: &AnswerLog, max: i32) -> Vec<BrokerAnomaly> {
    let mut found = Vec::new();
    for (i, x) in log.exchanges() {
        let Answer::Join { error: NONE, generation, member_id, leader, members } = &x.answer else {
            continue;
        };
        if leader != member_id {
            continue;
        }
        let listed = members.iter().collect::<BTreeSet<_>>().len();
        if i64::try_from(listed).unwrap_or(i64::MAX) > i64::from(max) {
            found.push(BrokerAnomaly {
                rule: BrokerRule::GroupOverMaxSize,
                at_ms: x.answered_ms,
                partition: None,
                summary: format!(
                    "generation {generation} lists {listed} members, past the group's maximum of \
                     {max} (group.max.size)"
                ),
                evidence: vec![i],
            });
        }
    }
    found
}

/// Every new member let into a consumer group that held `max` members proved alive.
fn consumer_joins(log: &AnswerLog, max: i32) -> Vec<BrokerAnomaly> {
    let Ok(max) = usize::try_from(max) else { return Vec::new() };
    let requests = Requests::of(log);
    // Fewer member ids than the maximum and one: no join can find the group full.
    if requests.by_member.len() <= max {
        return Vec::new();
    }
    let Sessions { eras, late, mut members } = Sessions::of(log);
    let mut found = Vec::new();
    for (i, e) in log.entries.iter().enumerate() {
        let Entry::Exchange(x) = e else { continue };
        if let Some(id) = new_member(&requests, x) {
            let alive: Vec<usize> = members
                .iter()
                .filter(|(other, _)| **other != id)
                .filter_map(|(other, m)| {
                    let p = alive_at(m, x)?;
                    let removable = !eras.same(p.entry, i)
                        || late.in_window(
                            other,
                            p.sent_ms,
                            x.answered_ms,
                            (x.sent_ms, x.answered_ms),
                        )
                        || requests.refused_between(other, p, x.answered_ms);
                    (!removable).then_some(p.entry)
                })
                .collect();
            if alive.len() >= max {
                let mut evidence = alive;
                evidence.push(i);
                found.push(BrokerAnomaly {
                    rule: BrokerRule::GroupOverMaxSize,
                    at_ms: x.answered_ms,
                    partition: None,
                    summary: format!(
                        "new member {id} let into the consumer group at t={}ms while {} members \
                         whose sessions had to run were in it, the group's maximum being {max} \
                         (group.consumer.max.size)",
                        x.answered_ms,
                        evidence.len() - 1
                    ),
                    evidence,
                });
            }
        }
        observe(&mut members, i, x);
    }
    found
}

/// The proof that `m` was a member all the while `x` may have been taken: a heartbeat answered
/// NONE read before `x` was written, whose interval (shorter than the session) runs past `x`'s
/// answer. `None` for a member that may be revoking or is static.
fn alive_at(m: &Member, x: &Exchange) -> Option<Proof> {
    if m.is_static || m.revoking {
        return None;
    }
    let p = [m.proof, m.previous].into_iter().flatten().find(|p| p.answered_ms <= x.sent_ms)?;
    (p.sent_ms + p.interval_ms >= x.answered_ms).then_some(p)
}

/// The member id of `x` if it is a dynamic member's join at epoch 0, answered NONE, that the
/// coordinator cannot have known: no other request naming it was accepted, or left unanswered,
/// before `x` was answered.
fn new_member<'a>(requests: &Requests<'_>, x: &'a Exchange) -> Option<&'a str> {
    let (
        Request::ConsumerHeartbeat { member_id, epoch: 0, instance: None, .. },
        Answer::ConsumerHeartbeat { error: NONE, member_id: given, epoch, .. },
    ) = (&x.request, &x.answer)
    else {
        return None;
    };
    if *epoch <= 0 {
        return None;
    }
    if member_id.is_empty() {
        return Some(given.as_str());
    }
    let known = requests.by_member.get(member_id.as_str()).is_some_and(|rs| {
        rs.iter().any(|r| {
            (r.sent_ms, r.answered_ms) != (x.sent_ms, Some(x.answered_ms))
                && r.sent_ms <= x.answered_ms
                && !r.refused
        })
    });
    (!known).then_some(member_id.as_str())
}

/// One request naming a member id: when it was written and answered, and whether it was
/// refused (answered an error).
#[derive(Debug)]
struct Sent {
    sent_ms: Millis,
    answered_ms: Option<Millis>,
    refused: bool,
}

/// The consumer-protocol requests of each member id (ConsumerGroupHeartbeat and OffsetCommit).
#[derive(Debug, Default)]
struct Requests<'a> {
    by_member: BTreeMap<&'a str, Vec<Sent>>,
}

impl<'a> Requests<'a> {
    fn of(log: &'a AnswerLog) -> Self {
        let mut requests = Requests::default();
        for e in &log.entries {
            let (call, sent) = match e {
                Entry::Exchange(x) => (
                    &x.request,
                    Sent {
                        sent_ms: x.sent_ms,
                        answered_ms: Some(x.answered_ms),
                        refused: refused(&x.answer),
                    },
                ),
                Entry::Unanswered { call, sent_ms, .. } => {
                    (call, Sent { sent_ms: *sent_ms, answered_ms: None, refused: false })
                }
                Entry::Mark { .. } => continue,
            };
            if let Request::ConsumerHeartbeat { member_id, .. }
            | Request::Commit { member_id, .. } = call
            {
                requests.by_member.entry(member_id).or_default().push(sent);
            }
        }
        requests
    }

    /// Whether a request of `id` written by `to` and answered after `p` was written was refused:
    /// something removed it, or was about to.
    fn refused_between(&self, id: &str, p: Proof, to: Millis) -> bool {
        self.by_member.get(id).is_some_and(|rs| {
            rs.iter().any(|r| {
                r.refused && r.sent_ms <= to && r.answered_ms.is_some_and(|a| a >= p.sent_ms)
            })
        })
    }
}

/// Whether answer `a` refused its request, in part or whole.
fn refused(a: &Answer) -> bool {
    match a {
        Answer::ConsumerHeartbeat { error, .. } => *error != NONE,
        Answer::Commit { errors } => errors.iter().any(|&(_, e)| e != NONE),
        other => answer_error(other) != NONE,
    }
}
