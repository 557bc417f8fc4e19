//! Fault injection on KIP-848 consumer groups: a forced rebalance is a group epoch bump (the
//! members move to a new target epoch at their next heartbeat), and an expelled member is
//! fenced as on a session timeout.

mod consumer_harness;

use consumer_harness::*;
use groupsim_coordinator::{ConsumerGroupEvent, ConsumerRemovalReason};

#[test]
fn a_forced_rebalance_bumps_the_group_epoch_and_members_move_to_it() {
    let mut h = Harness::default();
    let (epoch, owned) = h.joined("a", &["t"]);
    let group_epoch = h.group().group_epoch();
    assert!(h.c.force_rebalance(h.now, GROUP));
    assert_eq!(h.group().group_epoch(), group_epoch + 1);
    let r = h.hb(beat("a", epoch, &owned));
    assert_eq!((r.error_code, r.member_epoch), (0, group_epoch + 1), "{r:?}");
    assert_eq!(h.group().target_of("a"), owned, "same members, same target");
    assert!(!h.c.force_rebalance(h.now, "no-such-group"));
}

#[test]
fn an_expelled_member_is_fenced_as_on_session_timeout_and_told_unknown_member_id() {
    let mut h = Harness::default();
    let (epoch, owned) = h.joined("a", &["t"]);
    h.joined("b", &["t"]);
    assert!(h.c.expire_member(h.now, GROUP, "a"));
    h.drain();
    assert!(h.events.iter().any(|e| matches!(e,
        ConsumerGroupEvent::MemberRemoved { member_id, reason: ConsumerRemovalReason::SessionTimeout, .. }
            if member_id == "a")));
    let r = h.hb(beat("a", epoch, &owned));
    assert_eq!(r.error_code, E::UnknownMemberId.code());
    assert!(!h.c.expire_member(h.now, GROUP, "ghost"));
}
