//! SyncGroup, Heartbeat and LeaveGroup of classic members inside a consumer group (Kafka's
//! classicGroupSyncToConsumerGroup, classicGroupHeartbeatToConsumerGroup and
//! classicGroupLeaveToConsumerGroup). JoinGroup is `classic_join.rs`.
//!
//! A classic member's generation is its member epoch. It learns of a new target assignment the
//! classic way: its Heartbeat (or SyncGroup) is answered REBALANCE_IN_PROGRESS and it rejoins;
//! its revocation is acknowledged by the owned partitions of that JoinGroup.
//!
//! Rules shared by the three (Kafka's validateConsumerGroupMember and
//! throwIfMemberDoesNotUseClassicProtocol): a static member is found by instance id
//! (UNKNOWN_MEMBER_ID if nobody holds it, FENCED_INSTANCE_ID if another member id does), a
//! dynamic one by member id (UNKNOWN_MEMBER_ID); a member that speaks the consumer protocol is
//! UNKNOWN_MEMBER_ID here.
//!
//! - SyncGroup: a generation other than the member epoch is ILLEGAL_GENERATION; a protocol type
//!   other than `consumer` or a protocol name other than the member's first is
//!   INCONSISTENT_GROUP_PROTOCOL; a group epoch ahead of the member epoch (unless the member is
//!   revoking) is REBALANCE_IN_PROGRESS and starts its join deadline. Otherwise the member's
//!   assigned partitions (without those pending revocation), its sync deadline goes and its
//!   session restarts.
//! - Heartbeat: another generation is ILLEGAL_GENERATION. The session restarts; the member must
//!   rejoin (REBALANCE_IN_PROGRESS, join deadline started unless running) when the group epoch is
//!   ahead of its epoch, when it is revoking, or when the partitions it waited for are all free.
//! - LeaveGroup: each named member (by instance id first) is removed, its partitions released;
//!   if any left, the group epoch is bumped once. No downgrade happens here: only a
//!   consumer-protocol member's departure can leave a group of classic members.

use kafka_protocol::error::ResponseError;

use super::{ConsumerGroup, ConsumerMember, MemberState};
use crate::consumer_event::ConsumerRemovalReason;
use crate::effects::Effects;
use crate::topics::TopicsImage;
use crate::{probes, Millis};

/// Why a classic member must rejoin, if it must (the `coordinator.classic_in_consumer.rejoin`
/// detail).
fn rejoin_reason(g: &ConsumerGroup, m: &ConsumerMember) -> Option<&'static str> {
    if m.member_epoch < g.group_epoch {
        Some("epoch_behind")
    } else if m.state == MemberState::UnrevokedPartitions {
        Some("revoking")
    } else if m.state == MemberState::UnreleasedPartitions && !g.waiting_on_unreleased(m) {
        Some("released")
    } else {
        None
    }
}

impl ConsumerGroup {
    /// Kafka's validateConsumerGroupMember + throwIfMemberDoesNotUseClassicProtocol.
    pub(crate) fn classic_member(
        &self,
        member_id: &str,
        instance: Option<&str>,
    ) -> Result<&ConsumerMember, ResponseError> {
        let m = match instance {
            None => self.members.get(member_id).ok_or(ResponseError::UnknownMemberId)?,
            Some(i) => {
                let m = self
                    .static_members
                    .get(i)
                    .and_then(|id| self.members.get(id))
                    .ok_or(ResponseError::UnknownMemberId)?;
                if m.member_id != member_id {
                    return Err(ResponseError::FencedInstanceId);
                }
                m
            }
        };
        if !m.uses_classic_protocol() {
            return Err(ResponseError::UnknownMemberId);
        }
        Ok(m)
    }

    /// Kafka's waitingOnUnreleasedPartition: the member waits for a target partition another
    /// member still owns.
    pub(crate) fn waiting_on_unreleased(&self, m: &ConsumerMember) -> bool {
        m.state == MemberState::UnreleasedPartitions
            && self
                .target_of(&m.member_id)
                .iter()
                .any(|tp| !m.assigned.contains(tp) && self.epochs.epoch(tp) != -1)
    }

    /// Applies `change` to member `member_id` (present) and stores it back.
    fn with_member(
        &mut self,
        member_id: &str,
        change: impl FnOnce(&Self, &mut ConsumerMember),
    ) -> Option<ConsumerMember> {
        let mut m = self.members.remove(member_id)?;
        change(self, &mut m);
        self.members.insert(member_id.to_string(), m.clone());
        Some(m)
    }

    /// A classic member's SyncGroup: its assigned partitions (see the module docs).
    pub(crate) fn classic_sync(
        &mut self,
        member_id: &str,
        instance: Option<&str>,
        generation: i32,
        protocol: (Option<&str>, Option<&str>),
        now: Millis,
        fx: &mut Effects,
    ) -> Result<ConsumerMember, ResponseError> {
        let m = self.classic_member(member_id, instance)?;
        if generation != m.member_epoch {
            return Err(ResponseError::IllegalGeneration);
        }
        let first = m.classic.as_ref().and_then(|c| c.protocols.first()).map(|p| p.name.as_str());
        let (protocol_type, protocol_name) = protocol;
        if protocol_type.is_some_and(|t| t != "consumer")
            || protocol_name.is_some_and(|n| Some(n) != first)
        {
            return Err(ResponseError::InconsistentGroupProtocol);
        }
        let id = m.member_id.clone();
        if self.group_epoch > m.member_epoch && m.state != MemberState::UnrevokedPartitions {
            probes::CLASSIC_IN_CONSUMER_REJOIN.hit_as("sync");
            self.with_member(&id, |g, m| g.arm_join_timer_if_absent(m, now, fx));
            return Err(ResponseError::RebalanceInProgress);
        }
        let session = m.classic_session_timeout();
        let synced = self.with_member(&id, |g, m| {
            g.cancel_sync_timer(m, fx);
            g.touch_session(m, now, session, fx);
        });
        Ok(synced.expect("member found above"))
    }

    /// A classic member's Heartbeat: `Ok` or REBALANCE_IN_PROGRESS (see the module docs).
    pub(crate) fn classic_heartbeat(
        &mut self,
        member_id: &str,
        instance: Option<&str>,
        generation: i32,
        now: Millis,
        fx: &mut Effects,
    ) -> Result<(), ResponseError> {
        let m = self.classic_member(member_id, instance)?;
        if generation != m.member_epoch {
            return Err(ResponseError::IllegalGeneration);
        }
        let id = m.member_id.clone();
        let session = m.classic_session_timeout();
        let rejoin = rejoin_reason(self, m);
        self.with_member(&id, |g, m| {
            g.touch_session(m, now, session, fx);
            if rejoin.is_some() {
                g.arm_join_timer_if_absent(m, now, fx);
            }
        });
        match rejoin {
            Some(why) => {
                probes::CLASSIC_IN_CONSUMER_REJOIN.hit_as(why);
                Err(ResponseError::RebalanceInProgress)
            }
            None => Ok(()),
        }
    }

    /// A LeaveGroup naming `leaving` (member id, instance id) pairs: per pair, the member id it
    /// removed or the error (see the module docs). The group epoch is bumped once if any left.
    pub(crate) fn classic_leave(
        &mut self,
        leaving: &[(String, Option<String>)],
        topics: &TopicsImage,
        fx: &mut Effects,
    ) -> Vec<Result<String, ResponseError>> {
        let mut out = Vec::with_capacity(leaving.len());
        for (member_id, instance) in leaving {
            let found = match instance {
                None => self.classic_member(member_id, None),
                // An admin may name only the instance id.
                Some(i) if member_id.is_empty() => self
                    .static_members
                    .get(i)
                    .and_then(|id| self.members.get(id))
                    .ok_or(ResponseError::UnknownMemberId)
                    .and_then(|m| self.classic_member(&m.member_id, Some(i))),
                Some(i) => self.classic_member(member_id, Some(i)),
            };
            let id = match found {
                Ok(m) => m.member_id.clone(),
                Err(e) => {
                    out.push(Err(e));
                    continue;
                }
            };
            probes::CLASSIC_IN_CONSUMER_LEAVE.hit();
            self.remove_member(&id, ConsumerRemovalReason::Left, fx);
            out.push(Ok(id));
        }
        if out.iter().any(Result::is_ok) {
            self.subscription_metadata = self.compute_subscription_metadata(topics);
            self.bump_group_epoch(fx);
        }
        out
    }
}
