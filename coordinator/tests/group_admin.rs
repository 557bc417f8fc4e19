//! Coordinator-side fault injection: a forced rebalance and an expelled member are answered the
//! way Kafka answers a membership change and a session expiry.

mod group_harness;

use group_harness::*;
use groupsim_coordinator::{GroupState, RemovalReason};

#[test]
fn a_forced_rebalance_sends_members_rejoining_with_rebalance_in_progress() {
    let mut h = Harness::default();
    let (ids, generation) = h.stable_group(2);
    assert!(h.c.force_rebalance(h.now, GROUP));
    h.advance(0);
    assert_eq!(h.state(), Some(GroupState::PreparingRebalance));
    let r = h.send(3, hb_req(&ids[0], generation));
    assert_eq!(h.heartbeat_error(r), code(E::RebalanceInProgress));
    assert!(!h.c.force_rebalance(h.now, "no-such-group"));
}

#[test]
fn an_expelled_member_is_removed_as_on_session_timeout_and_told_unknown_member_id() {
    let mut h = Harness::default();
    let (ids, generation) = h.stable_group(2);
    assert!(h.c.expire_member(h.now, GROUP, &ids[1]));
    h.advance(0);
    assert_eq!(h.removed(), vec![(ids[1].clone(), RemovalReason::SessionTimeout)]);
    let r = h.send(3, hb_req(&ids[1], generation));
    assert_eq!(h.heartbeat_error(r), code(E::UnknownMemberId));
    assert!(!h.c.expire_member(h.now, GROUP, "ghost"));
}

#[test]
fn a_member_waiting_in_join_is_kept_when_expelled_as_kafkas_should_keep_alive_says() {
    let mut h = Harness::default();
    let (ids, _) = h.stable_group(2);
    h.send(5, join_req(&ids[0])); // parked: the rebalance waits for ids[1]
    assert!(h.c.expire_member(h.now, GROUP, &ids[0]));
    h.advance(0);
    assert!(h.removed().is_empty(), "{:?}", h.removed());
}
