//! What a client owes on the way out: `no-leave`.
//!
//! A client closed cleanly tells the coordinator it is going, so that the group rebalances at
//! once instead of waiting a session for it: the Java consumer's `close()` sends LeaveGroup when
//! it holds a member id and knows its coordinator (AbstractCoordinator `maybeLeaveGroup`), and a
//! KIP-848 consumer the leave heartbeat, member epoch -1, or -2 for a static member that means to
//! come back (ConsumerMembershipManager `leaveGroup`). A classic static member sends nothing: it
//! keeps its place for its session (KIP-345).
//!
//! The rule, per actor the harness asked to close cleanly (the mark `Leaving`): if it was then in
//! the group as its answers tell — classic, dynamic, a member id given and its last JoinGroup,
//! SyncGroup or Heartbeat answered NONE or REBALANCE_IN_PROGRESS; KIP-848, its last
//! ConsumerGroupHeartbeat answered NONE at an epoch above 0 — it writes a LeaveGroup, or a
//! ConsumerGroupHeartbeat below epoch 0, before it stops. What it cannot know: a client that may
//! have lost its coordinator (an answer NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS or
//! COORDINATOR_NOT_AVAILABLE, a request never answered, a broker crash or restart or a
//! coordinator move, with no group answer since) may have had no one to tell, and one whose
//! broker was holding or delaying answers (a held answer, a slow or unresponsive broker, a slow
//! or cut network) may have written its leave behind a request the broker had not answered, so
//! that the broker never read it (a connection is served one request at a time); a client killed before it was done (a crash, the harness's close deadline) or still
//! closing when the run ended is not judged.

use std::collections::BTreeMap;

use super::log::{answer_error, Answer, AnswerLog, Entry, Mark, Request};
use super::log::{COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR};
use super::log::{NONE, REBALANCE_IN_PROGRESS};
use super::{BrokerAnomaly, BrokerRule};

/// One actor's standing, as its answers tell it.
#[derive(Default)]
struct Actor {
    /// In the group, owing a leave if asked to close: the entry that told it so.
    member: Option<usize>,
    /// Since the harness asked it to close: the mark's entry, and whether it may have lost its
    /// coordinator or been killed since.
    leaving: Option<(usize, bool)>,
    /// Whether a JoinGroup of it named a `group.instance.id`.
    is_static_classic: bool,
    /// Whether it may be looking its coordinator up: its last group answer was a coordinator
    /// error, or never came.
    lookup: bool,
}

/// Every actor asked to close cleanly that stopped without a word to its coordinator.
pub fn check(log: &AnswerLog) -> Vec<BrokerAnomaly> {
    let mut actors: BTreeMap<&str, Actor> = BTreeMap::new();
    let mut found = Vec::new();
    for (i, e) in log.entries.iter().enumerate() {
        match e {
            Entry::Exchange(x) => {
                let a = actors.entry(&x.actor).or_default();
                if matches!(x.request, Request::Leave { .. })
                    || matches!(x.request, Request::ConsumerHeartbeat { epoch, .. } if epoch < 0)
                {
                    a.member = None;
                    continue;
                }
                if let Request::Join { instance, .. } = &x.request {
                    a.is_static_classic = instance.is_some();
                }
                let error = answer_error(&x.answer);
                if [NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE]
                    .contains(&error)
                {
                    a.lookup = true;
                    if let Some((_, excused)) = &mut a.leaving {
                        *excused = true;
                    }
                    continue;
                }
                a.lookup = false;
                a.member = match (&x.request, &x.answer) {
                    (Request::Join { .. }, Answer::Join { error, member_id, .. }) => {
                        let kept = *error == NONE || *error == REBALANCE_IN_PROGRESS;
                        (kept && !member_id.is_empty() && !a.is_static_classic).then_some(i)
                    }
                    (Request::Sync { .. } | Request::Heartbeat { .. }, _) => {
                        let kept = error == NONE || error == REBALANCE_IN_PROGRESS;
                        (kept && a.member.is_some()).then_some(i)
                    }
                    (
                        Request::ConsumerHeartbeat { .. },
                        Answer::ConsumerHeartbeat { error, epoch, .. },
                    ) => (*error == NONE && *epoch > 0).then_some(i),
                    _ => a.member,
                };
            }
            Entry::Unanswered { actor, call, .. } => {
                let a = actors.entry(actor).or_default();
                if matches!(call, Request::Leave { .. })
                    || matches!(call, Request::ConsumerHeartbeat { epoch, .. } if *epoch < 0)
                {
                    a.member = None;
                } else {
                    a.lookup = true;
                    if let Some((_, excused)) = &mut a.leaving {
                        *excused = true;
                    }
                }
            }
            // A broker crashed or restarted, or the coordinator moved: any client may have lost
            // its coordinator without a word on the wire (a connection that never opened).
            Entry::Mark {
                mark: Mark::CoordinatorMoved | Mark::RestartStarted | Mark::AnswersHeld,
                ..
            } => {
                for a in actors.values_mut() {
                    a.lookup = true;
                    if let Some((_, excused)) = &mut a.leaving {
                        *excused = true;
                    }
                }
            }
            Entry::Mark { mark: Mark::Leaving(actor), .. } => {
                let a = actors.entry(actor).or_default();
                a.leaving = Some((i, a.lookup));
            }
            Entry::Mark { mark: Mark::Killed(actor), .. } => {
                if let Some((_, excused)) = &mut actors.entry(actor).or_default().leaving {
                    *excused = true;
                }
            }
            Entry::Mark { at_ms, mark: Mark::Stopped(actor) } => {
                let a = actors.entry(actor).or_default();
                if let (Some(member), Some((asked, false))) = (a.member, a.leaving) {
                    found.push(BrokerAnomaly {
                        rule: BrokerRule::NoLeave,
                        at_ms: *at_ms,
                        partition: None,
                        summary: format!(
                            "{actor}, asked to close while in the group, stopped without a \
                             LeaveGroup or a leave heartbeat"
                        ),
                        evidence: vec![member, asked, i],
                    });
                }
                a.leaving = None;
                a.member = None;
            }
            Entry::Mark { .. } => {}
        }
    }
    found
}
