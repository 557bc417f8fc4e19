//! Session expiry of classic members, as the answers prove it.
//!
//! Kafka's classic group arms a heartbeat timer per member for its session timeout (the
//! `session_timeout_ms` of its JoinGroup) and re-arms it when it completes the member's join or
//! sync (completing a join re-arms every member of the new generation, as the leader's member
//! list names them, a static member that did not rejoin too), takes a heartbeat, takes a commit
//! at a generation, or loads the group. A static member's new process, joining with no member id,
//! takes the instance over: its new member id's timer is armed with the session timeout the
//! replaced member held, and the new one applies from the next re-arming
//! (`updateStaticMemberThenRebalanceOrCompleteJoin` reschedules before `updateMember`), so a
//! new member id's session counts the longest the instance ever asked for. When the timer
//! fires and the member is awaiting no JoinGroup or SyncGroup answer, the member is removed
//! (GroupMetadataManager `rescheduleClassicGroupMemberHeartbeat`,
//! `expireClassicGroupMemberHeartbeat`; ClassicGroupMember `hasSatisfiedHeartbeat`;
//! OffsetMetadataManager re-arms it on a commit). A member's later request then finds no member.
//!
//! Over the wire: the coordinator read each request of a member id no earlier than it was
//! written, and re-armed the timer for it no later than its answer was read. So when every
//! request naming the member id (and every JoinGroup answer giving it) that the coordinator could
//! have read before a judged request was answered, at most by `last_ms`, and the judged request
//! was written more than the session timeout after `last_ms`, the timer had fired before the
//! coordinator read it: the member was gone. Judged only when the request that last re-armed
//! the timer was answered by the coordinator serving the group, in the judged request's era (a
//! coordinator that loads the group re-arms every timer, at an instant the answers do not show).
//!
//! What it cannot know: a request whose answer never came may have been read at any time, so
//! such a request stops the judgement. A broker's timer fires a little after its deadline and
//! the coordinator may take a request queued meanwhile first: [`SLACK_MS`] of grace.

use std::collections::BTreeMap;

use groupsim_wire::Millis;

use super::eras::{COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR};
use super::log::{answer_error, request_member, Answer, AnswerLog, Entry, Request};

/// Grace after a session deadline for the broker's timer to fire.
pub const SLACK_MS: Millis = 1_000;

/// A request of a member id that re-armed (or may have re-armed) its timer.
#[derive(Clone, Copy, Debug)]
struct Touch {
    sent_ms: Millis,
    /// When its answer was read: the timer was re-armed by then (None: never answered).
    bound: Option<Millis>,
    entry: usize,
    /// Answered by a coordinator serving the group (no coordinator error).
    served: bool,
}

/// Proof that a member's session had expired before a request of it was read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Expiry {
    /// The entry that last re-armed the member's timer.
    pub last: usize,
    /// When its answer was read (the timer was re-armed by then).
    pub last_ms: Millis,
    /// The member's session timeout.
    pub session_ms: Millis,
}

/// A static instance's JoinGroups: the longest session timeout they asked for (None: one did not
/// say), and the member ids handed to its processes that joined with no member id.
struct Instance<'a> {
    asked: Option<Millis>,
    given: Vec<&'a str>,
}

impl Default for Instance<'_> {
    fn default() -> Self {
        Self { asked: Some(0), given: Vec::new() }
    }
}

/// Each member id's requests, in the order they were written, and its session timeout.
pub struct Sessions<'a> {
    log: &'a AnswerLog,
    touches: BTreeMap<&'a str, Vec<Touch>>,
    /// Per member id, per prefix of its touches, the latest re-arming among them (None: one
    /// was never answered).
    latest: BTreeMap<&'a str, Vec<Option<Touch>>>,
    /// Per member id, the longest session timeout its JoinGroups asked for (None: one did not
    /// say, so the judgement is off).
    session: BTreeMap<&'a str, Option<Millis>>,
}

impl<'a> Sessions<'a> {
    /// Reads `log`.
    pub fn of(log: &'a AnswerLog) -> Self {
        let mut touches: BTreeMap<&str, Vec<Touch>> = BTreeMap::new();
        let mut session: BTreeMap<&str, Option<Millis>> = BTreeMap::new();
        // Per (group, instance): the longest session timeout its JoinGroups asked for, and the
        // member ids handed to its processes joining with no member id (takeovers, maybe).
        let mut instances: BTreeMap<(&str, &str), Instance<'_>> = BTreeMap::new();
        for (entry, e) in log.entries.iter().enumerate() {
            if let Entry::Exchange(x) = e {
                if let Request::Join { member_id, instance: Some(i), session_timeout_ms, .. } =
                    &x.request
                {
                    let asked = session_timeout_ms.map(|s| s.max(0) as Millis);
                    let slot = instances.entry((x.group.as_str(), i.as_str())).or_default();
                    slot.asked = match (slot.asked, asked) {
                        (Some(a), Some(b)) => Some(a.max(b)),
                        _ => None,
                    };
                    if let Answer::Join { error: 0, member_id: given, .. } = &x.answer {
                        if member_id.is_empty() && !given.is_empty() {
                            slot.given.push(given.as_str());
                        }
                    }
                }
            }
            let (request, sent_ms, answer) = match e {
                Entry::Exchange(x) => (&x.request, x.sent_ms, Some((&x.answer, x.answered_ms))),
                Entry::Unanswered { call, sent_ms, .. } => (call, *sent_ms, None),
                Entry::Mark { .. } => continue,
            };
            let given = match answer {
                Some((Answer::Join { member_id, .. }, _)) if !member_id.is_empty() => {
                    Some(member_id.as_str())
                }
                _ => None,
            };
            let named = request_member(request).filter(|m| !m.is_empty());
            let served = answer.is_some_and(|(a, _)| {
                !matches!(
                    answer_error(a),
                    NOT_COORDINATOR | COORDINATOR_LOAD_IN_PROGRESS | COORDINATOR_NOT_AVAILABLE
                )
            });
            let touch = Touch { sent_ms, bound: answer.map(|a| a.1), entry, served };
            // Completing a join re-arms every member of the new generation, those that did not
            // rejoin (static members are kept) included: the leader's list names them all.
            if let Some((Answer::Join { error: 0, members, .. }, _)) = answer {
                for listed in members.iter().map(String::as_str) {
                    if Some(listed) != named && Some(listed) != given {
                        touches.entry(listed).or_default().push(touch);
                    }
                }
            }
            for m in [named, given.filter(|g| Some(*g) != named)].into_iter().flatten() {
                touches.entry(m).or_default().push(touch);
                if let Request::Join { session_timeout_ms, .. } = request {
                    let asked = session_timeout_ms.map(|s| s.max(0) as Millis);
                    let slot = session.entry(m).or_insert(Some(0));
                    *slot = match (*slot, asked) {
                        (Some(a), Some(b)) => Some(a.max(b)),
                        _ => None,
                    };
                }
            }
        }
        for i in instances.values() {
            for m in &i.given {
                let slot = session.entry(m).or_insert(Some(0));
                *slot = match (*slot, i.asked) {
                    (Some(a), Some(b)) => Some(a.max(b)),
                    _ => None,
                };
            }
        }
        let mut latest = BTreeMap::new();
        for (m, v) in touches.iter_mut() {
            v.sort_by_key(|t| (t.sent_ms, t.entry));
            let mut best: Option<Touch> = None;
            let mut open = false;
            let prefix = v
                .iter()
                .map(|t| {
                    match t.bound {
                        None => open = true,
                        Some(b) if best.is_none_or(|x| x.bound.is_some_and(|xb| b >= xb)) => {
                            best = Some(*t)
                        }
                        Some(_) => {}
                    }
                    if open {
                        None
                    } else {
                        best
                    }
                })
                .collect();
            latest.insert(*m, prefix);
        }
        Self { log, touches, latest, session }
    }

    /// Whether `member_id`'s session had expired before the coordinator read the request of
    /// entry `judged`, and the proof.
    pub fn expired(&self, member_id: &str, judged: usize) -> Option<Expiry> {
        let Some(Entry::Exchange(c)) = self.log.entries.get(judged) else { return None };
        let session_ms = (*self.session.get(member_id)?)?;
        if session_ms == 0 {
            return None;
        }
        let touches = self.touches.get(member_id)?;
        // Requests written while the judged one was in flight may have been read first, but
        // they were written after it, so past the deadline proven below: the timer had fired
        // before any of them was read, and none re-armed it. (Two requests written together
        // after a member's silence, a heartbeat and a commit, would otherwise clear each other.)
        let lo = touches.partition_point(|t| t.sent_ms < c.sent_ms);
        // The latest re-arming among the requests written before.
        let t = (*self.latest.get(member_id)?.get(lo.checked_sub(1)?)?)?;
        let last_ms = t.bound?;
        let expired = t.served && c.sent_ms > last_ms + session_ms + SLACK_MS;
        expired.then_some(Expiry { last: t.entry, last_ms, session_ms })
    }
}
