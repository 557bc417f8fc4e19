//! Whether the member processes have settled: none is paused, down awaiting a restart, or holding
//! a fault whose effect is still to come (a delayed stale ack, a slowed revoke callback).
//!
//! The world ends a run early once the liveness rule holds and has held for a grace period; a
//! member the history cannot show as disturbed (a paused process looks like a healthy member
//! until its session expires) must not let the run end before its fault has played out. The
//! member processes report it ([`Settle`]); it only reads what they report, so it never changes
//! a run.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::rc::Rc;

use groupsim_wire::Millis;

use crate::process::Settle;

/// Member processes whose faults are still playing out.
#[derive(Debug, Default)]
pub struct Settling {
    /// Members paused, or down between an ordered crash or leave and their restart.
    disturbed: BTreeSet<String>,
    /// Until when a fault already delivered to a member may still act (its delay or slowdown).
    quiet_from: Millis,
}

/// The settling state the stage owns and the worlds update from the member processes.
pub type SharedSettling = Rc<RefCell<Settling>>;

impl Settling {
    /// `member` is paused or down until [`Settling::settle`] is called for it.
    pub fn disturb(&mut self, member: &str) {
        self.disturbed.insert(member.to_string());
    }

    /// `member` runs again.
    pub fn settle(&mut self, member: &str) {
        self.disturbed.remove(member);
    }

    /// A fault delivered to a member may act until `at`.
    pub fn acts_until(&mut self, at: Millis) {
        self.quiet_from = self.quiet_from.max(at);
    }

    /// Applies what member process `member` reported.
    pub fn mark(&mut self, member: &str, mark: Settle) {
        match mark {
            Settle::Disturbed => self.disturb(member),
            Settle::Settled => self.settle(member),
            Settle::ActsUntil(at) => self.acts_until(at),
        }
    }

    /// Whether, at `now`, no member is disturbed and no delivered fault may still act.
    pub fn settled(&self, now: Millis) -> bool {
        self.disturbed.is_empty() && now >= self.quiet_from
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settled_only_when_no_member_is_disturbed_and_delays_have_passed() {
        let mut s = Settling::default();
        assert!(s.settled(0));
        s.disturb("m1");
        s.disturb("m2");
        s.settle("m1");
        assert!(!s.settled(10), "m2 is still paused");
        s.settle("m2");
        assert!(s.settled(10));
        s.acts_until(500);
        s.acts_until(300);
        assert!(!s.settled(499), "a delayed fault may still act");
        assert!(s.settled(500));
    }
}
