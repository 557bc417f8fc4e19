//! The views' side of a group changing protocol (KIP-848's online migration): conversions seen
//! from the classic side, and the switches of a group's protocol history — on a conversion, a
//! load of the other form, or an empty group giving way to a join of the other protocol.

use std::collections::BTreeSet;

use groupsim_history::{ConsumerGroupEvent, GroupState};
use groupsim_wire::{Millis, TopicPartition};

use super::protocols::{Protocol, ProtocolHistory};
use super::views::Views;

impl Views {
    /// The protocol a group that converted speaks from `at` on (a conversion, or a load of the
    /// other form). A group that never converted has no history: only a conversion starts one.
    pub(super) fn switch_protocol(
        &mut self,
        group: &str,
        at: Millis,
        to: Protocol,
        conversion: bool,
    ) {
        match self.protocols.get_mut(group) {
            Some(h) => h.switch(at, to),
            None if conversion => {
                self.protocols.entry(group.to_string()).or_default().switch(at, to)
            }
            None => {}
        }
    }

    /// A conversion between the protocols seen from the classic side (event `idx` by `broker`):
    /// an upgrade ends the classic generation (its members now hold member epochs); a downgrade
    /// makes the group a classic group, Stable at generation = the group epoch, its members
    /// holding their target assignments, like a load. A consumer group's load after a
    /// conversion makes it a consumer group again.
    pub(super) fn convert(&mut self, idx: usize, at: Millis, broker: i32, e: &ConsumerGroupEvent) {
        match e {
            ConsumerGroupEvent::GroupUpgraded { group, members, .. } => {
                // Kafka converts the members' stored assignments into both their assignment and
                // the target; a rebalance in progress may have left partitions to nobody, and
                // only a new target assignment (a group epoch bump) hands them out.
                let held: BTreeSet<&TopicPartition> =
                    members.iter().flat_map(|m| &m.partitions).collect();
                let orphans: BTreeSet<TopicPartition> = (self.topics.iter())
                    .flat_map(|(t, n)| (0..*n).map(move |p| TopicPartition::new(t.as_str(), p)))
                    .filter(|tp| !held.contains(tp))
                    .collect();
                if !orphans.is_empty() {
                    self.orphaned.insert(group.clone(), (idx, orphans));
                }
                self.switch_protocol(group, at, Protocol::Consumer, true);
                let g = self.groups.entry(group.clone()).or_default();
                g.downgrade_written = None;
                for m in std::mem::take(&mut g.members) {
                    g.close(&m, at, idx);
                }
            }
            ConsumerGroupEvent::GroupDowngraded {
                group,
                group_epoch,
                members,
                leaving_member,
                ..
            } => {
                self.switch_protocol(group, at, Protocol::Classic, true);
                let g = self.groups.entry(group.clone()).or_default();
                let ids: Vec<String> = members.iter().map(|m| m.member_id.clone()).collect();
                let stored = members.iter().map(|m| (&m.member_id, &m.partitions));
                g.take_over(at, idx, broker, GroupState::Stable, *group_epoch, &ids, stored);
                // A member left: Kafka starts a rebalance, in memory only. A classic static
                // member that replaced the last consumer-protocol member takes its place in the
                // Stable classic group instead (convertToClassicGroup with a joining member).
                if self.replaced_member.as_ref() != Some(leaving_member) {
                    g.downgrade_rebalance = Some(idx);
                    g.downgrade_written = Some(*group_epoch);
                }
            }
            ConsumerGroupEvent::GroupLoaded { group, .. } => {
                self.switch_protocol(group, at, Protocol::Consumer, false);
                if let Some(g) = self.groups.get_mut(group) {
                    g.downgrade_written = None;
                }
            }
            ConsumerGroupEvent::MemberJoined { group, .. } => self.consumer_again(group, at),
            _ => {}
        }
    }

    /// A member joined the consumer group of a group that speaks the classic protocol: its empty
    /// classic group gave way to a consumer group (Kafka keeps the offsets), which speaks the
    /// consumer protocol from `at` on, as after a conversion.
    pub(super) fn consumer_again(&mut self, group: &str, at: Millis) {
        let classic = match self.protocols.get(group).and_then(ProtocolHistory::current) {
            Some(p) => p == Protocol::Classic,
            None => self.groups.get(group).is_some_and(|g| !g.generations.is_empty()),
        };
        if classic {
            self.switch_protocol(group, at, Protocol::Consumer, true);
        }
    }

    /// A group that speaks the consumer protocol is a classic group again without a downgrade
    /// (a coordinator loaded its classic form, or its empty consumer group gave way to a classic
    /// join): its consumer view ends at event `idx`. A group that began as a consumer group and
    /// never converted starts its protocol history here, as a conversion would.
    pub(super) fn back_to_classic(&mut self, group: &str, at: Millis, idx: usize) {
        let consumer = match self.protocols.get(group).and_then(ProtocolHistory::current) {
            Some(p) => p == Protocol::Consumer,
            None => self.consumer_groups.contains_key(group),
        };
        if !consumer {
            return;
        }
        self.switch_protocol(group, at, Protocol::Classic, true);
        if let Some(cg) = self.consumer_groups.get_mut(group) {
            cg.end_all(at, idx);
        }
    }
}
