//! A broker host of the event world: the sans-IO [`Broker`] and the server side of its
//! connections. A connection is served one request at a time, in order, as Kafka (and the wire
//! server the turmoil world runs) does: a frame is decoded with the real codec and handed to the
//! core; the next one waits until the answer is encoded and sent, which keeps answers in request
//! order even when a JoinGroup is parked for seconds.
//!
//! A crash loses the core and every connection (each client sees its connection closed);
//! frames arriving while the host is down wait for it, as turmoil keeps them: at the restart,
//! connection attempts are refused and data for connections the new host does not know is
//! answered with a reset.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use bytes::Bytes;
use groupsim_coordinator::broker::{Broker, BrokerConfig, BrokerControl};
use groupsim_coordinator::CoordinatorOutput;
use groupsim_history::EventKind;
use groupsim_wire::codec::{decode_request, encode_api_versions_fallback, encode_response};
use groupsim_wire::versions::unsupported_api_versions;
use groupsim_wire::{probe, Millis, RequestId, WireError};
use kafka_protocol::messages::{ApiKey, RequestKind};
use tokio::sync::mpsc;

use super::ctx::Ctx;
use super::network::Frame;
use super::queue::{ConnId, Dir, Event};
use crate::broker_host::BrokerShared;
use crate::record::IntoHistory;

/// The server side of one connection.
#[derive(Debug, Default)]
struct ServerConn {
    /// Request frames read and not yet served.
    waiting: VecDeque<Bytes>,
    /// The request being served (its answer not yet sent).
    busy: bool,
    /// The client closed its side: serve what was read, then drop the connection.
    closing: bool,
}

/// Where an answer goes: the connection, and how to encode it.
#[derive(Debug)]
struct Reply {
    conn: ConnId,
    correlation_id: i32,
    api_key: ApiKey,
    version: i16,
    /// Kafka sends nothing back for a Produce with acks=0.
    silent: bool,
}

/// A running broker's state (gone with a crash).
#[derive(Debug)]
struct Running {
    core: Broker,
    controls: mpsc::UnboundedReceiver<BrokerControl>,
    conns: BTreeMap<ConnId, ServerConn>,
    replies: BTreeMap<RequestId, Reply>,
    next_id: u64,
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
    fired_at: Option<Millis>,
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
            fired_at: None,
        };
        node.boot(ctx);
        node
    }

    /// The broker software starts with empty state: the core is built from the shared cluster
    /// state (loading the offsets partitions the cluster says it leads), its control channel
    /// registered, and what waited for the host is refused or reset.
    fn boot(&mut self, ctx: &mut Ctx) {
        let core = Broker::with_cluster(
            self.config.clone(),
            self.shared.logs.clone(),
            self.shared.cluster.clone(),
            self.shared.offsets_log.clone(),
            ctx.now,
        );
        let (tx, controls) = mpsc::unbounded_channel();
        self.shared.controls.borrow_mut().insert(self.node, tx);
        self.running = Some(Running {
            core,
            controls,
            conns: BTreeMap::new(),
            replies: BTreeMap::new(),
            next_id: 0,
        });
        for conn in std::mem::take(&mut self.held_syns) {
            ctx.queue.push(ctx.now, Event::Refused { conn });
        }
        for conn in std::mem::take(&mut self.held_data) {
            ctx.net.send(&mut ctx.queue, ctx.now, conn, Dir::ToClient, Frame::Close);
        }
        self.after_input(ctx);
    }

    /// The host dies: the core and every connection are gone; each client sees its
    /// connection closed.
    pub(super) fn crash(&mut self, ctx: &mut Ctx) {
        let Some(running) = self.running.take() else { return };
        for conn in running.conns.into_keys() {
            ctx.net.send(&mut ctx.queue, ctx.now, conn, Dir::ToClient, Frame::Close);
        }
        self.armed = None;
    }

    /// The host starts again.
    pub(super) fn restart(&mut self, ctx: &mut Ctx) {
        if self.running.is_none() {
            self.boot(ctx);
        }
    }

    /// A frame from a client landed on connection `conn`.
    pub(super) fn frame(&mut self, ctx: &mut Ctx, conn: ConnId, frame: Frame) {
        let Some(running) = &mut self.running else {
            match frame {
                Frame::Syn => self.held_syns.push(conn),
                Frame::Data(_) => drop(self.held_data.insert(conn)),
                Frame::Close => {}
            }
            return;
        };
        match frame {
            Frame::Syn => {
                running.conns.insert(conn, ServerConn::default());
                ctx.queue.push(ctx.now, Event::Accepted { conn });
            }
            Frame::Data(bytes) => match running.conns.get_mut(&conn) {
                Some(c) if !c.closing => {
                    c.waiting.push_back(bytes);
                    if !c.busy {
                        self.serve_next(ctx, conn);
                    }
                }
                Some(_) => {}
                // Data for a connection this host does not have: reset.
                None => ctx.net.send(&mut ctx.queue, ctx.now, conn, Dir::ToClient, Frame::Close),
            },
            Frame::Close => {
                if let Some(c) = running.conns.get_mut(&conn) {
                    c.closing = true;
                    if !c.busy && c.waiting.is_empty() {
                        running.conns.remove(&conn);
                    }
                }
            }
        }
    }

    /// Serves the next request read on `conn`, if it is not serving one already.
    pub(super) fn serve_next(&mut self, ctx: &mut Ctx, conn: ConnId) {
        let Some(running) = &mut self.running else { return };
        let Some(c) = running.conns.get_mut(&conn).filter(|c| !c.busy) else { return };
        let Some(bytes) = c.waiting.pop_front() else {
            if c.closing {
                running.conns.remove(&conn);
            }
            return;
        };
        let request = match decode_request(bytes) {
            Ok(request) => request,
            Err(WireError::UnsupportedVersion {
                api_key: ApiKey::ApiVersions,
                correlation_id,
                ..
            }) => {
                let answer =
                    encode_api_versions_fallback(correlation_id, &unsupported_api_versions());
                if let Ok(frame) = answer {
                    ctx.net.send(&mut ctx.queue, ctx.now, conn, Dir::ToClient, Frame::Data(frame));
                }
                if !c.waiting.is_empty() {
                    ctx.queue.push(ctx.now, Event::ServeNext { node: self.node, conn });
                }
                return;
            }
            Err(e) => {
                tracing::debug!(broker = self.node, error = %e, "closing connection");
                running.conns.remove(&conn);
                ctx.net.send(&mut ctx.queue, ctx.now, conn, Dir::ToClient, Frame::Close);
                return;
            }
        };
        c.busy = true;
        let id = RequestId(running.next_id);
        running.next_id += 1;
        let silent = matches!(&request.request, RequestKind::Produce(p) if p.acks == 0);
        let reply = Reply {
            conn,
            correlation_id: request.header.correlation_id,
            api_key: request.api_key,
            version: request.version,
            silent,
        };
        running.replies.insert(id, reply);
        let client_id = request.header.client_id.as_ref().map(|c| c.to_string());
        let client_id = client_id.as_deref().unwrap_or("");
        // Probes the request hits are the requesting client's (its name is its id).
        if probe::is_tapping() {
            probe::set_actor(Some(client_id.into()));
        }
        running.core.handle_request_from(ctx.now, id, request.version, client_id, request.request);
        self.after_input(ctx);
    }

    /// The timer event queued for `ctx.now`: the core's deadlines fire.
    pub(super) fn timer(&mut self, ctx: &mut Ctx) {
        if self.armed != Some(ctx.now) {
            return;
        }
        self.armed = None;
        let Some(running) = &mut self.running else { return };
        if probe::is_tapping() {
            probe::set_actor(None); // timers are nobody's request
        }
        self.fired_at = Some(ctx.now);
        running.core.handle_timeout(ctx.now);
        self.after_input(ctx);
    }

    /// Applies the cluster's control instructions (coordinator moves) sent since the last call.
    pub(super) fn take_controls(&mut self, ctx: &mut Ctx) {
        let Some(running) = &mut self.running else { return };
        let mut any = false;
        while let Ok(control) = running.controls.try_recv() {
            if probe::is_tapping() {
                probe::set_actor(None);
            }
            running.core.apply_control(ctx.now, control);
            any = true;
        }
        if any {
            self.after_input(ctx);
        }
    }

    /// Routes the core's answers to their connections (encoded at the request's version) and
    /// records its events; then arms the timer.
    fn after_input(&mut self, ctx: &mut Ctx) {
        let Some(running) = &mut self.running else { return };
        while let Some(output) = running.core.poll_output() {
            match output {
                CoordinatorOutput::Event(event) => ctx.record(EventKind::Coordinator {
                    broker: self.node,
                    event: event.into_history(),
                }),
                CoordinatorOutput::Response { id, response } => {
                    let Some(reply) = running.replies.remove(&id) else {
                        tracing::warn!(?id, "broker answered a request that is not waiting");
                        continue;
                    };
                    // The connection may have gone away; its answer is dropped.
                    let Some(c) = running.conns.get_mut(&reply.conn) else { continue };
                    c.busy = false;
                    if !reply.silent {
                        let encoded = encode_response(
                            reply.correlation_id,
                            reply.api_key,
                            reply.version,
                            &response,
                        );
                        let frame = match encoded {
                            Ok(bytes) => Frame::Data(bytes),
                            Err(e) => {
                                tracing::warn!(error = %e, "closing connection");
                                running.conns.remove(&reply.conn);
                                Frame::Close
                            }
                        };
                        ctx.net.send(&mut ctx.queue, ctx.now, reply.conn, Dir::ToClient, frame);
                    }
                    let more = running
                        .conns
                        .get(&reply.conn)
                        .is_some_and(|c| !c.waiting.is_empty() || c.closing);
                    if more {
                        ctx.queue
                            .push(ctx.now, Event::ServeNext { node: self.node, conn: reply.conn });
                    }
                }
            }
        }
        let Some(mut due) = running.core.poll_timeout() else { return };
        if due <= ctx.now && self.fired_at == Some(ctx.now) {
            due = ctx.now + 1; // a deadline that did not clear: 1 ms beats spinning
        }
        let due = due.max(ctx.now);
        if self.armed != Some(due) {
            self.armed = Some(due);
            ctx.queue.push(due, Event::BrokerTimer { node: self.node });
        }
    }
}
