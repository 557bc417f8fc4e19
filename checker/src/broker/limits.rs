//! `group-over-max-size`: a classic generation with more members than `group.max.size`.
//!
//! Kafka lets a new member into a classic group only while the group is below its maximum: in
//! PreparingRebalance while fewer members than the maximum await their join answers, otherwise
//! while the group has fewer members than it (GroupMetadataManager `acceptJoiningMember`; an
//! existing member is refused too once the maximum rejoined before it), and it answers the rest
//! GROUP_MAX_SIZE_REACHED. A generation is made of the members whose joins were awaited when the
//! join phase ended, so with the configuration unchanged no generation lists more members than
//! the maximum. The leader's JoinGroup answer lists the generation's members: one longer than
//! the maximum proves a member let in past it.
//!
//! Judged only where the harness knows the configuration for the whole run ([`MaxSize`]: the
//! simulated worlds and `serve`). Not judged: consumer groups (`group.consumer.max.size`), whose
//! answers list no members; a member count would have to be proved from sessions.

use std::collections::BTreeSet;

use super::log::{Answer, AnswerLog, MaxSize, NONE};
use super::{BrokerAnomaly, BrokerRule};

/// Finds every leader's JoinGroup answer listing more members than the classic maximum.
pub fn check(log: &AnswerLog) -> Vec<BrokerAnomaly> {
    let Some(MaxSize { classic: max, .. }) = log.max_size else { return Vec::new() };
    let mut found = Vec::new();
    for (i, x) in log.exchanges() {
        let Answer::Join { error: NONE, generation, member_id, leader, members } = &x.answer else {
            continue;
        };
        if leader != member_id {
            continue;
        }
        let listed = members.iter().collect::<BTreeSet<_>>().len();
        if i64::try_from(listed).unwrap_or(i64::MAX) > i64::from(max) {
            found.push(BrokerAnomaly {
                rule: BrokerRule::GroupOverMaxSize,
                at_ms: x.answered_ms,
                partition: None,
                summary: format!(
                    "generation {generation} lists {listed} members, past the group's maximum of \
                     {max} (group.max.size)"
                ),
                evidence: vec![i],
            });
        }
    }
    found
}
