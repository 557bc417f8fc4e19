//! Session and rebalance timeouts of consumer group members.
//!
//! - Session: every heartbeat restarts it (`group.consumer.session.timeout.ms`); when it runs
//!   out the member is fenced: removed, its partitions released, the group epoch bumped.
//! - Rebalance: armed when a member is asked to revoke partitions (UNREVOKED_PARTITIONS), for
//!   the member's rebalance timeout; cancelled when it leaves that state. If it fires while the
//!   member is still at the epoch it was armed at, the member is fenced: a member that does not
//!   give partitions up in time cannot hold the rest of the group back.

use super::{ConsumerGroup, ConsumerMember, MemberState};
use crate::consumer_event::ConsumerRemovalReason;
use crate::effects::Effects;
use crate::timers::TimerKey;
use crate::topics::TopicsImage;
use crate::{probes, Millis};

impl ConsumerGroup {
    fn session_key(&self, member_id: &str) -> TimerKey {
        TimerKey::ConsumerSession { group: self.group_id.clone(), member: member_id.to_string() }
    }

    fn rebalance_key(&self, member_id: &str) -> TimerKey {
        TimerKey::ConsumerRebalance { group: self.group_id.clone(), member: member_id.to_string() }
    }

    /// (Re)starts a member's session: it ends `session_timeout_ms` (at least 1) from `now`.
    pub(super) fn touch_session(
        &self,
        m: &mut ConsumerMember,
        now: Millis,
        session_timeout_ms: i32,
        fx: &mut Effects,
    ) {
        let key = self.session_key(&m.member_id);
        fx.rearm(&mut m.session_deadline, key, now + session_timeout_ms.max(1) as u64);
    }

    /// Arms or cancels the rebalance timeout after a reconciliation step changed the member
    /// (Kafka's maybeReconcile): (re)armed from `now` in UNREVOKED_PARTITIONS, cancelled in any
    /// other state.
    pub(super) fn update_rebalance_timer(
        &self,
        m: &mut ConsumerMember,
        now: Millis,
        fx: &mut Effects,
    ) {
        let key = self.rebalance_key(&m.member_id);
        if m.state == MemberState::UnrevokedPartitions {
            let at = now + m.rebalance_timeout_ms.max(1) as u64;
            fx.rearm(&mut m.rebalance_deadline, key, at);
            m.rebalance_epoch = m.member_epoch;
        } else {
            fx.disarm(&mut m.rebalance_deadline, key);
        }
    }

    /// Stops every timer of a member leaving the group.
    pub(super) fn disarm_timers(&self, m: &mut ConsumerMember, fx: &mut Effects) {
        fx.disarm(&mut m.session_deadline, self.session_key(&m.member_id));
        fx.disarm(&mut m.rebalance_deadline, self.rebalance_key(&m.member_id));
    }

    /// Re-arms a loaded member's timers from `now`: a fresh session, and a rebalance timeout if
    /// it is revoking (Kafka's onLoaded).
    pub(crate) fn arm_loaded_timers(
        &mut self,
        now: Millis,
        session_timeout_ms: i32,
        fx: &mut Effects,
    ) {
        let ids: Vec<String> = self.members.keys().cloned().collect();
        for id in ids {
            let Some(mut m) = self.members.remove(&id) else { continue };
            self.touch_session(&mut m, now, session_timeout_ms, fx);
            if m.state == MemberState::UnrevokedPartitions {
                self.update_rebalance_timer(&mut m, now, fx);
            }
            self.members.insert(id, m);
        }
    }

    /// A member's session ran out: fence it.
    pub(crate) fn on_session_timer(
        &mut self,
        member_id: &str,
        topics: &TopicsImage,
        fx: &mut Effects,
    ) -> bool {
        self.on_timer(member_id, false, topics, fx)
    }

    /// A member's rebalance timeout ran out: fence it if it is still at the epoch it had when
    /// it was asked to revoke.
    pub(crate) fn on_rebalance_timer(
        &mut self,
        member_id: &str,
        topics: &TopicsImage,
        fx: &mut Effects,
    ) -> bool {
        self.on_timer(member_id, true, topics, fx)
    }

    fn on_timer(
        &mut self,
        member_id: &str,
        rebalance: bool,
        topics: &TopicsImage,
        fx: &mut Effects,
    ) -> bool {
        let Some(m) = self.members.get_mut(member_id) else { return false };
        let reason = if rebalance {
            m.rebalance_deadline = None;
            if m.member_epoch != m.rebalance_epoch {
                return false;
            }
            probes::CONSUMER_FENCED_REBALANCE_TIMEOUT.hit();
            ConsumerRemovalReason::RebalanceTimeout
        } else {
            m.session_deadline = None;
            probes::CONSUMER_FENCED_SESSION_TIMEOUT.hit();
            ConsumerRemovalReason::SessionTimeout
        };
        self.fence_member(member_id, reason, topics, fx)
    }
}
