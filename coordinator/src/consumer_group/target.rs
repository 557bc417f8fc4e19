//! The target assignment (Kafka's TargetAssignmentBuilder): when the group epoch moves ahead of
//! the target assignment epoch, the group's assignor computes every member's target partitions
//! from the members' subscriptions, the subscribed topics and the previous target (for
//! stickiness), and the target assignment epoch becomes the group epoch.

use std::collections::{BTreeMap, BTreeSet};

use super::assignor::{self, preferred_among, AssignmentSpec};
use super::{ConsumerGroup, ConsumerMember};
use crate::consumer_event::{ConsumerGroupEvent, TargetShare};
use crate::effects::Effects;
use crate::topics::TopicsImage;

impl ConsumerGroup {
    /// The group's members with `updated` in place of (or added to) its stored self.
    fn members_with<'a>(
        &'a self,
        updated: &'a ConsumerMember,
    ) -> impl Iterator<Item = &'a ConsumerMember> {
        self.members
            .values()
            .filter(move |m| m.member_id != updated.member_id)
            .chain(std::iter::once(updated))
    }

    /// Computes the target assignment for the current group epoch, with `updated` counted as
    /// a member, and records it.
    pub(super) fn compute_target(
        &mut self,
        updated: &ConsumerMember,
        topics: &TopicsImage,
        fx: &mut Effects,
    ) {
        let name = preferred_among(self.members_with(updated));
        let subscriptions: BTreeMap<String, BTreeSet<String>> = self
            .members_with(updated)
            .map(|m| (m.member_id.clone(), m.subscription(topics)))
            .collect();
        let spec = AssignmentSpec { subscriptions: &subscriptions, previous: &self.target, topics };
        let target = assignor::assign(name, spec);
        let assignments = target
            .iter()
            .map(|(m, p)| TargetShare {
                member_id: m.clone(),
                partitions: p.iter().cloned().collect(),
            })
            .collect();
        self.target = target;
        self.assignment_epoch = self.group_epoch;
        crate::probes::CONSUMER_TARGET_COMPUTED.hit();
        let event = ConsumerGroupEvent::TargetAssignmentComputed {
            group: self.group_id.clone(),
            epoch: self.assignment_epoch,
            assignor: name.to_string(),
            assignments,
        };
        self.record(fx, event);
    }
}
