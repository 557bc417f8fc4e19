//! Where a member starts a partition it was just given: `position-rewind` and `position-skip`.
//!
//! A member given a partition asks the coordinator for the committed offset (OffsetFetch) and
//! starts there. Starting below it re-delivers records the group already committed; starting
//! above it skips records nobody committed — with `auto.offset.reset=latest`, silent data loss.
//! Real clients do both when they take a failed OffsetFetch for "no committed offset" and apply
//! their reset policy, or keep a stale in-memory position across a rebalance.
//!
//! The offset in force is the coordinator's: the last commit it accepted before the assignment,
//! and any it accepted between the assignment and the member's start (the OffsetFetch may have
//! been answered either side of them). A start within those offsets, or at the offset the
//! member's OffsetFetch returned, is correct; a start at an offset the coordinator returned that
//! is below what it had accepted is `lost-commit`'s business (the coordinator lost it), not the
//! member's. With no commit in force when it got the partition the member's reset policy
//! decides, and nothing is judged.

use groupsim_wire::{Millis, TopicPartition};

use super::anomaly::{Anomaly, AnomalyClass};
use super::views::Views;

/// The anomaly of member `name` starting `partition` at `position` (event `idx`), having found
/// `committed` with OffsetFetch, in `generation` (its member epoch for a KIP-848 member).
#[allow(clippy::too_many_arguments)]
pub(super) fn moved_position(
    views: &Views,
    idx: usize,
    at: Millis,
    name: &str,
    generation: i32,
    partition: &TopicPartition,
    committed: Option<i64>,
    position: i64,
) -> Option<Anomaly> {
    if committed == Some(position) {
        return None;
    }
    let assigned_idx = views.assignment_of(name, generation, partition)?;
    let pv = views.partition(partition);
    // With nothing committed when it got the partition, its OffsetFetch may have found nothing
    // (however late the answer is used, as by a member paused meanwhile): its reset policy
    // decides.
    let at_assignment = pv.accepted.iter().rev().find(|(i, _)| *i < assigned_idx)?;
    let since = pv.accepted.iter().filter(|(i, _)| *i >= assigned_idx && *i < idx);
    let in_force: Vec<(usize, i64)> =
        std::iter::once(at_assignment).chain(since).copied().collect();
    let lowest = in_force.iter().min_by_key(|(_, o)| *o)?;
    let highest = in_force.iter().max_by_key(|(_, o)| *o)?;
    let found = committed.map_or("no offset".to_string(), |c| c.to_string());
    if position < lowest.1 {
        return Some(Anomaly::new(
            AnomalyClass::PositionRewind,
            Some(partition),
            at,
            format!(
                "{name} started {partition} at {position} in generation {generation}, below the \
                 committed offset {} in force since it got the partition (its OffsetFetch found \
                 {found}): records {position}..{} are delivered again",
                lowest.1, lowest.1
            ),
            vec![lowest.0, assigned_idx, idx],
        ));
    }
    if position > highest.1 {
        return Some(Anomaly::new(
            AnomalyClass::PositionSkip,
            Some(partition),
            at,
            format!(
                "{name} started {partition} at {position} in generation {generation}, above the \
                 committed offset {} in force since it got the partition (its OffsetFetch found \
                 {found}): records {}..{position} are skipped",
                highest.1, highest.1
            ),
            vec![highest.0, assigned_idx, idx],
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use groupsim_history::MemberEvent;

    use crate::tests::{clean, tp, H};
    use crate::{check, AnomalyClass};

    /// `clean()` (both partitions committed at 10), then generation 2 gives m0 both partitions
    /// and m0 starts partition 1 at `position` having found `committed`.
    fn m0_starts_partition_1(committed: Option<i64>, position: i64) -> H {
        let mut h = clean();
        h.generation(2, &[("m0", "a", &[0, 1]), ("m1", "b", &[])]);
        h.member(
            "m0",
            MemberEvent::PositionInitialized {
                member_id: "a".into(),
                generation: 2,
                partition: tp(1),
                committed,
                position,
                reset_after: None,
            },
        );
        h
    }

    /// The position classes (and lost-commit) the run shows.
    fn classes(h: &mut H) -> Vec<AnomalyClass> {
        let v = check(&h.finish(&[(0, 10), (1, 20)]));
        let judged =
            [AnomalyClass::PositionRewind, AnomalyClass::PositionSkip, AnomalyClass::LostCommit];
        v.anomalies.iter().map(|a| a.class).filter(|c| judged.contains(c)).collect()
    }

    #[test]
    fn starting_at_the_committed_offset_is_clean() {
        assert_eq!(classes(&mut m0_starts_partition_1(Some(10), 10)), []);
    }

    /// kafka-python #2628: the OffsetFetch failed, the consumer applied auto_offset_reset
    /// (earliest) and re-delivered the partition from 0.
    #[test]
    fn starting_below_the_committed_offset_is_a_rewind() {
        let got = classes(&mut m0_starts_partition_1(None, 0));
        assert!(got.contains(&AnomalyClass::PositionRewind), "{got:?}");
        let got = classes(&mut m0_starts_partition_1(Some(10), 4));
        assert_eq!(got, [AnomalyClass::PositionRewind]);
    }

    #[test]
    fn starting_above_the_committed_offset_is_a_skip() {
        let mut h = m0_starts_partition_1(Some(10), 20);
        let v = check(&h.finish(&[(0, 10), (1, 20)]));
        let a = v.anomalies.iter().find(|a| a.class == AnomalyClass::PositionSkip).expect("skip");
        assert!(a.message.contains("records 10..20 are skipped"), "{}", a.message);
        assert_eq!(a.partition, Some(tp(1)));
    }

    /// A commit accepted between the assignment and the start may or may not have been seen by
    /// the member's OffsetFetch: either offset is a correct start.
    #[test]
    fn a_commit_accepted_after_the_assignment_is_a_correct_start_too() {
        let mut h = clean();
        h.generation(2, &[("m0", "a", &[0, 1]), ("m1", "b", &[])]);
        h.commit("b", 1, 1, 15);
        h.member(
            "m0",
            MemberEvent::PositionInitialized {
                member_id: "a".into(),
                generation: 2,
                partition: tp(1),
                committed: Some(10),
                position: 15,
                reset_after: None,
            },
        );
        let got: Vec<AnomalyClass> = check(&h.finish(&[(0, 10), (1, 20)]))
            .anomalies
            .iter()
            .map(|a| a.class)
            .filter(|c| matches!(c, AnomalyClass::PositionRewind | AnomalyClass::PositionSkip))
            .collect();
        assert_eq!(got, []);
    }

    /// With nothing committed when the member got the partition, its reset policy decides.
    #[test]
    fn a_reset_with_nothing_committed_is_not_judged() {
        let mut h = H::new(1);
        h.started("m0");
        h.generation(1, &[("m0", "a", &[0])]);
        h.member(
            "m0",
            MemberEvent::PositionInitialized {
                member_id: "a".into(),
                generation: 1,
                partition: tp(0),
                committed: None,
                position: 7,
                reset_after: None,
            },
        );
        let v = check(&h.finish(&[(0, 7)]));
        assert!(
            !v.anomalies.iter().any(|a| matches!(
                a.class,
                AnomalyClass::PositionRewind | AnomalyClass::PositionSkip
            )),
            "{:?}",
            v.anomalies
        );
    }
}
