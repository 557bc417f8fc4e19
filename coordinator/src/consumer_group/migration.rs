//! Online migration between the classic protocol and the consumer protocol (KIP-848, Kafka
//! 4.0's `group.consumer.migration.policy`): when a group converts, and what it converts to.
//!
//! - Upgrade (Kafka's validateOnlineUpgrade, ConsumerGroup.fromClassicGroup): a
//!   ConsumerGroupHeartbeat joining (epoch 0) a classic group with members converts it if the
//!   policy allows upgrades, the group's protocol type is `consumer` and it has no more members
//!   than `group.consumer.max.size`. The consumer group starts at group epoch and target
//!   assignment epoch = the classic generation; every classic member becomes a member speaking
//!   the classic protocol, at member epoch = generation, Stable, owning its current classic
//!   assignment, which is also its target. Its subscription is the metadata it sent for the
//!   generation's protocol (the first protocol's before any generation completed). Members
//!   that were rejoining or waiting for their assignment find out on their next request.
//! - Downgrade (Kafka's validateOnlineDowngradeWithFencedMember, ClassicGroup.fromConsumerGroup):
//!   when a consumer-protocol member leaves or is fenced and every other member speaks the
//!   classic protocol, the group converts back if it has more than that one member, the policy
//!   allows downgrades and the others fit in `group.max.size`. The classic group is Stable at
//!   generation = the group epoch, protocol type `consumer`, the protocol chosen by the members'
//!   vote, each member storing its *target* assignment; the first member (by member id here;
//!   Kafka takes hash order) leads. The coordinator then starts a rebalance.
//! - Downgrade by replacement (Kafka's validateOnlineDowngradeWithReplacedMemberId): a classic
//!   static member joining without a member id takes over the instance id of the last
//!   consumer-protocol member; if every other member speaks the classic protocol, the policy
//!   allows it and the group fits in `group.max.size`, the group converts with the joining
//!   member holding the replaced member's target, and no rebalance follows.

use std::collections::BTreeSet;

use kafka_protocol::error::ResponseError;

use super::member::{ClassicMemberMetadata, ClassicProtocol, MemberState};
use super::{ConsumerGroup, ConsumerMember};
use crate::group::{Group, Member, MemberProtocol};
use crate::topics::TopicsImage;
use crate::{MigrationPolicy, TopicPartition};

/// Whether a departing member's leave converts the group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Downgrade {
    /// Not the last consumer-protocol member of a group of classic members.
    NotDue,
    /// Due, but not allowed (the reason is the probe detail).
    Refused(&'static str),
    /// Due and allowed.
    Allowed,
}

/// Kafka's validateOnlineUpgrade: why the classic group may not become a consumer group, if not.
pub(crate) fn upgrade_refusal(
    classic: &Group,
    policy: MigrationPolicy,
    consumer_max_size: i32,
) -> Option<&'static str> {
    if !policy.upgrade_enabled() {
        Some("policy")
    } else if classic.protocol_type() != Some("consumer") {
        Some("protocol")
    } else if classic.members().count() > consumer_max_size.max(0) as usize {
        Some("size")
    } else {
        None
    }
}

fn partitions(bytes: &[u8]) -> Result<BTreeSet<TopicPartition>, ResponseError> {
    groupsim_wire::consumer_protocol::decode_assignment(bytes)
        .map(|a| a.partitions.into_iter().collect())
        .map_err(|_| ResponseError::GroupIdNotFound)
}

impl ConsumerGroup {
    /// Kafka's ConsumerGroup.fromClassicGroup (see the module docs). GROUP_ID_NOT_FOUND when a
    /// member's subscription or assignment does not decode (Kafka refuses a malformed embedded
    /// protocol so); UNKNOWN_SERVER_ERROR when two members' assignments overlap (Kafka's
    /// partition epochs refuse a second owner). The group's subscription metadata is set from
    /// `topics` as the members subscribe (KAFKA-18687: left unset, the first heartbeat found it
    /// changed and bumped the group epoch, recomputing an assignment nothing asked for).
    pub(crate) fn from_classic(
        classic: &Group,
        topics: &TopicsImage,
    ) -> Result<ConsumerGroup, ResponseError> {
        let generation = classic.generation_id();
        let mut g = ConsumerGroup::new(classic.group_id());
        g.group_epoch = generation;
        g.assignment_epoch = generation;
        for cm in classic.members() {
            let metadata = match classic.protocol_name() {
                Some(p) => cm.metadata(p),
                None => cm.protocols.first().map(|p| p.metadata.clone()).unwrap_or_default(),
            };
            let subscription = groupsim_wire::consumer_protocol::decode_subscription(&metadata)
                .map_err(|_| ResponseError::GroupIdNotFound)?;
            let assigned = partitions(&cm.assignment)?;
            if assigned.iter().any(|tp| g.epochs.epoch(tp) != -1) {
                return Err(ResponseError::UnknownServerError);
            }
            let mut m = ConsumerMember::new(cm.member_id.clone());
            m.member_epoch = generation;
            m.previous_member_epoch = generation;
            m.state = MemberState::Stable;
            m.instance_id = cm.group_instance_id.clone();
            m.rebalance_timeout_ms = cm.rebalance_timeout_ms;
            m.client_id = cm.client_id.clone();
            m.client_host = cm.client_host.clone();
            m.subscribed_topics = subscription.topics.into_iter().collect();
            m.assigned = assigned.clone();
            m.classic = Some(ClassicMemberMetadata {
                session_timeout_ms: cm.session_timeout_ms,
                protocols: cm
                    .protocols
                    .iter()
                    .map(|p| ClassicProtocol { name: p.name.clone(), metadata: p.metadata.clone() })
                    .collect(),
            });
            g.target.insert(m.member_id.clone(), assigned);
            g.epochs.update(None, Some(&m));
            if let Some(i) = &m.instance_id {
                g.static_members.insert(i.clone(), m.member_id.clone());
            }
            g.members.insert(m.member_id.clone(), m);
        }
        g.subscription_metadata = g.compute_subscription_metadata(topics);
        Ok(g)
    }

    /// Whether `leaving`'s departure converts the group (see the module docs; Kafka's
    /// allMembersUseClassicProtocolExcept and validateOnlineDowngradeWithFencedMember).
    pub(crate) fn downgrade_check(
        &self,
        leaving: &str,
        policy: MigrationPolicy,
        classic_max_size: i32,
    ) -> Downgrade {
        self.downgrade_check_for(leaving, policy, classic_max_size, false)
    }

    /// Kafka's validateOnlineDowngradeWithReplacedMemberId: whether a classic static member
    /// replacing `replaced` converts the group, asked before the replacement; the group keeps
    /// its size, and a group of that one member converts too.
    pub(crate) fn replacement_downgrade_check(
        &self,
        replaced: &str,
        policy: MigrationPolicy,
        classic_max_size: i32,
    ) -> Downgrade {
        self.downgrade_check_for(replaced, policy, classic_max_size, true)
    }

    /// The downgrade check of a member going (`replaced`: a new member takes its place).
    fn downgrade_check_for(
        &self,
        going: &str,
        policy: MigrationPolicy,
        classic_max_size: i32,
        replaced: bool,
    ) -> Downgrade {
        let Some(m) = self.members.get(going) else { return Downgrade::NotDue };
        let others_classic =
            self.members.values().filter(|o| o.member_id != going).all(|o| o.classic.is_some());
        let remaining = if replaced { self.members.len() } else { self.members.len() - 1 };
        if m.uses_classic_protocol() || !others_classic || (!replaced && remaining == 0) {
            Downgrade::NotDue
        } else if !policy.downgrade_enabled() {
            Downgrade::Refused("policy")
        } else if remaining > classic_max_size.max(0) as usize {
            Downgrade::Refused("size")
        } else {
            Downgrade::Allowed
        }
    }

    /// Kafka's ClassicGroup.fromConsumerGroup of the members left (see the module docs).
    pub(crate) fn to_classic(&self) -> Group {
        let members = self
            .members
            .values()
            .map(|m| Member {
                member_id: m.member_id.clone(),
                group_instance_id: m.instance_id.clone(),
                client_id: m.client_id.clone(),
                client_host: m.client_host.clone(),
                rebalance_timeout_ms: m.rebalance_timeout_ms,
                session_timeout_ms: m.classic_session_timeout(),
                protocol_type: "consumer".to_string(),
                protocols: m
                    .classic
                    .iter()
                    .flat_map(|c| c.protocols.iter())
                    .map(|p| MemberProtocol { name: p.name.clone(), metadata: p.metadata.clone() })
                    .collect(),
                ..Member::default()
            })
            .collect();
        let mut g = Group::from_converted(&self.group_id, self.group_epoch, members);
        for id in self.members.keys() {
            let a = groupsim_wire::consumer_protocol::Assignment {
                partitions: self.target_of(id).into_iter().collect(),
                user_data: None,
            };
            g.set_assignment(id, groupsim_wire::consumer_protocol::encode_assignment(&a));
        }
        g
    }
}
