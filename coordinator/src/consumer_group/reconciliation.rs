//! Reconciliation (Kafka's CurrentAssignmentBuilder): one step of moving a member from its
//! current assignment towards its target, decided from what the member reports it owns.
//!
//! The rules, as Kafka applies them:
//! - A member keeps the partitions of its target it already has; the others it has are
//!   *pending revocation*. While it still reports owning any of those, it stays at its epoch in
//!   UNREVOKED_PARTITIONS (and its rebalance timeout runs): it may not move to the new epoch
//!   before it gave up what moves away.
//! - Once nothing is pending revocation, it moves to the target epoch and is given the target
//!   partitions that are free. A partition still owned by another member (its owner epoch is
//!   not -1) is *unreleased*: the member waits for it in UNRELEASED_PARTITIONS and gets it on a
//!   later heartbeat, after the previous owner released it.
//! - A member that reports nothing (no owned list) is assumed to still own everything.
//!
//! Kafka's UNKNOWN state (a state read back after a downgrade) has no counterpart: this
//! coordinator reads only the states it writes.

use std::collections::BTreeSet;

use super::epochs::PartitionEpochs;
use super::member::{ConsumerMember, MemberState};
use crate::TopicPartition;

/// Whether a target partition another member owns is withheld until its release.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Owners {
    /// Kafka's rule: the member waits for it (UNRELEASED_PARTITIONS).
    Respected,
    /// The `assigns_unreleased_partitions` bug switch: it is handed over at once.
    Ignored,
}

impl Owners {
    /// The rule in force: Kafka's, unless the `assigns_unreleased_partitions` switch is on.
    pub fn under(bugs: &crate::CoordinatorBugs) -> Self {
        if bugs.assigns_unreleased_partitions {
            Owners::Ignored
        } else {
            Owners::Respected
        }
    }
}

/// The member's next state, or `member` unchanged when it cannot progress.
pub fn reconcile(
    member: &ConsumerMember,
    target_epoch: i32,
    target: &BTreeSet<TopicPartition>,
    owned: Option<&BTreeSet<TopicPartition>>,
    epochs: &PartitionEpochs,
    owners: Owners,
) -> ConsumerMember {
    let step = Step { member, target_epoch, target, owned, epochs, owners };
    match member.state {
        MemberState::Stable if member.member_epoch != target_epoch => {
            step.next(member.member_epoch)
        }
        MemberState::Stable => member.clone(),
        MemberState::UnrevokedPartitions if step.owns_any(&member.pending_revocation) => {
            member.clone()
        }
        MemberState::UnrevokedPartitions | MemberState::UnreleasedPartitions => {
            step.next(member.member_epoch)
        }
    }
}

struct Step<'a> {
    member: &'a ConsumerMember,
    target_epoch: i32,
    target: &'a BTreeSet<TopicPartition>,
    owned: Option<&'a BTreeSet<TopicPartition>>,
    epochs: &'a PartitionEpochs,
    owners: Owners,
}

impl Step<'_> {
    /// Whether the member reports owning any of `partitions` (no report: it owns them all).
    fn owns_any(&self, partitions: &BTreeSet<TopicPartition>) -> bool {
        match self.owned {
            None => true,
            Some(owned) => owned.iter().any(|tp| partitions.contains(tp)),
        }
    }

    /// Kafka's computeNextAssignment, from the member's epoch `epoch`.
    fn next(&self, epoch: i32) -> ConsumerMember {
        let m = self.member;
        let mut assigned: BTreeSet<TopicPartition> =
            m.assigned.intersection(self.target).cloned().collect();
        let revoking: BTreeSet<TopicPartition> =
            m.assigned.difference(&assigned).cloned().collect();
        let mut unreleased = false;
        let mut pending_assignment = BTreeSet::new();
        for tp in self.target.difference(&assigned) {
            // Owned by someone else: wait for its release. A partition this member itself still
            // holds pending revocation is not waited for (only one member owns a partition).
            let held = self.epochs.epoch(tp) != -1 && !m.pending_revocation.contains(tp);
            if held && self.owners == Owners::Respected {
                unreleased = true;
            } else {
                pending_assignment.insert(tp.clone());
            }
        }
        let mut next = m.clone();
        if !revoking.is_empty() && self.owns_any(&revoking) {
            next.state = MemberState::UnrevokedPartitions;
            next.update_epoch(epoch);
            next.assigned = assigned;
            next.pending_revocation = revoking;
            return next;
        }
        assigned.extend(pending_assignment);
        next.state =
            if unreleased { MemberState::UnreleasedPartitions } else { MemberState::Stable };
        next.update_epoch(self.target_epoch);
        next.assigned = assigned;
        next.pending_revocation = BTreeSet::new();
        next
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(ps: &[i32]) -> BTreeSet<TopicPartition> {
        ps.iter().map(|p| TopicPartition::new("t", *p)).collect()
    }

    fn member(
        epoch: i32,
        state: MemberState,
        assigned: &[i32],
        revoking: &[i32],
    ) -> ConsumerMember {
        let mut m = ConsumerMember::new("m");
        m.member_epoch = epoch;
        m.state = state;
        m.assigned = set(assigned);
        m.pending_revocation = set(revoking);
        m
    }

    /// One case per rule: (name, member, target, owned report, partitions owned by others,
    /// expected (state, epoch, assigned, pending revocation)).
    #[test]
    fn each_reconciliation_rule() {
        use MemberState::*;
        type Case = (
            &'static str,
            ConsumerMember,
            &'static [i32],
            Option<&'static [i32]>,
            &'static [i32],
            (MemberState, i32, &'static [i32], &'static [i32]),
        );
        let cases: Vec<Case> = vec![
            (
                "reconciled: unchanged",
                member(2, Stable, &[0, 1], &[]),
                &[0, 1],
                Some(&[0, 1]),
                &[],
                (Stable, 2, &[0, 1], &[]),
            ),
            (
                "new target, free partitions: epoch moves",
                member(1, Stable, &[0], &[]),
                &[0, 1],
                Some(&[0]),
                &[],
                (Stable, 2, &[0, 1], &[]),
            ),
            (
                "new target, something to revoke: epoch stays",
                member(1, Stable, &[0, 1], &[]),
                &[0],
                Some(&[0, 1]),
                &[],
                (UnrevokedPartitions, 1, &[0], &[1]),
            ),
            (
                "revoked already (not reported): epoch moves",
                member(1, Stable, &[0, 1], &[]),
                &[0],
                Some(&[0]),
                &[],
                (Stable, 2, &[0], &[]),
            ),
            (
                "no owned report: assumed still owned",
                member(1, Stable, &[0, 1], &[]),
                &[0],
                None,
                &[],
                (UnrevokedPartitions, 1, &[0], &[1]),
            ),
            (
                "still revoking: unchanged",
                member(1, UnrevokedPartitions, &[0], &[1]),
                &[0],
                Some(&[0, 1]),
                &[],
                (UnrevokedPartitions, 1, &[0], &[1]),
            ),
            (
                "revocation acknowledged",
                member(1, UnrevokedPartitions, &[0], &[1]),
                &[0],
                Some(&[0]),
                &[],
                (Stable, 2, &[0], &[]),
            ),
            (
                "target owned by another: unreleased",
                member(1, Stable, &[0], &[]),
                &[0, 1],
                Some(&[0]),
                &[1],
                (UnreleasedPartitions, 2, &[0], &[]),
            ),
            (
                "unreleased, then released",
                member(2, UnreleasedPartitions, &[0], &[]),
                &[0, 1],
                Some(&[0]),
                &[],
                (Stable, 2, &[0, 1], &[]),
            ),
            (
                "partition back from own revocation is not waited for",
                member(1, UnrevokedPartitions, &[0], &[1]),
                &[0, 1],
                Some(&[0]),
                &[1],
                (Stable, 2, &[0, 1], &[]),
            ),
        ];
        for (name, m, target, owned, others, (state, epoch, assigned, revoking)) in cases {
            let mut epochs = PartitionEpochs::default();
            let mut other = ConsumerMember::new("other");
            other.member_epoch = 1;
            other.assigned = set(others);
            epochs.update(None, Some(&other));
            let owned = owned.map(set);
            let next = reconcile(&m, 2, &set(target), owned.as_ref(), &epochs, Owners::Respected);
            assert_eq!(
                (next.state, next.member_epoch, next.assigned, next.pending_revocation),
                (state, epoch, set(assigned), set(revoking)),
                "{name}"
            );
        }
    }
}
