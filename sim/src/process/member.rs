//! A member process on a client host: it starts at its planned time and runs incarnations of
//! the member core until one finishes for good. A crash or an ordered leave ends an incarnation;
//! the next one, after the restart delay, is a new member (new member id, no memory of the old
//! one's progress). The fault injector reaches it through [`MemberCommand`]s.
//!
//! A pause stops the world for the process: no command is taken, no timer fires and nothing the
//! connections delivered reaches the core until it ends; then the commands given meanwhile go
//! first, then the deliveries, then timers. The host's connections keep reading meanwhile, as
//! a client's network threads would.
//!
//! The host calls [`MemberProcess::start`] at [`MemberProcess::start_at`] and at every
//! [`Action::RestartAt`], [`MemberProcess::pause_end`] at every [`Action::PauseUntil`], and
//! [`MemberProcess::timer`] when the last [`Action::Timer`] (or [`MemberProcess::deadline`])
//! says; it hands over connection deliveries and commands as they come, and carries out the
//! [`Action`]s after each call.

use std::collections::VecDeque;

use groupsim_member::{GroupMember, MemberConfig, MemberFault};
use groupsim_wire::Millis;

use super::actions::{Action, ConnKey, Delivery, Settle};
use super::incarnation::{Incarnation, Out};
use crate::scenario::MemberPlan;
use crate::world::orders::{client_host, MemberCommand};
use groupsim_history::{EventKind, WorldEvent};

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
pub struct MemberProcess {
    plan: MemberPlan,
    config: MemberConfig,
    next_config: MemberConfig,
    incarnation: u64,
    leave_at: Option<Millis>,
    /// Set by an ordered leave: restart this long after the core finished.
    restart_after: Option<Millis>,
    life: Life,
    /// Commands given and not taken yet (they wait while paused).
    commands: VecDeque<MemberCommand>,
    paused: bool,
    /// When the pause ends: pauses that overlap end with the last of them.
    paused_until: Millis,
    /// What the connections delivered while the process was paused.
    deliveries: VecDeque<Delivery>,
    next_key: ConnKey,
    actions: VecDeque<Action>,
    /// Its host carries requests and answers as values where it can ([`Action::Hand`]).
    hand_over: bool,
}

impl MemberProcess {
    /// The process of `plan`, not started yet.
    pub fn new(plan: MemberPlan) -> Self {
        Self {
            config: plan.config.clone(),
            next_config: plan.config.clone(),
            leave_at: plan.leave_ms,
            plan,
            incarnation: 0,
            restart_after: None,
            life: Life::Waiting,
            commands: VecDeque::new(),
            paused: false,
            paused_until: 0,
            deliveries: VecDeque::new(),
            next_key: 0,
            actions: VecDeque::new(),
            hand_over: false,
        }
    }

    /// Its host is in-process and carries the requests [`groupsim_wire::conn::handoff`] hands
    /// over as values ([`Action::Hand`]), and their answers ([`Delivery::Handed`]), instead of
    /// their frames: the same run, without encoding and decoding them.
    pub fn hand_over_values(mut self) -> Self {
        self.hand_over = true;
        self
    }

    /// Its planned name (`m0`, …).
    pub fn name(&self) -> &str {
        &self.plan.name
    }

    /// Its plan.
    pub fn plan(&self) -> &MemberPlan {
        &self.plan
    }

    /// When it first starts.
    pub fn start_at(&self) -> Millis {
        self.plan.start_ms
    }

    /// Whether it takes commands (from its first start until it finishes for good).
    pub fn takes_commands(&self) -> bool {
        matches!(self.life, Life::Running(_) | Life::Down)
    }

    /// Whether it has finished for good.
    pub fn is_finished(&self) -> bool {
        matches!(self.life, Life::Finished)
    }

    /// Whether it is paused.
    pub fn is_paused(&self) -> bool {
        self.paused
    }

    /// Whether connection `conn` belongs to its running incarnation.
    pub fn holds(&self, conn: ConnKey) -> bool {
        matches!(&self.life, Life::Running(inc) if inc.holds(conn))
    }

    /// The next action to carry out.
    pub fn poll_action(&mut self) -> Option<Action> {
        self.actions.pop_front()
    }

    /// When [`Self::timer`] is next due (none while paused, down or finished): the core's timer,
    /// a request's deadline or the scheduled leave.
    pub fn deadline(&self) -> Option<Millis> {
        match &self.life {
            Life::Running(inc) if !self.paused => {
                inc.deadline().into_iter().chain(self.leave_at).min()
            }
            _ => None,
        }
    }

    fn record(&mut self, event: WorldEvent) {
        self.actions.push_back(Action::Record(EventKind::World(event)));
    }

    fn settling(&mut self, s: Settle) {
        self.actions.push_back(Action::Settling(s));
    }

    /// The incarnation and where its actions go.
    fn running(&mut self) -> Option<(&mut Incarnation, Out<'_>)> {
        match &mut self.life {
            Life::Running(inc) => Some((
                inc,
                Out {
                    actions: &mut self.actions,
                    next_key: &mut self.next_key,
                    hand_over: self.hand_over,
                },
            )),
            _ => None,
        }
    }

    /// The process starts (its planned start, or the restart after a crash or leave): a new
    /// incarnation of the core begins.
    pub fn start(&mut self, now: Millis) {
        match self.life {
            Life::Waiting => self.actions.push_back(Action::TakesCommands(true)),
            Life::Down => {
                // Commands given while the process was down are lost, as they would be.
                self.commands.clear();
                self.incarnation += 1;
                self.settling(Settle::Settled);
                let description = format!("{} restarted", self.plan.name);
                self.record(WorldEvent::FaultHealed { description });
            }
            Life::Running(_) | Life::Finished => return,
        }
        let (name, group, host) = (
            self.plan.name.clone(),
            self.plan.config.group_id.clone(),
            client_host(self.plan.host),
        );
        self.record(if self.config.admin_observer || self.config.invalid_request_prober {
            WorldEvent::ObserverStarted { observer: name, group, host }
        } else {
            WorldEvent::MemberStarted { member: name, group, host }
        });
        let seed =
            self.plan.seed.wrapping_add(self.incarnation.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let plugin = self.plan.plugin.as_ref().and_then(|kind| kind.build(&self.config, seed));
        let core = match plugin {
            Some(member) => GroupMember::Plugin(member),
            None => GroupMember::new(self.config.clone(), seed),
        };
        let pinned = self.config.profile.pinned_api_versions();
        let (name, topics) = (&self.plan.name, &self.config.topics);
        let mut inc = Box::new(Incarnation::new(core, name, self.incarnation, topics, pinned));
        self.next_config = self.config.clone();
        self.restart_after = None;
        inc.input(
            &mut Out {
                actions: &mut self.actions,
                next_key: &mut self.next_key,
                hand_over: self.hand_over,
            },
            |m| m.start(now),
        );
        self.life = Life::Running(inc);
        self.after_input(now);
    }

    /// Carries out the core's outputs; ends the incarnation if the core finished, else says
    /// when its timer is due.
    fn after_input(&mut self, now: Millis) {
        let Some((inc, mut out)) = self.running() else { return };
        inc.drain(&mut out, now);
        if inc.is_finished() {
            let restart = self.restart_after;
            self.end(now, restart);
        } else {
            self.actions.push_back(Action::Timer(self.deadline()));
        }
    }

    /// Ends the incarnation: its connections close; it restarts after `restart` if given.
    fn end(&mut self, now: Millis, restart: Option<Millis>) {
        let Life::Running(inc) = std::mem::replace(&mut self.life, Life::Down) else { return };
        inc.abort(&mut Out {
            actions: &mut self.actions,
            next_key: &mut self.next_key,
            hand_over: self.hand_over,
        });
        self.deliveries.clear();
        self.config = self.next_config.clone();
        self.record(WorldEvent::MemberStopped { member: self.plan.name.clone() });
        match restart {
            Some(after_ms) => self.actions.push_back(Action::RestartAt(now + after_ms)),
            None => {
                self.life = Life::Finished;
                self.commands.clear();
                self.actions.push_back(Action::TakesCommands(false));
            }
        }
    }

    /// The timer is due at `now`: the scheduled leave if due, requests past their deadline
    /// dropped, the core's timers fired.
    pub fn timer(&mut self, now: Millis) {
        if self.paused {
            return;
        }
        let leave = self.leave_at.is_some_and(|t| t <= now);
        if leave && matches!(self.life, Life::Running(_)) {
            self.leave_at = None;
            let member = self.plan.name.clone();
            self.record(WorldEvent::MemberLeaveRequested { member });
        }
        let Some((inc, mut out)) = self.running() else { return };
        if leave {
            inc.input(&mut out, |m| m.leave(now));
        }
        inc.expire_requests(&mut out, now);
        inc.input(&mut out, |m| m.handle_timeout(now));
        self.after_input(now);
    }

    /// A connection delivered something (held while paused).
    pub fn deliver(&mut self, now: Millis, delivery: Delivery) {
        if !matches!(self.life, Life::Running(_)) {
            return;
        }
        if self.paused {
            self.deliveries.push_back(delivery);
            return;
        }
        let Some((inc, mut out)) = self.running() else { return };
        inc.take(&mut out, now, delivery);
        self.after_input(now);
    }

    /// Writing on connection `conn` failed (a host whose writes can fail reports it).
    pub fn write_failed(&mut self, now: Millis, conn: ConnKey) {
        let Some((inc, mut out)) = self.running() else { return };
        inc.write_failed(&mut out, now, conn);
        self.after_input(now);
    }

    /// A command is given; [`Self::take_commands`] takes it.
    pub fn give(&mut self, command: MemberCommand) {
        self.commands.push_back(command);
    }

    /// Takes the commands given, in order (while paused only another pause, which overlaps it;
    /// the rest wait; while down they are lost).
    pub fn take_commands(&mut self, now: Millis) {
        loop {
            match self.life {
                Life::Running(_) if !self.paused => {}
                Life::Running(_)
                    if matches!(self.commands.front(), Some(MemberCommand::Pause { .. })) => {}
                Life::Down => return self.commands.clear(),
                _ => return,
            }
            let Some(command) = self.commands.pop_front() else { return };
            self.command(now, command);
        }
    }

    fn command(&mut self, now: Millis, command: MemberCommand) {
        if !matches!(self.life, Life::Running(_)) {
            return;
        }
        match command {
            MemberCommand::Pause { duration_ms } => {
                // Stop the world: nothing is read, no timer fires, nothing is sent. A pause
                // while paused overlaps the one under way: the process resumes when the later
                // of the two ends.
                self.settling(Settle::Disturbed);
                let until = now + duration_ms;
                if !self.paused || until > self.paused_until {
                    self.paused_until = until;
                    self.actions.push_back(Action::PauseUntil(until));
                }
                self.paused = true;
                return;
            }
            MemberCommand::Crash { restart_after_ms } => {
                self.settling(Settle::Disturbed);
                return self.end(now, Some(restart_after_ms));
            }
            MemberCommand::Leave { restart_after_ms, ref upgrade } => {
                self.settling(Settle::Disturbed);
                self.restart_after = Some(restart_after_ms);
                if let Some((profile, assignors)) = upgrade {
                    self.next_config.profile = *profile;
                    self.next_config.assignors = assignors.clone();
                }
            }
            MemberCommand::StaleAck { delay_ms } => {
                self.settling(Settle::ActsUntil(now + delay_ms))
            }
            MemberCommand::SlowBatch { extra_ms } => {
                self.settling(Settle::ActsUntil(now + extra_ms))
            }
            MemberCommand::SlowRevoke { extra_ms } => {
                self.settling(Settle::ActsUntil(now + extra_ms))
            }
            MemberCommand::SlowRevokeUntil { until_ms } => {
                self.settling(Settle::ActsUntil(until_ms))
            }
            MemberCommand::DropConnections | MemberCommand::Heal => {}
        }
        let Some((inc, mut out)) = self.running() else { return };
        match command {
            MemberCommand::DropConnections => inc.close_all(&mut out, now),
            MemberCommand::Leave { .. } => inc.input(&mut out, |m| m.leave(now)),
            MemberCommand::StaleAck { delay_ms } => {
                inc.input(&mut out, |m| m.inject(now, MemberFault::StaleAck { delay_ms }))
            }
            MemberCommand::SlowBatch { extra_ms } => {
                inc.input(&mut out, |m| m.inject(now, MemberFault::SlowBatch { extra_ms }))
            }
            MemberCommand::SlowRevoke { extra_ms } => {
                inc.input(&mut out, |m| m.inject(now, MemberFault::SlowRevoke { extra_ms }))
            }
            MemberCommand::SlowRevokeUntil { until_ms } => {
                inc.input(&mut out, |m| m.inject(now, MemberFault::SlowRevokeUntil { until_ms }))
            }
            MemberCommand::Heal => inc.input(&mut out, |m| m.heal_pending_faults()),
            MemberCommand::Pause { .. } | MemberCommand::Crash { .. } => {}
        }
        self.after_input(now);
    }

    /// The pause ends: the commands given meanwhile, then the deliveries (timers come after,
    /// at [`Self::deadline`]).
    pub fn pause_end(&mut self, now: Millis) {
        if !self.paused || now < self.paused_until {
            return; // not paused, or a later pause overlapped this one
        }
        self.paused = false;
        self.settling(Settle::Settled);
        self.take_commands(now);
        while !self.paused {
            let Some(d) = self.deliveries.pop_front() else { break };
            self.deliver(now, d);
        }
        self.actions.push_back(Action::Timer(self.deadline()));
    }
}
