//! One client connection of a served broker: the wire crate's frame loop with `serve`'s request
//! hook in front of the broker task (Fetch long polling, produced records recorded, the
//! nemesis's gate), closed at once when the nemesis resets it.

use std::sync::Arc;
use std::time::Duration;

use groupsim_wire::serve_connection_with;
use groupsim_wire::server::{BrokerHandle, RequestHandler, ServeOptions};
use groupsim_wire::WireError;
use kafka_protocol::messages::{RequestKind, ResponseKind};
use tokio::net::TcpListener;
use tokio::task::JoinSet;

use groupsim_history::wire::{Entry, Exchange, Request};
use groupsim_wire::topic_id;

use super::gate::{group_api, ConnInfo, Gate};
use super::recorder::Recorder;
use super::shared::Shared;
use groupsim::exchange::{self, TopicNames};

/// Accepts connections until aborted; aborting it drops the listener and every connection task.
/// A connection past `max_connections` open ones is closed at once, before anything is read from
/// it (`DEFAULT_MAX_CONNECTIONS_PER_BROKER` says why).
pub(super) async fn accept_loop(
    listener: TcpListener,
    handle: BrokerHandle,
    shared: Arc<Shared>,
    node: i32,
    options: ServeOptions,
    max_connections: usize,
) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) if at_limit(&mut connections, max_connections) => {
                    tracing::warn!(
                        broker = node, %peer, max_connections,
                        "connection closed at once: the broker holds max connections open"
                    );
                    drop(stream);
                }
                Ok((stream, peer)) => {
                    let _ = stream.set_nodelay(true);
                    let (handle, shared, options) = (handle.clone(), shared.clone(), options.clone());
                    connections.spawn(async move {
                        let conn = Arc::new(ConnInfo::new(node));
                        let mut resets = shared.gate.resets();
                        let handler = ServeHandler { broker: handle, shared, conn: conn.clone() };
                        tokio::select! {
                            biased;
                            () = reset_of(&mut resets, &conn) => {
                                tracing::debug!(broker = node, %peer, "connection reset by the nemesis");
                            }
                            served = serve_connection_with(stream, handler, options) => if let Err(e) = served {
                                tracing::debug!(broker = node, %peer, error = %e, "connection closed");
                            },
                        }
                    });
                }
                Err(e) => {
                    // E.g. out of file descriptors: back off instead of spinning.
                    tracing::warn!(broker = node, error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

/// Whether `max_connections` connections are open (finished ones reaped first, so one that
/// just closed frees its place at once).
fn at_limit(connections: &mut JoinSet<()>, max_connections: usize) -> bool {
    while connections.try_join_next().is_some() {}
    connections.len() >= max_connections
}

/// Returns when a reset names this connection (never, if the signal goes away).
async fn reset_of(
    resets: &mut tokio::sync::watch::Receiver<(u64, super::gate::Resolved)>,
    conn: &ConnInfo,
) {
    resets.borrow_and_update();
    loop {
        if resets.changed().await.is_err() {
            return std::future::pending().await;
        }
        if conn.hit_by(&resets.borrow_and_update().1) {
            return;
        }
    }
}

/// The request hook `serve` puts in front of the broker task: a Produce is recorded, and the
/// nemesis's gate may answer a group request with an error, hold or delay an answer, or lose a
/// commit's answer. A Fetch that finds nothing waits in the broker core (its fetch purgatory).
/// The frame loop is the wire crate's own.
#[derive(Clone)]
struct ServeHandler {
    broker: BrokerHandle,
    shared: Arc<Shared>,
    conn: Arc<ConnInfo>,
}

impl RequestHandler for ServeHandler {
    async fn call(
        &self,
        version: i16,
        client_id: Option<String>,
        request: RequestKind,
    ) -> Result<ResponseKind, WireError> {
        let api = group_api(&request);
        let _in_flight = Gate::arrive(&self.conn, client_id.as_deref(), api);
        let mut wire =
            Exchanged::read(&self.shared, &self.conn, client_id.as_deref(), version, &request);
        let gate = &self.shared.gate;
        let response = match gate.injected(version, api, &request) {
            Some(answer) => answer,
            None => self.forward(version, client_id.clone(), request).await?,
        };
        if gate.loses_commit_answer(client_id.as_deref(), &response) {
            return Err(WireError::Io(std::io::Error::new(
                std::io::ErrorKind::ConnectionReset,
                "the nemesis lost this commit's answer after the append",
            )));
        }
        gate.wait(self.conn.node, api).done().await;
        wire.answered(&response);
        Ok(response)
    }
}

/// One request in the served cluster's wire stream, from the server's side of its connection:
/// read at `sent_ms`, then answered when the answer is handed to the connection to write. When
/// it is dropped unanswered (the connection closed, the nemesis lost the answer, the cluster
/// stopped), the stream says it was never answered.
struct Exchanged {
    recorder: Recorder,
    actor: String,
    node: i32,
    conn: u64,
    sent_ms: groupsim_wire::Millis,
    group: String,
    request: Option<Request>,
    names: TopicNames,
}

impl Exchanged {
    /// `request` as read from client `client_id` (its `client.id` is its actor: check-client
    /// names each process `<member>.<start>`) on connection `conn`.
    fn read(
        shared: &Shared,
        conn: &ConnInfo,
        client_id: Option<&str>,
        version: i16,
        request: &RequestKind,
    ) -> Self {
        let names: TopicNames = match request {
            RequestKind::ConsumerGroupHeartbeat(_)
            | RequestKind::OffsetCommit(_)
            | RequestKind::OffsetFetch(_)
            | RequestKind::Fetch(_) => {
                let logs = shared.logs.lock().unwrap_or_else(|p| p.into_inner());
                logs.topics().map(|t| (topic_id(t), t.to_string())).collect()
            }
            _ => TopicNames::new(),
        };
        Self {
            recorder: shared.recorder.clone(),
            actor: client_id.unwrap_or_default().to_string(),
            node: conn.node,
            conn: conn.id,
            sent_ms: shared.now(),
            group: exchange::group(request),
            request: exchange::request(request, version, &names),
            names,
        }
    }

    /// The answer was handed to the connection.
    fn answered(&mut self, response: &ResponseKind) {
        let Some(request) = self.request.take() else { return };
        let Some(answer) = exchange::answer(response, &self.names) else {
            self.request = Some(request);
            return;
        };
        self.recorder.wire(Entry::Exchange(Exchange {
            actor: std::mem::take(&mut self.actor),
            sent_ms: self.sent_ms,
            answered_ms: self.recorder.now(),
            request,
            answer,
            group: std::mem::take(&mut self.group),
            node: Some(self.node),
            conn: Some(self.conn),
        }));
    }
}

impl Drop for Exchanged {
    fn drop(&mut self) {
        // Only a request never answered still holds its summary here.
        let Some(call) = self.request.take() else { return };
        let (actor, group) = (std::mem::take(&mut self.actor), std::mem::take(&mut self.group));
        let sent_ms = self.sent_ms;
        self.recorder.wire(Entry::Unanswered { actor, sent_ms, call, group });
    }
}

impl ServeHandler {
    async fn forward(
        &self,
        version: i16,
        client_id: Option<String>,
        request: RequestKind,
    ) -> Result<ResponseKind, WireError> {
        match request {
            RequestKind::Produce(produce) => {
                let r = self
                    .broker
                    .call(version, client_id, RequestKind::Produce(produce.clone()))
                    .await?;
                if let ResponseKind::Produce(answer) = &r {
                    self.shared.recorder.produced(&produce, answer);
                }
                Ok(r)
            }
            other => self.broker.call(version, client_id, other).await,
        }
    }
}
