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
//! fence Kafka does not make. So is such an answer to the member's own leave (member epoch -1):
//! Kafka removes a member it knows and answers the leave NONE.
//!
//! Not judged: a member that may be revoking (an answer took partitions it reported owning and
//! it has not reported owning only its assignment since); a member with a request that may be
//! taken in the window: a leave of its answered after the heartbeat was written, or a leave or
//! heartbeat of its never answered and written less than `REACH_MS` before (taken late, after
//! newer ones, a stale leave removes the member, and a stale heartbeat Kafka accepts at the
//! member's previous epoch may reconcile it into a revocation whose answer nobody reads, and its
//! rebalance timeout then fences it however it heartbeats); a static member (a heartbeat of its
//! named an instance); and a window with an expel or a coordinator change in it. What the rule
//! cannot know: a group's configuration altered between the heartbeat and the fence.

use std::collections::{BTreeMap, BTreeSet};

use groupsim_wire::{Millis, TopicPartition};

use super::eras::Eras;
use super::log::{answer_error, Answer, AnswerLog, Entry, Exchange, Mark, Request};
use super::log::{NONE, UNKNOWN_MEMBER_ID};
use super::{BrokerAnomaly, BrokerRule};

/// The member epoch of a dynamic member's leave: Kafka removes a member it knows and answers
/// NONE, so an UNKNOWN_MEMBER_ID answer to it is judged as a fence.
const LEAVE_EPOCH: i32 = -1;

/// How long after it was written a request never answered may still reach the coordinator (as
/// the instance rules take it): one written earlier is what the rule cannot know.
const REACH_MS: Millis = 60_000;

/// The heartbeat that started a member's current session.
#[derive(Clone, Copy, Debug)]
pub(super) struct Proof {
    /// Its entry.
    pub(super) entry: usize,
    /// When it was written.
    pub(super) sent_ms: Millis,
    /// When its answer was read.
    pub(super) answered_ms: Millis,
    /// The heartbeat interval it was answered with.
    pub(super) interval_ms: Millis,
}

/// What the answers say of one member id so far.
#[derive(Debug, Default)]
pub(super) struct Member {
    pub(super) proof: Option<Proof>,
    /// The proof before `proof`, in the same membership (none since an error or a leave).
    pub(super) previous: Option<Proof>,
    /// The partitions it last reported owning.
    owned: Option<BTreeSet<TopicPartition>>,
    /// The assignment it was last given.
    assignment: Option<BTreeSet<TopicPartition>>,
    /// It may be revoking partitions (its rebalance timeout may be running).
    pub(super) revoking: bool,
    /// A heartbeat of its named an instance.
    pub(super) is_static: bool,
}

impl Member {
    fn revoking_now(&self) -> bool {
        match (&self.owned, &self.assignment) {
            (Some(owned), Some(assignment)) => !owned.is_subset(assignment),
            _ => false,
        }
    }
}

/// What the session rules read as they walk a log: its eras, what may be taken late, and what
/// the answers say of each member id so far ([`observe`]). Shared by the consumer groups' size
/// limit ([`super::limits`]).
pub(super) struct Sessions<'a> {
    pub(super) eras: Eras,
    pub(super) late: Late<'a>,
    pub(super) members: BTreeMap<&'a str, Member>,
}

impl<'a> Sessions<'a> {
    /// Ready to walk `log` from its start.
    pub(super) fn of(log: &'a AnswerLog) -> Self {
        let late = Late::of(log, leaves_and_unanswered);
        Self { eras: Eras::of(log), late, members: BTreeMap::new() }
    }
}

/// Every UNKNOWN_MEMBER_ID answer that came while the member's session had to run.
pub fn check(log: &AnswerLog) -> Vec<BrokerAnomaly> {
    let Sessions { eras, late, mut members } = Sessions::of(log);
    let mut found = Vec::new();
    for (i, e) in log.entries.iter().enumerate() {
        let Entry::Exchange(x) = e else { continue };
        match (&x.request, &x.answer) {
            (
                Request::ConsumerHeartbeat { member_id, epoch, .. },
                Answer::ConsumerHeartbeat { error, member_id: given, .. },
            ) => {
                let id = if member_id.is_empty() { given.as_str() } else { member_id.as_str() };
                if *error == UNKNOWN_MEMBER_ID && (*epoch > 0 || *epoch == LEAVE_EPOCH) {
                    found.extend(judge(&eras, &late, id, members.get(id), i, x));
                }
                observe(&mut members, i, x);
            }
            (Request::Commit { member_id, generation, offsets, .. }, _)
                if *generation > 0
                    && !offsets.is_empty()
                    && answer_error(&x.answer) == UNKNOWN_MEMBER_ID =>
            {
                let id = member_id.as_str();
                found.extend(judge(&eras, &late, id, members.get(id), i, x));
            }
            _ => {}
        }
    }
    found
}

/// Reads exchange `x` (entry `i`) into `members` when it is a ConsumerGroupHeartbeat: the
/// session it proves, what the member owns and is assigned, whether it is static. Shared by the
/// consumer groups' size limit ([`super::limits`]), which counts the members proved alive.
pub(super) fn observe<'a>(members: &mut BTreeMap<&'a str, Member>, i: usize, x: &'a Exchange) {
    let (
        Request::ConsumerHeartbeat { member_id, epoch, owned, instance },
        Answer::ConsumerHeartbeat { error, member_id: given, assignment, interval_ms, .. },
    ) = (&x.request, &x.answer)
    else {
        return;
    };
    let id = if member_id.is_empty() { given.as_str() } else { member_id.as_str() };
    let m = members.entry(id).or_default();
    m.is_static |= instance.is_some();
    if *error != NONE || *epoch < 0 {
        (m.proof, m.previous) = (None, None);
        return;
    }
    if let Some(o) = owned {
        m.owned = Some(o.iter().cloned().collect());
    }
    if let Some(a) = assignment {
        m.assignment = Some(a.iter().cloned().collect());
    }
    m.revoking = m.revoking_now();
    let proof = interval_ms.filter(|&ms| ms > 0).map(|ms| Proof {
        entry: i,
        sent_ms: x.sent_ms,
        answered_ms: x.answered_ms,
        interval_ms: ms as Millis,
    });
    m.previous = if proof.is_some() { m.proof } else { None };
    m.proof = proof;
}

/// What may be taken at a time no answer shows: the requests of each member id that may remove
/// it (when written, and when answered if they were), and the expel faults. Shared by the
/// classic rule ([`super::classic_sessions`]), which picks other requests.
#[derive(Debug, Default)]
pub(super) struct Late<'a> {
    requests: BTreeMap<&'a str, Vec<(Millis, Option<Millis>)>>,
    expels: Vec<Millis>,
}

impl<'a> Late<'a> {
    /// The requests `pick` names a member id for (given the request and whether it was
    /// answered), and the expels.
    pub(super) fn of(log: &'a AnswerLog, pick: fn(&'a Request, bool) -> Option<&'a str>) -> Self {
        let mut late = Late::default();
        for e in &log.entries {
            let (call, sent_ms, answered) = match e {
                Entry::Exchange(x) => (&x.request, x.sent_ms, Some(x.answered_ms)),
                Entry::Unanswered { call, sent_ms, .. } => (call, *sent_ms, None),
                Entry::Mark { mark: Mark::Expelled(_), at_ms } => {
                    late.expels.push(*at_ms);
                    continue;
                }
                Entry::Mark { .. } => continue,
            };
            if let Some(id) = pick(call, answered.is_some()) {
                late.requests.entry(id).or_default().push((sent_ms, answered));
            }
        }
        late
    }

    /// Whether something may have removed `id` between `from` (its proof written) and `to`
    /// (the refusal read): a request of its taken then, or an expel. `judged` (when written,
    /// when answered) is the refused request itself, which does not excuse its own refusal.
    pub(super) fn in_window(
        &self,
        id: &str,
        from: Millis,
        to: Millis,
        judged: (Millis, Millis),
    ) -> bool {
        let taken_then = |&(sent, answered): &(Millis, Option<Millis>)| {
            (sent, answered) != (judged.0, Some(judged.1))
                && sent <= to
                && match answered {
                    Some(answered) => answered >= from,
                    None => sent + REACH_MS >= from,
                }
        };
        self.requests.get(id).is_some_and(|rs| rs.iter().any(taken_then))
            || self.expels.iter().any(|&t| t >= from && t <= to)
    }
}

/// A consumer member's leaves, and its heartbeats never answered.
fn leaves_and_unanswered(call: &Request, answered: bool) -> Option<&str> {
    match call {
        Request::ConsumerHeartbeat { member_id, epoch, .. } if *epoch < 0 || !answered => {
            Some(member_id)
        }
        _ => None,
    }
}

/// The anomaly, if exchange `x` (entry `i`, answered UNKNOWN_MEMBER_ID, naming `id`) came while
/// `member`'s session had to run.
fn judge(
    eras: &Eras,
    late: &Late<'_>,
    id: &str,
    member: Option<&Member>,
    i: usize,
    x: &Exchange,
) -> Option<BrokerAnomaly> {
    let m = member?;
    let p = m.proof?;
    if m.is_static || m.revoking || !eras.same(p.entry, i) {
        return None;
    }
    if late.in_window(id, p.sent_ms, x.answered_ms, (x.sent_ms, x.answered_ms)) {
        return None;
    }
    if x.sent_ms <= p.answered_ms || x.answered_ms > p.sent_ms + p.interval_ms {
        return None;
    }
    let leave = matches!(x.request, Request::ConsumerHeartbeat { epoch: LEAVE_EPOCH, .. });
    Some(BrokerAnomaly {
        rule: BrokerRule::LiveMemberFenced,
        at_ms: x.answered_ms,
        partition: None,
        summary: format!(
            "{}{} answered UNKNOWN_MEMBER_ID at t={}ms, {} ms after its heartbeat written at t={}ms \
             was answered NONE with a heartbeat interval of {} ms: its session (longer than the \
             interval) had not run out, and it had not left",
            x.request.api(),
            if leave { " (its leave)" } else { "" },
            x.answered_ms,
            x.answered_ms - p.sent_ms,
            p.sent_ms,
            p.interval_ms
        ),
        evidence: vec![p.entry, i],
    })
}
