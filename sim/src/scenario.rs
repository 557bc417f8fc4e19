//! What a scenario is: a named recipe that turns a seed into a concrete [`ScenarioSpec`] — the
//! cluster, topics, members with their schedules, the producer, and the phase boundaries — and
//! the member settings and liveness bound every recipe shares. A leaf: the recipes live in
//! [`crate::scenarios`], one file per family, and the world runs the spec.

use groupsim_coordinator::CoordinatorConfig;
use groupsim_member::{ClientProfile, GroupProtocol, MemberConfig};
use groupsim_wire::Millis;
use serde::{Deserialize, Serialize};

use crate::faults::{FaultSchedule, Swarm};
use crate::respec::{RespecError, SpecEdit};

/// The group every scenario member joins.
pub const GROUP_ID: &str = "groupsim";

/// A catalogue entry: a name, what it exercises, and how to build it from a seed.
#[derive(Clone, Copy)]
pub struct Scenario {
    /// Name used on the command line and in test names.
    pub name: &'static str,
    /// One line on what it exercises.
    pub summary: &'static str,
    build: fn(u64) -> ScenarioSpec,
}

impl Scenario {
    /// A catalogue entry.
    pub const fn new(
        name: &'static str,
        summary: &'static str,
        build: fn(u64) -> ScenarioSpec,
    ) -> Self {
        Self { name, summary, build }
    }

    /// The concrete run for `seed`.
    pub fn build(&self, seed: u64) -> ScenarioSpec {
        (self.build)(seed)
    }
}

impl std::fmt::Debug for Scenario {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scenario").field("name", &self.name).finish()
    }
}

/// One member process: where it runs, when it starts and leaves, and how it behaves.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MemberPlan {
    /// Stable name (`m0`, `m1`, …) used in the history; member ids change across joins.
    pub name: String,
    /// Index of the client host it runs on.
    pub host: usize,
    /// When the process starts.
    pub start_ms: Millis,
    /// When it is asked to leave the group gracefully, if ever.
    pub leave_ms: Option<Millis>,
    /// Client configuration.
    pub config: MemberConfig,
    /// Seed for its processing-time generator.
    pub seed: u64,
    /// A member written outside groupsim ([`SansIoMember`](groupsim_member::SansIoMember)) runs
    /// in this process's place, with `config`; None runs the profile's own member. A spec read
    /// back from a file names the kind but cannot build it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plugin: Option<groupsim_member::PluginMember>,
}

/// The producer: appends records to every partition at a steady per-partition rate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProducerPlan {
    /// Records per second per partition, drawn per partition from this inclusive range.
    pub records_per_sec: (u32, u32),
    /// When production stops (so commits can catch up with the log end).
    pub stop_ms: Millis,
    /// Traffic lulls: `[from, to)` windows in which nothing is produced (no backlog after).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lulls: Vec<(Millis, Millis)>,
}

/// How the event world's network and brokers treat connections beyond latency and faults. The
/// default is the plain network every catalogue scenario runs on; a swarm draws the rest.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetworkShape {
    /// At most this many frames of one connection's direction in flight (TCP's window).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_frames: Option<u32>,
    /// Events due at the same instant run in an order drawn from the seed, not in the order
    /// they were queued (turmoil shuffles its hosts each step; madsim draws ties).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub shuffle_ties: bool,
    /// Brokers close a connection idle this long (Kafka's `connections.max.idle.ms`, scaled).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_close_ms: Option<Millis>,
}

impl NetworkShape {
    /// Whether this is the plain network (nothing beyond latency and faults).
    pub fn is_plain(&self) -> bool {
        *self == Self::default()
    }

    /// What differs from the plain network, for the history's opening (`None` when plain).
    pub fn describe(&self) -> Option<String> {
        let mut parts = Vec::new();
        if let Some(w) = self.window_frames {
            parts.push(format!("window of {w} frames"));
        }
        if self.shuffle_ties {
            parts.push("same-instant order drawn".to_string());
        }
        if let Some(ms) = self.idle_close_ms {
            parts.push(format!("brokers close connections idle {ms} ms"));
        }
        (!parts.is_empty()).then(|| parts.join(", "))
    }
}

/// The simulation's usual sizing (docs/worlds.md, "How the simulation is sized"): a 5 ms tick,
/// fine next to 3 s heartbeats and 10 s sessions.
pub const TICK_MS: u64 = 5;
/// Message latency bounds, in milliseconds, for the usual sizing.
pub const LATENCY_MS: (u64, u64) = (1, 15);
/// Kafka's default `offsets.topic.num.partitions`.
pub const OFFSETS_TOPIC_PARTITIONS: i32 = 50;

/// A fully drawn run: everything the world needs, nothing left to chance but the network.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScenarioSpec {
    /// Scenario name.
    pub name: String,
    /// The run seed.
    pub seed: u64,
    /// turmoil tick: network delivery happens at tick boundaries.
    pub tick_ms: u64,
    /// Message latency range, ms.
    pub latency_ms: (u64, u64),
    /// Number of brokers.
    pub brokers: i32,
    /// Partitions of the offsets topic (FindCoordinator's partitionFor).
    pub offsets_topic_partitions: i32,
    /// Coordinator settings (node id is set per broker).
    pub coordinator: CoordinatorConfig,
    /// Topics and partition counts.
    pub topics: Vec<(String, i32)>,
    /// Number of client hosts (several members share one, like consumers on one machine).
    pub client_hosts: usize,
    /// Member processes.
    pub members: Vec<MemberPlan>,
    /// The producer.
    pub producer: ProducerPlan,
    /// When the safety phase ends: no membership change after this.
    pub liveness_start_ms: Millis,
    /// How long the group has to converge after `liveness_start_ms`.
    pub liveness_bound_ms: Millis,
    /// The seed's swarm choice, when the scenario draws faults.
    #[serde(default)]
    pub swarm: Option<Swarm>,
    /// Faults applied during the safety phase.
    #[serde(default)]
    pub faults: FaultSchedule,
    /// The network's shape beyond latency and faults.
    #[serde(default, skip_serializing_if = "NetworkShape::is_plain")]
    pub network: NetworkShape,
    /// The seed of the world's own draws when a spec edit set one ([`SpecEdit::World`]);
    /// otherwise they come from `seed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub world_seed: Option<u64>,
}

impl ScenarioSpec {
    /// The seed of the world's own draws: latencies, same-instant order, production rates,
    /// trigger odds.
    pub fn world_seed(&self) -> u64 {
        self.world_seed.unwrap_or(self.seed)
    }

    /// Applies `edits` (all or none): the choices a schedule file sets beyond its faults.
    pub fn respec(&mut self, edits: &[SpecEdit]) -> Result<(), RespecError> {
        let mut out = self.clone();
        for edit in edits {
            out.apply_edit(edit)?;
        }
        *self = out;
        Ok(())
    }

    fn apply_edit(&mut self, edit: &SpecEdit) -> Result<(), RespecError> {
        let safety_end = self.liveness_start_ms;
        let out_of_range = |why: String| RespecError::OutOfRange { edit: edit.to_string(), why };
        match edit {
            SpecEdit::Start { member, ms } => {
                let m = self.member_mut(member, edit)?;
                let end = m.leave_ms.unwrap_or(safety_end).min(safety_end);
                if *ms >= end {
                    return Err(out_of_range(format!(
                        "a start must come before {end} ms (its leave or the safety phase's end)"
                    )));
                }
                m.start_ms = *ms;
            }
            SpecEdit::Leave { member, ms } => {
                let m = self.member_mut(member, edit)?;
                if m.leave_ms.is_none() {
                    let edit = edit.to_string();
                    return Err(RespecError::NoLeave { edit, member: member.clone() });
                }
                if *ms <= m.start_ms || *ms > safety_end {
                    return Err(out_of_range(format!(
                        "a leave must come after its start ({} ms) and by the safety phase's \
                         end ({safety_end} ms)",
                        m.start_ms
                    )));
                }
                m.leave_ms = Some(*ms);
            }
            SpecEdit::Processing { member, seed } => self.member_mut(member, edit)?.seed = *seed,
            SpecEdit::World { seed } => self.world_seed = Some(*seed),
            SpecEdit::AppendDelay { ms } => self.coordinator.offsets_append_delay_ms = *ms,
        }
        Ok(())
    }

    /// The member `name` an edit names, or the error naming what the run lacks.
    fn member_mut(&mut self, name: &str, edit: &SpecEdit) -> Result<&mut MemberPlan, RespecError> {
        self.members.iter_mut().find(|m| m.name == name).ok_or_else(|| RespecError::UnknownMember {
            edit: edit.to_string(),
            member: name.to_string(),
        })
    }

    /// When the run ends (the liveness deadline).
    pub fn end_ms(&self) -> Millis {
        self.liveness_start_ms + self.liveness_bound_ms
    }

    /// The stall bound of the liveness phase: after the heal, a live member goes without a
    /// heartbeat for at most this long, and without consuming a partition it owns (with
    /// records to consume) for at most twice this long — the largest rebalance timeout plus
    /// session timeout of its members (a rebalance waits up to the one; a session the other).
    pub fn stall_ms(&self) -> Millis {
        let session = |m: &MemberPlan| match m.config.profile.group_protocol() {
            GroupProtocol::Consumer => {
                self.coordinator.consumer_session_timeout_ms.max(0) as Millis
            }
            GroupProtocol::Classic => m.config.session_timeout_ms.max(0) as Millis,
        };
        self.members
            .iter()
            .map(|m| m.config.rebalance_timeout_ms.max(0) as Millis + session(m))
            .max()
            .unwrap_or(0)
    }

    /// How long the group must stay converged in the liveness phase before the run ends early:
    /// long enough for late anomalies to surface — a zombie's session to expire and its next
    /// commit to be sent — so the largest session timeout plus commit interval of any member.
    pub fn liveness_grace_ms(&self) -> Millis {
        self.members
            .iter()
            .map(|m| m.config.session_timeout_ms.max(0) as Millis + m.config.commit_interval_ms)
            .max()
            .unwrap_or(0)
    }
}

/// Member settings shared by every scenario: `profile`'s client defaults (its assignors) with
/// session and rebalance timeouts short enough that a scenario converges in tens of simulated
/// seconds, subscribed to `orders` and `payments`.
pub fn member_config(name: &str, profile: ClientProfile) -> MemberConfig {
    let mut c = MemberConfig::new(GROUP_ID, name, vec!["orders".into(), "payments".into()])
        .with_profile(profile);
    c.session_timeout_ms = 10_000;
    c.rebalance_timeout_ms = 15_000;
    c.heartbeat_interval_ms = 3_000;
    c.request_timeout_ms = 5_000;
    c.commit_interval_ms = 1_000;
    // The leader notices partition-count changes on its periodic metadata refresh.
    c.metadata_max_age_ms = 5_000;
    c
}

/// The liveness bound for members configured like `c`: a rebalance may wait up to the rebalance
/// timeout for members, a dead member's session must expire first, and commits then need a few
/// commit intervals and processing of the backlog.
pub fn liveness_bound(c: &MemberConfig, coordinator: &CoordinatorConfig) -> Millis {
    c.rebalance_timeout_ms as Millis
        + c.session_timeout_ms as Millis
        + coordinator.initial_rebalance_delay_ms as Millis
        + c.metadata_max_age_ms
        + 5 * c.commit_interval_ms
        + LIVENESS_SLACK_MS
}

/// The liveness bound of a group of `members`: the largest of their [`liveness_bound`]s.
pub fn widest_liveness_bound(members: &[MemberPlan], coordinator: &CoordinatorConfig) -> Millis {
    members.iter().map(|m| liveness_bound(&m.config, coordinator)).max().unwrap_or(0)
}

/// Room in every liveness bound for the slowest join backoff (kafka-go's 5 s) or a second,
/// cooperative rebalance.
const LIVENESS_SLACK_MS: Millis = 5_000;
