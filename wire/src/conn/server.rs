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

use super::handoff::{as_decoded_response, HandedRequest, HandedResponse, Handover};
use crate::codec::{
    decode_request_from, encode_api_versions_fallback, encode_response, response_api_key, Source,
};
use crate::versions::is_served;
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
    /// The request was handed over as a value ([`super::handoff`]): so is its answer
    /// ([`ServerConn::answer_handed`]).
    pub handed: bool,
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

/// A request read and not yet served.
#[derive(Debug)]
enum Waiting {
    Frame(Bytes),
    Handed(Box<HandedRequest>),
}

/// An answer to send: a frame, or (to a request handed over) a value.
#[derive(Debug)]
pub enum Outgoing {
    /// The answer's frame.
    Frame(Bytes),
    /// The answer handed over as a value ([`super::handoff`]).
    Handed(Box<HandedResponse>),
}

/// The server side of one connection (see the module docs).
#[derive(Debug, Default)]
pub struct ServerConn {
    /// Requests read and not yet served.
    waiting: VecDeque<Waiting>,
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
        self.waiting.push_back(Waiting::Frame(frame));
    }

    /// A request handed over as a value was read ([`super::handoff`]); it waits its turn with
    /// the frames.
    pub fn push_handed(&mut self, request: Box<HandedRequest>) {
        self.waiting.push_back(Waiting::Handed(request));
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
        let frame = match self.waiting.pop_front()? {
            Waiting::Frame(frame) => frame,
            Waiting::Handed(handed) => return Some(self.serve_handed(*handed)),
        };
        Some(match decode_request_from(frame, self.source) {
            Ok(req) => {
                self.busy = true;
                let silent = matches!(&req.request, RequestKind::Produce(p) if p.acks == 0);
                let reply = ReplyTo {
                    correlation_id: req.header.correlation_id,
                    api_key: req.api_key,
                    version: req.version,
                    silent,
                    handed: false,
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

    /// A handed-over request, as its frame would be served: refused at a version we do not
    /// serve, as decoding refuses it.
    fn serve_handed(&mut self, handed: HandedRequest) -> Next {
        let HandedRequest { correlation_id, api_key, version, client_id, request } = handed;
        if !is_served(api_key, version) {
            return Next::Refuse(WireError::UnsupportedVersion {
                api_key,
                version,
                correlation_id,
            });
        }
        self.busy = true;
        let silent = matches!(&request, RequestKind::Produce(p) if p.acks == 0);
        let reply = ReplyTo { correlation_id, api_key, version, silent, handed: true };
        Next::Serve { reply, client_id, request: Box::new(request) }
    }

    /// [`Self::answer`] for a request handed over as a value: its answer as a value too, as
    /// the client side would decode it (the encoder's error where it would refuse it), or as
    /// a frame when the handover does not take it.
    pub fn answer_handed(
        &mut self,
        reply: ReplyTo,
        response: ResponseKind,
    ) -> Result<Option<Outgoing>, WireError> {
        // No answer, or one of another API (the encoder's error): as a frame would be.
        if reply.silent || response_api_key(&response) != Some(reply.api_key) {
            return self.answer(reply, &response).map(|f| f.map(Outgoing::Frame));
        }
        self.busy = false;
        let (correlation_id, version) = (reply.correlation_id, reply.version);
        match as_decoded_response(response, version) {
            Handover::Value(response) => {
                Ok(Some(Outgoing::Handed(Box::new(HandedResponse { correlation_id, response }))))
            }
            Handover::Refused(e) => Err(e),
            Handover::Framed(response) => {
                encode_response(correlation_id, reply.api_key, version, &response)
                    .map(|f| Some(Outgoing::Frame(f)))
            }
        }
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
