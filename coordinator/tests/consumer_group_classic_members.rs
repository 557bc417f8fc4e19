//! Classic-protocol members inside a consumer group (Kafka's classicGroupJoinToConsumerGroup,
//! classicGroupSyncToConsumerGroup, classicGroupHeartbeatToConsumerGroup,
//! classicGroupLeaveToConsumerGroup, and their timeouts): every error each API answers, one
//! case each, then the timers. Each case starts from a consumer group where consumer member `a`
//! joined `t` and classic member `c` (dynamic, protocols `range` then `roundrobin`) joined and
//! synced.

mod consumer_harness;

use consumer_harness::*;
use groupsim_coordinator::consumer_event::{ConsumerGroupEvent, ConsumerRemovalReason};
use groupsim_coordinator::{CoordinatorConfig, GroupCoordinator, GroupState, MigrationPolicy};
use kafka_protocol::messages::{JoinGroupRequest, SyncGroupRequest};

/// The group of the module docs; returns `c`'s generation (its member epoch).
fn setup_with(cfg: CoordinatorConfig) -> (Harness, i32) {
    let mut h = Harness::with(GroupCoordinator::new(cfg));
    h.joined("a", &["t"]);
    let r = h.join_classic(5, classic_join("c", &["t"], &[], &["range", "roundrobin"]));
    assert_eq!(r.error_code, 0, "{r:?}");
    assert_eq!(r.protocol_name.as_deref(), Some("range"), "the member's first protocol");
    assert!(r.leader.is_empty() && r.members.is_empty(), "a classic member never leads here");
    let sync = h.sync_classic(classic_sync("c", r.generation_id, "range", &[]));
    assert_eq!(sync.error_code, 0);
    (h, r.generation_id)
}

fn setup() -> (Harness, i32) {
    setup_with(config())
}

#[test]
fn each_join_rule_answers_its_error() {
    type Case = (&'static str, i16, JoinGroupRequest, E);
    let cases: Vec<Case> = vec![
        (
            "protocol type other than consumer",
            5,
            classic_join("x", &["t"], &[], &["range"]).with_protocol_type(s("connect")),
            E::InconsistentGroupProtocol,
        ),
        (
            "no protocol every classic member supports",
            5,
            classic_join("x", &["t"], &[], &["sticky"]),
            E::InconsistentGroupProtocol,
        ),
        (
            "v4+ dynamic member without an id",
            5,
            classic_join("", &["t"], &[], &["range"]),
            E::MemberIdRequired,
        ),
        (
            "static member with an id but nobody holds the instance",
            5,
            classic_join("x", &["t"], &[], &["range"]).with_group_instance_id(Some(s("i9"))),
            E::UnknownMemberId,
        ),
    ];
    for (name, v, req, error) in cases {
        let (mut h, _) = setup();
        let r = h.join_classic(v, req);
        assert_eq!(r.error_code, error.code(), "{name}: {r:?}");
    }
}

#[test]
fn a_full_group_refuses_a_new_classic_member() {
    let cfg = CoordinatorConfig { consumer_group_max_size: 2, ..config() };
    let (mut h, _) = setup_with(cfg);
    let r = h.join_classic(5, classic_join("x", &["t"], &[], &["range"]));
    assert_eq!(r.error_code, E::GroupMaxSizeReached.code());
    // A member already in the group still rejoins.
    let r = h.join_classic(5, classic_join("c", &["t"], &[], &["range", "roundrobin"]));
    assert_eq!(r.error_code, 0);
}

#[test]
fn a_static_member_with_another_member_id_is_fenced() {
    let (mut h, _) = setup();
    let join =
        |id: &str| classic_join(id, &["t"], &[], &["range"]).with_group_instance_id(Some(s("i1")));
    let r = h.join_classic(5, join(""));
    assert_eq!(r.error_code, 0, "a static member joining without an id gets one at once");
    let r = h.join_classic(5, join("someone-else"));
    assert_eq!(r.error_code, E::FencedInstanceId.code());
}

#[test]
fn the_migration_policy_does_not_gate_classic_joins() {
    let cfg =
        CoordinatorConfig { consumer_migration_policy: MigrationPolicy::Disabled, ..config() };
    let (h, generation) = setup_with(cfg);
    assert!(generation > 0);
    assert!(h.group().member("c").is_some_and(|m| m.uses_classic_protocol()));
}

#[test]
fn each_sync_rule_answers_its_error() {
    type Case = (&'static str, Box<dyn Fn(i32) -> SyncGroupRequest>, E);
    let cases: Vec<Case> = vec![
        (
            "unknown member",
            Box::new(|g| classic_sync("nobody", g, "range", &[])),
            E::UnknownMemberId,
        ),
        (
            "a consumer-protocol member",
            Box::new(|g| classic_sync("a", g, "range", &[])),
            E::UnknownMemberId,
        ),
        (
            "another generation",
            Box::new(|g| classic_sync("c", g + 1, "range", &[])),
            E::IllegalGeneration,
        ),
        (
            "another protocol name",
            Box::new(|g| classic_sync("c", g, "roundrobin", &[])),
            E::InconsistentGroupProtocol,
        ),
        (
            "another protocol type",
            Box::new(|g| classic_sync("c", g, "range", &[]).with_protocol_type(Some(s("connect")))),
            E::InconsistentGroupProtocol,
        ),
    ];
    for (name, req, error) in cases {
        let (mut h, generation) = setup();
        let r = h.sync_classic(req(generation));
        assert_eq!(r.error_code, error.code(), "{name}");
    }
}

#[test]
fn sync_behind_the_group_epoch_is_told_to_rejoin() {
    let (mut h, generation) = setup();
    h.joined("b", &["t"]); // bumps the group epoch
    let r = h.sync_classic(classic_sync("c", generation, "range", &[]));
    assert_eq!(r.error_code, E::RebalanceInProgress.code());
}

#[test]
fn each_heartbeat_rule_answers_its_error() {
    let cases: Vec<(&str, &str, i32, E)> = vec![
        ("unknown member", "nobody", 0, E::UnknownMemberId),
        ("a consumer-protocol member", "a", 0, E::UnknownMemberId),
        ("another generation", "c", 1, E::IllegalGeneration),
    ];
    for (name, member, offset, error) in cases {
        let (mut h, generation) = setup();
        let code = h.hb_classic(classic_hb(member, generation + offset));
        assert_eq!(code, error.code(), "{name}");
    }
    let (mut h, generation) = setup();
    assert_eq!(h.hb_classic(classic_hb("c", generation)), 0, "reconciled: NONE");
    h.joined("b", &["t"]);
    assert_eq!(
        h.hb_classic(classic_hb("c", generation)),
        E::RebalanceInProgress.code(),
        "the group epoch moved on: rejoin"
    );
}

#[test]
fn each_leave_rule_answers_its_error_and_a_leave_bumps_the_epoch_once() {
    let (mut h, _) = setup();
    let epoch = h.group().group_epoch();
    let r = h.leave_classic(classic_leave(&[("a", None), ("nobody", None), ("c", None)]));
    assert_eq!(
        r,
        vec![
            ("a".to_string(), E::UnknownMemberId.code()),
            ("nobody".to_string(), E::UnknownMemberId.code()),
            ("c".to_string(), 0),
        ]
    );
    assert!(h.group().member("c").is_none());
    assert_eq!(h.group().group_epoch(), epoch + 1);
    assert!(h.events.iter().any(|e| matches!(e,
        ConsumerGroupEvent::MemberRemoved { member_id, reason: ConsumerRemovalReason::Left, .. }
            if member_id == "c")));
}

/// The last removal of `c` recorded, if any.
fn removal(h: &Harness) -> Option<ConsumerRemovalReason> {
    h.events.iter().rev().find_map(|e| match e {
        ConsumerGroupEvent::MemberRemoved { member_id, reason, .. } if member_id == "c" => {
            Some(*reason)
        }
        _ => None,
    })
}

#[test]
fn a_classic_member_is_fenced_after_its_own_session_timeout() {
    let (mut h, _) = setup();
    // `a` keeps heartbeating; `c` falls silent.
    for _ in 0..(CLASSIC_SESSION / 1_000) {
        let a = h.group().member("a").unwrap().clone();
        h.hb(beat("a", a.member_epoch, &a.assigned));
        h.advance(1_000);
    }
    assert_eq!(removal(&h), Some(ConsumerRemovalReason::SessionTimeout));
}

#[test]
fn a_classic_member_told_to_rejoin_that_does_not_is_fenced_after_its_rebalance_timeout() {
    let (mut h, generation) = setup();
    h.joined("b", &["t"]);
    assert_eq!(h.hb_classic(classic_hb("c", generation)), E::RebalanceInProgress.code());
    // It keeps heartbeating (keeping its session) but never rejoins.
    for _ in 0..(REBALANCE / 5_000) {
        h.advance(5_000);
        h.hb_classic(classic_hb("c", generation));
    }
    assert_eq!(removal(&h), Some(ConsumerRemovalReason::JoinTimeout));
}

#[test]
fn a_classic_member_that_joins_but_never_syncs_is_fenced_after_its_rebalance_timeout() {
    let (mut h, _) = setup();
    let r = h.join_classic(5, classic_join("c", &["t"], &[], &["range", "roundrobin"]));
    for _ in 0..(REBALANCE / 5_000) {
        h.advance(5_000);
        h.hb_classic(classic_hb("c", r.generation_id));
    }
    assert_eq!(removal(&h), Some(ConsumerRemovalReason::SyncTimeout));
}

#[test]
fn a_classic_join_to_an_empty_consumer_group_makes_a_classic_group() {
    let mut h = Harness::default();
    h.joined("a", &["t"]);
    h.hb(leave("a", -1));
    let id = h.send(3, classic_join("", &["t"], &[], &["range"]));
    assert!(h.join_answer(id).is_none(), "parked in the new classic group's join phase");
    assert!(h.c.consumer_group(GROUP).is_none());
    assert_eq!(h.c.group_state(GROUP), Some(GroupState::PreparingRebalance));
}
