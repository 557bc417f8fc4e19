//! A member process on a client host: it starts at its planned time and runs incarnations of
//! the member core until one finishes for good. A crash or an ordered leave ends an incarnation;
//! the next one, after the restart delay, is a new member (new member id, no memory of the old
//! one's progress). The nemesis reaches it through its control channel, as in the turmoil world.
//!
//! A pause stops the world for the process: no command is taken, no timer fires and nothing the
//! connections delivered reaches the core until it ends; then commands go first, then
//! deliveries, then timers (the turmoil driver's biased order). The connections themselves keep
//! reading meanwhile, as a client's network threads would.

use std::collections::VecDeque;

use groupsim_history::{EventKind, WorldEvent};
use groupsim_member::{GroupMember, MemberConfig, MemberFault};
use groupsim_wire::Millis;
use tokio::sync::mpsc;

use super::client::Delivery;
use super::ctx::Ctx;
use super::incarnation::{Incarnation, Who};
use super::network::Frame;
use super::queue::{ConnId, Dir, Event};
use crate::host::client_host;
use crate::nemesis::MemberCommand;
use crate::scenario::MemberPlan;

#[derive(Debug)]
enum Life {
    /// Before its planned start.
    Waiting,
    Running(Box<Incarnation>),
    /// Between a crash or ordered leave and the restart.
    Down,
    /// Left for good.
    Finished,
}

/// One member process (see the module docs).
#[derive(Debug)]
pub(super) struct MemberProcess {
    index: usize,
    plan: MemberPlan,
    config: MemberConfig,
    next_config: MemberConfig,
    incarnation: u64,
    leave_at: Option<Millis>,
    /// Set by an ordered leave: restart this long after the core finished.
    restart_after: Option<Millis>,
    life: Life,
    commands: Option<mpsc::UnboundedReceiver<MemberCommand>>,
    paused: bool,
    /// What the connections delivered while the process was paused.
    deliveries: VecDeque<Delivery>,
    /// The instant its timer event is queued for.
    armed: Option<Millis>,
    /// The instant its timer last fired (a deadline that does not clear waits 1 ms, not forever).
    fired_at: Option<Millis>,
}

impl MemberProcess {
    /// The process of `plan`, the `index`-th member of the world; its start is queued.
    pub(super) fn new(ctx: &mut Ctx, index: usize, plan: MemberPlan) -> Self {
        ctx.queue.push(plan.start_ms, Event::MemberStart { member: index });
        Self {
            index,
            config: plan.config.clone(),
            next_config: plan.config.clone(),
            leave_at: plan.leave_ms,
            plan,
            incarnation: 0,
            restart_after: None,
            life: Life::Waiting,
            commands: None,
            paused: false,
            deliveries: VecDeque::new(),
            armed: None,
            fired_at: None,
        }
    }

    fn record(&self, ctx: &Ctx, event: WorldEvent) {
        ctx.record(EventKind::World(event));
    }

    /// The process starts (its planned start, or the restart after a crash or leave): a new
    /// incarnation of the core begins.
    pub(super) fn start(&mut self, ctx: &mut Ctx) {
        match self.life {
            Life::Waiting => {
                let (tx, rx) = mpsc::unbounded_channel();
                ctx.controls.borrow_mut().insert(self.plan.name.clone(), tx);
                self.commands = Some(rx);
            }
            Life::Down => {
                // Commands sent while the process was down are lost, as they would be.
                self.discard_commands();
                self.incarnation += 1;
                ctx.settling.borrow_mut().settle(&self.plan.name);
                let description = format!("{} restarted", self.plan.name);
                self.record(ctx, WorldEvent::FaultHealed { description });
            }
            Life::Running(_) | Life::Finished => return,
        }
        self.record(
            ctx,
            WorldEvent::MemberStarted {
                member: self.plan.name.clone(),
                group: self.plan.config.group_id.clone(),
                host: client_host(self.plan.host),
            },
        );
        let seed =
            self.plan.seed.wrapping_add(self.incarnation.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let member = GroupMember::new(self.config.clone(), seed);
        self.next_config = self.config.clone();
        self.restart_after = None;
        let mut inc = Box::new(Incarnation::new(member, &self.plan.name));
        inc.core().start(ctx.now);
        self.life = Life::Running(inc);
        self.after_input(ctx);
    }

    fn discard_commands(&mut self) {
        if let Some(rx) = &mut self.commands {
            while rx.try_recv().is_ok() {}
        }
    }

    /// Carries out the core's outputs; ends the incarnation if the core finished, else arms the
    /// timer for its next deadline.
    fn after_input(&mut self, ctx: &mut Ctx) {
        let who = Who::of(&self.plan, self.index);
        let Life::Running(inc) = &mut self.life else { return };
        inc.drain(ctx, who);
        if inc.is_finished() {
            let restart = self.restart_after;
            self.end(ctx, restart);
        } else {
            self.arm(ctx);
        }
    }

    /// Ends the incarnation: its connections close; it restarts after `restart` if given.
    fn end(&mut self, ctx: &mut Ctx, restart: Option<Millis>) {
        let Life::Running(inc) = std::mem::replace(&mut self.life, Life::Down) else { return };
        inc.abort(ctx);
        self.deliveries.clear();
        self.armed = None;
        self.config = self.next_config.clone();
        self.record(ctx, WorldEvent::MemberStopped { member: self.plan.name.clone() });
        match restart {
            Some(after_ms) => {
                ctx.queue.push(ctx.now + after_ms, Event::MemberStart { member: self.index })
            }
            None => {
                self.life = Life::Finished;
                self.commands = None;
                ctx.controls.borrow_mut().remove(&self.plan.name);
            }
        }
    }

    fn arm(&mut self, ctx: &mut Ctx) {
        let Life::Running(inc) = &self.life else { return };
        if self.paused {
            return;
        }
        let Some(mut due) = inc.deadline().into_iter().chain(self.leave_at).min() else {
            return;
        };
        if due <= ctx.now && self.fired_at == Some(ctx.now) {
            due = ctx.now + 1;
        }
        let due = due.max(ctx.now);
        if self.armed != Some(due) {
            self.armed = Some(due);
            ctx.queue.push(due, Event::MemberTimer { member: self.index });
        }
    }

    /// The timer event queued for `ctx.now`: the scheduled leave if due, requests past their
    /// deadline dropped, the core's timers fired.
    pub(super) fn timer(&mut self, ctx: &mut Ctx) {
        if self.armed != Some(ctx.now) {
            return; // re-armed since
        }
        self.armed = None;
        let now = ctx.now;
        let Life::Running(inc) = &mut self.life else { return };
        if self.paused {
            return;
        }
        self.fired_at = Some(now);
        if self.leave_at.is_some_and(|t| t <= now) {
            self.leave_at = None;
            ctx.record(EventKind::World(WorldEvent::MemberLeaveRequested {
                member: self.plan.name.clone(),
            }));
            inc.core().leave(now);
        }
        inc.expire_requests(ctx);
        inc.core().handle_timeout(now);
        self.after_input(ctx);
    }

    /// The broker accepted connection `conn`: its handshake starts (paused or not).
    pub(super) fn accepted(&mut self, ctx: &mut Ctx, conn: ConnId) {
        let Life::Running(inc) = &mut self.life else { return };
        let Some(frame) = inc.conn_mut(conn).and_then(|c| c.on_accepted()) else { return };
        ctx.net.send(&mut ctx.queue, ctx.now, conn, Dir::ToBroker, Frame::Data(frame));
    }

    /// Connection `conn` was refused.
    pub(super) fn refused(&mut self, ctx: &mut Ctx, conn: ConnId) {
        let Life::Running(inc) = &mut self.life else { return };
        if let Some(d) = inc.conn_mut(conn).and_then(|c| c.on_refused()) {
            self.deliver(ctx, d);
        }
    }

    /// A frame from the broker landed on connection `conn`.
    pub(super) fn frame(&mut self, ctx: &mut Ctx, conn: ConnId, frame: Frame) {
        let Life::Running(inc) = &mut self.life else { return };
        if let Some(d) = inc.conn_mut(conn).and_then(|c| c.on_frame(frame)) {
            self.deliver(ctx, d);
        }
    }

    fn deliver(&mut self, ctx: &mut Ctx, delivery: Delivery) {
        if self.paused {
            self.deliveries.push_back(delivery);
            return;
        }
        let who = Who::of(&self.plan, self.index);
        let Life::Running(inc) = &mut self.life else { return };
        inc.take(ctx, who, delivery);
        self.after_input(ctx);
    }

    /// Takes the commands the nemesis sent, in order (none while paused: they wait; while down
    /// they are lost).
    pub(super) fn take_commands(&mut self, ctx: &mut Ctx) {
        loop {
            match self.life {
                Life::Running(_) if !self.paused => {}
                Life::Down => return self.discard_commands(),
                _ => return,
            }
            let Some(Ok(command)) = self.commands.as_mut().map(|rx| rx.try_recv()) else {
                return;
            };
            self.command(ctx, command);
        }
    }

    fn command(&mut self, ctx: &mut Ctx, command: MemberCommand) {
        let now = ctx.now;
        let name = self.plan.name.clone();
        let Life::Running(inc) = &mut self.life else { return };
        match command {
            MemberCommand::DropConnections => inc.close_all(ctx),
            MemberCommand::Pause { duration_ms } => {
                // Stop the world: nothing is read, no timer fires, nothing is sent.
                ctx.settling.borrow_mut().disturb(&name);
                self.paused = true;
                ctx.queue.push(now + duration_ms, Event::PauseEnd { member: self.index });
                return;
            }
            MemberCommand::Crash { restart_after_ms } => {
                ctx.settling.borrow_mut().disturb(&name);
                return self.end(ctx, Some(restart_after_ms));
            }
            MemberCommand::Leave { restart_after_ms, upgrade } => {
                ctx.settling.borrow_mut().disturb(&name);
                self.restart_after = Some(restart_after_ms);
                if let Some((profile, assignors)) = upgrade {
                    self.next_config.profile = profile;
                    self.next_config.assignors = assignors;
                }
                inc.core().leave(now);
            }
            MemberCommand::StaleAck { delay_ms } => {
                ctx.settling.borrow_mut().acts_until(now + delay_ms);
                inc.core().inject(now, MemberFault::StaleAck { delay_ms });
            }
            MemberCommand::SlowRevoke { extra_ms } => {
                ctx.settling.borrow_mut().acts_until(now + extra_ms);
                inc.core().inject(now, MemberFault::SlowRevoke { extra_ms });
            }
            MemberCommand::SlowRevokeUntil { until_ms } => {
                ctx.settling.borrow_mut().acts_until(until_ms);
                inc.core().inject(now, MemberFault::SlowRevokeUntil { until_ms });
            }
            MemberCommand::Heal => inc.core().heal_pending_faults(),
        }
        self.after_input(ctx);
    }

    /// The pause ends: commands sent meanwhile, then deliveries, then timers.
    pub(super) fn pause_end(&mut self, ctx: &mut Ctx) {
        if !self.paused {
            return;
        }
        self.paused = false;
        ctx.settling.borrow_mut().settle(&self.plan.name);
        self.take_commands(ctx);
        while !self.paused {
            let Some(d) = self.deliveries.pop_front() else { break };
            self.deliver(ctx, d);
        }
        self.arm(ctx);
    }
}
