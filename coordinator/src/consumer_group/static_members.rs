//! Static members (`group.instance.id`) of a consumer group.
//!
//! Rules (Kafka's getOrMaybeSubscribeStaticConsumerGroupMember and consumerGroupLeave):
//! - Joining (epoch 0) with an instance id nobody holds: a new member.
//! - Joining with an instance id held by a member that has not left temporarily (epoch -2):
//!   UNRELEASED_INSTANCE_ID; the old member must leave first (or its session must end). A
//!   member using the classic protocol is replaced at once (a rolling upgrade of a static member).
//! - Joining with an instance id whose member left temporarily: the new member id *replaces*
//!   the old one and keeps its assignment and target, at epoch 0, without a group epoch bump.
//! - A heartbeat (epoch > 0) naming an instance id nobody holds: UNKNOWN_MEMBER_ID; held by
//!   another member id: FENCED_INSTANCE_ID.
//! - Leaving with -2: the member stays, at epoch -2, with its assigned partitions (still owned,
//!   so nobody else gets them) but none pending revocation; its session keeps running, and it is
//!   fenced if it does not come back in time. Leaving with -1: fenced at once.

use kafka_protocol::error::ResponseError;

use super::member::LEAVE_GROUP_STATIC_MEMBER_EPOCH;
use super::{ConsumerGroup, ConsumerMember};
use crate::config::CoordinatorBugs;
use crate::consumer_event::ConsumerRemovalReason;
use crate::effects::Effects;
use crate::{probes, TopicPartition};

impl ConsumerGroup {
    /// The static member a heartbeat from (`member_id`, `instance`) at `epoch` speaks for: new,
    /// existing, or a replacement of a member that left temporarily (then removed here).
    pub(super) fn static_member_for(
        &mut self,
        member_id: &str,
        instance: &str,
        epoch: i32,
        owned: Option<&std::collections::BTreeSet<TopicPartition>>,
        fx: &mut Effects,
    ) -> Result<ConsumerMember, ResponseError> {
        let existing = self.static_members.get(instance).and_then(|id| self.members.get(id));
        if epoch == 0 {
            let Some(old) = existing else {
                let mut m = ConsumerMember::new(member_id);
                m.instance_id = Some(instance.to_string());
                return Ok(m);
            };
            // A classic member's instance is taken over at once (Kafka checks the release only
            // when both use the consumer protocol).
            if old.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH && !old.uses_classic_protocol() {
                probes::CONSUMER_UNRELEASED_INSTANCE_ID.hit();
                return Err(ResponseError::UnreleasedInstanceId);
            }
            let old = old.clone();
            return Ok(self.replace_static_member(&old, member_id, fx));
        }
        let Some(m) = existing else { return Err(ResponseError::UnknownMemberId) };
        if m.member_id != member_id {
            return Err(ResponseError::FencedInstanceId);
        }
        validate_member_epoch(m, epoch, owned)?;
        Ok(m.clone())
    }

    /// Kafka's replaceMember: `member_id` takes over `old`'s instance id, its assignment and its
    /// target, at epoch 0, without a group epoch bump; `old` is removed (returned, not stored).
    pub(super) fn replace_static_member(
        &mut self,
        old: &ConsumerMember,
        member_id: &str,
        fx: &mut Effects,
    ) -> ConsumerMember {
        let replacement = ConsumerMember {
            member_id: member_id.to_string(),
            member_epoch: 0,
            previous_member_epoch: 0,
            rebalance_epoch: 0,
            ..old.without_timers()
        };
        let target = self.target_of(&old.member_id);
        self.remove_member(&old.member_id, ConsumerRemovalReason::Replaced, fx);
        self.target.insert(member_id.to_string(), target);
        probes::CONSUMER_STATIC_REPLACED.hit();
        replacement
    }

    /// A static member's temporary leave (epoch -2): see the module docs.
    pub(crate) fn leave_temporarily(&mut self, member_id: &str, fx: &mut Effects) {
        let Some(m) = self.members.get(member_id) else { return };
        let mut left = m.clone();
        left.member_epoch = LEAVE_GROUP_STATIC_MEMBER_EPOCH;
        left.pending_revocation.clear();
        probes::CONSUMER_STATIC_TEMPORARY_LEAVE.hit();
        self.put_member(left, &CoordinatorBugs::default(), fx);
    }
}

/// Kafka's throwIfConsumerGroupMemberEpochIsInvalid: an epoch ahead of the member's, or behind
/// it other than the previous epoch with owned partitions all still assigned (the answer that
/// moved the member on may have been lost), is FENCED_MEMBER_EPOCH. Epoch 0 (a join) is not
/// judged here: a dynamic member's is a rejoin (see `heartbeat.rs`), a static member's goes
/// through the instance id; only the `fences_rejoin_at_epoch_zero` bug switch sends a dynamic
/// rejoin here, where it is fenced as Kafka did before KAFKA-19233.
pub(super) fn validate_member_epoch(
    m: &ConsumerMember,
    received: i32,
    owned: Option<&std::collections::BTreeSet<TopicPartition>>,
) -> Result<(), ResponseError> {
    let fenced = if received > m.member_epoch {
        true
    } else if received < m.member_epoch {
        received != m.previous_member_epoch
            || !owned.is_some_and(|o| o.iter().all(|tp| m.assigned.contains(tp)))
    } else {
        false
    };
    if fenced {
        probes::CONSUMER_FENCED_MEMBER_EPOCH.hit();
        return Err(ResponseError::FencedMemberEpoch);
    }
    if received < m.member_epoch {
        probes::CONSUMER_PREVIOUS_EPOCH_ACCEPTED.hit();
    }
    Ok(())
}
