//! `live-member-fenced`: a KIP-848 member told it is no member while the session its last
//! heartbeat started must still run.
//!
//! Kafka restarts a consumer-protocol member's session on every ConsumerGroupHeartbeat it takes
//! (GroupMetadataManager `scheduleConsumerGroupSessionTimeout`; an OffsetCommit does not restart
//! it) and answers with the heartbeat interval, which its configuration keeps below the session
//! timeout (GroupCoordinatorConfig, and GroupConfig for a group's own settings, refuse a session
//! timeout that is not greater than the interval). So a member whose heartbeat, written at `t`,
//! was answered NONE with interval `I` is still a member at `t + I` unless something else removed
//! it: its own leave (member epoch -1 or -2), a rebalance timeout while it revokes partitions, a
//! static member taking its instance over, or the harness's expel fault. A ConsumerGroupHeartbeat
//! at a member epoch, or an OffsetCommit under one, written after that answer was read and
//! answered UNKNOWN_MEMBER_ID by `t + I` (read by then, so taken by then), in the same era, is a
//! fence Kafka does not make.
//!
//! Not judged: a member that may be revoking (an answer took partitions it reported owning and
//! it has not reported owning only its assignment since), one with a heartbeat unanswered since
//! it last joined (taken late, after newer ones, a stale heartbeat may still be accepted at its
//! previous epoch and reconcile the member into a revocation whose answer nobody reads: its
//! rebalance timeout then fences it however it heartbeats), a static member (a heartbeat of its
//! named an instance), and a window with the member's leave, an expel or a coordinator change in
//! it. What the rule cannot know: a group's configuration
//! altered between the heartbeat and the fence.

use std::collections::{BTreeMap, BTreeSet};

use groupsim_wire::{Millis, TopicPartition};

use super::eras::Eras;
use super::log::{answer_error, Answer, AnswerLog, Entry, Exchange, Mark, Request};
use super::log::{NONE, UNKNOWN_MEMBER_ID};
use super::{BrokerAnomaly, BrokerRule};

/// The heartbeat that started a member's current session.
#[derive(Clone, Copy, Debug)]
struct Proof {
    /// Its entry.
    entry: usize,
    /// When it was written.
    sent_ms: Millis,
    /// When its answer was read.
    answered_ms: Millis,
    /// The heartbeat interval it was answered with.
    interval_ms: Millis,
}

/// What the answers say of one member id so far.
#[derive(Debug, Default)]
struct Member {
    proof: Option<Proof>,
    /// The partitions it last reported owning.
    owned: Option<BTreeSet<TopicPartition>>,
    /// The assignment it was last given.
    assignment: Option<BTreeSet<TopicPartition>>,
    /// It may be revoking partitions (its rebalance timeout may be running).
    revoking: bool,
    /// A heartbeat of its went unanswered since it last joined: the coordinator may take it at
    /// any later time, after newer ones (a stale epoch it still accepts, KIP-848's previous
    /// epoch), and reconcile the member into a revocation no answer it reads tells it of.
    unanswered: bool,
    /// A heartbeat of its named an instance.
    is_static: bool,
}

impl Member {
    fn revoking_now(&self) -> bool {
        match (&self.owned, &self.assignment) {
            (Some(owned), Some(assignment)) => !owned.is_subset(assignment),
            _ => false,
        }
    }
}

/// Every UNKNOWN_MEMBER_ID answer that came while the member's session had to run.
pub fn check(log: &AnswerLog) -> Vec<BrokerAnomaly> {
    let eras = Eras::of(log);
    let leaves = leaves_written(log);
    let mut members: BTreeMap<&str, Member> = BTreeMap::new();
    let mut found = Vec::new();
    for (i, e) in log.entries.iter().enumerate() {
        let x = match e {
            Entry::Mark { mark: Mark::Expelled(_) | Mark::CoordinatorMoved, .. } => {
                members.values_mut().for_each(|m| m.proof = None);
                continue;
            }
            Entry::Mark { .. } => continue,
            Entry::Unanswered {
                call: Request::ConsumerHeartbeat { member_id, epoch, .. }, ..
            } => {
                let m = members.entry(member_id).or_default();
                // A leave may have been taken; a heartbeat may be taken late and revoke.
                m.unanswered = true;
                if *epoch < 0 {
                    m.proof = None;
                }
                continue;
            }
            Entry::Unanswered { .. } => continue,
            Entry::Exchange(x) => x,
        };
        match (&x.request, &x.answer) {
            (
                Request::ConsumerHeartbeat { member_id, epoch, owned, instance },
                Answer::ConsumerHeartbeat {
                    error, member_id: given, assignment, interval_ms, ..
                },
            ) => {
                let id = if member_id.is_empty() { given.as_str() } else { member_id.as_str() };
                if *error == UNKNOWN_MEMBER_ID && *epoch > 0 {
                    found.extend(judge(&eras, &leaves, id, members.get(id), i, x));
                }
                let m = members.entry(id).or_default();
                m.is_static |= instance.is_some();
                if *error != NONE || *epoch < 0 {
                    m.proof = None;
                    continue;
                }
                if *epoch == 0 {
                    m.unanswered = false;
                }
                if let Some(o) = owned {
                    m.owned = Some(o.iter().cloned().collect());
                }
                if let Some(a) = assignment {
                    m.assignment = Some(a.iter().cloned().collect());
                }
                m.revoking = m.revoking_now();
                m.proof = interval_ms.filter(|&ms| ms > 0).map(|ms| Proof {
                    entry: i,
                    sent_ms: x.sent_ms,
                    answered_ms: x.answered_ms,
                    interval_ms: ms as Millis,
                });
            }
            (Request::Commit { member_id, generation, offsets, .. }, _)
                if *generation > 0
                    && !offsets.is_empty()
                    && answer_error(&x.answer) == UNKNOWN_MEMBER_ID =>
            {
                found.extend(judge(
                    &eras,
                    &leaves,
                    member_id,
                    members.get(member_id.as_str()),
                    i,
                    x,
                ));
            }
            _ => {}
        }
    }
    found
}

/// When each member id wrote a leave (a ConsumerGroupHeartbeat at member epoch -1 or -2),
/// answered or not: the log holds exchanges in answer order, so a leave written before a fence
/// may come after it.
fn leaves_written(log: &AnswerLog) -> BTreeMap<&str, Vec<Millis>> {
    let mut leaves: BTreeMap<&str, Vec<Millis>> = BTreeMap::new();
    for e in &log.entries {
        let (call, sent_ms) = match e {
            Entry::Exchange(x) => (&x.request, x.sent_ms),
            Entry::Unanswered { call, sent_ms, .. } => (call, *sent_ms),
            Entry::Mark { .. } => continue,
        };
        if let Request::ConsumerHeartbeat { member_id, epoch, .. } = call {
            if *epoch < 0 {
                leaves.entry(member_id).or_default().push(sent_ms);
            }
        }
    }
    leaves
}

/// The anomaly, if exchange `x` (entry `i`, answered UNKNOWN_MEMBER_ID, naming `id`) came while
/// `member`'s session had to run.
fn judge(
    eras: &Eras,
    leaves: &BTreeMap<&str, Vec<Millis>>,
    id: &str,
    member: Option<&Member>,
    i: usize,
    x: &Exchange,
) -> Option<BrokerAnomaly> {
    let m = member?;
    let p = m.proof?;
    if m.is_static || m.revoking || m.unanswered || !eras.same(p.entry, i) {
        return None;
    }
    let left = leaves.get(id).into_iter().flatten();
    if left.clone().any(|&t| t >= p.sent_ms && t <= x.answered_ms) {
        return None;
    }
    if x.sent_ms <= p.answered_ms || x.answered_ms > p.sent_ms + p.interval_ms {
        return None;
    }
    Some(BrokerAnomaly {
        rule: BrokerRule::LiveMemberFenced,
        at_ms: x.answered_ms,
        partition: None,
        summary: format!(
            "{} answered UNKNOWN_MEMBER_ID at t={}ms, {} ms after its heartbeat written at t={}ms \
             was answered NONE with a heartbeat interval of {} ms: its session (longer than the \
             interval) had not run out, and it had not left",
            x.request.api(),
            x.answered_ms,
            x.answered_ms - p.sent_ms,
            p.sent_ms,
            p.interval_ms
        ),
        evidence: vec![p.entry, i],
    })
}
