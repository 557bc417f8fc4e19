//! ListGroups (API 16): every group this coordinator knows, classic and KIP-848 consumer
//! groups alike, sorted by group id.
//!
//! Rules (Kafka 4.0's listGroups and asListedGroup): each group with its protocol type
//! (`consumer` for a consumer group), from v4 its state (Kafka's state names: a consumer group
//! is Empty, Assigning, Reconciling or Stable) and from v5 its type (`classic` or `consumer`).
//! v4+ may filter by state and v5+ by type, both case-insensitive; an unknown type matches no
//! group. While an offsets partition loads, the groups loaded so far are listed with
//! COORDINATOR_LOAD_IN_PROGRESS.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::list_groups_response::ListedGroup;
use kafka_protocol::messages::{GroupId, ListGroupsRequest, ListGroupsResponse};
use kafka_protocol::protocol::StrBytes;

use crate::{GroupCoordinator, RequestId};

/// One group as listed: id, protocol type, state, type.
struct Listed<'a> {
    id: &'a str,
    protocol_type: String,
    state: &'static str,
    kind: &'static str,
}

impl GroupCoordinator {
    /// ListGroups: see the module documentation for the rules.
    pub(crate) fn handle_list_groups(
        &mut self,
        id: RequestId,
        version: i16,
        req: ListGroupsRequest,
    ) {
        let states: Vec<String> = if version >= 4 {
            req.states_filter.iter().map(|s| s.trim().to_ascii_lowercase()).collect()
        } else {
            Vec::new()
        };
        let types: Vec<String> = if version >= 5 {
            req.types_filter.iter().map(|t| t.to_ascii_lowercase()).collect()
        } else {
            Vec::new()
        };
        let classic = self.groups.values().map(|g| Listed {
            id: &g.group_id,
            protocol_type: g.protocol_type.clone().unwrap_or_default(),
            state: g.state.kafka_name(),
            kind: "classic",
        });
        let consumer = self.consumer_groups.values().map(|g| Listed {
            id: g.group_id(),
            protocol_type: "consumer".to_string(),
            state: g.state().kafka_name(),
            kind: "consumer",
        });
        let mut listed: Vec<Listed<'_>> = classic
            .chain(consumer)
            .filter(|g| states.is_empty() || states.contains(&g.state.to_ascii_lowercase()))
            .filter(|g| types.is_empty() || types.iter().any(|t| t == g.kind))
            .collect();
        listed.sort_by(|a, b| a.id.cmp(b.id));
        let groups = listed
            .into_iter()
            .map(|g| {
                let mut out = ListedGroup::default()
                    .with_group_id(GroupId(StrBytes::from_string(g.id.to_string())))
                    .with_protocol_type(StrBytes::from_string(g.protocol_type));
                if version >= 4 {
                    out = out.with_group_state(StrBytes::from_static_str(g.state));
                }
                if version >= 5 {
                    out = out.with_group_type(StrBytes::from_static_str(g.kind));
                }
                out
            })
            .collect();
        // Kafka lists what is loaded and says so when some partition is still loading.
        let error =
            if self.any_loading() { ResponseError::CoordinatorLoadInProgress.code() } else { 0 };
        self.fx
            .respond(id, ListGroupsResponse::default().with_error_code(error).with_groups(groups));
    }
}
