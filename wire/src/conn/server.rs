//! The server side of one connection, sans IO (see the [module docs](super)).
//!
//! Bad input never panics. ApiVersions at a version we do not serve is answered
//! UNSUPPORTED_VERSION (35) in the v0 body layout, listing our versions, as Kafka does, and the
//! client retries at a version we serve. Any other unserved API or version, an unknown API key
//! or a malformed frame is refused: the host closes this connection only (Kafka also closes a
//! connection whose request it cannot parse, so clients handle this path).

use std::collections::VecDeque;

use bytes::Bytes;
use kafka_protocol::messages::{ApiKey, RequestKind, ResponseKind};

use crate::codec::{decode_request_from, encode_api_versions_fallback, encode_response, Source};
use crate::versions::unsupported_api_versions;
use crate::WireError;

/// How to answer one request: its correlation id, API and version, and whether an answer is
/// sent at all (Kafka sends nothing back for a Produce with acks=0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReplyTo {
    /// The request's correlation id.
    pub correlation_id: i32,
    /// The request's API.
    pub api_key: ApiKey,
    /// The version the request was encoded with; the answer is encoded with it too.
    pub version: i16,
    /// No answer goes back (a Produce with acks=0).
    pub silent: bool,
}

/// What the connection asks of its host next.
#[derive(Debug)]
pub enum Next {
    /// Serve this request; hand its answer to [`ServerConn::answer`] with `reply`.
    Serve { reply: ReplyTo, client_id: Option<String>, request: Box<RequestKind> },
    /// Send this frame (the ApiVersions fallback answer); nothing is being served.
    Send(Bytes),
    /// The frame is refused: close the connection.
    Refuse(WireError),
}

/// The server side of one connection (see the module docs).
#[derive(Debug, Default)]
pub struct ServerConn {
    /// Request frames read and not yet served.
    waiting: VecDeque<Bytes>,
    /// A request is being served (its answer is not sent yet).
    busy: bool,
    /// The client closed its side: serve what was read, then drop the connection.
    closing: bool,
    /// Where the frames come from.
    source: Source,
}

impl ServerConn {
    /// A connection just accepted.
    pub fn new() -> Self {
        Self::default()
    }

    /// A connection whose client is this process's own encoder (an in-process world): its
    /// frames are read without the layout walk ([`Source::OwnEncoder`]).
    pub fn from_own_encoder() -> Self {
        Self { source: Source::OwnEncoder, ..Self::default() }
    }

    /// A request frame was read.
    pub fn push(&mut self, frame: Bytes) {
        self.waiting.push_back(frame);
    }

    /// The client closed its side.
    pub fn close(&mut self) {
        self.closing = true;
    }

    /// Whether the client closed its side.
    pub fn is_closing(&self) -> bool {
        self.closing
    }

    /// Whether a request is being served.
    pub fn is_busy(&self) -> bool {
        self.busy
    }

    /// Whether frames wait to be served.
    pub fn has_waiting(&self) -> bool {
        !self.waiting.is_empty()
    }

    /// Whether the connection has nothing left to do: closed by the client, nothing served or
    /// waiting.
    pub fn is_done(&self) -> bool {
        self.closing && !self.busy && self.waiting.is_empty()
    }

    /// The next thing to do, unless a request is being served or nothing waits.
    pub fn next_step(&mut self) -> Option<Next> {
        if self.busy {
            return None;
        }
        let frame = self.waiting.pop_front()?;
        Some(match decode_request_from(frame, self.source) {
            Ok(req) => {
                self.busy = true;
                let silent = matches!(&req.request, RequestKind::Produce(p) if p.acks == 0);
                let reply = ReplyTo {
                    correlation_id: req.header.correlation_id,
                    api_key: req.api_key,
                    version: req.version,
                    silent,
                };
                let client_id = req.header.client_id.as_ref().map(|c| c.to_string());
                Next::Serve { reply, client_id, request: Box::new(req.request) }
            }
            Err(WireError::UnsupportedVersion {
                api_key: ApiKey::ApiVersions,
                version,
                correlation_id,
            }) => {
                tracing::debug!(version, "ApiVersions version not served; answering in v0 layout");
                match encode_api_versions_fallback(correlation_id, &unsupported_api_versions()) {
                    Ok(frame) => Next::Send(frame),
                    Err(e) => Next::Refuse(e),
                }
            }
            Err(e) => Next::Refuse(e),
        })
    }

    /// The answer to the request being served: the frame to send, or `None` when the request
    /// gets no answer. The next request may be served after this.
    pub fn answer(
        &mut self,
        reply: ReplyTo,
        response: &ResponseKind,
    ) -> Result<Option<Bytes>, WireError> {
        self.busy = false;
        if reply.silent {
            return Ok(None);
        }
        encode_response(reply.correlation_id, reply.api_key, reply.version, response).map(Some)
    }
}
