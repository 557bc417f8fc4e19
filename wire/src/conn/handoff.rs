//! Requests and answers an in-process world hands over as values, in place of the frames that
//! would carry them. The receiving side gets exactly what it would decode from the frame: the
//! fields the message's version lacks hold what decoding gives them, and a message the encoder
//! would refuse is refused with the encoder's error. Nothing else differs, so a run's history is
//! the same either way; only the bytes are never written and read.
//!
//! Only Fetch is handed over (nearly every exchange of a simulated run is a Fetch); every other
//! API crosses as a frame, so each run still exercises the codec, and the turmoil world, `serve`
//! and `check-broker` carry every message as bytes. The equivalence with encoding and decoding
//! is a property test over generated Fetch requests and answers at every version served.

use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic, ForgottenTopic};
use kafka_protocol::messages::fetch_response::{FetchableTopicResponse, PartitionData};
use kafka_protocol::messages::{ApiKey, FetchRequest, FetchResponse, RequestKind, ResponseKind};
use kafka_protocol::protocol::{Encodable, StrBytes};
use uuid::Uuid;

use crate::codec::{encode_request, request_header};
use crate::WireError;

/// A request handed over instead of its frame: what the server side would decode from it.
#[derive(Clone, Debug, PartialEq)]
pub struct HandedRequest {
    /// The correlation id the frame's header would carry.
    pub correlation_id: i32,
    /// The request's API.
    pub api_key: ApiKey,
    /// The version it is written at (the answer's too).
    pub version: i16,
    /// The client id the header would carry.
    pub client_id: Option<String>,
    /// The body, as decoding at `version` gives it.
    pub request: RequestKind,
}

impl HandedRequest {
    /// The frame that carries this request, for a host that moves bytes only.
    pub fn to_frame(&self) -> Result<bytes::Bytes, WireError> {
        let client_id = StrBytes::from_string(self.client_id.clone().unwrap_or_default());
        let header = request_header(self.api_key, self.version, self.correlation_id, &client_id);
        encode_request(&header, &self.request)
    }
}

/// An answer handed over instead of its frame: what the client side would decode from it.
#[derive(Clone, Debug, PartialEq)]
pub struct HandedResponse {
    /// The correlation id of the request it answers.
    pub correlation_id: i32,
    /// The body, as decoding at the request's version gives it.
    pub response: ResponseKind,
}

/// Whether a message of `api_key` at `version` may be handed over: Fetch at the versions whose
/// fields [`as_decoded_request`] and [`as_decoded_response`] know.
pub fn hands_over(api_key: ApiKey, version: i16) -> bool {
    api_key == ApiKey::Fetch && (4..=12).contains(&version)
}

/// What becomes of a message offered for handing over.
#[derive(Debug)]
pub enum Handover<T, F = T> {
    /// Handed over: the message as the other side would decode it from its frame.
    Value(T),
    /// Refused, with the error the encoder gives for it.
    Refused(WireError),
    /// Not handed over (see [`hands_over`]; one carrying unknown tagged fields neither): it
    /// goes as a frame.
    Framed(F),
}

/// `request` as the server side would decode it from its frame at `version` (see
/// [`Handover`]).
pub fn as_decoded_request(request: RequestKind, version: i16) -> Handover<RequestKind> {
    match request {
        RequestKind::Fetch(fetch)
            if hands_over(ApiKey::Fetch, version) && request_tags_empty(&fetch) =>
        {
            // Only a message the quick look cannot vouch for is sized by the encoder, which
            // names the refusal (sizing an answer builds and drops default values for every
            // partition).
            let refusal = if request_surely_encodes(&fetch, version) {
                None
            } else {
                fetch.compute_size(version).err()
            };
            match refusal {
                Some(e) => {
                    Handover::Refused(encode_error::<FetchRequest>(ApiKey::Fetch, version, e))
                }
                None => Handover::Value(RequestKind::Fetch(fetch_request(fetch, version))),
            }
        }
        other => Handover::Framed(other),
    }
}

/// `response` as the client side would decode it from its frame at `version` (see
/// [`Handover`]).
pub fn as_decoded_response(response: ResponseKind, version: i16) -> Handover<ResponseKind> {
    match response {
        ResponseKind::Fetch(fetch)
            if hands_over(ApiKey::Fetch, version) && response_tags_empty(&fetch) =>
        {
            let refusal = if response_surely_encodes(&fetch, version) {
                None
            } else {
                fetch.compute_size(version).err()
            };
            match refusal {
                Some(e) => {
                    Handover::Refused(encode_error::<FetchResponse>(ApiKey::Fetch, version, e))
                }
                None => Handover::Value(ResponseKind::Fetch(fetch_response(fetch, version))),
            }
        }
        other => Handover::Framed(other),
    }
}

/// The error the codec gives for a message of type `T` the encoder refuses (kafka-protocol
/// names the body's type and version before the cause).
fn encode_error<T>(api_key: ApiKey, version: i16, e: impl std::fmt::Display) -> WireError {
    let body = std::any::type_name::<T>();
    WireError::Encode {
        api_key,
        version,
        reason: format!("Failed to encode {body} v{version} body: {e:#}"),
    }
}

fn request_tags_empty(r: &FetchRequest) -> bool {
    r.unknown_tagged_fields.is_empty()
        && r.replica_state.unknown_tagged_fields.is_empty()
        && r.topics.iter().all(|t| {
            t.unknown_tagged_fields.is_empty()
                && t.partitions.iter().all(|p| p.unknown_tagged_fields.is_empty())
        })
        && r.forgotten_topics_data.iter().all(|t| t.unknown_tagged_fields.is_empty())
}

fn response_tags_empty(r: &FetchResponse) -> bool {
    r.unknown_tagged_fields.is_empty()
        && r.node_endpoints.iter().all(|n| n.unknown_tagged_fields.is_empty())
        && r.responses.iter().all(|t| {
            t.unknown_tagged_fields.is_empty()
                && t.partitions.iter().all(|p| {
                    p.unknown_tagged_fields.is_empty()
                        && p.diverging_epoch.unknown_tagged_fields.is_empty()
                        && p.current_leader.unknown_tagged_fields.is_empty()
                        && p.snapshot_id.unknown_tagged_fields.is_empty()
                        && p.aborted_transactions
                            .iter()
                            .flatten()
                            .all(|a| a.unknown_tagged_fields.is_empty())
                })
        })
}

/// Whether kafka-protocol's encoder surely takes Fetch request `r` at `v` (4 to 12, no unknown
/// tagged fields), as [`response_surely_encodes`] for answers.
fn request_surely_encodes(r: &FetchRequest, v: i16) -> bool {
    let fits = |n: usize| n <= i16::MAX as usize;
    (v >= 7 || r.forgotten_topics_data.is_empty())
        && (v < 11 || fits(r.rack_id.len()))
        && (v < 12 || r.cluster_id.is_none())
        && fits(r.forgotten_topics_data.len())
        && r.forgotten_topics_data.iter().all(|t| fits(t.topic.0.len()) && fits(t.partitions.len()))
        && fits(r.topics.len())
        && r.topics.iter().all(|t| {
            fits(t.topic.0.len())
                && fits(t.partitions.len())
                && (v >= 12 || t.partitions.iter().all(|p| p.last_fetched_epoch == -1))
        })
}

/// Whether kafka-protocol's encoder surely takes Fetch answer `r` at `v` (4 to 12, no unknown
/// tagged fields): no field set that the version lacks, and no string, array or byte field longer
/// than its length prefix can say. `false` means only that the encoder must be asked.
fn response_surely_encodes(r: &FetchResponse, v: i16) -> bool {
    let fits = |n: usize| n <= i16::MAX as usize;
    (v >= 7 || r.session_id == 0)
        && fits(r.responses.len())
        && r.responses.iter().all(|t| {
            fits(t.topic.0.len())
                && fits(t.partitions.len())
                && t.partitions.iter().all(|p| {
                    (v >= 11 || p.preferred_read_replica == -1)
                        && p.aborted_transactions.as_ref().is_none_or(|a| fits(a.len()))
                        && p.records.as_ref().is_none_or(|b| b.len() <= i32::MAX as usize)
                        && (v < 12 || tagged_structs_unset(p))
                })
        })
}

/// A partition answer's tagged structs (version 12 on) hold their defaults.
fn tagged_structs_unset(p: &PartitionData) -> bool {
    let (d, l, s) = (&p.diverging_epoch, &p.current_leader, &p.snapshot_id);
    d.epoch == -1
        && d.end_offset == -1
        && d.unknown_tagged_fields.is_empty()
        && l.leader_id == -1
        && l.leader_epoch == -1
        && l.unknown_tagged_fields.is_empty()
        && s.end_offset == -1
        && s.epoch == -1
        && s.unknown_tagged_fields.is_empty()
}

/// A Fetch request (versions 4 to 12) as decoding gives it: each field the version lacks holds
/// the value the decoder puts there.
fn fetch_request(mut r: FetchRequest, v: i16) -> FetchRequest {
    if v < 12 {
        r.cluster_id = None;
    }
    r.replica_state = Default::default();
    if v < 7 {
        r.session_id = 0;
        r.session_epoch = -1;
    }
    if v < 11 {
        r.rack_id = StrBytes::from_static_str("");
    }
    for t in &mut r.topics {
        fetch_topic(t, v);
    }
    for t in &mut r.forgotten_topics_data {
        forgotten_topic(t);
    }
    r
}

fn fetch_topic(t: &mut FetchTopic, v: i16) {
    t.topic_id = Uuid::nil();
    for p in &mut t.partitions {
        fetch_partition(p, v);
    }
}

fn fetch_partition(p: &mut FetchPartition, v: i16) {
    if v < 9 {
        p.current_leader_epoch = -1;
    }
    if v < 12 {
        p.last_fetched_epoch = -1;
    }
    if v < 5 {
        p.log_start_offset = -1;
    }
    p.replica_directory_id = Uuid::nil();
    p.high_watermark = i64::MAX;
}

fn forgotten_topic(t: &mut ForgottenTopic) {
    t.topic_id = Uuid::nil();
}

/// A Fetch answer (versions 4 to 12) as decoding gives it.
fn fetch_response(mut r: FetchResponse, v: i16) -> FetchResponse {
    if v < 7 {
        r.error_code = 0;
        r.session_id = 0;
    }
    r.node_endpoints = Vec::new();
    for t in &mut r.responses {
        fetchable_topic(t, v);
    }
    r
}

fn fetchable_topic(t: &mut FetchableTopicResponse, v: i16) {
    t.topic_id = Uuid::nil();
    for p in &mut t.partitions {
        partition_data(p, v);
    }
}

fn partition_data(p: &mut PartitionData, v: i16) {
    if v < 5 {
        p.log_start_offset = -1;
    }
    if v < 12 {
        p.diverging_epoch = Default::default();
        p.current_leader = Default::default();
        p.snapshot_id = Default::default();
    }
    if v < 11 {
        p.preferred_read_replica = (-1).into();
    }
}
