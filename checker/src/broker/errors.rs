//! `wrong-error`: an answer whose error code Kafka never gives that request in that situation.
//! Where the request alone decides the answer, the rule holds whatever the group's state:
//!
//! - A JoinGroup at version 4 or later, with no member id and no `group.instance.id`, is answered
//!   MEMBER_ID_REQUIRED with the id to join with (KIP-394; `JoinGroupRequest.requiresKnownMemberId`,
//!   checked by GroupMetadataManager for a classic group's new dynamic member and for a classic
//!   member joining a consumer group alike). A NONE admits a member that the client may never
//!   learn of: a join retried after a lost answer leaves a ghost member that holds up every
//!   rebalance until its session runs out (the reason for KIP-394: KAFKA-7610, KAFKA-7824).
//! - A ConsumerGroupHeartbeat at member epoch 0 listing owned partitions is refused with
//!   INVALID_REQUEST (`throwIfConsumerGroupHeartbeatRequestIsInvalid`: they must be empty when
//!   joining or rejoining); a NONE lets a rejoining member keep partitions it may have lost.
//! - A ConsumerGroupHeartbeat at a member epoch above 0, or leaving at -1, without a member id,
//!   or at an epoch below -2, is refused with INVALID_REQUEST by the same validation: the first
//!   names no member to heartbeat for or remove, the second an epoch no member can hold.
//!
//! Errors that move the client on (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS,
//! COORDINATOR_NOT_AVAILABLE, a full group, an unsupported protocol) come before these checks in
//! Kafka and are allowed; only an accepting NONE is judged. What it cannot know: a JoinGroup's
//! version in a history recorded before the version was kept.

use super::log::{Answer, AnswerLog, Request, NONE};
use super::{BrokerAnomaly, BrokerRule};

/// Finds every request answered NONE that Kafka refuses whatever the group's state.
pub fn check(log: &AnswerLog) -> Vec<BrokerAnomaly> {
    let mut found = Vec::new();
    for (i, x) in log.exchanges() {
        let wrong = match (&x.request, &x.answer) {
            (
                Request::Join { member_id, instance: None, version: Some(v), .. },
                Answer::Join { error: NONE, .. },
            ) if member_id.is_empty() && *v >= 4 => Some(format!(
                "a JoinGroup v{v} without a member id answered NONE, not MEMBER_ID_REQUIRED"
            )),
            (
                Request::ConsumerHeartbeat { epoch: 0, owned: Some(owned), .. },
                Answer::ConsumerHeartbeat { error: NONE, .. },
            ) if !owned.is_empty() => Some(format!(
                "a ConsumerGroupHeartbeat joining at epoch 0 with {} owned partition(s) answered \
                 NONE, not INVALID_REQUEST",
                owned.len()
            )),
            (
                Request::ConsumerHeartbeat { member_id, epoch, .. },
                Answer::ConsumerHeartbeat { error: NONE, .. },
            ) if (*epoch > 0 || *epoch == -1) && member_id.trim().is_empty() => Some(format!(
                "a ConsumerGroupHeartbeat at member epoch {epoch} without a member id answered \
                 NONE, not INVALID_REQUEST"
            )),
            (
                Request::ConsumerHeartbeat { epoch, .. },
                Answer::ConsumerHeartbeat { error: NONE, .. },
            ) if *epoch < -2 => Some(format!(
                "a ConsumerGroupHeartbeat at member epoch {epoch}, which no member holds, \
                     answered NONE, not INVALID_REQUEST"
            )),
            _ => None,
        };
        if let Some(summary) = wrong {
            found.push(BrokerAnomaly {
                rule: BrokerRule::WrongError,
                at_ms: x.answered_ms,
                partition: None,
                summary,
                evidence: vec![i],
            });
        }
    }
    found
}
