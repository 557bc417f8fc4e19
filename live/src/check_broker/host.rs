//! A member's host in real time: one task per [`MemberProcess`] (the same process shell and
//! sans-IO member core the simulated worlds run), a thin loop that hands the process its
//! commands, its connections' deliveries and its timers at the wall clock's instant, and carries
//! out its actions over real TCP — through the member's local proxies. Each connection is a task
//! of its own that connects, runs the wire crate's ApiVersions handshake and reads frames. Every
//! frame written and read goes through the [`Tap`] into the answer log.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use groupsim_checker::broker::{Entry, Mark};
use groupsim_history::{EventKind, WorldEvent};
use groupsim_wire::client::open;
use groupsim_wire::conn::ClientConn;
use groupsim_wire::frame::{write_frame, FrameReader, DEFAULT_MAX_FRAME_BYTES};
use groupsim_wire::versions::served_apis;
use groupsim_wire::Millis;
use tokio::net::tcp::OwnedWriteHalf;
use tokio::net::TcpStream;
use tokio::sync::mpsc::{self, UnboundedReceiver, UnboundedSender};
use tokio::task::JoinHandle;

use super::tap::Tap;
use groupsim::process::{Action, ConnKey, Delivery, MemberProcess};
use groupsim::scenario::MemberPlan;
use groupsim::world::orders::MemberCommand;

/// What every host of a run shares: the clock and the answer log.
#[derive(Debug)]
pub struct Shared {
    /// When the run started: `now` is milliseconds since.
    pub started: Instant,
    /// The answer log being written.
    pub tap: RefCell<Tap>,
}

impl Shared {
    /// Milliseconds since the run started.
    pub fn now(&self) -> Millis {
        self.started.elapsed().as_millis() as Millis
    }

    /// Adds a harness mark to the log now.
    pub fn mark(&self, mark: Mark) {
        let at_ms = self.now();
        self.tap.borrow_mut().push(Entry::Mark { at_ms, mark });
    }
}

/// What a connection task reports to its member process.
enum ConnEvent {
    Connected { conn: ConnKey, client: Box<ClientConn>, writer: OwnedWriteHalf },
    Frame { conn: ConnKey, frame: Bytes },
    Failed { conn: ConnKey, reason: String },
}

/// The host of one member process.
struct Host {
    process: MemberProcess,
    shared: Rc<Shared>,
    /// Broker node -> the member's proxy for it.
    proxies: BTreeMap<i32, SocketAddr>,
    events: UnboundedSender<ConnEvent>,
    writers: BTreeMap<ConnKey, OwnedWriteHalf>,
    tasks: BTreeMap<ConnKey, JoinHandle<()>>,
    pause_until: Option<Millis>,
    restart_at: Option<Millis>,
    /// The incarnation running (`m0.1`), if one is.
    actor: Option<String>,
    incarnations: u64,
}

/// Runs `plan`'s member process until it finishes for good or `commands` closes; its
/// connections go to broker nodes through `proxies`.
pub async fn run_member(
    plan: MemberPlan,
    shared: Rc<Shared>,
    proxies: BTreeMap<i32, SocketAddr>,
    mut commands: UnboundedReceiver<MemberCommand>,
) {
    let wait = plan.start_ms.saturating_sub(shared.now());
    tokio::time::sleep(Duration::from_millis(wait)).await;
    let (events, mut event_rx) = mpsc::unbounded_channel();
    let mut host = Host {
        process: MemberProcess::new(plan),
        shared,
        proxies,
        events,
        writers: BTreeMap::new(),
        tasks: BTreeMap::new(),
        pause_until: None,
        restart_at: None,
        actor: None,
        incarnations: 0,
    };
    host.process.start(host.shared.now());
    loop {
        host.carry_out().await;
        if host.process.is_finished() {
            break;
        }
        let wake = host.restart_at.or(host.pause_until).or_else(|| host.process.deadline());
        let sleep = wake.map(|t| Duration::from_millis(t.saturating_sub(host.shared.now())));
        tokio::select! {
            biased;
            command = commands.recv() => match command {
                Some(command) => {
                    host.process.give(command);
                    host.process.take_commands(host.shared.now());
                }
                None => break, // the run is over
            },
            Some(event) = event_rx.recv() => host.on_conn_event(event),
            () = maybe_sleep(sleep) => host.wake(),
        }
    }
    host.stop();
}

async fn maybe_sleep(d: Option<Duration>) {
    match d {
        Some(d) => tokio::time::sleep(d).await,
        None => std::future::pending().await,
    }
}

impl Host {
    fn wake(&mut self) {
        let now = self.shared.now();
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

    /// The run is over: every connection closes, the incarnation is marked stopped.
    fn stop(&mut self) {
        let keys: Vec<ConnKey> = self.tasks.keys().copied().collect();
        for conn in keys {
            self.close(conn);
        }
        if let Some(actor) = self.actor.take() {
            self.shared.mark(Mark::Stopped(actor));
        }
    }

    fn close(&mut self, conn: ConnKey) {
        if let Some(task) = self.tasks.remove(&conn) {
            task.abort();
        }
        self.writers.remove(&conn);
        if let Some(actor) = &self.actor {
            self.shared.tap.borrow_mut().closed(actor, conn);
        }
    }

    fn on_conn_event(&mut self, event: ConnEvent) {
        let now = self.shared.now();
        let delivery = match event {
            ConnEvent::Connected { conn, client, writer } => {
                if !self.process.holds(conn) {
                    return; // a connection the process dropped since
                }
                self.writers.insert(conn, writer);
                Delivery::Connected { conn, client }
            }
            ConnEvent::Frame { conn, frame } => {
                if let (Some(actor), true) = (&self.actor, self.process.holds(conn)) {
                    self.shared.tap.borrow_mut().answered(actor, conn, now, &frame);
                }
                Delivery::Frame { conn, frame }
            }
            ConnEvent::Failed { conn, reason } => {
                if let Some(actor) = &self.actor {
                    self.shared.tap.borrow_mut().closed(actor, conn);
                }
                Delivery::Failed { conn, reason }
            }
        };
        self.process.deliver(now, delivery);
    }

    /// Carries out what the process asked for, in order.
    async fn carry_out(&mut self) {
        while let Some(action) = self.process.poll_action() {
            match action.framed() {
                Action::Record(EventKind::World(WorldEvent::MemberStarted { member, .. })) => {
                    let actor = format!("{member}.{}", self.incarnations);
                    self.incarnations += 1;
                    tracing::debug!(%actor, "member started");
                    self.shared.mark(Mark::Started(actor.clone()));
                    self.actor = Some(actor);
                }
                Action::Record(EventKind::World(WorldEvent::MemberLeaveRequested { .. })) => {
                    if let Some(actor) = &self.actor {
                        self.shared.mark(Mark::Leaving(actor.clone()));
                    }
                }
                Action::Record(EventKind::World(WorldEvent::MemberStopped { .. })) => {
                    if let Some(actor) = self.actor.take() {
                        tracing::debug!(%actor, "member stopped");
                        self.shared.mark(Mark::Stopped(actor));
                    }
                }
                Action::Record(_) => {}
                Action::Connect { conn, node } => {
                    let client_id = self.process.plan().config.client_id.clone();
                    let proxy = self.proxies.get(&node).copied();
                    let task = connection(conn, proxy, client_id, self.events.clone());
                    self.tasks.insert(conn, tokio::task::spawn_local(task));
                }
                Action::Transmit { conn, frame } => {
                    let Some(writer) = self.writers.get_mut(&conn) else { continue };
                    if let Some(actor) = &self.actor {
                        self.shared.tap.borrow_mut().sent(actor, conn, self.shared.now(), &frame);
                    }
                    if let Err(e) = write_frame(writer, &frame).await {
                        tracing::debug!(member = self.process.name(), error = %e, "write failed");
                        self.process.write_failed(self.shared.now(), conn);
                    }
                }
                // `framed` made every handed-over request a frame.
                Action::Hand { .. } => {}
                Action::Close { conn } => self.close(conn),
                // The tap reads this host's frames as they cross its sockets instead.
                Action::Timer(_) | Action::Tap(_) | Action::Settling(_) | Action::Wire(_) => {}
                Action::PauseUntil(at) => self.pause_until = Some(at),
                Action::RestartAt(at) => self.restart_at = Some(at),
                Action::TakesCommands(_) => {}
            }
        }
    }
}

/// One connection: connect to the member's proxy for the node, run the handshake, hand the
/// connection over, then read frames.
async fn connection(
    conn: ConnKey,
    proxy: Option<SocketAddr>,
    client_id: String,
    events: UnboundedSender<ConnEvent>,
) {
    let fail = |reason: String| ConnEvent::Failed { conn, reason };
    let Some(proxy) = proxy else {
        let _ = events.send(fail("a broker node the cluster did not list".into()));
        return;
    };
    let stream = match TcpStream::connect(proxy).await {
        Ok(s) => s,
        Err(e) => {
            let _ = events.send(fail(format!("connect: {e}")));
            return;
        }
    };
    let _ = stream.set_nodelay(true);
    let (read_half, mut writer) = stream.into_split();
    let mut reader = FrameReader::new(read_half, DEFAULT_MAX_FRAME_BYTES);
    let mut client = ClientConn::new(&client_id, served_apis());
    match tokio::time::timeout(Duration::from_secs(10), open(&mut client, &mut reader, &mut writer))
        .await
    {
        Ok(Ok(())) => {}
        Ok(Err(e)) => {
            let _ = events.send(fail(format!("handshake: {e}")));
            return;
        }
        Err(_) => {
            let _ = events.send(fail("handshake: no answer in time".into()));
            return;
        }
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
