//! The fault catalogue and fault schedules.
//!
//! A [`FaultSchedule`] is plain data: a list of faults, each applied at a simulated instant. A
//! scenario draws one from the seed (see [`Swarm`]), `groupsim shrink` removes faults from it,
//! and `groupsim run --schedule <file>` replays one exactly, so schedules serialise to JSON.

use std::collections::BTreeSet;
use std::fmt;

use groupsim_member::{AssignorKind, ClientProfile};
use groupsim_wire::Millis;
use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::triggers::Trigger;

/// One fault, acting on a connection, a member, a host or the cluster.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Fault {
    /// Every connection of one member is reset (the member sees its requests fail).
    ConnectionDrop { member: String },
    /// A host is cut off from some peers (segments lost), healed after a while.
    NetworkPartition { host: String, peers: Vec<String>, heal_after_ms: Millis },
    /// Messages between a host and every peer take up to `max_latency_ms` for a while
    /// (reordering across connections follows).
    LatencySpike { host: String, max_latency_ms: Millis, duration_ms: Millis },
    /// Leadership of the group's offsets partition moves to broker `to`, whose load takes
    /// `load_ms` (slow coordinator load when large).
    CoordinatorMove { group: String, to: i32, load_ms: Millis },
    /// A broker crashes (its in-memory state is lost) and restarts after a while.
    BrokerCrash { node: i32, restart_after_ms: Millis },
    /// A stop-the-world pause of one member: it handles nothing for `duration_ms`, then resumes
    /// believing it still owns its partitions (a zombie, when longer than the session timeout).
    MemberPause { member: String, duration_ms: Millis },
    /// A member process crashes (uncommitted progress lost) and restarts as a new member.
    MemberCrash { member: String, restart_after_ms: Millis },
    /// A member leaves the group gracefully (LeaveGroup) and restarts after a while.
    MemberLeave { member: String, restart_after_ms: Millis },
    /// A rolling-upgrade step: the member leaves gracefully and restarts after a while with a new
    /// client profile and assignor list (e.g. eager `range` to `cooperative-sticky`).
    MemberUpgrade {
        member: String,
        restart_after_ms: Millis,
        profile: ClientProfile,
        assignors: Vec<AssignorKind>,
    },
    /// Processing in progress at a member finishes `delay_ms` late, after the rebalance that took
    /// the partition away: its ack arrives carrying the old generation.
    StaleAck { member: String, delay_ms: Millis },
    /// A member's next revoke callback takes `extra_ms` longer.
    SlowRevoke { member: String, extra_ms: Millis },
    /// A member's revoke callback under way, or else its next one, does not return before
    /// `until_ms`. Triggers aim it at the end of the group's join phase.
    SlowRevokeUntil { member: String, until_ms: Millis },
    /// A topic gains partitions.
    PartitionExpansion { topic: String, partitions: i32 },
}

impl Fault {
    /// The fault's kind.
    pub fn kind(&self) -> FaultKind {
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
            Fault::SlowRevoke { .. } | Fault::SlowRevokeUntil { .. } => FaultKind::SlowRevoke,
            Fault::PartitionExpansion { .. } => FaultKind::PartitionExpansion,
        }
    }
}

/// The text is the history's: a fault prints the same in a schedule and in a trace.
impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&groupsim_history::Fault::from(self), f)
    }
}

/// A fault as the history records it (`FaultInjected`).
impl From<Fault> for groupsim_history::Fault {
    fn from(fault: Fault) -> Self {
        use groupsim_history::Fault as H;
        match fault {
            Fault::ConnectionDrop { member } => H::ConnectionDrop { member },
            Fault::NetworkPartition { host, peers, heal_after_ms } => {
                H::NetworkPartition { host, peers, heal_after_ms }
            }
            Fault::LatencySpike { host, max_latency_ms, duration_ms } => {
                H::LatencySpike { host, max_latency_ms, duration_ms }
            }
            Fault::CoordinatorMove { group, to, load_ms } => {
                H::CoordinatorMove { group, to, load_ms }
            }
            Fault::BrokerCrash { node, restart_after_ms } => {
                H::BrokerCrash { node, restart_after_ms }
            }
            Fault::MemberPause { member, duration_ms } => H::MemberPause { member, duration_ms },
            Fault::MemberCrash { member, restart_after_ms } => {
                H::MemberCrash { member, restart_after_ms }
            }
            Fault::MemberLeave { member, restart_after_ms } => {
                H::MemberLeave { member, restart_after_ms }
            }
            Fault::MemberUpgrade { member, restart_after_ms, profile, assignors } => {
                H::MemberUpgrade {
                    member,
                    restart_after_ms,
                    profile: recorded_profile(profile),
                    assignors: assignors.into_iter().map(recorded_assignor).collect(),
                }
            }
            Fault::StaleAck { member, delay_ms } => H::StaleAck { member, delay_ms },
            Fault::SlowRevoke { member, extra_ms } => H::SlowRevoke { member, extra_ms },
            Fault::SlowRevokeUntil { member, until_ms } => H::SlowRevokeUntil { member, until_ms },
            Fault::PartitionExpansion { topic, partitions } => {
                H::PartitionExpansion { topic, partitions }
            }
        }
    }
}

impl From<&Fault> for groupsim_history::Fault {
    fn from(fault: &Fault) -> Self {
        Self::from(fault.clone())
    }
}

fn recorded_profile(profile: ClientProfile) -> groupsim_history::ClientProfile {
    use groupsim_history::ClientProfile as H;
    match profile {
        ClientProfile::JavaEager => H::JavaEager,
        ClientProfile::JavaCooperative => H::JavaCooperative,
        ClientProfile::Brod => H::Brod,
        ClientProfile::Elsa => H::Elsa,
        ClientProfile::KafkaGo => H::KafkaGo,
        ClientProfile::JavaConsumer => H::JavaConsumer,
        ClientProfile::LibrdkafkaConsumer => H::LibrdkafkaConsumer,
    }
}

fn recorded_assignor(assignor: AssignorKind) -> groupsim_history::AssignorKind {
    use groupsim_history::AssignorKind as H;
    match assignor {
        AssignorKind::Range => H::Range,
        AssignorKind::RoundRobin => H::RoundRobin,
        AssignorKind::Sticky => H::Sticky,
        AssignorKind::CooperativeSticky => H::CooperativeSticky,
        AssignorKind::RoundRobinV2 => H::RoundRobinV2,
    }
}

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
    /// See [`Fault::SlowRevoke`].
    SlowRevoke,
    /// See [`Fault::PartitionExpansion`].
    PartitionExpansion,
}

impl FaultKind {
    /// Every kind.
    pub const ALL: [FaultKind; 13] = [
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
            FaultKind::SlowRevoke => "slow_revoke",
            FaultKind::PartitionExpansion => "partition_expansion",
        }
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
}

impl FaultSchedule {
    /// A schedule from faults in any order (sorted stably by time).
    pub fn new(mut faults: Vec<ScheduledFault>) -> Self {
        faults.sort_by_key(|f| f.at_ms);
        Self { faults, triggers: Vec::new() }
    }

    /// The same schedule with these triggers too.
    pub fn with_triggers(mut self, triggers: Vec<Trigger>) -> Self {
        self.triggers = triggers;
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
    /// faults, then triggers).
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
