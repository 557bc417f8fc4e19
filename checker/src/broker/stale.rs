//! `stale-generation-accepted`: a Heartbeat or SyncGroup answered NONE at a generation the group
//! had moved past before the request was written. Kafka's classic group answers a Heartbeat or a
//! SyncGroup of another generation than its own ILLEGAL_GENERATION (GroupMetadataManager's
//! heartbeat and sync validation), so a NONE tells a member of a past generation that it still
//! belongs, and it goes on consuming partitions the new generation gave away. The group had
//! moved past generation `g` when a SyncGroup was answered NONE at a later one (written: for
//! good), or a JoinGroup NONE at a later one from the same coordinator ([`super::eras`]). Judged
//! while the group is plainly classic, and on the member's own answers once consumer-protocol
//! members have joined (a consumer group gives each classic member its own member epoch, and
//! an emptied consumer group may be deleted and made again as a classic group whose
//! generations start over: [`Eras::plain`]).
//!
//! Kafka answers a Heartbeat NONE, blindly, while it is still loading the group (both
//! coordinators: "the group is still loading, so respond just blindly"), so a Heartbeat's NONE
//! is judged only once the answering coordinator had been seen serving the group: some other
//! group request of its era answered NONE before the heartbeat was written. What the rule cannot
//! know: a heartbeat answered blindly by a coordinator nobody saw serve yet.

use super::eras::{Eras, Serving};
use super::log::{Answer, AnswerLog, Request, NONE};
use super::{BrokerAnomaly, BrokerRule};

/// Finds every Heartbeat or SyncGroup accepted at a generation the group had moved past.
pub fn check(log: &AnswerLog) -> Vec<BrokerAnomaly> {
    let eras = Eras::of(log);
    // Later generations read: (generation, read at, entry, written, member id it was given to).
    let mut moved: Vec<(i32, u64, usize, bool, &str)> = Vec::new();
    let mut found = Vec::new();
    let mut serving = Serving::default();
    for (i, x) in log.exchanges() {
        let blind =
            matches!(x.request, Request::Heartbeat { .. }) && serving.blind(&eras, i, x.sent_ms);
        let accepted = match (&x.request, &x.answer) {
            (Request::Sync { member_id, generation, .. }, Answer::Sync { error: NONE, .. })
            | (Request::Heartbeat { member_id, generation, .. }, Answer::Error { error: NONE }) => {
                Some((member_id.as_str(), *generation))
            }
            _ => None,
        };
        if let (Some((member_id, generation)), false) = (accepted, blind) {
            // A member given this generation again by a JoinGroup after the proof was in a
            // group created afresh (an empty group deleted and made again starts over).
            let rejoined_at =
                |j: usize| log.joined_after(member_id, j, x.sent_ms, |g| g <= generation);
            let proof = moved.iter().find(|m| {
                let (g, read_ms, j, written, owner) = **m;
                g > generation
                    && read_ms < x.sent_ms
                    && (eras.plain(j, i) || owner == member_id)
                    && (written || eras.same(j, i))
                    && (eras.plain(j, i) || !rejoined_at(j))
            });
            if let Some(&(g, _, j, written, _)) = proof {
                let api = if matches!(x.request, Request::Sync { .. }) {
                    "SyncGroup"
                } else {
                    "Heartbeat"
                };
                let how =
                    if written { "a SyncGroup answered NONE" } else { "a JoinGroup answered NONE" };
                found.push(BrokerAnomaly {
                    rule: BrokerRule::StaleGenerationAccepted,
                    at_ms: x.answered_ms,
                    partition: None,
                    summary: format!(
                        "{api} of {member_id} at generation {generation} answered NONE after {how} at generation {g}"
                    ),
                    evidence: vec![j, i],
                });
            }
        }
        serving.read(&eras, i, x);
        match (&x.request, &x.answer) {
            (Request::Sync { member_id, generation, .. }, Answer::Sync { error: NONE, .. }) => {
                moved.push((*generation, x.answered_ms, i, true, member_id));
            }
            (_, Answer::Join { error: NONE, generation, member_id, .. }) => {
                moved.push((*generation, x.answered_ms, i, false, member_id));
            }
            _ => {}
        }
    }
    found
}

/// A consumer group's half of the rule: a ConsumerGroupHeartbeat answered NONE at a member epoch
/// older than the member's previous one. Kafka accepts a member's current epoch, and its
/// previous one (the answer that bumped it may have been lost), and fences anything else with
/// FENCED_MEMBER_EPOCH (GroupMetadataManager `throwIfConsumerGroupMemberEpochIsInvalid`). Once
/// a member has read two epochs since it last joined (epoch 0), the coordinator's previous epoch
/// for it is at least the older of the two: an epoch below that must be fenced. Judged from the
/// member's latest join on (a group deleted and made again starts its epochs over).
pub fn check_epochs(log: &AnswerLog) -> Vec<BrokerAnomaly> {
    // Per member id, the epochs it was given where they changed: (read at, epoch, entry, join).
    let mut given: std::collections::BTreeMap<&str, Vec<(u64, i32, usize, bool)>> =
        std::collections::BTreeMap::new();
    let mut found = Vec::new();
    for (i, x) in log.exchanges() {
        let (
            Request::ConsumerHeartbeat { member_id: asked, epoch: sent, .. },
            Answer::ConsumerHeartbeat { error: NONE, member_id, epoch, .. },
        ) = (&x.request, &x.answer)
        else {
            continue;
        };
        let id = if member_id.is_empty() { asked.as_str() } else { member_id.as_str() };
        let list = given.entry(id).or_default();
        if *sent > 0 {
            // What the member had read when it wrote the request: the latest epoch, and the
            // one before it, since its latest join.
            let mut read = list.partition_point(|g| g.0 < x.sent_ms);
            // An answer read in the millisecond the request was written was read first when
            // the request carries the epoch it gave (a rejoin's new epoch, sent at once).
            let same_ms = list[read..].iter().take_while(|g| g.0 == x.sent_ms).count();
            if let Some(k) = list[read..read + same_ms].iter().rposition(|g| g.1 == *sent) {
                read += k + 1;
            }
            let mut newest: Option<(i32, usize)> = None;
            let mut older: Option<(i32, usize)> = None;
            for &(_, e, k, join) in list[..read].iter().rev() {
                match newest {
                    None => newest = Some((e, k)),
                    Some((n, _)) if e < n => {
                        older = Some((e, k));
                        break;
                    }
                    _ => {}
                }
                if join {
                    break;
                }
            }
            if let (Some((n, kn)), Some((o, ko))) = (newest, older) {
                if *sent < o {
                    found.push(BrokerAnomaly {
                        rule: BrokerRule::StaleGenerationAccepted,
                        at_ms: x.answered_ms,
                        partition: None,
                        summary: format!(
                            "ConsumerGroupHeartbeat of {id} at member epoch {sent} answered NONE \
                             after it had been given epochs {o} and {n}"
                        ),
                        evidence: vec![ko, kn, i],
                    });
                }
            }
        }
        let join = *sent == 0;
        if join || list.last().is_none_or(|l| l.1 != *epoch) {
            list.push((x.answered_ms, *epoch, i, join));
        }
    }
    found
}
