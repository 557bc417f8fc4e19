//! Static membership (KIP-345) as the classic rules need it. A JoinGroup naming a
//! `group.instance.id`, answered NONE with a member id other than the one the instance had,
//! hands the instance to the new id: the coordinator fences the old id from then on. The old
//! id's answer must have been read before the new id's request was written; when two takeovers
//! were in flight together the order the broker gave them in is unknown, and only what both
//! orders share is claimed: the ids the instance held before the two were replaced. Answered
//! at the generation the group is in (Kafka's replacement in a Stable group: no rebalance), the
//! new id takes the old one's place in that generation, its member list and its assignment.

use std::collections::BTreeMap;

use groupsim_wire::Millis;

use super::log::{Answer, AnswerLog, Request, NONE};

/// One static member id replaced by another under the same instance id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Replacement {
    /// The `group.instance.id`.
    pub instance: String,
    /// The member id the instance had, fenced from `at_ms`.
    pub old: String,
    /// The member id the coordinator gave the instance.
    pub new: String,
    /// The ids the instance held before `old`: a coordinator that took the group over loads the
    /// instance as last written, so the id the new one replaced may be any of them (static_churn
    /// 883: generation 1's id, written, came back when the ids of generations 2 and 3 were lost).
    pub earlier: Vec<String>,
    /// The id whose takeover was in flight together with this one's (it held the instance as
    /// read): the broker served the two in an unknown order, so either may have replaced the
    /// other. None when the old id's answer was read before the new id's request was written.
    pub alongside: Option<String>,
    /// The generation the new id's JoinGroup was answered at.
    pub generation: i32,
    /// When the harness read the answer.
    pub at_ms: Millis,
    /// The answer's entry.
    pub entry: usize,
}

/// Every replacement in `log`, in answer order.
pub fn replacements(log: &AnswerLog) -> Vec<Replacement> {
    // instance -> (member id, when its answer was read)
    let mut current: BTreeMap<&str, (&str, Millis)> = BTreeMap::new();
    // instance -> every id it held, in order
    let mut held: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    let mut found = Vec::new();
    for (i, x) in log.exchanges() {
        let (
            Request::Join { instance: Some(instance), .. },
            Answer::Join { error: NONE, member_id, generation, .. },
        ) = (&x.request, &x.answer)
        else {
            continue;
        };
        match current.get(instance.as_str()) {
            Some(&(old, _)) if old == member_id => {}
            // The old id's answer was read before the new id's request was written: the broker
            // gave the instance to the old id first.
            Some(&(old, read_ms)) if read_ms < x.sent_ms => found.push(Replacement {
                instance: instance.clone(),
                old: old.to_string(),
                new: member_id.clone(),
                earlier: held
                    .get(instance.as_str())
                    .into_iter()
                    .flatten()
                    .filter(|id| **id != old && **id != member_id)
                    .map(|id| id.to_string())
                    .collect(),
                alongside: None,
                generation: *generation,
                at_ms: x.answered_ms,
                entry: i,
            }),
            // Both requests were in flight together (an answer read late, after a pause): which
            // id the broker gave the instance to last is unknown, and the holder stays as read.
            // Either way the ids the instance held before the two were fenced by then and the
            // new id took their place (directly, or after the other one of the two), and one of
            // the two took the other's.
            Some(&(current_id, _)) => {
                let ids = held.entry(instance).or_default();
                let before: Vec<&str> = ids
                    .iter()
                    .copied()
                    .filter(|id| *id != current_id && *id != member_id)
                    .collect();
                if let Some((old, earlier)) = before.split_last() {
                    found.push(Replacement {
                        instance: instance.clone(),
                        old: old.to_string(),
                        new: member_id.clone(),
                        earlier: earlier.iter().map(|id| id.to_string()).collect(),
                        alongside: Some(current_id.to_string()),
                        generation: *generation,
                        at_ms: x.answered_ms,
                        entry: i,
                    });
                }
                if !ids.contains(&member_id.as_str()) {
                    ids.push(member_id);
                }
                continue;
            }
            None => {}
        }
        current.insert(instance, (member_id, x.answered_ms));
        let ids = held.entry(instance).or_default();
        if !ids.contains(&member_id.as_str()) {
            ids.push(member_id);
        }
    }
    found
}

/// Every (member id, generation) a static member's JoinGroup (one naming a
/// `group.instance.id`) was answered NONE at. Such a member may have taken the place of an id
/// the answers never tied to its instance (the old process never read its own answer), so a
/// generation's member list without it does not prove it an outsider.
pub fn static_joins(log: &AnswerLog) -> std::collections::BTreeSet<(String, i32)> {
    log.exchanges()
        .filter_map(|(_, x)| match (&x.request, &x.answer) {
            (
                Request::Join { instance: Some(_), .. },
                Answer::Join { error: NONE, member_id, generation, .. },
            ) => Some((member_id.clone(), *generation)),
            _ => None,
        })
        .collect()
}

/// The replacement that `entry` answered, if it answered one.
pub fn at_entry(replacements: &[Replacement], entry: usize) -> Option<&Replacement> {
    replacements.iter().find(|r| r.entry == entry)
}

/// Whether `member_id` took another id's place in `generation` by a replacement.
pub fn replaced_into(replacements: &[Replacement], member_id: &str, generation: i32) -> bool {
    replacements.iter().any(|r| r.new == member_id && r.generation == generation)
}
