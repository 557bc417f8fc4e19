//! The client side of one connection, sans IO (see the [module docs](super)).

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::{ApiKey, ApiVersionsRequest, RequestKind, ResponseKind};
use kafka_protocol::protocol::{StrBytes, VersionRange};

use super::handoff::{as_decoded_request, hands_over, HandedRequest, HandedResponse, Handover};
use crate::codec::{
    decode_response, decode_response_prefix_from, encode_request, peek_correlation_id,
    request_api_key, request_header, Source,
};
use crate::error_name;
use crate::versions::highest_common;
use crate::WireError;

/// Name and version we report in ApiVersions v3+ (Kafka checks them against
/// `[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?`).
pub const CLIENT_SOFTWARE_NAME: &str = "groupsim";
/// See [`CLIENT_SOFTWARE_NAME`].
pub const CLIENT_SOFTWARE_VERSION: &str = "0.1.0";

const UNSUPPORTED_VERSION: i16 = 35;

/// The outcome of the ApiVersions exchange: per API, the broker's range and the version we use.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NegotiatedVersions {
    /// API key number -> the broker's advertised range.
    broker: BTreeMap<i16, VersionRange>,
    /// API key number -> highest version in both our range and the broker's.
    chosen: BTreeMap<i16, i16>,
}

impl NegotiatedVersions {
    /// Intersects our ranges with the broker's advertised ranges.
    pub fn negotiate(ours: &[(ApiKey, VersionRange)], broker: &[(i16, VersionRange)]) -> Self {
        let broker: BTreeMap<i16, VersionRange> = broker.iter().copied().collect();
        let chosen = ours
            .iter()
            .filter_map(|&(key, range)| {
                let theirs = broker.get(&(key as i16))?;
                Some((key as i16, highest_common(range, *theirs)?))
            })
            .collect();
        Self { broker, chosen }
    }

    /// The version we send `api_key` requests with, or `None` if there is no common version.
    pub fn version_for(&self, api_key: ApiKey) -> Option<i16> {
        self.chosen.get(&(api_key as i16)).copied()
    }

    /// The range the broker advertised for `api_key`.
    pub fn broker_range(&self, api_key: ApiKey) -> Option<VersionRange> {
        self.broker.get(&(api_key as i16)).copied()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Nothing sent yet.
    New,
    /// ApiVersions sent at this version, its answer awaited.
    Handshake { version: i16 },
    /// Requests may be written.
    Open,
}

/// What a frame from the broker meant.
#[derive(Debug)]
pub enum Received {
    /// The broker refused our ApiVersions version: send this retry at an older one.
    Retry(Bytes),
    /// The handshake completed: requests may be written at [`ClientConn::versions`].
    Ready,
    /// The answer to the request written with `correlation_id`.
    Response { correlation_id: i32, response: Box<ResponseKind> },
}

/// The client side of one connection (see the [module docs](super)).
#[derive(Debug)]
pub struct ClientConn {
    client_id: StrBytes,
    ours: Vec<(ApiKey, VersionRange)>,
    phase: Phase,
    /// Requests written and not yet answered: (correlation id, API, version), oldest first.
    expected: VecDeque<(i32, ApiKey, i16)>,
    next_correlation_id: i32,
    versions: Option<Arc<NegotiatedVersions>>,
    /// Where the broker's frames come from.
    source: Source,
}

impl ClientConn {
    /// A connection of client `client_id` that speaks the API versions `ours`.
    pub fn new(client_id: &str, ours: Vec<(ApiKey, VersionRange)>) -> Self {
        Self {
            client_id: StrBytes::from_string(client_id.to_string()),
            ours,
            phase: Phase::New,
            expected: VecDeque::new(),
            next_correlation_id: 0,
            versions: None,
            source: Source::Untrusted,
        }
    }

    /// This connection's broker is this process's own encoder (an in-process world): its
    /// answers are read without the layout walk ([`Source::OwnEncoder`]).
    pub fn from_own_encoder(mut self) -> Self {
        self.source = Source::OwnEncoder;
        self
    }

    /// The first frame once the connection is up: ApiVersions at our highest version.
    pub fn hello(&mut self) -> Result<Bytes, WireError> {
        let version = self
            .ours
            .iter()
            .find(|(key, _)| *key == ApiKey::ApiVersions)
            .map(|(_, range)| range.max)
            .ok_or_else(|| WireError::Handshake("our version table lacks ApiVersions".into()))?;
        self.api_versions(version)
    }

    fn api_versions(&mut self, version: i16) -> Result<Bytes, WireError> {
        let mut request = ApiVersionsRequest::default();
        if version >= 3 {
            request = request
                .with_client_software_name(StrBytes::from_static_str(CLIENT_SOFTWARE_NAME))
                .with_client_software_version(StrBytes::from_static_str(CLIENT_SOFTWARE_VERSION));
        }
        let frame =
            self.encode(ApiKey::ApiVersions, version, &RequestKind::ApiVersions(request))?;
        self.phase = Phase::Handshake { version };
        Ok(frame.1)
    }

    /// Whether the handshake has completed.
    pub fn is_open(&self) -> bool {
        self.phase == Phase::Open
    }

    /// The negotiated versions, once the handshake has completed.
    pub fn versions(&self) -> Option<&Arc<NegotiatedVersions>> {
        self.versions.as_ref()
    }

    /// Requests written and not yet answered.
    pub fn in_flight(&self) -> usize {
        self.expected.len()
    }

    /// Takes a frame from the broker. An error means the connection is unusable (an answer to
    /// no request or to another one than the oldest, one that does not decode, a refused
    /// handshake): drop it.
    pub fn on_frame(&mut self, frame: Bytes) -> Result<Received, WireError> {
        let got = peek_correlation_id(&frame)
            .ok_or(WireError::FrameTooShort { len: frame.len(), what: "response header" })?;
        let (expected, api_key, version) =
            self.expected.pop_front().ok_or(WireError::UnexpectedResponse(got))?;
        if got != expected {
            return Err(WireError::CorrelationMismatch { expected, got });
        }
        match self.phase {
            Phase::Open => {
                // As Kafka's clients do, bytes after a well-formed answer are ignored (librdkafka's
                // mock cluster appends one to Metadata v12).
                let (correlation_id, response, trailing) =
                    decode_response_prefix_from(frame, api_key, version, self.source)?;
                if trailing > 0 {
                    tracing::warn!(?api_key, version, trailing, "bytes after the answer ignored");
                }
                Ok(Received::Response { correlation_id, response: Box::new(response) })
            }
            Phase::Handshake { version } => self.handshake_answer(frame, version),
            Phase::New => Err(WireError::UnexpectedResponse(got)),
        }
    }

    fn handshake_answer(&mut self, frame: Bytes, version: i16) -> Result<Received, WireError> {
        // The error code is the first body field in every version; a broker that does not serve
        // our version answers in the v0 layout, as Kafka does. Like the Java client, read the
        // other layout when the first does not decode. librdkafka's mock cluster answers in a
        // layout of its own (a one-byte count before v1 entries): when neither layout reads, an
        // UNSUPPORTED_VERSION answer still says to retry, at v0, which every broker serves.
        let error = frame.get(4..6).map(|b| i16::from_be_bytes([b[0], b[1]]));
        let unsupported = error == Some(UNSUPPORTED_VERSION);
        let layouts = if unsupported { [0, version] } else { [version, 0] };
        let decoded =
            decode_response(frame.clone(), ApiKey::ApiVersions, layouts[0]).or_else(|first| {
                match layouts[1] != layouts[0] {
                    true => {
                        decode_response(frame, ApiKey::ApiVersions, layouts[1]).map_err(|_| first)
                    }
                    false => Err(first),
                }
            });
        let response = match decoded {
            Ok((_, response)) => response,
            Err(_) if unsupported && version > 0 && self.next_correlation_id == 1 => {
                return self.api_versions(0).map(Received::Retry);
            }
            Err(e) => return Err(e),
        };
        let ResponseKind::ApiVersions(answer) = response else {
            return Err(WireError::Handshake("ApiVersions answer of another kind".into()));
        };
        let theirs: Vec<(i16, VersionRange)> = answer
            .api_keys
            .iter()
            .map(|k| (k.api_key, VersionRange { min: k.min_version, max: k.max_version }))
            .collect();
        if answer.error_code == UNSUPPORTED_VERSION && self.next_correlation_id == 1 {
            // Retry once at the highest version both sides speak (v0 if the broker lists none).
            let ours = self.ours.iter().find(|(k, _)| *k == ApiKey::ApiVersions).map(|(_, r)| *r);
            let listed = theirs.iter().find(|(k, _)| *k == ApiKey::ApiVersions as i16);
            let retry = ours
                .zip(listed)
                .and_then(|(ours, (_, theirs))| highest_common(ours, *theirs))
                .unwrap_or(0);
            if retry == version {
                return Err(WireError::Handshake(format!(
                    "broker refused ApiVersions v{version} but lists it as supported"
                )));
            }
            return self.api_versions(retry).map(Received::Retry);
        }
        if answer.error_code != 0 {
            let name = error_name(answer.error_code);
            return Err(WireError::Handshake(format!("ApiVersions v{version} answered {name}")));
        }
        self.versions = Some(Arc::new(NegotiatedVersions::negotiate(&self.ours, &theirs)));
        self.phase = Phase::Open;
        Ok(Received::Ready)
    }

    /// Encodes `request` at `version`, which must lie in the broker's range, under the next
    /// correlation id; its answer is expected after those of the requests written before.
    /// Returns the correlation id and the frame to send.
    pub fn write(
        &mut self,
        request: &RequestKind,
        version: i16,
    ) -> Result<(i32, Bytes), WireError> {
        let api_key = request_api_key(request)
            .ok_or_else(|| WireError::UnsupportedRequest(format!("{request:?}")))?;
        let versions = self.versions.as_ref().ok_or(WireError::NotNegotiated(api_key))?;
        let range = versions.broker_range(api_key).ok_or(WireError::NotNegotiated(api_key))?;
        if version < range.min || version > range.max {
            return Err(WireError::NotNegotiated(api_key));
        }
        self.encode(api_key, version, request)
    }

    /// [`Self::write`] for a request handed over as a value by an in-process world (see
    /// [`super::handoff`]): the same checks, errors and correlation id, no frame. A request
    /// that is not handed over at `version` is given back ([`Handover::Framed`]): write it.
    pub fn write_handed(
        &mut self,
        request: RequestKind,
        version: i16,
    ) -> Handover<HandedRequest, RequestKind> {
        let Some(api_key) = request_api_key(&request).filter(|k| hands_over(*k, version)) else {
            return Handover::Framed(request);
        };
        let negotiated = self.versions.as_ref().and_then(|v| v.broker_range(api_key));
        if !negotiated.is_some_and(|range| (range.min..=range.max).contains(&version)) {
            return Handover::Refused(WireError::NotNegotiated(api_key));
        }
        let request = match as_decoded_request(request, version) {
            Handover::Value(decoded) => decoded,
            Handover::Refused(e) => return Handover::Refused(e),
            Handover::Framed(request) => return Handover::Framed(request),
        };
        let correlation_id = self.next_correlation_id;
        self.next_correlation_id = correlation_id.wrapping_add(1);
        self.expected.push_back((correlation_id, api_key, version));
        let client_id = Some(self.client_id.as_str().to_owned());
        Handover::Value(HandedRequest { correlation_id, api_key, version, client_id, request })
    }

    /// [`Self::on_frame`] for an answer handed over as a value: the answer to the oldest
    /// request in flight, or an error that makes the connection unusable.
    pub fn on_handed(&mut self, handed: HandedResponse) -> Result<Received, WireError> {
        let got = handed.correlation_id;
        let (expected, _, _) =
            self.expected.pop_front().ok_or(WireError::UnexpectedResponse(got))?;
        if got != expected {
            return Err(WireError::CorrelationMismatch { expected, got });
        }
        match self.phase {
            Phase::Open => {
                Ok(Received::Response { correlation_id: got, response: Box::new(handed.response) })
            }
            Phase::Handshake { .. } | Phase::New => Err(WireError::UnexpectedResponse(got)),
        }
    }

    fn encode(
        &mut self,
        api_key: ApiKey,
        version: i16,
        request: &RequestKind,
    ) -> Result<(i32, Bytes), WireError> {
        let correlation_id = self.next_correlation_id;
        let header = request_header(api_key, version, correlation_id, &self.client_id);
        let frame = encode_request(&header, request)?;
        self.next_correlation_id = correlation_id.wrapping_add(1);
        self.expected.push_back((correlation_id, api_key, version));
        Ok((correlation_id, frame))
    }
}

#[cfg(test)]
mod tests {
    use kafka_protocol::messages::api_versions_response::ApiVersion;
    use kafka_protocol::messages::ApiVersionsResponse;

    use super::*;
    use crate::codec::encode_response;

    fn answer(error: i16, layout: i16, max: i16) -> Bytes {
        let r = ApiVersionsResponse::default().with_error_code(error).with_api_keys(vec![
            ApiVersion::default().with_api_key(ApiKey::ApiVersions as i16).with_max_version(max),
        ]);
        encode_response(0, ApiKey::ApiVersions, layout, &ResponseKind::ApiVersions(r))
            .expect("encodes")
    }

    fn conn(max: i16) -> ClientConn {
        let ours = vec![(ApiKey::ApiVersions, VersionRange { min: 0, max })];
        let mut c = ClientConn::new("t", ours);
        c.hello().expect("hello");
        c
    }

    /// Kafka answers an ApiVersions version it does not serve UNSUPPORTED_VERSION in the v0
    /// layout; librdkafka's mock cluster answers in the layout of the version asked. Either way
    /// the client retries at the highest version both speak.
    #[test]
    fn an_unsupported_version_answer_in_either_layout_gets_a_retry() {
        for layout in [0, 4] {
            let mut c = conn(4);
            match c.on_frame(answer(UNSUPPORTED_VERSION, layout, 3)) {
                Ok(Received::Retry(_)) => {}
                other => panic!("layout {layout}: {other:?}"),
            }
            assert_eq!(c.phase, Phase::Handshake { version: 3 }, "layout {layout}");
        }
    }

    /// librdkafka's mock cluster (2.16) answers ApiVersions v4 with error 35, a one-byte entry
    /// count and v1 entries: neither layout reads it, and the client retries at v0.
    #[test]
    fn an_unsupported_version_answer_in_neither_layout_gets_a_retry_at_v0() {
        let mut c = conn(4);
        let mock = [0, 0, 0, 0, 0, 0x23, 1, 0, 0x12, 0, 0, 0, 2, 0, 0, 0, 0];
        match c.on_frame(Bytes::copy_from_slice(&mock)) {
            Ok(Received::Retry(_)) => {}
            other => panic!("{other:?}"),
        }
        assert_eq!(c.phase, Phase::Handshake { version: 0 });
    }

    #[test]
    fn another_answer_in_neither_layout_is_a_clear_error() {
        let mut c = conn(4);
        let mut garbage = answer(0, 4, 3).to_vec();
        garbage.truncate(8);
        garbage.extend_from_slice(&[0xff; 3]);
        let e = c.on_frame(Bytes::from(garbage)).expect_err("does not decode");
        assert!(e.to_string().contains("ApiVersions"), "{e}");
    }
}
