//! The protocol-neutral half of a consumer: what a member does the same way whichever group
//! protocol it speaks (classic JoinGroup/SyncGroup or KIP-848's ConsumerGroupHeartbeat). Cluster
//! metadata, coordinator discovery, owned partitions and their positions, fetching, processing,
//! the outputs queue, the deadline table and the in-flight request table live here, gathered in
//! one [`core::Core`] that each protocol's member (`classic`, `consumer`) embeds beside its own
//! membership; the handlers both share are written once in `handlers`.

pub(crate) mod commit;
pub(crate) mod core;
pub(crate) mod discovery;
pub(crate) mod fetch;
pub(crate) mod handlers;
pub(crate) mod in_flight;
pub(crate) mod metadata;
pub(crate) mod outputs;
pub(crate) mod positions;
pub(crate) mod processing;
pub(crate) mod timers;

use kafka_protocol::messages::GroupId;
use kafka_protocol::protocol::StrBytes;

use crate::compat::sb;
use crate::MemberConfig;

/// The `group.id` field of a group request.
pub(crate) fn group_id(config: &MemberConfig) -> GroupId {
    GroupId(sb(&config.group_id))
}

/// The `group.instance.id` field of a group request (static membership), if any.
pub(crate) fn instance_id(config: &MemberConfig) -> Option<StrBytes> {
    config.group_instance_id.as_deref().map(sb)
}
