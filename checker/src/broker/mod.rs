//! The broker-side checker: judges a Kafka-compatible broker's group coordinator from the
//! outside, from the [`AnswerLog`] of what `check-broker`'s members and observer asked and were
//! answered. It never sees the broker's state, so every rule is stated over answers and the
//! order the harness saw them in: an answer read before a request was written was given before
//! that request was taken. Each anomaly names the request and answer that prove it.
//!
//! Rules, one module each:
//! - [`assignments`]: `split-assignment`, a partition given to two members at once.
//! - [`commits`]: `zombie-commit`, an OffsetCommit from a removed member or a past generation
//!   answered NONE; `offset-regression`, a committed offset read lower than one known committed
//!   before, with no commit asking for the lower one that the broker could have applied since.
//! - [`epochs`]: `generation-regression` and `membership-without-generation`, generations or
//!   member epochs going back, or membership changing inside one generation.
//! - [`convergence`]: `not-converged`, the group not stable with every partition assigned when
//!   the run ends, after the heal.
//! - [`fetches`]: `fetch-skip` and `fetch-repeat`, records fetched that skip or repeat offsets.
//! - [`stale`]: `stale-generation-accepted`, a Heartbeat or SyncGroup (a ConsumerGroupHeartbeat:
//!   a member epoch) of a generation the group had moved past answered NONE.
//! - [`removed`]: `removed-member-accepted`, a Heartbeat or SyncGroup answered NONE from a member
//!   the coordinator had removed ([`removals`], [`sessions`]: left, fenced, replaced, expired).
//! - [`errors`]: `wrong-error`, NONE to a request Kafka refuses whatever the group's state.
//!
//! - [`consumer_sessions`]: `live-member-fenced`, a KIP-848 member answered UNKNOWN_MEMBER_ID
//!   within the heartbeat interval of a heartbeat answered NONE (the session outlasts the
//!   interval).
//!
//! - [`limits`]: `group-over-max-size`, a classic generation with more members than the group's
//!   configured maximum, or a new member let into a consumer group its sessions prove full.
//!
//! [`statics`] reads static members' replacements (KIP-345) for the classic rules.

pub mod assignments;
pub mod classic_sessions;
pub mod commits;
pub mod consumer_sessions;
pub mod convergence;
pub mod epochs;
pub mod eras;
pub mod errors;
pub mod fencing;
pub mod fetches;
pub mod history;
pub mod leaves;
pub mod limits;
pub mod log;
pub mod obligations;
pub mod removals;
pub mod removed;
pub mod requests;
pub mod sessions;
pub mod shapes;
pub mod stale;
pub mod statics;
#[cfg(test)]
mod tests;

use groupsim_wire::{Millis, TopicPartition};
use serde::{Deserialize, Serialize};

pub use self::log::{describe_entry, Answer, AnswerLog, Entry, Exchange, Mark, Protocol, Request};

/// The broker-side rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum BrokerRule {
    /// A partition given to two members at once.
    SplitAssignment,
    /// An OffsetCommit from a removed member or a past generation answered NONE.
    ZombieCommit,
    /// A committed offset went back with no commit asking for it.
    OffsetRegression,
    /// A generation or member epoch went back.
    GenerationRegression,
    /// Membership changed inside one generation.
    MembershipWithoutGeneration,
    /// The group did not converge after the heal.
    NotConverged,
    /// Fetched records skipped an offset.
    FetchSkip,
    /// Fetched records repeated an offset.
    FetchRepeat,
    /// A Heartbeat or SyncGroup answered NONE at a generation the group had moved past.
    StaleGenerationAccepted,
    /// A Heartbeat or SyncGroup answered NONE from a member the coordinator had removed.
    RemovedMemberAccepted,
    /// NONE to a request Kafka refuses whatever the group's state.
    WrongError,
    /// An answer missing what its protocol says it carries.
    MalformedAnswer,
    /// A client wrote a member id, generation or member epoch it was never given.
    UnknownGenerationSent,
    /// A client rejoined a consumer group claiming partitions.
    JoinOwningPartitions,
    /// A classic client in the group went silent for longer than its session after the heal.
    LapsedSession,
    /// A client asked to close cleanly stopped without leaving the group.
    NoLeave,
    /// A KIP-848 member answered UNKNOWN_MEMBER_ID while its session had to run.
    LiveMemberFenced,
    /// A generation with more members than the group's configured maximum.
    GroupOverMaxSize,
}

impl BrokerRule {
    /// Its kebab-case name.
    pub fn name(self) -> &'static str {
        match self {
            BrokerRule::SplitAssignment => "split-assignment",
            BrokerRule::ZombieCommit => "zombie-commit",
            BrokerRule::OffsetRegression => "offset-regression",
            BrokerRule::GenerationRegression => "generation-regression",
            BrokerRule::MembershipWithoutGeneration => "membership-without-generation",
            BrokerRule::NotConverged => "not-converged",
            BrokerRule::FetchSkip => "fetch-skip",
            BrokerRule::FetchRepeat => "fetch-repeat",
            BrokerRule::StaleGenerationAccepted => "stale-generation-accepted",
            BrokerRule::RemovedMemberAccepted => "removed-member-accepted",
            BrokerRule::WrongError => "wrong-error",
            BrokerRule::MalformedAnswer => "malformed-answer",
            BrokerRule::UnknownGenerationSent => "unknown-generation-sent",
            BrokerRule::JoinOwningPartitions => "join-owning-partitions",
            BrokerRule::LapsedSession => "lapsed-session",
            BrokerRule::NoLeave => "no-leave",
            BrokerRule::LiveMemberFenced => "live-member-fenced",
            BrokerRule::GroupOverMaxSize => "group-over-max-size",
        }
    }
}

/// One anomaly: the rule, what happened, and the log entries that prove it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BrokerAnomaly {
    /// The rule broken.
    pub rule: BrokerRule,
    /// When it was seen (the answer that completed the proof).
    pub at_ms: Millis,
    /// The partition concerned, if one.
    pub partition: Option<TopicPartition>,
    /// What happened, in a sentence.
    pub summary: String,
    /// Indexes of the log entries that prove it.
    pub evidence: Vec<usize>,
}

impl BrokerAnomaly {
    /// The anomaly with its evidence spelled out from `log`.
    pub fn explain(&self, log: &AnswerLog) -> String {
        let mut s = format!("{} at {} ms: {}", self.rule.name(), self.at_ms, self.summary);
        for &i in &self.evidence {
            s.push_str("\n    ");
            s.push_str(&log.describe(i));
        }
        s
    }
}

/// Checks `log` against every broker-side rule; anomalies in rule order, then time order.
pub fn check(log: &AnswerLog) -> Vec<BrokerAnomaly> {
    check_excusing(log, &requests::Excused::new())
}

/// [`check`], with a deliberately misbehaving client's declared requests excused from the
/// client rules.
pub fn check_excusing(log: &AnswerLog, excused: &requests::Excused) -> Vec<BrokerAnomaly> {
    let mut found = Vec::new();
    found.extend(assignments::check(log));
    found.extend(commits::zombie_commits(log));
    found.extend(commits::regressions(log));
    found.extend(epochs::check(log));
    found.extend(convergence::check(log));
    found.extend(fetches::check(log));
    found.extend(stale::check(log));
    found.extend(stale::check_epochs(log));
    found.extend(removed::check(log));
    found.extend(consumer_sessions::check(log));
    found.extend(classic_sessions::check(log));
    found.extend(errors::check(log));
    found.extend(limits::check(log));
    found.extend(fencing::check(log));
    found.extend(shapes::check(log));
    found.extend(requests::check(log, excused));
    found.extend(obligations::check(log));
    found.extend(leaves::check(log));
    found.sort_by_key(|a| (a.rule, a.at_ms));
    found
}
