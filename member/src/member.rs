//! The member state machine: a sans-IO model of a consumer-group client — its group
//! membership (eager, or incremental cooperative per KIP-429), offset initialisation,
//! fetch/process loop and commit policy — shaped by its [`ClientProfile`] (Java eager, Java
//! cooperative, brod, Elsa, kafka-go) and its [`Application`].
//!
//! Everything the member does comes from one reconciliation step (`drive`): after every input
//! (a response, a failure, a timer, `start`, `leave`, an injected fault) the member looks at its
//! state and sends whatever requests that state calls for. This mirrors the Java consumer's
//! `poll()` loop, which on each call ensures the coordinator is known, rejoins if needed,
//! commits if due and sends fetches, and keeps every decision in one place.
//!
//! Profiles differ in a few places, each marked where it happens: the steps before giving
//! partitions up (`prepare_revoke`: wait for or detach the batch in progress, commit before or
//! after the revoke callback, or not at all), how acks of work that outlived its generation are
//! treated (`finish_processing`), join retry timing (`join_backoff`), member id resets, and
//! which metadata changes trigger a rejoin.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use groupsim_wire::consumer_protocol::{
    decode_assignment, decode_subscription, encode_assignment, encode_subscription, Assignment,
    Subscription,
};
use groupsim_wire::records::offsets_in;
use groupsim_wire::{error_codes as codes, error_name};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::leave_group_request::MemberIdentity;
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopics,
};
use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use kafka_protocol::messages::{
    BrokerId, FetchRequest, FetchResponse, FindCoordinatorRequest, FindCoordinatorResponse,
    GroupId, HeartbeatRequest, JoinGroupRequest, JoinGroupResponse, LeaveGroupRequest,
    ListOffsetsRequest, ListOffsetsResponse, MetadataRequest, MetadataResponse,
    OffsetCommitRequest, OffsetCommitResponse, OffsetFetchRequest, OffsetFetchResponse,
    RequestKind, ResponseKind, SyncGroupRequest, SyncGroupResponse, TopicName,
};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::assignor::StickyUserData;
use crate::compat::sb;
use crate::{
    Application, Assignor, ClientProfile, MemberConfig, MemberEvent, Millis, ProfileApplication,
    RequestId, TopicPartition,
};

/// Which connection a request travels on. Like the Java client, a member keeps a separate
/// connection to its coordinator even when the coordinator is also a partition leader.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Target {
    /// The ordinary connection to broker `node_id` (Metadata, FindCoordinator, ListOffsets, Fetch).
    Broker(i32),
    /// The coordinator connection to broker `node_id` (group APIs, OffsetFetch, OffsetCommit).
    Coordinator(i32),
}

/// Why a request got no answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RequestFailure {
    /// No answer within the request's timeout; the driver has dropped the connection.
    Timeout,
    /// The connection failed or closed before the answer arrived (or could not be opened).
    Disconnected,
    /// The broker does not support this request at any version the client knows.
    Unsupported(String),
}

/// What a member asks its driver to do.
#[derive(Clone, Debug, PartialEq)]
pub enum MemberOutput {
    /// Send `request` on `target`'s connection; report its answer or failure under `id`.
    /// If no answer comes within `timeout_ms`, close the connection and report `Timeout`.
    Send { id: RequestId, target: Target, request: RequestKind, timeout_ms: u64 },
    /// Close this connection (every request in flight on it fails with `Disconnected`).
    Close(Target),
    /// Record a ground-truth event.
    Event(MemberEvent),
}

/// ListOffsets timestamp meaning "the earliest offset" (`auto.offset.reset=earliest`).
const EARLIEST_TIMESTAMP: i64 = -2;
/// Generation id meaning "no generation" (Kafka's `Generation.NO_GENERATION`).
const NO_GENERATION: i32 = -1;
/// brod's `max_rejoin_attempts` default.
const BROD_MAX_REJOIN_ATTEMPTS: u32 = 5;
/// brod's `rejoin_delay_seconds` default, in ms.
const BROD_REJOIN_DELAY_MS: Millis = 1_000;
/// kafka-go's `JoinGroupBackoff` default.
const KAFKA_GO_JOIN_BACKOFF_MS: Millis = 5_000;
/// kafka-go's `PartitionWatchInterval` default.
const KAFKA_GO_PARTITION_WATCH_MS: Millis = 5_000;
/// `max.partition.fetch.bytes` (Java default 1 MiB).
const PARTITION_MAX_BYTES: i32 = 1 << 20;
/// `fetch.max.bytes` (Java default 50 MiB).
const FETCH_MAX_BYTES: i32 = 50 << 20;

/// The member's view when a request was sent: answers are judged against it, so an error for
/// an older generation does not reset the current one (Kafka's KAFKA-9823 fix).
#[derive(Clone, Debug)]
struct Sent {
    target: Target,
    generation: i32,
    member_id: String,
}

/// Why a commit was sent: periodic auto-commit, or the single commit before giving partitions up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CommitPurpose {
    Auto,
    Revoke,
}

/// What a request in flight was for, with what the member needs to read its answer.
#[derive(Clone, Debug)]
enum Pending {
    Metadata,
    FindCoordinator,
    JoinGroup,
    SyncGroup,
    Heartbeat,
    OffsetCommit {
        offsets: Vec<(TopicPartition, i64)>,
        purpose: CommitPurpose,
        epoch: u64,
    },
    OffsetFetch {
        epoch: u64,
        partitions: Vec<TopicPartition>,
    },
    ListOffsets {
        epoch: u64,
        partitions: Vec<TopicPartition>,
    },
    Fetch {
        epoch: u64,
        node: i32,
        positions: BTreeMap<TopicPartition, i64>,
    },
    LeaveGroup,
    /// LeaveGroup after a poll timeout: the member carries on (rejoins) whatever the answer.
    PollTimeoutLeave,
}

impl Pending {
    fn api(&self) -> &'static str {
        match self {
            Pending::Metadata => "Metadata",
            Pending::FindCoordinator => "FindCoordinator",
            Pending::JoinGroup => "JoinGroup",
            Pending::SyncGroup => "SyncGroup",
            Pending::Heartbeat => "Heartbeat",
            Pending::OffsetCommit { .. } => "OffsetCommit",
            Pending::OffsetFetch { .. } => "OffsetFetch",
            Pending::ListOffsets { .. } => "ListOffsets",
            Pending::Fetch { .. } => "Fetch",
            Pending::LeaveGroup | Pending::PollTimeoutLeave => "LeaveGroup",
        }
    }
}

#[derive(Clone, Debug)]
struct InFlight {
    sent: Sent,
    pending: Pending,
}

/// Why a request got no usable answer, as the member sees it.
#[derive(Clone, Debug)]
enum Failure {
    /// The connection went away (timeout or disconnect): for the coordinator, it is lost.
    Connection(RequestFailure),
    /// An answer came but could not be used (wrong kind), or the API is unsupported: the name
    /// reported in commit failures.
    Unusable(&'static str),
}

impl Failure {
    fn name(&self) -> String {
        match self {
            Failure::Connection(RequestFailure::Timeout) => "TIMEOUT".into(),
            Failure::Connection(RequestFailure::Disconnected) => "DISCONNECTED".into(),
            Failure::Connection(RequestFailure::Unsupported(_)) => "UNSUPPORTED_VERSION".into(),
            Failure::Unusable(name) => (*name).into(),
        }
    }

    fn from_request_failure(f: RequestFailure) -> Self {
        match f {
            RequestFailure::Unsupported(_) => Failure::Unusable("UNSUPPORTED_VERSION"),
            other => Failure::Connection(other),
        }
    }
}

/// Where the member stands in the group protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
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
struct LeaderJob {
    members: BTreeMap<String, Subscription>,
    after_metadata_version: u64,
}

/// How far an owned partition's starting position has come.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PositionState {
    /// Waiting for OffsetFetch.
    AwaitingCommitted,
    /// No usable committed offset (or out of range): waiting for ListOffsets earliest.
    AwaitingReset { in_flight: bool },
    /// Position known: fetchable.
    Ready,
}

/// Per owned partition state.
#[derive(Clone, Debug)]
struct PartitionState {
    state: PositionState,
    /// Next offset to fetch.
    fetch_position: i64,
    /// Next offset to commit: one past the last processed record (or the starting position).
    processed: Option<i64>,
    /// Last committed offset the member knows of (OffsetFetch answer or acknowledged commit).
    committed: Option<i64>,
    /// The offset below which nothing needs committing: the last acknowledged commit, or the
    /// starting position when nothing was committed yet.
    commit_floor: Option<i64>,
    fetch_in_flight: bool,
    buffered: bool,
}

impl PartitionState {
    fn new() -> Self {
        Self {
            state: PositionState::AwaitingCommitted,
            fetch_position: 0,
            processed: None,
            committed: None,
            commit_floor: None,
            fetch_in_flight: false,
            buffered: false,
        }
    }
}

/// Records fetched for one partition and not processed yet.
#[derive(Clone, Debug)]
struct FetchedBatch {
    tp: TopicPartition,
    first: i64,
    last: i64,
    count: usize,
    epoch: u64,
}

/// A batch being processed (processing is atomic: once started it finishes). It remembers the
/// member id, generation and assignment epoch it started in: its ack carries them, so an ack
/// that arrives after a rebalance is recognised as stale.
#[derive(Clone, Debug)]
struct Processing {
    tp: TopicPartition,
    first: i64,
    last: i64,
    started_at: Millis,
    done_at: Millis,
    epoch: u64,
    generation: i32,
    member_id: String,
}

/// A fault the world's nemesis injects into a member (see [`Member::inject`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum MemberFault {
    /// The batch being processed (or the next one) finishes `delay_ms` later and is detached
    /// from revocation: the member does not wait for it, so its ack may arrive in a later
    /// generation, carrying the generation it was processed in.
    StaleAck { delay_ms: u64 },
    /// The next revoke callback takes `extra_ms` longer (possibly longer than the rebalance
    /// timeout, which gets the member removed from the group).
    SlowRevoke { extra_ms: u64 },
}

/// Which partitions the revoke step gives up.
#[derive(Clone, Debug, PartialEq, Eq)]
enum RevokeStage {
    /// Nothing under way.
    Idle,
    /// The revoke callback runs until `until` (it started at `since`).
    Callback { since: Millis, until: Millis },
    /// The callback returned.
    Done,
}

/// What the member knows of one topic.
#[derive(Clone, Debug)]
struct TopicMeta {
    /// Partition index -> leader node id (-1: no leader).
    leaders: BTreeMap<i32, i32>,
    /// Name and topic id for Fetch requests (the id is needed from Fetch v13).
    fetch_template: FetchTopic,
}

/// Sans-IO consumer-group member (Java consumer behaviour, eager rebalance protocol).
///
/// Feed it responses ([`Member::handle_response`]), failures ([`Member::handle_failure`]) and
/// timers ([`Member::handle_timeout`] at [`Member::poll_timeout`]); drain
/// [`Member::poll_output`] after each call.
#[derive(Debug)]
pub struct Member {
    config: MemberConfig,
    assignors: Vec<Box<dyn Assignor>>,
    app: Box<dyn Application>,
    /// The latest `now` the member was given (for hooks called deep inside a handler).
    clock: Millis,
    rng: ChaCha8Rng,
    next_request_id: u64,
    outputs: VecDeque<MemberOutput>,
    in_flight: BTreeMap<RequestId, InFlight>,

    started: bool,
    finished: bool,
    leaving: bool,
    ever_joined: bool,

    // Cluster metadata.
    topics: BTreeMap<String, TopicMeta>,
    known_brokers: Vec<i32>,
    broker_cursor: usize,
    metadata_known: bool,
    metadata_version: u64,
    metadata_wanted: bool,
    metadata_extra_topics: BTreeSet<String>,
    metadata_in_flight: Option<RequestId>,
    metadata_retry_at: Option<Millis>,
    next_metadata_refresh_at: Option<Millis>,

    // Coordinator.
    coordinator: Option<i32>,
    find_in_flight: Option<RequestId>,
    find_retry_at: Option<Millis>,

    // Membership.
    member_id: String,
    generation: i32,
    protocol: Option<String>,
    phase: Phase,
    rejoin_needed: bool,
    join_retry_at: Option<Millis>,
    revoke_commit_attempted: bool,
    leader_job: Option<LeaderJob>,
    /// Leader only: the partition counts (None: unknown topic) its assignment relied on.
    assignment_snapshot: BTreeMap<String, Option<i32>>,

    // Assignment and positions.
    assigned: Vec<TopicPartition>,
    assignment_epoch: u64,
    partitions: BTreeMap<TopicPartition, PartitionState>,
    offset_fetch_in_flight: Option<RequestId>,
    offset_fetch_retry_at: Option<Millis>,
    list_offsets_retry_at: Option<Millis>,
    fetch_in_flight: BTreeMap<i32, RequestId>,
    fetch_retry_at: BTreeMap<i32, Millis>,
    buffered: VecDeque<FetchedBatch>,
    /// Batches being processed (at most one, or one per partition for Elsa's workers).
    processing: Vec<Processing>,
    /// Batches the member no longer waits for (StaleAck, or asynchronous work outliving a
    /// revoke): their acks arrive whenever they finish.
    detached: Vec<Processing>,

    // Profile state.
    /// Incremental cooperative rebalancing (KIP-429) is in use.
    cooperative: bool,
    /// Generation and partitions of the last assignment (sticky user data).
    last_assignment: (i32, Vec<TopicPartition>),
    /// The revoke callback's progress in the current rebalance.
    revoke_stage: RevokeStage,
    /// Cooperative: partitions taken away by the new assignment, revoked when the callback ends.
    pending_revoke: Vec<TopicPartition>,
    /// Extra duration of the next revoke callback (SlowRevoke).
    slow_revoke_ms: u64,
    /// StaleAck delay for the next batch to start.
    stale_ack_ms: Option<u64>,
    /// brod: rejoin with an empty member id (after UNKNOWN_MEMBER_ID, NOT_COORDINATOR or a
    /// lost connection).
    reset_member_id_on_join: bool,
    /// brod: consecutive failed join attempts.
    join_attempts: u32,
    /// Bugs `commit_after_revoke` / `keep_stale_acks`: offsets of partitions the member does not
    /// own any more, committed with its next auto-commit.
    extra_commits: Vec<(TopicPartition, i64)>,
    /// kafka-go's partition watcher: partition counts when the generation started.
    watched_counts: BTreeMap<String, Option<i32>>,

    // Heartbeats and commits.
    heartbeat_in_flight: Option<RequestId>,
    next_heartbeat_at: Option<Millis>,
    last_heartbeat_ok: Millis,
    commit_in_flight: Option<RequestId>,
    next_commit_at: Option<Millis>,

    leave_in_flight: Option<RequestId>,
}

impl Member {
    /// A member offering `config.assignors` (in order). `seed` drives its processing times.
    pub fn new(config: MemberConfig, seed: u64) -> Self {
        let assignors = config.assignors.iter().map(|k| k.assignor()).collect();
        Self::with_assignors(config, seed, assignors)
    }

    /// A member offering these assignors (in preference order) instead of `config.assignors`:
    /// the plug-in point for user-written [`Assignor`]s.
    pub fn with_assignors(
        config: MemberConfig,
        seed: u64,
        assignors: Vec<Box<dyn Assignor>>,
    ) -> Self {
        Self::with_application(config, seed, assignors, Box::new(ProfileApplication))
    }

    /// A member running a user-modelled [`Application`] (processing times, acks, rebalance
    /// listener) with these assignors.
    pub fn with_application(
        config: MemberConfig,
        seed: u64,
        assignors: Vec<Box<dyn Assignor>>,
        app: Box<dyn Application>,
    ) -> Self {
        let cooperative = config.profile == ClientProfile::JavaCooperative
            && !assignors.is_empty()
            && assignors.iter().all(|a| a.supports_cooperative());
        Self {
            config,
            assignors,
            app,
            clock: 0,
            rng: ChaCha8Rng::seed_from_u64(seed),
            next_request_id: 0,
            outputs: VecDeque::new(),
            in_flight: BTreeMap::new(),
            started: false,
            finished: false,
            leaving: false,
            ever_joined: false,
            topics: BTreeMap::new(),
            known_brokers: Vec::new(),
            broker_cursor: 0,
            metadata_known: false,
            metadata_version: 0,
            metadata_wanted: false,
            metadata_extra_topics: BTreeSet::new(),
            metadata_in_flight: None,
            metadata_retry_at: None,
            next_metadata_refresh_at: None,
            coordinator: None,
            find_in_flight: None,
            find_retry_at: None,
            member_id: String::new(),
            generation: NO_GENERATION,
            protocol: None,
            phase: Phase::Unjoined,
            rejoin_needed: false,
            join_retry_at: None,
            revoke_commit_attempted: false,
            leader_job: None,
            assignment_snapshot: BTreeMap::new(),
            assigned: Vec::new(),
            assignment_epoch: 0,
            partitions: BTreeMap::new(),
            offset_fetch_in_flight: None,
            offset_fetch_retry_at: None,
            list_offsets_retry_at: None,
            fetch_in_flight: BTreeMap::new(),
            fetch_retry_at: BTreeMap::new(),
            buffered: VecDeque::new(),
            processing: Vec::new(),
            detached: Vec::new(),
            cooperative,
            last_assignment: (NO_GENERATION, Vec::new()),
            revoke_stage: RevokeStage::Idle,
            pending_revoke: Vec::new(),
            slow_revoke_ms: 0,
            stale_ack_ms: None,
            reset_member_id_on_join: false,
            join_attempts: 0,
            extra_commits: Vec::new(),
            watched_counts: BTreeMap::new(),
            heartbeat_in_flight: None,
            next_heartbeat_at: None,
            last_heartbeat_ok: 0,
            commit_in_flight: None,
            next_commit_at: None,
            leave_in_flight: None,
        }
    }

    // ----------------------------------------------------------------------------------------
    // Public API
    // ----------------------------------------------------------------------------------------

    /// Begins: Metadata for the subscribed topics, then FindCoordinator, then JoinGroup.
    pub fn start(&mut self, now: Millis) {
        self.clock = now;
        if self.started || self.finished {
            return;
        }
        self.started = true;
        self.metadata_wanted = true;
        self.drive(now);
    }

    /// Graceful shutdown: stop fetching, let the batch in progress finish, commit processed
    /// offsets (one attempt), revoke, send LeaveGroup, then report `Left` and finish. A member
    /// that never joined just stops.
    pub fn leave(&mut self, now: Millis) {
        self.clock = now;
        if self.finished || self.leaving {
            return;
        }
        if !self.started
            || (self.member_id.is_empty() && self.assigned.is_empty() && !self.ever_joined)
        {
            self.finish();
            return;
        }
        self.leaving = true;
        self.drive(now);
    }

    /// The answer to request `id`. Unknown ids (already failed, or from before a close) are ignored.
    pub fn handle_response(&mut self, now: Millis, id: RequestId, response: ResponseKind) {
        self.clock = now;
        if self.finished {
            return;
        }
        let Some(InFlight { sent, pending }) = self.in_flight.remove(&id) else {
            return;
        };
        match (pending, response) {
            (Pending::Metadata, ResponseKind::Metadata(r)) => self.on_metadata(now, id, r),
            (Pending::FindCoordinator, ResponseKind::FindCoordinator(r)) => {
                self.on_find_coordinator(now, id, r)
            }
            (Pending::JoinGroup, ResponseKind::JoinGroup(r)) => self.on_join_group(now, &sent, r),
            (Pending::SyncGroup, ResponseKind::SyncGroup(r)) => self.on_sync_group(now, &sent, r),
            (Pending::Heartbeat, ResponseKind::Heartbeat(r)) => {
                self.on_heartbeat(now, id, &sent, r.error_code)
            }
            (Pending::OffsetCommit { offsets, purpose, epoch }, ResponseKind::OffsetCommit(r)) => {
                self.on_offset_commit(now, id, &sent, offsets, purpose, epoch, r)
            }
            (Pending::OffsetFetch { epoch, partitions }, ResponseKind::OffsetFetch(r)) => {
                self.on_offset_fetch(now, id, &sent, epoch, partitions, r)
            }
            (Pending::ListOffsets { epoch, partitions }, ResponseKind::ListOffsets(r)) => {
                self.on_list_offsets(now, epoch, partitions, r)
            }
            (Pending::Fetch { epoch, node, positions }, ResponseKind::Fetch(r)) => {
                self.on_fetch(now, id, epoch, node, positions, r)
            }
            (Pending::LeaveGroup, ResponseKind::LeaveGroup(_)) => self.on_leave_done(id),
            (Pending::PollTimeoutLeave, ResponseKind::LeaveGroup(_)) => {}
            (pending, _) => {
                tracing::debug!(api = pending.api(), "answer of the wrong kind");
                self.on_failure(now, id, sent, pending, Failure::Unusable("UNEXPECTED_RESPONSE"));
            }
        }
        self.drive(now);
    }

    /// Request `id` got no answer.
    pub fn handle_failure(&mut self, now: Millis, id: RequestId, failure: RequestFailure) {
        self.clock = now;
        if self.finished {
            return;
        }
        let Some(InFlight { sent, pending }) = self.in_flight.remove(&id) else {
            return;
        };
        self.on_failure(now, id, sent, pending, Failure::from_request_failure(failure));
        self.drive(now);
    }

    /// The earliest instant at which [`Self::handle_timeout`] has work to do.
    pub fn poll_timeout(&self) -> Option<Millis> {
        if self.finished || !self.started {
            return None;
        }
        let stable = self.phase == Phase::Stable;
        let coordinator = self.coordinator.is_some();
        let revoke_deadline = match self.revoke_stage {
            RevokeStage::Callback { since, until } => {
                if self.enforces_max_poll() && !self.member_id.is_empty() {
                    Some(until.min(since + self.config.rebalance_timeout_ms.max(0) as u64))
                } else {
                    Some(until)
                }
            }
            _ => None,
        };
        let max_poll_deadline = if self.enforces_max_poll() && !self.member_id.is_empty() {
            self.processing
                .iter()
                .map(|p| p.started_at + self.config.rebalance_timeout_ms.max(0) as u64)
                .min()
        } else {
            None
        };
        [
            self.processing.iter().chain(&self.detached).map(|p| p.done_at).min(),
            revoke_deadline,
            max_poll_deadline,
            self.metadata_retry_at,
            self.next_metadata_refresh_at,
            self.find_retry_at,
            self.join_retry_at,
            self.offset_fetch_retry_at,
            self.list_offsets_retry_at,
            self.fetch_retry_at.values().min().copied(),
            self.next_heartbeat_at
                .filter(|_| stable && coordinator && self.heartbeat_in_flight.is_none()),
            self.next_commit_at.filter(|_| {
                stable
                    && coordinator
                    && !self.rejoin_needed
                    && !self.leaving
                    && self.commit_in_flight.is_none()
            }),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Fires every timer due at or before `now`.
    pub fn handle_timeout(&mut self, now: Millis) {
        self.clock = now;
        if self.finished {
            return;
        }
        self.finish_processing(now);
        self.check_revoke_callback(now);
        self.check_processing_stall(now);
        self.drive(now);
    }

    /// Next queued output, in the order produced.
    pub fn poll_output(&mut self) -> Option<MemberOutput> {
        self.outputs.pop_front()
    }

    /// The member left the group (or stopped for good after a fatal error or `leave`).
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// Current member id (empty before the coordinator gave one).
    pub fn member_id(&self) -> &str {
        &self.member_id
    }

    /// Current generation (-1 when not in one).
    pub fn generation(&self) -> i32 {
        self.generation
    }

    /// Partitions the member owns now, sorted.
    pub fn assigned(&self) -> &[TopicPartition] {
        &self.assigned
    }

    /// The coordinator node the member currently trusts, if any.
    pub fn coordinator(&self) -> Option<i32> {
        self.coordinator
    }

    /// True when the member holds an assignment and no rebalance is under way.
    pub fn is_stable(&self) -> bool {
        self.phase == Phase::Stable && !self.rejoin_needed && !self.leaving
    }

    /// The configuration the member runs with.
    pub fn config(&self) -> &MemberConfig {
        &self.config
    }

    /// Whether the member uses the incremental cooperative protocol (KIP-429).
    pub fn is_cooperative(&self) -> bool {
        self.cooperative
    }

    /// Applies a fault from the nemesis (see [`MemberFault`]).
    pub fn inject(&mut self, now: Millis, fault: MemberFault) {
        self.clock = now;
        if self.finished {
            return;
        }
        match fault {
            MemberFault::StaleAck { delay_ms } => {
                if self.processing.is_empty() {
                    self.stale_ack_ms = Some(delay_ms);
                } else {
                    let mut p = self.processing.remove(0);
                    p.done_at += delay_ms;
                    self.detached.push(p);
                }
            }
            MemberFault::SlowRevoke { extra_ms } => {
                self.slow_revoke_ms = self.slow_revoke_ms.saturating_add(extra_ms);
            }
        }
        self.drive(now);
    }

    // ----------------------------------------------------------------------------------------
    // Plumbing
    // ----------------------------------------------------------------------------------------

    fn send(
        &mut self,
        target: Target,
        request: RequestKind,
        timeout_ms: u64,
        pending: Pending,
    ) -> RequestId {
        self.next_request_id += 1;
        let id = RequestId(self.next_request_id);
        let sent = Sent { target, generation: self.generation, member_id: self.member_id.clone() };
        self.in_flight.insert(id, InFlight { sent, pending });
        self.outputs.push_back(MemberOutput::Send { id, target, request, timeout_ms });
        id
    }

    fn emit(&mut self, event: MemberEvent) {
        self.outputs.push_back(MemberOutput::Event(event));
    }

    fn backoff(&self, now: Millis) -> Millis {
        now + self.config.retry_backoff_ms
    }

    /// When to retry after a failed JoinGroup / SyncGroup. Java: `retry.backoff.ms`. brod: the
    /// first retry at once, then after `REJOIN_DELAY_MS`; after `MAX_REJOIN_ATTEMPTS` the
    /// coordinator process gives up and is restarted by its supervisor (fresh member id).
    /// kafka-go: `JoinGroupBackoff`.
    fn join_backoff(&mut self, now: Millis) -> Millis {
        match self.config.profile {
            ClientProfile::Brod | ClientProfile::Elsa => {
                self.join_attempts += 1;
                if self.join_attempts >= BROD_MAX_REJOIN_ATTEMPTS {
                    self.join_attempts = 0;
                    self.reset_member_id_on_join = true;
                    now + BROD_REJOIN_DELAY_MS
                } else if self.join_attempts == 1 {
                    now
                } else {
                    now + BROD_REJOIN_DELAY_MS
                }
            }
            ClientProfile::KafkaGo => now + KAFKA_GO_JOIN_BACKOFF_MS,
            _ => self.backoff(now),
        }
    }

    fn finish(&mut self) {
        self.finished = true;
        self.processing.clear();
        self.detached.clear();
        self.buffered.clear();
    }

    /// Java profiles enforce `max.poll.interval.ms` (the rebalance timeout): a member stuck in
    /// a callback longer than that leaves the group.
    fn enforces_max_poll(&self) -> bool {
        matches!(self.config.profile, ClientProfile::JavaEager | ClientProfile::JavaCooperative)
    }

    fn group_id(&self) -> GroupId {
        GroupId(sb(&self.config.group_id))
    }

    fn instance_id(&self) -> Option<kafka_protocol::protocol::StrBytes> {
        self.config.group_instance_id.as_deref().map(sb)
    }

    /// A broker for cluster-wide requests (Metadata, FindCoordinator): the bootstrap node until
    /// Metadata lists brokers, then the listed brokers in turn, moving on after each failure.
    fn any_broker(&self) -> i32 {
        if self.known_brokers.is_empty() {
            self.config.bootstrap_node
        } else {
            self.known_brokers[self.broker_cursor % self.known_brokers.len()]
        }
    }

    fn leader_of(&self, tp: &TopicPartition) -> Option<i32> {
        self.topics
            .get(&tp.topic)
            .and_then(|m| m.leaders.get(&tp.partition))
            .copied()
            .filter(|l| *l >= 0)
    }

    fn partition_count(&self, topic: &str) -> Option<i32> {
        self.topics.get(topic).map(|m| m.leaders.len() as i32)
    }

    /// Wants a Metadata refresh that also covers `topic` (if it is not subscribed already).
    fn want_metadata_for(&mut self, topic: &str) {
        if !self.config.topics.iter().any(|t| t == topic) {
            self.metadata_extra_topics.insert(topic.to_string());
        }
        self.metadata_wanted = true;
    }

    // ----------------------------------------------------------------------------------------
    // The reconciliation loop
    // ----------------------------------------------------------------------------------------

    /// Looks at the state and sends whatever it calls for (the Java consumer's `poll()`).
    fn drive(&mut self, now: Millis) {
        if self.finished || !self.started {
            return;
        }
        self.expire_backoffs(now);
        if self.next_metadata_refresh_at.is_some_and(|t| t <= now) {
            self.next_metadata_refresh_at = None;
            self.metadata_wanted = true;
        }
        self.maybe_send_metadata();
        if !self.metadata_known {
            return;
        }
        if self.phase == Phase::Stable {
            self.maybe_heartbeat(now);
        }
        if self.leaving {
            self.drive_leave(now);
            return;
        }
        self.maybe_find_coordinator();
        self.drive_membership(now);
        if self.phase == Phase::Stable && !self.rejoin_needed && !self.finished {
            self.maybe_auto_commit(now);
            self.maybe_fetch_committed();
            self.maybe_list_offsets();
            // Start processing before fetching so the partition being processed is fetched
            // ahead, as the Java consumer sends its next fetch while the application works.
            self.maybe_start_processing(now);
            self.maybe_fetch();
        }
        self.maybe_send_metadata();
    }

    fn expire_backoffs(&mut self, now: Millis) {
        for slot in [
            &mut self.metadata_retry_at,
            &mut self.find_retry_at,
            &mut self.join_retry_at,
            &mut self.offset_fetch_retry_at,
            &mut self.list_offsets_retry_at,
        ] {
            if slot.is_some_and(|t| t <= now) {
                *slot = None;
            }
        }
        self.fetch_retry_at.retain(|_, t| *t > now);
    }

    fn drive_membership(&mut self, now: Millis) {
        match self.phase {
            Phase::AwaitingLeaderMetadata
                if self
                    .leader_job
                    .as_ref()
                    .is_none_or(|j| self.metadata_version > j.after_metadata_version) =>
            {
                match self.leader_job.take() {
                    Some(job) => self.complete_leader_assignment(now, job.members),
                    None => self.phase = Phase::Unjoined,
                }
            }
            Phase::Unjoined => self.prepare_and_join(now),
            Phase::Stable if self.rejoin_needed => self.prepare_and_join(now),
            _ => {}
        }
    }

    /// Before rejoining. Eager: stop fetching and drop unprocessed records, let the batch in
    /// progress finish (brod detaches it, Elsa's workers are stopped), commit what was
    /// processed and run the revoke callback in the profile's order, revoke every partition,
    /// then JoinGroup. Cooperative: the same minus the callback and the revocation: owned
    /// partitions are kept and announced in the subscription.
    fn prepare_and_join(&mut self, now: Millis) {
        self.drop_buffered();
        if !self.prepare_revoke(now, false) {
            return;
        }
        if !self.cooperative {
            self.revoke_all();
        }
        if self.coordinator.is_none() || self.join_retry_at.is_some() {
            return;
        }
        if self.reset_member_id_on_join {
            self.reset_member_id_on_join = false;
            self.member_id.clear();
            self.generation = NO_GENERATION;
        }
        self.send_join_group();
    }

    /// The steps before partitions are given up; true once they are done. The commit is one
    /// attempt, answered before going on (Java: commitSync in `onPartitionsRevoked`; brod and
    /// Elsa: after the callback, once, not after ILLEGAL_GENERATION / UNKNOWN_MEMBER_ID, which
    /// already lost the partitions; kafka-go: none).
    fn prepare_revoke(&mut self, now: Millis, leaving: bool) -> bool {
        if matches!(self.revoke_stage, RevokeStage::Callback { .. }) {
            return false;
        }
        let synchronous = !self.config.profile.acks_asynchronously();
        if synchronous && !self.processing.is_empty() {
            // The application thread is busy: the poll loop (and so the rejoin) waits for it.
            return false;
        }
        if self.assigned.is_empty() {
            return true;
        }
        match self.config.profile {
            ClientProfile::Brod => self.detached.append(&mut self.processing),
            ClientProfile::Elsa => self.processing.clear(),
            _ => {
                if !self.processing.is_empty() {
                    return false;
                }
            }
        }
        let commit_first = !self.config.profile.acks_asynchronously();
        if commit_first && !self.revoke_commit(leaving) {
            return false;
        }
        // Cooperative members run the callback after the assignment, for the revoked ones only.
        let run_callback = leaving || !self.cooperative;
        if run_callback && self.revoke_stage == RevokeStage::Idle {
            let assigned = self.assigned.clone();
            let extra = std::mem::take(&mut self.slow_revoke_ms)
                + self.app.on_partitions_revoked(now, self.generation, &assigned);
            if extra > 0 {
                self.revoke_stage = RevokeStage::Callback { since: now, until: now + extra };
                return false;
            }
            self.revoke_stage = RevokeStage::Done;
        }
        if !commit_first && !self.revoke_commit(leaving) {
            return false;
        }
        true
    }

    /// The commit before giving partitions up: true once it is done (answered or not needed).
    fn revoke_commit(&mut self, leaving: bool) -> bool {
        if self.commit_in_flight.is_some() {
            return false;
        }
        let profile_commits = self.app.commits_on_revoke(self.config.profile);
        if self.revoke_commit_attempted
            || !profile_commits
            || self.config.bugs.skip_revoke_commit_then_overcommit
        {
            return true;
        }
        let offsets = self.offsets_to_commit();
        if offsets.is_empty() {
            return true;
        }
        if self.coordinator.is_none() {
            // The commit needs the coordinator: a leaving member gives up, a rejoining one waits
            // for it to be rediscovered.
            if leaving {
                self.revoke_commit_attempted = true;
            }
            return leaving;
        }
        self.revoke_commit_attempted = true;
        self.send_commit(offsets, CommitPurpose::Revoke);
        false
    }

    /// A revoke callback that ran past `max.poll.interval.ms` (Java profiles) makes the member
    /// leave the group, as the Java heartbeat thread does on a poll timeout: LeaveGroup, reset
    /// generation and member id, partitions lost. A finished callback moves the revoke on;
    /// for a cooperative member it completes the revocation and asks for the second rebalance.
    fn check_revoke_callback(&mut self, now: Millis) {
        let RevokeStage::Callback { since, until } = self.revoke_stage else {
            return;
        };
        if now >= until {
            self.revoke_stage = RevokeStage::Done;
            self.finish_cooperative_revoke();
            return;
        }
        let max_poll = since + self.config.rebalance_timeout_ms.max(0) as u64;
        if self.enforces_max_poll() && now >= max_poll && !self.member_id.is_empty() {
            self.poll_timeout_leave();
        }
    }

    /// Java profiles: a batch processed for longer than `max.poll.interval.ms` means the
    /// application stopped polling; the member leaves the group (see [`Self::poll_timeout_leave`]).
    fn check_processing_stall(&mut self, now: Millis) {
        let max_poll = self.config.rebalance_timeout_ms.max(0) as u64;
        let stalled = self.processing.iter().any(|p| now >= p.started_at + max_poll);
        if self.enforces_max_poll() && stalled && !self.member_id.is_empty() {
            self.poll_timeout_leave();
        }
    }

    /// The Java heartbeat thread's reaction to an expired poll timer: LeaveGroup, then reset
    /// generation and member id; the partitions are lost (not committed). The member rejoins as
    /// a new member once the application polls again.
    fn poll_timeout_leave(&mut self) {
        if let Some(node) = self.coordinator {
            let req =
                LeaveGroupRequest::default().with_group_id(self.group_id()).with_members(vec![
                    MemberIdentity::default()
                        .with_member_id(sb(&self.member_id))
                        .with_group_instance_id(self.instance_id())
                        .with_reason(Some(sb("consumer poll timeout has expired"))),
                ]);
            let timeout = self.config.request_timeout_ms;
            self.send(
                Target::Coordinator(node),
                RequestKind::LeaveGroup(req),
                timeout,
                Pending::PollTimeoutLeave,
            );
        }
        self.pending_revoke.clear();
        self.reset_generation_with("POLL_TIMEOUT".to_string(), true);
    }

    fn drive_leave(&mut self, now: Millis) {
        self.drop_buffered();
        if !self.prepare_revoke(now, true) {
            return;
        }
        self.revoke_all();
        if self.leave_in_flight.is_some() {
            return;
        }
        match self.coordinator {
            Some(node) if !self.member_id.is_empty() => {
                let req =
                    LeaveGroupRequest::default().with_group_id(self.group_id()).with_members(vec![
                        MemberIdentity::default()
                            .with_member_id(sb(&self.member_id))
                            .with_group_instance_id(self.instance_id()),
                    ]);
                let timeout = self.config.request_timeout_ms;
                let id = self.send(
                    Target::Coordinator(node),
                    RequestKind::LeaveGroup(req),
                    timeout,
                    Pending::LeaveGroup,
                );
                self.leave_in_flight = Some(id);
            }
            _ => {
                let member_id = self.member_id.clone();
                self.emit(MemberEvent::Left { member_id });
                self.finish();
            }
        }
    }

    fn on_leave_done(&mut self, id: RequestId) {
        if self.leave_in_flight == Some(id) {
            self.leave_in_flight = None;
            let member_id = self.member_id.clone();
            self.emit(MemberEvent::Left { member_id });
            self.finish();
        }
    }

    // ----------------------------------------------------------------------------------------
    // Failures
    // ----------------------------------------------------------------------------------------

    fn on_failure(
        &mut self,
        now: Millis,
        id: RequestId,
        sent: Sent,
        pending: Pending,
        failure: Failure,
    ) {
        let api = pending.api();
        match pending {
            Pending::Metadata => {
                if self.metadata_in_flight == Some(id) {
                    self.metadata_in_flight = None;
                }
                self.metadata_wanted = true;
                self.metadata_retry_at = Some(self.backoff(now));
                self.broker_cursor += 1;
            }
            Pending::FindCoordinator => {
                if self.find_in_flight == Some(id) {
                    self.find_in_flight = None;
                }
                self.find_retry_at = Some(self.backoff(now));
                self.broker_cursor += 1;
            }
            Pending::JoinGroup => {
                if self.phase == Phase::Joining {
                    self.phase = Phase::Unjoined;
                    self.join_retry_at = Some(self.join_backoff(now));
                }
            }
            Pending::SyncGroup => {
                if self.phase == Phase::Syncing {
                    self.phase = Phase::Unjoined;
                    self.join_retry_at = Some(self.join_backoff(now));
                }
            }
            Pending::Heartbeat => {
                if self.heartbeat_in_flight == Some(id) {
                    self.heartbeat_in_flight = None;
                    self.next_heartbeat_at = Some(self.backoff(now));
                }
            }
            Pending::OffsetCommit { offsets, purpose, .. } => {
                if self.commit_in_flight == Some(id) {
                    self.commit_in_flight = None;
                }
                let error = failure.name();
                for (tp, offset) in offsets {
                    self.emit(MemberEvent::CommitFailed {
                        member_id: sent.member_id.clone(),
                        generation: sent.generation,
                        partition: tp,
                        offset,
                        error: error.clone(),
                    });
                }
                if purpose == CommitPurpose::Auto {
                    self.next_commit_at = Some(self.backoff(now));
                }
            }
            Pending::OffsetFetch { .. } => {
                if self.offset_fetch_in_flight == Some(id) {
                    self.offset_fetch_in_flight = None;
                }
                self.offset_fetch_retry_at = Some(self.backoff(now));
            }
            Pending::ListOffsets { epoch, partitions } => {
                self.clear_list_offsets_in_flight(epoch, &partitions);
                self.list_offsets_retry_at = Some(self.backoff(now));
                if matches!(failure, Failure::Connection(_)) {
                    self.metadata_wanted = true;
                }
            }
            Pending::Fetch { epoch, node, positions } => {
                self.clear_fetch_in_flight(id, epoch, node, &positions);
                self.fetch_retry_at.insert(node, self.backoff(now));
                if matches!(failure, Failure::Connection(_)) {
                    self.metadata_wanted = true;
                }
            }
            Pending::LeaveGroup => self.on_leave_done(id),
            Pending::PollTimeoutLeave => {}
        }
        if matches!(failure, Failure::Connection(_)) {
            self.coordinator_connection_failed(
                now,
                sent.target,
                &format!("{api} {}", failure.name()),
            );
        }
    }

    /// A request on the coordinator connection timed out or was disconnected: the coordinator
    /// is presumed dead (as the Java client's `markCoordinatorUnknown`).
    fn coordinator_connection_failed(&mut self, now: Millis, target: Target, reason: &str) {
        if let Target::Coordinator(node) = target {
            if self.coordinator == Some(node) {
                self.mark_coordinator_unknown(now, reason);
            }
        }
    }

    /// Forget the coordinator: report it, close its connection, fail what was in flight on it,
    /// and look it up again after `retry_backoff_ms`.
    fn mark_coordinator_unknown(&mut self, now: Millis, reason: &str) {
        let Some(node) = self.coordinator.take() else {
            return;
        };
        self.emit(MemberEvent::CoordinatorLost { reason: reason.to_string() });
        if self.config.profile.acks_asynchronously() && self.phase == Phase::Stable {
            // brod stabilizes on a lost connection or NOT_COORDINATOR: revoke, rejoin with an
            // empty member id.
            self.rejoin_needed = true;
            self.reset_member_id_on_join = true;
        }
        self.outputs.push_back(MemberOutput::Close(Target::Coordinator(node)));
        self.find_retry_at = Some(self.backoff(now));
        let stranded: Vec<RequestId> = self
            .in_flight
            .iter()
            .filter(|(_, f)| f.sent.target == Target::Coordinator(node))
            .map(|(id, _)| *id)
            .collect();
        for id in stranded {
            if let Some(InFlight { sent, pending }) = self.in_flight.remove(&id) {
                let failure = Failure::Connection(RequestFailure::Disconnected);
                self.on_failure(now, id, sent, pending, failure);
            }
        }
    }

    /// Applies the group errors every coordinator answer can carry. The resets only apply when
    /// the request was sent under the current generation and member id (KAFKA-9823): an error
    /// about an older generation says nothing about the current one. Returns false for codes
    /// this does not handle.
    fn handle_group_error(&mut self, now: Millis, sent: &Sent, code: i16, api: &str) -> bool {
        let current = self.phase == Phase::Stable
            && sent.generation == self.generation
            && sent.member_id == self.member_id;
        match code {
            codes::REBALANCE_IN_PROGRESS => {
                if current {
                    self.rejoin_needed = true;
                }
            }
            codes::ILLEGAL_GENERATION => {
                if current {
                    self.reset_generation(code, false);
                }
            }
            codes::UNKNOWN_MEMBER_ID => {
                if current {
                    self.reset_generation(code, true);
                }
            }
            codes::FENCED_INSTANCE_ID => {
                if current {
                    self.fatal(code);
                }
            }
            codes::NOT_COORDINATOR | codes::COORDINATOR_NOT_AVAILABLE => {
                if let Target::Coordinator(node) = sent.target {
                    if self.coordinator == Some(node) {
                        self.mark_coordinator_unknown(now, &format!("{api} {}", error_name(code)));
                    }
                }
            }
            _ => return false,
        }
        true
    }

    /// Generation (and maybe member id) reset after an error: partitions are lost, not revoked
    /// (no commit: the coordinator would reject it), and the member rejoins.
    fn reset_generation(&mut self, code: i16, reset_member_id: bool) {
        self.reset_generation_with(error_name(code), reset_member_id);
    }

    fn reset_generation_with(&mut self, error: String, reset_member_id: bool) {
        self.emit(MemberEvent::GenerationReset {
            member_id: self.member_id.clone(),
            generation: self.generation,
            error: error.clone(),
            reset_member_id,
        });
        self.lose_partitions(&error);
        self.generation = NO_GENERATION;
        self.protocol = None;
        if reset_member_id {
            self.member_id.clear();
        }
        self.phase = Phase::Unjoined;
        self.rejoin_needed = false;
        self.leader_job = None;
        self.next_heartbeat_at = None;
    }

    fn fatal(&mut self, code: i16) {
        let error = error_name(code);
        self.lose_partitions(&error);
        self.emit(MemberEvent::Fatal {
            member_id: self.member_id.clone(),
            generation: self.generation,
            error,
        });
        self.finish();
    }

    fn lose_partitions(&mut self, reason: &str) {
        if !self.assigned.is_empty() {
            let lost = self.assigned.clone();
            self.app.on_partitions_lost(self.clock, self.generation, &lost);
            self.emit(MemberEvent::Lost {
                member_id: self.member_id.clone(),
                generation: self.generation,
                partitions: self.assigned.clone(),
                reason: reason.to_string(),
            });
        }
        self.clear_assignment();
    }

    fn revoke_all(&mut self) {
        self.revoke_stage = RevokeStage::Idle;
        if self.config.bugs.commit_after_revoke {
            self.stash_extra_commits(&self.assigned.clone());
        }
        if !self.assigned.is_empty() {
            self.emit(MemberEvent::Revoked {
                member_id: self.member_id.clone(),
                generation: self.generation,
                partitions: self.assigned.clone(),
            });
        }
        self.clear_assignment();
    }

    /// Bug `commit_after_revoke`: remember what was processed on partitions being revoked.
    fn stash_extra_commits(&mut self, revoked: &[TopicPartition]) {
        for tp in revoked {
            if let Some(p) = self.partitions.get(tp).and_then(|ps| ps.processed) {
                self.extra_commits.push((tp.clone(), p));
            }
        }
    }

    /// Cooperative: the revoke callback for the partitions the new assignment took away has
    /// returned. They are given up and the member rejoins at once for the second rebalance.
    fn finish_cooperative_revoke(&mut self) {
        if self.pending_revoke.is_empty() {
            return;
        }
        let revoked = std::mem::take(&mut self.pending_revoke);
        self.assigned.retain(|tp| !revoked.contains(tp));
        self.emit(MemberEvent::Revoked {
            member_id: self.member_id.clone(),
            generation: self.generation,
            partitions: revoked,
        });
        self.revoke_stage = RevokeStage::Idle;
        if self.phase == Phase::Stable {
            self.rejoin_needed = true;
        }
    }

    fn clear_assignment(&mut self) {
        self.pending_revoke.clear();
        self.assigned.clear();
        self.partitions.clear();
        self.buffered.clear();
        self.assignment_epoch += 1;
    }

    // ----------------------------------------------------------------------------------------
    // Metadata and coordinator discovery
    // ----------------------------------------------------------------------------------------

    fn maybe_send_metadata(&mut self) {
        if !self.metadata_wanted
            || self.metadata_in_flight.is_some()
            || self.metadata_retry_at.is_some()
        {
            return;
        }
        let topics: BTreeSet<&String> =
            self.config.topics.iter().chain(self.metadata_extra_topics.iter()).collect();
        let req = MetadataRequest::default().with_topics(Some(
            topics
                .into_iter()
                .map(|t| MetadataRequestTopic::default().with_name(Some(TopicName(sb(t)))))
                .collect(),
        ));
        let target = Target::Broker(self.any_broker());
        let timeout = self.config.request_timeout_ms;
        let id = self.send(target, RequestKind::Metadata(req), timeout, Pending::Metadata);
        self.metadata_in_flight = Some(id);
        self.metadata_wanted = false;
    }

    fn on_metadata(&mut self, now: Millis, id: RequestId, resp: MetadataResponse) {
        if self.metadata_in_flight == Some(id) {
            self.metadata_in_flight = None;
        }
        // Like the Java client's metadata refresh backoff: at most one Metadata per backoff.
        self.metadata_retry_at = Some(self.backoff(now));
        if resp.error_code != codes::NONE {
            self.metadata_wanted = true;
            return;
        }
        let mut brokers: Vec<i32> = resp.brokers.iter().map(|b| b.node_id.0).collect();
        brokers.sort_unstable();
        brokers.dedup();
        if !brokers.is_empty() {
            self.known_brokers = brokers;
        }
        for t in resp.topics {
            let Some(name) = t.name.as_ref().map(|n| n.0.to_string()) else {
                continue;
            };
            if t.error_code != codes::NONE {
                if t.error_code == codes::LEADER_NOT_AVAILABLE {
                    self.metadata_wanted = true;
                }
                continue;
            }
            let mut leaders = BTreeMap::new();
            for p in &t.partitions {
                if p.leader_id.0 < 0 {
                    self.metadata_wanted = true;
                }
                leaders.insert(p.partition_index, p.leader_id.0);
            }
            let fetch_template =
                FetchTopic::default().with_topic(TopicName(sb(&name))).with_topic_id(t.topic_id);
            self.topics.insert(name, TopicMeta { leaders, fetch_template });
        }
        self.metadata_known = true;
        self.metadata_version += 1;
        let refresh = if self.config.profile == ClientProfile::KafkaGo {
            self.config.metadata_max_age_ms.min(KAFKA_GO_PARTITION_WATCH_MS)
        } else {
            self.config.metadata_max_age_ms
        };
        self.next_metadata_refresh_at = Some(now + refresh);
        self.check_metadata_change();
    }

    /// A partition count that changed since the leader computed the current generation's
    /// assignment makes the leader rejoin, which rebalances the group (the Java client keeps
    /// this `assignmentSnapshot` on the leader only; followers do not react to metadata).
    fn check_metadata_change(&mut self) {
        if self.phase != Phase::Stable || self.rejoin_needed || self.leaving {
            return;
        }
        let watched = if self.config.profile == ClientProfile::KafkaGo {
            // kafka-go's partition watcher runs on every member, not only the leader.
            &self.watched_counts
        } else {
            &self.assignment_snapshot
        };
        let changed = watched.iter().any(|(t, count)| {
            let now = self.partition_count(t);
            now.is_some() && now != *count
        });
        if changed {
            self.rejoin_needed = true;
        }
    }

    fn maybe_find_coordinator(&mut self) {
        if self.coordinator.is_some()
            || self.find_in_flight.is_some()
            || self.find_retry_at.is_some()
        {
            return;
        }
        let req = FindCoordinatorRequest::default()
            .with_key_type(0)
            .with_coordinator_keys(vec![sb(&self.config.group_id)]);
        let target = Target::Broker(self.any_broker());
        let timeout = self.config.request_timeout_ms;
        let id =
            self.send(target, RequestKind::FindCoordinator(req), timeout, Pending::FindCoordinator);
        self.find_in_flight = Some(id);
    }

    fn on_find_coordinator(&mut self, now: Millis, id: RequestId, resp: FindCoordinatorResponse) {
        if self.find_in_flight == Some(id) {
            self.find_in_flight = None;
        }
        let (code, node) = if resp.coordinators.is_empty() {
            (resp.error_code, resp.node_id.0)
        } else {
            let c = resp
                .coordinators
                .iter()
                .find(|c| c.key.as_str() == self.config.group_id)
                .unwrap_or(&resp.coordinators[0]);
            (c.error_code, c.node_id.0)
        };
        if code != codes::NONE || node < 0 {
            self.find_retry_at = Some(self.backoff(now));
            return;
        }
        if self.coordinator.is_some() {
            return;
        }
        self.coordinator = Some(node);
        // A fresh coordinator gets a fresh session window (Java: resetSessionTimeout).
        self.last_heartbeat_ok = now;
        self.emit(MemberEvent::CoordinatorFound { node_id: node });
    }

    // ----------------------------------------------------------------------------------------
    // Join and sync
    // ----------------------------------------------------------------------------------------

    fn send_join_group(&mut self) {
        let Some(node) = self.coordinator else {
            return;
        };
        let (last_generation, previous) = self.last_assignment.clone();
        let metadata = encode_subscription(&Subscription {
            topics: self.config.topics.clone(),
            owned_partitions: if self.cooperative { self.assigned.clone() } else { Vec::new() },
            // Only the sticky assignors read user data (the generation and last assignment).
            user_data: self
                .assignors
                .iter()
                .any(|a| matches!(a.name(), "sticky" | "cooperative-sticky"))
                .then(|| StickyUserData { generation: last_generation, previous }.encode()),
        });
        let protocols = self
            .assignors
            .iter()
            .map(|a| {
                JoinGroupRequestProtocol::default()
                    .with_name(sb(a.name()))
                    .with_metadata(metadata.clone())
            })
            .collect();
        let req = JoinGroupRequest::default()
            .with_group_id(self.group_id())
            .with_session_timeout_ms(self.config.session_timeout_ms)
            .with_rebalance_timeout_ms(self.config.rebalance_timeout_ms)
            .with_member_id(sb(&self.member_id))
            .with_group_instance_id(self.instance_id())
            .with_protocol_type(sb("consumer"))
            .with_protocols(protocols);
        let timeout =
            self.config.rebalance_timeout_ms.max(0) as u64 + self.config.request_timeout_ms;
        self.assignment_snapshot.clear();
        self.send(
            Target::Coordinator(node),
            RequestKind::JoinGroup(req),
            timeout,
            Pending::JoinGroup,
        );
        self.phase = Phase::Joining;
        self.rejoin_needed = false;
        self.revoke_commit_attempted = false;
        self.revoke_stage = RevokeStage::Idle;
        self.heartbeat_in_flight = None;
        self.next_heartbeat_at = None;
    }

    fn on_join_group(&mut self, now: Millis, sent: &Sent, resp: JoinGroupResponse) {
        if self.phase != Phase::Joining || self.leaving {
            return;
        }
        match resp.error_code {
            codes::NONE => {
                self.member_id = resp.member_id.to_string();
                self.generation = resp.generation_id;
                self.protocol = resp.protocol_name.as_ref().map(|p| p.to_string());
                self.ever_joined = true;
                let leader = resp.leader.to_string();
                let is_leader = leader == self.member_id;
                self.emit(MemberEvent::Joined {
                    member_id: self.member_id.clone(),
                    generation: self.generation,
                    leader,
                    protocol: self.protocol.clone().unwrap_or_default(),
                    is_leader,
                });
                if !is_leader {
                    self.send_sync_group(Vec::new());
                    return;
                }
                let members: BTreeMap<String, Subscription> = resp
                    .members
                    .iter()
                    .map(|m| {
                        // An undecodable subscription counts as subscribing to nothing.
                        let sub = decode_subscription(&m.metadata).unwrap_or_default();
                        (m.member_id.to_string(), sub)
                    })
                    .collect();
                let missing: BTreeSet<String> = members
                    .values()
                    .flat_map(|s| s.topics.iter())
                    .filter(|t| !self.topics.contains_key(*t))
                    .cloned()
                    .collect();
                if missing.is_empty() {
                    self.complete_leader_assignment(now, members);
                } else {
                    for t in &missing {
                        self.want_metadata_for(t);
                    }
                    self.leader_job =
                        Some(LeaderJob { members, after_metadata_version: self.metadata_version });
                    self.phase = Phase::AwaitingLeaderMetadata;
                }
            }
            codes::MEMBER_ID_REQUIRED => {
                // KIP-394: the coordinator hands out the member id first; rejoin with it at once.
                self.member_id = resp.member_id.to_string();
                self.phase = Phase::Unjoined;
            }
            codes::UNKNOWN_MEMBER_ID => self.reset_generation(resp.error_code, true),
            codes::ILLEGAL_GENERATION => self.reset_generation(resp.error_code, false),
            codes::FENCED_INSTANCE_ID => self.fatal(resp.error_code),
            codes::NOT_COORDINATOR | codes::COORDINATOR_NOT_AVAILABLE => {
                self.phase = Phase::Unjoined;
                let reason = format!("JoinGroup {}", error_name(resp.error_code));
                self.coordinator_error(now, sent, &reason);
            }
            _ => {
                // REBALANCE_IN_PROGRESS, COORDINATOR_LOAD_IN_PROGRESS and the rest: back off, retry.
                self.phase = Phase::Unjoined;
                self.join_retry_at = Some(self.join_backoff(now));
            }
        }
    }

    /// NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE from the coordinator `sent` went to.
    fn coordinator_error(&mut self, now: Millis, sent: &Sent, reason: &str) {
        if let Target::Coordinator(node) = sent.target {
            if self.coordinator == Some(node) {
                self.mark_coordinator_unknown(now, reason);
            }
        }
    }

    fn complete_leader_assignment(&mut self, now: Millis, members: BTreeMap<String, Subscription>) {
        let protocol = self.protocol.clone().unwrap_or_default();
        let Some(assignor) = self.assignors.iter().find(|a| a.name() == protocol) else {
            // The coordinator chose a protocol this member never offered: retry the join.
            self.phase = Phase::Unjoined;
            self.join_retry_at = Some(self.join_backoff(now));
            return;
        };
        let topics: BTreeSet<String> =
            members.values().flat_map(|s| s.topics.iter().cloned()).collect();
        let counts: BTreeMap<String, i32> =
            topics.iter().filter_map(|t| self.partition_count(t).map(|c| (t.clone(), c))).collect();
        let mut result = assignor.assign(&counts, &members);
        result.retain(|m, _| members.contains_key(m));
        for m in members.keys() {
            result.entry(m.clone()).or_default();
        }
        for parts in result.values_mut() {
            parts.sort();
            parts.dedup();
        }
        if self.config.bugs.double_assign && result.len() >= 2 {
            // Bug: the first member's first partition is also given to the next member.
            let members: Vec<String> = result.keys().cloned().collect();
            let pick = members.iter().enumerate().find_map(|(i, m)| {
                result[m].first().map(|tp| (tp.clone(), members[(i + 1) % members.len()].clone()))
            });
            if let Some((tp, other)) = pick {
                let parts = result.get_mut(&other).expect("member exists");
                if !parts.contains(&tp) {
                    parts.push(tp);
                    parts.sort();
                }
            }
        }
        self.emit(MemberEvent::AssignmentComputed {
            generation: self.generation,
            protocol,
            assignments: result.iter().map(|(m, p)| (m.clone(), p.clone())).collect(),
        });
        self.assignment_snapshot =
            topics.iter().map(|t| (t.clone(), self.partition_count(t))).collect();
        let assignments = result
            .into_iter()
            .map(|(m, partitions)| {
                SyncGroupRequestAssignment::default()
                    .with_member_id(sb(&m))
                    .with_assignment(encode_assignment(&Assignment { partitions, user_data: None }))
            })
            .collect();
        self.send_sync_group(assignments);
    }

    fn send_sync_group(&mut self, assignments: Vec<SyncGroupRequestAssignment>) {
        let Some(node) = self.coordinator else {
            self.phase = Phase::Unjoined;
            return;
        };
        let req = SyncGroupRequest::default()
            .with_group_id(self.group_id())
            .with_generation_id(self.generation)
            .with_member_id(sb(&self.member_id))
            .with_group_instance_id(self.instance_id())
            .with_protocol_type(Some(sb("consumer")))
            .with_protocol_name(self.protocol.as_deref().map(sb))
            .with_assignments(assignments);
        let timeout = self.config.request_timeout_ms;
        self.send(
            Target::Coordinator(node),
            RequestKind::SyncGroup(req),
            timeout,
            Pending::SyncGroup,
        );
        self.phase = Phase::Syncing;
    }

    fn on_sync_group(&mut self, now: Millis, sent: &Sent, resp: SyncGroupResponse) {
        if self.phase != Phase::Syncing || sent.generation != self.generation || self.leaving {
            return;
        }
        match resp.error_code {
            codes::NONE => match decode_assignment(&resp.assignment) {
                Ok(a) => self.on_assigned(now, a.partitions),
                Err(_) => {
                    // Garbled assignment bytes: nothing usable; back off and rejoin.
                    self.phase = Phase::Unjoined;
                    self.join_retry_at = Some(self.join_backoff(now));
                }
            },
            codes::REBALANCE_IN_PROGRESS => self.phase = Phase::Unjoined,
            codes::UNKNOWN_MEMBER_ID => self.reset_generation(resp.error_code, true),
            codes::ILLEGAL_GENERATION => self.reset_generation(resp.error_code, false),
            codes::FENCED_INSTANCE_ID => self.fatal(resp.error_code),
            codes::NOT_COORDINATOR | codes::COORDINATOR_NOT_AVAILABLE => {
                self.phase = Phase::Unjoined;
                let reason = format!("SyncGroup {}", error_name(resp.error_code));
                self.coordinator_error(now, sent, &reason);
            }
            _ => {
                self.phase = Phase::Unjoined;
                self.join_retry_at = Some(self.join_backoff(now));
            }
        }
    }

    fn on_assigned(&mut self, now: Millis, mut partitions: Vec<TopicPartition>) {
        partitions.sort();
        partitions.dedup();
        self.join_attempts = 0;
        self.last_assignment = (self.generation, partitions.clone());
        let added: Vec<TopicPartition> =
            partitions.iter().filter(|tp| !self.assigned.contains(tp)).cloned().collect();
        if self.cooperative {
            self.assign_incrementally(now, &partitions);
        } else {
            self.clear_assignment();
            self.assigned = partitions.clone();
            self.partitions =
                partitions.iter().map(|tp| (tp.clone(), PartitionState::new())).collect();
        }
        self.watched_counts =
            self.config.topics.iter().map(|t| (t.clone(), self.partition_count(t))).collect();
        self.phase = Phase::Stable;
        self.rejoin_needed = false;
        self.emit(MemberEvent::Assigned {
            member_id: self.member_id.clone(),
            generation: self.generation,
            partitions,
        });
        self.app.on_partitions_assigned(now, self.generation, &added);
        if self.cooperative && !self.pending_revoke.is_empty() {
            let revoking = self.pending_revoke.clone();
            let extra = std::mem::take(&mut self.slow_revoke_ms)
                + self.app.on_partitions_revoked(now, self.generation, &revoking);
            self.revoke_stage = RevokeStage::Callback { since: now, until: now + extra };
            if extra == 0 {
                self.revoke_stage = RevokeStage::Done;
                self.finish_cooperative_revoke();
            }
        }
        self.next_heartbeat_at = Some(now + self.config.heartbeat_interval_ms);
        self.last_heartbeat_ok = now;
        if self.next_commit_at.is_none() {
            self.next_commit_at = Some(now + self.config.commit_interval_ms);
        }
        let unknown: BTreeSet<String> = self
            .assigned
            .iter()
            .filter(|tp| self.leader_of(tp).is_none())
            .map(|tp| tp.topic.clone())
            .collect();
        for t in unknown {
            self.want_metadata_for(&t);
        }
    }

    /// KIP-429 on the member: partitions in both the old and the new assignment are kept with
    /// their positions (a kept partition with uncommitted progress re-reads its committed
    /// offset, so nothing processed in an earlier generation is committed in this one); new
    /// ones start from their committed offsets; those taken away stop fetching at once and are
    /// revoked when the revoke callback returns.
    fn assign_incrementally(&mut self, _now: Millis, partitions: &[TopicPartition]) {
        let old = std::mem::take(&mut self.partitions);
        let revoked: Vec<TopicPartition> =
            self.assigned.iter().filter(|tp| !partitions.contains(tp)).cloned().collect();
        if self.config.bugs.commit_after_revoke {
            self.partitions = old.clone();
            self.stash_extra_commits(&revoked);
        }
        self.buffered.clear();
        self.assignment_epoch += 1;
        self.partitions = partitions
            .iter()
            .map(|tp| {
                let ps = match old.get(tp) {
                    Some(ps)
                        if ps.state == PositionState::Ready
                            && ps.processed.is_some()
                            && ps.processed == ps.commit_floor =>
                    {
                        let mut ps = ps.clone();
                        ps.fetch_position = ps.processed.unwrap_or(ps.fetch_position);
                        ps.fetch_in_flight = false;
                        ps.buffered = false;
                        ps
                    }
                    _ => PartitionState::new(),
                };
                (tp.clone(), ps)
            })
            .collect();
        let mut assigned: Vec<TopicPartition> = partitions.to_vec();
        assigned.extend(revoked.iter().cloned());
        assigned.sort();
        self.assigned = assigned;
        self.pending_revoke = revoked;
    }

    // ----------------------------------------------------------------------------------------
    // Heartbeats
    // ----------------------------------------------------------------------------------------

    fn maybe_heartbeat(&mut self, now: Millis) {
        let Some(node) = self.coordinator else {
            return;
        };
        if self.heartbeat_in_flight.is_some() || self.next_heartbeat_at.is_none_or(|t| t > now) {
            return;
        }
        if now >= self.last_heartbeat_ok + self.config.session_timeout_ms.max(0) as u64 {
            // No heartbeat got through for a whole session: the coordinator is presumed gone.
            self.mark_coordinator_unknown(
                now,
                "session timeout expired without a heartbeat answer",
            );
            return;
        }
        let req = HeartbeatRequest::default()
            .with_group_id(self.group_id())
            .with_generation_id(self.generation)
            .with_member_id(sb(&self.member_id))
            .with_group_instance_id(self.instance_id());
        let timeout = self.config.request_timeout_ms;
        let id = self.send(
            Target::Coordinator(node),
            RequestKind::Heartbeat(req),
            timeout,
            Pending::Heartbeat,
        );
        self.heartbeat_in_flight = Some(id);
        self.next_heartbeat_at = Some(now + self.config.heartbeat_interval_ms);
    }

    fn on_heartbeat(&mut self, now: Millis, id: RequestId, sent: &Sent, code: i16) {
        if self.heartbeat_in_flight == Some(id) {
            self.heartbeat_in_flight = None;
        }
        if code == codes::NONE {
            if sent.generation == self.generation {
                self.last_heartbeat_ok = now;
            }
            return;
        }
        if !self.handle_group_error(now, sent, code, "Heartbeat")
            || code == codes::COORDINATOR_LOAD_IN_PROGRESS
        {
            self.next_heartbeat_at = Some(self.backoff(now));
        }
    }

    // ----------------------------------------------------------------------------------------
    // Commits
    // ----------------------------------------------------------------------------------------

    /// Processed positions that moved since the last acknowledged commit.
    fn offsets_to_commit(&self) -> Vec<(TopicPartition, i64)> {
        let overcommit = self.config.bugs.skip_revoke_commit_then_overcommit;
        self.partitions
            .iter()
            .filter_map(|(tp, ps)| {
                // Bug: the fetch position (records fetched, maybe not processed) is committed.
                let position = if overcommit && ps.state == PositionState::Ready {
                    ps.processed.map(|p| p.max(ps.fetch_position))
                } else {
                    ps.processed
                };
                match position {
                    Some(p) if Some(p) != ps.commit_floor => Some((tp.clone(), p)),
                    _ => None,
                }
            })
            .collect()
    }

    fn maybe_auto_commit(&mut self, now: Millis) {
        if self.coordinator.is_none()
            || self.commit_in_flight.is_some()
            || self.next_commit_at.is_none_or(|t| t > now)
        {
            return;
        }
        self.next_commit_at = Some(now + self.config.commit_interval_ms);
        let mut offsets = self.offsets_to_commit();
        if !self.extra_commits.is_empty() {
            // Bugs: offsets of partitions no longer owned, committed under the current generation.
            for (tp, o) in std::mem::take(&mut self.extra_commits) {
                if !offsets.iter().any(|(t, _)| *t == tp) {
                    offsets.push((tp, o));
                }
            }
            offsets.sort();
        }
        if !offsets.is_empty() {
            self.send_commit(offsets, CommitPurpose::Auto);
        }
    }

    fn send_commit(&mut self, offsets: Vec<(TopicPartition, i64)>, purpose: CommitPurpose) {
        let Some(node) = self.coordinator else {
            return;
        };
        let mut topics: Vec<OffsetCommitRequestTopic> = Vec::new();
        for (tp, offset) in &offsets {
            let part = OffsetCommitRequestPartition::default()
                .with_partition_index(tp.partition)
                .with_committed_offset(*offset);
            match topics.last_mut() {
                Some(t) if t.name.0.as_str() == tp.topic => t.partitions.push(part),
                _ => topics.push(
                    OffsetCommitRequestTopic::default()
                        .with_name(TopicName(sb(&tp.topic)))
                        .with_partitions(vec![part]),
                ),
            }
        }
        let req = OffsetCommitRequest::default()
            .with_group_id(self.group_id())
            .with_generation_id_or_member_epoch(self.generation)
            .with_member_id(sb(&self.member_id))
            .with_group_instance_id(self.instance_id())
            .with_topics(topics);
        for (tp, offset) in &offsets {
            self.emit(MemberEvent::CommitSent {
                member_id: self.member_id.clone(),
                generation: self.generation,
                partition: tp.clone(),
                offset: *offset,
            });
        }
        let timeout = self.config.request_timeout_ms;
        let epoch = self.assignment_epoch;
        let pending = Pending::OffsetCommit { offsets, purpose, epoch };
        let id =
            self.send(Target::Coordinator(node), RequestKind::OffsetCommit(req), timeout, pending);
        self.commit_in_flight = Some(id);
    }

    #[allow(clippy::too_many_arguments)]
    fn on_offset_commit(
        &mut self,
        now: Millis,
        id: RequestId,
        sent: &Sent,
        offsets: Vec<(TopicPartition, i64)>,
        purpose: CommitPurpose,
        epoch: u64,
        resp: OffsetCommitResponse,
    ) {
        if self.commit_in_flight == Some(id) {
            self.commit_in_flight = None;
        }
        let mut answers: BTreeMap<TopicPartition, i16> = BTreeMap::new();
        for t in &resp.topics {
            for p in &t.partitions {
                answers.insert(
                    TopicPartition::new(t.name.0.as_str(), p.partition_index),
                    p.error_code,
                );
            }
        }
        let mut first_error = None;
        for (tp, offset) in offsets {
            let code = answers.get(&tp).copied().unwrap_or(codes::UNKNOWN_SERVER_ERROR);
            if code == codes::NONE {
                if epoch == self.assignment_epoch {
                    if let Some(ps) = self.partitions.get_mut(&tp) {
                        ps.committed = Some(offset);
                        ps.commit_floor = Some(offset);
                    }
                }
                self.emit(MemberEvent::CommitAcked {
                    member_id: sent.member_id.clone(),
                    generation: sent.generation,
                    partition: tp,
                    offset,
                });
            } else {
                first_error.get_or_insert(code);
                self.emit(MemberEvent::CommitFailed {
                    member_id: sent.member_id.clone(),
                    generation: sent.generation,
                    partition: tp,
                    offset,
                    error: error_name(code),
                });
            }
        }
        if let Some(code) = first_error {
            let handled = self.handle_group_error(now, sent, code, "OffsetCommit");
            let retriable = !handled
                || matches!(code, codes::NOT_COORDINATOR | codes::COORDINATOR_NOT_AVAILABLE);
            if purpose == CommitPurpose::Auto
                && (retriable || code == codes::COORDINATOR_LOAD_IN_PROGRESS)
            {
                self.next_commit_at = Some(self.backoff(now));
            }
        }
    }

    // ----------------------------------------------------------------------------------------
    // Starting positions: OffsetFetch, then ListOffsets earliest where nothing was committed
    // ----------------------------------------------------------------------------------------

    fn maybe_fetch_committed(&mut self) {
        let Some(node) = self.coordinator else {
            return;
        };
        if self.offset_fetch_in_flight.is_some() || self.offset_fetch_retry_at.is_some() {
            return;
        }
        let wanted: Vec<TopicPartition> = self
            .partitions
            .iter()
            .filter(|(_, ps)| ps.state == PositionState::AwaitingCommitted)
            .map(|(tp, _)| tp.clone())
            .collect();
        if wanted.is_empty() {
            return;
        }
        let mut topics: Vec<OffsetFetchRequestTopics> = Vec::new();
        for tp in &wanted {
            match topics.last_mut() {
                Some(t) if t.name.0.as_str() == tp.topic => t.partition_indexes.push(tp.partition),
                _ => topics.push(
                    OffsetFetchRequestTopics::default()
                        .with_name(TopicName(sb(&tp.topic)))
                        .with_partition_indexes(vec![tp.partition]),
                ),
            }
        }
        let req =
            OffsetFetchRequest::default().with_groups(vec![OffsetFetchRequestGroup::default()
                .with_group_id(self.group_id())
                .with_topics(Some(topics))]);
        let timeout = self.config.request_timeout_ms;
        let pending = Pending::OffsetFetch { epoch: self.assignment_epoch, partitions: wanted };
        let id =
            self.send(Target::Coordinator(node), RequestKind::OffsetFetch(req), timeout, pending);
        self.offset_fetch_in_flight = Some(id);
    }

    fn on_offset_fetch(
        &mut self,
        now: Millis,
        id: RequestId,
        sent: &Sent,
        epoch: u64,
        partitions: Vec<TopicPartition>,
        resp: OffsetFetchResponse,
    ) {
        if self.offset_fetch_in_flight == Some(id) {
            self.offset_fetch_in_flight = None;
        }
        // Both shapes: v8+ answers per group, older versions at the top level.
        let mut answers: BTreeMap<TopicPartition, (i64, i16)> = BTreeMap::new();
        let top_error = if resp.groups.is_empty() {
            for t in &resp.topics {
                for p in &t.partitions {
                    answers.insert(
                        TopicPartition::new(t.name.0.as_str(), p.partition_index),
                        (p.committed_offset, p.error_code),
                    );
                }
            }
            resp.error_code
        } else {
            let g = resp
                .groups
                .iter()
                .find(|g| g.group_id.0.as_str() == self.config.group_id)
                .unwrap_or(&resp.groups[0]);
            for t in &g.topics {
                for p in &t.partitions {
                    answers.insert(
                        TopicPartition::new(t.name.0.as_str(), p.partition_index),
                        (p.committed_offset, p.error_code),
                    );
                }
            }
            g.error_code
        };
        if top_error != codes::NONE {
            self.handle_group_error(now, sent, top_error, "OffsetFetch");
            self.offset_fetch_retry_at = Some(self.backoff(now));
            return;
        }
        if epoch != self.assignment_epoch || self.phase != Phase::Stable {
            return;
        }
        let mut retry = false;
        for tp in partitions {
            let answer = answers.get(&tp).copied();
            let (member_id, generation) = (self.member_id.clone(), self.generation);
            let Some(ps) = self.partitions.get_mut(&tp) else {
                continue;
            };
            if ps.state != PositionState::AwaitingCommitted {
                continue;
            }
            match answer {
                Some((offset, codes::NONE)) if offset >= 0 => {
                    ps.state = PositionState::Ready;
                    ps.fetch_position = offset;
                    ps.processed = Some(offset);
                    ps.committed = Some(offset);
                    ps.commit_floor = Some(offset);
                    self.outputs.push_back(MemberOutput::Event(MemberEvent::PositionInitialized {
                        member_id,
                        generation,
                        partition: tp,
                        committed: Some(offset),
                        position: offset,
                    }));
                }
                Some((_, codes::NONE)) => {
                    ps.state = PositionState::AwaitingReset { in_flight: false };
                    ps.committed = None;
                }
                _ => retry = true,
            }
        }
        if retry {
            self.offset_fetch_retry_at = Some(self.backoff(now));
        }
    }

    fn maybe_list_offsets(&mut self) {
        if self.list_offsets_retry_at.is_some() {
            return;
        }
        let mut by_leader: BTreeMap<i32, Vec<TopicPartition>> = BTreeMap::new();
        let mut no_leader = Vec::new();
        for (tp, ps) in &self.partitions {
            if ps.state != (PositionState::AwaitingReset { in_flight: false }) {
                continue;
            }
            match self.leader_of(tp) {
                Some(node) => by_leader.entry(node).or_default().push(tp.clone()),
                None => no_leader.push(tp.topic.clone()),
            }
        }
        for t in no_leader {
            self.want_metadata_for(&t);
        }
        for (node, tps) in by_leader {
            let mut topics: Vec<ListOffsetsTopic> = Vec::new();
            for tp in &tps {
                let part = ListOffsetsPartition::default()
                    .with_partition_index(tp.partition)
                    .with_timestamp(EARLIEST_TIMESTAMP);
                match topics.last_mut() {
                    Some(t) if t.name.0.as_str() == tp.topic => t.partitions.push(part),
                    _ => topics.push(
                        ListOffsetsTopic::default()
                            .with_name(TopicName(sb(&tp.topic)))
                            .with_partitions(vec![part]),
                    ),
                }
            }
            for tp in &tps {
                if let Some(ps) = self.partitions.get_mut(tp) {
                    ps.state = PositionState::AwaitingReset { in_flight: true };
                }
            }
            let req =
                ListOffsetsRequest::default().with_replica_id(BrokerId(-1)).with_topics(topics);
            let timeout = self.config.request_timeout_ms;
            let pending = Pending::ListOffsets { epoch: self.assignment_epoch, partitions: tps };
            self.send(Target::Broker(node), RequestKind::ListOffsets(req), timeout, pending);
        }
    }

    fn clear_list_offsets_in_flight(&mut self, epoch: u64, partitions: &[TopicPartition]) {
        if epoch != self.assignment_epoch {
            return;
        }
        for tp in partitions {
            if let Some(ps) = self.partitions.get_mut(tp) {
                if ps.state == (PositionState::AwaitingReset { in_flight: true }) {
                    ps.state = PositionState::AwaitingReset { in_flight: false };
                }
            }
        }
    }

    fn on_list_offsets(
        &mut self,
        now: Millis,
        epoch: u64,
        partitions: Vec<TopicPartition>,
        resp: ListOffsetsResponse,
    ) {
        self.clear_list_offsets_in_flight(epoch, &partitions);
        if epoch != self.assignment_epoch {
            return;
        }
        let mut answers: BTreeMap<TopicPartition, (i64, i16)> = BTreeMap::new();
        for t in &resp.topics {
            for p in &t.partitions {
                answers.insert(
                    TopicPartition::new(t.name.0.as_str(), p.partition_index),
                    (p.offset, p.error_code),
                );
            }
        }
        let mut retry = false;
        for tp in partitions {
            let answer = answers.get(&tp).copied();
            let (member_id, generation) = (self.member_id.clone(), self.generation);
            let Some(ps) = self.partitions.get_mut(&tp) else {
                continue;
            };
            if ps.state != (PositionState::AwaitingReset { in_flight: false }) {
                continue;
            }
            match answer {
                Some((offset, codes::NONE)) if offset >= 0 => {
                    ps.state = PositionState::Ready;
                    ps.fetch_position = offset;
                    ps.processed = Some(offset);
                    if ps.commit_floor.is_none() {
                        ps.commit_floor = Some(offset);
                    }
                    let committed = ps.committed;
                    self.outputs.push_back(MemberOutput::Event(MemberEvent::PositionInitialized {
                        member_id,
                        generation,
                        partition: tp,
                        committed,
                        position: offset,
                    }));
                }
                Some((_, code)) if codes::is_leadership_error(code) => {
                    retry = true;
                    self.want_metadata_for(&tp.topic);
                }
                _ => retry = true,
            }
        }
        if retry {
            self.list_offsets_retry_at = Some(self.backoff(now));
        }
    }

    // ----------------------------------------------------------------------------------------
    // Fetching and processing
    // ----------------------------------------------------------------------------------------

    fn maybe_fetch(&mut self) {
        let mut by_node: BTreeMap<i32, Vec<(TopicPartition, i64)>> = BTreeMap::new();
        let mut no_leader = Vec::new();
        for (tp, ps) in &self.partitions {
            if ps.state != PositionState::Ready || ps.fetch_in_flight || ps.buffered {
                continue;
            }
            let Some(node) = self.leader_of(tp) else {
                no_leader.push(tp.topic.clone());
                continue;
            };
            if self.fetch_in_flight.contains_key(&node) || self.fetch_retry_at.contains_key(&node) {
                continue;
            }
            by_node.entry(node).or_default().push((tp.clone(), ps.fetch_position));
        }
        for t in no_leader {
            self.want_metadata_for(&t);
        }
        for (node, parts) in by_node {
            let mut topics: Vec<FetchTopic> = Vec::new();
            for (tp, position) in &parts {
                let part = FetchPartition::default()
                    .with_partition(tp.partition)
                    .with_fetch_offset(*position)
                    .with_partition_max_bytes(PARTITION_MAX_BYTES);
                match topics.last_mut() {
                    Some(t) if t.topic.0.as_str() == tp.topic => t.partitions.push(part),
                    _ => {
                        let template = self
                            .topics
                            .get(&tp.topic)
                            .map(|m| m.fetch_template.clone())
                            .unwrap_or_else(|| {
                                FetchTopic::default().with_topic(TopicName(sb(&tp.topic)))
                            });
                        topics.push(template.with_partitions(vec![part]));
                    }
                }
            }
            let req = FetchRequest::default()
                .with_max_wait_ms(self.config.fetch_max_wait_ms)
                .with_min_bytes(1)
                .with_max_bytes(FETCH_MAX_BYTES)
                .with_topics(topics);
            let timeout =
                self.config.request_timeout_ms + self.config.fetch_max_wait_ms.max(0) as u64;
            for (tp, _) in &parts {
                if let Some(ps) = self.partitions.get_mut(tp) {
                    ps.fetch_in_flight = true;
                }
            }
            let pending = Pending::Fetch {
                epoch: self.assignment_epoch,
                node,
                positions: parts.into_iter().collect(),
            };
            let id = self.send(Target::Broker(node), RequestKind::Fetch(req), timeout, pending);
            self.fetch_in_flight.insert(node, id);
        }
    }

    fn clear_fetch_in_flight(
        &mut self,
        id: RequestId,
        epoch: u64,
        node: i32,
        positions: &BTreeMap<TopicPartition, i64>,
    ) {
        if self.fetch_in_flight.get(&node) == Some(&id) {
            self.fetch_in_flight.remove(&node);
        }
        if epoch == self.assignment_epoch {
            for tp in positions.keys() {
                if let Some(ps) = self.partitions.get_mut(tp) {
                    ps.fetch_in_flight = false;
                }
            }
        }
    }

    fn on_fetch(
        &mut self,
        now: Millis,
        id: RequestId,
        epoch: u64,
        node: i32,
        positions: BTreeMap<TopicPartition, i64>,
        resp: FetchResponse,
    ) {
        self.clear_fetch_in_flight(id, epoch, node, &positions);
        if epoch != self.assignment_epoch
            || self.phase != Phase::Stable
            || self.rejoin_needed
            || self.leaving
        {
            return; // records for an assignment being given up are dropped
        }
        if resp.error_code != codes::NONE {
            self.fetch_retry_at.insert(node, self.backoff(now));
            return;
        }
        let max = self.config.max_records_per_fetch.max(1);
        let mut got_records = false;
        let mut errored = false;
        for topic in &resp.responses {
            let name = if !topic.topic.0.is_empty() {
                topic.topic.0.to_string()
            } else {
                match self.topics.iter().find(|(_, m)| {
                    !topic.topic_id.is_nil() && m.fetch_template.topic_id == topic.topic_id
                }) {
                    Some((n, _)) => n.clone(),
                    None => continue,
                }
            };
            for pd in &topic.partitions {
                let tp = TopicPartition::new(name.clone(), pd.partition_index);
                let Some(&requested) = positions.get(&tp) else {
                    continue;
                };
                let Some(ps) = self.partitions.get_mut(&tp) else {
                    continue;
                };
                if ps.state != PositionState::Ready || ps.fetch_position != requested || ps.buffered
                {
                    continue;
                }
                match pd.error_code {
                    codes::NONE => {
                        if let Some((first, last, count)) =
                            offsets_in(pd.records.clone(), requested, max)
                        {
                            ps.fetch_position = last + 1;
                            ps.buffered = true;
                            self.buffered.push_back(FetchedBatch { tp, first, last, count, epoch });
                            got_records = true;
                        }
                    }
                    codes::OFFSET_OUT_OF_RANGE => {
                        ps.state = PositionState::AwaitingReset { in_flight: false };
                    }
                    code if codes::is_leadership_error(code) => {
                        errored = true;
                        self.want_metadata_for(&tp.topic);
                    }
                    _ => errored = true,
                }
            }
        }
        if errored {
            self.fetch_retry_at.insert(node, self.backoff(now));
        } else if !got_records {
            self.fetch_retry_at.insert(node, now + self.config.fetch_backoff_ms);
        }
    }

    fn draw_processing_ms(&mut self) -> u64 {
        let (a, b) = self.config.processing_ms_per_record;
        let (lo, hi) = (a.min(b), a.max(b));
        if lo == hi {
            lo
        } else {
            self.rng.random_range(lo..=hi)
        }
    }

    /// How many batches may be processed at once: one (the poll loop), or one per partition
    /// for Elsa's per-partition workers.
    fn max_concurrent_batches(&self) -> usize {
        if self.config.profile == ClientProfile::Elsa {
            usize::MAX
        } else {
            1
        }
    }

    fn maybe_start_processing(&mut self, now: Millis) {
        if self.leaving {
            return;
        }
        let mut i = 0;
        while i < self.buffered.len() && self.processing.len() < self.max_concurrent_batches() {
            let batch = &self.buffered[i];
            if batch.epoch != self.assignment_epoch || !self.partitions.contains_key(&batch.tp) {
                self.buffered.remove(i);
                continue;
            }
            // One batch at a time per partition, and none while a detached batch of the same
            // assignment is unfinished: acks must stay in offset order.
            let busy = self
                .processing
                .iter()
                .chain(&self.detached)
                .any(|p| p.tp == batch.tp && p.epoch == self.assignment_epoch);
            if busy {
                i += 1;
                continue;
            }
            let batch = self.buffered.remove(i).expect("index checked");
            if let Some(ps) = self.partitions.get_mut(&batch.tp) {
                ps.buffered = false;
            }
            let duration =
                match self.app.processing_ms(&batch.tp, batch.first, batch.last, batch.count) {
                    Some(ms) => ms,
                    None => (0..batch.count).map(|_| self.draw_processing_ms()).sum(),
                };
            let ack_delay = if self.config.profile.acks_asynchronously() {
                self.app.ack_delay_ms(&batch.tp, batch.first, batch.last)
            } else {
                0
            };
            let mut p = Processing {
                tp: batch.tp,
                first: batch.first,
                last: batch.last,
                started_at: now,
                done_at: now + duration,
                epoch: batch.epoch,
                generation: self.generation,
                member_id: self.member_id.clone(),
            };
            match self.stale_ack_ms.take() {
                Some(delay) => {
                    p.done_at += delay + ack_delay;
                    self.detached.push(p);
                }
                None if ack_delay > 0 => {
                    p.done_at += ack_delay;
                    self.detached.push(p);
                }
                None => self.processing.push(p),
            }
        }
    }

    /// Finishes every batch due by `now`, in the order they finish. Each is recorded as
    /// processed under the member id and generation it ran in, then acknowledged: the ack
    /// counts only if the partition's assignment is still the one the batch ran under (an ack
    /// from an older generation is dropped, as brod and Elsa's acknowledger do).
    fn finish_processing(&mut self, now: Millis) {
        loop {
            let due = |p: &Processing| p.done_at <= now;
            let next = self
                .processing
                .iter()
                .enumerate()
                .filter(|(_, p)| due(p))
                .map(|(i, p)| (p.done_at, false, i))
                .chain(
                    self.detached
                        .iter()
                        .enumerate()
                        .filter(|(_, p)| due(p))
                        .map(|(i, p)| (p.done_at, true, i)),
                )
                .min();
            let Some((_, detached, i)) = next else { return };
            let p = if detached { self.detached.remove(i) } else { self.processing.remove(i) };
            self.emit(MemberEvent::RecordsProcessed {
                member_id: p.member_id.clone(),
                generation: p.generation,
                partition: p.tp.clone(),
                first_offset: p.first,
                last_offset: p.last,
            });
            let current = p.epoch == self.assignment_epoch;
            match self.partitions.get_mut(&p.tp) {
                Some(ps) if current => ps.processed = Some(p.last + 1),
                _ if !current && self.config.bugs.keep_stale_acks => {
                    // Bug: the stale ack is merged into the current acked offsets (replacing the
                    // partition's entry, as brod's ack merge does) and committed under the
                    // current generation, owned or not.
                    match self.partitions.get_mut(&p.tp) {
                        Some(ps) if ps.state == PositionState::Ready => {
                            ps.processed = Some(p.last + 1)
                        }
                        _ => self.extra_commits.push((p.tp.clone(), p.last + 1)),
                    }
                }
                _ => {}
            }
        }
    }

    /// Drops fetched records that were not processed yet; their partitions fetch again from the
    /// first dropped offset.
    fn drop_buffered(&mut self) {
        while let Some(b) = self.buffered.pop_front() {
            if b.epoch != self.assignment_epoch {
                continue;
            }
            if let Some(ps) = self.partitions.get_mut(&b.tp) {
                ps.buffered = false;
                ps.fetch_position = ps.fetch_position.min(b.first);
            }
        }
    }
}
