//! A broker host of the event world: a [`BrokerProcess`] and the server ends of its
//! connections ([`ServerConn`]). A connection is served one request at a time, in order, as
//! Kafka does: the next one waits until the answer is sent, which keeps answers in request
//! order even when a JoinGroup is parked for seconds.
//!
//! A crash loses the process and every connection (each client sees its connection closed);
//! frames arriving while the host is down wait for it, as turmoil keeps them: at the restart,
//! connection attempts are refused and data for connections the new host does not know is
//! answered with a reset.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use groupsim_coordinator::broker::BrokerConfig;
use groupsim_wire::conn::{Next, Outgoing, ReplyTo, ServerConn};
use groupsim_wire::Millis;

use super::ctx::Ctx;
use super::network::Frame;
use super::queue::{ConnId, Dir, Event};
use crate::process::{BrokerOrder, BrokerOutput, BrokerProcess};
use crate::record::late_request;
use crate::record::IntoHistory;
use crate::world::stage::cluster::BrokerShared;
use groupsim_history::EventKind;

/// A running broker's state (gone with a crash).
#[derive(Debug)]
struct Running {
    process: BrokerProcess<(ConnId, ReplyTo)>,
    /// Control instructions given at this instant, taken after the stage's work.
    controls: VecDeque<BrokerOrder>,
    conns: BTreeMap<ConnId, ServerConn>,
    /// When each connection last read or wrote a frame (for `connections.max.idle.ms`).
    active_at: BTreeMap<ConnId, Millis>,
}

/// One broker host (see the module docs).
#[derive(Debug)]
pub(super) struct BrokerNode {
    node: i32,
    config: BrokerConfig,
    shared: BrokerShared,
    running: Option<Running>,
    /// While down: connection attempts, and connections that sent data, waiting for the host.
    held_syns: Vec<ConnId>,
    held_data: BTreeSet<ConnId>,
    /// The instant its timer event is queued for.
    armed: Option<Millis>,
    /// The instant its idle sweep is queued for.
    sweep_at: Option<Millis>,
}

impl BrokerNode {
    /// Broker `config.node_id`, started at `ctx.now`.
    pub(super) fn start(ctx: &mut Ctx, config: BrokerConfig, shared: BrokerShared) -> Self {
        let mut node = Self {
            node: config.node_id,
            config,
            shared,
            running: None,
            held_syns: Vec::new(),
            held_data: BTreeSet::new(),
            armed: None,
            sweep_at: None,
        };
        node.boot(ctx);
        node
    }

    /// The broker software starts with empty state, and what waited for the host is refused
    /// or reset.
    fn boot(&mut self, ctx: &mut Ctx) {
        let core = self.shared.boot(self.config.clone(), ctx.now);
        self.running = Some(Running {
            process: BrokerProcess::new(core),
            controls: VecDeque::new(),
            conns: BTreeMap::new(),
            active_at: BTreeMap::new(),
        });
        self.arm_sweep(ctx, ctx.now);
        for conn in std::mem::take(&mut self.held_syns) {
            ctx.queue.push(ctx.now, Event::Refused { conn });
        }
        for conn in std::mem::take(&mut self.held_data) {
            ctx.net.send(&mut ctx.queue, ctx.now, conn, Dir::ToClient, Frame::Reset);
        }
        self.after_input(ctx);
    }

    /// The host dies: the process and every connection are gone; each client sees its
    /// connection closed.
    pub(super) fn crash(&mut self, ctx: &mut Ctx) {
        let Some(running) = self.running.take() else { return };
        for conn in running.conns.into_keys() {
            ctx.net.send(&mut ctx.queue, ctx.now, conn, Dir::ToClient, Frame::Close);
        }
        self.armed = None;
        self.sweep_at = None;
    }

    /// The host starts again.
    pub(super) fn restart(&mut self, ctx: &mut Ctx) {
        if self.running.is_none() {
            self.boot(ctx);
        }
    }

    /// A control instruction from the stage, taken after its work at this instant; refused
    /// while the host is down.
    pub(super) fn give(&mut self, control: BrokerOrder) -> bool {
        let Some(running) = &mut self.running else { return false };
        running.controls.push_back(control);
        true
    }

    /// A frame from a client landed on connection `conn`.
    pub(super) fn frame(&mut self, ctx: &mut Ctx, conn: ConnId, frame: Frame) {
        let Some(running) = &mut self.running else {
            match frame {
                Frame::Syn => self.held_syns.push(conn),
                Frame::Data(_) | Frame::Request(_) | Frame::Response(_) => {
                    self.held_data.insert(conn);
                }
                Frame::Close | Frame::Reset => {}
            }
            return;
        };
        match frame {
            Frame::Syn => {
                running.conns.insert(conn, ServerConn::from_own_encoder());
                running.active_at.insert(conn, ctx.now);
                ctx.queue.push(ctx.now, Event::Accepted { conn });
            }
            Frame::Data(_) | Frame::Request(_) | Frame::Response(_) => match running
                .conns
                .get_mut(&conn)
            {
                Some(c) if !c.is_closing() => {
                    running.active_at.insert(conn, ctx.now);
                    match frame {
                        Frame::Data(bytes) => c.push(bytes),
                        Frame::Request(request) => c.push_handed(request),
                        // Answers travel toward clients only.
                        _ => {}
                    }
                    if !c.is_busy() {
                        self.serve_next(ctx, conn);
                    }
                }
                Some(_) => {}
                // Data for a connection this host does not have: reset.
                None => ctx.net.send(&mut ctx.queue, ctx.now, conn, Dir::ToClient, Frame::Reset),
            },
            Frame::Close | Frame::Reset => {
                if let Some(c) = running.conns.get_mut(&conn) {
                    c.close();
                    if c.is_done() {
                        running.conns.remove(&conn);
                    }
                }
            }
        }
    }

    /// Serves the next request read on `conn`, if it is not serving one already.
    pub(super) fn serve_next(&mut self, ctx: &mut Ctx, conn: ConnId) {
        let Some(running) = &mut self.running else { return };
        let Some(c) = running.conns.get_mut(&conn).filter(|c| !c.is_busy()) else { return };
        match c.next_step() {
            None => {
                if c.is_closing() {
                    running.conns.remove(&conn);
                }
            }
            Some(Next::Send(frame)) => {
                ctx.net.send(&mut ctx.queue, ctx.now, conn, Dir::ToClient, Frame::Data(frame));
                if c.has_waiting() {
                    ctx.queue.push(ctx.now, Event::ServeNext { node: self.node, conn });
                }
            }
            Some(Next::Refuse(e)) => {
                tracing::debug!(broker = self.node, error = %e, "closing connection");
                running.conns.remove(&conn);
                ctx.net.send(&mut ctx.queue, ctx.now, conn, Dir::ToClient, Frame::Close);
            }
            Some(Next::Serve { reply, client_id, request }) => {
                let client_id = client_id.as_deref().unwrap_or("");
                let version = reply.version;
                running.process.request(ctx.now, (conn, reply), version, client_id, *request);
                self.after_input(ctx);
            }
        }
    }

    /// The timer event queued for `ctx.now`: the process's deadlines fire.
    pub(super) fn timer(&mut self, ctx: &mut Ctx) {
        if self.armed != Some(ctx.now) {
            return;
        }
        self.armed = None;
        let Some(running) = &mut self.running else { return };
        running.process.handle_timeout(ctx.now);
        self.after_input(ctx);
    }

    /// Queues the idle sweep for `connections.max.idle.ms` after `from`, if the world sets it
    /// and no earlier sweep is queued.
    fn arm_sweep(&mut self, ctx: &mut Ctx, from: Millis) {
        let Some(idle) = ctx.idle_close_ms else { return };
        let at = (from + idle).max(ctx.now + 1);
        if self.sweep_at.is_none_or(|queued| queued <= ctx.now || at < queued) {
            self.sweep_at = Some(at);
            ctx.queue.push(at, Event::IdleSweep { node: self.node });
        }
    }

    /// The idle sweep (Kafka's `Selector` closing connections idle past
    /// `connections.max.idle.ms`): every connection that read or wrote nothing for that long is
    /// closed. One serving a request is not idle: Kafka's default (10 minutes) outlasts any
    /// parked JoinGroup, and the scaled-down bound must not close what Kafka's would not.
    pub(super) fn idle_sweep(&mut self, ctx: &mut Ctx) {
        if self.sweep_at != Some(ctx.now) {
            return;
        }
        self.sweep_at = None;
        let (Some(idle), Some(running)) = (ctx.idle_close_ms, &mut self.running) else { return };
        let mut oldest = ctx.now;
        let ids: Vec<ConnId> = running.conns.keys().copied().collect();
        for conn in ids {
            let c = &running.conns[&conn];
            let active = running.active_at.get(&conn).copied().unwrap_or(0);
            if c.is_busy() || c.has_waiting() || ctx.now < active + idle {
                oldest = oldest.min(if c.is_busy() { ctx.now } else { active });
                continue;
            }
            crate::probes::BROKER_IDLE_CLOSE.hit();
            tracing::debug!(broker = self.node, conn, "closing a connection idle past its bound");
            running.conns.remove(&conn);
            running.active_at.remove(&conn);
            ctx.net.send(&mut ctx.queue, ctx.now, conn, Dir::ToClient, Frame::Close);
        }
        self.arm_sweep(ctx, oldest);
    }

    /// Applies the control instructions given at this instant (coordinator moves).
    pub(super) fn take_controls(&mut self, ctx: &mut Ctx) {
        let Some(running) = &mut self.running else { return };
        let mut any = false;
        while let Some(control) = running.controls.pop_front() {
            running.process.apply_order(ctx.now, control);
            any = true;
        }
        if any {
            self.after_input(ctx);
        }
    }

    /// Routes the process's answers to their connections and records its events; then arms
    /// the timer.
    fn after_input(&mut self, ctx: &mut Ctx) {
        let Some(running) = &mut self.running else { return };
        ctx.taps.extend(running.process.take_taps());
        while let Some(output) = running.process.poll_output() {
            match output {
                BrokerOutput::Event(event) => {
                    let event = event.into_history();
                    ctx.record(EventKind::Coordinator { broker: self.node, event })
                }
                BrokerOutput::Late { client_id, api, member_id, read_at } => ctx.record(
                    EventKind::World(late_request(self.node, client_id, api, member_id, read_at)),
                ),
                BrokerOutput::Answer { to: (conn, reply), response } => {
                    // The connection may have gone away; its answer is dropped.
                    let Some(c) = running.conns.get_mut(&conn) else { continue };
                    let answered = match reply.handed {
                        true => c.answer_handed(reply, response),
                        false => c.answer(reply, &response).map(|f| f.map(Outgoing::Frame)),
                    };
                    match answered {
                        Ok(Some(answer)) => {
                            running.active_at.insert(conn, ctx.now);
                            let frame = match answer {
                                Outgoing::Frame(bytes) => Frame::Data(bytes),
                                Outgoing::Handed(response) => Frame::Response(response),
                            };
                            ctx.net.send(&mut ctx.queue, ctx.now, conn, Dir::ToClient, frame)
                        }
                        Ok(None) => {}
                        Err(e) => {
                            tracing::warn!(error = %e, "closing connection");
                            running.conns.remove(&conn);
                            ctx.net.send(
                                &mut ctx.queue,
                                ctx.now,
                                conn,
                                Dir::ToClient,
                                Frame::Close,
                            );
                        }
                    }
                    let more =
                        running.conns.get(&conn).is_some_and(|c| c.has_waiting() || c.is_closing());
                    if more {
                        ctx.queue.push(ctx.now, Event::ServeNext { node: self.node, conn });
                    }
                }
            }
        }
        let Some(due) = running.process.poll_timeout() else { return };
        let due = due.max(ctx.now);
        if self.armed != Some(due) {
            self.armed = Some(due);
            ctx.queue.push(due, Event::BrokerTimer { node: self.node });
        }
    }
}
