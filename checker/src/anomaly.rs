//! What the checker reports: the anomaly classes (one per rule) and one anomaly with the
//! history events that prove it.

use std::fmt;

use groupsim_history::History;
use groupsim_wire::{Millis, TopicPartition};
use serde::{Deserialize, Serialize};

/// The kinds of anomaly the checker reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum AnomalyClass {
    /// An acknowledged commit later missing from what OffsetFetch returned.
    LostCommit,
    /// Committed offset went backwards.
    OffsetRegression,
    /// A record covered by two accepted commits.
    DuplicateCommit,
    /// Committed records the committer never processed while it held the partition.
    UncoveredCommit,
    /// A commit accepted from a removed member or a stale generation.
    ZombieCommit,
    /// A commit accepted for a partition the committer did not own.
    UnownedCommit,
    /// A partition assigned to two members in one generation.
    SplitAssignment,
    /// A member reset its generation or member id on an answer about an earlier one.
    StaleReset,
    /// KIP-848: a join (member epoch 0) answered FENCED_MEMBER_EPOCH.
    FencedJoin,
    /// The group did not converge in the liveness phase.
    Stuck,
    /// Black-box runs: a record below the final committed offset that no client processed.
    LostRecord,
    /// Black-box runs: a live member processed a partition its generation gave to another.
    SplitProcessing,
    /// A member started a partition it was given below the committed offset in force.
    PositionRewind,
    /// A member started a partition it was given above the committed offset in force.
    PositionSkip,
    /// A member stopped consuming on its own (a fatal error a correct client survives, or a
    /// leave nobody asked for).
    MemberGaveUp,
    /// A live member stopped heartbeating or consuming after the heal.
    StalledMember,
    /// An admin client was told something about the group (its members, state or assignment)
    /// that was not true on that broker at any instant while it asked.
    AdminMismatch,
    /// The coordinator accepted a request Kafka refuses in every group state (a misbehaving
    /// client's: malformed, or from a member id the group never gave).
    InvalidRequestAccepted,
    /// The coordinator's answers gave a partition to two members at once.
    AnswerSplitAssignment,
    /// The coordinator's answers accepted a commit from a member they had already removed or
    /// moved past.
    AnswerZombieCommit,
    /// The coordinator's answers showed a committed offset going back with no commit asking.
    AnswerOffsetRegression,
    /// The coordinator's answers showed a generation or member epoch going back.
    AnswerGenerationRegression,
    /// The coordinator's answers changed a generation's membership without a new generation.
    AnswerMembershipWithoutGeneration,
    /// The coordinator's last answers to the live members did not show a converged group.
    AnswerNotConverged,
    /// A broker's Fetch answers skipped an offset.
    AnswerFetchSkip,
    /// A broker's Fetch answers repeated an offset.
    AnswerFetchRepeat,
    /// The coordinator answered a Heartbeat or SyncGroup NONE at a generation it had moved past.
    AnswerStaleGenerationAccepted,
    /// The coordinator's answers put more members in a group than its configured maximum.
    AnswerGroupOverMaxSize,
    /// The coordinator answered a Heartbeat or SyncGroup NONE from a member it had removed
    /// (left, fenced, expired, replaced by its static instance's new id).
    AnswerRemovedMemberAccepted,
    /// The coordinator answered a KIP-848 member UNKNOWN_MEMBER_ID within the heartbeat
    /// interval of a heartbeat it had answered NONE (its session had to run).
    AnswerLiveMemberFenced,
    /// The coordinator answered NONE to a request Kafka refuses whatever the group's state
    /// (KIP-394's MEMBER_ID_REQUIRED, a rejoin claiming partitions).
    AnswerWrongError,
    /// An answer lacked what its protocol says it carries (a member id, a generation, a leader
    /// among the members).
    AnswerMalformed,
    /// A client wrote a member id, generation or member epoch no answer had given it.
    RequestUnknownGeneration,
    /// A client rejoined a consumer group (member epoch 0) claiming partitions.
    RequestJoinOwningPartitions,
    /// A classic client in the group was silent for longer than its session after the heal.
    RequestLapsedSession,
    /// A client asked to close cleanly stopped without leaving the group.
    RequestNoLeave,
}

impl AnomalyClass {
    /// Every class, in report order.
    pub const ALL: [AnomalyClass; 36] = [
        AnomalyClass::LostCommit,
        AnomalyClass::OffsetRegression,
        AnomalyClass::DuplicateCommit,
        AnomalyClass::UncoveredCommit,
        AnomalyClass::ZombieCommit,
        AnomalyClass::UnownedCommit,
        AnomalyClass::SplitAssignment,
        AnomalyClass::StaleReset,
        AnomalyClass::FencedJoin,
        AnomalyClass::Stuck,
        AnomalyClass::LostRecord,
        AnomalyClass::SplitProcessing,
        AnomalyClass::PositionRewind,
        AnomalyClass::PositionSkip,
        AnomalyClass::MemberGaveUp,
        AnomalyClass::StalledMember,
        AnomalyClass::AdminMismatch,
        AnomalyClass::InvalidRequestAccepted,
        AnomalyClass::AnswerSplitAssignment,
        AnomalyClass::AnswerZombieCommit,
        AnomalyClass::AnswerOffsetRegression,
        AnomalyClass::AnswerGenerationRegression,
        AnomalyClass::AnswerMembershipWithoutGeneration,
        AnomalyClass::AnswerNotConverged,
        AnomalyClass::AnswerFetchSkip,
        AnomalyClass::AnswerFetchRepeat,
        AnomalyClass::AnswerStaleGenerationAccepted,
        AnomalyClass::AnswerGroupOverMaxSize,
        AnomalyClass::AnswerRemovedMemberAccepted,
        AnomalyClass::AnswerLiveMemberFenced,
        AnomalyClass::AnswerWrongError,
        AnomalyClass::AnswerMalformed,
        AnomalyClass::RequestUnknownGeneration,
        AnomalyClass::RequestJoinOwningPartitions,
        AnomalyClass::RequestLapsedSession,
        AnomalyClass::RequestNoLeave,
    ];

    /// The kebab-case name used in reports and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            AnomalyClass::LostCommit => "lost-commit",
            AnomalyClass::OffsetRegression => "offset-regression",
            AnomalyClass::DuplicateCommit => "duplicate-commit",
            AnomalyClass::UncoveredCommit => "uncovered-commit",
            AnomalyClass::ZombieCommit => "zombie-commit",
            AnomalyClass::UnownedCommit => "unowned-commit",
            AnomalyClass::SplitAssignment => "split-assignment",
            AnomalyClass::StaleReset => "stale-reset",
            AnomalyClass::FencedJoin => "fenced-join",
            AnomalyClass::Stuck => "stuck",
            AnomalyClass::LostRecord => "lost-record",
            AnomalyClass::SplitProcessing => "split-processing",
            AnomalyClass::PositionRewind => "position-rewind",
            AnomalyClass::PositionSkip => "position-skip",
            AnomalyClass::MemberGaveUp => "member-gave-up",
            AnomalyClass::StalledMember => "stalled-member",
            AnomalyClass::AdminMismatch => "admin-mismatch",
            AnomalyClass::InvalidRequestAccepted => "invalid-request-accepted",
            AnomalyClass::AnswerSplitAssignment => "answer-split-assignment",
            AnomalyClass::AnswerZombieCommit => "answer-zombie-commit",
            AnomalyClass::AnswerOffsetRegression => "answer-offset-regression",
            AnomalyClass::AnswerGenerationRegression => "answer-generation-regression",
            AnomalyClass::AnswerMembershipWithoutGeneration => {
                "answer-membership-without-generation"
            }
            AnomalyClass::AnswerNotConverged => "answer-not-converged",
            AnomalyClass::AnswerFetchSkip => "answer-fetch-skip",
            AnomalyClass::AnswerFetchRepeat => "answer-fetch-repeat",
            AnomalyClass::AnswerStaleGenerationAccepted => "answer-stale-generation-accepted",
            AnomalyClass::AnswerGroupOverMaxSize => "answer-group-over-max-size",
            AnomalyClass::AnswerRemovedMemberAccepted => "answer-removed-member-accepted",
            AnomalyClass::AnswerLiveMemberFenced => "answer-live-member-fenced",
            AnomalyClass::AnswerWrongError => "answer-wrong-error",
            AnomalyClass::AnswerMalformed => "answer-malformed",
            AnomalyClass::RequestUnknownGeneration => "request-unknown-generation",
            AnomalyClass::RequestJoinOwningPartitions => "request-join-owning-partitions",
            AnomalyClass::RequestLapsedSession => "request-lapsed-session",
            AnomalyClass::RequestNoLeave => "request-no-leave",
        }
    }

    /// Parses a kebab-case name.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.name() == name)
    }
}

impl fmt::Display for AnomalyClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One violation, with the history events (by index) that prove it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Anomaly {
    /// Which rule was broken.
    pub class: AnomalyClass,
    /// The partition concerned, if the rule is about one.
    pub partition: Option<TopicPartition>,
    /// When it became visible.
    pub at_ms: Millis,
    /// What went wrong, in a sentence.
    pub message: String,
    /// Indices into the history of the events that prove it, in order.
    pub events: Vec<usize>,
    /// Indices into the history's wire stream of the exchanges that prove it, in order (the
    /// protocol rules' evidence).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exchanges: Vec<usize>,
}

impl Anomaly {
    /// An anomaly of `class` proved by `events` (sorted, each once).
    pub fn new(
        class: AnomalyClass,
        partition: Option<&TopicPartition>,
        at_ms: Millis,
        message: String,
        mut events: Vec<usize>,
    ) -> Self {
        events.sort_unstable();
        events.dedup();
        Self { class, partition: partition.cloned(), at_ms, message, events, exchanges: Vec::new() }
    }

    /// The same anomaly proved by these exchanges of the wire stream as well (sorted, each once).
    pub fn with_exchanges(mut self, mut exchanges: Vec<usize>) -> Self {
        exchanges.sort_unstable();
        exchanges.dedup();
        self.exchanges = exchanges;
        self
    }

    /// A multi-line report: the anomaly and each proving event.
    pub fn render(&self, history: &History) -> String {
        let mut out = format!("{} at t={}ms", self.class, self.at_ms);
        if let Some(tp) = &self.partition {
            out.push_str(&format!(" on {tp}"));
        }
        out.push_str(&format!(": {}\n", self.message));
        for &i in &self.events {
            if let Some(e) = history.events().get(i) {
                out.push_str(&format!("    #{i} {e}\n"));
            }
        }
        for &i in &self.exchanges {
            if let Some(w) = history.wire().get(i) {
                out.push_str(&format!("    ~{i} {}\n", crate::broker::describe_entry(&w.wire)));
            }
        }
        out
    }
}
