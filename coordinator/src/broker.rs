//! The sans-IO broker: answers the APIs a consumer needs and forwards group APIs to the group
//! coordinator.
//!
//! A [`Broker`] owns one [`GroupCoordinator`] and a handle on the cluster's shared partition logs.
//! Non-group APIs (ApiVersions, Metadata, FindCoordinator, ListOffsets, Fetch, and Produce and
//! InitProducerId for `groupsim serve`) are answered at
//! once from the logs and the cluster layout; group APIs go to the coordinator, which may answer
//! later (JoinGroup waits for the rebalance). Both kinds of answers, and the coordinator's
//! events, come out of one queue ([`Broker::poll_output`]) in the order they were produced.
//!
//! # Placement
//! Who leads what is read from the cluster's [`SharedClusterState`] (see `cluster.rs`), which
//! starts from the placement rules in `placement.rs` ([`partition_leader`], [`group_partition`])
//! and changes when the world moves leadership. A broker answers NOT_COORDINATOR for groups it
//! does not coordinate and NOT_LEADER_OR_FOLLOWER for partitions it does not lead.
//!
//! # Coordinator moves
//! [`Broker::become_coordinator`] makes this broker load an offsets partition it now leads
//! (answering COORDINATOR_LOAD_IN_PROGRESS meanwhile); [`Broker::resign_coordinator`] unloads
//! one. Before every request and timer the broker also compares the partitions its coordinator
//! owns with the shared state: one now led elsewhere, or led here at a newer epoch, is unloaded
//! at once, so a broker that missed its resignation can never append for a partition it lost.

use std::collections::{BTreeMap, VecDeque};

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::describe_groups_response::DescribedGroup;
use kafka_protocol::messages::offset_fetch_response::OffsetFetchResponseGroup;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use serde::{Deserialize, Serialize};

use crate::api::init_producer_id::ProducerIds;
use crate::api::refusal::group_error_response;
use crate::api::{
    api_versions, error_answers, fetch, find_coordinator, init_producer_id, list_offsets, metadata,
    produce,
};
use crate::cluster::{self, ClusterState, Placement, SharedClusterState};
// Placement used to live here; the paths `broker::BrokerAddress`, `broker::group_partition`, …
// stay for the crates that import them from here.
use crate::log::SharedLogs;
use crate::offsets_log::{OffsetsLog, SharedOffsetsLog};
pub use crate::placement::{
    group_partition, java_string_hash_code, kafka_abs, partition_leader, BrokerAddress,
};
use crate::topics::TopicsImage;
use crate::{probes, CoordinatorConfig, CoordinatorOutput, GroupCoordinator, Millis, RequestId};
use groupsim_wire::codec::request_api_key;
use groupsim_wire::versions::is_served;

/// What a broker knows about itself and the cluster.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BrokerConfig {
    /// This broker's node id (must appear in `brokers`).
    pub node_id: i32,
    /// Cluster id reported in Metadata (v2+).
    pub cluster_id: String,
    /// Every broker of the cluster, in the same order on every broker (placement uses it).
    pub brokers: Vec<BrokerAddress>,
    /// `offsets.topic.num.partitions`: how many offsets partitions groups are spread over.
    pub offsets_topic_partitions: i32,
    /// Group coordinator settings; its `node_id` is overwritten with [`Self::node_id`].
    pub coordinator: CoordinatorConfig,
}

impl BrokerConfig {
    /// A one-broker cluster at `host:port` with node id 0, 50 offsets partitions (Kafka's
    /// default) and default coordinator settings.
    pub fn single(host: impl Into<String>, port: i32) -> Self {
        Self {
            node_id: 0,
            cluster_id: "groupsim".to_string(),
            brokers: vec![BrokerAddress { node_id: 0, host: host.into(), port }],
            offsets_topic_partitions: 50,
            coordinator: CoordinatorConfig::default(),
        }
    }

    /// The broker leading partition `partition` of any topic (see the module docs).
    pub fn partition_leader(&self, partition: i32) -> Option<&BrokerAddress> {
        partition_leader(&self.brokers, partition)
    }

    /// The broker coordinating `group_id`: the leader of the group's offsets partition.
    pub fn group_coordinator(&self, group_id: &str) -> Option<&BrokerAddress> {
        self.partition_leader(group_partition(group_id, self.offsets_topic_partitions))
    }

    /// Whether this broker coordinates `group_id`.
    pub fn coordinates(&self, group_id: &str) -> bool {
        self.group_coordinator(group_id).is_some_and(|b| b.node_id == self.node_id)
    }

    /// Whether this broker leads partition `partition` (of any topic) in the initial placement.
    /// A [`Broker`] answers from its shared cluster state instead, which may have moved it.
    pub fn is_leader(&self, partition: i32) -> bool {
        self.partition_leader(partition).is_some_and(|b| b.node_id == self.node_id)
    }
}

/// An instruction from the cluster's control (the simulated controller) to one broker.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum BrokerControl {
    /// Leadership of offsets partition `partition` moved here: load it, taking `load_ms`.
    BecomeCoordinator { partition: i32, load_ms: Millis },
    /// Leadership of offsets partition `partition` moved away: unload it.
    ResignCoordinator { partition: i32 },
    /// Start a rebalance of `group`, as a membership change would (fault injection).
    ForceRebalance { group: String },
    /// Expire `member`'s session in `group` now, as if it had gone silent (fault injection).
    ExpireMember { group: String, member: String },
}

/// A group API answer that needs NOT_COORDINATOR entries merged in for the groups this broker
/// does not coordinate (batched DescribeGroups and OffsetFetch v8+).
#[derive(Debug)]
struct Fixup {
    /// Every group of the original request, in order, with whether we coordinate it.
    groups: Vec<(StrBytes, bool)>,
}

/// Longest the broker holds a Fetch, whatever `max_wait_ms` it asks for (clients ask for
/// 500 ms to a few seconds; a held request holds its connection).
pub const MAX_FETCH_WAIT_MS: Millis = 30_000;

/// A Fetch held until a partition it asks for has something to return or its wait is over
/// (Kafka's fetch purgatory, `DelayedFetch`).
#[derive(Debug)]
struct ParkedFetch {
    id: RequestId,
    version: i16,
    request: FetchRequest,
    /// When `max_wait_ms` runs out: the answer goes then, empty or not.
    until: Millis,
}

/// The sans-IO broker (see the module docs).
#[derive(Debug)]
pub struct Broker {
    config: BrokerConfig,
    logs: SharedLogs,
    coordinator: GroupCoordinator,
    outputs: VecDeque<CoordinatorOutput>,
    fixups: BTreeMap<RequestId, Fixup>,
    producer_ids: ProducerIds,
    cluster: SharedClusterState,
    /// Fetches waiting for data, in the order they were read.
    parked: Vec<ParkedFetch>,
    /// What the last [`Self::reconcile`] compared: the cluster's count of offsets leadership
    /// moves and the coordinator's count of owned-partition changes. While both are the same it
    /// has nothing to do.
    reconciled: Option<(u64, u64)>,
}

impl Broker {
    /// A broker serving `logs` with a fresh group coordinator, in a cluster of its own: the
    /// placement is the initial one from `config` and never changes, and the offsets log is
    /// private. The offsets partitions it leads are loaded at once.
    pub fn new(config: BrokerConfig, logs: SharedLogs) -> Self {
        let cluster = ClusterState::new(config.brokers.clone(), config.offsets_topic_partitions);
        let log = OffsetsLog::new(config.offsets_topic_partitions).shared();
        Self::with_cluster(config, logs, cluster.shared(), log, 0)
    }

    /// A broker (re)starting at `now` in a cluster whose metadata is `cluster` and whose
    /// offsets log is `offsets_log`, both shared with the other brokers. The offsets partitions
    /// the cluster says it leads are loaded at once from the log; others come with
    /// [`Self::become_coordinator`].
    pub fn with_cluster(
        mut config: BrokerConfig,
        logs: SharedLogs,
        cluster: SharedClusterState,
        offsets_log: SharedOffsetsLog,
        now: Millis,
    ) -> Self {
        config.coordinator.node_id = config.node_id;
        let coordinator =
            GroupCoordinator::with_offsets_log(config.coordinator.clone(), offsets_log);
        let producer_ids = ProducerIds::for_node(config.node_id);
        let mut broker = Self {
            config,
            logs,
            coordinator,
            outputs: VecDeque::new(),
            fixups: BTreeMap::new(),
            producer_ids,
            cluster,
            parked: Vec::new(),
            reconciled: None,
        };
        let led: Vec<(i32, i32)> = {
            let state = cluster::lock(&broker.cluster);
            state
                .offsets_partitions_led_by(broker.config.node_id)
                .into_iter()
                .filter_map(|p| state.offsets_leadership(p).map(|l| (p, l.epoch)))
                .collect()
        };
        for (p, epoch) in led {
            broker.coordinator.load_partition(now, p, epoch, 0);
        }
        broker.pull_coordinator_outputs();
        broker
    }

    /// The shared cluster metadata this broker answers from.
    pub fn cluster(&self) -> &SharedClusterState {
        &self.cluster
    }

    /// Loads offsets partition `partition`, which the cluster state must say this broker now
    /// leads: its groups get COORDINATOR_LOAD_IN_PROGRESS (SyncGroup REBALANCE_IN_PROGRESS,
    /// Heartbeat NONE) until `load_ms` from now, then are served as loaded from the offsets log,
    /// with fresh session deadlines. False (and nothing done) if the cluster names another
    /// leader.
    pub fn become_coordinator(&mut self, now: Millis, partition: i32, load_ms: Millis) -> bool {
        self.reconcile();
        let leadership = cluster::lock(&self.cluster).offsets_leadership(partition);
        let ok = match leadership {
            Some(l) if l.leader == self.config.node_id => {
                self.coordinator.load_partition(now, partition, l.epoch, load_ms);
                true
            }
            _ => false,
        };
        self.pull_coordinator_outputs();
        ok
    }

    /// Unloads offsets partition `partition` (leadership moved away): its groups go Dead here,
    /// parked JoinGroup and SyncGroup requests and commits awaiting their append get
    /// NOT_COORDINATOR, and so does every later request for them.
    pub fn resign_coordinator(&mut self, _now: Millis, partition: i32) {
        self.coordinator.unload_partition(partition);
        self.pull_coordinator_outputs();
    }

    /// Carries out a control instruction at `now`.
    pub fn apply_control(&mut self, now: Millis, control: BrokerControl) {
        match control {
            BrokerControl::BecomeCoordinator { partition, load_ms } => {
                if !self.become_coordinator(now, partition, load_ms) {
                    tracing::debug!(
                        node = self.config.node_id,
                        partition,
                        "told to load an offsets partition the cluster gives to another broker"
                    );
                }
            }
            BrokerControl::ResignCoordinator { partition } => {
                self.resign_coordinator(now, partition)
            }
            BrokerControl::ForceRebalance { group } => {
                self.coordinator.force_rebalance(now, &group);
                self.pull_coordinator_outputs();
            }
            BrokerControl::ExpireMember { group, member } => {
                self.coordinator.expire_member(now, &group, &member);
                self.pull_coordinator_outputs();
            }
        }
    }

    /// Unloads every owned offsets partition the shared state no longer gives this broker at
    /// the epoch it was loaded at.
    fn reconcile(&mut self) {
        let changes = self.coordinator.owned_changes();
        {
            let state = cluster::lock(&self.cluster);
            let moves = state.offsets_moves();
            if self.reconciled == Some((moves, changes)) {
                drop(state);
                // As the walk below would end, finding nothing lost.
                if self.coordinator.owned_partitions().is_some() {
                    self.pull_coordinator_outputs();
                }
                return;
            }
            self.reconciled = Some((moves, changes));
        }
        let lost: Vec<i32> = {
            let Some(owned) = self.coordinator.owned_partitions() else { return };
            let state = cluster::lock(&self.cluster);
            owned
                .filter(|(p, load)| {
                    state
                        .offsets_leadership(*p)
                        .is_none_or(|l| l.leader != self.config.node_id || l.epoch != load.epoch())
                })
                .map(|(p, _)| p)
                .collect()
        };
        for p in lost {
            self.coordinator.unload_partition(p);
        }
        self.pull_coordinator_outputs();
    }

    /// Gives the coordinator the topics of the partition logs as they are now.
    fn refresh_topics(&mut self) {
        let image = {
            let logs = self.logs.lock().unwrap_or_else(|p| p.into_inner());
            let topics: Vec<(String, i32)> = logs
                .topics()
                .map(|t| (t.to_string(), logs.partition_count(t).unwrap_or(0)))
                .collect();
            TopicsImage::new(topics.iter().map(|(t, n)| (t.as_str(), *n)))
        };
        self.coordinator.set_topics(image);
    }

    /// This broker's configuration.
    pub fn config(&self) -> &BrokerConfig {
        &self.config
    }

    /// The shared partition logs this broker serves.
    pub fn logs(&self) -> &SharedLogs {
        &self.logs
    }

    /// The group coordinator (for inspection in tests and traces).
    pub fn coordinator(&self) -> &GroupCoordinator {
        &self.coordinator
    }

    /// The group coordinator, mutably. Outputs it produces through this reference still come
    /// out of [`Self::poll_output`].
    pub fn coordinator_mut(&mut self) -> &mut GroupCoordinator {
        &mut self.coordinator
    }

    /// Handles request `id` of wire version `api_version`. Non-group APIs are answered at
    /// once; group APIs go to the coordinator (or get NOT_COORDINATOR here).
    ///
    /// An API or version this broker does not serve is answered with an ApiVersions response
    /// carrying UNSUPPORTED_VERSION and the served table. The wire server never forwards such
    /// requests (it answers or closes the connection itself), so only in-process callers see it.
    pub fn handle_request(
        &mut self,
        now: Millis,
        id: RequestId,
        api_version: i16,
        request: RequestKind,
    ) {
        self.handle_request_from(now, id, api_version, "", request);
    }

    /// [`Self::handle_request`] with the client id from the request header, which the group
    /// coordinator uses to build member ids (`{client_id}-{n}`) and reports in DescribeGroups.
    pub fn handle_request_from(
        &mut self,
        now: Millis,
        id: RequestId,
        api_version: i16,
        client_id: &str,
        request: RequestKind,
    ) {
        self.reconcile();
        let v = api_version;
        let served = request_api_key(&request).is_some_and(|key| is_served(key, v));
        if !served {
            self.answer(
                id,
                ResponseKind::ApiVersions(groupsim_wire::versions::unsupported_api_versions()),
            );
            return;
        }
        let response = match request {
            RequestKind::ApiVersions(r) => ResponseKind::ApiVersions(api_versions::handle(v, &r)),
            RequestKind::Metadata(r) => {
                let logs = self.logs.lock().unwrap_or_else(|p| p.into_inner());
                let state = cluster::lock(&self.cluster);
                ResponseKind::Metadata(metadata::handle(
                    v,
                    &r,
                    &self.config.cluster_id,
                    &state,
                    &logs,
                ))
            }
            RequestKind::FindCoordinator(r) => {
                let state = cluster::lock(&self.cluster);
                ResponseKind::FindCoordinator(find_coordinator::handle(v, &r, &state))
            }
            RequestKind::ListOffsets(r) => {
                let logs = self.logs.lock().unwrap_or_else(|p| p.into_inner());
                let state = cluster::lock(&self.cluster);
                let placement = Placement { node_id: self.config.node_id, cluster: &state };
                ResponseKind::ListOffsets(list_offsets::handle(v, &r, &placement, &logs))
            }
            RequestKind::Fetch(r) => {
                if r.max_wait_ms > 0 && r.min_bytes > 0 && !self.fetch_has_answer(v, &r) {
                    let until = now + (r.max_wait_ms as Millis).min(MAX_FETCH_WAIT_MS);
                    self.parked.push(ParkedFetch { id, version: v, request: r, until });
                    return;
                }
                ResponseKind::Fetch(self.fetch(v, &r))
            }
            RequestKind::Produce(r) => {
                let mut logs = self.logs.lock().unwrap_or_else(|p| p.into_inner());
                let state = cluster::lock(&self.cluster);
                let placement = Placement { node_id: self.config.node_id, cluster: &state };
                let response = produce::handle(&r, &placement, &mut logs, now);
                drop((logs, state));
                self.answer(id, ResponseKind::Produce(response));
                self.logs_appended(now);
                return;
            }
            RequestKind::InitProducerId(r) => ResponseKind::InitProducerId(
                init_producer_id::handle(v, &r, &mut self.producer_ids),
            ),
            group_request => {
                self.route_group_request(now, id, v, client_id, group_request);
                return;
            }
        };
        self.answer(id, response);
    }

    /// The answer to a Fetch as the logs stand now.
    fn fetch(&self, version: i16, request: &FetchRequest) -> FetchResponse {
        let logs = self.logs.lock().unwrap_or_else(|p| p.into_inner());
        let state = cluster::lock(&self.cluster);
        let placement = Placement { node_id: self.config.node_id, cluster: &state };
        fetch::handle(version, request, &placement, &logs)
    }

    /// Whether [`Self::fetch`] would answer with a record or an error ([`fetch::has_answer`]).
    fn fetch_has_answer(&self, version: i16, request: &FetchRequest) -> bool {
        let logs = self.logs.lock().unwrap_or_else(|p| p.into_inner());
        let state = cluster::lock(&self.cluster);
        let placement = Placement { node_id: self.config.node_id, cluster: &state };
        fetch::has_answer(version, request, &placement, &logs)
    }

    /// Records were appended to the logs (by a producer beside the broker, or a Produce it
    /// served): the held Fetches that now have something to return are answered.
    pub fn logs_appended(&mut self, now: Millis) {
        self.wake_parked(now);
    }

    /// Answers each held Fetch that has something to return, or whose wait is over at `now`.
    fn wake_parked(&mut self, now: Millis) {
        if self.parked.is_empty() {
            return;
        }
        for p in std::mem::take(&mut self.parked) {
            if now >= p.until || self.fetch_has_answer(p.version, &p.request) {
                let response = self.fetch(p.version, &p.request);
                self.answer(p.id, ResponseKind::Fetch(response));
            } else {
                self.parked.push(p);
            }
        }
    }

    /// The earliest instant at which [`Self::handle_timeout`] has work to do.
    pub fn poll_timeout(&self) -> Option<Millis> {
        let parked = self.parked.iter().map(|p| p.until).min();
        match (self.coordinator.poll_timeout(), parked) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Fires the coordinator's timers due at or before `now`. Afterwards none is due at `now`
    /// any more ([`Self::poll_timeout`] is later), so a host never fires twice at one instant.
    pub fn handle_timeout(&mut self, now: Millis) {
        self.reconcile();
        self.coordinator.handle_timeout(now);
        self.pull_coordinator_outputs();
        self.wake_parked(now);
        debug_assert!(
            self.poll_timeout().is_none_or(|t| t > now),
            "a coordinator timer is still due at {now} after the timers fired"
        );
    }

    /// Next answer or event, in the order produced.
    pub fn poll_output(&mut self) -> Option<CoordinatorOutput> {
        self.pull_coordinator_outputs();
        self.outputs.pop_front()
    }

    fn answer(&mut self, id: RequestId, response: ResponseKind) {
        // Earlier coordinator outputs go first, so the queue stays in production order.
        self.pull_coordinator_outputs();
        self.outputs.push_back(CoordinatorOutput::Response { id, response });
    }

    fn pull_coordinator_outputs(&mut self) {
        while let Some(output) = self.coordinator.poll_output() {
            let output = match output {
                CoordinatorOutput::Response { id, response } => match self.fixups.remove(&id) {
                    Some(fixup) => {
                        CoordinatorOutput::Response { id, response: fixup.apply(response) }
                    }
                    None => CoordinatorOutput::Response { id, response },
                },
                event => event,
            };
            self.outputs.push_back(output);
        }
    }

    /// Forwards a group API to the coordinator unless a group it names is coordinated
    /// elsewhere, in which case those groups get NOT_COORDINATOR (Kafka's clients then look the
    /// coordinator up again with FindCoordinator).
    fn route_group_request(
        &mut self,
        now: Millis,
        id: RequestId,
        v: i16,
        client_id: &str,
        request: RequestKind,
    ) {
        let state = cluster::lock(&self.cluster).clone();
        let me = self.config.node_id;
        let owns = |g: &str| state.group_coordinator(g).is_some_and(|b| b.node_id == me);
        let group = match &request {
            RequestKind::JoinGroup(r) => Some(r.group_id.as_str()),
            RequestKind::SyncGroup(r) => Some(r.group_id.as_str()),
            RequestKind::Heartbeat(r) => Some(r.group_id.as_str()),
            RequestKind::LeaveGroup(r) => Some(r.group_id.as_str()),
            RequestKind::OffsetCommit(r) => Some(r.group_id.as_str()),
            RequestKind::OffsetFetch(r) if v < 8 => Some(r.group_id.as_str()),
            RequestKind::ConsumerGroupHeartbeat(r) => Some(r.group_id.as_str()),
            _ => None,
        };
        let refused = match group {
            Some(g) if !owns(g) => group_error_response(v, &request, NOT_COORDINATOR),
            _ => None,
        };
        if let Some(response) = refused {
            probes::NOT_COORDINATOR.hit();
            error_answers::count_broker_refusal(&response);
            self.answer(id, response);
            return;
        }
        // Batched group lists: forward the groups we coordinate, merge NOT_COORDINATOR back in.
        let request = match request {
            RequestKind::DescribeGroups(mut r) => {
                let groups: Vec<(StrBytes, bool)> =
                    r.groups.iter().map(|g| (g.0.clone(), owns(g))).collect();
                for _ in groups.iter().filter(|(_, owned)| !owned) {
                    probes::NOT_COORDINATOR.hit();
                }
                if groups.iter().any(|(_, owned)| !owned) {
                    r.groups.retain(|g| owns(g));
                    if r.groups.is_empty() && !groups.is_empty() {
                        let fixup = Fixup { groups };
                        let empty = ResponseKind::DescribeGroups(DescribeGroupsResponse::default());
                        self.answer(id, fixup.apply(empty));
                        return;
                    }
                    self.fixups.insert(id, Fixup { groups });
                }
                RequestKind::DescribeGroups(r)
            }
            RequestKind::OffsetFetch(mut r) if v >= 8 => {
                let groups: Vec<(StrBytes, bool)> =
                    r.groups.iter().map(|g| (g.group_id.0.clone(), owns(&g.group_id))).collect();
                for _ in groups.iter().filter(|(_, owned)| !owned) {
                    probes::NOT_COORDINATOR.hit();
                    error_answers::count_broker_refused_fetch_group();
                }
                if groups.iter().any(|(_, owned)| !owned) {
                    r.groups.retain(|g| owns(&g.group_id));
                    if r.groups.is_empty() && !groups.is_empty() {
                        let fixup = Fixup { groups };
                        let empty = ResponseKind::OffsetFetch(OffsetFetchResponse::default());
                        self.answer(id, fixup.apply(empty));
                        return;
                    }
                    self.fixups.insert(id, Fixup { groups });
                }
                RequestKind::OffsetFetch(r)
            }
            RequestKind::ConsumerGroupDescribe(mut r) => {
                let groups: Vec<(StrBytes, bool)> =
                    r.group_ids.iter().map(|g| (g.0.clone(), owns(g))).collect();
                for _ in groups.iter().filter(|(_, owned)| !owned) {
                    probes::NOT_COORDINATOR.hit();
                }
                if groups.iter().any(|(_, owned)| !owned) {
                    r.group_ids.retain(|g| owns(g));
                    if r.group_ids.is_empty() && !groups.is_empty() {
                        let fixup = Fixup { groups };
                        let empty = ResponseKind::ConsumerGroupDescribe(
                            ConsumerGroupDescribeResponse::default(),
                        );
                        self.answer(id, fixup.apply(empty));
                        return;
                    }
                    self.fixups.insert(id, Fixup { groups });
                }
                RequestKind::ConsumerGroupDescribe(r)
            }
            other => other,
        };
        // A consumer group is assigned from the topics that exist now (Kafka's metadata image,
        // current on every broker): refreshed before any group request, since a classic member's
        // request may reach a consumer group first on a coordinator that just took it over.
        if GroupCoordinator::handles(&request) {
            self.refresh_topics();
        }
        // Member ids are unique cluster-wide: a coordinator that took a group over must not hand
        // out an id an earlier coordinator of the group used.
        let is_join =
            matches!(request, RequestKind::JoinGroup(_) | RequestKind::ConsumerGroupHeartbeat(_));
        if is_join {
            let seq =
                cluster::lock(&self.cluster).take_member_seq(self.coordinator.next_member_seq());
            self.coordinator.set_next_member_seq(seq);
        }
        self.coordinator.handle_request_from(now, id, v, client_id, request);
        if is_join {
            cluster::lock(&self.cluster).advance_member_seq(self.coordinator.next_member_seq());
        }
        self.pull_coordinator_outputs();
    }
}

const NOT_COORDINATOR: i16 = ResponseError::NotCoordinator.code();

/// One group's entry in a batched group answer (DescribeGroups, OffsetFetch v8+).
trait GroupEntry {
    fn group_id(&self) -> &StrBytes;
    /// The entry for a group this broker does not coordinate.
    fn not_coordinator(group: StrBytes) -> Self;
}

impl GroupEntry for DescribedGroup {
    fn group_id(&self) -> &StrBytes {
        &self.group_id.0
    }
    fn not_coordinator(group: StrBytes) -> Self {
        Self::default().with_group_id(GroupId(group)).with_error_code(NOT_COORDINATOR)
    }
}

impl GroupEntry for consumer_group_describe_response::DescribedGroup {
    fn group_id(&self) -> &StrBytes {
        &self.group_id.0
    }
    fn not_coordinator(group: StrBytes) -> Self {
        Self::default()
            .with_group_id(GroupId(group))
            .with_error_code(NOT_COORDINATOR)
            .with_authorized_operations(i32::MIN)
    }
}

impl GroupEntry for OffsetFetchResponseGroup {
    fn group_id(&self) -> &StrBytes {
        &self.group_id.0
    }
    fn not_coordinator(group: StrBytes) -> Self {
        Self::default().with_group_id(GroupId(group)).with_error_code(NOT_COORDINATOR)
    }
}

impl Fixup {
    /// Puts NOT_COORDINATOR entries for the groups we do not coordinate back into the
    /// coordinator's answer, in the order the request named the groups.
    fn apply(self, response: ResponseKind) -> ResponseKind {
        match response {
            ResponseKind::DescribeGroups(mut resp) => {
                resp.groups = self.merge(std::mem::take(&mut resp.groups));
                ResponseKind::DescribeGroups(resp)
            }
            ResponseKind::OffsetFetch(mut resp) => {
                resp.groups = self.merge(std::mem::take(&mut resp.groups));
                ResponseKind::OffsetFetch(resp)
            }
            ResponseKind::ConsumerGroupDescribe(mut resp) => {
                resp.groups = self.merge(std::mem::take(&mut resp.groups));
                ResponseKind::ConsumerGroupDescribe(resp)
            }
            other => other,
        }
    }

    /// The request's groups in order: the coordinator's entry for each group we coordinate, a
    /// NOT_COORDINATOR entry for each we do not; then any answered entry left over.
    fn merge<T: GroupEntry>(self, mut answered: Vec<T>) -> Vec<T> {
        let mut merged = Vec::with_capacity(self.groups.len());
        for (group, owned) in self.groups {
            if owned {
                if let Some(pos) = answered.iter().position(|e| *e.group_id() == group) {
                    merged.push(answered.remove(pos));
                }
            } else {
                merged.push(T::not_coordinator(group));
            }
        }
        merged.append(&mut answered);
        merged
    }
}
