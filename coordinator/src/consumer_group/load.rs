//! A consumer group to and from its stored form (`records.rs`): what the coordinator appends to
//! the offsets log after every change, and how a coordinator that takes the group's offsets
//! partition over rebuilds it (Kafka's replay of the ConsumerGroup* records). Owner epochs and
//! the static-member index are rebuilt from the members; timers are re-armed by the caller.

use super::records::ConsumerGroupValue;
use super::{ConsumerGroup, ConsumerMember};
use crate::Millis;

impl ConsumerGroup {
    /// The group as stored.
    pub fn snapshot(&self, now: Millis) -> ConsumerGroupValue {
        ConsumerGroupValue {
            group_id: self.group_id.clone(),
            group_epoch: self.group_epoch,
            assignment_epoch: self.assignment_epoch,
            subscription_metadata: self.subscription_metadata.clone(),
            members: self.members.values().map(ConsumerMember::without_timers).collect(),
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
        for member in &v.members {
            g.epochs.restore(member);
            if let Some(i) = &member.instance_id {
                g.static_members.insert(i.clone(), member.member_id.clone());
            }
            g.members.insert(member.member_id.clone(), member.clone());
        }
        g
    }
}
