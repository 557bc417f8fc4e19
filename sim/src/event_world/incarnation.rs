//! One incarnation of a member process: the sans-IO [`GroupMember`] and its connections. It
//! carries out the core's outputs (records its events, writes its requests on the connection to
//! their target, opening it first, closes connections) and feeds it answers, failures and
//! timeouts with the current instant, as the turmoil world's member driver does.

use std::collections::BTreeMap;
use std::rc::Rc;

use groupsim_history::EventKind;
use groupsim_member::{GroupMember, MemberOutput, RequestFailure, Target};
use groupsim_wire::{probe, Millis, RequestId};
use kafka_protocol::messages::RequestKind;

use super::client::{ClientConn, Delivery};
use super::ctx::Ctx;
use super::network::Frame;
use super::queue::{ConnId, Dir};
use crate::record::IntoHistory;
use crate::scenario::MemberPlan;

/// Who a member is, for its incarnation's work: its name, its index in the world, its client
/// host and its client id.
#[derive(Clone, Copy, Debug)]
pub(super) struct Who<'a> {
    pub(super) name: &'a str,
    pub(super) index: usize,
    pub(super) host: usize,
    pub(super) client_id: &'a str,
}

impl<'a> Who<'a> {
    /// The member of `plan`, the `index`-th of the world.
    pub(super) fn of(plan: &'a MemberPlan, index: usize) -> Self {
        Who { name: &plan.name, index, host: plan.host, client_id: &plan.config.client_id }
    }
}

/// A running member core and its connections (see the module docs).
#[derive(Debug)]
pub(super) struct Incarnation {
    member: GroupMember,
    conns: BTreeMap<Target, ClientConn>,
    /// The member's name as a probe actor, while the nemesis taps probes (else `None`).
    actor: Option<Rc<str>>,
}

impl Incarnation {
    /// A member core that has not started yet.
    pub(super) fn new(member: GroupMember, name: &str) -> Self {
        let actor = probe::is_tapping().then(|| Rc::from(name));
        Self { member, conns: BTreeMap::new(), actor }
    }

    /// The member core, with this member named as the actor of any probe it hits.
    pub(super) fn core(&mut self) -> &mut GroupMember {
        if self.actor.is_some() {
            probe::set_actor(self.actor.clone());
        }
        &mut self.member
    }

    /// Whether the core has finished (left the group, or stopped for good).
    pub(super) fn is_finished(&self) -> bool {
        self.member.is_finished()
    }

    /// The earliest instant something is due: the core's timer or a request's deadline.
    pub(super) fn deadline(&self) -> Option<Millis> {
        let requests = self.conns.values().filter_map(ClientConn::earliest_deadline).min();
        self.member.poll_timeout().into_iter().chain(requests).min()
    }

    /// The connection `conn`, if this incarnation still holds it.
    pub(super) fn conn_mut(&mut self, conn: ConnId) -> Option<&mut ClientConn> {
        self.conns.values_mut().find(|c| c.id == conn)
    }

    /// Carries out every queued output of the core (which may queue more).
    pub(super) fn drain(&mut self, ctx: &mut Ctx, who: Who<'_>) {
        while let Some(out) = self.member.poll_output() {
            match out {
                MemberOutput::Event(event) => ctx.record(EventKind::Member {
                    member: who.name.to_string(),
                    event: event.into_history(),
                }),
                MemberOutput::Close(target) => self.close(ctx, target, None),
                MemberOutput::Send { id, target, request, timeout_ms } => {
                    let deadline = ctx.now + timeout_ms;
                    self.send(ctx, who, target, id, request, deadline);
                }
            }
        }
    }

    fn send(
        &mut self,
        ctx: &mut Ctx,
        who: Who<'_>,
        target: Target,
        id: RequestId,
        request: RequestKind,
        deadline: Millis,
    ) {
        let conn = self.conns.entry(target).or_insert_with(|| {
            let node = match target {
                Target::Broker(n) | Target::Coordinator(n) => n,
            };
            let conn = ctx.net.open(&mut ctx.queue, ctx.now, who.index, who.host, node);
            ClientConn::new(conn, who.client_id)
        });
        if !conn.is_ready() {
            conn.queued.push((id, request, deadline));
            return;
        }
        match conn.send(id, request, deadline) {
            Ok(frame) => {
                let conn = conn.id;
                ctx.net.send(&mut ctx.queue, ctx.now, conn, Dir::ToBroker, Frame::Data(frame));
            }
            Err(why) => {
                let now = ctx.now;
                self.core().handle_failure(now, id, RequestFailure::Unsupported(why));
            }
        }
    }

    /// Drops the connection to `target` (the broker sees it closed); its requests fail
    /// (`timed_out` ones with Timeout, the others Disconnected).
    pub(super) fn close(&mut self, ctx: &mut Ctx, target: Target, timed_out: Option<Millis>) {
        let Some(conn) = self.conns.remove(&target) else { return };
        ctx.net.send(&mut ctx.queue, ctx.now, conn.id, Dir::ToBroker, Frame::Close);
        let now = ctx.now;
        for (id, deadline) in conn.request_ids() {
            let failure = match timed_out {
                Some(t) if deadline <= t => RequestFailure::Timeout,
                _ => RequestFailure::Disconnected,
            };
            self.core().handle_failure(now, id, failure);
        }
    }

    /// Drops every connection.
    pub(super) fn close_all(&mut self, ctx: &mut Ctx) {
        let targets: Vec<Target> = self.conns.keys().copied().collect();
        for t in targets {
            self.close(ctx, t, None);
        }
    }

    /// Drops every connection (without telling the core): the process is gone.
    pub(super) fn abort(self, ctx: &mut Ctx) {
        for conn in self.conns.into_values() {
            ctx.net.send(&mut ctx.queue, ctx.now, conn.id, Dir::ToBroker, Frame::Close);
        }
    }

    /// Drops the connections with a request past its deadline, in target order.
    pub(super) fn expire_requests(&mut self, ctx: &mut Ctx) {
        let now = ctx.now;
        let overdue = |c: &ClientConn| c.earliest_deadline().is_some_and(|d| d <= now);
        while let Some(target) = self.conns.iter().find(|(_, c)| overdue(c)).map(|(t, _)| *t) {
            self.close(ctx, target, Some(now));
        }
    }

    /// Takes what a connection delivered: the handshake's result (queued requests go out), an
    /// answer (to the core, if it answers the oldest request in flight; else the connection is
    /// dropped), or a failure (the connection is dropped).
    pub(super) fn take(&mut self, ctx: &mut Ctx, who: Who<'_>, delivery: Delivery) {
        let conn = match &delivery {
            Delivery::Connected { conn, .. }
            | Delivery::Response { conn, .. }
            | Delivery::Failed { conn, .. } => *conn,
        };
        let Some(target) = self.conns.iter().find(|(_, c)| c.id == conn).map(|(t, _)| *t) else {
            return; // a connection this incarnation dropped since
        };
        let c = self.conns.get_mut(&target).expect("found above");
        match delivery {
            Delivery::Connected { versions, .. } => {
                c.take_up(versions);
                for (id, request, deadline) in std::mem::take(&mut c.queued) {
                    self.send(ctx, who, target, id, request, deadline);
                }
            }
            Delivery::Response { correlation_id, response, .. } => match c.in_flight.front() {
                Some(&(corr, id, _)) if corr == correlation_id => {
                    c.in_flight.pop_front();
                    let now = ctx.now;
                    self.core().handle_response(now, id, *response);
                }
                _ => self.close(ctx, target, None),
            },
            Delivery::Failed { reason, .. } => {
                tracing::debug!(member = who.name, ?target, %reason, "connection failed");
                self.close(ctx, target, None)
            }
        }
    }
}
