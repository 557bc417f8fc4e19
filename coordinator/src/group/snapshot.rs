//! The stored form of a group (Kafka's GroupMetadata value in `__consumer_offsets`): writing a
//! snapshot of it, and rebuilding a group from one when its offsets partition is loaded.

use std::collections::BTreeMap;

use bytes::Bytes;

use super::protocols::count;
use super::{Group, GroupState, Member, MemberProtocol};
use crate::offsets_log::{GroupMetadataValue, MemberMetadataValue};
use crate::Millis;

impl Group {
    /// The group's metadata as Kafka stores it (GroupMetadataManager.groupMetadataValue): the
    /// generation, protocol, leader and every member with the subscription it sent for the
    /// chosen protocol and its assignment (`assignment` overrides the members' current ones, for
    /// the leader's SyncGroup whose assignment is stored before it takes effect).
    pub fn snapshot(
        &self,
        assignment: Option<&BTreeMap<String, Bytes>>,
        now: Millis,
    ) -> GroupMetadataValue {
        let protocol = self.protocol_name.clone().unwrap_or_default();
        GroupMetadataValue {
            group_id: self.group_id.clone(),
            protocol_type: self.protocol_type.clone(),
            generation: self.generation_id,
            protocol_name: self.protocol_name.clone(),
            leader: self.leader_id.clone(),
            members: self
                .members
                .values()
                .map(|m| MemberMetadataValue {
                    member_id: m.member_id.clone(),
                    group_instance_id: m.group_instance_id.clone(),
                    client_id: m.client_id.clone(),
                    client_host: m.client_host.clone(),
                    rebalance_timeout_ms: m.rebalance_timeout_ms,
                    session_timeout_ms: m.session_timeout_ms,
                    subscription: m.metadata(&protocol),
                    assignment: match assignment {
                        Some(a) => a.get(&m.member_id).cloned().unwrap_or_default(),
                        None => m.assignment.clone(),
                    },
                })
                .collect(),
            stored_at: now,
        }
    }

    /// Rebuilds a group from its stored metadata (Kafka's GroupMetadata.loadGroup): Empty when
    /// it has no members, else Stable at the stored generation; each member supports just the
    /// stored protocol with its stored subscription. Session deadlines are armed by the caller.
    pub fn from_snapshot(v: &GroupMetadataValue) -> Group {
        let mut g = Group::new(v.group_id.clone());
        g.generation_id = v.generation;
        g.protocol_type = v.protocol_type.clone();
        g.protocol_name = v.protocol_name.clone();
        let protocol = v.protocol_name.clone().unwrap_or_default();
        for m in &v.members {
            let member = Member {
                member_id: m.member_id.clone(),
                group_instance_id: m.group_instance_id.clone(),
                client_id: m.client_id.clone(),
                client_host: m.client_host.clone(),
                rebalance_timeout_ms: m.rebalance_timeout_ms,
                session_timeout_ms: m.session_timeout_ms,
                protocol_type: v.protocol_type.clone().unwrap_or_default(),
                protocols: vec![MemberProtocol {
                    name: protocol.clone(),
                    metadata: m.subscription.clone(),
                }],
                assignment: m.assignment.clone(),
                awaiting_join: None,
                awaiting_sync: None,
                is_new: false,
                joined_at: 0,
                session_deadline: None,
            };
            count(&mut g.protocol_support, member.protocol_names());
            if let Some(instance) = &member.group_instance_id {
                g.static_members.insert(instance.clone(), member.member_id.clone());
            }
            g.members.insert(member.member_id.clone(), member);
        }
        g.leader_id = v.leader.clone().filter(|l| g.members.contains_key(l));
        if g.leader_id.is_none() {
            g.leader_id = g.members.keys().next().cloned();
        }
        g.state = if g.members.is_empty() { GroupState::Empty } else { GroupState::Stable };
        g
    }
}
