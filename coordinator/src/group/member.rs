//! One member of a classic group (Kafka's MemberMetadata): its ids, timeouts, protocols,
//! assignment, and the JoinGroup / SyncGroup requests it has parked.

use std::collections::BTreeSet;

use bytes::Bytes;
use kafka_protocol::error::ResponseError;

use crate::answers::{JoinResult, Parked, SyncResult};
use crate::effects::Effects;
use crate::Millis;

/// One protocol (assignor) a member supports, with its subscription metadata.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemberProtocol {
    /// Protocol name, e.g. `range` or `cooperative-sticky`.
    pub name: String,
    /// Opaque metadata (for consumers: the version-prefixed subscription).
    pub metadata: Bytes,
}

/// A member of a classic group (Kafka's MemberMetadata). Its default is a member with nothing
/// parked, no assignment and no deadline (built field by field from there).
#[derive(Clone, Debug, Default)]
pub struct Member {
    /// Member id the coordinator handed out.
    pub member_id: String,
    /// `group.instance.id` of a static member.
    pub group_instance_id: Option<String>,
    /// Client id from the request header.
    pub client_id: String,
    /// Client host, as DescribeGroups reports it.
    pub client_host: String,
    /// How long the join phase may wait for this member to rejoin.
    pub rebalance_timeout_ms: i32,
    /// How long the member may go without a heartbeat.
    pub session_timeout_ms: i32,
    /// Protocol type, `consumer` for consumers.
    pub protocol_type: String,
    /// Supported protocols in preference order.
    pub protocols: Vec<MemberProtocol>,
    /// The member's assignment in the current generation (empty until the leader syncs).
    pub assignment: Bytes,
    pub(crate) awaiting_join: Option<Parked>,
    pub(crate) awaiting_sync: Option<Parked>,
    /// Added in the current join phase and not yet answered: session timeout does not apply,
    /// the new-member join timeout does.
    pub(crate) is_new: bool,
    /// When the member was added (a new member must be answered within the new-member join
    /// timeout of this instant).
    pub(crate) joined_at: Millis,
    pub(crate) session_deadline: Option<Millis>,
}

impl Member {
    /// Whether a JoinGroup of this member is parked until the join phase completes.
    pub fn is_awaiting_join(&self) -> bool {
        self.awaiting_join.is_some()
    }

    /// Whether a SyncGroup of this member is parked until the leader's assignment arrives.
    pub fn is_awaiting_sync(&self) -> bool {
        self.awaiting_sync.is_some()
    }

    /// Same protocols with the same metadata in the same order: a rejoin with unchanged
    /// metadata need not start a rebalance.
    pub fn matches(&self, protocols: &[MemberProtocol]) -> bool {
        self.protocols == protocols
    }

    /// The metadata this member sent for `protocol`.
    pub fn metadata(&self, protocol: &str) -> Bytes {
        self.protocols
            .iter()
            .find(|p| p.name == protocol)
            .map(|p| p.metadata.clone())
            .unwrap_or_default()
    }

    pub(super) fn protocol_names(&self) -> BTreeSet<String> {
        self.protocols.iter().map(|p| p.name.clone()).collect()
    }

    /// The member's vote: its most preferred protocol among the candidates.
    pub(super) fn vote<'a>(&'a self, candidates: &BTreeSet<&str>) -> Option<&'a str> {
        self.protocols.iter().map(|p| p.name.as_str()).find(|n| candidates.contains(n))
    }

    /// Answers the member's parked JoinGroup (naming `join_member_id`) and parked SyncGroup
    /// with `error`: it was removed, fenced, or its group left this coordinator.
    pub(super) fn fail_parked(
        &mut self,
        join_member_id: &str,
        error: ResponseError,
        fx: &mut Effects,
    ) {
        if let Some(p) = self.awaiting_join.take() {
            fx.answer_join(p, JoinResult::error(join_member_id, error));
        }
        if let Some(p) = self.awaiting_sync.take() {
            fx.answer_sync(p, SyncResult::error(error));
        }
    }
}
