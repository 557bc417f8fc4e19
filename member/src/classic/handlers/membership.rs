//! Joining, syncing and leaving the group, and the one handler of group errors.

use crate::shared::handlers::prelude::*;
use std::collections::{BTreeMap, BTreeSet};

use groupsim_wire::consumer_protocol::{
    decode_assignment, decode_subscription, encode_assignment, encode_subscription, Assignment,
    Subscription,
};
use groupsim_wire::{error_codes as codes, error_name};
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::leave_group_request::MemberIdentity;
use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use kafka_protocol::messages::{
    JoinGroupRequest, JoinGroupResponse, LeaveGroupRequest, RequestKind, SyncGroupRequest,
    SyncGroupResponse,
};

use crate::assignor::StickyUserData;
use crate::classic::membership::{GroupError, LeaderJob, Phase, NO_GENERATION};
use crate::classic::rebalance::RevokeStage;
use crate::classic::{Member, Target};
use crate::compat::sb;
use crate::probes;
use crate::shared::in_flight::{Pending, Sent};
use crate::shared::timers::Timer;
use crate::shared::{group_id, instance_id};
use crate::ClientProfile;
use crate::{MemberEvent, Millis, SentUnder};

impl Member {
    pub(in crate::classic) fn drive_membership(&mut self, now: Millis) {
        match self.membership.phase {
            Phase::AwaitingLeaderMetadata
                if self
                    .membership
                    .leader_job
                    .as_ref()
                    .is_none_or(|j| self.core.metadata.version > j.after_metadata_version) =>
            {
                match self.membership.leader_job.take() {
                    Some(job) => self.complete_leader_assignment(now, job.members),
                    None => self.membership.phase = Phase::Unjoined,
                }
            }
            Phase::Unjoined => self.prepare_and_join(now),
            Phase::Stable if self.membership.rejoin_needed => self.prepare_and_join(now),
            _ => {}
        }
    }

    /// Before rejoining. Eager: stop fetching and drop unprocessed records, let the batch in
    /// progress finish (brod detaches it, Elsa's workers are stopped), commit what was
    /// processed and run the revoke callback in the profile's order, revoke every partition,
    /// then JoinGroup. Cooperative: the same minus the callback and the revocation: owned
    /// partitions are kept and announced in the subscription.
    fn prepare_and_join(&mut self, now: Millis) {
        if self.rebalance.revoke_commit_hung {
            // Bug `revoke_commit_never_completes`: still waiting for the revoke commit.
            return;
        }
        self.core.fetcher.drop_buffered(&mut self.core.positions);
        if !self.prepare_revoke(now, false) {
            return;
        }
        if !self.rebalance.cooperative {
            self.revoke_all();
        }
        if self.core.discovery.coordinator.is_none() || self.core.timers.is_set(Timer::JoinRetry) {
            return;
        }
        if self.membership.reset_member_id_on_join {
            self.membership.reset_member_id_on_join = false;
            if !self.membership.member_id.is_empty() {
                // The old member id stays in the group until its session expires; the history
                // says the client gave it up, so that expiry is no stall.
                self.emit(MemberEvent::GenerationReset {
                    member_id: self.membership.member_id.clone(),
                    generation: self.membership.generation,
                    error: "COORDINATOR_LOST".to_string(),
                    reset_member_id: true,
                    answer_about: None,
                });
            }
            self.membership.member_id.clear();
            self.membership.generation = NO_GENERATION;
        }
        self.send_join_group();
    }

    fn send_join_group(&mut self) {
        let Some(node) = self.core.discovery.coordinator else {
            return;
        };
        self.probe_join_situations();
        let (last_generation, previous) = self.membership.last_assignment.clone();
        let metadata = encode_subscription(&Subscription {
            topics: self.core.config.topics.clone(),
            owned_partitions: if self.rebalance.cooperative {
                self.core.positions.assigned.clone()
            } else {
                Vec::new()
            },
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
            .with_group_id(group_id(&self.core.config))
            .with_session_timeout_ms(self.core.config.session_timeout_ms)
            .with_rebalance_timeout_ms(self.core.config.rebalance_timeout_ms)
            .with_member_id(sb(&self.membership.member_id))
            .with_group_instance_id(instance_id(&self.core.config))
            .with_protocol_type(sb("consumer"))
            .with_protocols(protocols);
        let timeout = self.core.config.rebalance_timeout_ms.max(0) as u64
            + self.core.config.request_timeout_ms;
        self.membership.assignment_snapshot.clear();
        self.send(
            Target::Coordinator(node),
            RequestKind::JoinGroup(req),
            timeout,
            Pending::JoinGroup,
        );
        self.membership.phase = Phase::Joining;
        self.membership.rejoin_needed = false;
        self.rebalance.revoke_commit_attempted = false;
        self.rebalance.revoke_stage = RevokeStage::Idle;
        self.core.in_flight.stop_awaiting_heartbeats();
        self.core.timers.cancel(Timer::Heartbeat);
    }

    pub(in crate::classic) fn on_join_group(
        &mut self,
        now: Millis,
        sent: &Sent,
        resp: JoinGroupResponse,
    ) {
        if self.membership.phase != Phase::Joining || self.leaving {
            return;
        }
        match resp.error_code {
            codes::NONE => {
                self.membership.member_id = resp.member_id.to_string();
                self.membership.generation = resp.generation_id;
                self.membership.protocol = resp.protocol_name.as_ref().map(|p| p.to_string());
                self.membership.ever_joined = true;
                let leader = resp.leader.to_string();
                let is_leader = leader == self.membership.member_id;
                self.emit(MemberEvent::Joined {
                    member_id: self.membership.member_id.clone(),
                    generation: self.membership.generation,
                    leader,
                    protocol: self.membership.protocol.clone().unwrap_or_default(),
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
                if resp.skip_assignment {
                    self.keep_leader_assignment(&members);
                    return;
                }
                // Topics to read before assigning: those the cached metadata lacks, or every
                // subscribed one for a client that reads them fresh.
                let fresh = self.rules.fresh_partitions_for_assignment;
                let missing: BTreeSet<String> = members
                    .values()
                    .flat_map(|s| s.topics.iter())
                    .filter(|t| fresh || !self.core.metadata.topics.contains_key(*t))
                    .cloned()
                    .collect();
                if missing.is_empty() {
                    self.complete_leader_assignment(now, members);
                } else {
                    probes::LEADER_AWAITS_METADATA.hit();
                    for t in &missing {
                        self.want_metadata_for(t);
                    }
                    if let (true, Some(node)) = (fresh, self.core.discovery.coordinator) {
                        // kafka-go reads the partitions on the coordinator connection that has
                        // just answered the JoinGroup (`assignTopicPartitions` ->
                        // `readPartitions`), not on whichever broker link is at hand.
                        self.send_metadata(Target::Coordinator(node));
                    }
                    self.membership.leader_job = Some(LeaderJob {
                        members,
                        after_metadata_version: self.core.metadata.version,
                    });
                    self.membership.phase = Phase::AwaitingLeaderMetadata;
                }
            }
            codes::MEMBER_ID_REQUIRED => {
                // KIP-394: the coordinator hands out the member id first; rejoin with it at once.
                probes::error_handled(
                    self.core.config.profile,
                    "JoinGroup",
                    codes::MEMBER_ID_REQUIRED,
                );
                self.membership.member_id = resp.member_id.to_string();
                self.membership.phase = Phase::Unjoined;
            }
            codes::COORDINATOR_LOAD_IN_PROGRESS
                if self.core.config.bugs.gives_up_on_join_load_in_progress =>
            {
                // Bug `gives_up_on_join_load_in_progress` (kafkajs #1390): the error escapes
                // the join and the consumer crashes.
                self.fatal(codes::COORDINATOR_LOAD_IN_PROGRESS);
            }
            // The Java consumer raises these from poll (non-retriable: GroupMaxSizeReached-,
            // InconsistentGroupProtocolException) and the application stops; the other
            // profiles back off and try again.
            codes::GROUP_MAX_SIZE_REACHED | codes::INCONSISTENT_GROUP_PROTOCOL
                if matches!(
                    self.core.config.profile,
                    ClientProfile::JavaEager | ClientProfile::JavaCooperative
                ) =>
            {
                probes::error_handled(self.core.config.profile, "JoinGroup", resp.error_code);
                self.fatal(resp.error_code);
            }
            code => {
                if matches!(
                    code,
                    codes::GROUP_MAX_SIZE_REACHED | codes::INCONSISTENT_GROUP_PROTOCOL
                ) {
                    let protocols = self.assignors.iter().map(|a| a.name().to_string()).collect();
                    self.emit(MemberEvent::JoinRefused { error: error_name(code), protocols });
                }
                let error = self.rebalance_failed(now, sent, code, "JoinGroup");
                if self.give_up_round(now, &error_name(code), false) {
                    return;
                }
                if matches!(error, None | Some(GroupError::RebalanceInProgress)) {
                    // REBALANCE_IN_PROGRESS, COORDINATOR_LOAD_IN_PROGRESS and the rest: back
                    // off, retry.
                    self.retry_join_later(now);
                }
            }
        }
    }

    fn complete_leader_assignment(&mut self, now: Millis, members: BTreeMap<String, Subscription>) {
        let protocol = self.membership.protocol.clone().unwrap_or_default();
        let Some(assignor) = self.assignors.iter().find(|a| a.name() == protocol) else {
            // The coordinator chose a protocol this member never offered: retry the join.
            self.membership.phase = Phase::Unjoined;
            self.retry_join_later(now);
            return;
        };
        let topics: BTreeSet<String> =
            members.values().flat_map(|s| s.topics.iter().cloned()).collect();
        let counts: BTreeMap<String, i32> = topics
            .iter()
            .filter_map(|t| self.core.metadata.partition_count(t).map(|c| (t.clone(), c)))
            .collect();
        let mut result = assignor.assign(&counts, &members);
        result.retain(|m, _| members.contains_key(m));
        for m in members.keys() {
            result.entry(m.clone()).or_default();
        }
        for parts in result.values_mut() {
            parts.sort();
            parts.dedup();
        }
        self.double_assign(&mut result);
        self.emit(MemberEvent::AssignmentComputed {
            generation: self.membership.generation,
            protocol,
            assignments: result.iter().map(|(m, p)| (m.clone(), p.clone())).collect(),
        });
        self.membership.assignment_snapshot = self.core.metadata.partition_counts(&topics);
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

    /// KIP-814: a static leader whose replacement the coordinator answered with SkipAssignment
    /// (JoinGroup v9+) computes nothing; as the Java consumer's `onLeaderElected` does, it
    /// takes the members' topics as the group's, snapshots their partition counts as it has
    /// them (asking for the topics it lacks, without waiting), so it watches for new
    /// partitions as leader, and sends SyncGroup without assignments: the coordinator keeps
    /// the generation's.
    fn keep_leader_assignment(&mut self, members: &BTreeMap<String, Subscription>) {
        probes::LEADER_SKIPS_ASSIGNMENT.hit();
        let topics: BTreeSet<String> =
            members.values().flat_map(|s| s.topics.iter().cloned()).collect();
        let missing: Vec<String> = topics
            .iter()
            .filter(|t| !self.core.metadata.topics.contains_key(*t))
            .cloned()
            .collect();
        for t in &missing {
            self.want_metadata_for(t);
        }
        self.membership.assignment_snapshot = self.core.metadata.partition_counts(&topics);
        self.send_sync_group(Vec::new());
    }

    fn send_sync_group(&mut self, assignments: Vec<SyncGroupRequestAssignment>) {
        let Some(node) = self.core.discovery.coordinator else {
            self.membership.phase = Phase::Unjoined;
            return;
        };
        let req = SyncGroupRequest::default()
            .with_group_id(group_id(&self.core.config))
            .with_generation_id(self.membership.generation)
            .with_member_id(sb(&self.membership.member_id))
            .with_group_instance_id(instance_id(&self.core.config))
            .with_protocol_type(Some(sb("consumer")))
            .with_protocol_name(self.membership.protocol.as_deref().map(sb))
            .with_assignments(assignments);
        let timeout = self.core.config.request_timeout_ms;
        self.send(
            Target::Coordinator(node),
            RequestKind::SyncGroup(req),
            timeout,
            Pending::SyncGroup,
        );
        self.membership.phase = Phase::Syncing;
    }

    pub(in crate::classic) fn on_sync_group(
        &mut self,
        now: Millis,
        sent: &Sent,
        resp: SyncGroupResponse,
    ) {
        if self.membership.phase != Phase::Syncing
            || sent.generation != self.membership.generation
            || self.leaving
        {
            return;
        }
        match resp.error_code {
            codes::NONE => match decode_assignment(&resp.assignment) {
                Ok(a) => self.on_assigned(now, a.partitions),
                Err(_) => {
                    // Garbled assignment bytes: nothing usable; back off and rejoin.
                    self.membership.phase = Phase::Unjoined;
                    if !self.give_up_round(now, "UNREADABLE_ASSIGNMENT", true) {
                        self.retry_join_later(now);
                    }
                }
            },
            code => {
                // Bug `keeps_owned_after_sync_error` (KAFKA-13419): a cooperative member hides
                // its owned partitions from the error handling, so a generation reset does not
                // drop them, and claims them under the failed SyncGroup's generation.
                let keep = self.core.config.bugs.keeps_owned_after_sync_error
                    && self.rebalance.cooperative;
                let owned = keep.then(|| self.core.positions.take_owned());
                // REBALANCE_IN_PROGRESS: the rebalance restarted; rejoin at once. The rest of
                // the errors that are not group errors: back off, retry.
                let error = self.rebalance_failed(now, sent, code, "SyncGroup");
                let gave_up = error != Some(GroupError::RebalanceInProgress)
                    && self.give_up_round(now, &error_name(code), true);
                if error.is_none() && !gave_up {
                    self.retry_join_later(now);
                }
                if let Some(owned) = owned {
                    self.membership.last_assignment = (sent.generation, owned.0.clone());
                    self.core.positions.restore_owned(owned);
                }
            }
        }
    }

    /// A JoinGroup or SyncGroup failed with `code`: the member is out of this rebalance, and a
    /// group error is applied if the answer concerns the membership the member still has (one
    /// join or sync round trip is in flight at a time, so it always does unless something
    /// reset the member meanwhile; KAFKA-9823). Returns the group error, if `code` is one; the
    /// caller picks when to rejoin.
    fn rebalance_failed(
        &mut self,
        now: Millis,
        sent: &Sent,
        code: i16,
        api: &str,
    ) -> Option<GroupError> {
        self.membership.phase = Phase::Unjoined;
        let current = self.membership.sent_under(sent);
        self.handle_group_error(now, sent, code, api, current)
    }

    /// The one handler of the group errors every coordinator answer can carry (JoinGroup,
    /// SyncGroup, Heartbeat, OffsetCommit, OffsetFetch). The generation, member id and fencing
    /// errors only apply when `current`: the answer concerns the member's current generation
    /// and member id (KAFKA-9823: an error about an older generation says nothing about the
    /// current one). Returns the group error, or None for codes this does not handle.
    pub(in crate::classic) fn handle_group_error(
        &mut self,
        now: Millis,
        sent: &Sent,
        code: i16,
        api: &str,
        current: bool,
    ) -> Option<GroupError> {
        probes::error_handled(self.core.config.profile, api, code);
        let error = GroupError::from_code(code)?;
        // Bug `resets_generation_on_stale_response` (KAFKA-9823): the answer is taken to be
        // about the current generation whatever generation the request was sent under.
        let current = current
            || (self.core.config.bugs.resets_generation_on_stale_response
                && matches!(error, GroupError::IllegalGeneration | GroupError::UnknownMemberId));
        match error {
            GroupError::RebalanceInProgress => {
                if current {
                    self.membership.request_rejoin();
                }
            }
            GroupError::IllegalGeneration => {
                if current {
                    self.probe_session_lost();
                    self.reset_generation(code, false, sent);
                }
            }
            GroupError::UnknownMemberId => {
                if current {
                    self.probe_session_lost();
                    self.reset_generation(code, true, sent);
                }
            }
            GroupError::FencedInstanceId => {
                if current {
                    self.probe_session_lost();
                    self.fatal(code);
                }
            }
            GroupError::CoordinatorMoved => {
                self.coordinator_failed(now, sent.target, &format!("{api} {}", error_name(code)));
            }
        }
        Some(error)
    }

    /// Generation (and maybe member id) reset after an error answering `sent`: partitions are
    /// lost, not revoked (no commit: the coordinator would reject it), and the member rejoins.
    pub(in crate::classic) fn reset_generation(
        &mut self,
        code: i16,
        reset_member_id: bool,
        sent: &Sent,
    ) {
        let answer_about = (!self.membership.sent_under(sent))
            .then(|| SentUnder { member_id: sent.member_id.clone(), generation: sent.generation });
        self.reset_generation_with(error_name(code), reset_member_id, answer_about);
    }

    /// The reset itself; `answer_about` is the membership the answer concerned when it is not
    /// the current one (recorded for the checker, which holds members to KAFKA-9823's rule).
    pub(in crate::classic) fn reset_generation_with(
        &mut self,
        error: String,
        reset_member_id: bool,
        answer_about: Option<SentUnder>,
    ) {
        probes::GENERATION_RESET.hit();
        self.emit(MemberEvent::GenerationReset {
            member_id: self.membership.member_id.clone(),
            generation: self.membership.generation,
            error: error.clone(),
            reset_member_id,
            answer_about,
        });
        self.lose_partitions(&error);
        self.membership.generation = NO_GENERATION;
        self.membership.protocol = None;
        if reset_member_id {
            self.membership.member_id.clear();
        }
        self.membership.phase = Phase::Unjoined;
        self.membership.rejoin_needed = false;
        self.membership.leader_job = None;
        self.core.timers.cancel(Timer::Heartbeat);
    }

    fn fatal(&mut self, code: i16) {
        let error = error_name(code);
        self.lose_partitions(&error);
        self.emit(MemberEvent::Fatal {
            member_id: self.membership.member_id.clone(),
            generation: self.membership.generation,
            error,
        });
        self.finish();
    }

    /// The Java heartbeat thread's reaction to an expired poll timer: LeaveGroup, then reset
    /// generation and member id; the partitions are lost (not committed). The member rejoins as
    /// a new member once the application polls again.
    /// A static member (group.instance.id) sends no LeaveGroup, here or on close: since Kafka 2.3
    /// the Java consumer leaves that to the session timeout (`maybeLeaveGroup` sends one for
    /// dynamic members only), as librdkafka does, so a static member's bounce within its
    /// session causes no rebalance.
    pub(in crate::classic) fn poll_timeout_leave(&mut self) {
        self.probe_session_lost();
        let dynamic = self.core.config.group_instance_id.is_none();
        if let Some(node) = self.core.discovery.coordinator.filter(|_| dynamic) {
            let member_id = self.membership.member_id.clone();
            let reason = Some("consumer poll timeout has expired");
            self.send_leave_group(node, &member_id, reason, Pending::LeaveAndRejoin);
        }
        self.rebalance.pending_revoke.clear();
        self.reset_generation_with("POLL_TIMEOUT".to_string(), true, None);
    }

    pub(in crate::classic) fn drive_leave(&mut self, now: Millis) {
        self.core.fetcher.drop_buffered(&mut self.core.positions);
        if !self.prepare_revoke(now, true) {
            return;
        }
        self.revoke_all();
        if self.core.in_flight.has_leave() {
            return;
        }
        let dynamic = self.core.config.group_instance_id.is_none();
        match self.core.discovery.coordinator {
            Some(node) if dynamic && !self.membership.member_id.is_empty() => {
                let member_id = self.membership.member_id.clone();
                self.send_leave_group(node, &member_id, None, Pending::LeaveGroup);
            }
            _ => {
                let member_id = self.membership.member_id.clone();
                self.emit(MemberEvent::Left { member_id });
                self.finish();
            }
        }
    }

    /// Sends LeaveGroup for `member_id` (this member's instance id, `reason` where the version
    /// carries one) to coordinator `node`; `pending` says what its answer means.
    pub(in crate::classic) fn send_leave_group(
        &mut self,
        node: i32,
        member_id: &str,
        reason: Option<&str>,
        pending: Pending,
    ) {
        let req = LeaveGroupRequest::default()
            .with_group_id(group_id(&self.core.config))
            .with_members(vec![MemberIdentity::default()
                .with_member_id(sb(member_id))
                .with_group_instance_id(instance_id(&self.core.config))
                .with_reason(reason.map(sb))]);
        let timeout = self.core.config.request_timeout_ms;
        self.send(Target::Coordinator(node), RequestKind::LeaveGroup(req), timeout, pending);
    }

    /// The graceful LeaveGroup was answered (or failed): the member has left.
    pub(in crate::classic) fn on_leave_done(&mut self) {
        let member_id = self.membership.member_id.clone();
        self.emit(MemberEvent::Left { member_id });
        self.finish();
    }
}
