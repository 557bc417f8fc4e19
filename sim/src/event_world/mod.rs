//! The event world: the same sans-IO cores, wire codec, history, nemesis and checker as the
//! turmoil [`crate::world`], driven by one deterministic event queue instead of turmoil's fixed
//! 5 ms steps of every host. Simulated time jumps from one due event to the next (a frame
//! landing, a member's or broker's timer, a process start, the world's own schedule); nothing
//! runs in between.
//!
//! What it keeps: every request and answer is encoded and decoded with the real codec at the
//! negotiated version (each connection does the ApiVersions handshake), a connection serves one
//! request at a time, members and brokers are the cores the turmoil world runs, and the world's
//! own work (producer, phases, faults, triggers, early end) is the shared [`Stage`].
//!
//! What differs: latencies are drawn per frame (no 5 ms grid), so histories differ from the
//! turmoil world's for the same seed; the network model is explicit ([`network`]); triggers act
//! at the very instant of their event rather than at the next step.
//!
//! Modules, leaves first: [`queue`] (events and the queue), [`network`] (links, connections,
//! lanes), [`ctx`] (what a host reaches while handling an event), [`client`] (a member's side
//! of a connection), [`incarnation`] (a member core and its connections), [`member`] (a member
//! process: starts, restarts, commands, pauses), [`broker`] (a broker host).

mod broker;
mod client;
mod ctx;
mod incarnation;
mod member;
mod network;
mod queue;
#[cfg(test)]
mod tests;

use groupsim_history::History;
use groupsim_wire::Millis;

use self::broker::BrokerNode;
use self::ctx::Ctx;
use self::member::MemberProcess;
use self::network::Network;
use self::queue::{Dir, Event, EventQueue};
use crate::cluster::BrokerHosts;
use crate::nemesis::NetworkOps;
use crate::scenario::ScenarioSpec;
use crate::stage::{Stage, WorldError};

/// Runs `spec` in the event world and returns the recorded history; it ends as the turmoil
/// world's does (early once the liveness rule has held for the grace period, else at the
/// deadline).
pub fn run(spec: &ScenarioSpec) -> Result<History, WorldError> {
    let mut stage = Stage::new(spec)?;
    let mut ctx = Ctx {
        now: 0,
        queue: EventQueue::default(),
        net: Network::new(spec),
        history: stage.history.clone(),
        settling: stage.settling.clone(),
        controls: stage.controls.clone(),
    };
    let shared = stage.cluster.broker_shared();
    let configs: Vec<_> = stage.cluster.broker_configs().values().cloned().collect();
    let mut hosts = Hosts {
        brokers: configs
            .into_iter()
            .map(|config| BrokerNode::start(&mut ctx, config, shared.clone()))
            .collect(),
        members: Vec::new(),
        ctx,
    };
    for (i, plan) in spec.members.iter().enumerate() {
        let member = MemberProcess::new(&mut hosts.ctx, i, plan.clone());
        hosts.members.push(member);
    }
    let end = stage.end_ms();
    hosts.ctx.queue.push(0, Event::Wake);
    let mut wake_at = 0;
    let now = loop {
        let Some(at) = hosts.ctx.queue.peek_at().filter(|&at| at < end) else { break end };
        let (_, event) = hosts.ctx.queue.pop().expect("peeked");
        hosts.ctx.now = at;
        hosts.handle(event);
        if hosts.ctx.queue.peek_at() == Some(at) {
            continue;
        }
        // The instant is over: the world's own work, then what it set off. Every order the
        // stage gives hosts is recorded with it (a fault, a coordinator move, a failover, the
        // liveness phase), so a tick that recorded nothing sent none.
        let recorded = stage.history.borrow().len();
        if stage.tick(&mut hosts, at) {
            break at;
        }
        if stage.history.borrow().len() > recorded {
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
struct Hosts {
    brokers: Vec<BrokerNode>,
    members: Vec<MemberProcess>,
    ctx: Ctx,
}

/// Broker `node` (brokers are numbered from 0, in node order).
fn broker(brokers: &mut [BrokerNode], node: i32) -> Option<&mut BrokerNode> {
    usize::try_from(node).ok().and_then(|n| brokers.get_mut(n))
}

impl Hosts {
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
        }
    }

    /// Carries out what the world's tick ordered: brokers' control instructions (coordinator
    /// moves), then members' commands, in node and member order.
    fn take_orders(&mut self) {
        for b in &mut self.brokers {
            b.take_controls(&mut self.ctx);
        }
        for m in &mut self.members {
            m.take_commands(&mut self.ctx);
        }
    }
}

impl BrokerHosts for Hosts {
    fn crash(&mut self, node: i32) {
        if let Some(b) = broker(&mut self.brokers, node) {
            b.crash(&mut self.ctx);
        }
    }

    fn restart(&mut self, node: i32) {
        if let Some(b) = broker(&mut self.brokers, node) {
            b.restart(&mut self.ctx);
        }
    }
}

impl NetworkOps for Hosts {
    fn partition(&mut self, a: &str, b: &str) {
        self.ctx.net.partition(&mut self.ctx.queue, self.ctx.now, a, b);
    }

    fn repair(&mut self, a: &str, b: &str) {
        self.ctx.net.repair(a, b);
    }

    fn set_max_latency(&mut self, a: &str, b: &str, max_ms: Millis) {
        self.ctx.net.set_max_latency(a, b, max_ms);
    }
}
