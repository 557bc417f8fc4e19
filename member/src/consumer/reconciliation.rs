//! Reconciliation (the Java consumer's `maybeReconcile` / `revokeAndAssign`, librdkafka's
//! incremental unassign and assign): moving from the partitions the member owns to the target
//! assignment the coordinator sent, in Kafka's order: commit, revoke (callback), assign
//! (callback, then committed offsets are fetched), acknowledge with the owned partitions in the
//! next heartbeat. The target names topics by id; they are resolved through Metadata topic ids,
//! and a reconciliation takes the resolvable part while a metadata refresh looks for the rest.

use std::collections::{BTreeMap, BTreeSet};

use uuid::Uuid;

use crate::shared::metadata::Metadata;
use crate::{Millis, TopicPartition};

/// An assignment as the coordinator speaks it: partitions by topic id.
pub(super) type IdAssignment = BTreeMap<Uuid, BTreeSet<i32>>;

/// One reconciliation's moves, computed when it starts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Plan {
    /// The resolved target (by id), owned once the reconciliation completes.
    pub(super) target: IdAssignment,
    /// Owned now, not in the target.
    pub(super) revoked: Vec<TopicPartition>,
    /// In the target, not owned now.
    pub(super) added: Vec<TopicPartition>,
    /// Leaving: everything is given up and no assignment follows.
    pub(super) leaving: bool,
}

/// Where a reconciliation stands.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) enum Step {
    /// None under way.
    #[default]
    Idle,
    /// Java: the commit before reconciling, retried until `deadline` (the rebalance timeout);
    /// `done` once answered for good.
    CommitBefore { plan: Plan, deadline: Millis, done: bool },
    /// The revoke callback waits for the batch in progress (callbacks run between polls).
    AwaitingPoll { plan: Plan },
    /// The revoke callback runs until `until`.
    RevokeCallback { plan: Plan, until: Millis },
    /// librdkafka: the removed partitions' commit after the callback (`sent` once out).
    CommitAfter { plan: Plan, sent: bool },
}

/// The member's target and current assignments and the reconciliation under way.
#[derive(Debug, Default)]
pub(super) struct Reconciliation {
    /// The latest target assignment the coordinator sent.
    pub(super) target: IdAssignment,
    /// What the member owns (the resolved part of the target it last reconciled).
    pub(super) current: IdAssignment,
    /// Counts completed reconciliations (Java's `LocalAssignment.localEpoch`): a heartbeat
    /// re-sends the owned partitions when it moves.
    pub(super) local_epoch: u64,
    pub(super) step: Step,
    /// Partitions being revoked: no fetching, no new batch.
    pub(super) pending_revocation: BTreeSet<TopicPartition>,
    /// Fault: the next revoke callback takes this much longer.
    pub(super) slow_revoke_ms: u64,
}

impl Reconciliation {
    /// Whether a reconciliation is under way.
    pub(super) fn in_progress(&self) -> bool {
        self.step != Step::Idle
    }

    /// Whether the target (resolved as far as metadata allows) is what the member owns.
    pub(super) fn target_reconciled(&self, metadata: &Metadata) -> bool {
        resolve(&self.target, metadata).0 == self.current
    }

    /// Stops the reconciliation under way and forgets both assignments (fenced, fatal): the
    /// partitions are released by the caller.
    pub(super) fn abort_and_clear(&mut self) {
        self.step = Step::Idle;
        self.pending_revocation.clear();
        self.target.clear();
        self.current.clear();
        self.local_epoch += 1;
    }

    /// The moves from `owned` to the target as far as it resolves, and the topic ids that did
    /// not resolve.
    pub(super) fn plan(&self, owned: &[TopicPartition], metadata: &Metadata) -> (Plan, Vec<Uuid>) {
        let (target, unresolved) = resolve(&self.target, metadata);
        let wanted: BTreeSet<TopicPartition> = named(&target, metadata).into_iter().collect();
        let owned_set: BTreeSet<&TopicPartition> = owned.iter().collect();
        let revoked = owned.iter().filter(|tp| !wanted.contains(tp)).cloned().collect();
        let added = wanted.iter().filter(|tp| !owned_set.contains(tp)).cloned().collect();
        (Plan { target, revoked, added, leaving: false }, unresolved)
    }
}

/// The part of `target` whose topic ids Metadata knows, and the ids it does not.
pub(super) fn resolve(target: &IdAssignment, metadata: &Metadata) -> (IdAssignment, Vec<Uuid>) {
    let mut resolved = IdAssignment::new();
    let mut unresolved = Vec::new();
    for (id, parts) in target {
        if metadata.topic_named_by_id(id).is_some() {
            resolved.insert(*id, parts.clone());
        } else {
            unresolved.push(*id);
        }
    }
    (resolved, unresolved)
}

/// The partitions of a resolved assignment by name, sorted.
pub(super) fn named(assignment: &IdAssignment, metadata: &Metadata) -> Vec<TopicPartition> {
    let mut out: Vec<TopicPartition> = assignment
        .iter()
        .filter_map(|(id, parts)| metadata.topic_named_by_id(id).map(|name| (name, parts)))
        .flat_map(|(name, parts)| parts.iter().map(move |p| TopicPartition::new(name, *p)))
        .collect();
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use kafka_protocol::messages::metadata_response::{
        MetadataResponsePartition, MetadataResponseTopic,
    };
    use kafka_protocol::messages::{BrokerId, MetadataResponse, TopicName};

    use super::*;
    use crate::compat::sb;

    fn id(n: u8) -> Uuid {
        Uuid::from_bytes([n; 16])
    }

    fn metadata(topics: &[(&str, u8)]) -> Metadata {
        let mut m = Metadata::default();
        let topics = topics
            .iter()
            .map(|(name, n)| {
                MetadataResponseTopic::default()
                    .with_name(Some(TopicName(sb(name))))
                    .with_topic_id(id(*n))
                    .with_partitions(
                        (0..4)
                            .map(|p| {
                                MetadataResponsePartition::default()
                                    .with_partition_index(p)
                                    .with_leader_id(BrokerId(1))
                            })
                            .collect(),
                    )
            })
            .collect();
        m.apply(MetadataResponse::default().with_topics(topics));
        m
    }

    #[test]
    fn the_plan_revokes_what_moves_away_and_adds_what_arrives() {
        let m = metadata(&[("a", 1), ("b", 2)]);
        let r = Reconciliation {
            target: [(id(1), [0, 2].into()), (id(2), [1].into())].into_iter().collect(),
            ..Default::default()
        };
        let owned = vec![TopicPartition::new("a", 0), TopicPartition::new("a", 1)];
        let (plan, unresolved) = r.plan(&owned, &m);
        assert!(unresolved.is_empty());
        assert_eq!(plan.revoked, vec![TopicPartition::new("a", 1)]);
        assert_eq!(plan.added, vec![TopicPartition::new("a", 2), TopicPartition::new("b", 1)]);
    }

    #[test]
    fn unknown_topic_ids_are_left_out_until_metadata_names_them() {
        let m = metadata(&[("a", 1)]);
        let r = Reconciliation {
            target: [(id(1), [0].into()), (id(9), [0].into())].into_iter().collect(),
            ..Default::default()
        };
        let (plan, unresolved) = r.plan(&[], &m);
        assert_eq!(unresolved, vec![id(9)]);
        assert_eq!(plan.added, vec![TopicPartition::new("a", 0)]);
        assert_eq!(plan.target.len(), 1);
    }
}
