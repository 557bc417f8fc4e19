//! Metadata requests and answers at the version the simulated members send, handed over when
//! they hold nothing that version lacks: then each is what decoding its frame gives.

use kafka_protocol::messages::{MetadataRequest, MetadataResponse};

use super::fits;

/// The version handed over.
pub(super) const VERSION: i16 = 12;

/// Whether `r` at [`VERSION`] is its own decoded frame. Asking for the cluster's authorized
/// operations exists in versions 8 to 10 only (decoding gives `false`).
pub(super) fn request_is_decoded(r: &MetadataRequest) -> bool {
    !r.include_cluster_authorized_operations
        && r.unknown_tagged_fields.is_empty()
        && r.topics.as_ref().is_none_or(|topics| {
            fits(topics.len())
                && topics.iter().all(|t| {
                    t.unknown_tagged_fields.is_empty()
                        && t.name.as_ref().is_none_or(|n| fits(n.0.len()))
                })
        })
}

/// Whether answer `r` at [`VERSION`] is its own decoded frame. The cluster's authorized
/// operations exist in versions 8 to 10 only (decoding gives `i32::MIN`), the top-level error
/// from 13 on (decoding gives 0).
pub(super) fn response_is_decoded(r: &MetadataResponse) -> bool {
    r.cluster_authorized_operations == i32::MIN
        && r.error_code == 0
        && r.unknown_tagged_fields.is_empty()
        && r.cluster_id.as_ref().is_none_or(|c| fits(c.len()))
        && fits(r.brokers.len())
        && r.brokers.iter().all(|b| {
            b.unknown_tagged_fields.is_empty()
                && fits(b.host.len())
                && b.rack.as_ref().is_none_or(|rack| fits(rack.len()))
        })
        && fits(r.topics.len())
        && r.topics.iter().all(|t| {
            t.unknown_tagged_fields.is_empty()
                && t.name.as_ref().is_none_or(|n| fits(n.0.len()))
                && fits(t.partitions.len())
                && t.partitions.iter().all(|p| {
                    p.unknown_tagged_fields.is_empty()
                        && fits(p.replica_nodes.len())
                        && fits(p.isr_nodes.len())
                        && fits(p.offline_replicas.len())
                })
        })
}
