//! A member's ConsumerGroupHeartbeat, once the API layer has validated the request and found
//! or created the group (Kafka's GroupMetadataManager.consumerGroupHeartbeat), in three steps:
//!
//! 1. Find the member: a new one at epoch 0, an existing one whose epoch is valid, an existing
//!    dynamic one rejoining at epoch 0 after its client was fenced (KAFKA-19233: accepted, with
//!    its current state), or a static replacement (`static_members.rs`); a regex it did not
//!    have must compile (INVALID_REGULAR_EXPRESSION); update what it reported (subscription, assignor,
//!    rebalance timeout, rack). A changed subscription (topic names or regex), or a change in
//!    the partition counts of the subscribed topics, bumps the group epoch. (Kafka notices topic changes through its
//!    metadata image; we compare the subscribed topics' partition counts on every heartbeat.)
//! 2. If the group epoch is ahead of the target assignment epoch, compute a new target.
//! 3. Reconcile the member one step towards its target (`reconciliation.rs`), re-arm its
//!    session, and answer with its epoch and, when it sent a full request or its assignment
//!    changed, its assigned partitions.

use std::collections::BTreeSet;

use kafka_protocol::error::ResponseError;

use super::reconciliation::{reconcile, Owners};
use super::request::{HeartbeatAnswer, HeartbeatContext, HeartbeatInput};
use super::static_members::validate_member_epoch;
use super::topic_regex::TopicRegex;
use super::{ConsumerGroup, ConsumerMember};
use crate::effects::Effects;
use crate::{probes, Millis, TopicPartition};

impl ConsumerGroup {
    /// Handles a (non-leave) heartbeat: see the module docs.
    pub(crate) fn heartbeat(
        &mut self,
        now: Millis,
        req: &HeartbeatInput,
        ctx: HeartbeatContext<'_>,
        fx: &mut Effects,
    ) -> Result<HeartbeatAnswer, ResponseError> {
        let known = self.members.contains_key(&req.member_id);
        if self.members.len() >= ctx.max_size.max(0) as usize && !known {
            probes::CONSUMER_GROUP_MAX_SIZE.hit();
            return Err(ResponseError::GroupMaxSizeReached);
        }
        // A regex the member did not have must compile (Kafka: maybeUpdateRegularExpressions,
        // after the member lookup). A static member's lookup may replace the member that left,
        // so its regex is checked against the instance's current holder before that.
        let bad_regex = |current: Option<&ConsumerMember>| {
            req.subscribed_topic_regex.as_ref().filter(|r| !r.is_empty()).is_some_and(|r| {
                current.and_then(|m| m.subscribed_topic_regex.as_ref()) != Some(r)
                    && TopicRegex::compile(r).is_err()
            })
        };
        let member = match &req.instance_id {
            None => {
                let member = match self.members.get(&req.member_id) {
                    // A rejoin (KAFKA-19233): a member fenced on its side comes back at epoch 0
                    // with its member id, owning nothing; it is reconciled from its current
                    // state and answered in full. Kafka's validation returns early for epoch 0.
                    Some(m) if req.member_epoch == 0 && !ctx.bugs.fences_rejoin_at_epoch_zero => {
                        probes::CONSUMER_REJOIN_KNOWN_MEMBER.hit();
                        m.clone()
                    }
                    Some(m) => {
                        validate_member_epoch(m, req.member_epoch, req.owned.as_ref())?;
                        m.clone()
                    }
                    None if req.member_epoch == 0 => ConsumerMember::new(req.member_id.clone()),
                    None => return Err(ResponseError::UnknownMemberId),
                };
                if bad_regex(Some(&member)) {
                    return Err(ResponseError::InvalidRegularExpression);
                }
                member
            }
            Some(instance) => {
                let holder = self.static_members.get(instance).and_then(|id| self.members.get(id));
                if bad_regex(holder) {
                    return Err(ResponseError::InvalidRegularExpression);
                }
                self.static_member_for(
                    &req.member_id,
                    instance,
                    req.member_epoch,
                    req.owned.as_ref(),
                    fx,
                )?
            }
        };

        // 1. The member as it reports itself now.
        let mut updated = member.clone();
        if req.instance_id.is_some() {
            updated.instance_id = req.instance_id.clone();
        }
        if req.rack_id.is_some() {
            updated.rack_id = req.rack_id.clone();
        }
        if req.rebalance_timeout_ms != -1 {
            updated.rebalance_timeout_ms = req.rebalance_timeout_ms;
        }
        if let Some(a) = &req.server_assignor {
            updated.server_assignor = Some(a.clone());
        }
        if let Some(topics) = &req.subscribed_topics {
            updated.subscribed_topics = topics.clone();
        }
        if let Some(regex) = &req.subscribed_topic_regex {
            updated.subscribed_topic_regex = (!regex.is_empty()).then(|| regex.clone());
        }
        updated.client_id = req.client_id.clone();
        updated.client_host = req.client_host.clone();
        // It speaks the consumer protocol now (Kafka clears the classic metadata).
        updated.classic = None;
        // 2 and 3: a new target if the group moved on, one reconciliation step.
        let next = self.step_towards_target(&member, &updated, req.owned.as_ref(), ctx, fx);
        if next != updated {
            count_step(&updated, &next);
            updated = next;
            self.update_rebalance_timer(&mut updated, now, fx);
        }
        // Bug `restarts_session_only_on_change`: a heartbeat that changes nothing keeps the
        // session deadline the member had.
        let unchanged = known
            && updated.member_epoch == member.member_epoch
            && updated.state == member.state
            && updated.assigned == member.assigned;
        if !(ctx.bugs.restarts_session_only_on_change && unchanged) {
            self.touch_session(&mut updated, now, ctx.session_timeout_ms, fx);
        }

        let full = req.member_epoch == 0
            || (req.rebalance_timeout_ms != -1
                && req.subscribed_topics.is_some()
                && req.owned.is_some());
        let changed = updated.assigned != member.assigned || !known;
        let answer = HeartbeatAnswer {
            member_id: updated.member_id.clone(),
            member_epoch: updated.member_epoch,
            assignment: (full || changed).then(|| updated.assigned.clone()),
        };
        self.put_member(updated, ctx.bugs, fx);
        Ok(answer)
    }

    /// What follows a member's report of itself in either protocol (`member` as stored,
    /// `updated` as it reports itself now): the group epoch bumped if its subscription changed,
    /// a new target if the group moved on, and one reconciliation step with what it reports
    /// `owned`; the member after the step (`updated` itself when it is reconciled).
    pub(super) fn step_towards_target(
        &mut self,
        member: &ConsumerMember,
        updated: &ConsumerMember,
        owned: Option<&BTreeSet<TopicPartition>>,
        ctx: HeartbeatContext<'_>,
        fx: &mut Effects,
    ) -> ConsumerMember {
        self.maybe_bump_for(member, updated, ctx.topics, fx);
        if self.group_epoch > self.assignment_epoch {
            self.compute_target(updated, ctx.topics, fx);
        }
        if updated.is_reconciled_to(self.assignment_epoch) {
            return updated.clone();
        }
        let target = self.target_of(&updated.member_id);
        let owners = Owners::under(ctx.bugs);
        reconcile(updated, self.assignment_epoch, &target, owned, &self.epochs, owners)
    }
}

/// Counts a reconciliation step in the probes.
fn count_step(before: &ConsumerMember, after: &ConsumerMember) {
    use super::MemberState::*;
    match after.state {
        UnrevokedPartitions => probes::CONSUMER_RECONCILE_REVOKE.hit(),
        UnreleasedPartitions => probes::CONSUMER_RECONCILE_UNRELEASED.hit(),
        Stable => {}
    }
    if before.state == UnrevokedPartitions && after.state != UnrevokedPartitions {
        probes::CONSUMER_RECONCILE_REVOKED.hit();
    }
    if after.member_epoch != before.member_epoch {
        probes::CONSUMER_RECONCILE_EPOCH_ADVANCED.hit();
    }
}
