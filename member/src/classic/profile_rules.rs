//! What each client profile does differently, in one table derived once from the
//! [`ClientProfile`]. The member reads these fields instead of matching on the profile, so the
//! differences between Java (eager and cooperative), brod, Elsa and kafka-go read in one place.

use crate::{ClientProfile, Millis};

/// brod's `max_rejoin_attempts` default.
const BROD_MAX_REJOIN_ATTEMPTS: u32 = 5;
/// brod's `rejoin_delay_seconds` default, in ms.
const BROD_REJOIN_DELAY_MS: Millis = 1_000;
/// kafka-go's `JoinGroupBackoff` default.
const KAFKA_GO_JOIN_BACKOFF_MS: Millis = 5_000;
/// kafka-go's `PartitionWatchInterval` default.
const KAFKA_GO_PARTITION_WATCH_MS: Millis = 5_000;

/// When to retry after a failed JoinGroup / SyncGroup.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum JoinRetry {
    /// Java: after `retry.backoff.ms`.
    RetryBackoff,
    /// kafka-go: after a fixed `JoinGroupBackoff`.
    After(Millis),
    /// brod (and Elsa on it): the first retry at once, then after `delay_ms`; after
    /// `max_attempts` failures the coordinator process gives up and is restarted by its
    /// supervisor (fresh member id).
    Limited { max_attempts: u32, delay_ms: Millis },
}

/// What happens to the batch being processed when partitions are given up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum InProgressOnRevoke {
    /// The poll loop (and so the rejoin) waits for it (Java, kafka-go).
    Wait,
    /// brod: it is detached and finishes on its own; its ack may arrive in a later generation.
    Detach,
    /// Elsa: revocation stops every worker; the batch is dropped.
    Stop,
}

/// One client profile's rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ProfileRules {
    /// Offers incremental cooperative rebalancing (KIP-429) when every assignor supports it.
    pub(crate) offers_cooperative: bool,
    /// `max.poll.interval.ms` (the rebalance timeout) is enforced: a member stuck in a callback
    /// or a batch longer than that leaves the group (Java).
    pub(crate) enforces_max_poll: bool,
    /// Processing is acknowledged asynchronously, possibly after an application-chosen delay
    /// (brod, Elsa).
    pub(crate) acks_asynchronously: bool,
    /// What happens to the batch in progress on revoke.
    pub(crate) in_progress_on_revoke: InProgressOnRevoke,
    /// The revoke commit runs before the revoke callback (Java: commitSync in
    /// `onPartitionsRevoked`), not after it (brod, Elsa).
    pub(crate) commit_before_revoke_callback: bool,
    /// Processed offsets are committed before partitions are given up (the default of
    /// [`Application::commits_on_revoke`](crate::Application::commits_on_revoke)); kafka-go
    /// does not commit on revoke.
    pub(crate) commits_on_revoke: bool,
    /// Join retry timing.
    pub(crate) join_retry: JoinRetry,
    /// brod stabilizes on a lost coordinator connection or NOT_COORDINATOR: a member in a
    /// generation revokes and rejoins with an empty member id.
    pub(crate) rejoin_on_coordinator_loss: bool,
    /// kafka-go's partition watcher: every member (not only the leader) watches partition
    /// counts and rejoins when one changes, refreshing Metadata at least this often.
    pub(crate) partition_watch_ms: Option<Millis>,
    /// The leader reads the subscribed topics' partitions from a broker before it assigns
    /// (kafka-go's `assignTopicPartitions` calls `readPartitions`), rather than from its
    /// cached metadata, which a pause may have left stale.
    pub(crate) fresh_partitions_for_assignment: bool,
    /// A failed rebalance round (JoinGroup, the leader's partition read, SyncGroup other than
    /// REBALANCE_IN_PROGRESS, a lost offset fetch at the generation's start) ends with
    /// LeaveGroup under the round's member id, the id given up and the join backoff (kafka-go's
    /// `ConsumerGroup.run`); other clients keep the id.
    pub(crate) gives_up_member_id_on_failed_round: bool,
    /// Any failed heartbeat (an error answer or a lost request) ends the generation and the
    /// member rejoins under its member id (kafka-go's `heartbeatLoop` returns on an error, and
    /// a generation ends when one of its goroutines does); the Java clients retry the
    /// heartbeat and keep the generation unless the error says it is over.
    pub(crate) heartbeat_error_ends_generation: bool,
    /// How many batches may be processed at once: one (the poll loop), or one per partition
    /// for Elsa's per-partition workers.
    pub(crate) max_concurrent_batches: usize,
}

impl ProfileRules {
    /// The rules of `profile`.
    pub(crate) fn of(profile: ClientProfile) -> Self {
        let java = matches!(profile, ClientProfile::JavaEager | ClientProfile::JavaCooperative);
        let asynchronous = profile.acks_asynchronously();
        Self {
            offers_cooperative: profile == ClientProfile::JavaCooperative,
            enforces_max_poll: java,
            acks_asynchronously: asynchronous,
            in_progress_on_revoke: match profile {
                ClientProfile::Brod => InProgressOnRevoke::Detach,
                ClientProfile::Elsa => InProgressOnRevoke::Stop,
                _ => InProgressOnRevoke::Wait,
            },
            commit_before_revoke_callback: !asynchronous,
            commits_on_revoke: profile != ClientProfile::KafkaGo,
            join_retry: match profile {
                ClientProfile::Brod | ClientProfile::Elsa => JoinRetry::Limited {
                    max_attempts: BROD_MAX_REJOIN_ATTEMPTS,
                    delay_ms: BROD_REJOIN_DELAY_MS,
                },
                ClientProfile::KafkaGo => JoinRetry::After(KAFKA_GO_JOIN_BACKOFF_MS),
                _ => JoinRetry::RetryBackoff,
            },
            rejoin_on_coordinator_loss: asynchronous,
            partition_watch_ms: (profile == ClientProfile::KafkaGo)
                .then_some(KAFKA_GO_PARTITION_WATCH_MS),
            fresh_partitions_for_assignment: profile == ClientProfile::KafkaGo,
            gives_up_member_id_on_failed_round: profile == ClientProfile::KafkaGo,
            heartbeat_error_ends_generation: profile == ClientProfile::KafkaGo,
            max_concurrent_batches: if profile == ClientProfile::Elsa { usize::MAX } else { 1 },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_eager_enforces_max_poll_and_commits_before_the_callback() {
        let r = ProfileRules::of(ClientProfile::JavaEager);
        assert!(!r.offers_cooperative);
        assert!(r.enforces_max_poll);
        assert!(!r.acks_asynchronously);
        assert_eq!(r.in_progress_on_revoke, InProgressOnRevoke::Wait);
        assert!(r.commit_before_revoke_callback && r.commits_on_revoke);
        assert_eq!(r.join_retry, JoinRetry::RetryBackoff);
        assert!(!r.rejoin_on_coordinator_loss);
        assert_eq!(r.partition_watch_ms, None);
        assert!(!r.fresh_partitions_for_assignment);
        assert!(!r.gives_up_member_id_on_failed_round);
        assert!(!r.heartbeat_error_ends_generation);
        assert_eq!(r.max_concurrent_batches, 1);
    }

    #[test]
    fn java_cooperative_differs_from_eager_only_in_offering_cooperative() {
        let eager = ProfileRules::of(ClientProfile::JavaEager);
        let coop = ProfileRules::of(ClientProfile::JavaCooperative);
        assert!(coop.offers_cooperative);
        assert_eq!(ProfileRules { offers_cooperative: false, ..coop }, eager);
    }

    #[test]
    fn brod_detaches_acks_and_limits_rejoins() {
        let r = ProfileRules::of(ClientProfile::Brod);
        assert!(r.acks_asynchronously && !r.enforces_max_poll);
        assert_eq!(r.in_progress_on_revoke, InProgressOnRevoke::Detach);
        assert!(!r.commit_before_revoke_callback && r.commits_on_revoke);
        assert_eq!(r.join_retry, JoinRetry::Limited { max_attempts: 5, delay_ms: 1_000 });
        assert!(r.rejoin_on_coordinator_loss);
        assert!(!r.gives_up_member_id_on_failed_round);
        assert!(!r.heartbeat_error_ends_generation);
        assert_eq!(r.max_concurrent_batches, 1);
    }

    #[test]
    fn elsa_is_brod_with_stopped_workers_and_one_batch_per_partition() {
        let brod = ProfileRules::of(ClientProfile::Brod);
        let elsa = ProfileRules::of(ClientProfile::Elsa);
        assert_eq!(elsa.in_progress_on_revoke, InProgressOnRevoke::Stop);
        assert_eq!(elsa.max_concurrent_batches, usize::MAX);
        assert_eq!(
            ProfileRules {
                in_progress_on_revoke: InProgressOnRevoke::Detach,
                max_concurrent_batches: 1,
                ..elsa
            },
            brod
        );
    }

    #[test]
    fn kafka_go_skips_the_revoke_commit_gives_up_failed_rounds_and_watches_partitions() {
        let r = ProfileRules::of(ClientProfile::KafkaGo);
        assert!(!r.commits_on_revoke);
        assert!(!r.enforces_max_poll && !r.acks_asynchronously);
        assert_eq!(r.in_progress_on_revoke, InProgressOnRevoke::Wait);
        assert_eq!(r.join_retry, JoinRetry::After(5_000));
        assert_eq!(r.partition_watch_ms, Some(5_000));
        assert!(r.fresh_partitions_for_assignment);
        assert!(r.gives_up_member_id_on_failed_round);
        assert!(r.heartbeat_error_ends_generation);
        assert!(!r.rejoin_on_coordinator_loss);
    }
}
