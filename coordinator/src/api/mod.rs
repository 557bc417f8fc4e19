//! The Kafka face of the broker and its group coordinator: one module per Kafka API, with the
//! rules for answering it and the reason for each rule, and its encoding.
//!
//! The group APIs (JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch,
//! DescribeGroups, ListGroups) come in through [`GroupCoordinator::handle_request`], defined
//! here: it refuses requests for groups not served here and hands each request to its API's
//! module, which validates it and drives the groups (`group/`) and the coordinator core
//! (`coordinator.rs`). Those queue their answers in domain form (`answers.rs`);
//! [`GroupCoordinator::poll_output`], also here, encodes each one in its API's layout as it is
//! drained. The other APIs are plain functions the broker (`broker.rs`) calls.
//!
//! Layering: these modules sit above `group` and `coordinator` and below `broker`; they never
//! import the broker.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::{RequestKind, ResponseKind};

use crate::answers::{Answer, Parked};
use crate::coordinator::GroupStatus;
use crate::effects::Output;
use crate::{probes, CoordinatorOutput, GroupCoordinator, Millis, RequestId};
use refusal::group_error_response;

pub mod api_versions;
pub mod classic_to_consumer_group;
pub mod consumer_group_describe;
pub mod consumer_group_heartbeat;
pub mod describe_groups;
pub(crate) mod error_answers;
pub mod fetch;
pub mod find_coordinator;
pub mod heartbeat;
pub mod init_producer_id;
pub mod join_group;
pub mod leave_group;
pub mod list_groups;
pub mod list_offsets;
pub mod metadata;
pub mod offset_commit;
pub mod offset_fetch;
pub mod produce;
pub mod refusal;
pub mod sync_group;

/// Group API requests in, answers out.
impl GroupCoordinator {
    /// Whether [`Self::handle_request`] answers this kind of request. Drivers should route
    /// anything else elsewhere: the coordinator ignores it (with a warning) and never answers.
    pub fn handles(request: &RequestKind) -> bool {
        matches!(
            request,
            RequestKind::JoinGroup(_)
                | RequestKind::SyncGroup(_)
                | RequestKind::Heartbeat(_)
                | RequestKind::LeaveGroup(_)
                | RequestKind::OffsetCommit(_)
                | RequestKind::OffsetFetch(_)
                | RequestKind::DescribeGroups(_)
                | RequestKind::ListGroups(_)
                | RequestKind::ConsumerGroupHeartbeat(_)
                | RequestKind::ConsumerGroupDescribe(_)
        )
    }

    /// Handle a group API request (JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit,
    /// OffsetFetch, DescribeGroups, ListGroups) of wire version `version`. The answer is queued
    /// now or later. Member ids generated for it use an empty client id; drivers that know the
    /// request header should call [`Self::handle_request_from`].
    pub fn handle_request(
        &mut self,
        now: Millis,
        id: RequestId,
        version: i16,
        request: RequestKind,
    ) {
        self.handle_request_from(now, id, version, "", request);
    }

    /// [`Self::handle_request`] with the request header's client id, which Kafka uses to build
    /// member ids (`{client_id}-{n}`) and reports in DescribeGroups.
    pub fn handle_request_from(
        &mut self,
        now: Millis,
        id: RequestId,
        version: i16,
        client_id: &str,
        request: RequestKind,
    ) {
        if matches!(request, RequestKind::OffsetFetch(_)) {
            // Hit synchronously, while the driver still names the requesting client: a trigger
            // point (a new owner is about to pick its starting offsets).
            probes::OFFSET_FETCH_RECEIVED.hit();
        }
        if let Some(group) = single_group(version, &request) {
            self.asked.insert(id, group.to_string());
        }
        if let Some(response) = self.refuse_unready(version, &request) {
            self.fx.respond(id, response);
            return;
        }
        match request {
            RequestKind::JoinGroup(r) => self.handle_join_group(now, id, version, client_id, r),
            // A consumer group serves the classic APIs of its classic-protocol members
            // (`classic_to_consumer_group.rs`); JoinGroup decides after its own checks.
            RequestKind::SyncGroup(r) if self.serves_as_consumer_group(&r.group_id, false) => {
                self.sync_consumer_group(now, Parked { id, version }, r)
            }
            RequestKind::Heartbeat(r) if self.serves_as_consumer_group(&r.group_id, false) => {
                self.heartbeat_consumer_group(now, id, version, r)
            }
            RequestKind::LeaveGroup(r) if self.serves_as_consumer_group(&r.group_id, false) => {
                self.leave_consumer_group(now, id, version, r)
            }
            RequestKind::SyncGroup(r) => self.handle_sync_group(now, id, version, r),
            RequestKind::Heartbeat(r) => self.handle_heartbeat(now, id, version, r),
            RequestKind::LeaveGroup(r) => self.handle_leave_group(now, id, version, r),
            RequestKind::OffsetCommit(r) => self.handle_offset_commit(now, id, version, r),
            RequestKind::OffsetFetch(r) => self.handle_offset_fetch(id, version, r),
            RequestKind::DescribeGroups(r) => self.handle_describe_groups(id, version, r),
            RequestKind::ListGroups(r) => self.handle_list_groups(id, version, r),
            RequestKind::ConsumerGroupHeartbeat(r) => {
                self.handle_consumer_group_heartbeat(now, id, version, client_id, r)
            }
            RequestKind::ConsumerGroupDescribe(r) => self.handle_consumer_group_describe(id, r),
            other => {
                tracing::warn!(
                    ?id,
                    "group coordinator ignores a request it does not handle: {other:?}"
                )
            }
        }
        self.flush_stores(now);
    }

    /// Kafka's validateGroupStatus for single-group requests: NOT_COORDINATOR for a partition
    /// not owned here; while it loads, the per-API loading answer (see the module docs).
    /// Batched requests (DescribeGroups, OffsetFetch v8+) and ListGroups decide per group in
    /// their handlers.
    fn refuse_unready(&self, version: i16, request: &RequestKind) -> Option<ResponseKind> {
        let group = single_group(version, request)?;
        let code = match self.group_status(group) {
            GroupStatus::Ready => return None,
            GroupStatus::NotOwned => {
                probes::NOT_COORDINATOR.hit();
                ResponseError::NotCoordinator.code()
            }
            GroupStatus::Loading => {
                let load = ResponseError::CoordinatorLoadInProgress.code();
                let (probe, code) = match request {
                    // The rebalance in progress was lost with the old coordinator: start over.
                    RequestKind::SyncGroup(_) => (
                        Some(&probes::GROUP_REQUEST_WHILE_LOADING),
                        ResponseError::RebalanceInProgress.code(),
                    ),
                    // Let the member keep its session while the group loads.
                    RequestKind::Heartbeat(_) => (Some(&probes::GROUP_REQUEST_WHILE_LOADING), 0),
                    RequestKind::JoinGroup(_) => (Some(&probes::GROUP_REQUEST_WHILE_LOADING), load),
                    RequestKind::OffsetCommit(_) => {
                        (Some(&probes::OFFSET_COMMIT_WHILE_LOADING), load)
                    }
                    RequestKind::OffsetFetch(_) => {
                        (Some(&probes::OFFSET_FETCH_WHILE_LOADING), load)
                    }
                    _ => (None, load),
                };
                if let Some(probe) = probe {
                    probe.hit();
                }
                code
            }
        };
        group_error_response(version, request, code)
    }

    /// Next queued output, in the order produced; answers are put in their API's layout for
    /// the request's version here.
    pub fn poll_output(&mut self) -> Option<CoordinatorOutput> {
        let output = self.fx.outputs.pop_front().map(encode)?;
        if let CoordinatorOutput::Response { id, response } = &output {
            let group = self.asked.remove(id);
            self.count_error_answer(group.as_deref(), response);
        }
        Some(output)
    }
}

/// The group a single-group request names (JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
/// OffsetCommit, OffsetFetch v1–7); `None` for batched requests and ListGroups.
fn single_group(version: i16, request: &RequestKind) -> Option<&str> {
    Some(match request {
        RequestKind::JoinGroup(r) => r.group_id.as_str(),
        RequestKind::SyncGroup(r) => r.group_id.as_str(),
        RequestKind::Heartbeat(r) => r.group_id.as_str(),
        RequestKind::LeaveGroup(r) => r.group_id.as_str(),
        RequestKind::OffsetCommit(r) => r.group_id.as_str(),
        RequestKind::OffsetFetch(r) if version < 8 => r.group_id.as_str(),
        RequestKind::ConsumerGroupHeartbeat(r) => r.group_id.as_str(),
        _ => return None,
    })
}

/// Puts a queued output's answer in its API's layout.
fn encode(output: Output) -> CoordinatorOutput {
    match output {
        Output::Event(event) => CoordinatorOutput::Event(event),
        Output::Answer { id, answer } => {
            let response = match answer {
                Answer::Encoded(response) => response,
                Answer::Join { version, result } => join_group::response(version, result).into(),
                Answer::Sync { version, result } => sync_group::response(version, result).into(),
                Answer::Commit { topics } => offset_commit::response(topics).into(),
            };
            CoordinatorOutput::Response { id, response }
        }
    }
}
