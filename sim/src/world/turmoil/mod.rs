//! The turmoil world: the same process shells as tokio tasks on turmoil's simulated hosts, over
//! its simulated TCP, stepped in fixed ticks; kept as the cross-check of the event world. The
//! broker hosts run `broker`, the client hosts one task per member process (`member`).
//! Only this folder imports turmoil.

mod broker;
mod member;
mod tasks;

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::{Duration, UNIX_EPOCH};

use groupsim_checker::LivenessWatch;
use groupsim_wire::probe::Tap;
use groupsim_wire::Millis;
use tokio::sync::mpsc::UnboundedSender;

use crate::process::BrokerOrder;
use crate::rng::{self, Stream};
use crate::scenario::{MemberPlan, ScenarioSpec};
use crate::world::error::WorldError;
use crate::world::orders::{broker_host, client_host, Hosts, MemberCommand, Order, SharedHistory};
use crate::world::stage::settle::SharedSettling;
use crate::world::stage::Stage;
use groupsim_history::{EventKind, History};

/// What the hosts share with the world loop (all on turmoil's one thread).
#[derive(Clone)]
struct Shared {
    history: SharedHistory,
    settling: SharedSettling,
    /// Probe hits since the stage's last tick, in hit order.
    taps: Rc<RefCell<Vec<Tap>>>,
    /// Running member processes' command channels.
    members: Rc<RefCell<BTreeMap<String, UnboundedSender<MemberCommand>>>>,
    /// Running brokers' control channels (registered when a broker's software starts).
    brokers: Rc<RefCell<BTreeMap<i32, UnboundedSender<BrokerOrder>>>>,
    /// The first failure of a host's task, read after every step.
    failure: tasks::Failure,
}

impl Shared {
    /// Records `kind` at the current simulated instant.
    fn record(&self, kind: EventKind) {
        self.history.borrow_mut().record(sim_now(), kind);
    }
}

/// Simulated time now, inside a host.
fn sim_now() -> Millis {
    ::turmoil::sim_elapsed().map_or(0, |d| d.as_millis() as Millis)
}

/// Runs `spec` and returns the recorded history. The run ends once the liveness rule has held
/// for the scenario's grace period with every member's faults played out, or at the liveness
/// deadline when it does not (the checker then reports `stuck`).
pub fn run(spec: &ScenarioSpec) -> Result<History, WorldError> {
    run_watched(spec).map(|(history, _)| history)
}

/// [`run`], with the checker that read the history as it grew.
pub fn run_watched(spec: &ScenarioSpec) -> Result<(History, LivenessWatch), WorldError> {
    let mut stage = Stage::new(spec)?;
    let end_ms = stage.end_ms();
    let mut sim = ::turmoil::Builder::new()
        .epoch(UNIX_EPOCH + Duration::from_secs(1_700_000_000))
        .rng_seed(rng::sub_seed(spec.world_seed(), Stream::Network))
        .enable_random_order()
        .tick_duration(Duration::from_millis(spec.tick_ms))
        .min_message_latency(Duration::from_millis(spec.latency_ms.0))
        .max_message_latency(Duration::from_millis(spec.latency_ms.1))
        .simulation_duration(Duration::from_millis(end_ms + 60_000))
        .tcp_capacity(4_096)
        .build();
    let shared = Shared {
        history: stage.history.clone(),
        settling: stage.settling.clone(),
        taps: Rc::default(),
        members: Rc::default(),
        brokers: Rc::default(),
        failure: tasks::Failure::default(),
    };
    let cluster = stage.cluster.broker_shared();
    let idle_close_ms = spec.network.idle_close_ms;
    for (node, config) in stage.cluster.broker_configs() {
        let (config, cluster, shared) = (config.clone(), cluster.clone(), shared.clone());
        sim.host(broker_host(*node), move || {
            broker::run(config.clone(), cluster.clone(), shared.clone(), idle_close_ms)
        });
    }
    for host in 0..spec.client_hosts {
        let plans: Vec<MemberPlan> =
            spec.members.iter().filter(|m| m.host == host).cloned().collect();
        let shared = shared.clone();
        sim.host(client_host(host), move || member::run_client_host(plans.clone(), shared.clone()));
    }
    let normal_max_latency_ms = spec.latency_ms.1;
    loop {
        let now = sim.elapsed().as_millis() as Millis;
        let taps = std::mem::take(&mut *shared.taps.borrow_mut());
        if now >= end_ms
            || stage.tick(
                &mut World { sim: &mut sim, shared: &shared, normal_max_latency_ms },
                now,
                taps,
            )
        {
            break;
        }
        if let Err(e) = sim.step() {
            return Err(WorldError::Sim { at_ms: now, reason: e.to_string() });
        }
        shared.failure.take()?;
    }
    let now = sim.elapsed().as_millis() as Millis;
    let finished = stage.finish(now);
    drop(sim);
    Ok(finished)
}

/// The world as the stage sees it, between steps.
struct World<'a, 'b> {
    sim: &'a mut ::turmoil::Sim<'b>,
    shared: &'a Shared,
    /// The scenario's largest latency, which a link returns to.
    normal_max_latency_ms: Millis,
}

impl Hosts for World<'_, '_> {
    fn order(&mut self, _now: Millis, order: Order) -> bool {
        match order {
            Order::Member { member, command } => match self.shared.members.borrow().get(&member) {
                Some(tx) => tx.send(command).is_ok(),
                None => false,
            },
            Order::Broker { node, control } => match self.shared.brokers.borrow().get(&node) {
                // A broker that just died dropped its receiver: nothing to tell it then.
                Some(tx) => tx.send(control).is_ok(),
                None => false,
            },
            Order::CrashBroker { node } => {
                self.sim.crash(broker_host(node));
                self.shared.brokers.borrow_mut().remove(&node);
                true
            }
            Order::RestartBroker { node } => {
                self.sim.bounce(broker_host(node));
                true
            }
            Order::Partition { a, b } => {
                self.sim.partition(a.as_str(), b.as_str());
                true
            }
            Order::Repair { a, b } => {
                self.sim.repair(a.as_str(), b.as_str());
                true
            }
            Order::MaxLatency { a, b, max_ms } => {
                let max = Duration::from_millis(max_ms);
                self.sim.set_link_max_message_latency(a.as_str(), b.as_str(), max);
                true
            }
            Order::PartitionOneWay { from, to } => {
                self.sim.partition_oneway(from.as_str(), to.as_str());
                true
            }
            Order::RepairOneWay { from, to } => {
                self.sim.repair_oneway(from.as_str(), to.as_str());
                true
            }
            // turmoil's TCP does not retransmit (a lost segment kills the stream), so a lossy
            // link is the delay its retransmissions would add: a latency spike of one
            // retransmission timeout above the link's range while the loss lasts.
            Order::FrameLoss { a, b, per_mille } => {
                let max = match per_mille {
                    0 => self.normal_max_latency_ms,
                    _ => self.normal_max_latency_ms + crate::world::orders::RETRANSMIT_MIN_MS,
                };
                let max = Duration::from_millis(max);
                self.sim.set_link_max_message_latency(a.as_str(), b.as_str(), max);
                true
            }
        }
    }
}
