//! The client side of one connection, as a member holds it: the transport (connection attempt,
//! the ApiVersions handshake, matching each answer frame to the request it answers and decoding
//! it with the real codec) and the member's bookkeeping on top (requests waiting for the
//! handshake, requests in flight with their deadlines).
//!
//! The two halves run at different times, as in the turmoil world, where a connection task
//! reads and decodes while the member's driver may be paused: the transport turns each frame
//! into a [`Delivery`] at once, and the member takes deliveries when it runs.

use std::collections::VecDeque;
use std::rc::Rc;

use bytes::Bytes;
use groupsim_member::compat::fit_request_to_version;
use groupsim_wire::client::{NegotiatedVersions, CLIENT_SOFTWARE_NAME, CLIENT_SOFTWARE_VERSION};
use groupsim_wire::codec::{
    decode_response, encode_request, peek_correlation_id, request_api_key, request_header,
};
use groupsim_wire::versions::served_apis;
use groupsim_wire::{Millis, RequestId, WireError};
use kafka_protocol::messages::{ApiKey, ApiVersionsRequest, RequestKind, ResponseKind};
use kafka_protocol::protocol::StrBytes;

use super::network::Frame;
use super::queue::ConnId;

/// What the transport hands the member, in arrival order.
#[derive(Debug)]
pub(super) enum Delivery {
    /// The handshake completed: requests can be sent at these versions.
    Connected { conn: ConnId, versions: Rc<NegotiatedVersions> },
    /// The answer to the request sent with `correlation_id`.
    Response { conn: ConnId, correlation_id: i32, response: Box<ResponseKind> },
    /// The connection failed (refused, closed or reset by the broker, an answer that does not
    /// decode or answers another request).
    Failed { conn: ConnId, reason: String },
}

#[derive(Debug)]
enum Phase {
    Connecting,
    Handshake,
    Open,
    /// The transport stopped reading (it reported a failure).
    Dead,
}

/// A member's connection to one broker (see the module docs).
#[derive(Debug)]
pub(super) struct ClientConn {
    /// The network's connection.
    pub(super) id: ConnId,
    client_id: StrBytes,
    phase: Phase,
    /// Requests written and not yet answered, as the transport decodes them: (correlation id,
    /// API, version), oldest first.
    decoding: VecDeque<(i32, ApiKey, i16)>,
    next_correlation_id: i32,
    /// Set when the member took the handshake's result: requests go out at these versions.
    versions: Option<Rc<NegotiatedVersions>>,
    /// Requests waiting for the connection to open.
    pub(super) queued: Vec<(RequestId, RequestKind, Millis)>,
    /// Requests written, oldest first: (correlation id, request id, deadline).
    pub(super) in_flight: VecDeque<(i32, RequestId, Millis)>,
}

impl ClientConn {
    /// A connection whose attempt is on its way.
    pub(super) fn new(id: ConnId, client_id: &str) -> Self {
        Self {
            id,
            client_id: StrBytes::from_string(client_id.to_string()),
            phase: Phase::Connecting,
            decoding: VecDeque::new(),
            next_correlation_id: 0,
            versions: None,
            queued: Vec::new(),
            in_flight: VecDeque::new(),
        }
    }

    /// The earliest deadline of the requests queued or in flight.
    pub(super) fn earliest_deadline(&self) -> Option<Millis> {
        let q = self.queued.iter().map(|r| r.2);
        q.chain(self.in_flight.iter().map(|r| r.2)).min()
    }

    /// Every request queued or in flight, with its deadline.
    pub(super) fn request_ids(&self) -> impl Iterator<Item = (RequestId, Millis)> + '_ {
        self.queued.iter().map(|r| (r.0, r.2)).chain(self.in_flight.iter().map(|r| (r.1, r.2)))
    }

    /// The broker accepted the connection: write ApiVersions at our highest version (the frame
    /// to send is returned).
    pub(super) fn on_accepted(&mut self) -> Option<Bytes> {
        if !matches!(self.phase, Phase::Connecting) {
            return None;
        }
        self.phase = Phase::Handshake;
        let version = served_apis()
            .iter()
            .find(|(key, _)| *key == ApiKey::ApiVersions)
            .map_or(0, |(_, range)| range.max);
        let mut request = ApiVersionsRequest::default();
        if version >= 3 {
            request = request
                .with_client_software_name(StrBytes::from_static_str(CLIENT_SOFTWARE_NAME))
                .with_client_software_version(StrBytes::from_static_str(CLIENT_SOFTWARE_VERSION));
        }
        self.write(ApiKey::ApiVersions, version, &RequestKind::ApiVersions(request)).ok()
    }

    /// A frame arrived from the broker: what the member is to learn of it, if anything.
    pub(super) fn on_frame(&mut self, frame: Frame) -> Option<Delivery> {
        let result = match (&self.phase, frame) {
            (Phase::Dead, _) | (_, Frame::Syn) => return None,
            (_, Frame::Close) => Err("the broker closed the connection".to_string()),
            (Phase::Connecting, Frame::Data(_)) => Err("data before the connection".to_string()),
            (Phase::Handshake, Frame::Data(bytes)) => self.handshake_answer(bytes),
            (Phase::Open, Frame::Data(bytes)) => self.answer(bytes),
        };
        Some(match result {
            Ok(delivery) => delivery,
            Err(reason) => self.fail(reason),
        })
    }

    /// The connection attempt failed.
    pub(super) fn on_refused(&mut self) -> Option<Delivery> {
        match self.phase {
            Phase::Dead => None,
            _ => Some(self.fail("connect: connection refused".to_string())),
        }
    }

    fn fail(&mut self, reason: String) -> Delivery {
        self.phase = Phase::Dead;
        Delivery::Failed { conn: self.id, reason }
    }

    fn next_answer(&mut self, bytes: &[u8]) -> Result<(ApiKey, i16), String> {
        let got = peek_correlation_id(bytes).ok_or("an answer too short for its header")?;
        match self.decoding.pop_front() {
            Some((expected, api_key, version)) if expected == got => Ok((api_key, version)),
            Some((expected, ..)) => Err(format!("answer {got} while {expected} was expected")),
            None => Err(format!("answer {got} to nothing sent")),
        }
    }

    fn handshake_answer(&mut self, bytes: Bytes) -> Result<Delivery, String> {
        let (api_key, version) = self.next_answer(&bytes)?;
        let (_, response) = decode_response(bytes, api_key, version).map_err(|e| e.to_string())?;
        let ResponseKind::ApiVersions(answer) = response else {
            return Err("ApiVersions answered with another kind".to_string());
        };
        if answer.error_code != 0 {
            let name = groupsim_wire::error_name(answer.error_code);
            return Err(format!("handshake: ApiVersions v{version} answered {name}"));
        }
        let theirs: Vec<(i16, kafka_protocol::protocol::VersionRange)> = answer
            .api_keys
            .iter()
            .map(|k| {
                (
                    k.api_key,
                    kafka_protocol::protocol::VersionRange {
                        min: k.min_version,
                        max: k.max_version,
                    },
                )
            })
            .collect();
        self.phase = Phase::Open;
        let versions = Rc::new(NegotiatedVersions::negotiate(&served_apis(), &theirs));
        Ok(Delivery::Connected { conn: self.id, versions })
    }

    fn answer(&mut self, bytes: Bytes) -> Result<Delivery, String> {
        let (api_key, version) = self.next_answer(&bytes)?;
        let (correlation_id, response) =
            decode_response(bytes, api_key, version).map_err(|e| e.to_string())?;
        Ok(Delivery::Response { conn: self.id, correlation_id, response: Box::new(response) })
    }

    /// The member took the handshake's result: requests may be written from now on.
    pub(super) fn take_up(&mut self, versions: Rc<NegotiatedVersions>) {
        self.versions = Some(versions);
    }

    /// Whether the member took the handshake's result (requests can be written).
    pub(super) fn is_ready(&self) -> bool {
        self.versions.is_some()
    }

    /// Writes `request` at the version negotiated for its API (reshaped for that version, as
    /// the member builds requests in their newest shape) and returns the frame to send; the
    /// request is then in flight until `deadline`. Fails, saying why, when no version both
    /// sides speak fits or the request does not encode at it (or the connection is not ready).
    pub(super) fn send(
        &mut self,
        id: RequestId,
        request: RequestKind,
        deadline: Millis,
    ) -> Result<Bytes, String> {
        let Some(versions) = self.versions.clone() else {
            return Err("the connection is not open yet".to_string());
        };
        let Some((api_key, version)) =
            request_api_key(&request).and_then(|k| Some((k, versions.version_for(k)?)))
        else {
            return Err("the broker serves no version of this API".to_string());
        };
        let request = fit_request_to_version(request, version);
        let in_range =
            versions.broker_range(api_key).is_some_and(|r| r.min <= version && version <= r.max);
        if !in_range {
            return Err(WireError::NotNegotiated(api_key).to_string());
        }
        let correlation_id = self.next_correlation_id;
        let frame = self.write(api_key, version, &request).map_err(|e| e.to_string())?;
        self.in_flight.push_back((correlation_id, id, deadline));
        Ok(frame)
    }

    /// Encodes `request` under the next correlation id and expects its answer next.
    fn write(
        &mut self,
        api_key: ApiKey,
        version: i16,
        request: &RequestKind,
    ) -> Result<Bytes, WireError> {
        let correlation_id = self.next_correlation_id;
        let header = request_header(api_key, version, correlation_id, &self.client_id);
        let frame = encode_request(&header, request)?;
        self.next_correlation_id = correlation_id.wrapping_add(1);
        self.decoding.push_back((correlation_id, api_key, version));
        Ok(frame)
    }
}
