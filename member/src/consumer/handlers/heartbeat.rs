//! The heartbeat loop: sending ConsumerGroupHeartbeat when due (at once when joining,
//! acknowledging or leaving), and what its answers and errors do.

use crate::shared::handlers::prelude::*;
use groupsim_wire::{error_codes as codes, error_name};
use kafka_protocol::messages::{ConsumerGroupHeartbeatResponse, RequestKind};

use crate::consumer::heartbeat::HeartbeatView;
use crate::consumer::membership::{MemberState, Membership, JOIN_EPOCH};
use crate::consumer::reconciliation::IdAssignment;
use crate::consumer::ConsumerGroupMember;
use crate::shared::in_flight::Pending;
use crate::shared::in_flight::{Failure, Sent};
use crate::shared::timers::Timer;
use crate::{probes, MemberEvent, Millis, Target};

impl ConsumerGroupMember {
    pub(in crate::consumer) fn maybe_heartbeat(&mut self, now: Millis) {
        let state = self.membership.state;
        let Some(node) = self.core.discovery.coordinator else {
            if state == MemberState::Leaving && self.poll_expired {
                self.go_stale(now);
            } else if state == MemberState::Leaving {
                // Java's onHeartbeatRequestSkipped: no coordinator, the leave completes unsent.
                self.finish_leave();
            }
            return;
        };
        if state.skips_heartbeat() {
            return;
        }
        let in_flight =
            self.core.in_flight.any(|p| matches!(p, Pending::ConsumerGroupHeartbeat { .. }));
        let due = self.core.timers.get(Timer::Heartbeat).is_none_or(|t| t <= now);
        if state != MemberState::Leaving && (in_flight || !(state.heartbeats_now() || due)) {
            return;
        }
        let leave = state == MemberState::Leaving;
        let epoch = if leave {
            Membership::leave_epoch(self.core.config.group_instance_id.is_some())
        } else {
            self.membership.epoch
        };
        let acknowledging = state == MemberState::Acknowledging;
        let view = HeartbeatView {
            member_id: &self.membership.member_id,
            epoch,
            joining: state == MemberState::Joining,
            acknowledging,
            owned: (&self.reconciliation.current, self.reconciliation.local_epoch),
        };
        let mut req = self.heartbeat.request(&self.core.config, &self.rules, view);
        if leave {
            // Both clients build the leave heartbeat on its own: no owned partitions, but the
            // instance id always (librdkafka's rd_kafka_cgrp_consumer_leave passes it; Kafka
            // refuses a -2 leave without it as INVALID_REQUEST).
            req.topic_partitions = None;
            req.instance_id = crate::shared::instance_id(&self.core.config);
        }
        let timeout = self.core.config.request_timeout_ms;
        let target = Target::Coordinator(node);
        self.send(
            target,
            RequestKind::ConsumerGroupHeartbeat(req),
            timeout,
            Pending::ConsumerGroupHeartbeat { leave },
        );
        self.core.timers.set(Timer::Heartbeat, now + self.heartbeat.interval_ms.max(1));
        if acknowledging {
            // Java's onHeartbeatRequestGenerated: the ack is out; a newer target reconciles next.
            probes::CONSUMER_RECONCILE_ACK.hit();
            self.membership.state = if self.reconciliation.target_reconciled(&self.core.metadata) {
                MemberState::Stable
            } else {
                MemberState::Reconciling
            };
        }
        if leave && self.poll_expired {
            self.go_stale(now);
        } else if leave {
            self.membership.state = MemberState::Unsubscribed;
        }
    }

    pub(in crate::consumer) fn on_heartbeat(
        &mut self,
        now: Millis,
        sent: &Sent,
        leave: bool,
        resp: ConsumerGroupHeartbeatResponse,
    ) {
        if leave {
            probes::error_handled(
                self.core.config.profile,
                "ConsumerGroupHeartbeat",
                resp.error_code,
            );
            // A stale member's leave answer (the poll timer's) changes nothing: it waits for
            // the next poll, or has rejoined already.
            if self.membership.state == MemberState::Unsubscribed {
                self.finish_leave();
            }
            return;
        }
        if resp.error_code != codes::NONE {
            self.on_heartbeat_error(now, sent, resp.error_code);
            return;
        }
        if resp.heartbeat_interval_ms > 0 {
            self.heartbeat.interval_ms = resp.heartbeat_interval_ms as Millis;
        }
        self.core.timers.set(Timer::Heartbeat, now + self.heartbeat.interval_ms);
        if self.commit_after_heartbeat {
            // librdkafka: the commit deferred after STALE_MEMBER_EPOCH goes out again now.
            self.commit_after_heartbeat = false;
            self.core.timers.set(Timer::AutoCommit, now);
        }
        // An answer that comes while the member prepares to leave (its commit and revoke
        // callback under way) still carries its current epoch, which the commit before leaving
        // needs: the Java consumer records it (`ConsumerMembershipManager.onHeartbeatSuccess`
        // updates the epoch before it ignores the assignment) and so does librdkafka since 2.12
        // (its #4672). Once the leave heartbeat is due, the epoch is the leave epoch: ignored.
        let state = self.membership.state;
        let preparing_to_leave = state == MemberState::PrepareLeaving;
        if !(state.can_handle_new_assignment() || preparing_to_leave)
            || state == MemberState::Unsubscribed
        {
            return;
        }
        if let Some(id) = resp.member_id.as_ref().filter(|id| !id.is_empty()) {
            self.membership.member_id = id.to_string();
        }
        self.set_epoch(resp.member_epoch);
        if preparing_to_leave {
            return; // no new assignment while giving everything up
        }
        match resp.assignment {
            Some(a) => {
                let target: IdAssignment = a
                    .topic_partitions
                    .iter()
                    .filter(|t| !t.partitions.is_empty())
                    .map(|t| (t.topic_id, t.partitions.iter().copied().collect()))
                    .collect();
                self.on_target_assignment(target);
            }
            None if state == MemberState::Joining && self.membership.epoch > JOIN_EPOCH => {
                self.membership.state = MemberState::Stable;
            }
            None => {}
        }
    }

    /// A new epoch from the coordinator (recorded when it changes).
    pub(in crate::consumer) fn set_epoch(&mut self, epoch: i32) {
        let previous = self.membership.epoch;
        if epoch != previous {
            self.membership.epoch = epoch;
            self.emit(MemberEvent::MemberEpochChanged {
                member_id: self.membership.member_id.clone(),
                previous,
                epoch,
            });
        }
    }

    fn heartbeat_failed(&mut self, sent: &Sent, error: String) {
        self.emit(MemberEvent::HeartbeatFailed {
            member_id: sent.member_id.clone(),
            epoch: sent.generation,
            error,
        });
    }

    fn on_heartbeat_error(&mut self, now: Millis, sent: &Sent, code: i16) {
        probes::error_handled(self.core.config.profile, "ConsumerGroupHeartbeat", code);
        self.heartbeat_failed(sent, error_name(code));
        self.heartbeat.reset();
        match code {
            codes::NOT_COORDINATOR | codes::COORDINATOR_NOT_AVAILABLE => {
                probes::CONSUMER_HEARTBEAT_COORDINATOR_MOVED.hit();
                self.mark_coordinator_unknown(
                    now,
                    &format!("ConsumerGroupHeartbeat {}", error_name(code)),
                );
                self.core.timers.set(Timer::Heartbeat, now);
            }
            codes::COORDINATOR_LOAD_IN_PROGRESS => {
                probes::CONSUMER_HEARTBEAT_LOADING.hit();
                self.retry_after_backoff(Timer::Heartbeat, now);
            }
            codes::FENCED_MEMBER_EPOCH | codes::UNKNOWN_MEMBER_ID => {
                if code == codes::FENCED_MEMBER_EPOCH {
                    probes::CONSUMER_FENCED_EPOCH.hit();
                } else {
                    probes::CONSUMER_UNKNOWN_MEMBER.hit();
                }
                self.fence(now, code);
            }
            _ => {
                probes::CONSUMER_HEARTBEAT_FATAL.hit();
                self.fatal(now, code);
            }
        }
    }

    /// A heartbeat got no answer: the next one is full, after a backoff (the coordinator is
    /// forgotten by the caller); a leave heartbeat ends the leave.
    pub(in crate::consumer) fn on_heartbeat_lost(
        &mut self,
        now: Millis,
        sent: &Sent,
        leave: bool,
        failure: &Failure,
    ) {
        if leave {
            if self.membership.state == MemberState::Unsubscribed {
                self.finish_leave();
            }
            return;
        }
        probes::CONSUMER_HEARTBEAT_LOST.hit();
        self.heartbeat_failed(sent, failure.name());
        self.heartbeat.reset();
        self.retry_after_backoff(Timer::Heartbeat, now);
    }

    /// FENCED_MEMBER_EPOCH / UNKNOWN_MEMBER_ID (`transitionToFenced`): the partitions are lost
    /// (no commit, `onPartitionsLost`), the epoch goes back to 0 and the member rejoins at once
    /// with the member id it drew. A member already leaving just stops.
    fn fence(&mut self, now: Millis, code: i16) {
        let state = self.membership.state;
        if matches!(state, MemberState::PrepareLeaving | MemberState::Leaving) {
            self.release_lost(now, &error_name(code));
            self.finish_leave();
            return;
        }
        if matches!(state, MemberState::Unsubscribed | MemberState::Stale) {
            return; // out of the group already: a stale member rejoins when polled
        }
        probes::CONSUMER_FENCED_REJOINING.hit();
        self.membership.state = MemberState::Fenced;
        self.emit(MemberEvent::Fenced {
            member_id: self.membership.member_id.clone(),
            epoch: self.membership.epoch,
            error: error_name(code),
        });
        if !self.keep_partitions_when_fenced() {
            self.release_lost(now, &error_name(code));
        }
        self.set_epoch(JOIN_EPOCH);
        self.membership.state = MemberState::Joining;
        self.core.timers.set(Timer::Heartbeat, now);
    }

    /// A fatal heartbeat error: partitions lost, the member stops for good.
    fn fatal(&mut self, now: Millis, code: i16) {
        let leaving =
            matches!(self.membership.state, MemberState::PrepareLeaving | MemberState::Leaving);
        if !leaving {
            self.release_lost(now, &error_name(code));
        }
        self.emit(MemberEvent::Fatal {
            member_id: self.membership.member_id.clone(),
            generation: self.membership.epoch,
            error: error_name(code),
        });
        self.membership.state = MemberState::Fatal;
        self.core.finish();
    }

    /// The leave heartbeat was answered (or could not be sent): the member is out.
    pub(in crate::consumer) fn finish_leave(&mut self) {
        self.membership.state = MemberState::Unsubscribed;
        self.emit(MemberEvent::Left { member_id: self.membership.member_id.clone() });
        self.core.finish();
    }
}
