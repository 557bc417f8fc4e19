//! A member host of the event world: a [`MemberProcess`] and the transport ends of its
//! connections. The transport end connects and runs the ApiVersions handshake whether or not
//! the process is paused (as a client's network threads would), then hands the open connection
//! to the process; later frames go to the process as they land.

use std::collections::BTreeMap;

use groupsim_wire::conn::{ClientConn, Received};
use groupsim_wire::versions::served_apis;
use groupsim_wire::Millis;

use super::ctx::Ctx;
use super::network::Frame;
use super::queue::{ConnId, Dir, Event};
use crate::process::{Action, ConnKey, Delivery, MemberProcess};
use crate::scenario::MemberPlan;
use crate::world::orders::MemberCommand;

/// The transport end of one connection.
#[derive(Debug)]
enum Transport {
    /// The connection attempt is on its way.
    Connecting(Box<ClientConn>),
    /// ApiVersions sent, its answer awaited.
    Handshake(Box<ClientConn>),
    /// Handed to the process: frames go to it.
    Open,
    /// Failed: nothing more is delivered.
    Dead,
}

/// One member host (see the module docs).
#[derive(Debug)]
pub(super) struct MemberHost {
    index: usize,
    process: MemberProcess,
    /// The instant its timer event is queued for.
    armed: Option<Millis>,
    /// Its live connections: network id and transport end, by the process's key.
    conns: BTreeMap<ConnKey, (ConnId, Transport)>,
}

impl MemberHost {
    /// The process of `plan`, the `index`-th member of the world; its start is queued.
    pub(super) fn new(ctx: &mut Ctx, index: usize, plan: MemberPlan) -> Self {
        ctx.queue.push(plan.start_ms, Event::MemberStart { member: index });
        let process = MemberProcess::new(plan).hand_over_values();
        Self { index, process, armed: None, conns: BTreeMap::new() }
    }

    /// Carries out what the process asked for, in order.
    fn carry_out(&mut self, ctx: &mut Ctx) {
        while let Some(action) = self.process.poll_action() {
            match action {
                Action::Record(kind) => ctx.record(kind),
                Action::Connect { conn, node } => {
                    let plan = self.process.plan();
                    let (member, host) = ((self.index, conn), plan.host);
                    let id = ctx.net.open(&mut ctx.queue, ctx.now, member, host, node);
                    let client =
                        ClientConn::new(&plan.config.client_id, served_apis()).from_own_encoder();
                    self.conns.insert(conn, (id, Transport::Connecting(Box::new(client))));
                }
                Action::Transmit { conn, frame } => {
                    if let Some((id, _)) = self.conns.get(&conn) {
                        ctx.net.send(
                            &mut ctx.queue,
                            ctx.now,
                            *id,
                            Dir::ToBroker,
                            Frame::Data(frame),
                        );
                    }
                }
                Action::Hand { conn, request } => {
                    if let Some((id, _)) = self.conns.get(&conn) {
                        let frame = Frame::Request(request);
                        ctx.net.send(&mut ctx.queue, ctx.now, *id, Dir::ToBroker, frame);
                    }
                }
                Action::Close { conn } => {
                    if let Some((id, _)) = self.conns.remove(&conn) {
                        ctx.net.send(&mut ctx.queue, ctx.now, id, Dir::ToBroker, Frame::Close);
                    }
                }
                Action::Tap(tap) => ctx.taps.push(tap),
                Action::Wire(entry) => ctx.history.borrow_mut().record_wire(entry),
                Action::Settling(mark) => ctx.settling.borrow_mut().mark(self.process.name(), mark),
                Action::Timer(due) => self.arm(ctx, due),
                Action::PauseUntil(at) => {
                    ctx.queue.push(at, Event::PauseEnd { member: self.index })
                }
                Action::RestartAt(at) => {
                    self.armed = None;
                    ctx.queue.push(at, Event::MemberStart { member: self.index });
                }
                Action::TakesCommands(takes) => {
                    if !takes {
                        self.armed = None;
                    }
                }
            }
        }
    }

    /// Queues the timer event for `due` (at once if overdue), unless it is queued already.
    fn arm(&mut self, ctx: &mut Ctx, due: Option<Millis>) {
        let Some(due) = due else { return };
        let due = due.max(ctx.now);
        if self.armed != Some(due) {
            self.armed = Some(due);
            ctx.queue.push(due, Event::MemberTimer { member: self.index });
        }
    }

    /// The process starts (its planned start, or a restart).
    pub(super) fn start(&mut self, ctx: &mut Ctx) {
        self.process.start(ctx.now);
        self.carry_out(ctx);
    }

    /// The timer event queued for `ctx.now`.
    pub(super) fn timer(&mut self, ctx: &mut Ctx) {
        if self.armed != Some(ctx.now) {
            return; // re-armed since
        }
        self.armed = None;
        self.process.timer(ctx.now);
        self.carry_out(ctx);
    }

    /// The pause ends.
    pub(super) fn pause_end(&mut self, ctx: &mut Ctx) {
        self.process.pause_end(ctx.now);
        self.carry_out(ctx);
    }

    /// A command from the stage, taken with the others after its work at this instant.
    pub(super) fn give(&mut self, command: MemberCommand) -> bool {
        if !self.process.takes_commands() {
            return false;
        }
        self.process.give(command);
        true
    }

    /// Takes the commands given at this instant.
    pub(super) fn take_commands(&mut self, ctx: &mut Ctx) {
        self.process.take_commands(ctx.now);
        self.carry_out(ctx);
    }

    /// The process's key for network connection `conn`, while the process holds it.
    fn key_of(&self, ctx: &Ctx, conn: ConnId) -> Option<ConnKey> {
        let key = ctx.net.conn(conn).key;
        self.conns.get(&key).filter(|(id, _)| *id == conn).map(|_| key)
    }

    fn deliver(&mut self, ctx: &mut Ctx, delivery: Delivery) {
        self.process.deliver(ctx.now, delivery);
        self.carry_out(ctx);
    }

    /// The broker accepted connection `conn`: its handshake starts (paused or not).
    pub(super) fn accepted(&mut self, ctx: &mut Ctx, conn: ConnId) {
        let Some(key) = self.key_of(ctx, conn) else { return };
        let Some((_, transport)) = self.conns.get_mut(&key) else { return };
        let Transport::Connecting(client) = std::mem::replace(transport, Transport::Dead) else {
            return;
        };
        let mut client = client;
        match client.hello() {
            Ok(hello) => {
                *transport = Transport::Handshake(client);
                ctx.net.send(&mut ctx.queue, ctx.now, conn, Dir::ToBroker, Frame::Data(hello));
            }
            Err(e) => {
                let reason = e.to_string();
                self.deliver(ctx, Delivery::Failed { conn: key, reason });
            }
        }
    }

    /// Connection `conn` was refused.
    pub(super) fn refused(&mut self, ctx: &mut Ctx, conn: ConnId) {
        let Some(key) = self.key_of(ctx, conn) else { return };
        let Some((_, transport)) = self.conns.get_mut(&key) else { return };
        if matches!(transport, Transport::Dead) {
            return;
        }
        *transport = Transport::Dead;
        let reason = "connect: connection refused".to_string();
        self.deliver(ctx, Delivery::Failed { conn: key, reason });
    }

    /// A frame from the broker landed on connection `conn`.
    pub(super) fn frame(&mut self, ctx: &mut Ctx, conn: ConnId, frame: Frame) {
        let Some(key) = self.key_of(ctx, conn) else { return };
        let Some((_, transport)) = self.conns.get_mut(&key) else { return };
        let failed = |reason: &str| Delivery::Failed { conn: key, reason: reason.to_string() };
        let delivery = match (std::mem::replace(transport, Transport::Dead), frame) {
            (Transport::Dead, _) => return,
            (t, Frame::Syn) => {
                *transport = t;
                return;
            }
            (_, Frame::Close) => failed("the broker closed the connection"),
            (_, Frame::Reset) => failed("the broker reset the connection"),
            (Transport::Connecting(_), Frame::Data(_) | Frame::Request(_) | Frame::Response(_)) => {
                failed("data before the connection")
            }
            (Transport::Open, Frame::Data(bytes)) => {
                *transport = Transport::Open;
                Delivery::Frame { conn: key, frame: bytes }
            }
            (Transport::Open, Frame::Response(response)) => {
                *transport = Transport::Open;
                Delivery::Handed { conn: key, response }
            }
            (Transport::Open | Transport::Handshake(_), Frame::Request(_)) => {
                failed("a request from the broker")
            }
            (Transport::Handshake(_), Frame::Response(_)) => {
                failed("an answer before the handshake's")
            }
            (Transport::Handshake(mut client), Frame::Data(bytes)) => {
                match client.on_frame(bytes) {
                    Ok(Received::Ready) => {
                        *transport = Transport::Open;
                        Delivery::Connected { conn: key, client }
                    }
                    Ok(Received::Retry(retry)) => {
                        *transport = Transport::Handshake(client);
                        ctx.net.send(
                            &mut ctx.queue,
                            ctx.now,
                            conn,
                            Dir::ToBroker,
                            Frame::Data(retry),
                        );
                        return;
                    }
                    Ok(Received::Response { .. }) => failed("an answer before the handshake's"),
                    Err(e) => failed(&format!("handshake: {e}")),
                }
            }
        };
        self.deliver(ctx, delivery);
    }
}
