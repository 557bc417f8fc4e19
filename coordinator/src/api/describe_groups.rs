//! DescribeGroups (API 15): state, protocol and members of groups, for tools and tests.
//!
//! Rules (Kafka's handleDescribeGroup): an unknown group is described as Dead with no members
//! (not an error). Members' metadata and assignments are only shown in a Stable group, where
//! they belong to the current generation; in other states the protocol is empty too. A group
//! whose offsets partition is loading gets COORDINATOR_LOAD_IN_PROGRESS, one not owned here
//! NOT_COORDINATOR.
//!
//! Kafka 4.0 describes only classic groups here (KIP-1043): a KIP-848 consumer group is Dead
//! with no members below v6; from v6 it is GROUP_ID_NOT_FOUND with "Group {id} is not a classic
//! group.", and an unknown group GROUP_ID_NOT_FOUND with "Group {id} not found." (still Dead).

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::describe_groups_response::{DescribedGroup, DescribedGroupMember};
use kafka_protocol::messages::{DescribeGroupsRequest, DescribeGroupsResponse};
use kafka_protocol::protocol::StrBytes;

use crate::coordinator::GroupStatus;
use crate::group::GroupState;
use crate::{probes, GroupCoordinator, RequestId};

impl GroupCoordinator {
    /// DescribeGroups: see the module documentation for the rules.
    pub(crate) fn handle_describe_groups(
        &mut self,
        id: RequestId,
        version: i16,
        req: DescribeGroupsRequest,
    ) {
        let s = StrBytes::from_string;
        let groups = req
            .groups
            .into_iter()
            .map(|group_id| {
                let status = self.group_status(group_id.as_str());
                if status == GroupStatus::NotOwned {
                    probes::NOT_COORDINATOR.hit();
                }
                if let Some(e) = status.batched_error() {
                    return DescribedGroup::default()
                        .with_group_id(group_id)
                        .with_error_code(e.code());
                }
                let Some(g) = self.groups.get(group_id.as_str()) else {
                    let dead = DescribedGroup::default()
                        .with_group_id(group_id.clone())
                        .with_group_state(s(GroupState::Dead.kafka_name().to_string()));
                    if version < 6 {
                        return dead;
                    }
                    let msg = if self.consumer_groups.contains_key(group_id.as_str()) {
                        format!("Group {} is not a classic group.", group_id.as_str())
                    } else {
                        format!("Group {} not found.", group_id.as_str())
                    };
                    return dead
                        .with_error_code(ResponseError::GroupIdNotFound.code())
                        .with_error_message(Some(s(msg)));
                };
                let stable = g.state == GroupState::Stable;
                let protocol = g.protocol_name.clone().unwrap_or_default();
                let members = g
                    .members()
                    .map(|m| {
                        let (metadata, assignment) = if stable {
                            (m.metadata(&protocol), m.assignment.clone())
                        } else {
                            Default::default()
                        };
                        DescribedGroupMember::default()
                            .with_member_id(s(m.member_id.clone()))
                            .with_group_instance_id(if version >= 4 {
                                m.group_instance_id.clone().map(s)
                            } else {
                                None
                            })
                            .with_client_id(s(m.client_id.clone()))
                            .with_client_host(s(m.client_host.clone()))
                            .with_member_metadata(metadata)
                            .with_member_assignment(assignment)
                    })
                    .collect();
                DescribedGroup::default()
                    .with_group_id(group_id)
                    .with_group_state(s(g.state.kafka_name().to_string()))
                    .with_protocol_type(s(g.protocol_type.clone().unwrap_or_default()))
                    .with_protocol_data(s(if stable { protocol } else { String::new() }))
                    .with_members(members)
            })
            .collect();
        self.fx.respond(id, DescribeGroupsResponse::default().with_groups(groups));
    }
}
