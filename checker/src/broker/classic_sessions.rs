//! `live-member-fenced`, classic protocol: a member told it is no member while Kafka had to keep
//! it.
//!
//! A classic member whose SyncGroup at generation `g` was answered NONE, or whose Heartbeat at a
//! generation it had synced was answered NONE, written at `t`, was taken no earlier than `t`
//! with no join phase running (Kafka answers a heartbeat REBALANCE_IN_PROGRESS then). From that
//! moment Kafka removes it only when its session runs out (the `session_timeout_ms` of its last
//! JoinGroup, restarted at that moment), when a join phase it does not rejoin ends (no sooner
//! than the group's rebalance timeout after the phase began, the largest of its members', so no
//! sooner than the member's own), when a new generation's sync phase ends without its SyncGroup
//! (as long), or when it leaves or is removed by an admin. So until `t + min(session, rebalance
//! timeout)` it is a member. A LeaveGroup, Heartbeat or OffsetCommit of it written after that
//! answer was read and answered UNKNOWN_MEMBER_ID by then (read by then, so taken by then), in
//! the same era while the group is plainly classic, is a removal Kafka does not make
//! (GroupMetadataManager `rescheduleClassicGroupMemberHeartbeat`, `prepareRebalance`'s join
//! timer, `maybeCompleteJoinPhase`'s pending-sync timer).
//!
//! A heartbeat's NONE counts only once the answering coordinator was seen serving the group
//! (another group request of its era answered NONE before the heartbeat was written): Kafka
//! answers heartbeats NONE blindly while it loads the group, which may not hold the member.
//!
//! Not judged: a static member (its instance may be taken over by another process); a member
//! with a leave naming it that may be taken in the window (from it or an admin, answered after
//! the proof was written, or never answered and written less than the consumer rule's `REACH_MS` before); a window
//! with an expel in it; a member whose JoinGroup did not say both timeouts (histories recorded
//! before the rebalance timeout was kept). An OffsetCommit answered NONE proves nothing: Kafka
//! takes commits while a join phase runs.

use std::collections::BTreeMap;

use groupsim_wire::Millis;

use super::consumer_sessions::Late;
use super::eras::{Eras, Serving};
use super::log::{answer_error, Answer, AnswerLog, Entry, Exchange, Request};
use super::log::{NONE, UNKNOWN_MEMBER_ID};
use super::{BrokerAnomaly, BrokerRule};

/// The answer that proves the member a member until `until_ms`.
#[derive(Clone, Copy, Debug)]
struct Proof {
    entry: usize,
    sent_ms: Millis,
    answered_ms: Millis,
    until_ms: Millis,
}

/// What the answers say of one member id so far.
#[derive(Debug, Default)]
struct Member {
    /// Session and rebalance timeouts of its last JoinGroup.
    timeouts: Option<(Millis, Millis)>,
    /// The generation its last SyncGroup answered NONE was at.
    synced: Option<i32>,
    proof: Option<Proof>,
    is_static: bool,
}

impl Member {
    fn prove(&mut self, i: usize, x: &Exchange) {
        self.proof = self.timeouts.map(|(session, rebalance)| Proof {
            entry: i,
            sent_ms: x.sent_ms,
            answered_ms: x.answered_ms,
            until_ms: x.sent_ms + session.min(rebalance),
        });
    }
}

/// Every UNKNOWN_MEMBER_ID answer that came while Kafka had to keep the member.
pub fn check(log: &AnswerLog) -> Vec<BrokerAnomaly> {
    let eras = Eras::of(log);
    let leaves = Late::of(log, classic_leaves);
    let mut members: BTreeMap<&str, Member> = BTreeMap::new();
    let mut serving = Serving::default();
    let mut found = Vec::new();
    for (i, e) in log.entries.iter().enumerate() {
        let Entry::Exchange(x) = e else { continue };
        if !eras.classic_at(i) {
            break; // a consumer-protocol member spoke: the group may not be plainly classic
        }
        let error = answer_error(&x.answer);
        serving.read(&eras, i, x);
        let blind = serving.blind(&eras, i, x.sent_ms);
        match (&x.request, &x.answer) {
            (
                Request::Join {
                    member_id, instance, session_timeout_ms, rebalance_timeout_ms, ..
                },
                answer,
            ) => {
                let id = match answer {
                    Answer::Join { member_id: given, .. } if member_id.is_empty() => given.as_str(),
                    _ => member_id.as_str(),
                };
                if id.is_empty() {
                    continue;
                }
                let m = members.entry(id).or_default();
                m.is_static |= instance.is_some();
                m.proof = None; // in a join phase: the phase's own timer decides
                m.synced = None;
                m.timeouts = match (session_timeout_ms, rebalance_timeout_ms) {
                    (Some(s), Some(r)) if *s > 0 && *r > 0 => Some((*s as Millis, *r as Millis)),
                    _ => None,
                };
            }
            (Request::Sync { member_id, generation, instance }, _) => {
                let m = members.entry(member_id.as_str()).or_default();
                m.is_static |= instance.is_some();
                if error == NONE {
                    m.synced = Some(*generation);
                    m.prove(i, x);
                } else {
                    m.proof = None;
                }
            }
            (Request::Heartbeat { member_id, generation, instance }, _) => {
                let id = member_id.as_str();
                if error == UNKNOWN_MEMBER_ID {
                    found.extend(judge(&eras, &leaves, id, members.get(id), i, x));
                }
                let m = members.entry(id).or_default();
                m.is_static |= instance.is_some();
                if error == NONE && m.synced == Some(*generation) && !blind {
                    m.prove(i, x);
                } else if error != NONE {
                    m.proof = None; // REBALANCE_IN_PROGRESS: a join phase runs, with its own timer
                }
            }
            (Request::Leave { member_id, .. }, _) => {
                let id = member_id.as_str();
                if error == UNKNOWN_MEMBER_ID {
                    found.extend(judge(&eras, &leaves, id, members.get(id), i, x));
                }
                if let Some(m) = members.get_mut(id) {
                    m.proof = None;
                }
            }
            (Request::Commit { member_id, generation, instance, offsets }, _)
                if *generation >= 0 && !offsets.is_empty() =>
            {
                let id = member_id.as_str();
                if error == UNKNOWN_MEMBER_ID {
                    found.extend(judge(&eras, &leaves, id, members.get(id), i, x));
                }
                let m = members.entry(id).or_default();
                m.is_static |= instance.is_some();
            }
            _ => {}
        }
    }
    found
}

/// A classic member's leaves, from it or an admin, answered or not.
fn classic_leaves(call: &Request, _answered: bool) -> Option<&str> {
    match call {
        Request::Leave { member_id, .. } => Some(member_id),
        _ => None,
    }
}

/// The anomaly, if exchange `x` (entry `i`, answered UNKNOWN_MEMBER_ID, naming `id`) came while
/// Kafka had to keep `member`.
fn judge(
    eras: &Eras,
    leaves: &Late<'_>,
    id: &str,
    member: Option<&Member>,
    i: usize,
    x: &Exchange,
) -> Option<BrokerAnomaly> {
    let m = member?;
    let p = m.proof?;
    if m.is_static || !eras.same(p.entry, i) {
        return None;
    }
    if x.sent_ms <= p.answered_ms || x.answered_ms > p.until_ms {
        return None;
    }
    if leaves.in_window(id, p.sent_ms, x.answered_ms, (x.sent_ms, x.answered_ms)) {
        return None;
    }
    Some(BrokerAnomaly {
        rule: BrokerRule::LiveMemberFenced,
        at_ms: x.answered_ms,
        partition: None,
        summary: format!(
            "{} of classic member {id} answered UNKNOWN_MEMBER_ID at t={}ms, {} ms after its \
             request written at t={}ms was answered NONE: neither its session nor a rebalance \
             timeout (the shorter is {} ms) could have removed it yet, and it had not left",
            x.request.api(),
            x.answered_ms,
            x.answered_ms - p.sent_ms,
            p.sent_ms,
            p.until_ms - p.sent_ms,
        ),
        evidence: vec![p.entry, i],
    })
}
