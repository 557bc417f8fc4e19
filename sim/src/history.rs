//! The history: every ground-truth event of a run, in the order it happened, stamped with
//! simulated time. It is the single source of truth for the checker and for traces.
//!
//! Events are recorded where they become true: the coordinator records a commit when it stores
//! it, a member records processed records when its handler finishes, the world records members
//! starting and stopping and records being produced.

use std::fmt;

use groupsim_coordinator::CoordinatorEvent;
use groupsim_member::MemberEvent;
use groupsim_wire::{Millis, TopicPartition};
use serde::{Deserialize, Serialize};

use crate::faults::Fault;
use sha2::{Digest, Sha256};

/// One event of a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// Simulated milliseconds since the run started.
    pub at_ms: Millis,
    /// What happened.
    pub kind: EventKind,
}

/// Where an event came from and what it says.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum EventKind {
    /// The group coordinator on broker `broker` recorded this.
    Coordinator { broker: i32, event: CoordinatorEvent },
    /// Member `member` (its scenario name, stable across member ids) recorded this.
    Member { member: String, event: MemberEvent },
    /// The world (scenario driver, producer, nemesis) recorded this.
    World(WorldEvent),
}

/// Facts the world itself knows: the workload and the run's phases.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum WorldEvent {
    /// The run began.
    RunStarted { scenario: String, seed: u64 },
    /// A topic exists with this many partitions (log start offset 0).
    TopicCreated { topic: String, partitions: i32 },
    /// The producer appended `count` records starting at `base_offset`.
    Produced { partition: TopicPartition, base_offset: i64, count: i64 },
    /// A member process started on a client host.
    MemberStarted { member: String, group: String, host: String },
    /// The scenario asked a member to leave the group gracefully.
    MemberLeaveRequested { member: String },
    /// A member process stopped (after leaving, or at the end of the run).
    MemberStopped { member: String },
    /// A member process exited by itself (its client library crashed, the application raised,
    /// an unexpected exit code): to the group it is a crash, like a SIGKILL. `client_id` names
    /// the incarnation, `status` how it exited, `stderr_tail` the last lines it wrote. A
    /// `MemberStopped` follows.
    MemberExited { member: String, client_id: String, status: String, stderr_tail: String },
    /// The producer stopped; these are the final log end offsets.
    ProducerStopped { log_end_offsets: Vec<(TopicPartition, i64)> },
    /// The safety phase ended: no more membership changes or faults. The group must converge
    /// by `deadline_ms`.
    LivenessPhase { deadline_ms: Millis },
    /// The seed's swarm choice: which fault kinds are enabled and how often.
    SwarmChosen { description: String },
    /// A fault was applied (`applied` is false when its target was not there, e.g. a member
    /// that had already stopped).
    FaultInjected { fault: Fault, applied: bool },
    /// A trigger fired at a protocol event; the fault it fired follows as `FaultInjected`.
    TriggerFired { trigger: String, target: String },
    /// A served cluster's nemesis applied a fault the simulation has no name for (a broker
    /// that answers nothing, a held-back answer, an injected error answer, a forced rebalance,
    /// an expelled member); its effect lasts `duration_ms` (0: instantaneous).
    ServeFault { description: String, duration_ms: Millis },
    /// A fault's effect ended (a partition healed, latency restored, a process restarted).
    FaultHealed { description: String },
    /// A topic gained partitions (new partitions start empty at offset 0).
    PartitionsAdded { topic: String, partitions: i32 },
    /// A broker host crashed: its in-memory state (groups, caches) is gone.
    BrokerCrashed { node: i32 },
    /// The cluster noticed a crashed broker (after the detection delay): it leaves the metadata
    /// and its partitions move to live brokers.
    BrokerFailureDetected { node: i32 },
    /// A crashed broker's host started again, with empty state.
    BrokerRestarted { node: i32 },
    /// Leadership of offsets partition `partition` (the coordinator of its groups) moved from
    /// broker `from` to broker `to`, whose load takes `load_ms`. `reason`: `move` or `failover`.
    CoordinatorMoved {
        partition: i32,
        groups: Vec<String>,
        from: i32,
        to: i32,
        load_ms: Millis,
        reason: String,
    },
    /// Leadership of a topic partition moved (a failover).
    PartitionLeaderMoved { partition: TopicPartition, from: i32, to: i32 },
    /// The liveness rule has held since `since_ms` with every member's faults played out, for
    /// the grace period `grace_ms`: the run ends here, before its deadline.
    LivenessHeld { since_ms: Millis, grace_ms: Millis },
    /// The run ended.
    RunEnded,
}

/// The ordered list of a run's events.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct History {
    events: Vec<Event>,
}

impl History {
    /// An empty history.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends an event.
    pub fn record(&mut self, at_ms: Millis, kind: EventKind) {
        self.events.push(Event { at_ms, kind });
    }

    /// Appends a world event.
    pub fn world(&mut self, at_ms: Millis, event: WorldEvent) {
        self.record(at_ms, EventKind::World(event));
    }

    /// All events in order.
    pub fn events(&self) -> &[Event] {
        &self.events
    }

    /// Number of events.
    pub fn len(&self) -> usize {
        self.events.len()
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// Builds a history from events (used by tests that hand-make histories).
    pub fn from_events(events: Vec<Event>) -> Self {
        Self { events }
    }

    /// One JSON object per line: the canonical serialisation, also what the hash covers.
    pub fn to_jsonl(&self) -> String {
        let mut out = String::new();
        for e in &self.events {
            out.push_str(&serde_json::to_string(e).expect("history events always serialise"));
            out.push('\n');
        }
        out
    }

    /// Reads a history written by [`Self::to_jsonl`] (a simulated run's or a served cluster's);
    /// blank lines are skipped, anything else that is not an event is refused with its line.
    pub fn from_jsonl(text: &str) -> Result<Self, HistoryParseError> {
        let mut events = Vec::new();
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let event = serde_json::from_str(line)
                .map_err(|source| HistoryParseError { line: i + 1, source })?;
            events.push(event);
        }
        Ok(Self { events })
    }

    /// SHA-256 of the canonical serialisation, as hex. Same seed and binary: same hash.
    pub fn hash_hex(&self) -> String {
        let mut hasher = Sha256::new();
        // One buffer for every line: the hash of a long history is a sizeable share of a run.
        let mut line = Vec::new();
        for e in &self.events {
            line.clear();
            serde_json::to_writer(&mut line, e).expect("history events always serialise");
            line.push(b'\n');
            hasher.update(&line);
        }
        hasher.finalize().iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// A history file line that is not a history event.
#[derive(Debug, thiserror::Error)]
#[error("line {line} is not a history event (JSON lines as written by `groupsim run --save` or `serve --history`)")]
pub struct HistoryParseError {
    /// The line, counting from 1.
    pub line: usize,
    /// What the JSON parser said.
    #[source]
    pub source: serde_json::Error,
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "t={}ms ", self.at_ms)?;
        match &self.kind {
            EventKind::Coordinator { broker, event } => write!(f, "broker-{broker}: {event:?}"),
            EventKind::Member { member, event } => write!(f, "{member}: {event:?}"),
            EventKind::World(w) => write!(f, "world: {w:?}"),
        }
    }
}
