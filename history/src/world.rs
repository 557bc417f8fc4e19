//! What the world records: the workload, the run's phases, faults and the cluster's changes.

use groupsim_wire::{Millis, TopicPartition};
use serde::{Deserialize, Serialize};

use crate::fault::{Fault, GroupApi};

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
    /// An admin client process (describing and listing `group`, never joining it) started on a
    /// client host.
    ObserverStarted { observer: String, group: String, host: String },
    /// The scenario asked a member to leave the group gracefully.
    MemberLeaveRequested { member: String },
    /// A member process stopped (after leaving, or at the end of the run).
    MemberStopped { member: String },
    /// A member asked to leave had not exited by the harness's close deadline and was killed:
    /// to the group it is a crash, not a leave. A `MemberStopped` follows.
    CloseTimedOut { member: String },
    /// A member process exited by itself (its client library crashed, the application raised,
    /// an unexpected exit code): to the group it is a crash, like a SIGKILL. `client_id` names
    /// the incarnation, `status` how it exited, `stderr_tail` the last lines it wrote. A
    /// `MemberStopped` follows.
    MemberExited { member: String, client_id: String, status: String, stderr_tail: String },
    /// The producer stopped; these are the final log end offsets.
    ProducerStopped { log_end_offsets: Vec<(TopicPartition, i64)> },
    /// The safety phase ended: no more membership changes or faults. The group must converge
    /// by `deadline_ms`. `stall_ms`: how long after this a live member may go without a
    /// heartbeat (twice: without consuming a partition it owns) — the largest rebalance plus
    /// session timeout of the scenario's members; absent where no such bound is known.
    LivenessPhase {
        deadline_ms: Millis,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stall_ms: Option<Millis>,
    },
    /// The seed's swarm choice: which fault kinds are enabled and how often.
    SwarmChosen { description: String },
    /// A fault was applied (`applied` is false when its target was not there, e.g. a member
    /// that had already stopped).
    FaultInjected { fault: Fault, applied: bool },
    /// A trigger fired at a protocol event; the fault it fired follows as `FaultInjected`.
    TriggerFired { trigger: String, target: String },
    /// A fault in free text, as served histories saved before every mode shared one fault
    /// vocabulary recorded their real-time-only faults. Nothing records it now: it is kept so
    /// those files still read (today such faults are `FaultInjected`).
    ServeFault { description: String, duration_ms: Millis },
    /// A fault's effect ended (a partition healed, latency restored, a process restarted).
    FaultHealed { description: String },
    /// The late-request hazard acted: broker `node` read `member`'s `api` request at
    /// `read_at_ms` and processes it now (the coordinator events it causes follow at this
    /// instant). `member_id` is the id the request carried, when it carries one.
    RequestProcessedLate {
        node: i32,
        member: String,
        api: GroupApi,
        member_id: Option<String>,
        read_at_ms: Millis,
    },
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
