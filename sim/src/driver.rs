//! The member driver: the thin async shell that runs a sans-IO [`GroupMember`] (classic or
//! KIP-848, as its profile says) on a simulated client host. It opens connections (one per
//! [`Target`]), encodes requests at the negotiated version,
//! enforces each request's timeout by dropping the connection, and feeds answers, failures and
//! timer firings back to the core with the simulated time.

use std::collections::{BTreeMap, VecDeque};
use std::rc::Rc;
use std::time::Duration;

use groupsim_history::{EventKind, WorldEvent};
use groupsim_member::compat::fit_request_to_version;
use groupsim_member::{
    GroupMember, MemberConfig, MemberFault, MemberOutput, RequestFailure, Target,
};
use groupsim_wire::client::{handshake, RequestWriter};
use groupsim_wire::codec::request_api_key;
use groupsim_wire::probe;
use groupsim_wire::WireError;
use groupsim_wire::{Millis, RequestId};
use kafka_protocol::messages::{RequestKind, ResponseKind};
use tokio::sync::mpsc;
use tracing::{debug, trace};

use crate::host::{broker_host, record, sim_now, SharedHistory, BROKER_PORT};
use crate::nemesis::{MemberCommand, MemberControls};
use crate::record::IntoHistory;
use crate::scenario::MemberPlan;
use crate::settle::SharedSettling;

type Writer = RequestWriter<tokio::io::WriteHalf<turmoil::net::TcpStream>>;

/// Runs every member planned on one client host, each as its own task.
pub async fn run_client_host(
    host: String,
    plans: Vec<MemberPlan>,
    history: SharedHistory,
    controls: MemberControls,
    settling: SharedSettling,
) -> turmoil::Result {
    let tasks: Vec<_> = plans
        .into_iter()
        .map(|plan| {
            tokio::task::spawn_local(run_member_process(
                host.clone(),
                plan,
                history.clone(),
                controls.clone(),
                settling.clone(),
            ))
        })
        .collect();
    for t in tasks {
        let _ = t.await;
    }
    Ok(())
}

/// How one incarnation of a member process ended.
enum Ending {
    /// Left the group for good (scenario leave, fatal error).
    Finished,
    /// Crashed or left on the nemesis' order; start again after this long.
    Restart { after_ms: Millis },
}

/// A member process: starts at its planned time and runs incarnations of the member core until
/// one finishes for good. A crash or an ordered leave ends an incarnation; the next one is a new
/// member (new member id, no memory of the old one's progress).
async fn run_member_process(
    host: String,
    plan: MemberPlan,
    history: SharedHistory,
    controls: MemberControls,
    settling: SharedSettling,
) {
    let wait = plan.start_ms.saturating_sub(sim_now());
    tokio::time::sleep(Duration::from_millis(wait)).await;
    let (ctl_tx, mut ctl_rx) = mpsc::unbounded_channel();
    controls.borrow_mut().insert(plan.name.clone(), ctl_tx);
    let mut leave_at = plan.leave_ms;
    let mut config = plan.config.clone();
    let mut incarnation: u64 = 0;
    loop {
        record(
            &history,
            EventKind::World(WorldEvent::MemberStarted {
                member: plan.name.clone(),
                group: plan.config.group_id.clone(),
                host: host.clone(),
            }),
        );
        let seed = plan.seed.wrapping_add(incarnation.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let ending = run_incarnation(
            &plan,
            &mut config,
            seed,
            &history,
            &settling,
            &mut ctl_rx,
            &mut leave_at,
        )
        .await;
        record(&history, EventKind::World(WorldEvent::MemberStopped { member: plan.name.clone() }));
        match ending {
            Ending::Finished => break,
            Ending::Restart { after_ms } => {
                // Commands sent while the process is down are lost, as they would be.
                tokio::time::sleep(Duration::from_millis(after_ms)).await;
                while ctl_rx.try_recv().is_ok() {}
                incarnation += 1;
                settling.borrow_mut().settle(&plan.name);
                let restarted = format!("{} restarted", plan.name);
                record(
                    &history,
                    EventKind::World(WorldEvent::FaultHealed { description: restarted }),
                );
            }
        }
    }
    controls.borrow_mut().remove(&plan.name);
}

async fn run_incarnation(
    plan: &MemberPlan,
    config: &mut MemberConfig,
    seed: u64,
    history: &SharedHistory,
    settling: &SharedSettling,
    ctl_rx: &mut mpsc::UnboundedReceiver<MemberCommand>,
    leave_at: &mut Option<Millis>,
) -> Ending {
    let (tx, rx) = mpsc::unbounded_channel();
    let mut d = Driver {
        name: plan.name.clone(),
        client_id: plan.config.client_id.clone(),
        actor: probe::is_tapping().then(|| Rc::from(plan.name.as_str())),
        member: GroupMember::new(config.clone(), seed),
        history: history.clone(),
        conns: BTreeMap::new(),
        next_epoch: 0,
        tx,
        rx,
    };
    let mut restart_after: Option<Millis> = None;
    d.core().start(sim_now());
    let mut next_config = config.clone();
    let ending = loop {
        d.drain().await;
        if d.member.is_finished() {
            break match restart_after {
                Some(after_ms) => Ending::Restart { after_ms },
                None => Ending::Finished,
            };
        }
        let now = sim_now();
        let deadline = [d.member.poll_timeout(), d.earliest_request_deadline(), *leave_at]
            .into_iter()
            .flatten()
            .min();
        let sleep = deadline.map(|t| Duration::from_millis(t.saturating_sub(now)));
        tokio::select! {
            biased;
            Some(cmd) = ctl_rx.recv() => match cmd {
                MemberCommand::DropConnections => d.close_all(),
                MemberCommand::Pause { duration_ms } => {
                    // Stop the world: nothing is read, no timer fires, nothing is sent.
                    settling.borrow_mut().disturb(&plan.name);
                    tokio::time::sleep(Duration::from_millis(duration_ms)).await;
                    settling.borrow_mut().settle(&plan.name);
                }
                MemberCommand::Crash { restart_after_ms } => {
                    settling.borrow_mut().disturb(&plan.name);
                    break Ending::Restart { after_ms: restart_after_ms };
                }
                MemberCommand::Leave { restart_after_ms, upgrade } => {
                    settling.borrow_mut().disturb(&plan.name);
                    restart_after = Some(restart_after_ms);
                    if let Some((profile, assignors)) = upgrade {
                        next_config.profile = profile;
                        next_config.assignors = assignors;
                    }
                    d.core().leave(sim_now());
                }
                MemberCommand::StaleAck { delay_ms } => {
                    settling.borrow_mut().acts_until(sim_now() + delay_ms);
                    d.core().inject(sim_now(), MemberFault::StaleAck { delay_ms });
                }
                MemberCommand::SlowRevoke { extra_ms } => {
                    settling.borrow_mut().acts_until(sim_now() + extra_ms);
                    d.core().inject(sim_now(), MemberFault::SlowRevoke { extra_ms });
                }
                MemberCommand::SlowRevokeUntil { until_ms } => {
                    settling.borrow_mut().acts_until(until_ms);
                    d.core().inject(sim_now(), MemberFault::SlowRevokeUntil { until_ms });
                }
                MemberCommand::Heal => d.core().heal_pending_faults(),
            },
            Some(event) = d.rx.recv() => d.on_conn_event(event).await,
            _ = maybe_sleep(sleep) => {
                let now = sim_now();
                if leave_at.is_some_and(|t| t <= now) {
                    *leave_at = None;
                    record(history, EventKind::World(WorldEvent::MemberLeaveRequested { member: d.name.clone() }));
                    d.core().leave(now);
                }
                d.expire_requests(now);
                d.core().handle_timeout(now);
            }
        }
    };
    for (_, conn) in std::mem::take(&mut d.conns) {
        conn.task.abort();
    }
    *config = next_config;
    ending
}

/// What a connection task reports to its member.
enum ConnEvent {
    Connected { target: Target, epoch: u64, writer: Writer },
    Response { target: Target, epoch: u64, correlation_id: i32, response: ResponseKind },
    Failed { target: Target, epoch: u64, reason: String },
}

struct Conn {
    epoch: u64,
    writer: Option<Writer>,
    /// Requests waiting for the connection to open.
    queued: Vec<(RequestId, RequestKind, Millis)>,
    /// Requests written, oldest first: (correlation id, request id, deadline).
    in_flight: VecDeque<(i32, RequestId, Millis)>,
    task: tokio::task::JoinHandle<()>,
}

impl Conn {
    fn earliest_deadline(&self) -> Option<Millis> {
        let q = self.queued.iter().map(|r| r.2);
        let f = self.in_flight.iter().map(|r| r.2);
        q.chain(f).min()
    }

    fn request_ids(&self) -> impl Iterator<Item = (RequestId, Millis)> + '_ {
        self.queued.iter().map(|r| (r.0, r.2)).chain(self.in_flight.iter().map(|r| (r.1, r.2)))
    }
}

struct Driver {
    name: String,
    client_id: String,
    /// This member's name as a probe actor, while the nemesis taps probes (else `None`).
    actor: Option<Rc<str>>,
    member: GroupMember,
    history: SharedHistory,
    conns: BTreeMap<Target, Conn>,
    next_epoch: u64,
    tx: mpsc::UnboundedSender<ConnEvent>,
    rx: mpsc::UnboundedReceiver<ConnEvent>,
}

impl Driver {
    /// The member core, with this member named as the actor of any probe it hits (tasks of
    /// several members interleave on one host, so the actor is set before every input).
    fn core(&mut self) -> &mut GroupMember {
        probe::set_actor(self.actor.clone());
        &mut self.member
    }
}

async fn maybe_sleep(d: Option<Duration>) {
    match d {
        Some(d) => tokio::time::sleep(d).await,
        None => std::future::pending().await,
    }
}

impl Driver {
    /// Carries out every queued output of the core (which may queue more).
    async fn drain(&mut self) {
        while let Some(out) = self.member.poll_output() {
            match out {
                MemberOutput::Event(event) => record(
                    &self.history,
                    EventKind::Member { member: self.name.clone(), event: event.into_history() },
                ),
                MemberOutput::Close(target) => self.close(target, None),
                MemberOutput::Send { id, target, request, timeout_ms } => {
                    let deadline = sim_now() + timeout_ms;
                    self.send(target, id, request, deadline).await;
                }
            }
        }
    }

    fn close_all(&mut self) {
        let targets: Vec<Target> = self.conns.keys().copied().collect();
        for t in targets {
            self.close(t, None);
        }
    }

    fn earliest_request_deadline(&self) -> Option<Millis> {
        self.conns.values().filter_map(Conn::earliest_deadline).min()
    }

    async fn send(
        &mut self,
        target: Target,
        id: RequestId,
        request: RequestKind,
        deadline: Millis,
    ) {
        if !self.conns.contains_key(&target) {
            self.open(target);
        }
        let conn = self.conns.get_mut(&target).expect("opened above");
        match conn.writer.as_mut() {
            None => conn.queued.push((id, request, deadline)),
            Some(writer) => {
                // The member builds requests in their newest shape; reshape them for the version
                // negotiated with this broker before encoding.
                let version = request_api_key(&request).and_then(|k| writer.version_for(k));
                let Some(version) = version else {
                    let why = "the broker serves no version of this API".to_string();
                    self.core().handle_failure(sim_now(), id, RequestFailure::Unsupported(why));
                    return;
                };
                let request = fit_request_to_version(request, version);
                match writer.send_at(&request, version).await {
                    Ok(correlation_id) => conn.in_flight.push_back((correlation_id, id, deadline)),
                    Err(e @ (WireError::Encode { .. } | WireError::NotNegotiated(_))) => {
                        debug!(member = %self.name, error = %e, "request cannot be encoded");
                        let failure = RequestFailure::Unsupported(e.to_string());
                        self.core().handle_failure(sim_now(), id, failure);
                    }
                    Err(e) => {
                        debug!(member = %self.name, error = %e, "write failed");
                        conn.queued.push((id, request, deadline));
                        self.close(target, None);
                    }
                }
            }
        }
    }

    fn open(&mut self, target: Target) {
        let epoch = self.next_epoch;
        self.next_epoch += 1;
        let node = match target {
            Target::Broker(n) | Target::Coordinator(n) => n,
        };
        let tx = self.tx.clone();
        let client_id = self.client_id.clone();
        let task = tokio::task::spawn_local(async move {
            let fail = |reason: String| ConnEvent::Failed { target, epoch, reason };
            let stream =
                match turmoil::net::TcpStream::connect((broker_host(node), BROKER_PORT)).await {
                    Ok(s) => s,
                    Err(e) => {
                        let _ = tx.send(fail(format!("connect: {e}")));
                        return;
                    }
                };
            let (writer, mut reader) = match handshake(stream, &client_id).await {
                Ok(pair) => pair,
                Err(e) => {
                    let _ = tx.send(fail(format!("handshake: {e}")));
                    return;
                }
            };
            if tx.send(ConnEvent::Connected { target, epoch, writer }).is_err() {
                return;
            }
            loop {
                match reader.recv().await {
                    Ok((correlation_id, response)) => {
                        let ev = ConnEvent::Response { target, epoch, correlation_id, response };
                        if tx.send(ev).is_err() {
                            return;
                        }
                    }
                    Err(e) => {
                        let _ = tx.send(fail(format!("read: {e}")));
                        return;
                    }
                }
            }
        });
        self.conns.insert(
            target,
            Conn { epoch, writer: None, queued: Vec::new(), in_flight: VecDeque::new(), task },
        );
    }

    /// Drops a connection; its requests fail (`timed_out` ones with Timeout, others Disconnected).
    fn close(&mut self, target: Target, timed_out: Option<Millis>) {
        let Some(conn) = self.conns.remove(&target) else { return };
        conn.task.abort();
        let now = sim_now();
        let failed: Vec<(RequestId, Millis)> = conn.request_ids().collect();
        for (id, deadline) in failed {
            let failure = match timed_out {
                Some(t) if deadline <= t => RequestFailure::Timeout,
                _ => RequestFailure::Disconnected,
            };
            self.core().handle_failure(now, id, failure);
        }
    }

    fn expire_requests(&mut self, now: Millis) {
        let expired: Vec<Target> = self
            .conns
            .iter()
            .filter(|(_, c)| c.earliest_deadline().is_some_and(|d| d <= now))
            .map(|(t, _)| *t)
            .collect();
        for target in expired {
            debug!(member = %self.name, ?target, "request timed out; dropping connection");
            self.close(target, Some(now));
        }
    }

    async fn on_conn_event(&mut self, event: ConnEvent) {
        match event {
            ConnEvent::Connected { target, epoch, writer } => {
                let Some(conn) = self.conns.get_mut(&target).filter(|c| c.epoch == epoch) else {
                    return;
                };
                conn.writer = Some(writer);
                let queued = std::mem::take(&mut conn.queued);
                for (id, request, deadline) in queued {
                    self.send(target, id, request, deadline).await;
                }
            }
            ConnEvent::Response { target, epoch, correlation_id, response } => {
                let Some(conn) = self.conns.get_mut(&target).filter(|c| c.epoch == epoch) else {
                    return;
                };
                match conn.in_flight.front() {
                    Some(&(corr, id, _)) if corr == correlation_id => {
                        conn.in_flight.pop_front();
                        trace!(member = %self.name, ?id, "response");
                        self.core().handle_response(sim_now(), id, response);
                    }
                    _ => {
                        debug!(member = %self.name, correlation_id, "unexpected correlation id");
                        self.close(target, None);
                    }
                }
            }
            ConnEvent::Failed { target, epoch, reason } => {
                if self.conns.get(&target).is_some_and(|c| c.epoch == epoch) {
                    debug!(member = %self.name, ?target, %reason, "connection failed");
                    self.close(target, None);
                }
            }
        }
    }
}
