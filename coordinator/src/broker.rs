//! The sans-IO broker: answers the APIs a consumer needs and forwards group APIs to the group
//! coordinator.
//!
//! A [`Broker`] owns one [`GroupCoordinator`] and a handle on the cluster's shared partition logs.
//! Non-group APIs (ApiVersions, Metadata, FindCoordinator, ListOffsets, Fetch) are answered at
//! once from the logs and the cluster layout; group APIs go to the coordinator, which may answer
//! later (JoinGroup waits for the rebalance). Both kinds of answers, and the coordinator's
//! events, come out of one queue ([`Broker::poll_output`]) in the order they were produced.
//!
//! # Placement
//! Every broker must be configured with the same broker list, in the same order. The leader of
//! partition `p` of any topic, the offsets topic (`__consumer_offsets`) included, is
//! `brokers[p % brokers.len()]` ([`partition_leader`]); there is no replication, so replicas and
//! ISR are just the leader. A group's coordinator is the leader of its offsets partition,
//! `abs(javaHashCode(group_id)) % offsets_topic_partitions` ([`group_partition`]), as in Kafka.
//! A broker answers NOT_COORDINATOR for groups it does not coordinate and
//! NOT_LEADER_OR_FOLLOWER for partitions it does not lead.

use std::collections::{BTreeMap, VecDeque};

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::describe_groups_response::DescribedGroup;
use kafka_protocol::messages::offset_commit_response::{
    OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use kafka_protocol::messages::offset_fetch_response::{
    OffsetFetchResponseGroup, OffsetFetchResponsePartition, OffsetFetchResponseTopic,
};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use serde::{Deserialize, Serialize};

use crate::api::{api_versions, fetch, find_coordinator, list_offsets, metadata};
use crate::log::SharedLogs;
use crate::wire::codec::request_api_key;
use crate::wire::versions::is_served;
use crate::{CoordinatorConfig, CoordinatorOutput, GroupCoordinator, Millis, RequestId};

/// Where a broker can be reached.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BrokerAddress {
    /// Kafka node id.
    pub node_id: i32,
    /// Host name clients connect to.
    pub host: String,
    /// Port clients connect to.
    pub port: i32,
}

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

    /// Whether this broker leads partition `partition` (of any topic).
    pub fn is_leader(&self, partition: i32) -> bool {
        self.partition_leader(partition).is_some_and(|b| b.node_id == self.node_id)
    }
}

/// The placement rule, in one place: partition `p` is led by `brokers[p % brokers.len()]`.
/// `None` when there are no brokers or `p` is negative.
pub fn partition_leader(brokers: &[BrokerAddress], partition: i32) -> Option<&BrokerAddress> {
    let p = usize::try_from(partition).ok()?;
    brokers.get(p.checked_rem(brokers.len())?)
}

/// Java's `String.hashCode`: `s[0]*31^(n-1) + … + s[n-1]` over UTF-16 code units, wrapping.
pub fn java_string_hash_code(s: &str) -> i32 {
    s.encode_utf16().fold(0i32, |h, unit| h.wrapping_mul(31).wrapping_add(unit as i32))
}

/// Kafka's `Utils.abs`: absolute value, except that `i32::MIN` maps to 0 (not to itself).
pub fn kafka_abs(n: i32) -> i32 {
    if n == i32::MIN {
        0
    } else {
        n.abs()
    }
}

/// Kafka's `partitionFor(groupId)`: the offsets partition holding `group_id`'s offsets.
/// `offsets_topic_partitions` below 1 is treated as 1.
pub fn group_partition(group_id: &str, offsets_topic_partitions: i32) -> i32 {
    kafka_abs(java_string_hash_code(group_id)) % offsets_topic_partitions.max(1)
}

/// A group API answer that needs NOT_COORDINATOR entries merged in for the groups this broker
/// does not coordinate (batched DescribeGroups and OffsetFetch v8+).
#[derive(Debug)]
struct Fixup {
    /// Every group of the original request, in order, with whether we coordinate it.
    groups: Vec<(StrBytes, bool)>,
}

/// The sans-IO broker (see the module docs).
#[derive(Debug)]
pub struct Broker {
    config: BrokerConfig,
    logs: SharedLogs,
    coordinator: GroupCoordinator,
    outputs: VecDeque<CoordinatorOutput>,
    fixups: BTreeMap<RequestId, Fixup>,
}

impl Broker {
    /// A broker serving `logs` with a fresh group coordinator.
    pub fn new(mut config: BrokerConfig, logs: SharedLogs) -> Self {
        config.coordinator.node_id = config.node_id;
        let coordinator = GroupCoordinator::new(config.coordinator.clone());
        Self { config, logs, coordinator, outputs: VecDeque::new(), fixups: BTreeMap::new() }
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
        let v = api_version;
        let served = request_api_key(&request).is_some_and(|key| is_served(key, v));
        if !served {
            self.answer(id, ResponseKind::ApiVersions(api_versions::unsupported_version()));
            return;
        }
        let response = match request {
            RequestKind::ApiVersions(r) => ResponseKind::ApiVersions(api_versions::handle(v, &r)),
            RequestKind::Metadata(r) => {
                let logs = self.logs.lock().unwrap_or_else(|p| p.into_inner());
                ResponseKind::Metadata(metadata::handle(v, &r, &self.config, &logs))
            }
            RequestKind::FindCoordinator(r) => {
                ResponseKind::FindCoordinator(find_coordinator::handle(v, &r, &self.config))
            }
            RequestKind::ListOffsets(r) => {
                let logs = self.logs.lock().unwrap_or_else(|p| p.into_inner());
                ResponseKind::ListOffsets(list_offsets::handle(v, &r, &self.config, &logs))
            }
            RequestKind::Fetch(r) => {
                let logs = self.logs.lock().unwrap_or_else(|p| p.into_inner());
                ResponseKind::Fetch(fetch::handle(v, &r, &self.config, &logs))
            }
            group_request => {
                self.route_group_request(now, id, v, client_id, group_request);
                return;
            }
        };
        self.answer(id, response);
    }

    /// The earliest instant at which [`Self::handle_timeout`] has work to do.
    pub fn poll_timeout(&self) -> Option<Millis> {
        self.coordinator.poll_timeout()
    }

    /// Fires the coordinator's timers due at or before `now`.
    pub fn handle_timeout(&mut self, now: Millis) {
        self.coordinator.handle_timeout(now);
        self.pull_coordinator_outputs();
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
        let owns = |g: &str| self.config.coordinates(g);
        let refused = match &request {
            RequestKind::JoinGroup(r) if !owns(&r.group_id) => {
                Some(ResponseKind::JoinGroup(not_coordinator_join(v, r)))
            }
            RequestKind::SyncGroup(r) if !owns(&r.group_id) => Some(ResponseKind::SyncGroup(
                SyncGroupResponse::default().with_error_code(NOT_COORDINATOR),
            )),
            RequestKind::Heartbeat(r) if !owns(&r.group_id) => Some(ResponseKind::Heartbeat(
                HeartbeatResponse::default().with_error_code(NOT_COORDINATOR),
            )),
            RequestKind::LeaveGroup(r) if !owns(&r.group_id) => Some(ResponseKind::LeaveGroup(
                LeaveGroupResponse::default().with_error_code(NOT_COORDINATOR),
            )),
            RequestKind::OffsetCommit(r) if !owns(&r.group_id) => {
                Some(ResponseKind::OffsetCommit(not_coordinator_commit(r)))
            }
            RequestKind::OffsetFetch(r) if v < 8 && !owns(&r.group_id) => {
                Some(ResponseKind::OffsetFetch(not_coordinator_offset_fetch(v, r)))
            }
            _ => None,
        };
        if let Some(response) = refused {
            self.answer(id, response);
            return;
        }
        // Batched group lists: forward the groups we coordinate, merge NOT_COORDINATOR back in.
        let request = match request {
            RequestKind::DescribeGroups(mut r) => {
                let groups: Vec<(StrBytes, bool)> =
                    r.groups.iter().map(|g| (g.0.clone(), owns(g))).collect();
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
            other => other,
        };
        self.coordinator.handle_request_from(now, id, v, client_id, request);
        self.pull_coordinator_outputs();
    }
}

const NOT_COORDINATOR: i16 = ResponseError::NotCoordinator.code();

impl Fixup {
    /// Puts NOT_COORDINATOR entries for the groups we do not coordinate back into the
    /// coordinator's answer, in the order the request named the groups.
    fn apply(self, response: ResponseKind) -> ResponseKind {
        match response {
            ResponseKind::DescribeGroups(mut resp) => {
                let mut answered = std::mem::take(&mut resp.groups);
                for (group, owned) in self.groups {
                    if owned {
                        if let Some(pos) = answered.iter().position(|d| d.group_id.0 == group) {
                            resp.groups.push(answered.remove(pos));
                        }
                    } else {
                        resp.groups.push(
                            DescribedGroup::default()
                                .with_group_id(GroupId(group))
                                .with_error_code(NOT_COORDINATOR),
                        );
                    }
                }
                resp.groups.append(&mut answered);
                ResponseKind::DescribeGroups(resp)
            }
            ResponseKind::OffsetFetch(mut resp) => {
                let mut answered = std::mem::take(&mut resp.groups);
                for (group, owned) in self.groups {
                    if owned {
                        if let Some(pos) = answered.iter().position(|g| g.group_id.0 == group) {
                            resp.groups.push(answered.remove(pos));
                        }
                    } else {
                        resp.groups.push(
                            OffsetFetchResponseGroup::default()
                                .with_group_id(GroupId(group))
                                .with_error_code(NOT_COORDINATOR),
                        );
                    }
                }
                resp.groups.append(&mut answered);
                ResponseKind::OffsetFetch(resp)
            }
            other => other,
        }
    }
}

fn not_coordinator_join(v: i16, r: &JoinGroupRequest) -> JoinGroupResponse {
    // protocol_name is nullable only from v7; below that an empty string stands for "none".
    let protocol_name = if v >= 7 { None } else { Some(StrBytes::default()) };
    JoinGroupResponse::default()
        .with_error_code(NOT_COORDINATOR)
        .with_generation_id(-1)
        .with_member_id(r.member_id.clone())
        .with_protocol_name(protocol_name)
}

fn not_coordinator_commit(r: &OffsetCommitRequest) -> OffsetCommitResponse {
    let topics = r
        .topics
        .iter()
        .map(|t| {
            OffsetCommitResponseTopic::default().with_name(t.name.clone()).with_partitions(
                t.partitions
                    .iter()
                    .map(|p| {
                        OffsetCommitResponsePartition::default()
                            .with_partition_index(p.partition_index)
                            .with_error_code(NOT_COORDINATOR)
                    })
                    .collect(),
            )
        })
        .collect();
    OffsetCommitResponse::default().with_topics(topics)
}

/// OffsetFetch v1–7 for a group we do not coordinate: v2+ carry a top-level error code; v1 has
/// none, so the error goes on every requested partition.
fn not_coordinator_offset_fetch(v: i16, r: &OffsetFetchRequest) -> OffsetFetchResponse {
    if v >= 2 {
        return OffsetFetchResponse::default().with_error_code(NOT_COORDINATOR);
    }
    let topics = r
        .topics
        .iter()
        .flatten()
        .map(|t| {
            OffsetFetchResponseTopic::default().with_name(t.name.clone()).with_partitions(
                t.partition_indexes
                    .iter()
                    .map(|&p| {
                        OffsetFetchResponsePartition::default()
                            .with_partition_index(p)
                            .with_committed_offset(-1)
                            .with_error_code(NOT_COORDINATOR)
                    })
                    .collect(),
            )
        })
        .collect();
    OffsetFetchResponse::default().with_topics(topics)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_hash_code_matches_java() {
        assert_eq!(java_string_hash_code(""), 0);
        assert_eq!(java_string_hash_code("a"), 97);
        assert_eq!(java_string_hash_code("hello"), 99_162_322);
        // Overflow wraps as in Java: "polygenelubricants".hashCode() == Integer.MIN_VALUE.
        assert_eq!(java_string_hash_code("polygenelubricants"), i32::MIN);
        // UTF-16 code units, not bytes or chars: 'é' is one unit (233); '😀' is two surrogates.
        assert_eq!(java_string_hash_code("é"), 233);
        assert_eq!(java_string_hash_code("😀"), 0xD83D * 31 + 0xDE00);
    }

    #[test]
    fn group_partition_uses_kafka_abs() {
        assert_eq!(group_partition("polygenelubricants", 50), 0, "abs(MIN) is 0 in Kafka");
        assert_eq!(group_partition("hello", 50), 99_162_322 % 50);
        // A negative hash code: "Aa".repeat(..)-style strings; pick one and check abs.
        let negative = "zzzzzzzz";
        let h = java_string_hash_code(negative);
        assert!(h < 0, "{h}");
        assert_eq!(group_partition(negative, 7), h.abs() % 7);
        assert_eq!(group_partition("x", 0), 0, "partition count below 1 acts as 1");
    }

    #[test]
    fn placement_is_partition_modulo_broker_count() {
        let brokers: Vec<BrokerAddress> = (0..3)
            .map(|i| BrokerAddress { node_id: 10 + i, host: format!("b{i}"), port: 9092 })
            .collect();
        assert_eq!(partition_leader(&brokers, 4).map(|b| b.node_id), Some(11));
        assert_eq!(partition_leader(&brokers, -1), None);
        assert_eq!(partition_leader(&[], 0), None);
    }
}
