//! Fault injection on KIP-848 consumer groups: a forced rebalance is a group epoch bump (the
//! members move to a new target epoch at their next heartbeat), and an expelled member is
//! fenced as on a session timeout.

mod consumer_harness;

use consumer_harness::*;
use groupsim_coordinator::{ConsumerGroupEvent, ConsumerRemovalReason};
use groupsim_wire::Millis;

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

/// The expel fault fenced the member by calling the session timer's handler directly, which
/// forgot the member's scheduled session deadline without taking it out of the coordinator's
/// timer table. A consumer-protocol member rejoins under the member id it had (epoch 0), so the
/// orphaned deadline later fired against the rejoined member as a session timeout though it had
/// heartbeated on time; that fence orphaned the new deadline the same way, and the member was
/// fenced once per session for the rest of the run. Found by `explore` (admin_observer seed
/// 50000: a member upgraded to the consumer protocol, then expelled; the checker's
/// `stalled-member`).
#[test]
fn an_expelled_member_that_rejoins_under_its_id_keeps_the_session_it_heartbeats() {
    let mut h = Harness::default();
    let mut state = [("a", h.joined("a", &["t"])), ("b", h.joined("b", &["t"]))];
    h.advance(1_000);
    assert!(h.c.expire_member(h.now, GROUP, "a"));
    h.drain();
    state[0].1 = h.joined("a", &["t"]);
    h.events.clear();
    // Both members heartbeat every fifth of a session, for three sessions.
    let step = (SESSION / 5) as Millis;
    for _ in 0..15 {
        h.advance(step);
        for (member, (epoch, owned)) in state.iter_mut() {
            let r = h.hb(beat(member, *epoch, owned));
            assert_eq!(r.error_code, 0, "{member} at {}: {r:?}", h.now);
            *epoch = r.member_epoch;
            if let Some(assigned) = h.assigned(&r) {
                *owned = assigned;
            }
        }
    }
    let removed: Vec<_> =
        h.events.iter().filter(|e| matches!(e, ConsumerGroupEvent::MemberRemoved { .. })).collect();
    assert!(removed.is_empty(), "members heartbeating on time were removed: {removed:?}");
}
