//! The server half of a connection over a tokio stream: [`serve_connection`] reads frames into
//! the sans-IO [`ServerConn`] (which decodes them, serves them in order and knows which get no
//! answer), asks a [`RequestHandler`] for each answer and writes it back. The handler is the hook:
//! the simulation's brokers hand requests to the task that owns the sans-IO broker
//! ([`BrokerHandle`]), and `groupsim serve` wraps that with its Fetch long-poll.
//!
//! A connection handles one request at a time, in order: read a frame, decode, ask the
//! handler, wait for the answer, encode, write. Kafka does the same (it mutes a channel until the
//! answer to its current request is sent), which is what keeps answers in request order even
//! though JoinGroup/SyncGroup answers may come long after later requests were read elsewhere.
//!
//! What is done with bad input is [`ServerConn`]'s rule (see [`crate::conn::server`]); a
//! refused frame closes this connection only and is logged (`tracing::warn`).

use std::future::Future;

use kafka_protocol::messages::{RequestKind, ResponseKind};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{mpsc, oneshot};

use crate::conn::{Next, ServerConn};
use crate::frame::{write_frame, FrameReader, DEFAULT_MAX_FRAME_BYTES};
use crate::WireError;

/// Answers one decoded request: the hook between a connection's frame loop and whatever owns
/// the broker. Answers must come back in request order, which [`serve_connection`] guarantees
/// by awaiting each answer before reading the next frame.
pub trait RequestHandler {
    /// The answer to `request`, encoded by the caller at `api_version`. An error closes the
    /// connection.
    fn call(
        &self,
        api_version: i16,
        client_id: Option<String>,
        request: RequestKind,
    ) -> impl Future<Output = Result<ResponseKind, WireError>>;
}

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

/// The receiving end of the broker task's call channel (give it to `run_broker`).
#[derive(Debug)]
pub struct BrokerCalls {
    rx: mpsc::UnboundedReceiver<BrokerCall>,
}

/// A connected handle/receiver pair for one broker task.
pub fn broker_channel() -> (BrokerHandle, BrokerCalls) {
    let (tx, rx) = mpsc::unbounded_channel();
    (BrokerHandle { tx }, BrokerCalls { rx })
}

impl BrokerCalls {
    /// The next call, or `None` once every [`BrokerHandle`] is dropped.
    pub async fn recv(&mut self) -> Option<BrokerCall> {
        self.rx.recv().await
    }
}

impl RequestHandler for BrokerHandle {
    /// Sends a request to the broker task and waits for its answer.
    /// [`WireError::BrokerGone`] if the task has stopped.
    async fn call(
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
    /// Kafka's `connections.max.idle.ms`: a connection that reads no request for this long,
    /// while none is in service, is closed (`None`: never).
    pub idle_close: Option<std::time::Duration>,
}

impl Default for ServeOptions {
    fn default() -> Self {
        Self { max_frame_bytes: DEFAULT_MAX_FRAME_BYTES, idle_close: None }
    }
}

/// Serves one connection until the client closes it (`Ok`) or sends something we refuse
/// (`Err`, already logged with `tracing::warn`). See the module docs for what is refused.
pub async fn serve_connection<S: AsyncRead + AsyncWrite + Unpin, H: RequestHandler>(
    stream: S,
    handler: H,
) -> Result<(), WireError> {
    serve_connection_with(stream, handler, ServeOptions::default()).await
}

/// [`serve_connection`] with explicit options.
pub async fn serve_connection_with<S: AsyncRead + AsyncWrite + Unpin, H: RequestHandler>(
    stream: S,
    handler: H,
    options: ServeOptions,
) -> Result<(), WireError> {
    let mut conn = FrameReader::new(stream, options.max_frame_bytes);
    let result = serve_frames(&mut conn, &handler, options.idle_close).await;
    if let Err(e) = &result {
        tracing::warn!(error = %e, "closing connection");
    }
    result
}

async fn serve_frames<S: AsyncRead + AsyncWrite + Unpin, H: RequestHandler>(
    frames: &mut FrameReader<S>,
    handler: &H,
    idle_close: Option<std::time::Duration>,
) -> Result<(), WireError> {
    let mut conn = ServerConn::new();
    loop {
        // Requests are served one at a time, so a read waits only while none is in service:
        // the idle bound runs from the last answer (or the last request read).
        let read = match idle_close {
            None => frames.read_frame().await?,
            Some(idle) => match tokio::time::timeout(idle, frames.read_frame()).await {
                Ok(read) => read?,
                Err(_) => {
                    tracing::debug!(
                        idle_ms = idle.as_millis() as u64,
                        "closing an idle connection"
                    );
                    return Ok(());
                }
            },
        };
        let Some(frame) = read else { break };
        conn.push(frame);
        while let Some(next) = conn.next_step() {
            let answer = match next {
                Next::Serve { reply, client_id, request } => {
                    tracing::trace!(api = ?reply.api_key, version = reply.version, ?client_id, "request");
                    let response = handler.call(reply.version, client_id, *request).await?;
                    conn.answer(reply, &response)?
                }
                Next::Send(frame) => Some(frame),
                Next::Refuse(e) => return Err(e),
            };
            if let Some(answer) = answer {
                write_frame(frames.get_mut(), &answer).await?;
            }
        }
    }
    Ok(())
}
