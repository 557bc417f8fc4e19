//! Session deadlines: a member heard from is kept alive for its session timeout; when the
//! deadline passes, Kafka's shouldKeepAlive decides whether it has failed.

use super::Group;
use crate::effects::Effects;
use crate::timers::TimerKey;
use crate::{probes, CoordinatorConfig, Millis, RemovalReason};

impl Group {
    pub(super) fn session_key(&self, member_id: &str) -> TimerKey {
        TimerKey::Session { group: self.group_id.clone(), member: member_id.to_string() }
    }

    /// Kafka's completeAndScheduleNextHeartbeatExpiration: the member was heard from at `now`,
    /// its session ends `session_timeout_ms` later.
    pub(crate) fn touch(&mut self, member_id: &str, now: Millis, fx: &mut Effects) {
        let key = self.session_key(member_id);
        if let Some(m) = self.members.get_mut(member_id) {
            // At least 1 ms: a zero session timeout must not re-arm a kept-alive member at the
            // very instant being processed (handle_timeout would spin).
            let at = now + m.session_timeout_ms.max(1) as u64;
            fx.rearm(&mut m.session_deadline, key, at);
        }
    }

    /// Moves a member's session deadline to `now` (an expulsion: the timer fires at once and
    /// Kafka's shouldKeepAlive decides). Returns whether the member exists.
    pub(crate) fn expire_session_now(
        &mut self,
        member_id: &str,
        now: Millis,
        fx: &mut Effects,
    ) -> bool {
        if !self.members.contains_key(member_id) {
            return false;
        }
        self.arm_session(member_id, now, fx);
        true
    }

    /// Arms a member's session deadline at `at` (a new member's join deadline).
    pub(super) fn arm_session(&mut self, member_id: &str, at: Millis, fx: &mut Effects) {
        let key = self.session_key(member_id);
        if let Some(m) = self.members.get_mut(member_id) {
            fx.rearm(&mut m.session_deadline, key, at);
        }
    }

    /// A member's session deadline passed. Kafka's shouldKeepAlive: a member with a parked
    /// JoinGroup is kept (unless it is new and the new-member join timeout ran out), so is one
    /// with a parked SyncGroup; anyone else has failed.
    pub(crate) fn on_session_timer(
        &mut self,
        member_id: &str,
        now: Millis,
        cfg: &CoordinatorConfig,
        fx: &mut Effects,
    ) {
        let Some(m) = self.members.get_mut(member_id) else { return };
        m.session_deadline = None;
        let reason = if m.awaiting_join.is_some() {
            let new_member_deadline = m.joined_at + cfg.new_member_join_timeout_ms.max(0) as u64;
            if m.is_new && now >= new_member_deadline {
                Some(RemovalReason::PendingJoinExpired)
            } else if m.is_new {
                self.arm_session(member_id, new_member_deadline, fx);
                return;
            } else {
                None
            }
        } else if m.awaiting_sync.is_some() || (cfg.bugs.keeps_silent_members_alive && !m.is_new) {
            // Bug `keeps_silent_members_alive` keeps every member that completed a join.
            None
        } else {
            Some(RemovalReason::SessionTimeout)
        };
        if reason == Some(RemovalReason::SessionTimeout) {
            probes::REMOVED_SESSION_TIMEOUT.hit();
        }
        match reason {
            Some(r) => self.remove_member(member_id, r, now, cfg, fx),
            None => self.touch(member_id, now, fx),
        }
    }
}
