//! Member configuration, named after the Java consumer's settings.

use kafka_protocol::messages::ApiKey;
use serde::{Deserialize, Serialize};

use crate::AssignorKind;

/// How a member behaves: group, subscription, timeouts, commit cadence and processing speed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MemberConfig {
    /// `group.id`.
    pub group_id: String,
    /// `client.id`, also used in logs.
    pub client_id: String,
    /// `group.instance.id` (static membership), if any.
    pub group_instance_id: Option<String>,
    /// Subscribed topics.
    pub topics: Vec<String>,
    /// Node id of the broker used for bootstrap Metadata and FindCoordinator requests.
    pub bootstrap_node: i32,
    /// `session.timeout.ms`.
    pub session_timeout_ms: i32,
    /// `max.poll.interval.ms`, sent as the rebalance timeout.
    pub rebalance_timeout_ms: i32,
    /// `heartbeat.interval.ms`.
    pub heartbeat_interval_ms: u64,
    /// `request.timeout.ms` for every request but JoinGroup (which waits for the rebalance and
    /// gets `rebalance_timeout_ms + request_timeout_ms`).
    pub request_timeout_ms: u64,
    /// `retry.backoff.ms`: pause before retrying after an error.
    pub retry_backoff_ms: u64,
    /// `auto.commit.interval.ms`: how often processed offsets are committed.
    pub commit_interval_ms: u64,
    /// Assignors offered in JoinGroup, in preference order.
    pub assignors: Vec<AssignorKind>,
    /// Most records taken from one partition per Fetch.
    pub max_records_per_fetch: usize,
    /// Pause before fetching again when a Fetch returned nothing.
    pub fetch_backoff_ms: u64,
    /// Processing time per record, drawn uniformly from this inclusive range (ms).
    pub processing_ms_per_record: (u64, u64),
    /// `fetch.max.wait.ms`: how long a broker may hold a Fetch waiting for data.
    #[serde(default = "default_fetch_max_wait_ms")]
    pub fetch_max_wait_ms: i32,
    /// `metadata.max.age.ms`: Metadata is refreshed at least this often (a changed partition
    /// count makes the member rejoin).
    #[serde(default = "default_metadata_max_age_ms")]
    pub metadata_max_age_ms: u64,
    /// Which client this member behaves like (commit policy, rebalance protocol, error rules).
    /// The profile also fixes the group protocol the member speaks ([`ClientProfile::group_protocol`]).
    #[serde(default)]
    pub profile: ClientProfile,
    /// KIP-848 `group.remote.assignor`: the server-side assignor a consumer-protocol member asks
    /// for (`uniform`, `range`); None leaves the choice to the coordinator's default. Classic
    /// members ignore it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_assignor: Option<String>,
    /// Deliberate misbehaviours, to prove the checker catches them (all off by default).
    #[serde(default)]
    pub bugs: MemberBugs,
    /// Not a group member but an admin client describing and listing the group
    /// ([`AdminObserver`](crate::AdminObserver)).
    #[serde(default, skip_serializing_if = "is_false")]
    pub admin_observer: bool,
    /// Not a group member but a misbehaving client sending requests Kafka must refuse
    /// ([`InvalidRequestProber`](crate::InvalidRequestProber)).
    #[serde(default, skip_serializing_if = "is_false")]
    pub invalid_request_prober: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// The client a member models. Each profile fixes when the member commits, under which
/// generation, and what it does with work that finishes after its partitions were revoked.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub enum ClientProfile {
    /// Java consumer, eager protocol: auto-commit of consumed positions on a timer, commitSync
    /// in `onPartitionsRevoked` before rejoining, `max.poll.interval.ms` enforced, lost (not
    /// committed) partitions after ILLEGAL_GENERATION / UNKNOWN_MEMBER_ID on commit.
    #[default]
    JavaEager,
    /// Java consumer with the incremental cooperative protocol (KIP-429): owned partitions are
    /// kept across a rebalance, only those taken away are revoked, then the member rejoins at
    /// once so a second rebalance hands them to their new owner. Cooperative only when every
    /// offered assignor is (e.g. `cooperative-sticky` alone); otherwise it behaves eagerly.
    JavaCooperative,
    /// brod (Erlang): processing is asynchronous and acknowledged with the generation it ran
    /// in; acks from older generations are dropped; acked offsets are committed on a timer and
    /// once before rejoining (first attempt only, not after ILLEGAL_GENERATION or
    /// UNKNOWN_MEMBER_ID); the member id is reset after UNKNOWN_MEMBER_ID, NOT_COORDINATOR or a
    /// lost connection; failed joins retry at once, then after a delay, at most a few times
    /// before the coordinator process restarts.
    Brod,
    /// Elsa (Elixir, on brod): per-partition workers and an acknowledger that is told each new
    /// generation; revocation stops every worker; acks flow through the acknowledger, which
    /// drops those of other generations and commits on a timer.
    Elsa,
    /// kafka-go: one `Generation` per rebalance with commits scoped to it; no commit on revoke
    /// (the generation's commit loop just ends); a join backoff after errors; a partition
    /// watcher that rejoins when a subscribed topic's partition count changes.
    KafkaGo,
    /// The Java consumer with `group.protocol=consumer` (KIP-848, `AsyncKafkaConsumer`):
    /// server-side assignment through ConsumerGroupHeartbeat. See
    /// [`consumer::profile_rules`](crate::consumer) for what it does and how it differs from
    /// librdkafka.
    JavaConsumer,
    /// librdkafka with `group.protocol=consumer` (KIP-848): server-side assignment through
    /// ConsumerGroupHeartbeat, incremental assign/unassign in the rebalance callback.
    LibrdkafkaConsumer,
}

/// The group protocol a member speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum GroupProtocol {
    /// JoinGroup / SyncGroup / Heartbeat, client-side assignment, generations.
    Classic,
    /// KIP-848: ConsumerGroupHeartbeat, server-side assignment, member epochs.
    Consumer,
}

impl ClientProfile {
    /// Every classic-protocol profile.
    pub const CLASSIC: [ClientProfile; 5] = [
        ClientProfile::JavaEager,
        ClientProfile::JavaCooperative,
        ClientProfile::Brod,
        ClientProfile::Elsa,
        ClientProfile::KafkaGo,
    ];

    /// Every consumer-protocol (KIP-848) profile.
    pub const CONSUMER: [ClientProfile; 2] =
        [ClientProfile::JavaConsumer, ClientProfile::LibrdkafkaConsumer];

    /// The kebab-case name (`java-eager`, `java-cooperative`, `brod`, `elsa`, `kafka-go`,
    /// `java-consumer`, `librdkafka-consumer`).
    pub fn name(self) -> &'static str {
        match self {
            ClientProfile::JavaEager => "java-eager",
            ClientProfile::JavaCooperative => "java-cooperative",
            ClientProfile::Brod => "brod",
            ClientProfile::Elsa => "elsa",
            ClientProfile::KafkaGo => "kafka-go",
            ClientProfile::JavaConsumer => "java-consumer",
            ClientProfile::LibrdkafkaConsumer => "librdkafka-consumer",
        }
    }

    /// Parses a kebab-case name.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::CLASSIC.into_iter().chain(Self::CONSUMER).find(|p| p.name() == name)
    }

    /// The group protocol this client speaks.
    pub fn group_protocol(self) -> GroupProtocol {
        if Self::CONSUMER.contains(&self) {
            GroupProtocol::Consumer
        } else {
            GroupProtocol::Classic
        }
    }

    /// The highest version of each group API this client sends, where it pins one below what
    /// the broker offers (the rest it negotiates up to the highest both sides speak). kafka-go's
    /// `ConsumerGroup` builds fixed request versions (FindCoordinator v0, JoinGroup v1,
    /// SyncGroup v0, Heartbeat v0, LeaveGroup v0, OffsetCommit v2, OffsetFetch v1); brod sends
    /// Heartbeat and LeaveGroup at v0 and negotiates the rest (as Elsa, on brod, does) within
    /// its `brod_kafka_apis` ranges, which stop JoinGroup at v6 and SyncGroup at v3 (so brod
    /// never hears KIP-814's SkipAssignment).
    pub fn pinned_api_versions(self) -> &'static [(ApiKey, i16)] {
        match self {
            ClientProfile::KafkaGo => &[
                (ApiKey::FindCoordinator, 0),
                (ApiKey::JoinGroup, 1),
                (ApiKey::SyncGroup, 0),
                (ApiKey::Heartbeat, 0),
                (ApiKey::LeaveGroup, 0),
                (ApiKey::OffsetCommit, 2),
                (ApiKey::OffsetFetch, 1),
            ],
            ClientProfile::Brod | ClientProfile::Elsa => &[
                (ApiKey::JoinGroup, 6),
                (ApiKey::SyncGroup, 3),
                (ApiKey::Heartbeat, 0),
                (ApiKey::LeaveGroup, 0),
            ],
            _ => &[],
        }
    }

    /// The assignors this client offers by default, in preference order.
    pub fn default_assignors(self) -> Vec<AssignorKind> {
        match self {
            ClientProfile::JavaEager => vec![AssignorKind::Range, AssignorKind::RoundRobin],
            ClientProfile::JavaCooperative => vec![AssignorKind::CooperativeSticky],
            ClientProfile::Brod | ClientProfile::Elsa => vec![AssignorKind::RoundRobinV2],
            ClientProfile::KafkaGo => vec![AssignorKind::Range, AssignorKind::RoundRobin],
            // KIP-848 assigns on the coordinator: no client-side assignor is offered.
            ClientProfile::JavaConsumer | ClientProfile::LibrdkafkaConsumer => Vec::new(),
        }
    }

    /// Whether processing is acknowledged asynchronously (brod, Elsa): a revoke does not wait
    /// for the batch in progress, whose ack may then arrive in a later generation.
    pub fn acks_asynchronously(self) -> bool {
        matches!(self, ClientProfile::Brod | ClientProfile::Elsa)
    }
}

/// Misbehaviours a member can be switched into, each one a realistic client bug the checker must
/// catch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct MemberBugs {
    /// Acks from older generations are applied and committed under the current generation.
    pub keep_stale_acks: bool,
    /// After revoking, the member later commits the revoked partitions' processed offsets under
    /// its new generation.
    pub commit_after_revoke: bool,
    /// No commit on revoke, and commits use the fetch position (records fetched but not yet
    /// processed) instead of the processed position.
    pub skip_revoke_commit_then_overcommit: bool,
    /// The leader's assignment gives one partition to two members.
    pub double_assign: bool,
    /// KAFKA-9823 (apache/kafka#8445). Answers to JoinGroup, SyncGroup, Heartbeat and
    /// OffsetCommit can carry ILLEGAL_GENERATION or UNKNOWN_MEMBER_ID about the generation the
    /// request went out under. The Java consumer did not remember that generation: a late answer
    /// to a request from an older generation reset the generation it had joined since, so a
    /// member that had already moved on dropped its new assignment and rejoined.
    ///
    /// In groupsim: such an error answer resets the current generation (and member id, for
    /// UNKNOWN_MEMBER_ID) even when the request was sent under an older generation or member id,
    /// or before the member was back in a stable generation.
    pub resets_generation_on_stale_response: bool,
    /// KAFKA-13419 (apache/kafka#11451). After a failed SyncGroup the cooperative Java consumer
    /// rejoined still announcing the partitions it owned before, stamped with the generation of
    /// the rebalance it had just failed, a generation in which it owned nothing. The
    /// cooperative-sticky assignor trusted that claim, so a partition could stay with, or go
    /// back to, a member that had no right to it while another member had it too.
    ///
    /// In groupsim (cooperative members only): after a SyncGroup error the member keeps its
    /// owned partitions and their positions, even when the error reset its generation, and its
    /// next JoinGroup claims them with the generation of the failed SyncGroup. The assignor
    /// weighs claims by generation (as Kafka's does), so it shows where the error took the
    /// member out of the group (UNKNOWN_MEMBER_ID): the group gave its partitions to others
    /// meanwhile, it went on processing them, and when an assignment takes them away its revoke
    /// callback commits its stale positions over the new owner's.
    pub keeps_owned_after_sync_error: bool,
    /// librdkafka #3774 (confluentinc/librdkafka#3774). librdkafka keeps one stored-offset slot
    /// per partition, filled by `offsets_store` and read by the auto-committer. Nothing cleared
    /// the slot when the partition was revoked, so when the same partition came back to the
    /// consumer later the auto-committer committed the offset stored before the revoke, lower
    /// than what the partition's owner had committed meanwhile: the group's offset went back.
    ///
    /// In groupsim: the processed offset of a partition given up survives; when the partition
    /// is assigned to the member again, that old offset is its offset to commit until it
    /// processes something new, so the next auto-commit sends it.
    pub commits_stale_stored_offset: bool,
    /// kafka-go #1308 (segmentio/kafka-go#1330). kafka-go hands commits to the generation's
    /// commit loop through a queue. When a generation ended, commits still queued were not
    /// dropped: the next generation's loop picked them up and sent them stamped with the new
    /// generation id, for partitions the member might no longer own, so they passed the
    /// coordinator's generation check.
    ///
    /// In groupsim: progress not yet committed when a generation ends (revoked or lost
    /// partitions) is queued and committed with the member's next auto-commit, under the
    /// generation it is in then.
    pub sends_past_generation_commits: bool,
    /// spring-kafka #3186 (spring-projects/spring-kafka#3189). A commit refused with
    /// REBALANCE_IN_PROGRESS was saved so it could be retried once the rebalance was over.
    /// Later commits of higher offsets succeeded, but the saved one was never dropped: it was
    /// retried when partitions were revoked, succeeded, and moved the committed offset back.
    ///
    /// In groupsim: offsets of a commit refused with REBALANCE_IN_PROGRESS are saved; after the
    /// member's next revoke commit succeeds, the saved offsets are committed too.
    pub retries_superseded_commit: bool,
    /// KAFKA-14024 (apache/kafka#12349). The Java consumer (3.2) made its commit before
    /// rejoining asynchronously and refused to rejoin until that commit had completed; the
    /// commit's completion was never seen (a new commit replaced it on every poll), so the
    /// member never rejoined and was dropped from the group after the rebalance timeout.
    ///
    /// In groupsim: the answer to the commit made before rejoining is lost to the member, which
    /// waits for it for ever: it never sends JoinGroup again.
    pub revoke_commit_never_completes: bool,
    /// KAFKA-18641 (apache/kafka#18737). The Java consumer of KIP-848 (`AsyncKafkaConsumer`)
    /// runs the group protocol on a background thread. Its auto-commit (and the commit before
    /// a revocation) read the consumed positions there while the application thread was still
    /// processing the records the last `poll` had handed it, so a commit could cover records
    /// the application had not processed yet; a crash before it finished lost them, since the
    /// next owner starts at the committed offset.
    ///
    /// In groupsim (`java-consumer` members): the auto-commit and the commit before revocation
    /// take, for a partition with a batch in progress, the offset after that batch.
    pub commits_unprocessed_positions: bool,
    /// A KIP-848 member answered FENCED_MEMBER_EPOCH or UNKNOWN_MEMBER_ID is out of the group:
    /// its partitions are already the coordinator's to give away, so it must drop them as lost
    /// (no commit, `onPartitionsLost`) before it rejoins with epoch 0. A client that rejoins
    /// keeping its partitions and positions goes on consuming them, and once it is back in the
    /// group commits them under its new epoch, over what their new owners committed.
    ///
    /// In groupsim (consumer-protocol members): fencing forgets the assignment the member
    /// reports (its rejoin with epoch 0 reports no partitions, as the coordinator demands:
    /// INVALID_REQUEST otherwise) and rejoins, but keeps the partitions, their positions and
    /// the consumption of them.
    pub keeps_partitions_when_fenced: bool,
    /// kafka-python #2628 (dpkp/kafka-python#2629, fixed in 2.2.9). When the OffsetFetch for
    /// the committed offsets of newly assigned partitions timed out or failed, the consumer went
    /// on as if nothing had been committed and applied `auto_offset_reset`: with `earliest` it
    /// re-consumed partitions from the start although the group had committed far past it; with
    /// `latest` it would jump to the log end and skip what nobody had committed yet.
    ///
    /// In groupsim: an OffsetFetch answered with a group error, or lost to a timeout or a
    /// dropped connection, sends the partitions waiting for their committed offset to
    /// ListOffsets with this reset policy instead of asking again.
    pub resets_position_on_offset_fetch_failure: Option<OffsetReset>,
    /// kafkajs #1390 (tulios/kafkajs#1390; fix proposed in tulios/kafkajs#1598). A JoinGroup
    /// answered COORDINATOR_LOAD_IN_PROGRESS ("The coordinator is loading and hence can't
    /// process requests", code 14) while the consumer rejoined: kafkajs did not count the code
    /// among the errors a rejoin retries, so it escaped the consumer's run loop as an uncaught
    /// exception and the consumer stopped for good, though the coordinator would have
    /// answered a moment later.
    ///
    /// In groupsim (classic members): a JoinGroup answered COORDINATOR_LOAD_IN_PROGRESS stops
    /// the member (a fatal error) instead of backing off and rejoining.
    pub gives_up_on_join_load_in_progress: bool,
    /// KAFKA-14729 (apache/kafka#13270, fixed in 3.5.0). The Java consumer's heartbeat thread
    /// could die on an unexpected error while the application thread went on polling: nothing
    /// surfaced the failure, no heartbeat was sent again, and the consumer kept fetching (its
    /// `pollForFetches` spinning at full CPU) while the coordinator expired its session, again
    /// after every rejoin.
    ///
    /// In groupsim (classic members): the first heartbeat lost to a timeout or a dropped
    /// connection kills the heartbeat "thread": the member never heartbeats again (nor notices
    /// its own session running out), and goes on fetching, processing, committing and, when a
    /// commit is refused, rejoining.
    pub heartbeat_thread_dies: bool,
}

/// `auto.offset.reset`: where a partition with no committed offset starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum OffsetReset {
    /// The earliest offset of the log.
    Earliest,
    /// The log end.
    Latest,
}

impl MemberBugs {
    /// Whether any switch is on.
    pub fn any(&self) -> bool {
        self.keep_stale_acks
            || self.commit_after_revoke
            || self.skip_revoke_commit_then_overcommit
            || self.double_assign
            || self.resets_generation_on_stale_response
            || self.keeps_owned_after_sync_error
            || self.commits_stale_stored_offset
            || self.sends_past_generation_commits
            || self.retries_superseded_commit
            || self.revoke_commit_never_completes
            || self.commits_unprocessed_positions
            || self.keeps_partitions_when_fenced
            || self.resets_position_on_offset_fetch_failure.is_some()
            || self.gives_up_on_join_load_in_progress
            || self.heartbeat_thread_dies
    }
}

fn default_fetch_max_wait_ms() -> i32 {
    500
}

fn default_metadata_max_age_ms() -> u64 {
    300_000
}

impl MemberConfig {
    /// Defaults close to the Java consumer's, with faster commits and a modest session timeout.
    pub fn new(
        group_id: impl Into<String>,
        client_id: impl Into<String>,
        topics: Vec<String>,
    ) -> Self {
        Self {
            group_id: group_id.into(),
            client_id: client_id.into(),
            group_instance_id: None,
            topics,
            bootstrap_node: 0,
            session_timeout_ms: 10_000,
            rebalance_timeout_ms: 30_000,
            heartbeat_interval_ms: 3_000,
            request_timeout_ms: 5_000,
            retry_backoff_ms: 100,
            commit_interval_ms: 1_000,
            assignors: vec![AssignorKind::Range, AssignorKind::RoundRobin],
            max_records_per_fetch: 50,
            fetch_backoff_ms: 100,
            processing_ms_per_record: (1, 5),
            fetch_max_wait_ms: default_fetch_max_wait_ms(),
            metadata_max_age_ms: default_metadata_max_age_ms(),
            profile: ClientProfile::JavaEager,
            server_assignor: None,
            bugs: MemberBugs::default(),
            admin_observer: false,
            invalid_request_prober: false,
        }
    }

    /// Sets the profile and the assignors that client offers by default.
    pub fn with_profile(mut self, profile: ClientProfile) -> Self {
        self.profile = profile;
        self.assignors = profile.default_assignors();
        self
    }
}
