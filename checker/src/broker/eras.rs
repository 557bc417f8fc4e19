//! What of a classic group's answers survives a coordinator change, as the answers show it.
//!
//! Kafka writes a classic group's metadata to the offsets topic only when a generation's
//! assignment is stored (the leader's SyncGroup: every SyncGroup answer NONE comes after that
//! write), when a static member is replaced in a Stable group, and when the group empties.
//! Everything else — a JoinGroup answer of a new generation, a LeaveGroup accepted, a member
//! answered UNKNOWN_MEMBER_ID, a member list told to a leader — lives in the coordinator's memory
//! only. A coordinator that moves or restarts before the next write reloads the group as last
//! written: members it had removed are back, and a generation number it had handed out is handed
//! out again to other members (GroupMetadataManager's load of the group record). So an answer
//! proves something about later answers only while the same coordinator keeps the group.
//!
//! A change shows in the log: the harness's mark that it crashed, restarted or moved something
//! (a simulated or served cluster's crash, restart or coordinator move; `check-broker`'s
//! restart command), an answer NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS or
//! COORDINATOR_NOT_AVAILABLE, or another broker node answering the group. An era is a run of
//! the group's entries with no sign between them: an in-memory answer is evidence only inside its
//! era, a persisted one (a SyncGroup answered NONE) for the rest of the log. A dropped client
//! connection is no sign: the coordinator keeps the group. An answer read after a sign whose
//! request was written before it (held by a paused client or a slow network across the change)
//! was made by either coordinator: it is an era of its own, evidence of nothing in-memory about
//! the others. What the rules cannot know: a foreign broker that restarts by itself, on the same
//! node, between two requests no error answered.

use groupsim_wire::Millis;

use super::log::{Answer, AnswerLog, Entry, Exchange, Mark, Request, NONE};

pub use super::log::{COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR};

/// Era numbers from here up are those of answers made across a coordinator change: one each.
const STRADDLING: u32 = u32::MAX / 2;

/// The era of each entry of a log (see the module docs), and where consumer-protocol members
/// first appear in it.
#[derive(Debug)]
pub struct Eras {
    era: Vec<u32>,
    /// The first entry that may come after a ConsumerGroupHeartbeat was read (the group is, or
    /// becomes, a consumer group there: generations stop being one number for the whole
    /// group).
    first_consumer: usize,
}

impl Eras {
    /// Reads `log`.
    pub fn of(log: &AnswerLog) -> Self {
        let mut era = Vec::with_capacity(log.entries.len());
        let mut current = 0u32;
        let mut node: Option<i32> = None;
        let mut first_consumer = usize::MAX;
        // When the latest sign was seen.
        let mut last_sign: Option<Millis> = None;
        for (i, e) in log.entries.iter().enumerate() {
            match e {
                Entry::Unanswered { .. } => {}
                Entry::Mark { mark: Mark::RestartStarted | Mark::CoordinatorMoved, at_ms } => {
                    current += 1;
                    last_sign = Some(*at_ms);
                }
                Entry::Exchange(x) => {
                    if matches!(x.request, Request::ConsumerHeartbeat { .. }) {
                        first_consumer = first_consumer.min(i);
                    }
                    let moved = matches!(
                        coordinator_error(&x.answer),
                        Some(
                            NOT_COORDINATOR
                                | COORDINATOR_LOAD_IN_PROGRESS
                                | COORDINATOR_NOT_AVAILABLE
                        )
                    );
                    let other_node = x.node.is_some() && node.is_some() && x.node != node;
                    if x.node.is_some() && !moved {
                        node = x.node;
                    }
                    // Written before the latest sign, read after it: made by either side of
                    // the change (even when it shows the change itself, by its node).
                    let straddles = last_sign.is_some_and(|t| t >= x.sent_ms);
                    if moved || other_node {
                        current += 1;
                        last_sign = Some(x.answered_ms);
                    }
                    if straddles {
                        era.push(STRADDLING + i as u32);
                        continue;
                    }
                }
                Entry::Mark { .. } => {}
            }
            era.push(current);
        }
        // A consumer group may exist from the moment the first ConsumerGroupHeartbeat was
        // written (its answer may be read long after, by a paused client): an answer read
        // from then on may come from it.
        let written = log.entries.iter().filter_map(|e| match e {
            Entry::Exchange(x) if matches!(x.request, Request::ConsumerHeartbeat { .. }) => {
                Some(x.sent_ms)
            }
            Entry::Unanswered { call: Request::ConsumerHeartbeat { .. }, sent_ms, .. } => {
                Some(*sent_ms)
            }
            _ => None,
        });
        if let Some(t) = written.min() {
            let after = log.entries.iter().position(|e| match e {
                Entry::Exchange(x) => x.answered_ms >= t,
                Entry::Mark { at_ms, .. } => *at_ms >= t,
                Entry::Unanswered { sent_ms, .. } => *sent_ms >= t,
            });
            first_consumer = first_consumer.min(after.unwrap_or(usize::MAX));
        }
        Self { era, first_consumer }
    }

    /// The era of entry `i`.
    pub fn era(&self, i: usize) -> u32 {
        self.era.get(i).copied().unwrap_or(u32::MAX)
    }

    /// Whether entries `a` and `b` lie in one era: an in-memory answer at `a` still holds at `b`.
    pub fn same(&self, a: usize, b: usize) -> bool {
        self.era.get(a).is_some() && self.era.get(a) == self.era.get(b)
    }

    /// Whether the group was a plain classic group up to entry `i`: no consumer-protocol member
    /// had spoken yet, so one generation number stood for the whole group.
    pub fn classic_at(&self, i: usize) -> bool {
        i < self.first_consumer
    }

    /// Whether entries `a` and `b` both lie where the group was plainly classic, so one group
    /// answered both. Once a consumer-protocol member has spoken, the group may have been an
    /// empty consumer group that a classic JoinGroup deleted and made again as a new classic
    /// group (KIP-848's downgrade of an empty group: GroupMetadataManager deletes it and creates
    /// a classic one), whose generations start over at 1: a generation, a member list or a
    /// removal read before is about another group than an answer read after.
    pub fn plain(&self, a: usize, b: usize) -> bool {
        self.classic_at(a) && self.classic_at(b)
    }
}

/// The group-level error of an answer, if it has one.
fn coordinator_error(a: &Answer) -> Option<i16> {
    match a {
        Answer::Join { error, .. }
        | Answer::Sync { error, .. }
        | Answer::Error { error }
        | Answer::ConsumerHeartbeat { error, .. } => Some(*error),
        Answer::Commit { errors } => errors.first().map(|e| e.1),
        Answer::OffsetFetch { offsets } => offsets.first().map(|e| e.2),
        Answer::Fetch { .. } => None,
    }
}

/// When each era's coordinator was first seen serving the group: an answer NONE to a group
/// request other than a heartbeat. Kafka answers a Heartbeat NONE blindly while it is still
/// loading the group ("the group is still loading, so respond just blindly"), so a heartbeat's
/// NONE says the member is in the group only once its coordinator was seen serving.
#[derive(Debug, Default)]
pub struct Serving(std::collections::BTreeMap<u32, Millis>);

impl Serving {
    /// Reads exchange `x`, entry `i` of the log.
    pub fn read(&mut self, eras: &Eras, i: usize, x: &Exchange) {
        let served = match (&x.request, &x.answer) {
            (Request::Heartbeat { .. }, _) => false,
            (_, Answer::Join { error, .. } | Answer::Sync { error, .. }) => *error == NONE,
            (_, Answer::Commit { errors }) => errors.iter().any(|e| e.1 == NONE),
            (_, Answer::OffsetFetch { offsets }) => offsets.iter().any(|o| o.2 == NONE),
            _ => false,
        };
        if served {
            self.0.entry(eras.era(i)).or_insert(x.answered_ms);
        }
    }

    /// Whether a heartbeat written at `sent_ms`, entry `i`, may have been answered blindly: no
    /// answer of its era read before it was written showed its coordinator serving the group.
    pub fn blind(&self, eras: &Eras, i: usize, sent_ms: Millis) -> bool {
        self.0.get(&eras.era(i)).is_none_or(|&t| t >= sent_ms)
    }
}
