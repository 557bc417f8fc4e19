//! Coordinator configuration: Kafka's group.* broker settings.

use serde::{Deserialize, Serialize};

/// Broker-side group settings, named after Kafka's (`group.min.session.timeout.ms`, …).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CoordinatorConfig {
    /// This broker's node id (reported as the coordinator in FindCoordinator answers).
    pub node_id: i32,
    /// `group.min.session.timeout.ms`: smallest session timeout a member may ask for.
    pub min_session_timeout_ms: i32,
    /// `group.max.session.timeout.ms`: largest session timeout a member may ask for.
    pub max_session_timeout_ms: i32,
    /// `group.initial.rebalance.delay.ms`: how long a new (Empty) group waits for more members
    /// before completing its first rebalance; bounded by the rebalance timeout.
    pub initial_rebalance_delay_ms: i32,
    /// `group.max.size`: most members a group may hold.
    pub group_max_size: i32,
    /// How long a new member waiting in a join phase has before it is dropped (Kafka: 5
    /// minutes). A member told MEMBER_ID_REQUIRED has its JoinGroup's session timeout instead.
    pub new_member_join_timeout_ms: i32,
    /// How long an append to the offsets log takes to be replicated (Kafka waits for the ISR
    /// before completing a commit or storing a group). 0 completes appends at once.
    #[serde(default = "default_offsets_append_delay_ms")]
    pub offsets_append_delay_ms: u64,
    /// `group.consumer.session.timeout.ms`: a consumer group member's session (KIP-848).
    #[serde(default = "default_consumer_session_timeout_ms")]
    pub consumer_session_timeout_ms: i32,
    /// `group.consumer.heartbeat.interval.ms`: the interval returned to consumer group members.
    #[serde(default = "default_consumer_heartbeat_interval_ms")]
    pub consumer_heartbeat_interval_ms: i32,
    /// `group.consumer.max.size`: most members a consumer group may hold.
    #[serde(default = "default_consumer_group_max_size")]
    pub consumer_group_max_size: i32,
    /// `group.consumer.migration.policy`: which online conversions between a classic group and
    /// a consumer group are allowed (empty groups convert whatever this says).
    #[serde(default)]
    pub consumer_migration_policy: MigrationPolicy,
    /// Deliberate coordinator bugs, to show the checker catches them. All off by default.
    #[serde(default)]
    pub bugs: CoordinatorBugs,
}

/// Kafka's `group.consumer.migration.policy` (ConsumerGroupMigrationPolicy): whether a non-empty
/// classic group may be upgraded to a consumer group when a consumer-protocol member joins it,
/// and whether a consumer group whose last consumer-protocol member leaves may be downgraded back
/// to a classic group. Conversions of empty groups are always allowed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MigrationPolicy {
    /// Both directions (Kafka's default).
    #[default]
    Bidirectional,
    /// Only classic to consumer.
    Upgrade,
    /// Only consumer to classic.
    Downgrade,
    /// Neither.
    Disabled,
}

impl MigrationPolicy {
    /// Whether a non-empty classic group may become a consumer group.
    pub fn upgrade_enabled(self) -> bool {
        matches!(self, MigrationPolicy::Bidirectional | MigrationPolicy::Upgrade)
    }

    /// Whether a consumer group of classic members may become a classic group.
    pub fn downgrade_enabled(self) -> bool {
        matches!(self, MigrationPolicy::Bidirectional | MigrationPolicy::Downgrade)
    }
}

fn default_offsets_append_delay_ms() -> u64 {
    2
}

fn default_consumer_session_timeout_ms() -> i32 {
    45_000
}

fn default_consumer_heartbeat_interval_ms() -> i32 {
    5_000
}

fn default_consumer_group_max_size() -> i32 {
    i32::MAX
}

/// Switches that break the coordinator on purpose (issue 5): each makes a class of anomaly
/// possible so a test can show the checker reports it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CoordinatorBugs {
    /// OffsetCommit is accepted whatever the generation and member id: a zombie (a member
    /// removed from the group, or one that missed a rebalance) gets its commit in.
    #[serde(default)]
    pub skip_commit_generation_check: bool,
    /// A commit is acknowledged and cached before its append to the offsets log completes: a
    /// broker crash in between loses an acknowledged commit.
    #[serde(default)]
    pub ack_commit_before_log_append: bool,
    /// robot-head/crabka#521 (a KIP-848 coordinator of a Kafka-compatible broker, found by its
    /// model checker). KIP-848 lets a member move to a new target only by steps: it first gives
    /// up what moves away, and a partition reaches its new owner only once the previous owner
    /// has released it (Kafka's CurrentAssignmentBuilder checks each partition's owner epoch).
    /// That coordinator answered every heartbeat with the member's whole target, withholding
    /// nothing: during a rebalance that moved a partition between two live members, the new
    /// owner was told to take it while the old owner was still consuming it.
    ///
    /// In groupsim (consumer groups): reconciliation treats every target partition as free, so
    /// a member gets partitions another member still owns (assigned or pending revocation), and
    /// the owner epochs move to the new owner at once.
    #[serde(default)]
    pub assigns_unreleased_partitions: bool,
    /// KAFKA-16147 (apache/kafka#15212). The coordinator tracks, per partition, the epoch of
    /// the member owning it, and hands a partition to a new owner only when no member does.
    /// When a member had a partition pending revocation given back to it by a newer target
    /// before the revocation completed, the bookkeeping removed the partition's owner epoch
    /// and never put it back: the partition read as free while the member still owned it, and
    /// the next target that moved it elsewhere handed it to its new owner at once, while the
    /// old owner was only then told to revoke it. A partition was owned by two members.
    ///
    /// In groupsim (consumer groups): when a member's partition moves from pending revocation
    /// back to its assigned partitions, the owner epoch of that partition is forgotten.
    #[serde(default)]
    pub forgets_owner_of_reclaimed_partition: bool,
    /// KAFKA-19233 (apache/kafka#21305). KIP-848 lets a fenced member rejoin with member epoch
    /// 0 and the member id it had: the Java consumer (since KIP-1082) and librdkafka both do,
    /// after giving their partitions up as lost. Kafka's throwIfConsumerGroupMemberEpochIsInvalid
    /// judged that 0 like any other epoch: behind the member's epoch on the server and not its
    /// previous one, so FENCED_MEMBER_EPOCH. The client rejoined again at 0 and was fenced
    /// again, and refused heartbeats do not refresh a session, so the loop ran until the
    /// member's session timed out; all that time the group held its partitions for it, assigned
    /// on the server and consumed by nobody. The fix returns early for epoch 0: a rejoin,
    /// reconciled from the member's current state with what it reports owned (nothing), and
    /// answered in full with its epoch and assignment.
    ///
    /// In groupsim (consumer groups): a dynamic member's heartbeat at epoch 0 naming a member
    /// id the group holds is validated like any other epoch: fenced unless 0 is the member's
    /// previous epoch (the retry of a first join whose answer was lost). Static members'
    /// epoch-0 joins are unaffected (UNRELEASED_INSTANCE_ID, as in Kafka today).
    #[serde(default)]
    pub fences_rejoin_at_epoch_zero: bool,
    /// A classic Heartbeat is checked for a known member id but not for its generation. Kafka
    /// answers a heartbeat of another generation than the group's ILLEGAL_GENERATION
    /// (GroupMetadataManager's validateClassicGroupHeartbeat; before KAFKA-2557, apache/kafka#222,
    /// the first coordinator folded that check into REBALANCE_IN_PROGRESS, which sends the member
    /// back to join too). A coordinator that skips it keeps a member that missed its JoinGroup
    /// answer (the connection dropped as the answer left, or it was paused past the join)
    /// believing it still holds its previous generation's partitions: it never rejoins or syncs,
    /// its commits are refused, and it goes on consuming partitions the new generation gave to
    /// others while the partitions the new generation gave it stay unconsumed.
    ///
    /// In groupsim (classic groups): a Heartbeat from a member of the group at another generation
    /// is answered as the group's own generation would be (NONE when Stable).
    #[serde(default)]
    pub accepts_heartbeat_of_any_generation: bool,
    /// A classic member's session timer keeps every member that ever completed a join, as if it
    /// were still awaiting one. Kafka keeps a member past its session only while a JoinGroup or
    /// SyncGroup of it is parked (ClassicGroupMember `hasSatisfiedHeartbeat`; the Scala
    /// coordinator's `heartbeatSatisfied` flag, which every rescheduling cleared); a coordinator
    /// that leaves the flag set once a join completed never expires a silent member. A member
    /// that was paused past its session comes back, heartbeats at its old generation and is
    /// told all is well (Kafka: UNKNOWN_MEMBER_ID, and it rejoins), and a crashed member keeps
    /// its partitions until someone else rebalances the group.
    ///
    /// In groupsim (classic groups): a member whose session runs out while it awaits nothing is
    /// kept and its session re-armed, unless it never completed a join.
    #[serde(default)]
    pub keeps_silent_members_alive: bool,
    /// A classic JoinGroup v4 or later from a new dynamic member (no member id, no instance id)
    /// is admitted at once, as before KIP-394, instead of answered MEMBER_ID_REQUIRED with the id
    /// to rejoin with. Kafka asks since 2.2 (KAFKA-7610): a client whose first JoinGroup answer
    /// is lost retries with no member id and becomes a second member, while the first sits in the
    /// group as a ghost that every rebalance waits for until its session runs out. The member id
    /// round trip (KAFKA-7824, apache/kafka#6058) makes the coordinator hand out an id only to a
    /// client that shows it has it.
    ///
    /// In groupsim (classic groups): a new dynamic member's JoinGroup at any version joins the
    /// group directly, as a v0–v3 one does.
    #[serde(default)]
    pub admits_unknown_member_id: bool,
    /// A classic request from a static member whose `group.instance.id` another member id now
    /// holds is judged by its member id alone and answered UNKNOWN_MEMBER_ID, as before
    /// KAFKA-8225 (apache/kafka#6650, KIP-345 part 2), instead of FENCED_INSTANCE_ID. The two
    /// mean opposite things to the client: UNKNOWN_MEMBER_ID sends it back to join under its
    /// instance id, which takes the instance from its new holder, whose next request is then
    /// refused the same way; two processes given one instance id (a misconfigured deployment,
    /// or a paused process and its replacement) take the instance from each other at every
    /// heartbeat, each join a rebalance, where FENCED_INSTANCE_ID stops the stale one for good.
    ///
    /// In groupsim (classic groups): Heartbeat, SyncGroup, OffsetCommit, LeaveGroup and a
    /// JoinGroup with a member id skip the instance check.
    #[serde(default)]
    pub forgets_fenced_instances: bool,
    /// A KIP-848 member's session is restarted only by a ConsumerGroupHeartbeat that changes
    /// the member (a join, a new member epoch, a reconciliation step), not by one that only
    /// says it is alive. Kafka restarts it on every heartbeat it takes
    /// (GroupMetadataManager `scheduleConsumerGroupSessionTimeout` on each
    /// `consumerGroupHeartbeat`), which is the heartbeat's whole point. A coordinator that ties
    /// the restart to a change fences every steady member one session after its last change,
    /// though it heartbeats on time: its partitions are revoked and reassigned, it rejoins at
    /// epoch 0 and is fenced again a session later, for as long as the group stays steady.
    ///
    /// In groupsim (consumer groups): a heartbeat from a known member that leaves its member
    /// epoch, state and assignment as they were keeps the session deadline it had.
    #[serde(default)]
    pub restarts_session_only_on_change: bool,
}

impl Default for CoordinatorConfig {
    fn default() -> Self {
        Self {
            node_id: 0,
            min_session_timeout_ms: 6_000,
            max_session_timeout_ms: 1_800_000,
            initial_rebalance_delay_ms: 3_000,
            group_max_size: i32::MAX,
            new_member_join_timeout_ms: 300_000,
            offsets_append_delay_ms: default_offsets_append_delay_ms(),
            consumer_session_timeout_ms: default_consumer_session_timeout_ms(),
            consumer_heartbeat_interval_ms: default_consumer_heartbeat_interval_ms(),
            consumer_group_max_size: default_consumer_group_max_size(),
            consumer_migration_policy: MigrationPolicy::default(),
            bugs: CoordinatorBugs::default(),
        }
    }
}
