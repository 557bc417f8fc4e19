//! A consumer group to and from its stored form (`records.rs`): what the coordinator appends to
//! the offsets log after every change, and how a coordinator that takes the group's offsets
//! partition over rebuilds it (Kafka's replay of the ConsumerGroup* records). Owner epochs are
//! rebuilt from the members; timers are re-armed by the caller.

use super::records::{ConsumerGroupValue, ConsumerMemberValue};
use super::{ConsumerGroup, ConsumerMember, MemberState};
use crate::Millis;

fn state_named(name: &str) -> MemberState {
    match name {
        "STABLE" => MemberState::Stable,
        "UNREVOKED_PARTITIONS" => MemberState::UnrevokedPartitions,
        "UNRELEASED_PARTITIONS" => MemberState::UnreleasedPartitions,
        _ => MemberState::Unknown,
    }
}

impl ConsumerGroup {
    /// The group as stored.
    pub fn snapshot(&self, now: Millis) -> ConsumerGroupValue {
        ConsumerGroupValue {
            group_id: self.group_id.clone(),
            group_epoch: self.group_epoch,
            assignment_epoch: self.assignment_epoch,
            subscription_metadata: self.subscription_metadata.clone(),
            members: self
                .members
                .values()
                .map(|m| ConsumerMemberValue {
                    member_id: m.member_id.clone(),
                    instance_id: m.instance_id.clone(),
                    rack_id: m.rack_id.clone(),
                    client_id: m.client_id.clone(),
                    client_host: m.client_host.clone(),
                    rebalance_timeout_ms: m.rebalance_timeout_ms,
                    subscribed_topics: m.subscribed_topics.clone(),
                    server_assignor: m.server_assignor.clone(),
                    member_epoch: m.member_epoch,
                    previous_member_epoch: m.previous_member_epoch,
                    state: m.state.kafka_name().to_string(),
                    assigned: m.assigned.clone(),
                    pending_revocation: m.pending_revocation.clone(),
                })
                .collect(),
            target: self.target.clone(),
            stored_at: now,
        }
    }

    /// Rebuilds a group from its stored form.
    pub fn from_snapshot(v: &ConsumerGroupValue) -> ConsumerGroup {
        let mut g = ConsumerGroup::new(v.group_id.clone());
        g.group_epoch = v.group_epoch;
        g.assignment_epoch = v.assignment_epoch;
        g.subscription_metadata = v.subscription_metadata.clone();
        g.target = v.target.clone();
        for m in &v.members {
            let member = ConsumerMember {
                member_id: m.member_id.clone(),
                instance_id: m.instance_id.clone(),
                rack_id: m.rack_id.clone(),
                client_id: m.client_id.clone(),
                client_host: m.client_host.clone(),
                rebalance_timeout_ms: m.rebalance_timeout_ms,
                subscribed_topics: m.subscribed_topics.clone(),
                server_assignor: m.server_assignor.clone(),
                member_epoch: m.member_epoch,
                previous_member_epoch: m.previous_member_epoch,
                state: state_named(&m.state),
                assigned: m.assigned.clone(),
                pending_revocation: m.pending_revocation.clone(),
                session_deadline: None,
                rebalance_deadline: None,
                rebalance_epoch: m.member_epoch,
            };
            g.epochs.update(None, Some(&member));
            if let Some(i) = &member.instance_id {
                g.static_members.insert(i.clone(), member.member_id.clone());
            }
            g.members.insert(member.member_id.clone(), member);
        }
        g
    }
}
