//! `removed-member-accepted`: a classic Heartbeat or SyncGroup answered NONE from a member id
//! the coordinator had removed before the request was written (or, by the member's own leave
//! or refused request, before it was read on the same connection). Kafka validates the member before
//! anything else (ClassicGroup `validateMember`, called by GroupMetadataManager's heartbeat and
//! sync validation): an id it does not know is answered UNKNOWN_MEMBER_ID, an id whose static
//! instance now belongs to another id FENCED_INSTANCE_ID (KIP-345). A NONE tells the removed
//! member it still belongs, and it goes on consuming partitions the group has given away.
//!
//! The proofs of removal are [`super::removals`]': its static instance given to another id, its
//! LeaveGroup accepted, an answer UNKNOWN_MEMBER_ID, its session expired
//! ([`super::sessions`]), and, for heartbeats, its generation's member list without it. Later
//! generations are the stale-generation rule's ([`super::stale`]) and a sync's member list the
//! membership rule's ([`super::epochs`]), so each mistake is reported once.
//!
//! What it cannot know: a removal the coordinator made and never answered (a session that
//! expired while a request of the member was unanswered), and in-memory removals across a
//! coordinator change ([`super::eras`]).

use super::log::{Answer, AnswerLog, Request, NONE};
use super::removals::{Kind, Removals};
use super::{BrokerAnomaly, BrokerRule};

/// Finds every Heartbeat or SyncGroup accepted from a member id the coordinator had removed.
pub fn check(log: &AnswerLog) -> Vec<BrokerAnomaly> {
    let removals = Removals::of(log);
    let mut found = Vec::new();
    for (i, x) in log.exchanges() {
        let (api, member_id, generation, counts): (_, _, _, fn(Kind) -> bool) =
            match (&x.request, &x.answer) {
                (
                    Request::Heartbeat { member_id, generation, .. },
                    Answer::Error { error: NONE },
                ) => ("Heartbeat", member_id, *generation, |k| k != Kind::LaterGeneration),
                (Request::Sync { member_id, generation, .. }, Answer::Sync { error: NONE, .. }) => {
                    ("SyncGroup", member_id, *generation, |k| {
                        !matches!(k, Kind::LaterGeneration | Kind::ListedWithout)
                    })
                }
                _ => continue,
            };
        if let Some(r) = removals.first(member_id, generation, i, counts) {
            found.push(BrokerAnomaly {
                rule: BrokerRule::RemovedMemberAccepted,
                at_ms: x.answered_ms,
                partition: None,
                summary: format!(
                    "{api} of {member_id} at generation {generation} answered NONE after {}",
                    r.why
                ),
                evidence: vec![r.entry, i],
            });
        }
    }
    found
}
