//! What each consumer-protocol (KIP-848) client does differently, in one table derived once from
//! the [`ClientProfile`]. Read from the sources: the Java consumer's `AsyncKafkaConsumer`
//! (`AbstractMembershipManager`, `ConsumerMembershipManager`, `ConsumerHeartbeatRequestManager`,
//! `CommitRequestManager`) and librdkafka's `rdkafka_cgrp.c` consumer path.
//!
//! - **`java-consumer`**: before every reconciliation the member commits all consumed offsets
//!   (`maybeAutoCommitSyncBeforeRevocation`), retrying retriable errors and STALE_MEMBER_EPOCH
//!   with the latest epoch until the rebalance timeout, then runs `onPartitionsRevoked`, then
//!   `onPartitionsAssigned`, then acknowledges. A heartbeat sends `instanceId` every time and the
//!   other fields only when they changed since the last one sent (all of them when joining or
//!   after an error). An auto-commit answered STALE_MEMBER_EPOCH is not retried; the next
//!   interval commits again. The auto-commit timer restarts when a reconciliation completes.
//! - **`librdkafka-consumer`**: the rebalance callback runs first; its `incremental_unassign`
//!   then commits the stored offsets of the removed partitions only
//!   (`rd_kafka_assignment_serve_removing`), and the reconciliation waits for that commit; a
//!   reconciliation that only adds partitions commits nothing. A heartbeat is either full
//!   (joining, or after a coordinator change or a lost connection: instance id, rebalance
//!   timeout, subscription, assignor and owned partitions) or minimal (group, member id,
//!   epoch), plus the owned partitions when it acknowledges. A commit answered
//!   STALE_MEMBER_EPOCH expedites a heartbeat and is sent again after its answer
//!   (`rd_kafka_cgrp_consumer_defer_offset_commit`).
//!
//! Both keep the member id they drew when fenced (FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID),
//! release their partitions as lost without committing, and rejoin with epoch 0; both leave
//! with epoch -1, or -2 for a static member.

use crate::ClientProfile;

/// When the commit that precedes giving partitions up runs, and what it covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RevokeCommit {
    /// Java: all consumed offsets, before every reconciliation (revoking or not), before the
    /// revoke callback, retried until the rebalance timeout.
    AllConsumedBeforeCallback,
    /// librdkafka: the removed partitions' offsets, after the revoke callback, one attempt.
    RevokedAfterCallback,
}

/// What a commit answered STALE_MEMBER_EPOCH leads to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StaleEpochCommit {
    /// Java: the commit before revocation is retried with the latest epoch; an auto-commit is
    /// dropped (the next interval commits again).
    RetryRevokeCommitOnly,
    /// librdkafka: a heartbeat is sent at once and the commit is sent again after its answer.
    RetryAfterHeartbeat,
}

/// One consumer-protocol profile's rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ConsumerRules {
    /// The commit that precedes giving partitions up.
    pub(crate) revoke_commit: RevokeCommit,
    /// Every heartbeat carries the instance id (Java); librdkafka sends it in full ones only.
    pub(crate) instance_id_every_heartbeat: bool,
    /// Fields are sent when they changed since the last heartbeat (Java's `SentFields`); else
    /// only full heartbeats carry them (librdkafka).
    pub(crate) delta_fields: bool,
    /// What STALE_MEMBER_EPOCH on a commit leads to.
    pub(crate) stale_epoch_commit: StaleEpochCommit,
    /// The auto-commit timer restarts when a reconciliation completes (Java's
    /// `resetAutoCommitTimer`).
    pub(crate) resets_auto_commit_after_reconciliation: bool,
}

impl ConsumerRules {
    /// The rules of `profile` (a classic profile gets the Java consumer's).
    pub(crate) fn of(profile: ClientProfile) -> Self {
        let rdkafka = profile == ClientProfile::LibrdkafkaConsumer;
        Self {
            revoke_commit: if rdkafka {
                RevokeCommit::RevokedAfterCallback
            } else {
                RevokeCommit::AllConsumedBeforeCallback
            },
            instance_id_every_heartbeat: !rdkafka,
            delta_fields: !rdkafka,
            stale_epoch_commit: if rdkafka {
                StaleEpochCommit::RetryAfterHeartbeat
            } else {
                StaleEpochCommit::RetryRevokeCommitOnly
            },
            resets_auto_commit_after_reconciliation: !rdkafka,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_commits_everything_before_the_callback_and_sends_deltas() {
        let r = ConsumerRules::of(ClientProfile::JavaConsumer);
        assert_eq!(r.revoke_commit, RevokeCommit::AllConsumedBeforeCallback);
        assert!(r.instance_id_every_heartbeat && r.delta_fields);
        assert_eq!(r.stale_epoch_commit, StaleEpochCommit::RetryRevokeCommitOnly);
        assert!(r.resets_auto_commit_after_reconciliation);
    }

    #[test]
    fn librdkafka_commits_revoked_partitions_after_the_callback_and_sends_full_or_minimal() {
        let r = ConsumerRules::of(ClientProfile::LibrdkafkaConsumer);
        assert_eq!(r.revoke_commit, RevokeCommit::RevokedAfterCallback);
        assert!(!r.instance_id_every_heartbeat && !r.delta_fields);
        assert_eq!(r.stale_epoch_commit, StaleEpochCommit::RetryAfterHeartbeat);
        assert!(!r.resets_auto_commit_after_reconciliation);
    }
}
