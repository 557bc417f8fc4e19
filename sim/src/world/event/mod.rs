//! The event world: the process shells driven by one deterministic event queue. Simulated time
//! jumps from one due event to the next (a frame landing, a member's or broker's timer, a
//! process start, the stage's own schedule); nothing runs in between.
//!
//! What it keeps: every request and answer is encoded and decoded with the real codec at the
//! negotiated version (each connection does the ApiVersions handshake), a connection serves one
//! request at a time, and members and brokers are the same shells the turmoil world runs.
//!
//! What differs from the turmoil world: latencies are drawn per frame (no 5 ms grid), so
//! histories differ for the same seed; the network model is explicit (`network`); triggers act
//! at the very instant of their event rather than at the next step.
//!
//! Leaves first: `queue` (events and the queue), `network` (links, connections, lanes),
//! `ctx` (what a host reaches while it handles an event),
//! `member` (a member host: a member process and its connections' transport ends),
//! `broker` (a broker host).

mod broker;
mod ctx;
mod member;
mod network;
mod queue;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use groupsim_checker::LivenessWatch;
use groupsim_wire::Millis;

use self::broker::BrokerNode;
use self::ctx::Ctx;
use self::member::MemberHost;
use self::network::Network;
use self::queue::{Dir, Event, EventQueue};
use crate::scenario::ScenarioSpec;
use crate::world::error::WorldError;
use crate::world::orders::{Hosts, Order};
use crate::world::stage::Stage;
use crate::world::still_clock::{StillClock, STILL_CLOCK_STEPS};
use groupsim_history::History;

/// Runs `spec` in the event world and returns the recorded history; it ends as the turmoil
/// world's does (early once the liveness rule has held for the grace period, else at the
/// deadline).
pub fn run(spec: &ScenarioSpec) -> Result<History, WorldError> {
    run_watched(spec).map(|(history, _)| history)
}

/// [`run`], with the checker that read the history as it grew.
pub fn run_watched(spec: &ScenarioSpec) -> Result<(History, LivenessWatch), WorldError> {
    let mut stage = Stage::new(spec)?;
    let mut ctx = Ctx {
        now: 0,
        queue: match spec.network.shuffle_ties {
            true => EventQueue::shuffled(crate::rng::stream(
                spec.world_seed(),
                crate::rng::Stream::Ties,
            )),
            false => EventQueue::default(),
        },
        net: Network::new(spec),
        idle_close_ms: spec.network.idle_close_ms,
        history: stage.history.clone(),
        settling: stage.settling.clone(),
        taps: Vec::new(),
    };
    let shared = stage.cluster.broker_shared();
    let configs: Vec<_> = stage.cluster.broker_configs().values().cloned().collect();
    let brokers =
        configs.into_iter().map(|config| BrokerNode::start(&mut ctx, config, shared.clone()));
    let brokers: Vec<BrokerNode> = brokers.collect();
    let mut hosts =
        World { brokers, members: Vec::new(), by_name: BTreeMap::new(), ordered: false, ctx };
    for (i, plan) in spec.members.iter().enumerate() {
        hosts.by_name.insert(plan.name.clone(), i);
        let member = MemberHost::new(&mut hosts.ctx, i, plan.clone());
        hosts.members.push(member);
    }
    let end = stage.end_ms();
    hosts.ctx.queue.push(0, Event::Wake);
    let mut wake_at = 0;
    let mut still = StillClock::new(STILL_CLOCK_STEPS);
    let now = loop {
        let Some(at) = hosts.ctx.queue.peek_at().filter(|&at| at < end) else { break end };
        let (_, event) = hosts.ctx.queue.pop().expect("peeked");
        still.step(at, || format!("{event:?}"))?;
        hosts.ctx.now = at;
        hosts.handle(event);
        if hosts.ctx.queue.peek_at() == Some(at) {
            continue;
        }
        // The instant is over: the stage's own work, then the orders it gave the processes.
        hosts.ordered = false;
        let taps = std::mem::take(&mut hosts.ctx.taps);
        if stage.tick(&mut hosts, at, taps) {
            break at;
        }
        if hosts.ordered {
            hosts.take_orders();
        }
        let due = stage.next_due().max(at + 1);
        if wake_at <= at || due < wake_at {
            wake_at = due;
            hosts.ctx.queue.push(due, Event::Wake);
        }
    };
    Ok(stage.finish(now))
}

/// The hosts of the event world and what they share.
struct World {
    brokers: Vec<BrokerNode>,
    members: Vec<MemberHost>,
    by_name: BTreeMap<String, usize>,
    /// Whether the stage gave an order at this instant.
    ordered: bool,
    ctx: Ctx,
}

/// Broker `node` (brokers are numbered from 0, in node order).
fn broker(brokers: &mut [BrokerNode], node: i32) -> Option<&mut BrokerNode> {
    usize::try_from(node).ok().and_then(|n| brokers.get_mut(n))
}

impl World {
    fn handle(&mut self, event: Event) {
        let ctx = &mut self.ctx;
        match event {
            Event::Wake => {}
            Event::Arrive { conn, dir } => {
                let Some(frame) = ctx.net.take_landed(conn, dir, ctx.now) else { return };
                let (member, node) = (ctx.net.conn(conn).member, ctx.net.conn(conn).node);
                match dir {
                    Dir::ToBroker => {
                        if let Some(b) = broker(&mut self.brokers, node) {
                            b.frame(ctx, conn, frame);
                        }
                    }
                    Dir::ToClient => self.members[member].frame(ctx, conn, frame),
                }
            }
            Event::Accepted { conn } => {
                let member = ctx.net.conn(conn).member;
                self.members[member].accepted(ctx, conn);
            }
            Event::Refused { conn } => {
                let member = ctx.net.conn(conn).member;
                self.members[member].refused(ctx, conn);
            }
            Event::ServeNext { node, conn } => {
                if let Some(b) = broker(&mut self.brokers, node) {
                    b.serve_next(ctx, conn);
                }
            }
            Event::BrokerTimer { node } => {
                if let Some(b) = broker(&mut self.brokers, node) {
                    b.timer(ctx);
                }
            }
            Event::MemberStart { member } => self.members[member].start(ctx),
            Event::MemberTimer { member } => self.members[member].timer(ctx),
            Event::PauseEnd { member } => self.members[member].pause_end(ctx),
            Event::IdleSweep { node } => {
                if let Some(b) = broker(&mut self.brokers, node) {
                    b.idle_sweep(ctx);
                }
            }
        }
    }

    /// Carries out the orders the stage gave at this instant: brokers' control instructions
    /// (coordinator moves), then members' commands, in node and member order.
    fn take_orders(&mut self) {
        for b in &mut self.brokers {
            b.take_controls(&mut self.ctx);
        }
        for m in &mut self.members {
            m.take_commands(&mut self.ctx);
        }
    }
}

impl Hosts for World {
    fn order(&mut self, now: Millis, order: Order) -> bool {
        debug_assert_eq!(now, self.ctx.now);
        self.ordered = true;
        let ctx = &mut self.ctx;
        match order {
            Order::Member { member, command } => {
                let Some(&i) = self.by_name.get(&member) else { return false };
                self.members[i].give(command)
            }
            Order::Broker { node, control } => {
                broker(&mut self.brokers, node).is_some_and(|b| b.give(control))
            }
            Order::CrashBroker { node } => {
                if let Some(b) = broker(&mut self.brokers, node) {
                    b.crash(ctx);
                }
                true
            }
            Order::RestartBroker { node } => {
                if let Some(b) = broker(&mut self.brokers, node) {
                    b.restart(ctx);
                }
                true
            }
            Order::Partition { a, b } => {
                ctx.net.partition(&mut ctx.queue, ctx.now, &a, &b);
                true
            }
            Order::Repair { a, b } => {
                ctx.net.repair(&a, &b);
                true
            }
            Order::MaxLatency { a, b, max_ms } => {
                ctx.net.set_max_latency(&a, &b, max_ms);
                true
            }
            Order::PartitionOneWay { from, to } => {
                ctx.net.partition_one_way(&mut ctx.queue, ctx.now, &from, &to);
                true
            }
            Order::RepairOneWay { from, to } => {
                ctx.net.repair_one_way(&from, &to);
                true
            }
            Order::FrameLoss { a, b, per_mille } => {
                ctx.net.set_loss(&a, &b, per_mille);
                true
            }
        }
    }
}
