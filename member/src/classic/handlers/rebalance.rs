//! Giving partitions up (revoke, lose) and taking them on (assign), eager and cooperative.

use crate::shared::handlers::prelude::*;
use std::collections::BTreeSet;

use crate::classic::membership::Phase;
use crate::classic::profile_rules::InProgressOnRevoke;
use crate::classic::rebalance::RevokeStage;
use crate::classic::Member;
use crate::shared::in_flight::CommitPurpose;
use crate::shared::positions::{PartitionState, PositionState};
use crate::shared::timers::Timer;
use crate::{MemberEvent, Millis, TopicPartition};

impl Member {
    /// The steps before partitions are given up; true once they are done. The commit is one
    /// attempt, answered before going on (Java: commitSync in `onPartitionsRevoked`; brod and
    /// Elsa: after the callback, once, not after ILLEGAL_GENERATION / UNKNOWN_MEMBER_ID, which
    /// already lost the partitions; kafka-go: none).
    pub(in crate::classic) fn prepare_revoke(&mut self, now: Millis, leaving: bool) -> bool {
        if self.rebalance.in_callback() {
            return false;
        }
        let waits = self.rules.in_progress_on_revoke == InProgressOnRevoke::Wait;
        if waits && !self.core.processor.processing.is_empty() {
            // The application thread is busy: the poll loop (and so the rejoin) waits for it.
            return false;
        }
        if self.core.positions.assigned.is_empty() {
            return true;
        }
        match self.rules.in_progress_on_revoke {
            InProgressOnRevoke::Detach => {
                let processor = &mut self.core.processor;
                processor.detached.append(&mut processor.processing);
            }
            InProgressOnRevoke::Stop => self.core.processor.processing.clear(),
            InProgressOnRevoke::Wait => {}
        }
        let commit_first = self.rules.commit_before_revoke_callback;
        if commit_first && !self.revoke_commit(leaving) {
            return false;
        }
        // Cooperative members run the callback after the assignment, for the revoked ones only.
        let run_callback = leaving || !self.rebalance.cooperative;
        if run_callback && self.rebalance.revoke_stage == RevokeStage::Idle {
            self.revoke_begins();
            let assigned = self.core.positions.assigned.clone();
            let callback_ms =
                self.core.app.on_partitions_revoked(now, self.membership.generation, &assigned);
            if self.rebalance.start_callback(now, callback_ms) {
                return false;
            }
        }
        if !commit_first && !self.revoke_commit(leaving) {
            return false;
        }
        true
    }

    /// The commit before giving partitions up: true once it is done (answered or not needed).
    fn revoke_commit(&mut self, leaving: bool) -> bool {
        if self.core.in_flight.has_commit() {
            return false;
        }
        if self.retry_superseded_commit() {
            return false;
        }
        let profile_commits = self.core.app.commits_on_revoke(self.core.config.profile);
        if self.rebalance.revoke_commit_attempted
            || !profile_commits
            || self.core.config.bugs.skip_revoke_commit_then_overcommit
        {
            return true;
        }
        if self.rebalance.cooperative && !leaving && self.membership.phase != Phase::Stable {
            // A cooperative member keeps its partitions through a failed JoinGroup or SyncGroup
            // and tries again. The Java consumer commits before rejoining once per rebalance
            // (`onJoinPrepare`), and only from a stable generation (`generationIfStable`): not
            // before a retried JoinGroup, and never under a generation whose SyncGroup failed.
            return true;
        }
        let offsets = self
            .core
            .positions
            .offsets_to_commit(self.core.config.bugs.skip_revoke_commit_then_overcommit);
        if offsets.is_empty() {
            return true;
        }
        if self.core.discovery.coordinator.is_none() {
            // The commit needs the coordinator: a leaving member gives up, a rejoining one waits
            // for it to be rediscovered.
            if leaving {
                self.revoke_begins();
                self.rebalance.revoke_commit_attempted = true;
            }
            return leaving;
        }
        if leaving || !self.rebalance.cooperative {
            self.revoke_begins();
        }
        self.rebalance.revoke_commit_attempted = true;
        self.send_commit(offsets, CommitPurpose::Revoke);
        false
    }

    /// A revoke callback that ran past `max.poll.interval.ms` (Java profiles) makes the member
    /// leave the group, as the Java heartbeat thread does on a poll timeout: LeaveGroup, reset
    /// generation and member id, partitions lost. A finished callback moves the revoke on;
    /// for a cooperative member it completes the revocation and asks for the second rebalance.
    pub(in crate::classic) fn check_revoke_callback(&mut self, now: Millis) {
        let RevokeStage::Callback { since, until } = self.rebalance.revoke_stage else {
            return;
        };
        if now >= until {
            self.rebalance.revoke_stage = RevokeStage::Done;
            self.finish_cooperative_revoke();
            return;
        }
        let max_poll = since + self.core.config.rebalance_timeout_ms.max(0) as u64;
        if self.rules.enforces_max_poll && now >= max_poll && !self.membership.member_id.is_empty()
        {
            self.poll_timeout_leave();
        }
    }

    pub(in crate::classic) fn lose_partitions(&mut self, reason: &str) {
        if !self.core.positions.assigned.is_empty() {
            let lost = self.core.positions.assigned.clone();
            self.core.app.on_partitions_lost(self.core.clock, self.membership.generation, &lost);
            self.emit(MemberEvent::Lost {
                member_id: self.membership.member_id.clone(),
                generation: self.membership.generation,
                partitions: self.core.positions.assigned.clone(),
                reason: reason.to_string(),
            });
        }
        self.clear_assignment();
    }

    pub(in crate::classic) fn revoke_all(&mut self) {
        self.rebalance.revoke_stage = RevokeStage::Idle;
        self.hold_revoked_offsets();
        if !self.core.positions.assigned.is_empty() {
            self.emit(MemberEvent::Revoked {
                member_id: self.membership.member_id.clone(),
                generation: self.membership.generation,
                partitions: self.core.positions.assigned.clone(),
            });
        }
        self.clear_assignment();
    }

    /// Cooperative, in the revoke callback of the partitions the new assignment took away: the
    /// Java profile commits what it processed of them (commitSync in `onPartitionsRevoked`,
    /// under the new generation, before they are given up). True when the commit was sent; the
    /// callback goes on when it is answered.
    fn commit_revoked_progress(&mut self) -> bool {
        let offsets = std::mem::take(&mut self.rebalance.revoked_progress);
        let commits = self.rules.commit_before_revoke_callback
            && self.core.app.commits_on_revoke(self.core.config.profile)
            && !self.core.config.bugs.skip_revoke_commit_then_overcommit;
        if !commits || offsets.is_empty() || self.core.discovery.coordinator.is_none() {
            return false;
        }
        self.send_commit(offsets, CommitPurpose::RevokeCallback);
        self.rebalance.callback_commit_in_flight = true;
        true
    }

    /// Cooperative: the revoke callback's commit was answered (or failed): the callback goes on.
    pub(in crate::classic) fn on_revoke_callback_commit_done(&mut self, now: Millis) {
        if std::mem::take(&mut self.rebalance.callback_commit_in_flight) {
            self.run_cooperative_revoke_callback(now);
        }
    }

    /// Cooperative: runs the revoke callback of the partitions the new assignment took away
    /// (they are revoked when it returns).
    fn run_cooperative_revoke_callback(&mut self, now: Millis) {
        let revoking = self.rebalance.pending_revoke.clone();
        let callback_ms =
            self.core.app.on_partitions_revoked(now, self.membership.generation, &revoking);
        if !self.rebalance.start_callback(now, callback_ms) {
            self.finish_cooperative_revoke();
        }
    }

    /// Cooperative: the revoke callback for the partitions the new assignment took away has
    /// returned. They are given up and the member rejoins at once for the second rebalance.
    fn finish_cooperative_revoke(&mut self) {
        if self.rebalance.pending_revoke.is_empty() {
            return;
        }
        let revoked = std::mem::take(&mut self.rebalance.pending_revoke);
        self.core.positions.assigned.retain(|tp| !revoked.contains(tp));
        self.emit(MemberEvent::Revoked {
            member_id: self.membership.member_id.clone(),
            generation: self.membership.generation,
            partitions: revoked,
        });
        self.rebalance.revoke_stage = RevokeStage::Idle;
        self.membership.request_rejoin();
    }

    fn clear_assignment(&mut self) {
        self.hold_cleared_offsets();
        self.rebalance.pending_revoke.clear();
        self.rebalance.revoked_progress.clear();
        self.rebalance.callback_commit_in_flight = false;
        self.core.positions.assigned.clear();
        self.core.positions.partitions.clear();
        self.core.fetcher.buffered.clear();
        self.core.positions.epoch += 1;
    }

    pub(in crate::classic) fn on_assigned(
        &mut self,
        now: Millis,
        mut partitions: Vec<TopicPartition>,
    ) {
        partitions.sort();
        partitions.dedup();
        self.membership.join_attempts = 0;
        self.membership.last_assignment = (self.membership.generation, partitions.clone());
        let added: Vec<TopicPartition> = partitions
            .iter()
            .filter(|tp| !self.core.positions.assigned.contains(tp))
            .cloned()
            .collect();
        if self.rebalance.cooperative {
            self.assign_incrementally(&partitions);
        } else {
            self.clear_assignment();
            self.core.positions.assigned = partitions.clone();
            self.core.positions.partitions =
                partitions.iter().map(|tp| (tp.clone(), PartitionState::new())).collect();
        }
        self.membership.watched_counts =
            self.core.metadata.partition_counts(&self.core.config.topics);
        self.membership.phase = Phase::Stable;
        self.membership.rejoin_needed = false;
        if partitions.is_empty() {
            crate::probes::IDLE_MEMBER.hit();
        }
        self.emit(MemberEvent::Assigned {
            member_id: self.membership.member_id.clone(),
            generation: self.membership.generation,
            partitions,
        });
        self.core.app.on_partitions_assigned(now, self.membership.generation, &added);
        if self.rebalance.cooperative && !self.rebalance.pending_revoke.is_empty() {
            self.revoke_begins();
            if !self.commit_revoked_progress() {
                self.run_cooperative_revoke_callback(now);
            }
        }
        self.core.timers.set(Timer::Heartbeat, now + self.core.config.heartbeat_interval_ms);
        self.heartbeat.last_ok = now;
        if !self.core.timers.is_set(Timer::AutoCommit) {
            self.core.timers.set(Timer::AutoCommit, now + self.core.config.commit_interval_ms);
        }
        let unknown: BTreeSet<String> = self
            .core
            .positions
            .assigned
            .iter()
            .filter(|tp| self.core.metadata.leader_of(tp).is_none())
            .map(|tp| tp.topic.to_string())
            .collect();
        for t in unknown {
            self.want_metadata_for(&t);
        }
    }

    /// KIP-429 on the member: partitions in both the old and the new assignment are kept with
    /// their positions and progress, as the Java consumer's SubscriptionState keeps them (what
    /// was processed under the old generation is committed under the new one); new ones start
    /// from their committed offsets; those taken away stop fetching at once and are revoked
    /// when the revoke callback returns.
    fn assign_incrementally(&mut self, partitions: &[TopicPartition]) {
        let old = std::mem::take(&mut self.core.positions.partitions);
        let revoked: Vec<TopicPartition> = self
            .core
            .positions
            .assigned
            .iter()
            .filter(|tp| !partitions.contains(tp))
            .cloned()
            .collect();
        self.hold_given_up_offsets(&old, &revoked);
        self.rebalance.revoked_progress = revoked
            .iter()
            .filter_map(|tp| {
                let ps = old.get(tp).filter(|ps| ps.state == PositionState::Ready)?;
                let processed = ps.processed.filter(|p| Some(*p) != ps.commit_floor)?;
                Some((tp.clone(), processed))
            })
            .collect();
        self.core.fetcher.buffered.clear();
        self.core.positions.epoch += 1;
        self.core.positions.partitions = partitions
            .iter()
            .map(|tp| {
                let ps = match old.get(tp) {
                    Some(ps) if ps.state == PositionState::Ready && ps.processed.is_some() => {
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
        self.core.positions.assigned = assigned;
        self.rebalance.pending_revoke = revoked;
    }
}
