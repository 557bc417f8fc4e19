//! The served cluster's real-time nemesis: applies a [`ServeSchedule`] to a running
//! [`Cluster`] as its time comes, fires the schedule's event triggers on the coordinator events
//! the history records, and records every fault in the history. Driven by [`Nemesis::step`]
//! from a plain loop (every few milliseconds): the sans-IO core stays free of it, and the tokio
//! part is the gate the connections consult.
//!
//! Trigger actions on client processes (pause, crash) are handed back to the caller
//! ([`ClientAction`]): `check-client` owns the processes; `serve` alone drops such triggers.
//!
//! Triggers fire through the simulation's own view of the group ([`GroupWatch`], read from
//! the history as it is recorded) and its one mapping from what it saw to trigger events
//! ([`groupsim::watch::Seen::trigger_point`]): a served group fires the same trigger events as a
//! simulated one, classic or KIP-848. What the simulation has no counterpart for stays the
//! served cluster's own: a commit-appended drop is armed at the gate (it must act before the
//! answer leaves), and member picks (`#N`) are drawn among the members there are when the
//! fault lands.
//!
//! Every fault is recorded as `WorldEvent::FaultInjected`, naming the member or broker it
//! struck, as in a simulated run.

use std::time::{Duration, Instant};

use groupsim_coordinator::broker::BrokerControl;
use groupsim_history::WorldEvent;
use groupsim_wire::Millis;
use rand::RngExt;
use rand_chacha::ChaCha8Rng;

use super::cluster::Cluster;
use super::faults::ServeSchedule;
use super::gate::Resolved;
use groupsim::faults::Fault;
use groupsim::rng::{self, Stream};
use groupsim::triggers::{Trigger, TriggerAction, TriggerEvent};
use groupsim::watch::GroupWatch;

/// Something a fired trigger asks of a client process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClientAction {
    /// Pause (SIGSTOP) the process whose client id this is, for `duration_ms`.
    Pause { client: String, duration_ms: Millis },
    /// Kill (SIGKILL) it; restart it after `restart_after_ms`.
    Crash { client: String, restart_after_ms: Millis },
}

struct Armed {
    trigger: Trigger,
    left: u16,
    rng: ChaCha8Rng,
}

/// Applies one seed's schedule to a cluster (see the module docs).
pub struct Nemesis {
    schedule: ServeSchedule,
    /// The group named at the start (empty: the first that forms, which the watch adopts).
    group: String,
    started: Instant,
    next: usize,
    seen: usize,
    watch: GroupWatch,
    triggers: Vec<Armed>,
    /// Brokers to start again: (when, node).
    restarts: Vec<(Instant, i32)>,
    healed: bool,
}

impl Nemesis {
    /// A nemesis for `group` (empty: the first group that forms) whose fault phase starts now.
    /// Commit-appended triggers that drop connections are armed at the gate at once (they must
    /// act before the answer leaves).
    pub fn new(cluster: &Cluster, schedule: ServeSchedule, group: &str, seed: u64) -> Self {
        let mut triggers = Vec::new();
        for t in &schedule.triggers {
            let rng = rng::stream(seed, Stream::Trigger(t.id));
            if t.on == TriggerEvent::CommitAppended && t.action == TriggerAction::DropConnections {
                cluster.shared.gate.lose_commit_answers(
                    t.to_string(),
                    t.per_mille,
                    t.max_fires,
                    rng,
                );
            } else {
                triggers.push(Armed { trigger: t.clone(), left: t.max_fires, rng });
            }
        }
        Self {
            schedule,
            group: group.to_string(),
            started: Instant::now(),
            next: 0,
            seen: 0,
            watch: GroupWatch::of_group(group),
            triggers,
            restarts: Vec::new(),
            healed: false,
        }
    }

    /// Whether every timed fault has been applied.
    pub fn done(&self) -> bool {
        self.next >= self.schedule.faults.len()
    }

    /// Applies what is due and fires triggers on the events recorded since the last step;
    /// returns what fired triggers ask of client processes.
    pub fn step(&mut self, cluster: &Cluster) -> Vec<ClientAction> {
        let now = Instant::now();
        let restarts: Vec<i32> =
            self.restarts.iter().filter(|(at, _)| *at <= now).map(|(_, n)| *n).collect();
        self.restarts.retain(|(at, _)| *at > now);
        for node in restarts {
            if cluster.start_broker(node).is_ok() {
                heal(cluster, format!("broker-{node} back up"));
            }
        }
        for (label, client) in cluster.shared.gate.take_fired() {
            let fired = WorldEvent::TriggerFired { trigger: label, target: client.clone() };
            cluster.recorder().world(fired);
            // The gate closed the connection the accepted commit's answer was to go out on.
            record(cluster, Fault::ConnectionDrop { member: client }, true);
        }
        let actions = self.fire_triggers(cluster);
        if self.healed {
            return actions;
        }
        let elapsed = self.started.elapsed().as_millis() as Millis;
        while let Some(t) = self.schedule.faults.get(self.next) {
            if t.at_ms > elapsed {
                break;
            }
            let fault = t.fault.clone();
            self.next += 1;
            self.apply(cluster, &fault);
        }
        actions
    }

    /// Ends the fault phase: no more faults or triggers; the gate forgets what it held and
    /// every broker that is down comes back.
    pub fn heal(&mut self, cluster: &Cluster) {
        self.healed = true;
        self.triggers.clear();
        cluster.shared.gate.clear();
        for (_, node) in std::mem::take(&mut self.restarts) {
            if cluster.start_broker(node).is_ok() {
                heal(cluster, format!("broker-{node} back up"));
            }
        }
        heal(cluster, "heal phase: faults end".to_string());
    }

    /// The group the nemesis targets: the one named, or the first that formed.
    fn group(&self) -> String {
        self.watch.group().unwrap_or(&self.group).to_string()
    }

    /// The member a fault names, now: `(member id, client id)`. `#N` picks among the group's
    /// members; a name (`m0`) is the member whose client id it is or an incarnation of it.
    fn resolve(&self, member: &str) -> Option<(String, String)> {
        let id = match member.strip_prefix('#').map(str::parse::<u32>) {
            Some(Ok(n)) => self.watch.pick(n),
            _ => self.watch.member_id_named(member),
        }?;
        let client = self.watch.name(&id);
        Some((id, client))
    }

    fn apply(&mut self, cluster: &Cluster, fault: &Fault) {
        let gate = &cluster.shared.gate;
        let live: Vec<i32> =
            (0..cluster.addrs().len() as i32).filter(|n| cluster.is_running(*n)).collect();
        let (recorded, applied) = match fault {
            Fault::ConnectionDrop { member } => match self.resolve(member) {
                Some((_, client)) => {
                    gate.reset(Resolved::Client(client.clone()));
                    (Fault::ConnectionDrop { member: client }, true)
                }
                None => (fault.clone(), false),
            },
            Fault::GroupConnectionReset { member } => match self.resolve(member) {
                Some((_, client)) => {
                    gate.reset(Resolved::IdleGroupConnection(client.clone()));
                    (Fault::GroupConnectionReset { member: client }, true)
                }
                None => (fault.clone(), false),
            },
            Fault::ConnectionReset { broker } => {
                gate.reset(broker.map_or(Resolved::All, Resolved::Broker));
                (fault.clone(), true)
            }
            Fault::ResponseDelay { broker, delay_ms, duration_ms } => {
                let length = Duration::from_millis(*duration_ms);
                gate.window(*broker, Some(Duration::from_millis(*delay_ms)), length);
                (fault.clone(), true)
            }
            Fault::Unresponsive { broker, duration_ms } => {
                gate.window(Some(*broker), None, Duration::from_millis(*duration_ms));
                (fault.clone(), true)
            }
            Fault::BrokerCrash { node, restart_after_ms } => {
                // The last live broker stays up: a cluster with none cannot recover by itself.
                let applied = live.len() > 1 && cluster.is_running(*node);
                if applied && cluster.stop_broker(*node).is_ok() {
                    let back = Instant::now() + Duration::from_millis(*restart_after_ms);
                    self.restarts.push((back, *node));
                }
                (fault.clone(), applied)
            }
            Fault::CoordinatorMove { group, to, load_ms } => {
                let group = if group.is_empty() { self.group() } else { group.clone() };
                return self.move_coordinator(cluster, &group, Some(*to), *load_ms);
            }
            Fault::HoldResponse { api, hold_ms } => {
                gate.hold(*api, Duration::from_millis(*hold_ms));
                (fault.clone(), true)
            }
            Fault::InjectError { api, error, count } => {
                gate.inject(*api, *error, *count);
                (fault.clone(), true)
            }
            Fault::ForceRebalance { group } => {
                let group = if group.is_empty() { self.group() } else { group.clone() };
                let coordinator = cluster.group_coordinator(&group);
                if let Some(node) = coordinator {
                    cluster.control(node, BrokerControl::ForceRebalance { group: group.clone() });
                }
                (Fault::ForceRebalance { group }, coordinator.is_some())
            }
            Fault::ExpelMember { member } => {
                let group = self.group();
                let coordinator = cluster.group_coordinator(&group);
                match (self.resolve(member), coordinator) {
                    (Some((id, client)), Some(node)) => {
                        let control = BrokerControl::ExpireMember { group, member: id };
                        cluster.control(node, control);
                        (Fault::ExpelMember { member: client }, true)
                    }
                    _ => (fault.clone(), false),
                }
            }
            // Refused when a schedule is read (`Mode::Serve`) and never drawn here.
            _ => (fault.clone(), false),
        };
        record(cluster, recorded, applied);
    }

    /// Moves `group`'s coordinator to `to` or, when that broker is down or coordinates the
    /// group already (or none is named), to the next live broker after it.
    fn move_coordinator(&self, cluster: &Cluster, group: &str, to: Option<i32>, load_ms: Millis) {
        let n = cluster.addrs().len() as i32;
        let from = cluster.group_coordinator(group).unwrap_or(0);
        let start = to.filter(|b| (0..n).contains(b)).unwrap_or((from + 1) % n.max(1));
        let to = (0..n).map(|i| (start + i) % n).find(|b| *b != from && cluster.is_running(*b));
        let fault =
            Fault::CoordinatorMove { group: group.to_string(), to: to.unwrap_or(from), load_ms };
        record(cluster, fault, to.is_some());
        if let Some(to) = to {
            let _ = cluster.move_group_coordinator_loading(group, to, load_ms);
        }
    }

    /// Reads the events recorded since the last step into the group watch, and fires the
    /// triggers waiting for the trigger events it saw: each draws whether it fires and, when
    /// the event concerns several members, which one it strikes.
    fn fire_triggers(&mut self, cluster: &Cluster) -> Vec<ClientAction> {
        let events = cluster.recorder().events_since(self.seen);
        self.seen += events.len();
        let seen = self.watch.read_new(&events);
        let mut actions = Vec::new();
        if self.healed {
            return actions;
        }
        let elapsed = self.started.elapsed().as_millis() as Millis;
        for s in seen {
            let (on, targets) = s.trigger_point();
            for i in 0..self.triggers.len() {
                let armed = &mut self.triggers[i];
                let asleep = armed.trigger.after_ms.is_some_and(|at| elapsed < at);
                if armed.trigger.on != on || armed.left == 0 || targets.is_empty() || asleep {
                    continue;
                }
                let roll = armed.rng.random_range(0..1000u16);
                let client = targets[armed.rng.random_range(0..targets.len())].clone();
                if roll >= armed.trigger.per_mille {
                    continue;
                }
                armed.left -= 1;
                let (label, action) = (armed.trigger.to_string(), armed.trigger.action);
                let fired = WorldEvent::TriggerFired { trigger: label, target: client.clone() };
                cluster.recorder().world(fired);
                match action {
                    TriggerAction::DropConnections => {
                        cluster.shared.gate.reset(Resolved::Client(client.clone()));
                        record(cluster, Fault::ConnectionDrop { member: client }, true);
                    }
                    TriggerAction::MoveCoordinator { load_ms } => {
                        self.move_coordinator(cluster, &self.group(), None, load_ms)
                    }
                    TriggerAction::Pause { duration_ms } => {
                        actions.push(ClientAction::Pause { client, duration_ms })
                    }
                    TriggerAction::Crash { restart_after_ms } => {
                        actions.push(ClientAction::Crash { client, restart_after_ms })
                    }
                    // A real client's revoke callback is the application's, and a real client
                    // leaves only when its process is closed: refused when a schedule is read
                    // and never drawn (`faults::refuse_unservable_triggers`).
                    TriggerAction::SlowRevokeToDeadline { .. } | TriggerAction::Leave { .. } => {}
                }
            }
        }
        actions
    }
}

fn record(cluster: &Cluster, fault: Fault, applied: bool) {
    cluster.recorder().world(WorldEvent::FaultInjected { fault, applied });
}

fn heal(cluster: &Cluster, description: String) {
    cluster.recorder().world(WorldEvent::FaultHealed { description });
}

#[cfg(test)]
#[path = "nemesis_tests.rs"]
mod tests;
