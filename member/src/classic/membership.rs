//! Group membership (the classic protocol's half of Kafka's `AbstractCoordinator`): member id,
//! generation, protocol, where the member stands in a rebalance, join retry timing, and what a
//! group error from the coordinator means.

use std::collections::BTreeMap;

use groupsim_wire::consumer_protocol::Subscription;
use groupsim_wire::error_codes as codes;

use super::profile_rules::{JoinRetry, ProfileRules};
use crate::shared::in_flight::Sent;
use crate::{Millis, TopicPartition};

/// Generation id meaning "no generation" (Kafka's `Generation.NO_GENERATION`).
pub(super) const NO_GENERATION: i32 = -1;

/// Where the member stands in the group protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Phase {
    /// Not in a generation: it must (re)join once it has revoked and found the coordinator.
    Unjoined,
    /// JoinGroup in flight.
    Joining,
    /// Leader of the new generation, waiting for metadata on other members' topics.
    AwaitingLeaderMetadata,
    /// SyncGroup in flight.
    Syncing,
    /// In a generation with an assignment (possibly empty). `rejoin_needed` starts a rebalance.
    Stable,
}

/// The leader's pending assignment job while it waits for metadata.
#[derive(Clone, Debug)]
pub(super) struct LeaderJob {
    pub(super) members: BTreeMap<String, Subscription>,
    pub(super) after_metadata_version: u64,
}

/// The member's place in the group.
#[derive(Debug)]
pub(super) struct Membership {
    pub(super) member_id: String,
    pub(super) generation: i32,
    pub(super) protocol: Option<String>,
    pub(super) phase: Phase,
    pub(super) rejoin_needed: bool,
    pub(super) ever_joined: bool,
    pub(super) leader_job: Option<LeaderJob>,
    /// Leader only: the partition counts (None: unknown topic) its assignment relied on.
    pub(super) assignment_snapshot: BTreeMap<String, Option<i32>>,
    /// kafka-go's partition watcher: partition counts when the generation started.
    pub(super) watched_counts: BTreeMap<String, Option<i32>>,
    /// Generation and partitions of the last assignment (sticky user data).
    pub(super) last_assignment: (i32, Vec<TopicPartition>),
    /// brod: rejoin with an empty member id (after UNKNOWN_MEMBER_ID, NOT_COORDINATOR or a
    /// lost connection).
    pub(super) reset_member_id_on_join: bool,
    /// brod: consecutive failed join attempts.
    pub(super) join_attempts: u32,
    /// kafka-go: the member id a failed round gave up, whose LeaveGroup goes out once the
    /// coordinator is known (kafka-go looks the coordinator up afresh to send it).
    pub(super) owed_leave: Option<String>,
}

impl Membership {
    pub(super) fn new() -> Self {
        Self {
            member_id: String::new(),
            generation: NO_GENERATION,
            protocol: None,
            phase: Phase::Unjoined,
            rejoin_needed: false,
            ever_joined: false,
            leader_job: None,
            assignment_snapshot: BTreeMap::new(),
            watched_counts: BTreeMap::new(),
            last_assignment: (NO_GENERATION, Vec::new()),
            reset_member_id_on_join: false,
            join_attempts: 0,
            owed_leave: None,
        }
    }

    /// Whether an answer to a request sent as `sent` speaks about the member's current
    /// generation: it is in one, and it is the one (and the member id) the request carried
    /// (KAFKA-9823: an error about an older generation says nothing about the current one).
    pub(super) fn is_current(&self, sent: &Sent) -> bool {
        self.phase == Phase::Stable && self.sent_under(sent)
    }

    /// Whether `sent` went out under the generation and member id the member holds now.
    pub(super) fn sent_under(&self, sent: &Sent) -> bool {
        sent.generation == self.generation && sent.member_id == self.member_id
    }

    /// Asks for a rebalance: a member in a generation rejoins; one between generations is
    /// rejoining already.
    pub(super) fn request_rejoin(&mut self) {
        if self.phase == Phase::Stable {
            self.rejoin_needed = true;
        }
    }

    /// When to retry after a failed JoinGroup / SyncGroup (see [`JoinRetry`]). Counts brod's
    /// attempts; after its last one the member rejoins with a fresh member id.
    pub(super) fn join_backoff(
        &mut self,
        now: Millis,
        rules: &ProfileRules,
        retry_backoff_ms: Millis,
    ) -> Millis {
        match rules.join_retry {
            JoinRetry::Limited { max_attempts, delay_ms } => {
                self.join_attempts += 1;
                if self.join_attempts >= max_attempts {
                    self.join_attempts = 0;
                    self.reset_member_id_on_join = true;
                    now + delay_ms
                } else if self.join_attempts == 1 {
                    now
                } else {
                    now + delay_ms
                }
            }
            JoinRetry::After(delay_ms) => now + delay_ms,
            JoinRetry::RetryBackoff => now + retry_backoff_ms,
        }
    }
}

/// A group error the coordinator answers with, whatever the request (JoinGroup, SyncGroup,
/// Heartbeat, OffsetCommit, OffsetFetch).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum GroupError {
    /// REBALANCE_IN_PROGRESS: the group is rebalancing; the member rejoins.
    RebalanceInProgress,
    /// ILLEGAL_GENERATION: the generation is over; its partitions are lost.
    IllegalGeneration,
    /// UNKNOWN_MEMBER_ID: the member was removed; generation and member id are reset.
    UnknownMemberId,
    /// FENCED_INSTANCE_ID: another member took this static member's place; fatal.
    FencedInstanceId,
    /// NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE: the coordinator moved or is down.
    CoordinatorMoved,
}

impl GroupError {
    /// The group error `code` is, or None for codes each request handles on its own (success,
    /// COORDINATOR_LOAD_IN_PROGRESS, partition errors, ...).
    pub(super) fn from_code(code: i16) -> Option<Self> {
        match code {
            codes::REBALANCE_IN_PROGRESS => Some(GroupError::RebalanceInProgress),
            codes::ILLEGAL_GENERATION => Some(GroupError::IllegalGeneration),
            codes::UNKNOWN_MEMBER_ID => Some(GroupError::UnknownMemberId),
            codes::FENCED_INSTANCE_ID => Some(GroupError::FencedInstanceId),
            codes::NOT_COORDINATOR | codes::COORDINATOR_NOT_AVAILABLE => {
                Some(GroupError::CoordinatorMoved)
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shared::outputs::Target;
    use crate::ClientProfile;

    #[test]
    fn each_group_error_code_maps_to_its_decision() {
        use GroupError::*;
        let cases = [
            (codes::REBALANCE_IN_PROGRESS, Some(RebalanceInProgress)),
            (codes::ILLEGAL_GENERATION, Some(IllegalGeneration)),
            (codes::UNKNOWN_MEMBER_ID, Some(UnknownMemberId)),
            (codes::FENCED_INSTANCE_ID, Some(FencedInstanceId)),
            (codes::NOT_COORDINATOR, Some(CoordinatorMoved)),
            (codes::COORDINATOR_NOT_AVAILABLE, Some(CoordinatorMoved)),
            (codes::COORDINATOR_LOAD_IN_PROGRESS, None),
            (codes::NONE, None),
            (codes::UNKNOWN_SERVER_ERROR, None),
            (codes::MEMBER_ID_REQUIRED, None),
        ];
        for (code, want) in cases {
            assert_eq!(GroupError::from_code(code), want, "code {code}");
        }
    }

    #[test]
    fn an_answer_is_current_only_in_the_generation_and_member_id_it_was_sent_in() {
        let mut m = Membership::new();
        m.member_id = "m-1".into();
        m.generation = 4;
        let sent = |generation, member_id: &str| Sent {
            target: Target::Coordinator(1),
            generation,
            member_id: member_id.into(),
        };
        assert!(!m.is_current(&sent(4, "m-1")), "not in a generation yet");
        m.phase = Phase::Stable;
        assert!(m.is_current(&sent(4, "m-1")));
        assert!(!m.is_current(&sent(3, "m-1")));
        assert!(!m.is_current(&sent(4, "m-0")));
    }

    #[test]
    fn only_a_member_in_a_generation_is_asked_to_rejoin() {
        let mut m = Membership::new();
        m.request_rejoin();
        assert!(!m.rejoin_needed);
        m.phase = Phase::Stable;
        m.request_rejoin();
        assert!(m.rejoin_needed);
    }

    #[test]
    fn join_backoff_per_profile() {
        let java = ProfileRules::of(ClientProfile::JavaEager);
        let go = ProfileRules::of(ClientProfile::KafkaGo);
        let mut m = Membership::new();
        assert_eq!(m.join_backoff(1_000, &java, 100), 1_100);
        assert_eq!(m.join_backoff(1_000, &go, 100), 6_000);
        assert_eq!(m.join_attempts, 0, "only brod counts attempts");
    }

    #[test]
    fn brod_retries_at_once_then_after_a_delay_then_restarts_with_a_fresh_member_id() {
        let brod = ProfileRules::of(ClientProfile::Brod);
        let mut m = Membership::new();
        let retries: Vec<Millis> = (0..4).map(|_| m.join_backoff(0, &brod, 100)).collect();
        assert_eq!(retries, vec![0, 1_000, 1_000, 1_000]);
        assert!(!m.reset_member_id_on_join);
        assert_eq!(m.join_backoff(0, &brod, 100), 1_000);
        assert!(m.reset_member_id_on_join, "the fifth failure restarts the coordinator process");
        assert_eq!(m.join_attempts, 0);
        assert_eq!(m.join_backoff(0, &brod, 100), 0, "a fresh process retries at once");
    }
}
