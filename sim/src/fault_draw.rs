//! The swarm's draw of a fault schedule: every allowed fault kind at drawn instants, aimed at
//! what a run has (its members, brokers, hosts, topics and group). Shared by the catalogue's
//! swarms and by recipes, which must not depend on the catalogue.

use std::collections::BTreeMap;

use groupsim_member::GroupProtocol;
use groupsim_wire::Millis;
use rand::RngExt;
use rand_chacha::ChaCha8Rng;

use crate::faults::{Fault, FaultKind, FaultSchedule, ScheduledFault, Swarm};

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
    /// The protocol the group's members speak: which APIs and errors BUGGIFY aims at.
    pub protocol: GroupProtocol,
}

/// The timeouts that decide what a pause does to a member.
#[derive(Clone, Copy, Debug)]
pub struct PauseTiming {
    /// Its heartbeat interval: a shorter pause goes unnoticed.
    pub heartbeat_ms: Millis,
    /// Its session timeout: a shorter pause is survived (the group may have moved on).
    pub session_ms: Millis,
}

/// Pauses across the whole range of lengths, a few per seed: a burst of GC-like pauses shorter
/// than a heartbeat interval, a pause past the heartbeat interval but inside the session (the
/// member comes back to a group that may have moved on: ILLEGAL_GENERATION, not
/// UNKNOWN_MEMBER_ID), and one just past the session.
pub fn draw_pauses(rng: &mut ChaCha8Rng, ctx: &FaultContext, t: PauseTiming) -> FaultSchedule {
    let mut faults = Vec::new();
    let shapes = rng.random_range(1..=4);
    for _ in 0..shapes {
        let member = ctx.members[rng.random_range(0..ctx.members.len())].clone();
        let mut at = rng.random_range(ctx.start_ms..ctx.end_ms);
        let room = |at: Millis| ctx.end_ms.saturating_sub(at);
        let (heartbeat, session) = (t.heartbeat_ms.max(2), t.session_ms.max(t.heartbeat_ms + 2));
        match rng.random_range(0..3u32) {
            0 => {
                for _ in 0..rng.random_range(3..=8) {
                    let duration_ms =
                        rng.random_range(50.min(heartbeat / 2)..heartbeat).min(room(at));
                    if duration_ms == 0 {
                        break;
                    }
                    faults.push(ScheduledFault {
                        at_ms: at,
                        fault: Fault::MemberPause { member: member.clone(), duration_ms },
                    });
                    at += duration_ms + rng.random_range(200..=2_000);
                }
            }
            1 => {
                let duration_ms = rng.random_range(heartbeat..session).min(room(at));
                faults.push(ScheduledFault {
                    at_ms: at,
                    fault: Fault::MemberPause { member, duration_ms },
                });
            }
            _ => {
                let duration_ms = rng.random_range(session..=session + 3_000).min(room(at));
                faults.push(ScheduledFault {
                    at_ms: at,
                    fault: Fault::MemberPause { member, duration_ms },
                });
            }
        }
    }
    FaultSchedule::new(faults.into_iter().filter(|f| f.at_ms < ctx.end_ms).collect())
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
                // Below and past the swarm members' max.poll.interval (their 15 s rebalance
                // timeout): a stall the member rides out, or one that makes it leave.
                FaultKind::SlowBatch => Some(Fault::SlowBatch {
                    member: pick(rng, &ctx.members),
                    extra_ms: dur(rng, 1_000, 25_000),
                }),
                // A client host and a broker, one direction: requests that arrive and are
                // processed with their answers lost, or answers to requests never read.
                FaultKind::OneWayPartition => {
                    let (client, broker) = (pick(rng, &ctx.client_hosts), pick(rng, &ctx.brokers));
                    let (from, to) =
                        if rng.random_bool(0.5) { (client, broker) } else { (broker, client) };
                    Some(Fault::OneWayPartition {
                        from,
                        to,
                        heal_after_ms: dur(rng, 1_000, 12_000),
                    })
                }
                FaultKind::FrameLoss => {
                    let hosts: Vec<String> =
                        ctx.brokers.iter().chain(&ctx.client_hosts).cloned().collect();
                    Some(Fault::FrameLoss {
                        host: pick(rng, &hosts),
                        per_mille: rng.random_range(10..=300),
                        duration_ms: dur(rng, 2_000, 15_000),
                    })
                }
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
                // A request handler stalls past the member's request timeout: the member gives
                // the request up and goes on, and the broker processes it afterwards.
                FaultKind::LateRequest => Some(Fault::LateRequest {
                    member: pick(rng, &ctx.members),
                    api: crate::faults::GroupApi::OffsetCommit,
                    delay_ms: dur(rng, 5_500, 12_000),
                    within_ms: rng.random_range(1_000..=5_000),
                }),
                // Broker-side BUGGIFY: an error Kafka's coordinator gives on that API.
                FaultKind::InjectError => {
                    let apis = crate::faults::drawn_apis(ctx.protocol);
                    let api = apis[rng.random_range(0..apis.len())];
                    let errors = crate::faults::kafka_errors(api, ctx.protocol);
                    let error = errors[rng.random_range(0..errors.len())];
                    Some(Fault::InjectError { api, error, count: rng.random_range(1..=3) })
                }
                FaultKind::ForceRebalance => {
                    Some(Fault::ForceRebalance { group: ctx.group.clone() })
                }
                // The coordinator expires a live member's session: it learns so at its next
                // heartbeat or commit and joins again.
                FaultKind::ExpelMember => {
                    Some(Fault::ExpelMember { member: pick(rng, &ctx.members) })
                }
                // Real-time-only kinds: no simulated swarm enables them.
                FaultKind::ConnectionReset
                | FaultKind::ResponseDelay
                | FaultKind::Unresponsive
                | FaultKind::HoldResponse => None,
            };
            if let Some(fault) = fault {
                faults.push(ScheduledFault { at_ms: at, fault });
            }
            at += rng.random_range(interval / 2..=interval * 3 / 2).max(1);
        }
    }
    FaultSchedule::new(faults)
}
