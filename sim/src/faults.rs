//! The fault vocabulary and fault schedules, one for every mode.
//!
//! A [`FaultSchedule`] is plain data: a list of faults, each applied at an instant (simulated
//! ms, or ms into a real-time run's fault phase). A scenario draws one from the seed (see
//! [`Swarm`]), `groupsim shrink` removes faults from it, and `groupsim run --schedule <file>`
//! replays one exactly, so schedules serialise to JSON. `serve` and `check-client` draw and
//! read schedules of the same [`Fault`]s; each mode applies the variants it can
//! ([`Fault::applies_in`]) and refuses a schedule holding any other
//! ([`FaultSchedule::refuse_unsupported`]).
//!
//! Members are named as the simulation names them (`m0`, `m1`, …). Real clients choose their
//! own client ids, so a real-time schedule may also name a member `#N`: the N-th of the group's
//! members when the fault lands (sorted by member id, counted modulo their number). The history
//! records the member the fault actually struck.

use std::collections::BTreeSet;
use std::fmt;

use groupsim_member::GroupProtocol;
use groupsim_wire::Millis;
use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::respec::SpecEdit;
use crate::triggers::Trigger;

/// The one fault vocabulary is the history's: a schedule's faults are what the history records.
pub use groupsim_history::{Fault, GroupApi, InjectedError};

/// Where a schedule's faults are applied: each mode applies only some variants.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// `groupsim run` and friends: either simulated world.
    Simulated,
    /// `groupsim serve`: the brokers of a served cluster, clients out of reach.
    Serve,
    /// `groupsim check-client`: the served brokers and the member processes it starts.
    CheckClient,
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Mode::Simulated => "a simulated run",
            Mode::Serve => "serve",
            Mode::CheckClient => "check-client",
        })
    }
}

/// What the harness knows of a fault beyond its data: its kind, and where it can be applied.
pub trait FaultRules {
    /// The fault's kind.
    fn kind(&self) -> FaultKind;
    /// Whether `mode` can apply it.
    fn applies_in(&self, mode: Mode) -> bool;
}

impl FaultRules for Fault {
    fn kind(&self) -> FaultKind {
        match self {
            Fault::ConnectionDrop { .. } => FaultKind::ConnectionDrop,
            Fault::NetworkPartition { .. } => FaultKind::NetworkPartition,
            Fault::LatencySpike { .. } => FaultKind::LatencySpike,
            Fault::CoordinatorMove { load_ms, .. } if *load_ms >= SLOW_LOAD_MS => {
                FaultKind::SlowCoordinatorLoad
            }
            Fault::CoordinatorMove { .. } => FaultKind::CoordinatorMove,
            Fault::BrokerCrash { .. } => FaultKind::BrokerCrash,
            Fault::MemberPause { .. } => FaultKind::MemberPause,
            Fault::MemberCrash { .. } => FaultKind::MemberCrash,
            Fault::MemberLeave { .. } => FaultKind::MemberLeave,
            Fault::MemberUpgrade { .. } => FaultKind::MemberUpgrade,
            Fault::StaleAck { .. } => FaultKind::StaleAck,
            Fault::SlowBatch { .. } => FaultKind::SlowBatch,
            Fault::OneWayPartition { .. } => FaultKind::OneWayPartition,
            Fault::FrameLoss { .. } => FaultKind::FrameLoss,
            Fault::SlowRevoke { .. } | Fault::SlowRevokeUntil { .. } => FaultKind::SlowRevoke,
            Fault::PartitionExpansion { .. } => FaultKind::PartitionExpansion,
            Fault::ConnectionReset { .. } | Fault::GroupConnectionReset { .. } => {
                FaultKind::ConnectionReset
            }
            Fault::ResponseDelay { .. } => FaultKind::ResponseDelay,
            Fault::Unresponsive { .. } => FaultKind::Unresponsive,
            Fault::HoldResponse { .. } => FaultKind::HoldResponse,
            Fault::InjectError { .. } => FaultKind::InjectError,
            Fault::ForceRebalance { .. } => FaultKind::ForceRebalance,
            Fault::ExpelMember { .. } => FaultKind::ExpelMember,
            Fault::LateRequest { .. } => FaultKind::LateRequest,
        }
    }

    /// Whether `mode` can apply this fault. The simulation applies its own catalogue; the
    /// real-time modes act at the brokers (and `check-client` on its member processes), so they
    /// cannot partition hosts, slow a host's every message, stretch a client's callbacks or
    /// delay its acks, or restart a real client as another.
    fn applies_in(&self, mode: Mode) -> bool {
        let real_time = matches!(
            self,
            Fault::ConnectionDrop { .. }
                | Fault::CoordinatorMove { .. }
                | Fault::BrokerCrash { .. }
                | Fault::ConnectionReset { .. }
                | Fault::GroupConnectionReset { .. }
                | Fault::ResponseDelay { .. }
                | Fault::Unresponsive { .. }
                | Fault::HoldResponse { .. }
                | Fault::InjectError { .. }
                | Fault::ForceRebalance { .. }
                | Fault::ExpelMember { .. }
        );
        let processes = matches!(
            self,
            Fault::MemberPause { .. }
                | Fault::MemberCrash { .. }
                | Fault::MemberLeave { .. }
                | Fault::PartitionExpansion { .. }
        );
        match mode {
            Mode::Simulated => self.kind().simulated(),
            Mode::Serve => real_time,
            Mode::CheckClient => real_time || processes,
        }
    }
}

/// The text is the history's: a fault prints the same in a schedule and in a trace.
/// A coordinator load at least this long counts as a slow load.
pub const SLOW_LOAD_MS: Millis = 2_000;

/// Kinds of fault, for swarm selection and reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultKind {
    /// See [`Fault::ConnectionDrop`].
    ConnectionDrop,
    /// See [`Fault::NetworkPartition`].
    NetworkPartition,
    /// See [`Fault::LatencySpike`].
    LatencySpike,
    /// See [`Fault::CoordinatorMove`].
    CoordinatorMove,
    /// A coordinator move with a slow load.
    SlowCoordinatorLoad,
    /// See [`Fault::BrokerCrash`].
    BrokerCrash,
    /// See [`Fault::MemberPause`].
    MemberPause,
    /// See [`Fault::MemberCrash`].
    MemberCrash,
    /// See [`Fault::MemberLeave`].
    MemberLeave,
    /// See [`Fault::MemberUpgrade`].
    MemberUpgrade,
    /// See [`Fault::StaleAck`].
    StaleAck,
    /// See [`Fault::SlowBatch`].
    SlowBatch,
    /// See [`Fault::OneWayPartition`].
    OneWayPartition,
    /// See [`Fault::FrameLoss`].
    FrameLoss,
    /// See [`Fault::SlowRevoke`].
    SlowRevoke,
    /// See [`Fault::PartitionExpansion`].
    PartitionExpansion,
    /// See [`Fault::ConnectionReset`] and [`Fault::GroupConnectionReset`].
    ConnectionReset,
    /// See [`Fault::ResponseDelay`].
    ResponseDelay,
    /// See [`Fault::Unresponsive`].
    Unresponsive,
    /// See [`Fault::HoldResponse`].
    HoldResponse,
    /// See [`Fault::InjectError`].
    InjectError,
    /// See [`Fault::ForceRebalance`].
    ForceRebalance,
    /// See [`Fault::ExpelMember`].
    ExpelMember,
    /// See [`Fault::LateRequest`]: a hazard Kafka allows, not a bug.
    LateRequest,
}

impl FaultKind {
    /// Every kind a simulated run draws and applies (the rest are real-time only).
    pub const ALL: [FaultKind; 20] = [
        FaultKind::ConnectionDrop,
        FaultKind::NetworkPartition,
        FaultKind::LatencySpike,
        FaultKind::CoordinatorMove,
        FaultKind::SlowCoordinatorLoad,
        FaultKind::BrokerCrash,
        FaultKind::MemberPause,
        FaultKind::MemberCrash,
        FaultKind::MemberLeave,
        FaultKind::MemberUpgrade,
        FaultKind::StaleAck,
        FaultKind::SlowRevoke,
        FaultKind::PartitionExpansion,
        FaultKind::LateRequest,
        FaultKind::InjectError,
        FaultKind::ForceRebalance,
        FaultKind::SlowBatch,
        FaultKind::OneWayPartition,
        FaultKind::FrameLoss,
        FaultKind::ExpelMember,
    ];

    /// snake_case name.
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::ConnectionDrop => "connection_drop",
            FaultKind::NetworkPartition => "network_partition",
            FaultKind::LatencySpike => "latency_spike",
            FaultKind::CoordinatorMove => "coordinator_move",
            FaultKind::SlowCoordinatorLoad => "slow_coordinator_load",
            FaultKind::BrokerCrash => "broker_crash",
            FaultKind::MemberPause => "member_pause",
            FaultKind::MemberCrash => "member_crash",
            FaultKind::MemberLeave => "member_leave",
            FaultKind::MemberUpgrade => "member_upgrade",
            FaultKind::StaleAck => "stale_ack",
            FaultKind::SlowBatch => "slow_batch",
            FaultKind::OneWayPartition => "one_way_partition",
            FaultKind::FrameLoss => "frame_loss",
            FaultKind::SlowRevoke => "slow_revoke",
            FaultKind::PartitionExpansion => "partition_expansion",
            FaultKind::ConnectionReset => "connection_reset",
            FaultKind::ResponseDelay => "response_delay",
            FaultKind::Unresponsive => "unresponsive",
            FaultKind::HoldResponse => "hold_response",
            FaultKind::InjectError => "inject_error",
            FaultKind::ForceRebalance => "force_rebalance",
            FaultKind::ExpelMember => "expel_member",
            FaultKind::LateRequest => "late_request",
        }
    }

    /// Whether the simulation applies faults of this kind (one of [`Self::ALL`]).
    pub fn simulated(self) -> bool {
        Self::ALL.contains(&self)
    }
}

/// A fault at an instant.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScheduledFault {
    /// When to apply it (simulated ms).
    pub at_ms: Millis,
    /// What to do.
    pub fault: Fault,
}

/// The faults of one run, in time order.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FaultSchedule {
    /// The faults, sorted by time.
    pub faults: Vec<ScheduledFault>,
    /// Faults fired by protocol events rather than at instants (see [`crate::triggers`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub triggers: Vec<Trigger>,
    /// Choices set beyond the faults, in place of the seed's draw (see [`crate::respec`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub spec: Vec<SpecEdit>,
}

impl FaultSchedule {
    /// A schedule from faults in any order (sorted stably by time).
    pub fn new(mut faults: Vec<ScheduledFault>) -> Self {
        faults.sort_by_key(|f| f.at_ms);
        Self { faults, triggers: Vec::new(), spec: Vec::new() }
    }

    /// This schedule's timed faults and `other`'s, in time order (this one's first at equal
    /// instants), with this one's triggers.
    pub fn merged(mut self, other: FaultSchedule) -> Self {
        self.faults.extend(other.faults);
        self.faults.sort_by_key(|f| f.at_ms);
        self
    }

    /// The same schedule with these triggers too.
    pub fn with_triggers(mut self, triggers: Vec<Trigger>) -> Self {
        self.triggers = triggers;
        self
    }

    /// The same schedule with these spec edits.
    pub fn with_spec(mut self, spec: Vec<SpecEdit>) -> Self {
        self.spec = spec;
        self
    }

    /// Whether there are no faults and no triggers.
    pub fn is_empty(&self) -> bool {
        self.faults.is_empty() && self.triggers.is_empty()
    }

    /// Timed faults and triggers: the items shrinking removes, timed faults first.
    pub fn len(&self) -> usize {
        self.faults.len() + self.triggers.len()
    }

    /// The schedule without the items at `removed` (indices as in [`FaultSchedule::len`]: timed
    /// faults, then triggers); its spec edits kept.
    pub fn without(&self, removed: &BTreeSet<usize>) -> Self {
        let n = self.faults.len();
        Self {
            faults: self
                .faults
                .iter()
                .enumerate()
                .filter(|(i, _)| !removed.contains(i))
                .map(|(_, f)| f.clone())
                .collect(),
            triggers: self
                .triggers
                .iter()
                .enumerate()
                .filter(|(i, _)| !removed.contains(&(n + i)))
                .map(|(_, t)| t.clone())
                .collect(),
            spec: self.spec.clone(),
        }
    }

    /// Parses a schedule written by [`FaultSchedule::to_json`], naming the problem on failure.
    pub fn from_json(text: &str) -> Result<Self, ScheduleError> {
        let s: FaultSchedule =
            serde_json::from_str(text).map_err(|e| ScheduleError::Parse(e.to_string()))?;
        for w in s.faults.windows(2) {
            if w[1].at_ms < w[0].at_ms {
                return Err(ScheduleError::Unsorted { at_ms: w[1].at_ms });
            }
        }
        Ok(s)
    }

    /// Parses a schedule file for `mode`: [`Self::from_json`], then
    /// [`Self::refuse_unsupported`].
    pub fn from_json_for(text: &str, mode: Mode) -> Result<Self, ScheduleError> {
        let s = Self::from_json(text)?;
        s.refuse_unsupported(mode)?;
        Ok(s)
    }

    /// Refuses a schedule holding a fault `mode` cannot apply, naming the first such fault, or
    /// spec edits outside a simulated run.
    pub fn refuse_unsupported(&self, mode: Mode) -> Result<(), ScheduleError> {
        if let (false, Some(edit)) = (mode == Mode::Simulated, self.spec.first()) {
            return Err(ScheduleError::SpecEdit { edit: edit.to_string(), mode });
        }
        match self.faults.iter().find(|f| !f.fault.applies_in(mode)) {
            Some(f) => Err(ScheduleError::Unsupported {
                kind: f.fault.kind().name(),
                fault: f.fault.to_string(),
                at_ms: f.at_ms,
                mode,
            }),
            None => Ok(()),
        }
    }

    /// Pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("schedules always serialise")
    }
}

/// A schedule file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ScheduleError {
    /// Not JSON of the schedule's shape.
    #[error("not a fault schedule: {0}")]
    Parse(String),
    /// Faults out of time order.
    #[error("faults are not in time order (the one at {at_ms} ms comes after a later one)")]
    Unsorted { at_ms: Millis },
    /// A fault the mode reading the schedule cannot apply.
    #[error("{mode} cannot apply {kind} faults (at {at_ms} ms: {fault})")]
    Unsupported { kind: &'static str, fault: String, at_ms: Millis, mode: Mode },
    /// A fault aimed at a member process the run does not start.
    #[error("no member {member:?} (at {at_ms} ms): the run starts {members} member processes, m0 to m{}", members.saturating_sub(1))]
    UnknownMember { member: String, at_ms: Millis, members: usize },
    /// A spec edit outside a simulated run (a real-time run draws no spec to edit).
    #[error("{mode} cannot apply spec edits (`{edit}`): only a simulated run draws its spec")]
    SpecEdit { edit: String, mode: Mode },
    /// A trigger on an event the mode does not see, or with an action it cannot take.
    #[error("{mode} cannot fire trigger {trigger:?}")]
    Trigger { trigger: String, mode: Mode },
}

/// One line per fault (`t+   500 ms  pause: m1 for 20000 ms`), then one per trigger.
impl fmt::Display for FaultSchedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for t in &self.faults {
            writeln!(f, "  t+{:>6} ms  {}", t.at_ms, t.fault)?;
        }
        for t in &self.triggers {
            writeln!(f, "  trigger {t}")?;
        }
        for e in &self.spec {
            writeln!(f, "  spec: {e}")?;
        }
        Ok(())
    }
}

/// The swarm choice of one seed: which fault kinds are enabled and how often each strikes
/// (FoundationDB's swarm testing / TigerBeetle's VOPR: different seeds explore different fault
/// mixes instead of every seed getting a little of everything).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Swarm {
    /// Enabled kinds with their mean interval between faults (ms).
    pub enabled: Vec<(FaultKind, Millis)>,
}

impl Swarm {
    /// Draws a swarm from `available` kinds: each kind is enabled with probability 1/2 (at least
    /// one always is), with a mean interval between `min_interval` and 4x that.
    pub fn draw(rng: &mut ChaCha8Rng, available: &[FaultKind], min_interval: Millis) -> Self {
        let mut enabled: Vec<(FaultKind, Millis)> = Vec::new();
        for &k in available {
            let on = rng.random_bool(0.5);
            let interval = rng.random_range(min_interval..=min_interval * 4);
            if on {
                enabled.push((k, interval));
            }
        }
        if enabled.is_empty() && !available.is_empty() {
            let k = available[rng.random_range(0..available.len())];
            enabled.push((k, min_interval));
        }
        Self { enabled }
    }

    /// One line: `connection_drop/12s member_pause/20s`.
    pub fn describe(&self) -> String {
        if self.enabled.is_empty() {
            return "no faults".into();
        }
        self.enabled
            .iter()
            .map(|(k, i)| format!("{}/{}s", k.name(), i / 1_000))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// The APIs a classic group's members send, in draw order.
pub const CLASSIC_APIS: [GroupApi; 5] = [
    GroupApi::JoinGroup,
    GroupApi::SyncGroup,
    GroupApi::Heartbeat,
    GroupApi::OffsetCommit,
    GroupApi::OffsetFetch,
];

/// The APIs a consumer group's (KIP-848) members send, in draw order.
pub const CONSUMER_APIS: [GroupApi; 3] =
    [GroupApi::ConsumerGroupHeartbeat, GroupApi::OffsetCommit, GroupApi::OffsetFetch];

/// The APIs a schedule for `protocol`'s members draws from.
pub fn drawn_apis(protocol: GroupProtocol) -> &'static [GroupApi] {
    match protocol {
        GroupProtocol::Classic => &CLASSIC_APIS,
        GroupProtocol::Consumer => &CONSUMER_APIS,
    }
}

/// The error answers Kafka itself gives on `api` to `protocol`'s members (so a client must
/// handle them). While a group loads Kafka answers a Heartbeat with no error and a SyncGroup
/// with REBALANCE_IN_PROGRESS, never COORDINATOR_LOAD_IN_PROGRESS, so neither gets that one.
/// Kafka 4's group coordinator maps a timed-out write to COORDINATOR_NOT_AVAILABLE and never
/// tells a consumer-protocol member REBALANCE_IN_PROGRESS, so a consumer group's commits and
/// heartbeats get the three coordinator errors only.
pub fn kafka_errors(api: GroupApi, protocol: GroupProtocol) -> &'static [InjectedError] {
    use InjectedError::*;
    const COORDINATOR: &[InjectedError] =
        &[NotCoordinator, CoordinatorLoadInProgress, CoordinatorNotAvailable];
    if protocol == GroupProtocol::Consumer {
        return COORDINATOR;
    }
    match api {
        GroupApi::OffsetCommit => &[
            NotCoordinator,
            CoordinatorLoadInProgress,
            CoordinatorNotAvailable,
            RebalanceInProgress,
            RequestTimedOut,
        ],
        GroupApi::Heartbeat | GroupApi::SyncGroup => {
            &[NotCoordinator, CoordinatorNotAvailable, RebalanceInProgress]
        }
        GroupApi::JoinGroup | GroupApi::OffsetFetch | GroupApi::ConsumerGroupHeartbeat => {
            COORDINATOR
        }
    }
}

/// The group API a request is, if any.
pub fn group_api(request: &kafka_protocol::messages::RequestKind) -> Option<GroupApi> {
    use kafka_protocol::messages::RequestKind;
    Some(match request {
        RequestKind::JoinGroup(_) => GroupApi::JoinGroup,
        RequestKind::SyncGroup(_) => GroupApi::SyncGroup,
        RequestKind::Heartbeat(_) => GroupApi::Heartbeat,
        RequestKind::OffsetCommit(_) => GroupApi::OffsetCommit,
        RequestKind::OffsetFetch(_) => GroupApi::OffsetFetch,
        RequestKind::ConsumerGroupHeartbeat(_) => GroupApi::ConsumerGroupHeartbeat,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedules_round_trip_through_json() {
        let s = FaultSchedule::new(vec![
            ScheduledFault {
                at_ms: 500,
                fault: Fault::MemberPause { member: "m1".into(), duration_ms: 20_000 },
            },
            ScheduledFault { at_ms: 100, fault: Fault::ConnectionDrop { member: "m0".into() } },
        ]);
        assert_eq!(s.faults[0].at_ms, 100, "sorted by time");
        assert_eq!(FaultSchedule::from_json(&s.to_json()).unwrap(), s);
    }

    #[test]
    fn bad_schedule_files_are_named_errors() {
        assert!(matches!(FaultSchedule::from_json("{"), Err(ScheduleError::Parse(_))));
        let unsorted = r#"{"faults":[{"at_ms":5,"fault":{"kind":"connection_drop","member":"m0"}},
                                     {"at_ms":1,"fault":{"kind":"connection_drop","member":"m0"}}]}"#;
        assert!(matches!(
            FaultSchedule::from_json(unsorted),
            Err(ScheduleError::Unsorted { at_ms: 1 })
        ));
        let bad_kind = r#"{"faults":[{"at_ms":5,"fault":{"kind":"meteor","member":"m0"}}]}"#;
        let err = FaultSchedule::from_json(bad_kind).unwrap_err().to_string();
        assert!(err.contains("meteor"), "{err}");
    }

    #[test]
    fn a_fault_a_mode_cannot_apply_is_refused_by_name() {
        let text = r#"{"faults":[
            {"at_ms":5,"fault":{"kind":"connection_drop","member":"m0"}},
            {"at_ms":9,"fault":{"kind":"slow_revoke","member":"m1","extra_ms":700}}]}"#;
        let s = FaultSchedule::from_json(text).unwrap();
        assert!(s.refuse_unsupported(Mode::Simulated).is_ok());
        for mode in [Mode::Serve, Mode::CheckClient] {
            let err = s.refuse_unsupported(mode).unwrap_err().to_string();
            assert!(err.contains("cannot apply slow_revoke faults"), "{err}");
            assert!(err.contains("at 9 ms") && err.contains(&mode.to_string()), "{err}");
        }
        let served = r#"{"faults":[{"at_ms":5,"fault":{"kind":"unresponsive","broker":1,
            "duration_ms":3000}}]}"#;
        let s = FaultSchedule::from_json(served).unwrap();
        assert!(s.refuse_unsupported(Mode::Serve).is_ok());
        let err = s.refuse_unsupported(Mode::Simulated).unwrap_err().to_string();
        assert!(err.contains("a simulated run cannot apply unresponsive faults"), "{err}");
        let pause = Fault::MemberPause { member: "m0".into(), duration_ms: 1 };
        assert!(pause.applies_in(Mode::CheckClient) && !pause.applies_in(Mode::Serve));
    }

    #[test]
    fn without_removes_exactly_the_named_faults() {
        let s = FaultSchedule::new(
            (0..4)
                .map(|i| ScheduledFault {
                    at_ms: i,
                    fault: Fault::ConnectionDrop { member: format!("m{i}") },
                })
                .collect(),
        );
        let t = s.without(&[1, 3].into_iter().collect());
        assert_eq!(t.faults.iter().map(|f| f.at_ms).collect::<Vec<_>>(), vec![0, 2]);
    }

    #[test]
    fn swarm_enables_at_least_one_kind_and_is_seeded() {
        use rand::SeedableRng;
        for seed in 0..20 {
            let a = Swarm::draw(&mut ChaCha8Rng::seed_from_u64(seed), &FaultKind::ALL, 5_000);
            let b = Swarm::draw(&mut ChaCha8Rng::seed_from_u64(seed), &FaultKind::ALL, 5_000);
            assert_eq!(a, b);
            assert!(!a.enabled.is_empty());
        }
    }
}
