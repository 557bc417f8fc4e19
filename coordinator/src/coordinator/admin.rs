//! Coordinator-side events a fault injector asks for, answered the way Kafka's own machinery
//! answers them: a forced rebalance is the rebalance a membership change would start, and an
//! expelled member is one whose session deadline has come (Kafka's shouldKeepAlive still keeps
//! a member with a parked JoinGroup or SyncGroup), so its next request gets UNKNOWN_MEMBER_ID or
//! ILLEGAL_GENERATION exactly as after a real expiry.
//!
//! A KIP-848 consumer group has no rebalance to start: its rebalance is a group epoch bump (as
//! a subscription or metadata change makes one), after which every member's next heartbeat
//! moves it to the new target assignment's epoch. An expelled consumer-group member is fenced
//! as its session timer would fence it (partitions released, group epoch bumped); its next
//! heartbeat gets UNKNOWN_MEMBER_ID.

use super::GroupCoordinator;
use crate::Millis;

impl GroupCoordinator {
    /// Starts a rebalance of `group` if its state allows one (Stable, CompletingRebalance,
    /// Empty); members learn of it from their next heartbeat (REBALANCE_IN_PROGRESS). Returns
    /// whether the group is here.
    pub fn force_rebalance(&mut self, now: Millis, group: &str) -> bool {
        if let Some(g) = self.consumer_groups.get_mut(group) {
            g.bump_epoch_for_rebalance(&mut self.fx);
            self.store_consumer_group(group, now);
            self.flush_stores(now);
            return true;
        }
        let Some(g) = self.groups.get_mut(group) else { return false };
        g.maybe_prepare_rebalance(now, &self.config, &mut self.fx);
        self.flush_stores(now);
        true
    }

    /// Moves `member`'s session deadline of `group` to `now`, so it expires as if the member
    /// had gone silent (see the module docs). Returns whether the member is here.
    pub fn expire_member(&mut self, now: Millis, group: &str, member: &str) -> bool {
        if let Some(g) = self.consumer_groups.get_mut(group) {
            if !g.expire_session_now(member, now, &mut self.fx) {
                return false;
            }
            self.handle_timeout(now);
            return true;
        }
        let Some(g) = self.groups.get_mut(group) else { return false };
        if !g.expire_session_now(member, now, &mut self.fx) {
            return false;
        }
        self.handle_timeout(now);
        true
    }
}
