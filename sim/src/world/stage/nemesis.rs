//! The nemesis: applies a [`FaultSchedule`] to the running world between simulation steps, and
//! undoes each fault's effect when its time is up (heal a partition, restore latency, restart a
//! broker). At the start of the liveness phase it heals everything still outstanding.
//!
//! Faults act on connections and members, not only on whole hosts: member faults go to the
//! member process as an [`Order`] even when several members share a client host.

use std::collections::{BTreeMap, BTreeSet};

use groupsim_wire::probe::{self, Tap};
use groupsim_wire::Millis;
use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use tracing::debug;

use crate::faults::{Fault, FaultRules, FaultSchedule, GroupApi};
use crate::probes;
use crate::record::{member_assignor, member_profile};
use crate::rng::{self, Stream};
use crate::triggers::{Trigger, TriggerAction, TriggerEvent};
use crate::watch::GroupWatch;
use crate::world::orders::{Hosts, MemberCommand, Order, SharedHistory};
use groupsim_history::{EventKind, InjectedError, MemberEvent, WorldEvent};

/// A cluster-level operation a fault asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClusterOp<'a> {
    /// Move the group's coordinator to broker `to`, whose load takes `load_ms`.
    MoveCoordinator { group: &'a str, to: i32, load_ms: Millis },
    /// Crash a broker.
    CrashBroker { node: i32 },
    /// Restart a crashed broker.
    RestartBroker { node: i32 },
    /// Add partitions to a topic (to `partitions` in total; new partitions need leaders and an
    /// empty log).
    ExpandTopic { topic: &'a str, partitions: i32 },
    /// Arm the late-request hazard at the group's coordinator: `member`'s next `api` request
    /// read before `until` reaches the coordinator `delay_ms` after it is read.
    HoldRequest { group: &'a str, member: &'a str, api: GroupApi, delay_ms: Millis, until: Millis },
    /// Broker-side BUGGIFY at the group's coordinator: its next `count` `api` requests read
    /// before `until` are answered `error`.
    InjectError { group: &'a str, api: GroupApi, error: InjectedError, count: u32, until: Millis },
    /// Start a rebalance of the group at its coordinator, as a membership change would.
    ForceRebalance { group: &'a str },
    /// Expire member `member_id`'s session at the group's coordinator now, as if it had gone
    /// silent.
    ExpelMember { group: &'a str, member_id: &'a str },
}

/// How long an injected error stays armed for a request to take it: well inside the safety
/// phase, so no fault acts after the heal.
pub const INJECT_WINDOW_MS: Millis = 2_000;

/// The cluster-level operations faults need (implemented by the world's cluster control).
pub trait ClusterOps {
    /// Why an operation could not be carried out.
    type Error: std::fmt::Display;

    /// Carries out `op` between simulation steps.
    fn apply(&mut self, now: Millis, op: ClusterOp<'_>) -> Result<(), Self::Error>;
}

/// A follow-up the nemesis owes: undoing a fault's effect.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Undo {
    Heal { host: String, peers: Vec<String> },
    HealOneWay { from: String, to: String },
    EndLoss { host: String, peers: Vec<String> },
    RestoreLatency { host: String, peers: Vec<String>, max_latency_ms: Millis },
    RestartBroker { node: i32 },
}

/// What the nemesis needs to know of the world beyond the schedule: the run seed (each trigger
/// draws from its own stream of it), the group, and the brokers a coordinator can move to.
#[derive(Clone, Debug)]
pub struct NemesisTargets {
    /// The run seed.
    pub seed: u64,
    /// The group triggers act on.
    pub group: String,
    /// Broker node ids.
    pub brokers: Vec<i32>,
    /// The group's rebalance timeout (the largest of its members'), for triggers aimed at the
    /// end of a join phase.
    pub rebalance_timeout_ms: Millis,
    /// The members' shortest heartbeat interval and session timeout: which pauses a member
    /// sleeps through unnoticed, and which it survives.
    pub heartbeat_interval_ms: Millis,
    pub session_timeout_ms: Millis,
}

/// A trigger in a run: its own random stream, how often it fired and when it last did.
struct Armed {
    trigger: Trigger,
    rng: ChaCha8Rng,
    fired: u16,
    /// A trigger fires at most once per instant: several members' requests arriving together
    /// are one protocol moment, not several.
    last_fired_at: Option<Millis>,
}

/// Applies a fault schedule.
pub struct Nemesis {
    schedule: FaultSchedule,
    targets: NemesisTargets,
    armed: Vec<Armed>,
    watch: GroupWatch,
    next: usize,
    undo: BTreeMap<(Millis, u64), Undo>,
    undo_seq: u64,
    history: SharedHistory,
    /// Every host name, for latency changes.
    hosts: Vec<String>,
    normal_max_latency_ms: Millis,
    healed_all: bool,
    /// Members given a slower next revoke callback, a stale ack or a slow batch: a cooperative
    /// member revokes only when an assignment takes a partition away, and a member with nothing
    /// to process starts no batch, so the fault may wait long past its phase.
    slowed: BTreeSet<String>,
}

impl Nemesis {
    /// A nemesis for `schedule`. Turns this thread's probe tap log on when a trigger waits for
    /// an event only probes report (and off otherwise).
    pub fn new(
        schedule: FaultSchedule,
        targets: NemesisTargets,
        history: SharedHistory,
        hosts: Vec<String>,
        normal_max_latency_ms: Millis,
    ) -> Self {
        let armed: Vec<Armed> = schedule
            .triggers
            .iter()
            .map(|t| Armed {
                trigger: t.clone(),
                rng: rng::stream(targets.seed, Stream::Trigger(t.id)),
                fired: 0,
                last_fired_at: None,
            })
            .collect();
        probe::tapping(armed.iter().any(|a| a.trigger.on.probe().is_some()));
        Self {
            schedule,
            targets,
            armed,
            watch: GroupWatch::default(),
            next: 0,
            undo: BTreeMap::new(),
            undo_seq: 0,
            history,
            hosts,
            normal_max_latency_ms,
            healed_all: false,
            slowed: BTreeSet::new(),
        }
    }

    /// Applies every fault and undo due at or before `now`, and every trigger the events
    /// recorded since the last tick fire.
    pub fn tick<W: ClusterOps + Hosts>(&mut self, world: &mut W, now: Millis, taps: Vec<Tap>) {
        let seen = {
            let history = self.history.borrow();
            self.watch.update(history.events())
        };
        if !self.healed_all {
            for s in seen {
                let (event, targets) = s.trigger_point();
                self.on_event(world, now, event, &targets);
            }
            for tap in taps {
                let Some(event) =
                    TriggerEvent::ALL.into_iter().find(|e| e.probe() == Some(tap.probe))
                else {
                    continue;
                };
                let targets: Vec<String> = tap.actor.iter().map(|a| a.to_string()).collect();
                self.on_event(world, now, event, &targets);
            }
        }
        while let Some(&(at, seq)) = self.undo.keys().next() {
            if at > now {
                break;
            }
            let undo = self.undo.remove(&(at, seq)).expect("key just seen");
            self.apply_undo(world, now, undo);
        }
        while self.next < self.schedule.faults.len() && self.schedule.faults[self.next].at_ms <= now
        {
            let fault = self.schedule.faults[self.next].fault.clone();
            self.next += 1;
            if self.healed_all {
                continue; // the safety phase is over: no new faults
            }
            self.inject(world, now, fault);
        }
    }

    /// When [`Self::tick`] next has timed work (a scheduled fault or an undo), if ever; triggers
    /// act on events, which the caller reports by ticking after them.
    pub fn next_due(&self) -> Option<Millis> {
        let undo = self.undo.keys().next().map(|&(at, _)| at);
        let fault = self.schedule.faults.get(self.next).map(|f| f.at_ms);
        let fault = fault.filter(|_| !self.healed_all);
        undo.into_iter().chain(fault).min()
    }

    /// Applies `fault` now and records it, counting the group state it struck in.
    fn inject<W: ClusterOps + Hosts>(&mut self, world: &mut W, now: Millis, fault: Fault) {
        let state = self.watch.state_name(now);
        probes::FAULT_IN_GROUP_STATE.hit_as(format_args!("{}@{state}", fault.kind().name()));
        match state.as_str() {
            "CompletingRebalance" => probes::FAULT_DURING_COMPLETING_REBALANCE.hit(),
            "PreparingRebalance" => probes::FAULT_DURING_PREPARING_REBALANCE.hit(),
            "Loading" => probes::FAULT_DURING_LOAD.hit(),
            _ => {}
        }
        if let Fault::MemberPause { duration_ms, .. } = fault {
            if duration_ms < self.targets.heartbeat_interval_ms {
                probes::PAUSE_BELOW_HEARTBEAT.hit();
            } else if duration_ms < self.targets.session_timeout_ms {
                probes::PAUSE_WITHIN_SESSION.hit();
            }
        }
        let applied = self.apply(world, now, &fault);
        if applied && matches!(fault, Fault::ForceRebalance { .. }) {
            probes::FORCED_REBALANCE.hit();
        }
        self.history.borrow_mut().world(now, WorldEvent::FaultInjected { fault, applied });
    }

    /// `event` happened, concerning `targets` (members; drawn among when several): each armed
    /// trigger waiting for it draws whether it fires.
    fn on_event<W: ClusterOps + Hosts>(
        &mut self,
        world: &mut W,
        now: Millis,
        event: TriggerEvent,
        targets: &[String],
    ) {
        for i in 0..self.armed.len() {
            let a = &mut self.armed[i];
            if a.trigger.on != event
                || a.fired >= a.trigger.max_fires
                || a.last_fired_at == Some(now)
                || a.trigger.after_ms.is_some_and(|at| now < at)
            {
                continue;
            }
            let roll = a.rng.random_range(0..1000u16);
            let pick = a.rng.random_range(0..targets.len().max(1));
            let to_pick = a.rng.random_range(0..self.targets.brokers.len().max(1));
            if roll >= a.trigger.per_mille {
                continue;
            }
            let (fault, target) = match a.trigger.action {
                TriggerAction::MoveCoordinator { load_ms } => {
                    let others: Vec<i32> = self
                        .targets
                        .brokers
                        .iter()
                        .copied()
                        .filter(|b| Some(*b) != self.watch.coordinator)
                        .collect();
                    let Some(&to) = others.get(to_pick % others.len().max(1)) else { continue };
                    let group = self.targets.group.clone();
                    (Fault::CoordinatorMove { group, to, load_ms }, format!("broker-{to}"))
                }
                action => {
                    let Some(member) = targets.get(pick).cloned() else { continue };
                    let fault = match action {
                        TriggerAction::DropConnections => {
                            Fault::ConnectionDrop { member: member.clone() }
                        }
                        TriggerAction::Pause { duration_ms } => {
                            Fault::MemberPause { member: member.clone(), duration_ms }
                        }
                        TriggerAction::Crash { restart_after_ms } => {
                            Fault::MemberCrash { member: member.clone(), restart_after_ms }
                        }
                        TriggerAction::Leave { restart_after_ms } => {
                            Fault::MemberLeave { member: member.clone(), restart_after_ms }
                        }
                        TriggerAction::SlowRevokeToDeadline { margin_ms } => {
                            // Aimed at the join phase's end: without a rebalance under way, or
                            // too close to its end, there is nothing to aim at (no fire).
                            let deadline =
                                self.watch.join_deadline(self.targets.rebalance_timeout_ms);
                            let Some(until) = deadline
                                .map(|d| d.saturating_sub(margin_ms))
                                .filter(|until| *until > now)
                            else {
                                continue;
                            };
                            Fault::SlowRevokeUntil { member: member.clone(), until_ms: until }
                        }
                        TriggerAction::MoveCoordinator { .. } => unreachable!("matched above"),
                    };
                    (fault, member)
                }
            };
            a.fired += 1;
            a.last_fired_at = Some(now);
            let trigger = a.trigger.to_string();
            probes::TRIGGER_FIRED.hit_as(event.name());
            self.history.borrow_mut().world(now, WorldEvent::TriggerFired { trigger, target });
            self.inject(world, now, fault);
        }
    }

    /// The liveness phase begins: stop injecting and undo everything still in effect, including
    /// a revoke slowdown, stale ack or slow batch that nothing has taken up yet (only members
    /// that were given one hear of it).
    pub fn heal_all<W: ClusterOps + Hosts>(&mut self, world: &mut W, now: Millis) {
        self.healed_all = true;
        for (_, undo) in std::mem::take(&mut self.undo) {
            self.apply_undo(world, now, undo);
        }
        for member in std::mem::take(&mut self.slowed) {
            self.command(world, now, &member, MemberCommand::Heal);
        }
    }

    fn later(&mut self, at: Millis, undo: Undo) {
        self.undo_seq += 1;
        self.undo.insert((at, self.undo_seq), undo);
    }

    fn command<W: Hosts>(
        &self,
        world: &mut W,
        now: Millis,
        member: &str,
        cmd: MemberCommand,
    ) -> bool {
        world.order(now, Order::Member { member: member.to_string(), command: cmd })
    }

    /// The member id `member`'s running incarnation last learned (a classic join, a KIP-848
    /// epoch), from the history; None before its first since it started.
    fn member_id_of(&self, member: &str) -> Option<String> {
        let history = self.history.borrow();
        for e in history.events().iter().rev() {
            match &e.kind {
                EventKind::World(WorldEvent::MemberStarted { member: m, .. }) if m == member => {
                    return None
                }
                EventKind::Member { member: m, event } if m == member => match event {
                    MemberEvent::Joined { member_id, .. }
                    | MemberEvent::MemberEpochChanged { member_id, .. }
                        if !member_id.is_empty() =>
                    {
                        return Some(member_id.clone())
                    }
                    _ => {}
                },
                _ => {}
            }
        }
        None
    }

    fn apply<W: ClusterOps + Hosts>(&mut self, world: &mut W, now: Millis, fault: &Fault) -> bool {
        if let Some((member, command)) = member_command(fault) {
            if matches!(
                fault,
                Fault::SlowRevoke { .. } | Fault::StaleAck { .. } | Fault::SlowBatch { .. }
            ) {
                self.slowed.insert(member.to_string());
            }
            return self.command(world, now, member, command);
        }
        match fault {
            Fault::NetworkPartition { host, peers, heal_after_ms } => {
                for peer in peers {
                    world.order(now, Order::Partition { a: host.clone(), b: peer.clone() });
                }
                self.later(
                    now + heal_after_ms,
                    Undo::Heal { host: host.clone(), peers: peers.clone() },
                );
                true
            }
            Fault::OneWayPartition { from, to, heal_after_ms } => {
                let (from, to) = (from.clone(), to.clone());
                world.order(now, Order::PartitionOneWay { from: from.clone(), to: to.clone() });
                self.later(now + heal_after_ms, Undo::HealOneWay { from, to });
                true
            }
            Fault::FrameLoss { host, per_mille, duration_ms } => {
                let peers: Vec<String> =
                    self.hosts.iter().filter(|h| *h != host).cloned().collect();
                for peer in &peers {
                    let (a, b) = (host.clone(), peer.clone());
                    world.order(now, Order::FrameLoss { a, b, per_mille: *per_mille });
                }
                self.later(now + duration_ms, Undo::EndLoss { host: host.clone(), peers });
                true
            }
            Fault::LatencySpike { host, max_latency_ms, duration_ms } => {
                let peers: Vec<String> =
                    self.hosts.iter().filter(|h| *h != host).cloned().collect();
                set_max_latency(world, now, host, &peers, *max_latency_ms);
                let normal = self.normal_max_latency_ms;
                self.later(
                    now + duration_ms,
                    Undo::RestoreLatency { host: host.clone(), peers, max_latency_ms: normal },
                );
                true
            }
            Fault::CoordinatorMove { group, to, load_ms } => report(
                world.apply(now, ClusterOp::MoveCoordinator { group, to: *to, load_ms: *load_ms }),
            ),
            Fault::BrokerCrash { node, restart_after_ms } => {
                let ok = report(world.apply(now, ClusterOp::CrashBroker { node: *node }));
                if ok {
                    self.later(now + restart_after_ms, Undo::RestartBroker { node: *node });
                }
                ok
            }
            Fault::PartitionExpansion { topic, partitions } => {
                report(world.apply(now, ClusterOp::ExpandTopic { topic, partitions: *partitions }))
            }
            Fault::LateRequest { member, api, delay_ms, within_ms } => report(world.apply(
                now,
                ClusterOp::HoldRequest {
                    group: &self.targets.group,
                    member,
                    api: *api,
                    delay_ms: *delay_ms,
                    until: now + within_ms,
                },
            )),
            Fault::InjectError { api, error, count } => report(world.apply(
                now,
                ClusterOp::InjectError {
                    group: &self.targets.group,
                    api: *api,
                    error: *error,
                    count: *count,
                    until: now + INJECT_WINDOW_MS,
                },
            )),
            Fault::ForceRebalance { .. } => {
                report(world.apply(now, ClusterOp::ForceRebalance { group: &self.targets.group }))
            }
            Fault::ExpelMember { member } => {
                let Some(member_id) = self.member_id_of(member) else {
                    debug!(%member, "expel: the member has no member id yet");
                    return false;
                };
                let group = &self.targets.group;
                report(world.apply(now, ClusterOp::ExpelMember { group, member_id: &member_id }))
            }
            Fault::ConnectionDrop { .. }
            | Fault::MemberPause { .. }
            | Fault::MemberCrash { .. }
            | Fault::MemberLeave { .. }
            | Fault::MemberUpgrade { .. }
            | Fault::StaleAck { .. }
            | Fault::SlowBatch { .. }
            | Fault::SlowRevoke { .. }
            | Fault::SlowRevokeUntil { .. } => unreachable!("member faults are given as commands"),
            // Real-time only: a schedule file holding one is refused when read, and no
            // scenario draws one.
            fault => {
                debug!(%fault, "not a simulated fault: not applied");
                false
            }
        }
    }

    fn apply_undo<W: ClusterOps + Hosts>(&mut self, world: &mut W, now: Millis, undo: Undo) {
        let description = match &undo {
            Undo::Heal { host, peers } => {
                for peer in peers {
                    world.order(now, Order::Repair { a: host.clone(), b: peer.clone() });
                }
                format!("network partition of {host} from [{}]", peers.join(", "))
            }
            Undo::HealOneWay { from, to } => {
                let (from, to) = (from.clone(), to.clone());
                world.order(now, Order::RepairOneWay { from: from.clone(), to: to.clone() });
                format!("one-way partition {from} -> {to}")
            }
            Undo::EndLoss { host, peers } => {
                for peer in peers {
                    let (a, b) = (host.clone(), peer.clone());
                    world.order(now, Order::FrameLoss { a, b, per_mille: 0 });
                }
                format!("frame loss at {host}")
            }
            Undo::RestoreLatency { host, peers, max_latency_ms } => {
                set_max_latency(world, now, host, peers, *max_latency_ms);
                format!("latency of {host}")
            }
            Undo::RestartBroker { node } => {
                if let Err(e) = world.apply(now, ClusterOp::RestartBroker { node: *node }) {
                    debug!(node, error = %e, "broker restart failed");
                }
                format!("broker-{node} restarted")
            }
        };
        self.history.borrow_mut().world(now, WorldEvent::FaultHealed { description });
    }
}

/// Sets the largest latency between `host` and each of `peers`.
fn set_max_latency(
    world: &mut impl Hosts,
    now: Millis,
    host: &str,
    peers: &[String],
    max_ms: Millis,
) {
    for peer in peers {
        let (a, b) = (host.to_string(), peer.clone());
        world.order(now, Order::MaxLatency { a, b, max_ms });
    }
}

/// The command a member fault gives its member, with the member's name; `None` for the other
/// faults.
fn member_command(fault: &Fault) -> Option<(&str, MemberCommand)> {
    use MemberCommand as C;
    Some(match fault {
        Fault::ConnectionDrop { member } => (member, C::DropConnections),
        Fault::MemberPause { member, duration_ms } => {
            (member, C::Pause { duration_ms: *duration_ms })
        }
        Fault::MemberCrash { member, restart_after_ms: after } => {
            (member, C::Crash { restart_after_ms: *after })
        }
        Fault::MemberLeave { member, restart_after_ms: after } => {
            (member, C::Leave { restart_after_ms: *after, upgrade: None })
        }
        Fault::MemberUpgrade { member, restart_after_ms: after, profile, assignors } => {
            let assignors = assignors.iter().map(|a| member_assignor(*a)).collect();
            let upgrade = Some((member_profile(*profile), assignors));
            (member, C::Leave { restart_after_ms: *after, upgrade })
        }
        Fault::StaleAck { member, delay_ms } => (member, C::StaleAck { delay_ms: *delay_ms }),
        Fault::SlowBatch { member, extra_ms } => (member, C::SlowBatch { extra_ms: *extra_ms }),
        Fault::SlowRevoke { member, extra_ms } => (member, C::SlowRevoke { extra_ms: *extra_ms }),
        Fault::SlowRevokeUntil { member, until_ms } => {
            (member, C::SlowRevokeUntil { until_ms: *until_ms })
        }
        Fault::NetworkPartition { .. }
        | Fault::OneWayPartition { .. }
        | Fault::FrameLoss { .. }
        | Fault::LatencySpike { .. }
        | Fault::CoordinatorMove { .. }
        | Fault::BrokerCrash { .. }
        | Fault::PartitionExpansion { .. }
        | Fault::ConnectionReset { .. }
        | Fault::GroupConnectionReset { .. }
        | Fault::ResponseDelay { .. }
        | Fault::Unresponsive { .. }
        | Fault::HoldResponse { .. }
        | Fault::InjectError { .. }
        | Fault::ForceRebalance { .. }
        | Fault::ExpelMember { .. }
        | Fault::LateRequest { .. } => return None,
    })
}

fn report(r: Result<(), impl std::fmt::Display>) -> bool {
    match r {
        Ok(()) => true,
        Err(e) => {
            debug!(error = %e, "fault not applied");
            false
        }
    }
}
