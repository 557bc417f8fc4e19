//! The application model: what the consumer's application does with records and in its
//! rebalance listener. A member calls its [`Application`] to learn how long a batch takes, when
//! its ack arrives, whether to commit on revoke, and runs the listener hooks (assigned /
//! revoked / lost) at the moments the real clients do. Users model their own application by
//! implementing the trait; [`ProfileApplication`] is each profile's default.

use crate::classic::profile_rules::ProfileRules;
use crate::{ClientProfile, Millis, TopicPartition};

/// A consumer application, as the member sees it. Every method has the profile's default, so an
/// implementation overrides only what it models.
pub trait Application: Send + std::fmt::Debug {
    /// How long processing records `first..=last` (`count` records) of `tp` takes, in ms.
    /// `None` keeps the member's default: a draw per record from
    /// `MemberConfig::processing_ms_per_record`.
    fn processing_ms(
        &mut self,
        _tp: &TopicPartition,
        _first: i64,
        _last: i64,
        _count: usize,
    ) -> Option<u64> {
        None
    }

    /// For profiles that ack asynchronously (brod, Elsa): how long after processing the ack
    /// reaches the member. A delayed batch is not waited for on revoke, so its ack may arrive
    /// in a later generation (and must then be dropped).
    fn ack_delay_ms(&mut self, _tp: &TopicPartition, _first: i64, _last: i64) -> u64 {
        0
    }

    /// Whether processed offsets are committed before partitions are given up (Java's
    /// commitSync in `onPartitionsRevoked`; brod's commit before rejoining). kafka-go does not.
    fn commits_on_revoke(&self, profile: ClientProfile) -> bool {
        ProfileRules::of(profile).commits_on_revoke
    }

    /// `onPartitionsAssigned`: the partitions newly assigned in `generation` (for a cooperative
    /// member only the added ones).
    fn on_partitions_assigned(
        &mut self,
        _now: Millis,
        _generation: i32,
        _partitions: &[TopicPartition],
    ) {
    }

    /// `onPartitionsRevoked`: returns how long the callback runs (ms), during which the member
    /// neither rejoins nor processes. A callback longer than `max.poll.interval.ms` gets a Java
    /// member out of the group.
    fn on_partitions_revoked(
        &mut self,
        _now: Millis,
        _generation: i32,
        _partitions: &[TopicPartition],
    ) -> u64 {
        0
    }

    /// `onPartitionsLost`: the partitions were lost (generation or member id reset) and must not
    /// be committed.
    fn on_partitions_lost(
        &mut self,
        _now: Millis,
        _generation: i32,
        _partitions: &[TopicPartition],
    ) {
    }
}

/// The default application of every profile: processing times from the member configuration,
/// acks as soon as processing ends, no-op listener hooks.
#[derive(Clone, Copy, Debug, Default)]
pub struct ProfileApplication;

impl Application for ProfileApplication {}
