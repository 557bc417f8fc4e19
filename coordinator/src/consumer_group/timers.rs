//! Timeouts of consumer group members.
//!
//! - Session: every heartbeat restarts it (`group.consumer.session.timeout.ms`; a member using
//!   the classic protocol has the session timeout of its JoinGroup); when it runs out the member
//!   is fenced: removed, its partitions released, the group epoch bumped.
//! - Rebalance: armed when a consumer-protocol member is asked to revoke partitions
//!   (UNREVOKED_PARTITIONS), for the member's rebalance timeout; cancelled when it leaves that
//!   state. If it fires while the member is still at the epoch it was armed at, the member is
//!   fenced: a member that does not give partitions up in time cannot hold the rest of the group
//!   back. (Kafka re-arms it on load for every revoking member, classic ones included.)
//! - Join (classic members): armed, unless already armed, when a classic member is told
//!   REBALANCE_IN_PROGRESS; cancelled when it rejoins. Fires: the member is fenced.
//! - Sync (classic members): armed when a classic member's JoinGroup is answered; cancelled by
//!   its SyncGroup. Fires: the member is fenced.
//!
//! Fencing itself is the coordinator's ([`crate::GroupCoordinator`]): fencing the last
//! consumer-protocol member may turn the group back into a classic group.

use super::{ConsumerGroup, ConsumerMember, MemberState};
use crate::consumer_event::ConsumerRemovalReason;
use crate::effects::Effects;
use crate::timers::TimerKey;
use crate::{probes, Millis};

/// Which of a member's timers fired.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MemberTimer {
    Session,
    Rebalance,
    ClassicJoin,
    ClassicSync,
}

impl ConsumerGroup {
    fn key(&self, member_id: &str, timer: MemberTimer) -> TimerKey {
        let (group, member) = (self.group_id.clone(), member_id.to_string());
        match timer {
            MemberTimer::Session => TimerKey::ConsumerSession { group, member },
            MemberTimer::Rebalance => TimerKey::ConsumerRebalance { group, member },
            MemberTimer::ClassicJoin => TimerKey::ConsumerClassicJoin { group, member },
            MemberTimer::ClassicSync => TimerKey::ConsumerClassicSync { group, member },
        }
    }

    /// (Re)starts a member's session: it ends `session_timeout_ms` (at least 1) from `now`.
    pub(super) fn touch_session(
        &self,
        m: &mut ConsumerMember,
        now: Millis,
        session_timeout_ms: i32,
        fx: &mut Effects,
    ) {
        let key = self.key(&m.member_id, MemberTimer::Session);
        fx.rearm(&mut m.session_deadline, key, now + session_timeout_ms.max(1) as u64);
    }

    /// Moves a member's session deadline to `now` (the expel fault), through the timer table so
    /// that no earlier deadline of the member is left in it to fire later. Returns whether the
    /// member is here.
    pub(crate) fn expire_session_now(
        &mut self,
        member_id: &str,
        now: Millis,
        fx: &mut Effects,
    ) -> bool {
        let key = self.key(member_id, MemberTimer::Session);
        let Some(m) = self.members.get_mut(member_id) else { return false };
        fx.rearm(&mut m.session_deadline, key, now);
        true
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
        let key = self.key(&m.member_id, MemberTimer::Rebalance);
        if m.state == MemberState::UnrevokedPartitions {
            let at = now + m.rebalance_timeout_ms.max(1) as u64;
            fx.rearm(&mut m.rebalance_deadline, key, at);
            m.rebalance_epoch = m.member_epoch;
        } else {
            fx.disarm(&mut m.rebalance_deadline, key);
        }
    }

    /// Kafka's scheduleConsumerGroupJoinTimeoutIfAbsent: a classic member told to rejoin must
    /// rejoin within its rebalance timeout; an armed deadline is kept.
    pub(super) fn arm_join_timer_if_absent(
        &self,
        m: &mut ConsumerMember,
        now: Millis,
        fx: &mut Effects,
    ) {
        if m.join_deadline.is_none() {
            let key = self.key(&m.member_id, MemberTimer::ClassicJoin);
            fx.rearm(&mut m.join_deadline, key, now + m.rebalance_timeout_ms.max(1) as u64);
        }
    }

    /// A classic member rejoined: its join deadline goes.
    pub(super) fn cancel_join_timer(&self, m: &mut ConsumerMember, fx: &mut Effects) {
        fx.disarm(&mut m.join_deadline, self.key(&m.member_id, MemberTimer::ClassicJoin));
    }

    /// A classic member's JoinGroup was answered: it must sync within `rebalance_timeout_ms`.
    pub(super) fn arm_sync_timer(
        &self,
        m: &mut ConsumerMember,
        now: Millis,
        rebalance_timeout_ms: i32,
        fx: &mut Effects,
    ) {
        let key = self.key(&m.member_id, MemberTimer::ClassicSync);
        fx.rearm(&mut m.sync_deadline, key, now + rebalance_timeout_ms.max(1) as u64);
    }

    /// A classic member synced: its sync deadline goes.
    pub(super) fn cancel_sync_timer(&self, m: &mut ConsumerMember, fx: &mut Effects) {
        fx.disarm(&mut m.sync_deadline, self.key(&m.member_id, MemberTimer::ClassicSync));
    }

    /// Stops every timer of a member leaving the group.
    pub(super) fn disarm_timers(&self, m: &mut ConsumerMember, fx: &mut Effects) {
        fx.disarm(&mut m.session_deadline, self.key(&m.member_id, MemberTimer::Session));
        fx.disarm(&mut m.rebalance_deadline, self.key(&m.member_id, MemberTimer::Rebalance));
        self.cancel_join_timer(m, fx);
        self.cancel_sync_timer(m, fx);
    }

    /// Applies `f` to every member in turn (each taken out of the group while `f` runs, so
    /// `f` may read the group and arm the member's timers).
    fn each_member(&mut self, mut f: impl FnMut(&Self, &mut ConsumerMember)) {
        let ids: Vec<String> = self.members.keys().cloned().collect();
        for id in ids {
            let Some(mut m) = self.members.remove(&id) else { continue };
            f(self, &mut m);
            self.members.insert(id, m);
        }
    }

    /// Stops every timer of every member (the group becomes a classic group).
    pub(crate) fn disarm_all_timers(&mut self, fx: &mut Effects) {
        self.each_member(|g, m| g.disarm_timers(m, fx));
    }

    /// Starts every member's session with its own (classic) timeout, as Kafka does for the
    /// members of a group it just upgraded.
    pub(crate) fn arm_classic_sessions(&mut self, now: Millis, fx: &mut Effects) {
        self.each_member(|g, m| g.touch_session(m, now, m.classic_session_timeout(), fx));
    }

    /// Re-arms a loaded member's timers from `now`: a fresh session of
    /// `group.consumer.session.timeout.ms` (classic members too, as Kafka's onLoaded does), and
    /// a rebalance timeout if it is revoking.
    pub(crate) fn arm_loaded_timers(
        &mut self,
        now: Millis,
        session_timeout_ms: i32,
        fx: &mut Effects,
    ) {
        self.each_member(|g, m| {
            g.touch_session(m, now, session_timeout_ms, fx);
            if m.state == MemberState::UnrevokedPartitions {
                g.update_rebalance_timer(m, now, fx);
            }
        });
    }

    /// A member's timer fired: why the member must be fenced, if it must (a rebalance timeout
    /// only fences a member still at the epoch it had when it was asked to revoke).
    pub(crate) fn timer_fired(
        &mut self,
        member_id: &str,
        timer: MemberTimer,
    ) -> Option<ConsumerRemovalReason> {
        let m = self.members.get_mut(member_id)?;
        Some(match timer {
            MemberTimer::Session => {
                m.session_deadline = None;
                probes::CONSUMER_FENCED_SESSION_TIMEOUT.hit();
                ConsumerRemovalReason::SessionTimeout
            }
            MemberTimer::Rebalance => {
                m.rebalance_deadline = None;
                if m.member_epoch != m.rebalance_epoch {
                    return None;
                }
                probes::CONSUMER_FENCED_REBALANCE_TIMEOUT.hit();
                ConsumerRemovalReason::RebalanceTimeout
            }
            MemberTimer::ClassicJoin => {
                m.join_deadline = None;
                probes::CLASSIC_IN_CONSUMER_JOIN_TIMEOUT.hit();
                ConsumerRemovalReason::JoinTimeout
            }
            MemberTimer::ClassicSync => {
                m.sync_deadline = None;
                probes::CLASSIC_IN_CONSUMER_SYNC_TIMEOUT.hit();
                ConsumerRemovalReason::SyncTimeout
            }
        })
    }
}
