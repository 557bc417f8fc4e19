//! Fetch requests and answers (versions 4 to 12) handed over: each field the version lacks is
//! given the value decoding puts there, and a message the encoder would refuse is refused with
//! its error.

use std::ops::RangeInclusive;

use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic, ForgottenTopic};
use kafka_protocol::messages::fetch_response::{FetchableTopicResponse, PartitionData};
use kafka_protocol::messages::{ApiKey, FetchRequest, FetchResponse, RequestKind, ResponseKind};
use kafka_protocol::protocol::{Encodable, StrBytes};
use uuid::Uuid;

use super::{encode_error, fits, Handover};

/// The versions whose fields this file knows.
pub(super) const VERSIONS: RangeInclusive<i16> = 4..=12;

/// A Fetch request at `version` (one of [`VERSIONS`]) as the server side decodes it.
pub(super) fn request(fetch: FetchRequest, version: i16) -> Handover<RequestKind> {
    if !request_tags_empty(&fetch) {
        return Handover::Framed(RequestKind::Fetch(fetch));
    }
    // Only a message the quick look cannot vouch for is sized by the encoder, which names the
    // refusal (sizing an answer builds and drops default values for every partition).
    let refusal = if request_surely_encodes(&fetch, version) {
        None
    } else {
        fetch.compute_size(version).err()
    };
    match refusal {
        Some(e) => Handover::Refused(encode_error::<FetchRequest>(ApiKey::Fetch, version, e)),
        None => Handover::Value(RequestKind::Fetch(fetch_request(fetch, version))),
    }
}

/// A Fetch answer at `version` (one of [`VERSIONS`]) as the client side decodes it.
pub(super) fn response(fetch: FetchResponse, version: i16) -> Handover<ResponseKind> {
    if !response_tags_empty(&fetch) {
        return Handover::Framed(ResponseKind::Fetch(fetch));
    }
    let refusal = if response_surely_encodes(&fetch, version) {
        None
    } else {
        fetch.compute_size(version).err()
    };
    match refusal {
        Some(e) => Handover::Refused(encode_error::<FetchResponse>(ApiKey::Fetch, version, e)),
        None => Handover::Value(ResponseKind::Fetch(fetch_response(fetch, version))),
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
