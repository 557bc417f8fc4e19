//! The served cluster's real-time nemesis: applies a [`ServeSchedule`] to a running
//! [`Cluster`] as its time comes, fires the schedule's event triggers on the coordinator events
//! the history records, and records every fault in the history. Driven by [`Nemesis::step`]
//! from a plain loop (every few milliseconds): the sans-IO core stays free of it, and the tokio
//! part is the gate the connections consult.
//!
//! Trigger actions on client processes (pause, crash) are handed back to the caller
//! ([`ClientAction`]): `check-client` owns the processes; `serve` alone drops such triggers.
//!
//! A KIP-848 consumer group has no JoinGroup or SyncGroup; its triggers fire on the moments
//! that play the same part: a new target assignment computed (the classic group entering
//! CompletingRebalance, aimed at one member of the target, by epoch), a member asked to revoke
//! partitions (a JoinGroup answer telling it the rebalance is on), a member handed partitions
//! (a SyncGroup answer bringing its assignment), and a commit appended as for a classic group.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use groupsim_coordinator::broker::BrokerControl;
use groupsim_history::{ConsumerGroupEvent, CoordinatorEvent, EventKind, GroupState, WorldEvent};
use groupsim_wire::Millis;
use rand::RngExt;
use rand_chacha::ChaCha8Rng;

use super::cluster::Cluster;
use super::faults::{ResetScope, ServeFault, ServeSchedule};
use super::gate::Resolved;
use crate::faults::Fault;
use crate::rng::{self, Stream};
use crate::triggers::{Trigger, TriggerAction, TriggerEvent};

/// Something a fired trigger asks of a client process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClientAction {
    /// Pause (SIGSTOP) the process whose client id this is, for `duration_ms`.
    Pause { client: String, duration_ms: Millis },
    /// Kill (SIGKILL) it; restart it after `restart_after_ms`.
    Crash { client: String, restart_after_ms: Millis },
}

/// The group as the history shows it, for picking targets.
#[derive(Default)]
struct GroupWatch {
    clients: BTreeMap<String, String>,
    members: Vec<String>,
    leader: Option<String>,
}

impl GroupWatch {
    fn client_of(&self, member: &str) -> Option<String> {
        self.clients.get(member).cloned()
    }

    /// The member a pick names among the current members (sorted by member id).
    fn pick(&self, pick: u32) -> Option<String> {
        (!self.members.is_empty()).then(|| self.members[pick as usize % self.members.len()].clone())
    }
}

struct Armed {
    trigger: Trigger,
    left: u16,
    rng: ChaCha8Rng,
}

/// Applies one seed's schedule to a cluster (see the module docs).
pub struct Nemesis {
    schedule: ServeSchedule,
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
    /// A nemesis for `group` (empty: the first group that forms) whose fault phase starts now. Commit-appended triggers that drop
    /// connections are armed at the gate at once (they must act before the answer leaves).
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
            watch: GroupWatch::default(),
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
            let description = format!("commit answer to {client} lost after the append");
            cluster.recorder().world(WorldEvent::ServeFault { description, duration_ms: 0 });
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

    fn apply(&mut self, cluster: &Cluster, fault: &ServeFault) {
        let gate = &cluster.shared.gate;
        let live: Vec<i32> =
            (0..cluster.addrs().len() as i32).filter(|n| cluster.is_running(*n)).collect();
        match fault {
            ServeFault::ConnectionReset { scope } => {
                let (resolved, member) = match scope {
                    ResetScope::All => (Some(Resolved::All), None),
                    ResetScope::Broker(b) => (Some(Resolved::Broker(*b)), None),
                    ResetScope::Member(p) => {
                        let client = self.pick_client(*p);
                        (client.clone().map(Resolved::Client), client)
                    }
                    ResetScope::CoordinatorConnection(p) => {
                        let client = self.pick_client(*p);
                        (client.clone().map(Resolved::IdleGroupConnection), client)
                    }
                };
                let applied = resolved.is_some();
                if let Some(r) = resolved {
                    gate.reset(r);
                }
                match (scope, member) {
                    (ResetScope::Member(_), Some(member)) => {
                        record(cluster, Fault::ConnectionDrop { member }, true)
                    }
                    _ => serve_fault(cluster, fault, 0, applied),
                }
            }
            ServeFault::ResponseDelay { broker, delay_ms, duration_ms } => {
                let length = Duration::from_millis(*duration_ms);
                gate.window(*broker, Some(Duration::from_millis(*delay_ms)), length);
                let host = broker.map_or("all brokers".to_string(), |b| format!("broker-{b}"));
                let spike = Fault::LatencySpike {
                    host,
                    max_latency_ms: *delay_ms,
                    duration_ms: *duration_ms,
                };
                record(cluster, spike, true);
            }
            ServeFault::Unresponsive { broker, duration_ms } => {
                gate.window(Some(*broker), None, Duration::from_millis(*duration_ms));
                serve_fault(cluster, fault, *duration_ms, true);
            }
            ServeFault::BrokerDown { broker, down_ms } => {
                // The last live broker stays up: a cluster with none cannot recover by itself.
                let applied = live.len() > 1 && cluster.is_running(*broker);
                let crash = Fault::BrokerCrash { node: *broker, restart_after_ms: *down_ms };
                record(cluster, crash, applied);
                if applied && cluster.stop_broker(*broker).is_ok() {
                    let back = Instant::now() + Duration::from_millis(*down_ms);
                    self.restarts.push((back, *broker));
                }
            }
            ServeFault::CoordinatorMove { load_ms } => self.move_coordinator(cluster, *load_ms),
            ServeFault::HoldResponse { api, hold_ms } => {
                gate.hold(*api, Duration::from_millis(*hold_ms));
                serve_fault(cluster, fault, *hold_ms, true);
            }
            ServeFault::InjectError { api, error, count } => {
                gate.inject(*api, *error, *count);
                serve_fault(cluster, fault, 0, true);
            }
            ServeFault::ForceRebalance => {
                let coordinator = cluster.group_coordinator(&self.group);
                if let Some(node) = coordinator {
                    cluster
                        .control(node, BrokerControl::ForceRebalance { group: self.group.clone() });
                }
                serve_fault(cluster, fault, 0, coordinator.is_some());
            }
            ServeFault::ExpelMember { pick } => {
                let member = self.watch.pick(*pick);
                let coordinator = cluster.group_coordinator(&self.group);
                let applied = member.is_some() && coordinator.is_some();
                if let (Some(member), Some(node)) = (member.clone(), coordinator) {
                    let control = BrokerControl::ExpireMember { group: self.group.clone(), member };
                    cluster.control(node, control);
                }
                let description = match member {
                    Some(m) => format!("{fault}: {m}"),
                    None => fault.to_string(),
                };
                let event = WorldEvent::ServeFault { description, duration_ms: 0 };
                if applied {
                    cluster.recorder().world(event);
                } else {
                    serve_fault(cluster, fault, 0, false);
                }
            }
        }
    }

    fn move_coordinator(&self, cluster: &Cluster, load_ms: Millis) {
        let n = cluster.addrs().len() as i32;
        let from = cluster.group_coordinator(&self.group).unwrap_or(0);
        let to = (1..n).map(|i| (from + i) % n).find(|b| cluster.is_running(*b));
        let applied = to.is_some();
        let to_node = to.unwrap_or(from);
        let fault = Fault::CoordinatorMove { group: self.group.clone(), to: to_node, load_ms };
        record(cluster, fault, applied);
        if let Some(to) = to {
            let _ = cluster.move_group_coordinator_loading(&self.group, to, load_ms);
        }
    }

    fn pick_client(&self, pick: u32) -> Option<String> {
        self.watch.pick(pick).and_then(|m| self.watch.client_of(&m))
    }

    /// Reads the events recorded since the last step into the group watch, and fires the
    /// triggers they match.
    fn fire_triggers(&mut self, cluster: &Cluster) -> Vec<ClientAction> {
        let events = cluster.recorder().events_since(self.seen);
        self.seen += events.len();
        let mut actions = Vec::new();
        for e in events {
            let EventKind::Coordinator { event, .. } = &e.kind else { continue };
            let matched = self.watch_event(event);
            let Some((on, member)) = matched else { continue };
            if self.healed {
                continue;
            }
            let Some(client) = self.watch.client_of(&member) else { continue };
            for i in 0..self.triggers.len() {
                let armed = &mut self.triggers[i];
                if armed.trigger.on != on || armed.left == 0 {
                    continue;
                }
                if armed.rng.random_range(0..1000u16) >= armed.trigger.per_mille {
                    continue;
                }
                armed.left -= 1;
                let (label, action) = (armed.trigger.to_string(), armed.trigger.action);
                let fired = WorldEvent::TriggerFired { trigger: label, target: client.clone() };
                cluster.recorder().world(fired);
                match action {
                    TriggerAction::DropConnections => {
                        cluster.shared.gate.reset(Resolved::Client(client.clone()));
                        record(cluster, Fault::ConnectionDrop { member: client.clone() }, true);
                    }
                    TriggerAction::MoveCoordinator { load_ms } => {
                        self.move_coordinator(cluster, load_ms)
                    }
                    TriggerAction::Pause { duration_ms } => {
                        actions.push(ClientAction::Pause { client: client.clone(), duration_ms })
                    }
                    TriggerAction::Crash { restart_after_ms } => actions
                        .push(ClientAction::Crash { client: client.clone(), restart_after_ms }),
                    // A real client's revoke callback is the application's: the served
                    // nemesis cannot stretch it (the simulation's members only).
                    TriggerAction::SlowRevokeToDeadline { .. } => {}
                    // Served schedules are drawn without leaves (`triggers::draw`).
                    TriggerAction::Leave { .. } => {}
                }
            }
        }
        actions
    }

    /// Updates the group watch from a consumer group's event; the trigger event it plays the
    /// part of (see the module docs), with its target.
    fn watch_consumer_event(
        &mut self,
        event: &ConsumerGroupEvent,
    ) -> Option<(TriggerEvent, String)> {
        if self.group.is_empty() {
            self.group = event.group().to_string(); // no group named: the first one that forms
        }
        if event.group() != self.group {
            return None;
        }
        let w = &mut self.watch;
        match event {
            ConsumerGroupEvent::MemberJoined { member_id, client_id, .. } => {
                w.clients.insert(member_id.clone(), client_id.clone());
                if !w.members.contains(member_id) {
                    w.members.push(member_id.clone());
                    w.members.sort();
                }
                None
            }
            ConsumerGroupEvent::MemberRemoved { member_id, .. } => {
                w.members.retain(|m| m != member_id);
                None
            }
            ConsumerGroupEvent::GroupLoaded { members, .. } => {
                w.members = members.iter().map(|m| m.member_id.clone()).collect();
                w.members.sort();
                None
            }
            ConsumerGroupEvent::TargetAssignmentComputed { epoch, assignments, .. }
                if !assignments.is_empty() =>
            {
                let i = (*epoch as usize) % assignments.len();
                Some((TriggerEvent::CompletingRebalance, assignments[i].member_id.clone()))
            }
            ConsumerGroupEvent::PartitionsRevoking { member_id, .. } => {
                Some((TriggerEvent::JoinResponses, member_id.clone()))
            }
            ConsumerGroupEvent::PartitionsAssigned { member_id, .. } => {
                Some((TriggerEvent::SyncResponses, member_id.clone()))
            }
            _ => None,
        }
    }

    /// Updates the group watch; the trigger event this coordinator event is, with its target.
    fn watch_event(&mut self, event: &CoordinatorEvent) -> Option<(TriggerEvent, String)> {
        if let CoordinatorEvent::ConsumerGroup(e) = event {
            return self.watch_consumer_event(e);
        }
        if self.group.is_empty() {
            if let CoordinatorEvent::GroupStateChanged { group, .. } = event {
                self.group = group.clone(); // no group named: the first one that forms
            }
        }
        let w = &mut self.watch;
        match event {
            CoordinatorEvent::MemberAdded { member_id, client_id, .. } => {
                w.clients.insert(member_id.clone(), client_id.clone());
                None
            }
            CoordinatorEvent::MemberRemoved { member_id, .. } => {
                w.members.retain(|m| m != member_id);
                None
            }
            CoordinatorEvent::GenerationStarted { group, members, leader, .. }
                if *group == self.group =>
            {
                w.members = members.clone();
                w.members.sort();
                w.leader = leader.clone();
                leader.clone().map(|l| (TriggerEvent::JoinResponses, l))
            }
            CoordinatorEvent::GroupStateChanged { group, to, .. }
                if *group == self.group && *to == GroupState::CompletingRebalance =>
            {
                w.leader.clone().map(|l| (TriggerEvent::CompletingRebalance, l))
            }
            CoordinatorEvent::AssignmentStored { group, assignments, generation }
                if *group == self.group && !assignments.is_empty() =>
            {
                let i = (*generation as usize) % assignments.len();
                Some((TriggerEvent::SyncResponses, assignments[i].member_id.clone()))
            }
            CoordinatorEvent::OffsetCommitAccepted { group, member_id, .. }
                if *group == self.group =>
            {
                Some((TriggerEvent::CommitAppended, member_id.clone()))
            }
            _ => None,
        }
    }
}

fn record(cluster: &Cluster, fault: Fault, applied: bool) {
    cluster.recorder().world(WorldEvent::FaultInjected { fault: fault.into(), applied });
}

fn serve_fault(cluster: &Cluster, fault: &ServeFault, duration_ms: Millis, applied: bool) {
    let skipped = if applied { "" } else { " (no target: skipped)" };
    let description = format!("{fault}{skipped}");
    cluster.recorder().world(WorldEvent::ServeFault { description, duration_ms });
}

fn heal(cluster: &Cluster, description: String) {
    cluster.recorder().world(WorldEvent::FaultHealed { description });
}

#[cfg(test)]
#[path = "nemesis_tests.rs"]
mod tests;
