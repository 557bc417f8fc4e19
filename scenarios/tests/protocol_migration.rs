//! `protocol_migration`: a classic Java group (eager or cooperative, drawn per seed) rolled over
//! to the consumer protocol (KIP-848) member by member and back, under connection drops, a
//! coordinator move and a member crash. The checker must find no anomaly in a group that is
//! classic, then a consumer group holding classic-protocol members, then classic again, and the
//! group must converge after the safety phase.
//!
//! Seeds: `GROUPSIM_SEEDS=<n>` (default sized for CI), or `GROUPSIM_SEED=<n>` to replay one.

use groupsim::testing::check_scenario;
use groupsim_history::{ConsumerGroupEvent, CoordinatorEvent, EventKind};

#[test]
fn protocol_migration_upgrades_and_downgrades_the_group_cleanly_under_faults() {
    let reports = check_scenario("protocol_migration", 6);
    for r in &reports {
        let seed = r.spec.seed;
        let (mut upgraded, mut downgraded, mut classic_joins) = (0, 0, 0);
        for e in r.history.events() {
            let EventKind::Coordinator { event: CoordinatorEvent::ConsumerGroup(e), .. } = &e.kind
            else {
                continue;
            };
            match e {
                ConsumerGroupEvent::GroupUpgraded { members, .. } => {
                    assert!(!members.is_empty(), "seed {seed}: an upgrade keeps classic members");
                    upgraded += 1;
                }
                ConsumerGroupEvent::GroupDowngraded { .. } => downgraded += 1,
                ConsumerGroupEvent::MemberJoined { classic_protocol: true, .. } => {
                    classic_joins += 1
                }
                _ => {}
            }
        }
        // The first consumer-protocol member's join upgrades the classic group, the last one's
        // departure downgrades it, and on the way back classic members join the consumer group.
        assert!(upgraded >= 1, "seed {seed}: never upgraded");
        assert!(downgraded >= 1, "seed {seed}: never downgraded");
        assert!(classic_joins >= 1, "seed {seed}: no classic member joined the consumer group");
    }
}

/// Regression: protocol_migration seeds 7169 and 8882 were flagged `stuck`. Mechanism (7169):
/// the last consumer-protocol member's session expired at 85.4 s; the coordinator downgraded the
/// group (writing generation 17 without the leaver's orders-0..2) and started a rebalance in
/// memory; the coordinator move at 86.4 s dropped that rebalance, and broker-2 loaded generation
/// 17 as Stable. The members rejoined with unchanged metadata and were handed generation 17
/// again; nobody was left to take orders-0..2. Kafka's coordinator does the same: the run
/// passes, with the `lost-downgrade-rebalance` hazard explaining what stayed unassigned.
#[test]
fn a_downgrade_rebalance_lost_with_its_coordinator_is_named_as_a_hazard() {
    passes_naming(
        "protocol_migration",
        &[7169, 8882],
        groupsim_checker::Hazard::LostDowngradeRebalance,
    );
}

/// Regression: protocol_migration seeds 1089 and 6159 were flagged `unowned-commit`. Mechanism
/// (1089): generation 3 of the cooperative classic group went back to joining when its leader
/// left before the SyncGroup (9.0 s), which reset every stored assignment to empty; at 12.0 s a
/// consumer-protocol member's heartbeat upgraded the group from those empty assignments and the
/// new target gave orders-1 to m1 at once, while m2, a cooperative member, still owned it and
/// committed it on revoking, under its new member epoch. Kafka's coordinator converts the group
/// the same way: the run passes, with the `upgrade-mid-rebalance` hazard naming the commits.
#[test]
fn an_upgrade_mid_rebalance_is_named_as_a_hazard() {
    passes_naming(
        "protocol_migration",
        &[1089, 6159],
        groupsim_checker::Hazard::UpgradeMidRebalance,
    );
}

/// `migration_faults`: the same roll-over and back under member faults (pauses, one past the
/// session; late commits; error answers on both protocols' APIs; a forced rebalance). Every seed
/// passes, and the faults are played.
#[test]
fn migration_faults_passes_the_checker_and_plays_its_faults() {
    use groupsim::faults::Fault;
    use groupsim_history::WorldEvent;
    let reports = check_scenario("migration_faults", 6);
    for r in &reports {
        let seed = r.spec.seed;
        let (mut pauses, mut injected) = (0, 0);
        for e in r.history.events() {
            if let EventKind::World(WorldEvent::FaultInjected { fault, applied: true }) = &e.kind {
                pauses += usize::from(matches!(fault, Fault::MemberPause { .. }));
                injected += usize::from(matches!(fault, Fault::InjectError { .. }));
            }
        }
        assert!(pauses >= 1, "seed {seed}: no pause played");
        assert!(injected >= 1, "seed {seed}: no error answer injected");
    }
}

/// Regression: migration_faults seed 8 (and 19 more of its first 300) was flagged
/// `member-gave-up`. Mechanism: m3, a consumer-protocol member, was paused past its session and
/// removed; m2, the last other consumer-protocol member, left for its roll-back at 70.3 s and
/// the group was downgraded. When m3's pause ended its heartbeat found a classic group and was
/// answered GROUP_ID_NOT_FOUND, which the Java consumer treats as fatal. Kafka does the same:
/// the run passes with the `downgrade-strands-member` hazard named.
#[test]
fn a_member_stranded_by_a_downgrade_is_named_as_a_hazard() {
    passes_naming("migration_faults", &[8], groupsim_checker::Hazard::DowngradeStrandsMember);
}

/// Regression: migration_faults seed 937 (in the first 10,000-seed campaign at 89a5a4e) was
/// flagged `unowned-commit`, `offset-regression` and `duplicate-commit` on orders-3. Mechanism:
/// m3, a Java cooperative member of the upgraded group, was cut off with a JoinGroup in flight
/// until its session expired; the consumer group removed m3-1, released orders-3 and gave it to
/// m2. m3 rejoined under m3-1, which Kafka's consumer group creates again (a classic join to a
/// consumer group creates the member id it names), so m3 never heard UNKNOWN_MEMBER_ID; given an
/// empty assignment it revoked orders-3, committing it under its new member epoch below m2's
/// commit, and Kafka accepted it. The run passes with `removed-classic-member-rejoins` named.
#[test]
fn a_removed_classic_member_rejoining_under_its_old_id_is_named_as_a_hazard() {
    let hazard = groupsim_checker::Hazard::RemovedClassicMemberRejoins;
    passes_naming("migration_faults", &[937], hazard);
}

/// Regression: static_migration seed 1717 (in the 10,000-seed campaign at 89a5a4e) was flagged
/// `stuck`: every partition unassigned after the roll-back. Mechanism: the coordinator moved to
/// broker-2, which loaded the consumer group; the first request to reach it there was a classic
/// JoinGroup (m0, back from a crash, taking its static instance over), and the broker refreshed
/// its coordinator's view of the topics only before consumer-protocol requests, so the target
/// computed for the new group epoch saw no topics and assigned nothing; the downgrade then
/// converted those empty assignments. Kafka's metadata image is current on every broker: the
/// view is now refreshed before any group request.
#[test]
fn a_classic_join_first_on_a_new_coordinator_assigns_from_the_current_topics() {
    use groupsim::runner::{run_spec_in, WorldKind};
    let s = groupsim::scenarios::find("static_migration").expect("in catalogue");
    let r = run_spec_in(s.build(1717), WorldKind::Event).expect("runs");
    assert!(r.verdict.is_ok(), "{}", r.failure_report());
    let empty_target = r.history.events().iter().any(|e| {
        matches!(&e.kind, EventKind::Coordinator { event: CoordinatorEvent::ConsumerGroup(
            ConsumerGroupEvent::TargetAssignmentComputed { assignments, .. }), .. }
            if !assignments.is_empty() && assignments.iter().all(|a| a.partitions.is_empty()))
    });
    assert!(!empty_target, "no target assignment gives nobody anything");
}

/// `static_migration`: protocol_migration with every member static. Each upgrade and roll-back
/// bounce takes its instance over (a replacement, not a new member), in both directions, and
/// the checker finds no anomaly.
#[test]
fn static_migration_takes_instances_over_in_both_directions() {
    let reports = check_scenario("static_migration", 6);
    for r in &reports {
        let seed = r.spec.seed;
        let (mut replaced, mut dynamic_joins, mut upgraded) = (0, 0, 0);
        for e in r.history.events() {
            let EventKind::Coordinator { event: CoordinatorEvent::ConsumerGroup(e), .. } = &e.kind
            else {
                continue;
            };
            match e {
                ConsumerGroupEvent::MemberRemoved { reason, .. } => {
                    replaced +=
                        usize::from(*reason == groupsim_history::ConsumerRemovalReason::Replaced);
                }
                ConsumerGroupEvent::MemberJoined { group_instance_id: None, .. } => {
                    dynamic_joins += 1
                }
                ConsumerGroupEvent::GroupUpgraded { .. } => upgraded += 1,
                _ => {}
            }
        }
        assert!(upgraded >= 1, "seed {seed}: never upgraded");
        assert!(replaced >= 2, "seed {seed}: {replaced} static replacements");
        assert_eq!(dynamic_joins, 0, "seed {seed}: a member joined without its instance id");
    }
}

/// Regression: static_migration seed 114 was flagged `stuck`. Mechanism: m0, a consumer-protocol
/// static member, crashed and restarted inside its session and met UNRELEASED_INSTANCE_ID
/// (fatal to the Java consumer); its session then ended, the last consumer-protocol member gone,
/// so the group was downgraded and started a rebalance without m0's partitions. Before that
/// rebalance completed, m1's upgraded incarnation took over its classic instance and upgraded the
/// group from the stored assignments, which left m0's partitions to nobody; static replacements
/// copy the subscription and bump no group epoch, so no target ever covered them, through the
/// roll-back too. Kafka's coordinator does the same: the run passes, with the
/// `static-upgrade-orphans` hazard naming what stayed unassigned.
#[test]
fn partitions_a_static_upgrade_left_to_nobody_are_named_as_a_hazard() {
    passes_naming("static_migration", &[114], groupsim_checker::Hazard::StaticUpgradeOrphans);
}

/// Each of `scenario`'s `seeds` passes in the event world, with `hazard` named among what
/// Kafka allowed.
fn passes_naming(scenario: &str, seeds: &[u64], hazard: groupsim_checker::Hazard) {
    use groupsim::runner::{run_spec_in, WorldKind};
    let s = groupsim::scenarios::find(scenario).expect("in catalogue");
    for &seed in seeds {
        let r = run_spec_in(s.build(seed), WorldKind::Event).expect("runs");
        assert!(r.verdict.is_ok(), "{scenario} seed {seed}: {}", r.failure_report());
        let named = r.verdict.hazards.iter().any(|e| e.hazard == hazard);
        assert!(named, "{scenario} seed {seed}: {:?}", r.verdict.hazards);
    }
}

/// Regression, found by `groupsim explore` (migration_faults seed 34, its drawn schedule
/// mutated; kept under `fixtures/`): `answer-stale-generation-accepted` for a correct answer.
/// Mechanism: as invalid_requests seeds 137 and 144 (`invalid_requests.rs`): the emptied
/// consumer group was deleted for m3's classic JoinGroup and made again as a classic group at
/// generation 1, whose SyncGroup the rule compared with the first classic group's generation 2.
#[test]
fn a_classic_group_made_again_after_migration_is_judged_afresh() {
    let path =
        format!("{}/tests/fixtures/migration_faults-34.schedule.json", env!("CARGO_MANIFEST_DIR"));
    let options = groupsim::runner::RunOptions::default();
    let r = groupsim::testing::run_schedule_file("migration_faults", 34, &path, &options);
    assert!(r.verdict.is_ok(), "{}", r.failure_report());
    let deleted = r.history.events().iter().any(|e| {
        matches!(
            &e.kind,
            EventKind::Coordinator {
                event: CoordinatorEvent::ConsumerGroup(
                    ConsumerGroupEvent::EmptyGroupDeleted { .. }
                ),
                ..
            }
        )
    });
    assert!(deleted, "the coordinator deleted the empty consumer group");
}
