//! Scenarios: a named recipe that turns a seed into a concrete [`ScenarioSpec`] — the cluster,
//! topics, members with their schedules, the producer, and the phase boundaries.

use groupsim_coordinator::CoordinatorConfig;
use groupsim_member::{AssignorKind, MemberConfig};
use groupsim_wire::Millis;
use rand::RngExt;
use serde::{Deserialize, Serialize};

use std::collections::BTreeMap;

use rand_chacha::ChaCha8Rng;

use crate::faults::{Fault, FaultKind, FaultSchedule, ScheduledFault, Swarm};
use crate::rng::{self, Stream};

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
    /// A catalogue entry built elsewhere (e.g. `scenarios_profiles`).
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

/// A scenario name that is not in the catalogue.
#[derive(Debug, thiserror::Error)]
#[error("unknown scenario {name:?}; known scenarios: {known}")]
pub struct UnknownScenario {
    /// What was asked for.
    pub name: String,
    /// The catalogue's names, comma-separated.
    pub known: String,
}

/// Every scenario groupsim ships.
pub fn catalogue() -> Vec<Scenario> {
    let mut all = vec![
        Scenario {
            name: "membership_churn",
            summary: "members join and leave over time (3 -> 6 -> 2) on 2 topics / 12 partitions; \
                      eager rebalances with commits on revoke",
            build: membership_churn,
        },
        Scenario {
            name: "coordinator_moves",
            summary: "membership_churn on 3 brokers while the group's coordinator moves every \
                      3-9 s (a third of the loads slow) and brokers crash and restart",
            build: coordinator_moves,
        },
        Scenario {
            name: "swarm",
            summary: "every fault kind available to a seeded swarm (drops, partitions, latency, \
                      pauses, crashes, leaves, stale acks, slow revokes, expansion), then liveness",
            build: swarm,
        },
    ];
    all.extend(crate::catalogue::scenarios());
    all.extend(crate::scenarios_profiles::scenarios());
    all
}

/// Looks a scenario up by name.
pub fn find(name: &str) -> Result<Scenario, UnknownScenario> {
    let all = catalogue();
    all.iter().find(|s| s.name == name).copied().ok_or_else(|| UnknownScenario {
        name: name.to_string(),
        known: all.iter().map(|s| s.name).collect::<Vec<_>>().join(", "),
    })
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
}

/// The producer: appends records to every partition at a steady per-partition rate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProducerPlan {
    /// Records per second per partition, drawn per partition from this inclusive range.
    pub records_per_sec: (u32, u32),
    /// When production stops (so commits can catch up with the log end).
    pub stop_ms: Millis,
}

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
}

impl ScenarioSpec {
    /// When the run ends (the liveness deadline).
    pub fn end_ms(&self) -> Millis {
        self.liveness_start_ms + self.liveness_bound_ms
    }
}

/// Member settings shared by the catalogue: Java-like defaults with session and rebalance
/// timeouts short enough that a scenario converges in tens of simulated seconds.
pub fn member_config(name: &str) -> MemberConfig {
    let mut c = MemberConfig::new(GROUP_ID, name, vec!["orders".into(), "payments".into()]);
    c.session_timeout_ms = 10_000;
    c.rebalance_timeout_ms = 15_000;
    c.heartbeat_interval_ms = 3_000;
    c.request_timeout_ms = 5_000;
    c.commit_interval_ms = 1_000;
    // The leader notices partition-count changes on its periodic metadata refresh.
    c.metadata_max_age_ms = 5_000;
    c.assignors = vec![AssignorKind::Range, AssignorKind::RoundRobin];
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

/// Room in every liveness bound for the slowest join backoff (kafka-go's 5 s) or a second,
/// cooperative rebalance.
const LIVENESS_SLACK_MS: Millis = 5_000;

/// Members join and leave over time: three start together, three more join one by one, then
/// four leave one by one, leaving two. Exercises eager rebalances triggered by joins and by
/// LeaveGroup, commits on revoke, and resumption from committed offsets by new owners.
fn membership_churn(seed: u64) -> ScenarioSpec {
    churn_spec("membership_churn", seed, |_, name| member_config(name))
}

/// `membership_churn`'s shape: three members start together, three join one by one, four leave
/// one by one; member `i` is configured by `config(i, name)`.
pub fn churn_spec(
    name: &str,
    seed: u64,
    config: impl Fn(usize, &str) -> MemberConfig,
) -> ScenarioSpec {
    let mut rng = rng::stream(seed, Stream::Workload);
    let coordinator = CoordinatorConfig { initial_rebalance_delay_ms: 1_000, ..Default::default() };
    let mut members = Vec::new();
    for i in 0..6u32 {
        let member = format!("m{i}");
        let start_ms =
            if i < 3 { rng.random_range(0..500) } else { rng.random_range(8_000..25_000) };
        members.push(MemberPlan {
            host: i as usize % 2,
            start_ms,
            leave_ms: None,
            config: config(i as usize, &member),
            seed: rng::sub_seed(seed, Stream::Member(i)),
            name: member,
        });
    }
    let mut order: Vec<usize> = (0..6).collect();
    for i in (1..order.len()).rev() {
        let j = rng.random_range(0..=i);
        order.swap(i, j);
    }
    let mut last_change = 0;
    for (k, &i) in order.iter().take(4).enumerate() {
        let at = 32_000 + k as Millis * 6_000 + rng.random_range(0..4_000);
        members[i].leave_ms = Some(at);
        last_change = last_change.max(at);
    }
    let liveness_start_ms = last_change.max(60_000);
    let liveness_bound_ms =
        members.iter().map(|m| liveness_bound(&m.config, &coordinator)).max().unwrap_or(0);
    ScenarioSpec {
        name: name.into(),
        seed,
        tick_ms: 5,
        latency_ms: (1, 15),
        brokers: 1,
        offsets_topic_partitions: 50,
        coordinator,
        topics: vec![("orders".into(), 8), ("payments".into(), 4)],
        client_hosts: 2,
        members,
        producer: ProducerPlan { records_per_sec: (2, 20), stop_ms: liveness_start_ms },
        liveness_start_ms,
        liveness_bound_ms,
        swarm: None,
        faults: FaultSchedule::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn membership_churn_goes_three_to_six_to_two() {
        for seed in 0..50 {
            let s = membership_churn(seed);
            let live_at = |t: Millis| {
                s.members
                    .iter()
                    .filter(|m| m.start_ms <= t && m.leave_ms.is_none_or(|l| l > t))
                    .count()
            };
            assert_eq!(live_at(1_000), 3, "seed {seed}");
            assert_eq!(live_at(30_000), 6, "seed {seed}");
            assert_eq!(live_at(s.liveness_start_ms), 2, "seed {seed}");
            assert_eq!(s.topics.iter().map(|t| t.1).sum::<i32>(), 12);
        }
    }

    #[test]
    fn same_seed_same_spec_and_different_seeds_differ() {
        assert_eq!(membership_churn(7), membership_churn(7));
        assert_ne!(membership_churn(7), membership_churn(8));
    }

    #[test]
    fn unknown_scenario_names_the_known_ones() {
        let err = find("nope").unwrap_err().to_string();
        assert!(err.contains("membership_churn"), "{err}");
    }
}

/// Fault kinds the `swarm` scenario may enable.
pub const SWARM_KINDS: &[FaultKind] = &[
    FaultKind::ConnectionDrop,
    FaultKind::CoordinatorMove,
    FaultKind::SlowCoordinatorLoad,
    FaultKind::BrokerCrash,
    FaultKind::NetworkPartition,
    FaultKind::LatencySpike,
    FaultKind::MemberPause,
    FaultKind::MemberCrash,
    FaultKind::MemberLeave,
    FaultKind::StaleAck,
    FaultKind::SlowRevoke,
    FaultKind::PartitionExpansion,
];

/// The membership_churn workload on three brokers while the coordinator keeps moving: a
/// coordinator move every 3–9 s (a third of them slow loads of 2–6 s, the rest 0–500 ms) to a
/// drawn broker, and a broker crash every 10–20 s (restarted 3–12 s later), from 4 s until two
/// seconds before the liveness phase. Exercises unloading (parked joins and syncs get
/// NOT_COORDINATOR), loading from the offsets log (COORDINATOR_LOAD_IN_PROGRESS meanwhile),
/// failover after a crash, and commits staying durable across all of it (helper D).
fn coordinator_moves(seed: u64) -> ScenarioSpec {
    let mut spec = membership_churn(seed);
    spec.name = "coordinator_moves".into();
    spec.brokers = 3;
    let mut rng = rng::stream(seed, Stream::Faults);
    let end = spec.liveness_start_ms - 2_000;
    let mut faults = Vec::new();
    let mut at: Millis = rng.random_range(4_000..=7_000);
    while at < end {
        let to = rng.random_range(0..spec.brokers);
        let load_ms = if rng.random_range(0..3) == 0 {
            rng.random_range(2_000..=6_000)
        } else {
            rng.random_range(0..=500)
        };
        faults.push(ScheduledFault {
            at_ms: at,
            fault: Fault::CoordinatorMove { group: GROUP_ID.into(), to, load_ms },
        });
        at += rng.random_range(3_000..=9_000);
    }
    let mut at: Millis = rng.random_range(6_000..=12_000);
    while at < end {
        let node = rng.random_range(0..spec.brokers);
        let restart_after_ms = rng.random_range(3_000..=12_000).min(end - at);
        faults.push(ScheduledFault {
            at_ms: at,
            fault: Fault::BrokerCrash { node, restart_after_ms },
        });
        at += rng.random_range(10_000..=20_000);
    }
    spec.faults = FaultSchedule::new(faults);
    spec
}

/// Every fault kind available to a seeded swarm: the seed picks which kinds are on and how often
/// they strike during a 60 s safety phase; then faults stop, everything heals, and the group must
/// converge. Six members on three client hosts, three brokers.
fn swarm(seed: u64) -> ScenarioSpec {
    let mut rng = rng::stream(seed, Stream::Workload);
    // Offsets-log replication takes a few to tens of milliseconds, as an ISR round trip does.
    let coordinator = CoordinatorConfig {
        initial_rebalance_delay_ms: 1_000,
        offsets_append_delay_ms: rng.random_range(5..=50),
        ..Default::default()
    };
    let brokers = 3;
    let client_hosts = 3;
    let members: Vec<MemberPlan> = (0..6u32)
        .map(|i| {
            let name = format!("m{i}");
            MemberPlan {
                host: i as usize % client_hosts,
                start_ms: rng.random_range(0..3_000),
                leave_ms: None,
                config: member_config(&name),
                seed: rng::sub_seed(seed, Stream::Member(i)),
                name,
            }
        })
        .collect();
    let topics = vec![("orders".to_string(), 8), ("payments".to_string(), 4)];
    let safety_end: Millis = 60_000;
    let mut frng = rng::stream(seed, Stream::Faults);
    let swarm = Swarm::draw(&mut frng, SWARM_KINDS, 6_000);
    let ctx = FaultContext {
        members: members.iter().map(|m| m.name.clone()).collect(),
        brokers: (0..brokers).map(crate::host::broker_host).collect(),
        client_hosts: (0..client_hosts).map(crate::host::client_host).collect(),
        broker_ids: (0..brokers).collect(),
        topics: topics.clone(),
        group: GROUP_ID.to_string(),
        start_ms: 4_000,
        end_ms: safety_end - 2_000,
    };
    let faults = draw_schedule(&mut frng, &swarm, &ctx);
    let liveness_bound_ms = 2 * liveness_bound(&members[0].config, &coordinator);
    ScenarioSpec {
        name: "swarm".into(),
        seed,
        tick_ms: 5,
        latency_ms: (1, 15),
        brokers,
        offsets_topic_partitions: 50,
        coordinator,
        topics,
        client_hosts,
        members,
        producer: ProducerPlan { records_per_sec: (2, 20), stop_ms: safety_end },
        liveness_start_ms: safety_end,
        liveness_bound_ms,
        swarm: Some(swarm),
        faults,
    }
}

/// What a fault schedule can target.
#[derive(Clone, Debug)]
pub struct FaultContext {
    /// Member names.
    pub members: Vec<String>,
    /// Broker host names.
    pub brokers: Vec<String>,
    /// Client host names.
    pub client_hosts: Vec<String>,
    /// Broker node ids.
    pub broker_ids: Vec<i32>,
    /// Topics and their initial partition counts.
    pub topics: Vec<(String, i32)>,
    /// The group.
    pub group: String,
    /// Earliest fault time.
    pub start_ms: Millis,
    /// Every fault's effect ends by this time.
    pub end_ms: Millis,
}

/// Draws a fault schedule for `swarm`: for each enabled kind, faults at gaps of half to one and a
/// half times its mean interval, each fault's effect ending by `ctx.end_ms`.
pub fn draw_schedule(rng: &mut ChaCha8Rng, swarm: &Swarm, ctx: &FaultContext) -> FaultSchedule {
    let mut faults = Vec::new();
    let mut partitions: BTreeMap<String, i32> = ctx.topics.iter().cloned().collect();
    for &(kind, interval) in &swarm.enabled {
        let mut at = ctx.start_ms + rng.random_range(0..interval);
        while at < ctx.end_ms {
            let room = ctx.end_ms - at;
            let pick =
                |rng: &mut ChaCha8Rng, xs: &[String]| xs[rng.random_range(0..xs.len())].clone();
            let dur =
                |rng: &mut ChaCha8Rng, lo: Millis, hi: Millis| rng.random_range(lo..=hi).min(room);
            let fault = match kind {
                FaultKind::ConnectionDrop => {
                    Some(Fault::ConnectionDrop { member: pick(rng, &ctx.members) })
                }
                FaultKind::NetworkPartition => {
                    // Either a client host loses every broker, or a broker loses every peer.
                    let (host, peers) = if rng.random_bool(0.5) {
                        (pick(rng, &ctx.client_hosts), ctx.brokers.clone())
                    } else {
                        let b = pick(rng, &ctx.brokers);
                        let peers = ctx
                            .brokers
                            .iter()
                            .chain(&ctx.client_hosts)
                            .filter(|h| **h != b)
                            .cloned()
                            .collect();
                        (b, peers)
                    };
                    Some(Fault::NetworkPartition {
                        host,
                        peers,
                        heal_after_ms: dur(rng, 2_000, 15_000),
                    })
                }
                FaultKind::LatencySpike => {
                    let hosts: Vec<String> =
                        ctx.brokers.iter().chain(&ctx.client_hosts).cloned().collect();
                    Some(Fault::LatencySpike {
                        host: pick(rng, &hosts),
                        max_latency_ms: rng.random_range(100..=2_000),
                        duration_ms: dur(rng, 2_000, 10_000),
                    })
                }
                FaultKind::CoordinatorMove | FaultKind::SlowCoordinatorLoad => {
                    let load_ms = if kind == FaultKind::SlowCoordinatorLoad {
                        rng.random_range(crate::faults::SLOW_LOAD_MS..=8_000)
                    } else {
                        rng.random_range(0..=500)
                    };
                    let to = ctx.broker_ids[rng.random_range(0..ctx.broker_ids.len())];
                    Some(Fault::CoordinatorMove { group: ctx.group.clone(), to, load_ms })
                }
                FaultKind::BrokerCrash => {
                    let node = ctx.broker_ids[rng.random_range(0..ctx.broker_ids.len())];
                    Some(Fault::BrokerCrash { node, restart_after_ms: dur(rng, 3_000, 15_000) })
                }
                FaultKind::MemberPause => Some(Fault::MemberPause {
                    member: pick(rng, &ctx.members),
                    duration_ms: dur(rng, 2_000, 25_000),
                }),
                FaultKind::MemberCrash => Some(Fault::MemberCrash {
                    member: pick(rng, &ctx.members),
                    restart_after_ms: dur(rng, 1_000, 10_000),
                }),
                FaultKind::MemberLeave => Some(Fault::MemberLeave {
                    member: pick(rng, &ctx.members),
                    restart_after_ms: dur(rng, 1_000, 10_000),
                }),
                // Upgrades are planned by the rolling-upgrade scenario, not drawn.
                FaultKind::MemberUpgrade => None,
                FaultKind::StaleAck => Some(Fault::StaleAck {
                    member: pick(rng, &ctx.members),
                    delay_ms: dur(rng, 5_000, 30_000),
                }),
                FaultKind::SlowRevoke => Some(Fault::SlowRevoke {
                    member: pick(rng, &ctx.members),
                    extra_ms: dur(rng, 5_000, 25_000),
                }),
                FaultKind::PartitionExpansion => {
                    let (topic, n) = {
                        let names: Vec<String> = partitions.keys().cloned().collect();
                        let t = pick(rng, &names);
                        let n = partitions[&t];
                        (t, n)
                    };
                    if n >= 16 {
                        None
                    } else {
                        let grown = n + rng.random_range(1..=4);
                        partitions.insert(topic.clone(), grown);
                        Some(Fault::PartitionExpansion { topic, partitions: grown })
                    }
                }
            };
            if let Some(fault) = fault {
                faults.push(ScheduledFault { at_ms: at, fault });
            }
            at += rng.random_range(interval / 2..=interval * 3 / 2).max(1);
        }
    }
    FaultSchedule::new(faults)
}
