//! Generations and member epochs.
//!
//! `generation-regression` (a KIP-848 member's epochs are judged from its latest join on: a
//! deleted and recreated group starts its epochs afresh): a JoinGroup answered NONE with a lower
//! generation than one read before its request was written — one written (a SyncGroup answered NONE at it), or one
//! answered by the same coordinator ([`super::eras`]): a classic group's generation never goes
//! back, though one handed out and not written is handed out again after a coordinator change; a
//! consumer-group member answered NONE with a lower member epoch than its member id was given
//! before that heartbeat was written (a member's epoch never goes back, across fencing too: a
//! rejoin gets the group's current epoch).
//!
//! `membership-without-generation`: two members of one classic generation told different member
//! lists by the same coordinator, or a SyncGroup answered NONE at a generation whose member
//! list from that coordinator left the member out: the membership changed and the generation
//! did not. Judged while the group is plainly classic (a consumer group gives each classic
//! member its own member epoch as its generation). A static member's replacement inside a
//! generation ([`super::statics`]) is Kafka's one exception: the new member id takes the old
//! one's place in that generation's list.

use std::collections::BTreeMap;

use groupsim_wire::Millis;

use super::eras::Eras;
use super::log::{Answer, AnswerLog, Request, NONE};
use super::statics;
use super::{BrokerAnomaly, BrokerRule};

/// Finds every generation or member epoch that went back, and every membership change without
/// a new generation.
pub fn check(log: &AnswerLog) -> Vec<BrokerAnomaly> {
    let mut found = Vec::new();
    let eras = Eras::of(log);
    // Generations read so far: (generation, read at, entry, persisted).
    let mut highest: Vec<(i32, Millis, usize, bool)> = Vec::new();
    // (generation, era) -> (member list, entry) as told to its leader
    let mut lists: BTreeMap<(i32, u32), (Vec<String>, usize)> = BTreeMap::new();
    // member id -> epochs read: (epoch, read at, entry)
    let mut epochs: BTreeMap<String, Vec<(i32, Millis, usize)>> = BTreeMap::new();
    let replacements = statics::replacements(log);
    let static_joins = statics::static_joins(log);
    for (i, x) in log.exchanges() {
        let era = eras.era(i);
        if let Some(r) = statics::at_entry(&replacements, i) {
            if let Some((list, _)) = lists.get_mut(&(r.generation, era)) {
                if let Some(old) = list.iter_mut().find(|m| **m == r.old) {
                    *old = r.new.clone();
                    list.sort();
                }
            }
        }
        match (&x.request, &x.answer) {
            (_, Answer::Join { error: NONE, generation, leader, member_id, members })
                if eras.classic_at(i) =>
            {
                // A generation handed out and not written may be handed out again by the next
                // coordinator: only a written one, or one from the same coordinator, counts.
                let before = highest
                    .iter()
                    .filter(|h| h.1 < x.sent_ms && h.0 > *generation && (h.3 || eras.same(h.2, i)));
                if let Some(&(g, _, j, _)) = before.max_by_key(|h| h.0) {
                    found.push(BrokerAnomaly {
                        rule: BrokerRule::GenerationRegression,
                        at_ms: x.answered_ms,
                        partition: None,
                        summary: format!(
                            "JoinGroup answered generation {generation} after generation {g} \
                             had been answered"
                        ),
                        evidence: vec![j, i],
                    });
                }
                highest.push((*generation, x.answered_ms, i, false));
                if leader == member_id && !members.is_empty() {
                    let mut sorted = members.clone();
                    sorted.sort();
                    // A static member's process may have taken an id's place inside the
                    // generation (KIP-345) without the answers tying the old id to its
                    // instance: the same number of members, every newcomer a static join
                    // answered at this generation, is that replacement.
                    let replaced_in = |old: &[String]| {
                        old.len() == sorted.len()
                            && sorted
                                .iter()
                                .filter(|m| !old.contains(m))
                                .all(|m| static_joins.contains(&(m.clone(), *generation)))
                    };
                    match lists.get(&(*generation, era)) {
                        Some((other, j)) if *other != sorted && !replaced_in(other) => {
                            found.push(BrokerAnomaly {
                                rule: BrokerRule::MembershipWithoutGeneration,
                                at_ms: x.answered_ms,
                                partition: None,
                                summary: format!(
                                    "generation {generation} told two member lists: {other:?} \
                                     and {sorted:?}"
                                ),
                                evidence: vec![*j, i],
                            })
                        }
                        Some(_) => {
                            lists.insert((*generation, era), (sorted, i));
                        }
                        None => {
                            lists.insert((*generation, era), (sorted, i));
                        }
                    }
                }
            }
            (Request::Sync { member_id, generation, .. }, Answer::Sync { error: NONE, .. })
                if eras.classic_at(i) =>
            {
                highest.push((*generation, x.answered_ms, i, true));
                if let Some((list, j)) = lists.get(&(*generation, era)) {
                    let admitted = static_joins.contains(&(member_id.clone(), *generation));
                    if !list.contains(member_id) && !admitted {
                        found.push(BrokerAnomaly {
                            rule: BrokerRule::MembershipWithoutGeneration,
                            at_ms: x.answered_ms,
                            partition: None,
                            summary: format!(
                                "SyncGroup of {member_id} answered NONE at generation \
                                 {generation}, whose member list left it out"
                            ),
                            evidence: vec![*j, i],
                        });
                    }
                }
            }
            (
                Request::ConsumerHeartbeat { epoch: sent, .. },
                Answer::ConsumerHeartbeat { error: NONE, member_id, epoch, .. },
            ) if *sent >= 0 && *epoch > 0 => {
                let seen = epochs.entry(member_id.clone()).or_default();
                if *sent == 0 {
                    // A (re)join is given the group's epoch, which starts afresh when an empty
                    // group was deleted and created again: epochs are judged from the join on.
                    seen.clear();
                }
                let before = seen.iter().filter(|h| h.1 < x.sent_ms && h.0 > *epoch);
                if let Some(&(e, _, j)) = before.max_by_key(|h| h.0) {
                    found.push(BrokerAnomaly {
                        rule: BrokerRule::GenerationRegression,
                        at_ms: x.answered_ms,
                        partition: None,
                        summary: format!(
                            "member {member_id} answered epoch {epoch} after epoch {e}"
                        ),
                        evidence: vec![j, i],
                    });
                }
                seen.push((*epoch, x.answered_ms, i));
            }
            _ => {}
        }
    }
    found
}
