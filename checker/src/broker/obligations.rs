//! What a classic client owes the coordinator in time: `lapsed-session`.
//!
//! A classic member promises, with its JoinGroup's `session_timeout_ms`, to be heard from within
//! that long: Kafka expires a member whose heartbeat timer fires while no JoinGroup or SyncGroup
//! of it is parked (GroupMetadataManager `expireClassicGroupMemberHeartbeat`), and the timer is
//! re-armed by every Heartbeat, by the join and sync completing, and by a commit (ClassicGroup
//! `validateOffsetCommit`'s caller re-arms it in Stable and PreparingRebalance). Every client
//! keeps the promise with a heartbeat a fraction of the session apart, sent from a thread or task
//! of its own, so that neither processing nor a rebalance callback holds it up (the Java
//! consumer's heartbeat thread, KIP-62; librdkafka's and the Go clients' background loops).
//!
//! The rule, per actor, after the heal (every fault lifted, so nothing stops a correct client
//! from reaching its coordinator): while the actor is in the group as far as its answers tell
//! (its last JoinGroup, SyncGroup or Heartbeat answered NONE or REBALANCE_IN_PROGRESS, or
//! MEMBER_ID_REQUIRED, and no LeaveGroup written since) and no group request of it is in flight,
//! it writes its next Heartbeat, JoinGroup, SyncGroup, LeaveGroup or OffsetCommit within its
//! session timeout plus a second, and it does not stop, nor does the run end, silent for longer.
//! A static member that gives its membership up by itself writes no LeaveGroup (KIP-345: a
//! static member leaves by its session running out; the Java consumer resets its generation on
//! a poll timeout and stops heartbeating until the application polls again): a silence that
//! ends with its JoinGroup with no member id, the instance joining afresh, is not judged.
//! What it cannot know: a client whose last answer was a coordinator error (NOT_COORDINATOR,
//! COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE) or never came, or that saw a broker
//! crash or restart or a coordinator move since, looks its coordinator up with requests the
//! stream does not keep, so its silence is not judged until it writes again;
//! a consumer-protocol member's session is the broker's configuration, not on the wire.

use std::collections::BTreeMap;

use groupsim_wire::Millis;

use super::log::{answer_error, AnswerLog, Entry, Mark, Request};
use super::log::{COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR};
use super::log::{MEMBER_ID_REQUIRED, NONE, REBALANCE_IN_PROGRESS};
use super::{BrokerAnomaly, BrokerRule};

/// How late past its session a client may be heard from: a broker timer's granularity.
const SLACK_MS: Millis = 1_000;

/// One step of an actor's conversation, in time order.
#[derive(Debug)]
enum Step {
    /// A group request written (entry of its exchange, or of its unanswered record);
    /// `afresh`: a static member's JoinGroup with no member id.
    Wrote { entry: usize, leave: bool, afresh: bool, session_ms: Option<i32> },
    /// Its answer read, and what it tells the actor of its membership.
    Read { entry: usize, told: Told },
    /// Its answer never came: known at the time its record was made.
    Lost,
    /// The actor stopped, or the run ended.
    End { entry: usize },
    /// A broker crashed or restarted, or the coordinator moved.
    Moved,
}

/// Where an actor stands.
#[derive(Default)]
struct Standing {
    in_flight: usize,
    in_group: bool,
    session_ms: Option<Millis>,
    /// Since when it has been silent, and the entry that began the silence; None while it
    /// cannot be judged (looking up its coordinator).
    silent_since: Option<(Millis, usize)>,
}

/// Whether a classic group request `r` is one that keeps the session (or ends it).
fn keeps_session(r: &Request) -> bool {
    matches!(
        r,
        Request::Join { .. }
            | Request::Sync { .. }
            | Request::Heartbeat { .. }
            | Request::Leave { .. }
            | Request::Commit { .. }
    )
}

/// Every silence longer than a session of an actor in the group after the heal.
pub fn check(log: &AnswerLog) -> Vec<BrokerAnomaly> {
    let Some(heal) = log.mark_at(&Mark::Heal) else { return Vec::new() };
    // The time each entry was recorded at: an unanswered request's record bears none, and takes
    // the latest time recorded before it.
    let mut at = Vec::with_capacity(log.entries.len());
    let mut latest = 0;
    for e in &log.entries {
        latest = latest.max(match e {
            Entry::Exchange(x) => x.answered_ms,
            Entry::Mark { at_ms, .. } => *at_ms,
            Entry::Unanswered { .. } => latest,
        });
        at.push(latest);
    }
    let mut steps: BTreeMap<&str, Vec<(Millis, u8, Step)>> = BTreeMap::new();
    let mut end = None;
    // Coordinator changes: any client may lose its coordinator at one without a word on the wire.
    let mut moves = Vec::new();
    for (i, e) in log.entries.iter().enumerate() {
        match e {
            Entry::Exchange(x) if keeps_session(&x.request) => {
                let s = steps.entry(&x.actor).or_default();
                s.push((x.sent_ms, 1, wrote(i, &x.request)));
                s.push((x.answered_ms, 0, Step::Read { entry: i, told: told(x) }));
            }
            Entry::Unanswered { actor, sent_ms, call, .. } if keeps_session(call) => {
                let s = steps.entry(actor).or_default();
                s.push((*sent_ms, 1, wrote(i, call)));
                s.push((at[i], 0, Step::Lost));
            }
            Entry::Mark { at_ms, mark: Mark::Stopped(actor) } => {
                steps.entry(actor).or_default().push((*at_ms, 2, Step::End { entry: i }));
            }
            Entry::Mark { at_ms, mark: Mark::End } => end = end.or(Some((*at_ms, i))),
            Entry::Mark {
                at_ms,
                mark: Mark::CoordinatorMoved | Mark::RestartStarted | Mark::AnswersHeld,
            } => {
                moves.push(*at_ms);
            }
            _ => {}
        }
    }
    let mut found = Vec::new();
    for (actor, mut steps) in steps {
        if let Some((t, i)) = end {
            steps.push((t, 2, Step::End { entry: i }));
        }
        steps.extend(moves.iter().map(|&t| (t, 0, Step::Moved)));
        // Reads before writes in one millisecond: a client writes after what it read.
        steps.sort_by_key(|s| (s.0, s.1));
        let mut st = Standing::default();
        for (t, _, step) in steps {
            let judged_entry = match &step {
                Step::Wrote { entry, .. } | Step::End { entry } => Some(*entry),
                _ => None,
            };
            let afresh = matches!(step, Step::Wrote { afresh: true, .. });
            if let (Some(entry), Some((since, began)), Some(session), false) =
                (judged_entry, st.silent_since, st.session_ms, afresh)
            {
                if st.in_group
                    && st.in_flight == 0
                    && since >= heal
                    && t > since + session + SLACK_MS
                {
                    found.push(BrokerAnomaly {
                        rule: BrokerRule::LapsedSession,
                        at_ms: t,
                        partition: None,
                        summary: format!(
                            "{actor}, in the group, was silent from {since} ms to {t} ms, past \
                             its session of {session} ms"
                        ),
                        evidence: vec![began, entry],
                    });
                }
            }
            match step {
                Step::Wrote { leave, session_ms, .. } => {
                    st.in_flight += 1;
                    st.silent_since = None;
                    if leave {
                        st.in_group = false;
                    }
                    if let Some(ms) = session_ms {
                        st.session_ms = u64::try_from(ms).ok();
                    }
                }
                Step::Read { entry, told } => {
                    st.in_flight = st.in_flight.saturating_sub(1);
                    if let Told::InGroup(g) = told {
                        st.in_group = g;
                    }
                    st.silent_since = match told {
                        Told::LookUp => None,
                        _ if st.in_flight == 0 => Some((t, entry)),
                        _ => st.silent_since,
                    };
                }
                Step::Lost => {
                    st.in_flight = st.in_flight.saturating_sub(1);
                    st.silent_since = None;
                }
                Step::Moved => st.silent_since = None,
                Step::End { .. } => break,
            }
        }
    }
    found
}

/// The step of writing `r`, recorded at `entry`.
fn wrote(entry: usize, r: &Request) -> Step {
    let session_ms = match r {
        Request::Join { session_timeout_ms, .. } => *session_timeout_ms,
        _ => None,
    };
    let afresh =
        matches!(r, Request::Join { member_id, instance: Some(_), .. } if member_id.is_empty());
    Step::Wrote { entry, leave: matches!(r, Request::Leave { .. }), afresh, session_ms }
}

/// What an answer tells its actor of its membership.
#[derive(Clone, Copy, Debug)]
enum Told {
    /// In the group (bound to keep its session, or to rejoin within it), or out.
    InGroup(bool),
    /// Nothing: a commit's answer leaves the member where it stood.
    Nothing,
    /// To look its coordinator up, with requests the stream does not keep.
    LookUp,
}

/// What reading `x`'s answer tells its actor.
fn told(x: &super::log::Exchange) -> Told {
    let error = answer_error(&x.answer);
    if [NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE].contains(&error) {
        return Told::LookUp;
    }
    match x.request {
        Request::Commit { .. } => Told::Nothing,
        Request::Leave { .. } => Told::InGroup(false),
        _ => Told::InGroup(matches!(error, NONE | REBALANCE_IN_PROGRESS | MEMBER_ID_REQUIRED)),
    }
}
