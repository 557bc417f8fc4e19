//! OffsetCommit requests and answers at the version the simulated members send, handed over
//! when they hold nothing that version lacks: then each is what decoding its frame gives.

use kafka_protocol::messages::{OffsetCommitRequest, OffsetCommitResponse};

use super::fits;

/// The version handed over.
pub(super) const VERSION: i16 = 9;

/// Whether `r` at [`VERSION`] is its own decoded frame. The retention time exists in versions 2
/// to 4 only (decoding gives -1), a topic's id in none this version has (decoding gives nil).
pub(super) fn request_is_decoded(r: &OffsetCommitRequest) -> bool {
    r.retention_time_ms == -1
        && r.unknown_tagged_fields.is_empty()
        && fits(r.group_id.0.len())
        && fits(r.member_id.len())
        && r.group_instance_id.as_ref().is_none_or(|g| fits(g.len()))
        && fits(r.topics.len())
        && r.topics.iter().all(|t| {
            t.topic_id.is_nil()
                && t.unknown_tagged_fields.is_empty()
                && fits(t.name.0.len())
                && fits(t.partitions.len())
                && t.partitions.iter().all(|p| {
                    p.unknown_tagged_fields.is_empty()
                        && p.committed_metadata.as_ref().is_none_or(|m| fits(m.len()))
                })
        })
}

/// Whether answer `r` at [`VERSION`] is its own decoded frame (a topic's id exists from
/// version 10 on; decoding gives nil).
pub(super) fn response_is_decoded(r: &OffsetCommitResponse) -> bool {
    r.unknown_tagged_fields.is_empty()
        && fits(r.topics.len())
        && r.topics.iter().all(|t| {
            t.topic_id.is_nil()
                && t.unknown_tagged_fields.is_empty()
                && fits(t.name.0.len())
                && fits(t.partitions.len())
                && t.partitions.iter().all(|p| p.unknown_tagged_fields.is_empty())
        })
}
