//! The coordinator's coverage probes: rare, bug-prone situations in the group coordinator,
//! named where they happen (`probes::X.hit()`). A sweep counts the seeds that reach each one
//! (`groupsim coverage`); hits are counted outside the history, so adding a probe never changes
//! a run.

groupsim_wire::probes! {
    /// Every group request answered with a non-zero error, by API, group state (or load state)
    /// and error: detail `Api/State/ERROR`.
    ANSWER = optional "coordinator.answer":
        "a group request answered with an error (detail: api/state/error)";
    /// A new dynamic member's JoinGroup was answered MEMBER_ID_REQUIRED with its member id (a
    /// trigger point: lost, the member joins again without an id and the first stays pending).
    MEMBER_ID_REQUIRED_ANSWERED = required "coordinator.join.member_id_required":
        "a new member's JoinGroup answered MEMBER_ID_REQUIRED (its member id on its way)";
    /// OffsetFetch reached the coordinator (a trigger point: a new owner picks its offsets).
    OFFSET_FETCH_RECEIVED = required "coordinator.offset_fetch.received":
        "an OffsetFetch reached the group's coordinator";
    /// OffsetFetch answered COORDINATOR_LOAD_IN_PROGRESS: the group's offsets are still loading.
    OFFSET_FETCH_WHILE_LOADING = required "coordinator.offset_fetch.while_loading":
        "OffsetFetch answered while the group's offsets partition loads";
    /// OffsetCommit answered while the group loads.
    OFFSET_COMMIT_WHILE_LOADING = required "coordinator.offset_commit.while_loading":
        "OffsetCommit answered while the group's offsets partition loads";
    /// JoinGroup, SyncGroup or Heartbeat answered while the group loads.
    GROUP_REQUEST_WHILE_LOADING = required "coordinator.group_request.while_loading":
        "JoinGroup, SyncGroup or Heartbeat answered while the group loads";
    /// A group request reached a broker that no longer coordinates the group.
    NOT_COORDINATOR = required "coordinator.not_coordinator":
        "a group request answered NOT_COORDINATOR (the coordinator moved)";
    /// A parked JoinGroup or SyncGroup was answered NOT_COORDINATOR as the group unloaded.
    PARKED_ANSWERED_ON_UNLOAD = required "coordinator.unload.parked_requests":
        "parked JoinGroup/SyncGroup answered NOT_COORDINATOR when the group unloaded";
    /// OffsetCommit refused for a stale generation: a known member, another generation. Connection
    /// muting orders a member's commit before its own JoinGroup, so a correct client reaches it
    /// when the group moved on without it yet kept it: a static member that misses a join phase
    /// (paused or cut off past the rebalance timeout, within its session) stays in the new
    /// generation and commits with the one it knew.
    COMMIT_STALE_GENERATION = required "coordinator.offset_commit.illegal_generation":
        "OffsetCommit refused with ILLEGAL_GENERATION (a stale generation)";
    /// OffsetCommit refused from a member the group does not know.
    COMMIT_UNKNOWN_MEMBER = required "coordinator.offset_commit.unknown_member":
        "OffsetCommit refused with UNKNOWN_MEMBER_ID";
    /// OffsetCommit refused because the group is rebalancing.
    COMMIT_DURING_REBALANCE = required "coordinator.offset_commit.rebalance_in_progress":
        "OffsetCommit refused with REBALANCE_IN_PROGRESS (the group is completing a rebalance)";
    /// A SyncGroup arrived while the group was back in PreparingRebalance.
    SYNC_IN_PREPARING_REBALANCE = required "coordinator.sync.in_preparing_rebalance":
        "SyncGroup answered REBALANCE_IN_PROGRESS (a new rebalance began)";
    /// A Heartbeat told a member to rejoin.
    HEARTBEAT_REBALANCE_IN_PROGRESS = required "coordinator.heartbeat.rebalance_in_progress":
        "Heartbeat answered REBALANCE_IN_PROGRESS";
    /// A member removed because it never sent SyncGroup after its JoinGroup answer.
    REMOVED_NEVER_SYNCED = optional "coordinator.member.removed_never_synced":
        "a member removed because it never synced in CompletingRebalance";
    /// A member removed because its session expired.
    REMOVED_SESSION_TIMEOUT = required "coordinator.member.removed_session_timeout":
        "a member removed because its session expired";
    /// A member removed because it did not rejoin before the rebalance timeout.
    REMOVED_REBALANCE_TIMEOUT = required "coordinator.member.removed_rebalance_timeout":
        "a member removed because it did not rejoin within the rebalance timeout";
    /// A pending member (told MEMBER_ID_REQUIRED) never came back.
    PENDING_MEMBER_EXPIRED = required "coordinator.member.pending_expired":
        "a pending member expired without completing its join";
    /// The leader left, crashed or stopped heartbeating while the group was completing a
    /// rebalance: the group must go back to PreparingRebalance.
    LEADER_LOST_IN_COMPLETING_REBALANCE = required "coordinator.leader.lost_in_completing_rebalance":
        "the leader was removed while the group was in CompletingRebalance";
    /// A static member replaced by a new instance with the same group.instance.id.
    STATIC_MEMBER_REPLACED = optional "coordinator.static.replaced":
        "a static member's instance id taken over by a new member id";
    /// An offsets-log append completed after the committing member left or its generation
    /// ended (the commit was validated while the member still belonged, and lands all the same,
    /// as in Kafka): a member that commits just before the rebalance timeout removes it.
    APPEND_OUTLIVED_MEMBER = required "coordinator.offset_commit.append_outlived_member":
        "an offsets-log append completed after its member or generation ended";
    /// A load finished for a group whose last logged activity (its stored snapshot or a
    /// commit) is older than a session timeout: its members, silent in the log for that long,
    /// get fresh deadlines, as in Kafka. (The log is all a new coordinator knows of them, so this
    /// stands in for "sessions that ran out during the move".)
    LOAD_WITH_STALE_MEMBERS = optional "coordinator.load.members_silent_during_move":
        "a group loaded whose last logged activity is older than a session timeout";
    /// A leader's assignment was appended to the offsets log after its generation was
    /// abandoned (a member joined, or one left, while the append was being replicated): it takes
    /// no effect, but the record is in the log, and a coordinator that loads the group before the
    /// next generation is stored loads this one.
    ASSIGNMENT_WRITTEN_FOR_ABANDONED_GENERATION = optional "coordinator.sync.assignment_written_for_abandoned_generation":
        "a leader's assignment appended after its generation was abandoned";
    // ---- KIP-848 consumer groups: required where consumer_protocol_churn / _static reach them;
    // the rest wait for a faulted consumer-protocol scenario (coordinator moves, lost answers) ----
    /// Every ConsumerGroupHeartbeat answered with an error: detail `ERROR`.
    CONSUMER_HEARTBEAT_ERROR = optional "coordinator.consumer.heartbeat_error":
        "a ConsumerGroupHeartbeat answered with an error (detail: error)";
    /// A heartbeat's member epoch was fenced (ahead, or behind other than the previous epoch).
    CONSUMER_FENCED_MEMBER_EPOCH = optional "coordinator.consumer.fenced_member_epoch":
        "a ConsumerGroupHeartbeat answered FENCED_MEMBER_EPOCH";
    /// A dynamic member the group holds rejoined at epoch 0 (fenced on its side, it gave its
    /// partitions up): accepted with its current state (KAFKA-19233's fix).
    CONSUMER_REJOIN_KNOWN_MEMBER = optional "coordinator.consumer.rejoin_known_member":
        "a member the group holds rejoined with member epoch 0";
    /// A heartbeat at the member's previous epoch was accepted (its last answer was lost).
    CONSUMER_PREVIOUS_EPOCH_ACCEPTED = optional "coordinator.consumer.previous_epoch_accepted":
        "a heartbeat at the previous member epoch accepted";
    /// A member joined a group already at its maximum size.
    CONSUMER_GROUP_MAX_SIZE = optional "coordinator.consumer.group_max_size":
        "a ConsumerGroupHeartbeat answered GROUP_MAX_SIZE_REACHED";
    /// A static member joined with an instance id still held by a member that did not leave.
    CONSUMER_UNRELEASED_INSTANCE_ID = required "coordinator.consumer.unreleased_instance_id":
        "a ConsumerGroupHeartbeat answered UNRELEASED_INSTANCE_ID";
    /// A static member's new member id took over an instance id (temporary leave before).
    CONSUMER_STATIC_REPLACED = required "coordinator.consumer.static_replaced":
        "a static consumer group member replaced by a new member id";
    /// A static member left temporarily (member epoch -2).
    CONSUMER_STATIC_TEMPORARY_LEAVE = required "coordinator.consumer.static_temporary_leave":
        "a static consumer group member left with epoch -2";
    /// A member was fenced because its session ran out.
    CONSUMER_FENCED_SESSION_TIMEOUT = required "coordinator.consumer.fenced_session_timeout":
        "a consumer group member fenced by its session timeout";
    /// A member was fenced because it did not revoke within its rebalance timeout.
    CONSUMER_FENCED_REBALANCE_TIMEOUT = optional "coordinator.consumer.fenced_rebalance_timeout":
        "a consumer group member fenced by its rebalance timeout";
    /// A new target assignment was computed.
    CONSUMER_TARGET_COMPUTED = required "coordinator.consumer.target_computed":
        "a consumer group target assignment computed";
    /// Reconciliation asked a member to revoke partitions.
    CONSUMER_RECONCILE_REVOKE = required "coordinator.consumer.reconcile.revoke":
        "reconciliation moved a member to UNREVOKED_PARTITIONS";
    /// A member acknowledged its revocation and moved on.
    CONSUMER_RECONCILE_REVOKED = required "coordinator.consumer.reconcile.revoked":
        "a member left UNREVOKED_PARTITIONS after acknowledging its revocation";
    /// A member waits for partitions another member has not released yet.
    CONSUMER_RECONCILE_UNRELEASED = required "coordinator.consumer.reconcile.unreleased":
        "reconciliation left a member in UNRELEASED_PARTITIONS";
    /// A partition pending revocation came back to the member revoking it (a newer target
    /// gave it back): the bookkeeping KAFKA-16147 got wrong.
    CONSUMER_RECONCILE_RECLAIMED = optional "coordinator.consumer.reconcile.reclaimed":
        "a partition pending revocation was given back to the member revoking it";
    /// A member's epoch moved to the target epoch.
    CONSUMER_RECONCILE_EPOCH_ADVANCED = required "coordinator.consumer.reconcile.epoch_advanced":
        "a member's epoch advanced to the target assignment epoch";
    /// OffsetCommit from a member unknown to its consumer group.
    CONSUMER_COMMIT_UNKNOWN_MEMBER = required "coordinator.consumer.commit_unknown_member":
        "an OffsetCommit to a consumer group answered UNKNOWN_MEMBER_ID";
    /// OffsetCommit at another member epoch.
    CONSUMER_COMMIT_STALE_MEMBER_EPOCH = optional "coordinator.consumer.commit_stale_member_epoch":
        "an OffsetCommit to a consumer group answered STALE_MEMBER_EPOCH";
    /// OffsetFetch at another member epoch.
    CONSUMER_FETCH_STALE_MEMBER_EPOCH = optional "coordinator.consumer.fetch_stale_member_epoch":
        "an OffsetFetch of a consumer group answered STALE_MEMBER_EPOCH";
    // ---- online migration between the protocols (optional until `protocol_migration` runs) ----
    /// A ConsumerGroupHeartbeat joining a classic group with members converted it (upgrade).
    MIGRATION_UPGRADE = optional "coordinator.migration.upgrade":
        "a classic group upgraded to a consumer group by a joining consumer-protocol member";
    /// An upgrade found the classic group rebalancing: its parked JoinGroup/SyncGroup requests
    /// were answered REBALANCE_IN_PROGRESS (detail: the classic state).
    MIGRATION_UPGRADE_DURING_REBALANCE = optional "coordinator.migration.upgrade_during_rebalance":
        "a classic group upgraded while rebalancing (detail: state)";
    /// An upgrade was refused: GROUP_ID_NOT_FOUND (detail: policy, protocol, size, malformed).
    MIGRATION_UPGRADE_REFUSED = optional "coordinator.migration.upgrade_refused":
        "a consumer-protocol join to a classic group refused (detail: reason)";
    /// The last consumer-protocol member left a group of classic members: downgraded
    /// (detail: why it left).
    MIGRATION_DOWNGRADE = optional "coordinator.migration.downgrade":
        "a consumer group downgraded to a classic group (detail: removal reason)";
    /// A downgrade was due but not allowed (detail: policy, size).
    MIGRATION_DOWNGRADE_REFUSED = optional "coordinator.migration.downgrade_refused":
        "the last consumer-protocol member left but the group stays a consumer group (detail: reason)";
    /// A consumer group with classic members was loaded (the coordinator moved mid-migration).
    MIGRATION_LOADED_MIXED_GROUP = optional "coordinator.migration.loaded_mixed_group":
        "a consumer group with classic-protocol members rebuilt from the offsets log";
    /// A classic JoinGroup served by a consumer group (detail: the member's reconciliation state).
    CLASSIC_IN_CONSUMER_JOIN = optional "coordinator.classic_in_consumer.join":
        "a JoinGroup served by a consumer group (detail: member state after it)";
    /// A classic request to a consumer group refused (detail: `Api/ERROR`).
    CLASSIC_IN_CONSUMER_ERROR = optional "coordinator.classic_in_consumer.error":
        "a classic request to a consumer group answered with an error (detail: api/error)";
    /// A classic member told to rejoin (REBALANCE_IN_PROGRESS on Heartbeat or SyncGroup; detail:
    /// why: epoch behind, revoking, unreleased partitions now free).
    CLASSIC_IN_CONSUMER_REJOIN = optional "coordinator.classic_in_consumer.rejoin":
        "a classic member of a consumer group told to rejoin (detail: reason)";
    /// A classic member fenced for not rejoining within its rebalance timeout.
    CLASSIC_IN_CONSUMER_JOIN_TIMEOUT = optional "coordinator.classic_in_consumer.join_timeout":
        "a classic member of a consumer group fenced by its join timeout";
    /// A classic member fenced for not syncing within its rebalance timeout.
    CLASSIC_IN_CONSUMER_SYNC_TIMEOUT = optional "coordinator.classic_in_consumer.sync_timeout":
        "a classic member of a consumer group fenced by its sync timeout";
    /// A classic member left a consumer group with LeaveGroup.
    CLASSIC_IN_CONSUMER_LEAVE = optional "coordinator.classic_in_consumer.leave":
        "a classic member left a consumer group with LeaveGroup";
}
