//! Static membership (KIP-345): members with a `group.instance.id` keep their place across
//! restarts; a newer member id for the same instance fences the older one.

use kafka_protocol::error::ResponseError;

use super::{Group, GroupState};
use crate::effects::Effects;
use crate::{probes, CoordinatorEvent, Millis, RemovalReason};

impl Group {
    /// Member id currently holding a static `group.instance.id`.
    pub fn static_member(&self, group_instance_id: &str) -> Option<&str> {
        self.static_members.get(group_instance_id).map(String::as_str)
    }

    /// The member id is stale for this instance id: another member id took the instance over.
    pub fn is_static_member_fenced(
        &self,
        member_id: &str,
        group_instance_id: Option<&str>,
    ) -> bool {
        match group_instance_id.and_then(|i| self.static_members.get(i)) {
            Some(current) => current != member_id,
            None => false,
        }
    }

    /// The request names an instance id nobody holds: Kafka's `validateMember` answers it
    /// UNKNOWN_MEMBER_ID whatever its member id (a dynamic member's id included).
    pub fn is_instance_unheld(&self, group_instance_id: Option<&str>) -> bool {
        group_instance_id.is_some_and(|i| !self.static_members.contains_key(i))
    }

    /// A static member came back with an unknown member id: `new_id` takes over the instance
    /// from `old_id`, keeping its place, leadership, assignment and pending sync. Requests the
    /// old member id had parked are answered FENCED_INSTANCE_ID.
    pub(crate) fn replace_static_member(
        &mut self,
        old_id: &str,
        new_id: &str,
        client_id: &str,
        now: Millis,
        fx: &mut Effects,
    ) {
        let Some(index) = self.members.get_index_of(old_id) else { return };
        probes::STATIC_MEMBER_REPLACED.hit();
        if self.is_leader(old_id) && self.state == GroupState::CompletingRebalance {
            // The leader's member id is fenced: whatever it was assigning is void.
            probes::LEADER_LOST_IN_COMPLETING_REBALANCE.hit();
        }
        let (_, mut m) = self.members.shift_remove_index(index).expect("index just looked up");
        let key = self.session_key(old_id);
        fx.disarm(&mut m.session_deadline, key);
        m.fail_parked(old_id, ResponseError::FencedInstanceId, fx);
        fx.event(CoordinatorEvent::MemberRemoved {
            group: self.group_id.clone(),
            member_id: old_id.to_string(),
            reason: RemovalReason::Fenced,
        });
        m.member_id = new_id.to_string();
        m.client_id = client_id.to_string();
        if let Some(instance) = &m.group_instance_id {
            self.static_members.insert(instance.clone(), new_id.to_string());
        }
        if self.is_leader(old_id) {
            self.leader_id = Some(new_id.to_string());
        }
        if self.pending_sync.remove(old_id) {
            self.pending_sync.insert(new_id.to_string());
        }
        fx.event(CoordinatorEvent::MemberAdded {
            group: self.group_id.clone(),
            member_id: new_id.to_string(),
            group_instance_id: m.group_instance_id.clone(),
            client_id: client_id.to_string(),
        });
        self.members.shift_insert(index, new_id.to_string(), m);
        self.touch(new_id, now, fx);
    }
}
