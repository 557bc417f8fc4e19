//! ListGroups (API 16): every group this coordinator knows, sorted by group id.
//!
//! v4+ may filter by state (Kafka's state names, case-insensitive) and v5+ by group type; all
//! groups here are `classic`. While an offsets partition loads, the groups loaded so far are
//! listed with COORDINATOR_LOAD_IN_PROGRESS.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::list_groups_response::ListedGroup;
use kafka_protocol::messages::{GroupId, ListGroupsRequest, ListGroupsResponse};
use kafka_protocol::protocol::StrBytes;

use crate::{GroupCoordinator, RequestId};

impl GroupCoordinator {
    /// ListGroups: see the module documentation for the rules.
    pub(crate) fn handle_list_groups(
        &mut self,
        id: RequestId,
        version: i16,
        req: ListGroupsRequest,
    ) {
        let states: Vec<String> = if version >= 4 {
            req.states_filter.iter().map(|s| s.to_ascii_lowercase()).collect()
        } else {
            Vec::new()
        };
        let classic_wanted = version < 5
            || req.types_filter.is_empty()
            || req.types_filter.iter().any(|t| t.eq_ignore_ascii_case("classic"));
        let groups = self
            .groups
            .values()
            .filter(|_| classic_wanted)
            .filter(|g| {
                states.is_empty() || states.contains(&g.state.kafka_name().to_ascii_lowercase())
            })
            .map(|g| {
                let mut listed = ListedGroup::default()
                    .with_group_id(GroupId(StrBytes::from_string(g.group_id.clone())))
                    .with_protocol_type(StrBytes::from_string(
                        g.protocol_type.clone().unwrap_or_default(),
                    ));
                if version >= 4 {
                    listed =
                        listed.with_group_state(StrBytes::from_static_str(g.state.kafka_name()));
                }
                if version >= 5 {
                    listed = listed.with_group_type(StrBytes::from_static_str("classic"));
                }
                listed
            })
            .collect();
        // Kafka lists what is loaded and says so when some partition is still loading.
        let error =
            if self.any_loading() { ResponseError::CoordinatorLoadInProgress.code() } else { 0 };
        self.fx
            .respond(id, ListGroupsResponse::default().with_error_code(error).with_groups(groups));
    }
}
