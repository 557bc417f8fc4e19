//! Commit rules: what the coordinator accepted and acknowledged must stay, move forward, cover
//! each record once, and cover only records the committer processed.
//!
//! - `lost-commit`: a member resumed from an offset lower than a commit that had been accepted
//!   before its assignment, or a coordinator loaded the group without a commit it had
//!   acknowledged (the acknowledged commit vanished).
//! - `offset-regression`: an accepted commit is lower than the partition's previous one.
//! - `duplicate-commit`: a record is covered by two accepted commits.
//! - `uncovered-commit`: an accepted commit covers records the committing member did not process
//!   while it held the partition (in the tenure the committing generation belongs to: a
//!   cooperative member keeps a partition across generations and rightly commits what it
//!   processed before the new one).

use std::collections::BTreeMap;

use groupsim_wire::{Millis, TopicPartition};

use super::anomaly::{Anomaly, AnomalyClass};
use super::views::{AcceptedCommit, Views};

/// `lost-commit` on resume: member `name` initialised its position on `partition` in
/// `generation` from `committed`, below the last commit accepted or acknowledged before its
/// assignment.
pub(super) fn lost_on_resume(
    views: &Views,
    idx: usize,
    at: Millis,
    name: &str,
    generation: i32,
    partition: &TopicPartition,
    committed: Option<i64>,
) -> Option<Anomaly> {
    let assigned_idx = views.assignment_of(name, generation, partition)?;
    let pv = views.partition(partition);
    // What must be visible: the last commit the coordinator accepted, and the last
    // one a member was told succeeded, before this assignment.
    let accepted = pv.accepted.iter().rev().find(|(i, _)| *i < assigned_idx).copied();
    let acked = pv.acked.iter().rev().find(|(i, _)| *i < assigned_idx).copied();
    let before = match (accepted, acked) {
        (Some(a), Some(b)) => Some(if b.1 > a.1 { b } else { a }),
        (a, b) => a.or(b),
    };
    let (commit_idx, offset) = before?;
    if committed.is_some_and(|c| c >= offset) {
        return None;
    }
    let seen = committed.map_or("no offset".to_string(), |c| c.to_string());
    Some(Anomaly::new(
        AnomalyClass::LostCommit,
        Some(partition),
        at,
        format!(
            "{name} resumed in generation {generation} from {seen}, but \
             offset {offset} had been committed and acknowledged before \
             its assignment"
        ),
        vec![commit_idx, assigned_idx, idx],
    ))
}

/// `lost-commit` on load: a coordinator loaded `group`; every commit a member of the group was
/// told succeeded must be in what it loaded (what OffsetFetch serves from now on).
pub(super) fn lost_on_load(
    views: &Views,
    idx: usize,
    at: Millis,
    group: &str,
    offsets: &[(TopicPartition, i64)],
) -> Vec<Anomaly> {
    let loaded: BTreeMap<&TopicPartition, i64> = offsets.iter().map(|(tp, o)| (tp, *o)).collect();
    let mut lost = Vec::new();
    for (tp, pv) in &views.partitions {
        let Some(&(ack_idx, acked, ref member)) = pv.acked_by.last() else { continue };
        if views.members.get(member).is_none_or(|m| m.group != group) {
            continue;
        }
        let have = loaded.get(tp).copied();
        if have.is_none_or(|o| o < acked) {
            let seen = have.map_or("no offset".to_string(), |o| o.to_string());
            lost.push(Anomaly::new(
                AnomalyClass::LostCommit,
                Some(tp),
                at,
                format!(
                    "commit {acked} acknowledged to {member} is missing from the offsets the \
                     coordinator loaded ({seen})"
                ),
                vec![ack_idx, idx],
            ));
        }
    }
    lost
}

/// Where the records an accepted commit covers start: the partition's previous committed offset.
fn covered_from(views: &Views, c: &AcceptedCommit<'_>) -> i64 {
    views.partition(c.tp).committed.map_or(0, |(o, _)| o)
}

/// `offset-regression`: the commit is lower than the partition's previous one.
pub(super) fn offset_regression(views: &Views, c: &AcceptedCommit<'_>) -> Option<Anomaly> {
    went_back(views.partition(c.tp).committed, c)
}

/// `offset-regression` of commit `c` against the partition's previous accepted commit
/// (offset, event), if there is one.
pub(super) fn went_back(previous: Option<(i64, usize)>, c: &AcceptedCommit<'_>) -> Option<Anomaly> {
    let (prev_offset, prev_idx) = previous?;
    (c.offset < prev_offset).then(|| {
        Anomaly::new(
            AnomalyClass::OffsetRegression,
            Some(c.tp),
            c.at,
            format!("committed offset went back from {prev_offset} to {}", c.offset),
            vec![prev_idx, c.idx],
        )
    })
}

/// `duplicate-commit`: a commit covers the records between the previous committed offset and
/// its own; some of them were covered by earlier commits already.
pub(super) fn duplicate_commit(views: &Views, c: &AcceptedCommit<'_>) -> Option<Anomaly> {
    let pv = views.partition(c.tp);
    let (start, offset) = (covered_from(views, c), c.offset);
    if offset <= start || pv.covered_set.overlap(start, offset) == 0 {
        return None;
    }
    let mut ev: Vec<usize> = pv
        .covered
        .iter()
        .filter(|(s, e, _)| *s < offset && start < *e)
        .map(|(_, _, i)| *i)
        .collect();
    ev.push(c.idx);
    Some(Anomaly::new(
        AnomalyClass::DuplicateCommit,
        Some(c.tp),
        c.at,
        format!(
            "commit to {offset} covers records {start}..{offset} that earlier \
             commits already covered"
        ),
        ev,
    ))
}

/// `uncovered-commit`: a member's commit covers records it did not process while it held the
/// partition (in the tenure of the committing generation): they were never processed by anyone
/// who could vouch for them, so they are lost to the application.
pub(super) fn uncovered_commit(views: &Views, c: &AcceptedCommit<'_>) -> Option<Anomaly> {
    let (start, offset) = (covered_from(views, c), c.offset);
    if !c.by_member() || offset <= start {
        return None;
    }
    let holding = views.commit_holding(c);
    let processed = views.processed_in(c.member_id, holding, c.tp);
    let (gs, ge) = match processed {
        Some((set, _)) => set.first_gap(start, offset),
        None => Some((start, offset)),
    }?;
    let mut ev = vec![c.idx];
    ev.extend(processed.map(|(_, i)| *i));
    let (member_id, generation) = (c.member_id, c.generation);
    Some(Anomaly::new(
        AnomalyClass::UncoveredCommit,
        Some(c.tp),
        c.at,
        format!(
            "{member_id} committed {offset} in generation {generation} but never \
             processed records {gs}..{ge} while it held the partition: they are lost"
        ),
        ev,
    ))
}
