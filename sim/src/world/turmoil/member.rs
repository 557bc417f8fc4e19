//! A client host of the turmoil world: one task per [`MemberProcess`], a thin loop that hands
//! the process its commands, its connections' deliveries and its timers, and carries out its
//! actions over turmoil's TCP. Each connection is a task of its own that connects, runs the
//! ApiVersions handshake and reads frames, whether or not the process is paused (as a client's
//! network threads would).

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::Bytes;
use groupsim_wire::client::open;
use groupsim_wire::conn::ClientConn;
use groupsim_wire::frame::{write_frame, FrameReader, DEFAULT_MAX_FRAME_BYTES};
use groupsim_wire::versions::served_apis;
use groupsim_wire::Millis;
use tokio::io::WriteHalf;
use tokio::sync::mpsc::{self, UnboundedSender};
use tokio::task::JoinHandle;

use super::{sim_now, tasks, Shared};
use crate::process::{Action, ConnKey, Delivery, MemberProcess};
use crate::scenario::MemberPlan;
use crate::world::orders::{broker_host, MemberCommand, BROKER_PORT};
use crate::world::still_clock::{StillClock, STILL_CLOCK_STEPS};

type Stream = ::turmoil::net::TcpStream;

/// What a connection task reports to its member process.
enum ConnEvent {
    /// The handshake is done: the process gets the connection, the host its writing half.
    Connected { conn: ConnKey, client: Box<ClientConn>, writer: WriteHalf<Stream> },
    /// A frame from the broker.
    Frame { conn: ConnKey, frame: Bytes },
    /// The connection failed.
    Failed { conn: ConnKey, reason: String },
}

/// Runs every member planned on one client host, each as its own task.
pub(super) async fn run_client_host(plans: Vec<MemberPlan>, shared: Shared) -> ::turmoil::Result {
    let tasks: Vec<_> = plans
        .into_iter()
        .map(|plan| tasks::spawn(&shared.failure, run_member(plan, shared.clone())))
        .collect();
    for t in tasks {
        let _ = t.await;
    }
    Ok(())
}

/// The host of one member process.
struct Host {
    process: MemberProcess,
    shared: Shared,
    commands: UnboundedSender<MemberCommand>,
    events: UnboundedSender<ConnEvent>,
    writers: BTreeMap<ConnKey, WriteHalf<Stream>>,
    tasks: BTreeMap<ConnKey, JoinHandle<()>>,
    pause_until: Option<Millis>,
    restart_at: Option<Millis>,
}

/// A member process from its planned start until it finishes for good.
async fn run_member(plan: MemberPlan, shared: Shared) {
    let wait = plan.start_ms.saturating_sub(sim_now());
    tokio::time::sleep(Duration::from_millis(wait)).await;
    let (commands, mut command_rx) = mpsc::unbounded_channel();
    let (events, mut event_rx) = mpsc::unbounded_channel();
    let mut host = Host {
        process: MemberProcess::new(plan),
        shared,
        commands,
        events,
        writers: BTreeMap::new(),
        tasks: BTreeMap::new(),
        pause_until: None,
        restart_at: None,
    };
    host.process.start(sim_now());
    let mut still = StillClock::new(STILL_CLOCK_STEPS);
    loop {
        host.carry_out().await;
        if host.process.is_finished() {
            break;
        }
        let wake = host.restart_at.or(host.pause_until).or_else(|| host.process.deadline());
        let sleep = wake.map(|t| Duration::from_millis(t.saturating_sub(sim_now())));
        tokio::select! {
            biased;
            Some(command) = command_rx.recv() => {
                host.process.give(command);
                host.process.take_commands(sim_now());
            }
            Some(event) = event_rx.recv() => host.on_conn_event(event),
            () = maybe_sleep(sleep) => {
                let now = sim_now();
                let name = host.process.name();
                if let Err(e) = still.step(now, || format!("a wake of member {name}")) {
                    host.shared.failure.fail(e);
                    break;
                }
                host.wake(now);
            }
        }
    }
}

async fn maybe_sleep(d: Option<Duration>) {
    match d {
        Some(d) => tokio::time::sleep(d).await,
        None => std::future::pending().await,
    }
}

impl Host {
    /// Its restart, the end of its pause, or its timer.
    fn wake(&mut self, now: Millis) {
        if self.restart_at.is_some_and(|t| t <= now) {
            self.restart_at = None;
            self.process.start(now);
        } else if self.pause_until.is_some_and(|t| t <= now) {
            self.pause_until = None;
            self.process.pause_end(now);
        } else {
            self.process.timer(now);
        }
    }

    fn on_conn_event(&mut self, event: ConnEvent) {
        let now = sim_now();
        let delivery = match event {
            ConnEvent::Connected { conn, client, writer } => {
                if !self.process.holds(conn) {
                    return; // a connection the process dropped since
                }
                self.writers.insert(conn, writer);
                Delivery::Connected { conn, client }
            }
            ConnEvent::Frame { conn, frame } => Delivery::Frame { conn, frame },
            ConnEvent::Failed { conn, reason } => Delivery::Failed { conn, reason },
        };
        self.process.deliver(now, delivery);
    }

    /// Carries out what the process asked for, in order.
    async fn carry_out(&mut self) {
        while let Some(action) = self.process.poll_action() {
            match action.framed() {
                Action::Record(kind) => self.shared.record(kind),
                Action::Wire(entry) => self.shared.history.borrow_mut().record_wire(entry),
                Action::Connect { conn, node } => {
                    let client_id = self.process.plan().config.client_id.clone();
                    let task = connection(conn, node, client_id, self.events.clone());
                    self.tasks.insert(conn, tasks::spawn(&self.shared.failure, task));
                }
                Action::Transmit { conn, frame } => {
                    let Some(writer) = self.writers.get_mut(&conn) else { continue };
                    if let Err(e) = write_frame(writer, &frame).await {
                        tracing::debug!(member = self.process.name(), error = %e, "write failed");
                        self.process.write_failed(sim_now(), conn);
                    }
                }
                // `framed` made every handed-over request a frame.
                Action::Hand { .. } => {}
                Action::Close { conn } => {
                    if let Some(task) = self.tasks.remove(&conn) {
                        task.abort();
                    }
                    self.writers.remove(&conn);
                }
                Action::Tap(tap) => self.shared.taps.borrow_mut().push(tap),
                Action::Settling(mark) => {
                    self.shared.settling.borrow_mut().mark(self.process.name(), mark)
                }
                Action::Timer(_) => {} // the loop asks for the deadline itself
                Action::PauseUntil(at) => self.pause_until = Some(at),
                Action::RestartAt(at) => self.restart_at = Some(at),
                Action::TakesCommands(true) => {
                    let name = self.process.name().to_string();
                    self.shared.members.borrow_mut().insert(name, self.commands.clone());
                }
                Action::TakesCommands(false) => {
                    self.shared.members.borrow_mut().remove(self.process.name());
                }
            }
        }
    }
}

/// One connection: connect, run the handshake, hand the connection over, then read frames.
async fn connection(
    conn: ConnKey,
    node: i32,
    client_id: String,
    events: UnboundedSender<ConnEvent>,
) {
    let fail = |reason: String| ConnEvent::Failed { conn, reason };
    let stream = match Stream::connect((broker_host(node), BROKER_PORT)).await {
        Ok(s) => s,
        Err(e) => {
            let _ = events.send(fail(format!("connect: {e}")));
            return;
        }
    };
    let (read_half, mut writer) = tokio::io::split(stream);
    let mut reader = FrameReader::new(read_half, DEFAULT_MAX_FRAME_BYTES);
    let mut client = ClientConn::new(&client_id, served_apis());
    if let Err(e) = open(&mut client, &mut reader, &mut writer).await {
        let _ = events.send(fail(format!("handshake: {e}")));
        return;
    }
    let client = Box::new(client);
    if events.send(ConnEvent::Connected { conn, client, writer }).is_err() {
        return;
    }
    loop {
        let event = match reader.read_frame().await {
            Ok(Some(frame)) => ConnEvent::Frame { conn, frame },
            Ok(None) => fail("read: the broker closed the connection".to_string()),
            Err(e) => fail(format!("read: {e}")),
        };
        let failed = matches!(event, ConnEvent::Failed { .. });
        if events.send(event).is_err() || failed {
            return;
        }
    }
}
