//! The member's coverage probes: rare, bug-prone situations on the client side of a rebalance,
//! named where they happen (`probes::X.hit()`). A sweep counts the seeds that reach each one
//! (`groupsim coverage`); hits are counted outside the history, so adding a probe never changes
//! a run.

groupsim_wire::probes! {
    /// Every error code a member handled, by client profile and API: detail
    /// `profile/Api/ERROR`.
    ERROR_HANDLED = optional "member.error":
        "an error answer handled (detail: profile/api/error)";
    /// An admin client's ConsumerGroupDescribe was answered GROUP_ID_NOT_FOUND (a classic
    /// group) and it described the group again with DescribeGroups.
    ADMIN_DESCRIBE_FALLBACK = required "member.admin.describe_fallback":
        "an admin client fell back from ConsumerGroupDescribe to DescribeGroups";
    /// A member began revoking partitions (a trigger point).
    REVOKE_STARTED = required "member.rebalance.revoke_started":
        "a member began revoking partitions (callback and commit under way)";
    /// A member started processing a batch (a trigger point).
    PROCESSING_STARTED = required "member.processing.batch_started":
        "a member started processing a batch of records";
    /// A member (re)joined while one of its commits was still in flight.
    REJOIN_WITH_COMMIT_IN_FLIGHT = required "member.rejoin.commit_in_flight":
        "a JoinGroup sent while an OffsetCommit was in flight";
    /// An OffsetCommit's answer never arrived (connection lost or timed out): the coordinator
    /// may have applied it.
    COMMIT_ANSWER_LOST = required "member.commit.answer_lost":
        "an OffsetCommit whose answer never arrived (the coordinator may have applied it)";
    /// The member learned it was out of the group while its revoke callback ran.
    SESSION_LOST_DURING_REVOKE = required "member.revoke.session_lost":
        "the member was fenced or lost its session while revoking";
    /// An ack (processing result) arrived for a generation older than the previous one.
    ACK_OLDER_THAN_PREVIOUS_GENERATION = optional "member.ack.older_than_previous_generation":
        "a processing ack carried a generation older than the previous one";
    /// A stale ack (a generation behind) arrived.
    STALE_ACK = required "member.ack.stale_generation":
        "a processing ack carried a generation older than the current one";
    /// A cooperative rebalance began while a retained partition had progress not yet committed.
    COOPERATIVE_REBALANCE_WITH_PROGRESS = required "member.cooperative.rebalance_with_uncommitted_progress":
        "a cooperative rebalance began while a kept partition had uncommitted progress";
    /// FindCoordinator answered with an error or failed (a broker failing over).
    DISCOVERY_FAILED = required "member.discovery.failed":
        "FindCoordinator failed or answered an error (coordinator failing over)";
    /// A fetch went to a broker that no longer leads the partition.
    FETCH_STALE_LEADER = required "member.fetch.stale_leader":
        "a Fetch answered with a leadership error (a stale partition leader)";
    /// The leader got a JoinGroup answer naming topics it has no metadata for (other members
    /// subscribe to them) and waits for their metadata before it assigns.
    LEADER_AWAITS_METADATA = required "member.leader.awaits_metadata":
        "the leader fetched metadata for topics only other members subscribe to before assigning";
    /// A replaced static leader was told to skip the assignment (KIP-814) and kept the
    /// generation's, watching the members' topics.
    LEADER_SKIPS_ASSIGNMENT = required "member.leader.skips_assignment":
        "a replaced static leader skipped the assignment (KIP-814) and kept the generation's";
    /// kafka-go ended a failed rebalance round: LeaveGroup if it had a member id, the id given
    /// up, the next JoinGroup after its join backoff.
    ROUND_GIVEN_UP = required "member.round.given_up":
        "a kafka-go member gave its member id up after a failed JoinGroup, leader Metadata, SyncGroup or offset fetch";
    /// A generation reset: the member forgets its generation (and maybe member id) and rejoins.
    GENERATION_RESET = required "member.generation.reset":
        "the member reset its generation after a group error";
    /// Consumer protocol: a heartbeat answer was FENCED_MEMBER_EPOCH.
    CONSUMER_FENCED_EPOCH = optional "member.consumer.heartbeat.fenced_member_epoch":
        "a ConsumerGroupHeartbeat answered FENCED_MEMBER_EPOCH (partitions lost, rejoin at 0)";
    /// Consumer protocol: a heartbeat answer was UNKNOWN_MEMBER_ID.
    CONSUMER_UNKNOWN_MEMBER = required "member.consumer.heartbeat.unknown_member_id":
        "a ConsumerGroupHeartbeat answered UNKNOWN_MEMBER_ID (partitions lost, rejoin at 0)";
    /// Consumer protocol: a heartbeat answer told the member to find its coordinator again.
    CONSUMER_HEARTBEAT_COORDINATOR_MOVED = optional "member.consumer.heartbeat.coordinator_moved":
        "a ConsumerGroupHeartbeat answered NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE";
    /// Consumer protocol: a heartbeat answer was COORDINATOR_LOAD_IN_PROGRESS.
    CONSUMER_HEARTBEAT_LOADING = optional "member.consumer.heartbeat.load_in_progress":
        "a ConsumerGroupHeartbeat answered COORDINATOR_LOAD_IN_PROGRESS (retry after backoff)";
    /// Consumer protocol: a heartbeat answer was a fatal error.
    CONSUMER_HEARTBEAT_FATAL = required "member.consumer.heartbeat.fatal":
        "a ConsumerGroupHeartbeat answered a fatal error (UNRELEASED_INSTANCE_ID, ...)";
    /// Consumer protocol: a heartbeat got no answer (timeout or disconnect).
    CONSUMER_HEARTBEAT_LOST = optional "member.consumer.heartbeat.no_answer":
        "a ConsumerGroupHeartbeat got no answer (timeout or disconnect)";
    /// Consumer protocol: the target assignment named a topic id Metadata did not know yet.
    CONSUMER_UNRESOLVED_TOPIC = optional "member.consumer.reconcile.unresolved_topic_id":
        "a target assignment named a topic id not in Metadata (metadata refresh)";
    /// Consumer protocol: the commit before a reconciliation (Java) or after the revoke
    /// callback (librdkafka) was sent.
    CONSUMER_RECONCILE_COMMIT = required "member.consumer.reconcile.commit":
        "a reconciliation committed before giving partitions up";
    /// Consumer protocol: a reconciliation revoked partitions (revoke callback under way).
    CONSUMER_RECONCILE_REVOKE = required "member.consumer.reconcile.revoke":
        "a reconciliation revoked partitions";
    /// Consumer protocol: a reconciliation assigned partitions.
    CONSUMER_RECONCILE_ASSIGN = required "member.consumer.reconcile.assign":
        "a reconciliation assigned new partitions";
    /// Consumer protocol: a heartbeat acknowledged a reconciled assignment.
    CONSUMER_RECONCILE_ACK = required "member.consumer.reconcile.ack":
        "a heartbeat acknowledged a reconciled assignment (owned partitions sent)";
    /// Consumer protocol: a new target arrived while a reconciliation was under way.
    CONSUMER_TARGET_DURING_RECONCILE = optional "member.consumer.reconcile.new_target_during":
        "a new target assignment arrived while a reconciliation was under way";
    /// Consumer protocol: an OffsetCommit answered STALE_MEMBER_EPOCH.
    CONSUMER_STALE_EPOCH_COMMIT = optional "member.consumer.commit.stale_member_epoch":
        "an OffsetCommit answered STALE_MEMBER_EPOCH";
    /// Consumer protocol: a member gave up partitions it was asked to revoke; the heartbeat
    /// acknowledging it goes out next (a trigger point).
    CONSUMER_REVOCATION_DONE = optional "member.consumer.reconcile.revocation_done":
        "a member gave up revoked partitions; its acknowledging heartbeat goes out next";
    /// Consumer protocol: a fenced member (FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID) gave its
    /// partitions up and rejoins with epoch 0 (a trigger point).
    CONSUMER_FENCED_REJOINING = optional "member.consumer.heartbeat.fenced_rejoining":
        "a fenced member gave its partitions up and rejoins with epoch 0";
    /// Consumer protocol: the commit before revocation ran out of the rebalance timeout.
    CONSUMER_REVOKE_COMMIT_TIMED_OUT = optional "member.consumer.reconcile.commit_timed_out":
        "the commit before revocation gave up at the rebalance timeout";
    /// Consumer protocol: a batch ran past `max.poll.interval.ms`; the member sent its leave
    /// heartbeat and went STALE with its partitions lost.
    CONSUMER_POLL_EXPIRED_STALE = required "member.consumer.poll_expired_stale":
        "a member's poll timer expired: it left the group and went stale";
    /// A member joined a generation (or took a target assignment) that gives it nothing: more
    /// members than partitions, it idles in the group.
    IDLE_MEMBER = required "member.assignment.idle":
        "a member in the group was given no partition (more members than partitions)";
    /// Consumer protocol: a stale member polled again and rejoins with epoch 0.
    CONSUMER_STALE_REJOINING = required "member.consumer.stale_rejoining":
        "a stale member polled again and rejoins with epoch 0";
}

/// Counts an error answer the member handled: `member.error:profile/Api/ERROR` (`api` as Kafka
/// names it). A zero code (no error) is not counted. The detail is only formatted while a run
/// records probes.
pub(crate) fn error_handled(profile: crate::ClientProfile, api: &str, code: i16) {
    if code != groupsim_wire::error_codes::NONE {
        ERROR_HANDLED.hit_as(ErrorDetail { profile, api, code });
    }
}

/// The detail of an [`ERROR_HANDLED`] hit, formatted lazily.
struct ErrorDetail<'a> {
    profile: crate::ClientProfile,
    api: &'a str,
    code: i16,
}

impl std::fmt::Display for ErrorDetail<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let error = groupsim_wire::error_name(self.code);
        write!(f, "{:?}/{}/{error}", self.profile, self.api)
    }
}

/// Counts each of `codes` that is an error, as [`error_handled`] does: the per-partition (or
/// per-topic) errors of one answer.
pub(crate) fn errors_handled(
    profile: crate::ClientProfile,
    api: &str,
    codes: impl IntoIterator<Item = i16>,
) {
    for code in codes {
        error_handled(profile, api, code);
    }
}
