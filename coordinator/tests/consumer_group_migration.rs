//! Online migration between the classic protocol and the consumer protocol (Kafka 4.0's
//! GroupMetadataManager: convertToConsumerGroup, convertToClassicGroup, and
//! `group.consumer.migration.policy`), one rule per test: upgrade on a consumer-protocol join,
//! what the upgraded group holds, the refusals, the classic members catching up, the downgrade
//! when the last consumer-protocol member goes (every way it can go), the refusals of that, and
//! both conversions surviving a coordinator move.
//!
//! Each starts from a classic group of two members (`client-1` owning t-0,1 and `client-2`
//! owning t-2,3, generation 1, protocol `range`, partitions t-4,5 unassigned).

mod consumer_harness;

use consumer_harness::*;
use groupsim_coordinator::consumer_event::{ConsumerGroupEvent, ConsumerRemovalReason};
use groupsim_coordinator::consumer_group::MemberState;
use groupsim_coordinator::offsets_log::{OffsetsLog, OffsetsRecord};
use groupsim_coordinator::{
    ConsumerGroupState, CoordinatorConfig, GroupCoordinator, GroupState, MigrationPolicy,
};
use kafka_protocol::messages::{GroupId, OffsetCommitRequest};

const C1: &str = "client-1";
const C2: &str = "client-2";

fn harness(policy: MigrationPolicy) -> Harness {
    let cfg = CoordinatorConfig { consumer_migration_policy: policy, ..config() };
    Harness::with(GroupCoordinator::new(cfg))
}

/// The classic group of the module docs.
fn classic(h: &mut Harness) {
    assert_eq!(h.classic_group(2, "range"), vec![C1.to_string(), C2.to_string()]);
}

/// An OffsetCommit (v8) of `offset` on t-0 by `member` at `generation`.
fn commit(member: &str, generation: i32, offset: i64) -> OffsetCommitRequest {
    use kafka_protocol::messages::offset_commit_request::*;
    OffsetCommitRequest::default()
        .with_group_id(GroupId(s(GROUP)))
        .with_member_id(s(member))
        .with_generation_id_or_member_epoch(generation)
        .with_topics(vec![OffsetCommitRequestTopic::default()
            .with_name(kafka_protocol::messages::TopicName(s("t")))
            .with_partitions(vec![OffsetCommitRequestPartition::default()
                .with_partition_index(0)
                .with_committed_offset(offset)])])
}

fn commit_error(h: &mut Harness, req: OffsetCommitRequest) -> i16 {
    let id = h.send(8, req);
    match h.response(id) {
        Some(kafka_protocol::messages::ResponseKind::OffsetCommit(r)) => {
            r.topics[0].partitions[0].error_code
        }
        other => panic!("{other:?}"),
    }
}

/// Upgrades the classic group (built if `build`) with consumer member `n` joining `t`.
fn upgraded_from(h: &mut Harness, build: bool) -> i32 {
    if build {
        classic(h);
    }
    let (epoch, assigned) = h.joined("n", &["t"]);
    assert_eq!(epoch, 2, "the join bumps the group epoch past the classic generation");
    assert!(
        assigned.is_subset(&set(&[("t", 4), ("t", 5)])),
        "only partitions nobody owns are handed out at once: {assigned:?}"
    );
    epoch
}

fn upgraded(h: &mut Harness) -> i32 {
    upgraded_from(h, true)
}

/// Brings the classic members to the current target: each heartbeats, rejoins as told
/// (cooperative: reporting what it owns), syncs, and rejoins again after revoking.
fn reconcile_classic(h: &mut Harness) {
    for _ in 0..3 {
        for m in [C1, C2] {
            let Some(cm) = h.group().member(m).cloned() else { continue };
            let code = h.hb_classic(classic_hb(m, cm.member_epoch));
            if code == 0 {
                continue;
            }
            assert_eq!(code, E::RebalanceInProgress.code(), "{m}");
            let owned: Vec<(&str, i32)> =
                cm.assigned.iter().map(|tp| ("t", tp.partition)).collect();
            let r = h.join_classic(5, classic_join(m, &["t"], &owned, &["range"]));
            assert_eq!(r.error_code, 0, "{m} rejoins: {r:?}");
            let sync = h.sync_classic(classic_sync(m, r.generation_id, "range", &[]));
            assert_eq!(sync.error_code, 0, "{m} syncs: {sync:?}");
        }
        let n = h.group().member("n").expect("n").clone();
        h.hb(beat("n", n.member_epoch, &n.assigned));
    }
}

#[test]
fn upgrade_keeps_the_classic_members_with_their_assignments_and_the_offsets() {
    let mut h = harness(MigrationPolicy::Bidirectional);
    classic(&mut h);
    assert_eq!(commit_error(&mut h, commit(C1, 1, 42)), 0);
    h.events.clear();
    upgraded_from(&mut h, false);

    assert!(h.c.group(GROUP).is_none(), "the classic group is gone");
    let g = h.group();
    for (m, parts) in [(C1, set(&[("t", 0), ("t", 1)])), (C2, set(&[("t", 2), ("t", 3)]))] {
        let cm = g.member(m).expect("classic member kept");
        assert!(cm.uses_classic_protocol(), "{m}");
        assert_eq!((cm.member_epoch, cm.state, &cm.assigned), (1, MemberState::Stable, &parts));
        assert_eq!(cm.classic.as_ref().map(|c| c.session_timeout_ms), Some(CLASSIC_SESSION));
    }
    let n = g.member("n").expect("n joined");
    assert!(!n.uses_classic_protocol());
    assert!(n.member_epoch == 2 && n.assigned.len() <= 2, "{n:?}");
    assert_eq!(h.c.committed_offset(GROUP, &tp("t", 0)), Some(42), "offsets survive");
    match &h.events[0] {
        ConsumerGroupEvent::GroupUpgraded { generation, members, .. } => {
            assert_eq!(*generation, 1);
            let got: Vec<(String, i32, Vec<_>)> = members
                .iter()
                .map(|m| (m.member_id.clone(), m.member_epoch, m.partitions.clone()))
                .collect();
            assert_eq!(
                got,
                vec![
                    (C1.to_string(), 1, vec![tp("t", 0), tp("t", 1)]),
                    (C2.to_string(), 1, vec![tp("t", 2), tp("t", 3)]),
                ]
            );
        }
        other => panic!("the upgrade is recorded first: {other:?}"),
    }
    // A classic member still commits with its generation (= its member epoch).
    assert_eq!(commit_error(&mut h, commit(C1, 1, 43)), 0);
    assert_eq!(commit_error(&mut h, commit(C1, 2, 44)), E::IllegalGeneration.code());
}

#[test]
fn each_upgrade_refusal_leaves_the_classic_group() {
    type Case = (&'static str, MigrationPolicy, i32, E);
    let cases: Vec<Case> = vec![
        ("policy disabled", MigrationPolicy::Disabled, i32::MAX, E::GroupIdNotFound),
        ("policy downgrade only", MigrationPolicy::Downgrade, i32::MAX, E::GroupIdNotFound),
        (
            "more members than group.consumer.max.size",
            MigrationPolicy::Upgrade,
            1,
            E::GroupIdNotFound,
        ),
        (
            "the joining member would not fit",
            MigrationPolicy::Bidirectional,
            2,
            E::GroupMaxSizeReached,
        ),
    ];
    for (name, policy, max, error) in cases {
        let cfg = CoordinatorConfig {
            consumer_migration_policy: policy,
            consumer_group_max_size: max,
            ..config()
        };
        let mut h = Harness::with(GroupCoordinator::new(cfg));
        classic(&mut h);
        let r = h.hb(join("n", &["t"]));
        assert_eq!(r.error_code, error.code(), "{name}");
        assert!(h.c.consumer_group(GROUP).is_none(), "{name}");
        assert_eq!(h.c.group_state(GROUP), Some(GroupState::Stable), "{name}");
        assert_eq!(h.hb_classic(classic_hb(C1, 1)), 0, "{name}: the classic group goes on");
    }
}

#[test]
fn a_group_of_another_protocol_type_is_not_upgraded() {
    let mut h = harness(MigrationPolicy::Bidirectional);
    let req = classic_join("", &["t"], &[], &["range"]).with_protocol_type(s("connect"));
    h.send(3, req);
    for _ in 0..10 {
        h.advance(1_000);
    }
    assert_eq!(h.hb(join("n", &["t"])).error_code, E::GroupIdNotFound.code());
    assert!(h.c.group(GROUP).is_some());
}

#[test]
fn upgrade_during_a_rebalance_answers_the_parked_join_rebalance_in_progress() {
    let mut h = harness(MigrationPolicy::Bidirectional);
    classic(&mut h);
    // The leader rejoins: the group prepares a rebalance and parks the JoinGroup.
    let parked = h.send(5, classic_join(C1, &["t"], &[("t", 0), ("t", 1)], &["range"]));
    assert_eq!(h.c.group_state(GROUP), Some(GroupState::PreparingRebalance));
    assert!(h.join_answer(parked).is_none());
    upgraded_from(&mut h, false);
    let r = h.join_answer(parked).expect("answered by the upgrade");
    assert_eq!(r.error_code, E::RebalanceInProgress.code());
    // It rejoins and is served by the consumer group.
    let r = h.join_classic(5, classic_join(C1, &["t"], &[("t", 0), ("t", 1)], &["range"]));
    assert_eq!((r.error_code, r.protocol_name.as_deref()), (0, Some("range")));
}

/// KAFKA-17733: a classic member that joined and never synced has an empty assignment. Kafka
/// before the fix parsed it as a consumer-protocol assignment, failed on the buffer underflow and
/// refused the consumer-protocol member GROUP_ID_NOT_FOUND ("the embedded consumer protocol is
/// malformed"), which the Java consumer treats as fatal; since the fix an empty assignment is no
/// partitions and the group converts. A consumer-protocol member joining a classic group in its
/// first join phase upgrades it, and the classic member, holding nothing, is asked to rejoin.
#[test]
fn a_member_that_never_synced_does_not_stop_the_upgrade() {
    let mut h = harness(MigrationPolicy::Bidirectional);
    let parked = h.send(3, classic_join("", &["t"], &[], &["range"]));
    assert_eq!(h.c.group_state(GROUP), Some(GroupState::PreparingRebalance));
    assert!(h.join_answer(parked).is_none(), "parked in the initial delay");
    let r = h.hb(join("n", &["t"]));
    assert_eq!(r.error_code, 0, "the upgrade goes ahead: {r:?}");
    assert!(h.c.group_state(GROUP).is_none(), "the classic group is gone");
    let answer = h.join_answer(parked).expect("the parked join is answered by the upgrade");
    assert_eq!(answer.error_code, E::RebalanceInProgress.code());
    let g = h.group();
    assert_eq!(g.members().count(), 2, "the classic member is kept");
    let classic = g.members().find(|m| m.member_id != "n").expect("the classic member");
    assert!(classic.assigned.is_empty(), "it held nothing: {classic:?}");
}

#[test]
fn classic_members_catch_up_and_the_new_member_gets_what_they_released() {
    let mut h = harness(MigrationPolicy::Bidirectional);
    upgraded(&mut h);
    reconcile_classic(&mut h);
    let g = h.group();
    assert_eq!(g.state(), ConsumerGroupState::Stable, "{g:?}");
    let owned: Vec<_> = ["n", C1, C2].iter().map(|m| g.member(m).unwrap().assigned.len()).collect();
    assert_eq!(owned, vec![2, 2, 2], "uniform over three members");
    assert!(g.members().all(|m| m.member_epoch == 2));
}

#[test]
fn an_eager_member_reporting_nothing_owned_moves_on_at_once() {
    let mut h = harness(MigrationPolicy::Bidirectional);
    upgraded(&mut h);
    assert_eq!(h.hb_classic(classic_hb(C1, 1)), E::RebalanceInProgress.code());
    // Eager: revoked everything before rejoining.
    let r = h.join_classic(5, classic_join(C1, &["t"], &[], &["range"]));
    assert_eq!(r.generation_id, 2, "nothing to revoke: straight to the new epoch");
    let m = h.group().member(C1).unwrap().clone();
    assert_eq!(m.state, MemberState::Stable, "{m:?}");
    let sync = h.sync_classic(classic_sync(C1, 2, "range", &[]));
    assert_eq!(Harness::synced(&sync), m.assigned);
}

#[test]
fn a_cooperative_member_revokes_after_its_sync_then_rejoins() {
    let mut h = harness(MigrationPolicy::Bidirectional);
    upgraded(&mut h);
    assert_eq!(h.hb_classic(classic_hb(C1, 1)), E::RebalanceInProgress.code());
    let r = h.join_classic(5, classic_join(C1, &["t"], &[("t", 0), ("t", 1)], &["range"]));
    let m = h.group().member(C1).unwrap().clone();
    if m.state == MemberState::UnrevokedPartitions {
        assert_eq!(r.generation_id, 1, "the epoch stays until the revocation is acknowledged");
        let sync = h.sync_classic(classic_sync(C1, 1, "range", &[]));
        assert_eq!(Harness::synced(&sync), m.assigned, "the sync leaves out what it must revoke");
        assert_eq!(h.hb_classic(classic_hb(C1, 1)), E::RebalanceInProgress.code(), "revoking");
        let kept: Vec<(&str, i32)> = m.assigned.iter().map(|tp| ("t", tp.partition)).collect();
        let r = h.join_classic(5, classic_join(C1, &["t"], &kept, &["range"]));
        assert_eq!(r.generation_id, 2);
    } else {
        assert_eq!(r.generation_id, 2, "{m:?}");
    }
}

/// Upgraded, reconciled, then consumer member `n` goes by `how`.
fn downgraded_by(how: &str) -> Harness {
    let mut h = harness(MigrationPolicy::Bidirectional);
    upgraded(&mut h);
    reconcile_classic(&mut h);
    h.events.clear();
    match how {
        "leave" => assert_eq!(h.hb(leave("n", -1)).error_code, 0),
        "session timeout" => {
            for _ in 0..10 {
                for m in [C1, C2] {
                    h.hb_classic(classic_hb(m, 2));
                }
                h.advance(5_000);
            }
        }
        _ => unreachable!(),
    }
    h
}

#[test]
fn the_last_consumer_member_leaving_downgrades_and_starts_a_rebalance() {
    for (how, reason) in [
        ("leave", ConsumerRemovalReason::Left),
        ("session timeout", ConsumerRemovalReason::SessionTimeout),
    ] {
        let mut h = downgraded_by(how);
        assert!(h.c.consumer_group(GROUP).is_none(), "{how}");
        let g = h.c.group(GROUP).expect("a classic group again");
        assert_eq!((g.state(), g.generation_id()), (GroupState::PreparingRebalance, 2), "{how}");
        assert_eq!(g.protocol_name(), Some("range"));
        assert!(h.events.iter().any(|e| matches!(e,
            ConsumerGroupEvent::MemberRemoved { member_id, reason: r, .. } if member_id == "n" && *r == reason)));
        let downgrade = h.events.iter().find_map(|e| match e {
            ConsumerGroupEvent::GroupDowngraded {
                group_epoch, leaving_member, members, ..
            } => Some((*group_epoch, leaving_member.clone(), members.len())),
            _ => None,
        });
        assert_eq!(downgrade, Some((2, "n".to_string(), 2)), "{how}");
        // Each classic member keeps its target as its assignment until the rebalance.
        for m in [C1, C2] {
            let stored = h.c.group(GROUP).unwrap().member(m).unwrap().assignment.clone();
            let parts = groupsim_wire::consumer_protocol::decode_assignment(&stored).unwrap();
            // The last target was computed with `n`: two of the six partitions each.
            assert_eq!(parts.partitions.len(), 2, "{how}: {m}");
        }
        // The classic rebalance runs as usual: told on heartbeat, rejoin, new generation.
        assert_eq!(h.hb_classic(classic_hb(C1, 2)), E::RebalanceInProgress.code());
        let j1 = h.send(5, classic_join(C1, &["t"], &[], &["range"]));
        let j2 = h.send(5, classic_join(C2, &["t"], &[], &["range"]));
        let (r1, r2) = (h.join_answer(j1).unwrap(), h.join_answer(j2).unwrap());
        assert_eq!((r1.generation_id, r2.generation_id), (3, 3), "{how}");
        assert_eq!(r1.leader.as_str(), C1, "the first member leads");
    }
}

#[test]
fn each_downgrade_refusal_leaves_a_consumer_group_of_classic_members() {
    type Case = (&'static str, MigrationPolicy, i32);
    let cases: Vec<Case> = vec![
        ("policy upgrade only", MigrationPolicy::Upgrade, i32::MAX),
        ("more members than group.max.size", MigrationPolicy::Bidirectional, 1),
    ];
    for (name, policy, classic_max) in cases {
        let cfg = CoordinatorConfig {
            consumer_migration_policy: policy,
            group_max_size: classic_max,
            ..config()
        };
        // Built under the defaults; the coordinator with these settings takes over.
        let mut h = moved_to(cfg, |h| {
            upgraded(h);
        });
        assert_eq!(h.hb(leave("n", -1)).error_code, 0, "{name}");
        let g = h.c.consumer_group(GROUP).expect(name);
        assert!(g.members().all(|m| m.uses_classic_protocol()), "{name}");
        assert_eq!(g.group_epoch(), 3, "{name}: fenced as usual, epoch bumped");
        assert!(h.c.group(GROUP).is_none(), "{name}");
    }
}

#[test]
fn no_downgrade_when_a_classic_member_leaves_or_the_consumer_member_was_alone() {
    let mut h = harness(MigrationPolicy::Bidirectional);
    upgraded(&mut h);
    assert_eq!(h.leave_classic(classic_leave(&[(C1, None)])), vec![(C1.to_string(), 0)]);
    assert!(h.c.consumer_group(GROUP).is_some(), "a consumer member remains");
    // A group whose only member is the consumer member stays an (empty) consumer group.
    let mut h = harness(MigrationPolicy::Bidirectional);
    h.joined("n", &["t"]);
    h.hb(leave("n", -1));
    assert_eq!(h.c.consumer_group_state(GROUP), Some(ConsumerGroupState::Empty));
}

/// Two coordinators over one offsets log: `a` does `setup`, then `b` takes the partition over.
fn moved(setup: impl FnOnce(&mut Harness)) -> Harness {
    moved_to(config(), setup)
}

/// [`moved`] with `b` configured by `cfg`.
fn moved_to(cfg: CoordinatorConfig, setup: impl FnOnce(&mut Harness)) -> Harness {
    let log = OffsetsLog::new(1).shared();
    let mut a = GroupCoordinator::with_offsets_log(config(), log.clone());
    a.load_partition(0, 0, 1, 0);
    let mut h = Harness::with(a);
    setup(&mut h);
    let mut b = GroupCoordinator::with_offsets_log(cfg, log);
    b.load_partition(h.now, 0, 2, 0);
    let mut moved = Harness::with(b);
    moved.now = h.now;
    moved.drain();
    moved
}

#[test]
fn a_coordinator_that_takes_over_mid_migration_loads_the_classic_members() {
    let mut h = moved(|h| {
        upgraded(h);
    });
    let g = h.group();
    assert!(g.member(C1).is_some_and(|m| m.uses_classic_protocol() && m.member_epoch == 1));
    assert!(h.events.iter().any(|e| matches!(e, ConsumerGroupEvent::GroupLoaded { members, .. }
        if members.iter().filter(|m| m.classic_protocol).count() == 2)));
    // The classic members carry on where they were: told to rejoin, served as classic members.
    assert_eq!(h.hb_classic(classic_hb(C1, 1)), E::RebalanceInProgress.code());
    let r = h.join_classic(5, classic_join(C1, &["t"], &[], &["range"]));
    assert_eq!((r.error_code, r.generation_id), (0, 2));
}

#[test]
fn a_coordinator_that_takes_over_after_a_downgrade_loads_a_classic_group() {
    let h = moved(|h| {
        upgraded(h);
        reconcile_classic(h);
        h.hb(leave("n", -1));
        let records =
            groupsim_coordinator::offsets_log::lock(h.c.offsets_log()).records(0).to_vec();
        assert!(matches!(records.last(), Some(OffsetsRecord::Group(_))), "the downgrade is stored");
    });
    assert!(h.c.consumer_group(GROUP).is_none());
    let g = h.c.group(GROUP).expect("classic");
    assert_eq!((g.state(), g.generation_id()), (GroupState::Stable, 2));
    assert_eq!(g.members().count(), 2);
}

#[test]
fn a_classic_static_member_replacing_the_last_consumer_member_downgrades_without_a_rebalance() {
    let mut h = harness(MigrationPolicy::Bidirectional);
    let r = h.hb(join("s", &["t"]).with_instance_id(Some(s("i"))));
    assert_eq!(r.error_code, 0);
    let c = h.join_classic(5, classic_join("c", &["t"], &[], &["range"]));
    h.sync_classic(classic_sync("c", c.generation_id, "range", &[]));
    let target = h.group().target_of("s");
    let epoch = h.group().group_epoch();
    h.events.clear();
    // The instance restarts with the classic protocol.
    let join = classic_join("", &["t"], &[], &["range"]).with_group_instance_id(Some(s("i")));
    let r = h.join_classic(5, join);
    assert_eq!(r.error_code, 0, "{r:?}");
    let new_id = r.member_id.to_string();
    assert!(h.c.consumer_group(GROUP).is_none(), "downgraded");
    let g = h.c.group(GROUP).expect("a classic group");
    assert_eq!((g.state(), g.generation_id()), (GroupState::Stable, epoch), "no rebalance");
    let stored = g.member(&new_id).expect("the joining member").assignment.clone();
    let stored = groupsim_wire::consumer_protocol::decode_assignment(&stored).unwrap();
    assert_eq!(stored.partitions.into_iter().collect::<std::collections::BTreeSet<_>>(), target);
    assert!(h.events.iter().any(|e| matches!(e,
        ConsumerGroupEvent::MemberRemoved { member_id, reason: ConsumerRemovalReason::Replaced, .. }
            if member_id == "s")));
    assert!(h.events.iter().any(|e| matches!(e,
        ConsumerGroupEvent::GroupDowngraded { leaving_member, .. } if leaving_member == "s")));
    // It syncs with the classic group and gets the replaced member's partitions.
    let sync = h.sync_classic(classic_sync(&new_id, r.generation_id, "range", &[]));
    assert_eq!((sync.error_code, Harness::synced(&sync)), (0, target));
}

/// KAFKA-18687: converting a classic group left the consumer group's subscription metadata
/// unset, so the first heartbeat after the upgrade found it "changed" and bumped the group
/// epoch, recomputing an assignment nobody asked for — even when a static consumer-protocol
/// member only took a classic member's place with the same subscription. Kafka now sets the
/// subscription metadata in ConsumerGroup.fromClassicGroup.
#[test]
fn a_static_consumer_member_taking_a_classic_ones_place_upgrades_without_a_new_epoch() {
    let mut h = harness(MigrationPolicy::Bidirectional);
    let classic = classic_join("", &["t"], &[], &["range"]).with_group_instance_id(Some(s("i")));
    let id = h.send(5, classic);
    for _ in 0..30 {
        if h.join_answer(id).is_some() {
            break;
        }
        h.advance(1_000);
    }
    let r = h.join_answer(id).expect("the static member joined");
    let member = r.member_id.to_string();
    let all: Vec<(&str, i32)> = (0..6).map(|p| ("t", p)).collect();
    let sync = h.sync_classic(classic_sync(&member, r.generation_id, "range", &[(&member, &all)]));
    assert_eq!(sync.error_code, 0, "{sync:?}");
    let generation = r.generation_id;
    // The instance restarts with the consumer protocol, subscribed as before.
    let answer = h.hb(join("x", &["t"]).with_instance_id(Some(s("i"))));
    assert_eq!(answer.error_code, 0, "{answer:?}");
    assert_eq!(
        h.group().group_epoch(),
        generation,
        "same subscription: no new group epoch: {:#?}",
        h.events
    );
}
