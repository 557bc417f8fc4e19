//! The server half: one task per connection ([`serve_connection`]) and one task owning the
//! sans-IO [`Broker`] ([`run_broker`]), joined by a channel ([`BrokerHandle`]).
//!
//! A connection handles one request at a time, in order: read a frame, decode, ask the broker
//! task, wait for the answer, encode, write. Kafka does the same (it mutes a channel until the
//! answer to its current request is sent), which is what keeps answers in request order even
//! though JoinGroup/SyncGroup answers may come long after later requests were read elsewhere.
//!
//! Bad input never panics. What the server does with it:
//! - ApiVersions at a version we do not serve: answer UNSUPPORTED_VERSION (35) in the v0 body
//!   layout, listing our versions, as Kafka does; the client retries at a version we serve.
//! - Any other unserved API or version, an unknown API key, a malformed or oversized frame:
//!   log the reason (`tracing::warn`) and close this connection only. Kafka also closes the
//!   connection when it cannot parse a request, so clients handle this path.

use std::collections::BTreeMap;
use std::time::Duration;

use kafka_protocol::messages::{ApiKey, RequestKind, ResponseKind};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{mpsc, oneshot};

use super::codec::{decode_request, encode_api_versions_fallback, encode_response};
use super::frame::{write_frame, FrameReader, DEFAULT_MAX_FRAME_BYTES};
use super::WireError;
use crate::api::api_versions;
use crate::broker::{Broker, BrokerControl};
use crate::{CoordinatorEvent, CoordinatorOutput, Millis, RequestId};

/// One request handed to the broker task, with the channel for its answer.
#[derive(Debug)]
pub struct BrokerCall {
    /// Version the request was encoded with (the answer is encoded with it too).
    pub api_version: i16,
    /// The client id from the request header (the coordinator builds member ids from it).
    pub client_id: Option<String>,
    /// The decoded request.
    pub request: RequestKind,
    /// Where the broker task sends the answer. Dropped unanswered if the broker stops.
    pub reply: oneshot::Sender<ResponseKind>,
}

/// A cloneable handle to the broker task: each connection holds one.
#[derive(Clone, Debug)]
pub struct BrokerHandle {
    tx: mpsc::UnboundedSender<BrokerCall>,
}

/// The receiving end of the broker task's call channel (give it to [`run_broker`]).
#[derive(Debug)]
pub struct BrokerCalls {
    rx: mpsc::UnboundedReceiver<BrokerCall>,
}

/// A connected handle/receiver pair for one broker task.
pub fn broker_channel() -> (BrokerHandle, BrokerCalls) {
    let (tx, rx) = mpsc::unbounded_channel();
    (BrokerHandle { tx }, BrokerCalls { rx })
}

impl BrokerHandle {
    /// Sends a request to the broker task and waits for its answer.
    /// [`WireError::BrokerGone`] if the task has stopped.
    pub async fn call(
        &self,
        api_version: i16,
        client_id: Option<String>,
        request: RequestKind,
    ) -> Result<ResponseKind, WireError> {
        let (reply, answer) = oneshot::channel();
        self.tx
            .send(BrokerCall { api_version, client_id, request, reply })
            .map_err(|_| WireError::BrokerGone)?;
        answer.await.map_err(|_| WireError::BrokerGone)
    }
}

/// Options for [`serve_connection_with`].
#[derive(Clone, Debug)]
pub struct ServeOptions {
    /// Largest request frame accepted; larger ones close the connection.
    pub max_frame_bytes: usize,
}

impl Default for ServeOptions {
    fn default() -> Self {
        Self { max_frame_bytes: DEFAULT_MAX_FRAME_BYTES }
    }
}

/// Serves one connection until the client closes it (`Ok`) or sends something we refuse
/// (`Err`, already logged with `tracing::warn`). See the module docs for what is refused.
pub async fn serve_connection<S: AsyncRead + AsyncWrite + Unpin>(
    stream: S,
    broker: BrokerHandle,
) -> Result<(), WireError> {
    serve_connection_with(stream, broker, ServeOptions::default()).await
}

/// [`serve_connection`] with explicit options.
pub async fn serve_connection_with<S: AsyncRead + AsyncWrite + Unpin>(
    stream: S,
    broker: BrokerHandle,
    options: ServeOptions,
) -> Result<(), WireError> {
    let mut conn = FrameReader::new(stream, options.max_frame_bytes);
    let result = serve_frames(&mut conn, &broker).await;
    if let Err(e) = &result {
        tracing::warn!(error = %e, "closing connection");
    }
    result
}

async fn serve_frames<S: AsyncRead + AsyncWrite + Unpin>(
    conn: &mut FrameReader<S>,
    broker: &BrokerHandle,
) -> Result<(), WireError> {
    while let Some(frame) = conn.read_frame().await? {
        let answer = match decode_request(frame) {
            Ok(req) => {
                let client_id = req.header.client_id.as_ref().map(|c| c.to_string());
                let response = broker.call(req.version, client_id, req.request).await?;
                encode_response(req.header.correlation_id, req.api_key, req.version, &response)?
            }
            Err(WireError::UnsupportedVersion {
                api_key: ApiKey::ApiVersions,
                version,
                correlation_id,
            }) => {
                tracing::debug!(version, "ApiVersions version not served; answering in v0 layout");
                encode_api_versions_fallback(correlation_id, &api_versions::unsupported_version())?
            }
            Err(e) => return Err(e),
        };
        write_frame(conn.get_mut(), &answer).await?;
    }
    Ok(())
}

/// Runs the broker: owns it, assigns [`RequestId`]s, feeds it calls and timer expiries in a
/// deterministic order, routes answers to the waiting connection (dropped silently if that
/// connection went away) and events to `on_event` stamped with the time they happened.
///
/// `clock` gives the current (simulated) time in ms; it must agree with `tokio::time`, which the
/// task sleeps on until the broker's next deadline. Returns when every [`BrokerHandle`] is
/// dropped (no connection can reach the broker any more).
pub async fn run_broker<C, E>(broker: Broker, calls: BrokerCalls, clock: C, on_event: E)
where
    C: Fn() -> Millis,
    E: FnMut(Millis, CoordinatorEvent),
{
    let (_keep, controls) = mpsc::unbounded_channel();
    run_broker_controlled(broker, calls, controls, clock, on_event).await
}

/// [`run_broker`] that also applies [`BrokerControl`] instructions (coordinator moves) from
/// `controls`, before any request waiting at the same instant. A closed control channel is
/// simply no longer read.
pub async fn run_broker_controlled<C, E>(
    mut broker: Broker,
    mut calls: BrokerCalls,
    mut controls: mpsc::UnboundedReceiver<BrokerControl>,
    clock: C,
    mut on_event: E,
) where
    C: Fn() -> Millis,
    E: FnMut(Millis, CoordinatorEvent),
{
    let mut controls_open = true;
    let mut next_id: u64 = 0;
    let mut waiting: BTreeMap<RequestId, oneshot::Sender<ResponseKind>> = BTreeMap::new();
    // A deadline we already fired at this instant: if the broker still reports it, sleeping
    // 1 ms beats spinning forever on a timer that does not clear.
    let mut fired: Option<(Millis, Millis)> = None;
    loop {
        let now = clock();
        drain_outputs(&mut broker, &mut waiting, &mut on_event, now);
        let deadline = broker.poll_timeout();
        if let Some(d) = deadline {
            if d <= now && fired != Some((d, now)) {
                fired = Some((d, now));
                broker.handle_timeout(now);
                continue;
            }
        }
        let sleep_ms = deadline.map(|d| d.saturating_sub(now).max(1));
        tokio::select! {
            biased;
            control = controls.recv(), if controls_open => {
                match control {
                    Some(control) => broker.apply_control(clock(), control),
                    None => controls_open = false,
                }
            }
            call = calls.rx.recv() => {
                let Some(call) = call else { return };
                let id = RequestId(next_id);
                next_id += 1;
                waiting.insert(id, call.reply);
                let client_id = call.client_id.as_deref().unwrap_or("");
                broker.handle_request_from(clock(), id, call.api_version, client_id, call.request);
            }
            () = tokio::time::sleep(Duration::from_millis(sleep_ms.unwrap_or(0))), if sleep_ms.is_some() => {
                broker.handle_timeout(clock());
            }
        }
    }
}

fn drain_outputs<E: FnMut(Millis, CoordinatorEvent)>(
    broker: &mut Broker,
    waiting: &mut BTreeMap<RequestId, oneshot::Sender<ResponseKind>>,
    on_event: &mut E,
    now: Millis,
) {
    while let Some(output) = broker.poll_output() {
        match output {
            CoordinatorOutput::Response { id, response } => match waiting.remove(&id) {
                // The connection may have gone away; its answer is dropped.
                Some(reply) => drop(reply.send(response)),
                None => tracing::warn!(?id, "broker answered a request that is not waiting"),
            },
            CoordinatorOutput::Event(event) => on_event(now, event),
        }
    }
}
