//! Coordinator discovery (FindCoordinator): which broker the member trusts as its group
//! coordinator. Kafka's `AbstractCoordinator.ensureCoordinatorReady` / `markCoordinatorUnknown`.

use groupsim_wire::error_codes as codes;
use kafka_protocol::messages::{FindCoordinatorRequest, FindCoordinatorResponse};

use crate::compat::sb;

/// The coordinator the member currently trusts.
#[derive(Debug, Default)]
pub(crate) struct Discovery {
    pub(crate) coordinator: Option<i32>,
}

impl Discovery {
    /// FindCoordinator for group `group_id` (key type 0: a group).
    pub(crate) fn request(group_id: &str) -> FindCoordinatorRequest {
        FindCoordinatorRequest::default().with_key_type(0).with_coordinator_keys(vec![sb(group_id)])
    }

    /// The coordinator node an answer names for `group_id` (either shape: v4+ batches its
    /// keys), or None when it carries an error or no node.
    pub(crate) fn read_answer(resp: &FindCoordinatorResponse, group_id: &str) -> Option<i32> {
        let (code, node) = Self::answer(resp, group_id);
        if code != codes::NONE || node < 0 {
            None
        } else {
            Some(node)
        }
    }

    /// The error code and node an answer gives for `group_id` (either shape).
    pub(crate) fn answer(resp: &FindCoordinatorResponse, group_id: &str) -> (i16, i32) {
        if resp.coordinators.is_empty() {
            (resp.error_code, resp.node_id.0)
        } else {
            let c = resp
                .coordinators
                .iter()
                .find(|c| c.key.as_str() == group_id)
                .unwrap_or(&resp.coordinators[0]);
            (c.error_code, c.node_id.0)
        }
    }
}

#[cfg(test)]
mod tests {
    use kafka_protocol::messages::find_coordinator_response::Coordinator;
    use kafka_protocol::messages::BrokerId;

    use super::*;

    #[test]
    fn reads_both_answer_shapes_and_picks_its_group() {
        let old = FindCoordinatorResponse::default().with_node_id(BrokerId(3));
        assert_eq!(Discovery::read_answer(&old, "g"), Some(3));
        let batched = FindCoordinatorResponse::default().with_coordinators(vec![
            Coordinator::default().with_key(sb("other")).with_node_id(BrokerId(1)),
            Coordinator::default().with_key(sb("g")).with_node_id(BrokerId(2)),
        ]);
        assert_eq!(Discovery::read_answer(&batched, "g"), Some(2));
    }

    #[test]
    fn an_error_or_a_missing_node_finds_nothing() {
        let err = FindCoordinatorResponse::default()
            .with_error_code(codes::COORDINATOR_NOT_AVAILABLE)
            .with_node_id(BrokerId(3));
        assert_eq!(Discovery::read_answer(&err, "g"), None);
        let none = FindCoordinatorResponse::default().with_node_id(BrokerId(-1));
        assert_eq!(Discovery::read_answer(&none, "g"), None);
    }
}
