//! A classic JoinGroup served by a consumer group (Kafka's classicGroupJoinToConsumerGroup):
//! the member joins, or rejoins, as a member of the consumer group that speaks the classic
//! protocol. The server-side assignor decides its partitions, as for every member; JoinGroup is
//! its heartbeat with a full request, and SyncGroup only fetches the result
//! (`classic_members.rs`).
//!
//! Rules, in Kafka's order:
//! - The group is full (`group.consumer.max.size`) and the member not in it:
//!   GROUP_MAX_SIZE_REACHED. Protocol type other than `consumer`, or no protocol every classic
//!   member supports: INCONSISTENT_GROUP_PROTOCOL. (Checked by [`ConsumerGroup::check_classic_join`]
//!   before a dynamic member is told MEMBER_ID_REQUIRED.)
//! - The member: a dynamic one is found by member id or created (whatever id it brings); a static
//!   one joining with no member id takes its instance over (replacing the holder at once, whatever
//!   protocol it used) or is new; a static one with a member id must hold its instance
//!   (UNKNOWN_MEMBER_ID if nobody does, FENCED_INSTANCE_ID if another member id does). No member
//!   epoch is checked: a classic member has none to send.
//! - Its subscription (topics, owned partitions) comes from the first protocol's metadata; its
//!   session timeout and protocols are kept (they are what a downgrade hands back). A changed
//!   subscription bumps the group epoch, and a new target is computed if the epoch moved.
//! - One reconciliation step with the owned partitions it reported: an eager member owns
//!   nothing by the time it rejoins, so it revokes at once; a cooperative one still owns what it
//!   keeps and revokes what moves away after its SyncGroup, then rejoins.
//! - The answer: its member epoch as the generation, protocol type `consumer`, its first
//!   protocol's name, no leader and no member list (the member is never the leader). It goes out
//!   once the group's record is appended; then its join deadline goes and its session (its own
//!   timeout) and sync deadline (its rebalance timeout) start.
//!
//! When a classic static member replaces the last consumer-protocol member here, the
//! coordinator downgrades the group after the join (`consumer_group/migration.rs`).

use std::collections::BTreeSet;

use kafka_protocol::error::ResponseError;

use super::member::{ClassicMemberMetadata, ClassicProtocol};
use super::request::HeartbeatContext;
use super::{ConsumerGroup, ConsumerMember};
use crate::effects::Effects;
use crate::{probes, Millis, TopicPartition};

/// A JoinGroup to a consumer group, with its member id settled (generated if it came empty).
#[derive(Clone, Debug)]
pub(crate) struct ClassicJoinInput {
    pub member_id: String,
    /// It came without a member id.
    pub unknown_member: bool,
    pub instance_id: Option<String>,
    pub session_timeout_ms: i32,
    pub rebalance_timeout_ms: i32,
    pub protocols: Vec<ClassicProtocol>,
    pub client_id: String,
}

/// A successful JoinGroup to a consumer group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ClassicJoinAnswer {
    pub member_id: String,
    /// The member epoch, sent as the generation.
    pub generation: i32,
    /// The member's first protocol.
    pub protocol_name: String,
}

impl ConsumerGroup {
    /// Kafka's supportsClassicProtocols: the `consumer` protocol type, and (unless the group is
    /// empty) a protocol every classic member supports.
    pub(crate) fn supports_classic_protocols(
        &self,
        protocol_type: &str,
        names: &BTreeSet<String>,
    ) -> bool {
        if protocol_type != "consumer" {
            return false;
        }
        if self.members.is_empty() {
            return !names.is_empty();
        }
        names.iter().any(|n| {
            self.members
                .values()
                .filter_map(|m| m.classic.as_ref())
                .all(|c| c.protocols.iter().any(|p| p.name == *n))
        })
    }

    /// The checks before a member id is settled: GROUP_MAX_SIZE_REACHED,
    /// INCONSISTENT_GROUP_PROTOCOL.
    pub(crate) fn check_classic_join(
        &self,
        member_id: &str,
        protocol_type: &str,
        names: &BTreeSet<String>,
        max_size: i32,
    ) -> Result<(), ResponseError> {
        if self.members.len() >= max_size.max(0) as usize
            && (member_id.is_empty() || !self.members.contains_key(member_id))
        {
            probes::CONSUMER_GROUP_MAX_SIZE.hit();
            return Err(ResponseError::GroupMaxSizeReached);
        }
        if !self.supports_classic_protocols(protocol_type, names) {
            return Err(ResponseError::InconsistentGroupProtocol);
        }
        Ok(())
    }

    /// The member a JoinGroup speaks for (see the module docs).
    fn classic_member_for(
        &mut self,
        req: &ClassicJoinInput,
        fx: &mut Effects,
    ) -> Result<ConsumerMember, ResponseError> {
        let Some(instance) = &req.instance_id else {
            return Ok(self
                .members
                .get(&req.member_id)
                .cloned()
                .unwrap_or_else(|| ConsumerMember::new(req.member_id.clone())));
        };
        let existing = self.static_members.get(instance).and_then(|id| self.members.get(id));
        match existing {
            None if req.unknown_member => {
                let mut m = ConsumerMember::new(req.member_id.clone());
                m.instance_id = Some(instance.clone());
                Ok(m)
            }
            None => Err(ResponseError::UnknownMemberId),
            Some(old) if req.unknown_member => {
                let old = old.clone();
                Ok(self.replace_static_member(&old, &req.member_id, fx))
            }
            Some(m) if m.member_id != req.member_id => Err(ResponseError::FencedInstanceId),
            Some(m) => Ok(m.clone()),
        }
    }

    /// A classic JoinGroup (after [`Self::check_classic_join`]): see the module docs. Timers are
    /// started by [`Self::classic_joined`] once the answer goes out.
    pub(crate) fn classic_join(
        &mut self,
        req: &ClassicJoinInput,
        ctx: HeartbeatContext<'_>,
        fx: &mut Effects,
    ) -> Result<ClassicJoinAnswer, ResponseError> {
        let first = req.protocols.first().ok_or(ResponseError::InconsistentGroupProtocol)?;
        let subscription = groupsim_wire::consumer_protocol::decode_subscription(&first.metadata)
            .map_err(|_| ResponseError::InconsistentGroupProtocol)?;
        let member = self.classic_member_for(req, fx)?;
        let known = self.members.contains_key(&member.member_id);

        let mut updated = member.clone();
        if req.instance_id.is_some() {
            updated.instance_id = req.instance_id.clone();
        }
        if req.rebalance_timeout_ms != -1 {
            updated.rebalance_timeout_ms = req.rebalance_timeout_ms;
        }
        updated.subscribed_topics = subscription.topics.iter().cloned().collect();
        updated.client_id = req.client_id.clone();
        updated.classic = Some(ClassicMemberMetadata {
            session_timeout_ms: req.session_timeout_ms,
            protocols: req.protocols.clone(),
        });
        let owned: BTreeSet<TopicPartition> = subscription.owned_partitions.into_iter().collect();
        let updated = self.step_towards_target(&member, &updated, Some(&owned), ctx, fx);
        probes::CLASSIC_IN_CONSUMER_JOIN.hit_as(format_args!(
            "{}{}",
            updated.state.kafka_name(),
            if known { "" } else { "/new" }
        ));
        let answer = ClassicJoinAnswer {
            member_id: updated.member_id.clone(),
            generation: updated.member_epoch,
            protocol_name: first.name.clone(),
        };
        self.put_member(updated, ctx.bugs, fx);
        Ok(answer)
    }

    /// The JoinGroup answer went out (its append completed): the member's join deadline goes,
    /// its session restarts with its own timeout and its sync deadline starts.
    pub(crate) fn classic_joined(
        &mut self,
        member_id: &str,
        now: Millis,
        session_timeout_ms: i32,
        rebalance_timeout_ms: i32,
        fx: &mut Effects,
    ) {
        let Some(mut m) = self.members.remove(member_id) else { return };
        self.cancel_join_timer(&mut m, fx);
        self.touch_session(&mut m, now, session_timeout_ms, fx);
        self.arm_sync_timer(&mut m, now, rebalance_timeout_ms, fx);
        self.members.insert(member_id.to_string(), m);
    }
}
