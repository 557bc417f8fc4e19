//! Sending heartbeats and reading their answers.

use crate::shared::handlers::prelude::*;
use groupsim_wire::error_codes as codes;
use kafka_protocol::messages::RequestKind;

use crate::classic::heartbeat::Heartbeat;
use crate::classic::{Member, Target};
use crate::shared::in_flight::{Pending, Sent};
use crate::shared::timers::Timer;
use crate::Millis;

impl Member {
    pub(in crate::classic) fn maybe_heartbeat(&mut self, now: Millis) {
        let Some(node) = self.core.discovery.coordinator else {
            return;
        };
        if self.heartbeat.thread_dead {
            self.core.timers.cancel(Timer::Heartbeat);
            return;
        }
        if self.core.in_flight.has_awaited_heartbeat()
            || self.core.timers.get(Timer::Heartbeat).is_none_or(|t| t > now)
        {
            return;
        }
        if self.heartbeat.session_expired(now, self.core.config.session_timeout_ms) {
            // No heartbeat got through for a whole session: the coordinator is presumed gone.
            self.probe_session_lost();
            self.mark_coordinator_unknown(
                now,
                "session timeout expired without a heartbeat answer",
            );
            return;
        }
        let req = Heartbeat::request(
            &self.core.config,
            self.membership.generation,
            &self.membership.member_id,
        );
        let timeout = self.core.config.request_timeout_ms;
        self.send(
            Target::Coordinator(node),
            RequestKind::Heartbeat(req),
            timeout,
            Pending::Heartbeat { awaited: true },
        );
        self.core.timers.set(Timer::Heartbeat, now + self.core.config.heartbeat_interval_ms);
    }

    /// A Heartbeat answer (a late one, no longer awaited, is read the same way).
    pub(in crate::classic) fn on_heartbeat(&mut self, now: Millis, sent: &Sent, code: i16) {
        if code == codes::NONE {
            if sent.generation == self.membership.generation {
                self.heartbeat.last_ok = now;
            }
            return;
        }
        let current = self.membership.is_current(sent);
        if current && code == codes::REBALANCE_IN_PROGRESS {
            // The coordinator heard the heartbeat: the session holds while the group
            // rebalances, and the member heartbeats on until it rejoins (the Java consumer's
            // AbstractCoordinator counts REBALANCE_IN_PROGRESS as a heartbeat received, so that
            // a member slow to rejoin is kept for the rebalance timeout, not expired after a
            // session).
            self.heartbeat.last_ok = now;
        }
        if current && self.rules.heartbeat_error_ends_generation {
            self.heartbeat_ended_generation(now, sent, Some(code));
            return;
        }
        if self.handle_group_error(now, sent, code, "Heartbeat", current).is_none()
            || code == codes::COORDINATOR_LOAD_IN_PROGRESS
        {
            self.retry_after_backoff(Timer::Heartbeat, now);
        }
    }

    /// kafka-go: a heartbeat of the current generation failed (`code`: its error answer; None:
    /// the request was lost), so the generation is over and the member rejoins under its member
    /// id. The error is applied first as the group's own word (a moved coordinator is looked up
    /// again; ILLEGAL_GENERATION ends the generation), except that UNKNOWN_MEMBER_ID does not
    /// clear the id: kafka-go rejoins with it, and gives it up when that JoinGroup fails.
    pub(in crate::classic) fn heartbeat_ended_generation(
        &mut self,
        now: Millis,
        sent: &Sent,
        code: Option<i16>,
    ) {
        match code {
            Some(code @ codes::UNKNOWN_MEMBER_ID) => {
                crate::probes::error_handled(self.core.config.profile, "Heartbeat", code);
                self.probe_session_lost();
                self.reset_generation(code, false, sent);
            }
            Some(code) => {
                self.handle_group_error(now, sent, code, "Heartbeat", true);
            }
            None => {}
        }
        self.membership.request_rejoin();
    }
}
