//! `malformed-answer`: an answer that lacks what its protocol says it carries, whatever the
//! group's state.
//!
//! - JoinGroup answered NONE: a member id and a generation of at least 1 (a classic group's
//!   first rebalance makes generation 1). In a plainly classic group, a leader; the leader is
//!   told the member list, itself in it, and every other member an empty one (the classic
//!   group's join completion builds the list for the leader only). A consumer group answers a
//!   classic member's join with no leader (GroupMetadataManager's classic join into a consumer
//!   group sets none).
//! - JoinGroup answered MEMBER_ID_REQUIRED (KIP-394): the member id to join with.
//! - ConsumerGroupHeartbeat answered NONE (KIP-848): the member id, and a member epoch of at
//!   least 1, or the one the leave asked for (-1, or -2 for a static member's temporary leave).

use super::eras::Eras;
use super::log::{Answer, AnswerLog, Request, MEMBER_ID_REQUIRED, NONE};
use super::{BrokerAnomaly, BrokerRule};

/// Finds every answer missing what its protocol says it carries.
pub fn check(log: &AnswerLog) -> Vec<BrokerAnomaly> {
    let eras = Eras::of(log);
    let mut found = Vec::new();
    for (i, x) in log.exchanges() {
        let lacks = match (&x.request, &x.answer) {
            (_, Answer::Join { error: NONE, generation, member_id, leader, members }) => {
                let is_leader = member_id == leader;
                if member_id.is_empty() {
                    Some("a JoinGroup answered NONE without a member id".to_string())
                } else if *generation < 1 {
                    Some(format!("a JoinGroup answered NONE at generation {generation}"))
                } else if eras.classic_at(i) && leader.is_empty() {
                    Some("a JoinGroup answered NONE without a leader".to_string())
                } else if eras.classic_at(i) && is_leader && !members.contains(member_id) {
                    Some(format!("the leader {member_id}'s JoinGroup answer without itself in the member list {members:?}"))
                } else if eras.classic_at(i) && !is_leader && !members.is_empty() {
                    Some(format!(
                        "follower {member_id}'s JoinGroup answer with the member list {members:?}"
                    ))
                } else {
                    None
                }
            }
            (_, Answer::Join { error: MEMBER_ID_REQUIRED, member_id, .. })
                if member_id.is_empty() =>
            {
                Some(
                    "a JoinGroup answered MEMBER_ID_REQUIRED without the member id to join with"
                        .to_string(),
                )
            }
            (
                Request::ConsumerHeartbeat { epoch: sent, .. },
                Answer::ConsumerHeartbeat { error: NONE, member_id, epoch, .. },
            ) => {
                if member_id.is_empty() {
                    Some("a ConsumerGroupHeartbeat answered NONE without a member id".to_string())
                } else if *sent < 0 && epoch != sent {
                    Some(format!(
                        "a leave at member epoch {sent} answered NONE at member epoch {epoch}"
                    ))
                } else if *sent >= 0 && *epoch < 1 {
                    Some(format!("a ConsumerGroupHeartbeat answered NONE at member epoch {epoch}"))
                } else {
                    None
                }
            }
            _ => None,
        };
        if let Some(summary) = lacks {
            found.push(BrokerAnomaly {
                rule: BrokerRule::MalformedAnswer,
                at_ms: x.answered_ms,
                partition: None,
                summary,
                evidence: vec![i],
            });
        }
    }
    found
}
