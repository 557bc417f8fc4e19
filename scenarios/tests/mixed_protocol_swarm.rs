//! `mixed_protocol_swarm`: the swarm on one consumer group whose members speak both protocols
//! for the whole run. A consumer-protocol member creates the group; classic Java members join it
//! and are served through JoinGroup/SyncGroup/Heartbeat from inside the consumer group, under
//! every fault the swarm plays, with the broker's migration policy and size limits drawn per
//! seed. The checker must find no anomaly beyond the hazards Kafka allows, and the group must
//! converge after the safety phase.
//!
//! Seeds: `GROUPSIM_SEEDS=<n>` (default sized for CI), or `GROUPSIM_SEED=<n>` to replay one.

use groupsim::runner::{run_spec_in, RunReport, WorldKind};
use groupsim::scenarios;
use groupsim::testing::check_scenario;
use groupsim_checker::Hazard;
use groupsim_history::{ConsumerGroupEvent, CoordinatorEvent, EventKind, MemberEvent};
use groupsim_member::GroupProtocol;

fn run(seed: u64) -> RunReport {
    let spec = scenarios::find("mixed_protocol_swarm").expect("in the catalogue").build(seed);
    run_spec_in(spec, WorldKind::Event).expect("runs")
}

fn classic_member_joined(r: &RunReport) -> bool {
    r.history.events().iter().any(|e| {
        matches!(
            &e.kind,
            EventKind::Coordinator {
                event: CoordinatorEvent::ConsumerGroup(ConsumerGroupEvent::MemberJoined {
                    classic_protocol: true,
                    ..
                }),
                ..
            }
        )
    })
}

#[test]
fn mixed_protocol_swarm_passes_the_checker_with_classic_members_inside_the_consumer_group() {
    let reports = check_scenario("mixed_protocol_swarm", 12);
    for r in &reports {
        let seed = r.spec.seed;
        let m0 = &r.spec.members[0];
        assert_eq!(m0.config.profile.group_protocol(), GroupProtocol::Consumer, "seed {seed}");
        assert!(
            r.spec.members[1..].iter().all(|m| m.start_ms > m0.start_ms),
            "seed {seed}: the consumer-protocol member creates the group"
        );
        let classic = r
            .spec
            .members
            .iter()
            .filter(|m| m.config.profile.group_protocol() == GroupProtocol::Classic);
        assert!(classic.count() >= 2, "seed {seed}: at least two classic members");
        assert!(
            classic_member_joined(r),
            "seed {seed}: no classic member joined the consumer group"
        );
    }
}

/// Regression: mixed_protocol_swarm seed 25 reported `member-gave-up` for a consumer-protocol
/// member doing what the Java consumer does. Mechanism: the broker ran with
/// `group.consumer.migration.policy` forbidding upgrades; the group's only consumer-protocol
/// member left, a classic member's JoinGroup found the consumer group empty and Kafka replaced
/// it by a classic group; the next consumer-protocol member's heartbeat asked for an upgrade the
/// policy forbids and was answered GROUP_ID_NOT_FOUND, which the Java consumer treats as fatal.
/// The coordinator now records the refusal (`UpgradeRefused`), and the checker names the stop
/// the `refused-upgrade-stops-member` hazard. Since Fetches wait at the broker for data
/// (its fetch purgatory) and members keep a fetched answer, every history differs: seed 71 meets it
/// now.
#[test]
fn a_member_refused_the_upgrade_by_the_migration_policy_is_the_named_hazard() {
    let r = run(71);
    assert!(r.verdict.is_ok(), "{}", r.failure_report());
    let refused = r.history.events().iter().any(|e| {
        matches!(&e.kind, EventKind::Coordinator { event: CoordinatorEvent::ConsumerGroup(
            ConsumerGroupEvent::UpgradeRefused { reason, .. }), .. } if reason == "policy")
    });
    assert!(refused, "the coordinator refused an upgrade by its policy");
    let named = r.verdict.hazards.iter().any(|e| e.hazard == Hazard::RefusedUpgradeStopsMember);
    assert!(named, "the hazard explains the stop: {:?}", r.verdict.hazards);
}

/// Regression: mixed_protocol_swarm seeds 171 and 408 (90 since static members were drawn in
/// half the seeds) reported `member-gave-up`. Mechanism: a
/// partition cut every member off broker-0 past its session, so the consumer group was emptied;
/// a classic member's JoinGroup then found it empty and Kafka replaced it by a classic group.
/// A consumer-protocol member coming back with its old member epoch was answered
/// GROUP_ID_NOT_FOUND and stopped, as after a downgrade: the `downgrade-strands-member` hazard,
/// which now counts the empty group's replacement as a way to become classic, including when
/// the classic group's first event is recorded after the fatal error in the same millisecond
/// (seed 408).
#[test]
fn a_member_stranded_by_an_emptied_group_taken_by_a_classic_join_is_the_named_hazard() {
    for seed in [171, 90] {
        let r = run(seed);
        assert!(r.verdict.is_ok(), "seed {seed}: {}", r.failure_report());
        let named = r.verdict.hazards.iter().any(|e| e.hazard == Hazard::DowngradeStrandsMember);
        assert!(named, "seed {seed}: the hazard explains the stop: {:?}", r.verdict.hazards);
        let downgraded = r.history.events().iter().any(|e| {
            matches!(
                &e.kind,
                EventKind::Coordinator {
                    event: CoordinatorEvent::ConsumerGroup(
                        ConsumerGroupEvent::GroupDowngraded { .. }
                    ),
                    ..
                }
            )
        });
        assert!(!downgraded, "seed {seed}: no downgrade: the case this test exists for");
    }
}

/// Regression: mixed_protocol_swarm seeds 51 and 94 were flagged `stuck` and `zombie-commit`.
/// Mechanism: the group switched protocols without a conversion. In 51 a group that began as a
/// consumer group was emptied, a classic member's join made it a classic group whose first
/// generation was never stored, and the coordinator that took over loaded the consumer group
/// last written: the group converged as a consumer group while the checker still judged it by
/// the classic generation. In 94 the opposite: an empty classic group gave way to a
/// consumer-protocol member's join, and its commits were judged by classic generations. The
/// checker's views now switch protocol on both (an empty group giving way, a load of the other
/// form) as on a conversion. Since Fetches wait at the broker for data
/// (its fetch purgatory) and members keep a fetched answer, every history differs: seed 375 meets the
/// second case now.
#[test]
fn a_group_changing_protocol_without_a_conversion_is_judged_by_the_protocol_it_speaks() {
    let position = |r: &RunReport, from: usize, is: &dyn Fn(&EventKind) -> bool| {
        r.history.events().iter().skip(from).position(|e| is(&e.kind)).map(|p| p + from)
    };
    // 51: a classic generation, then the consumer group loaded by the next coordinator.
    let r = run(51);
    assert!(r.verdict.is_ok(), "seed 51: {}", r.failure_report());
    let classic = position(&r, 0, &|k| {
        matches!(
            k,
            EventKind::Coordinator { event: CoordinatorEvent::GenerationStarted { .. }, .. }
        )
    });
    let classic = classic.expect("seed 51: a classic generation of the group");
    let loaded = position(&r, classic, &|k| {
        matches!(
            k,
            EventKind::Coordinator {
                event: CoordinatorEvent::ConsumerGroup(ConsumerGroupEvent::GroupLoaded { .. }),
                ..
            }
        )
    });
    assert!(loaded.is_some(), "seed 51: the consumer group is loaded after the classic generation");
    // 375: a classic group loaded, then a consumer-protocol member joining with no upgrade.
    let r = run(375);
    assert!(r.verdict.is_ok(), "seed 375: {}", r.failure_report());
    let classic = position(&r, 0, &|k| {
        matches!(k, EventKind::Coordinator { event: CoordinatorEvent::GroupLoaded { .. }, .. })
    });
    let classic = classic.expect("seed 375: the classic group is loaded");
    let joined = position(&r, classic, &|k| {
        matches!(
            k,
            EventKind::Coordinator {
                event: CoordinatorEvent::ConsumerGroup(ConsumerGroupEvent::MemberJoined {
                    classic_protocol: false,
                    ..
                }),
                ..
            }
        )
    });
    let joined = joined.expect("seed 375: a consumer-protocol member joins after the load");
    let upgraded = r.history.events()[classic..joined].iter().any(|e| {
        matches!(
            &e.kind,
            EventKind::Coordinator {
                event: CoordinatorEvent::ConsumerGroup(ConsumerGroupEvent::GroupUpgraded { .. }),
                ..
            }
        )
    });
    assert!(!upgraded, "seed 375: the empty classic group gave way, no upgrade");
}

/// Regression: with static members (half the seeds), mixed_protocol_swarm seeds 350 and 444
/// were flagged `stuck` ("owns … but its target is -"). Mechanism: a classic static member
/// converted by an upgrade was later replaced by a new member id on its instance (it restarted
/// and rejoined without one); Kafka hands the replacement the target of the member it replaces,
/// but the checker's consumer-group view knew no instance id for members an upgrade converted.
/// It now learns them from the classic group.
#[test]
fn a_static_replacement_of_a_converted_classic_member_inherits_its_target() {
    for seed in [350, 444] {
        let r = run(seed);
        assert!(r.verdict.is_ok(), "seed {seed}: {}", r.failure_report());
        let replaced = r.history.events().iter().any(|e| {
            matches!(
                &e.kind,
                EventKind::Coordinator {
                    event: CoordinatorEvent::ConsumerGroup(ConsumerGroupEvent::MemberRemoved {
                        reason: groupsim_history::ConsumerRemovalReason::Replaced,
                        ..
                    }),
                    ..
                }
            )
        });
        assert!(replaced, "seed {seed}: a static member was replaced");
    }
}

/// Regression: mixed_protocol_swarm seed 624 was flagged `stuck` (new partitions of orders and
/// payments owned by no member). Mechanism: both topics grew while the consumer group held
/// classic-protocol members only; Kafka refreshes a consumer group's topic metadata on
/// consumer-protocol heartbeats and classic JoinGroups, not on classic Heartbeats, and the
/// classic clients, named no leader, watch no partition counts, so nothing assigned the new
/// partitions. The run passes with the `classic-members-miss-new-partitions` hazard named.
#[test]
fn partitions_added_to_a_group_of_classic_members_only_are_the_named_hazard() {
    let r = run(624);
    assert!(r.verdict.is_ok(), "{}", r.failure_report());
    let named =
        r.verdict.hazards.iter().any(|e| e.hazard == Hazard::ClassicMembersMissNewPartitions);
    assert!(named, "the hazard explains the unassigned partitions: {:?}", r.verdict.hazards);
}

/// Regression: mixed_protocol_swarm seed 1234 reported a partition left unassigned after the
/// topic grew. The group had turned classic; a static Java leader's process was replaced, and
/// the coordinator answered the replacement with the old leader's member id (Kafka before
/// KIP-814, KAFKA-13435), so the new process took itself for a follower. Only a Java leader
/// watches the topics' partition counts, so no member noticed the new partitions. Kafka 3.2+
/// answers a JoinGroup v9+ from a static leader's replacement naming it leader with
/// SkipAssignment; the Java consumer then keeps the generation's assignment and watches the
/// partition counts as leader, and rebalances the group when the topic grows. Since Fetches wait at the broker for data
/// (its fetch purgatory) and members keep a fetched answer, every history differs: seed
/// 85 meets it now.
#[test]
fn a_replaced_static_leader_is_told_to_skip_the_assignment_and_keeps_watching_the_topics() {
    let r = run(85);
    assert!(r.verdict.is_ok(), "seed 85: {}", r.failure_report());
    // The mechanism: a second member id joins as leader of a generation another member id
    // led (before KIP-814 the replacement heard the old id and joined as a follower).
    let mut leaders: Vec<(i32, String)> = Vec::new();
    let mut skipped = false;
    for e in r.history.events() {
        if let EventKind::Member {
            event: MemberEvent::Joined { is_leader: true, generation, member_id, .. },
            ..
        } = &e.kind
        {
            skipped |= leaders.iter().any(|(g, id)| g == generation && id != member_id);
            leaders.push((*generation, member_id.clone()));
        }
    }
    assert!(skipped, "seed 85: a replaced static leader joined a generation already assigned");
}

/// Regression: mixed_protocol_swarm seeds 3193 and 5368 reported `unowned-commit`,
/// `offset-regression` and `duplicate-commit` from the `removed-classic-member-rejoins` hazard
/// (a consumer group re-creates a classic member that rejoins under the id it was removed
/// with, and accepts its revoke commits under the new member epoch), which the checker named
/// too narrowly. In 3193 the removal was the classic group's own session expiry before the
/// group was upgraded (the consumer group keeps no memory of it); in 5368 the hazard's window
/// closed at the first commit reaching the member's own offset, though the damage lasts until
/// the committed offset is back where the member's commit moved it back from. Since Fetches wait at the broker for data
/// (its fetch purgatory) and members keep a fetched answer, every history differs: seeds
/// 455 and 589 meet it now.
#[test]
fn a_removed_classic_member_rejoining_is_the_named_hazard_until_the_offset_recovers() {
    for seed in [455, 589] {
        let r = run(seed);
        assert!(r.verdict.is_ok(), "seed {seed}: {}", r.failure_report());
        let named =
            r.verdict.hazards.iter().any(|e| e.hazard == Hazard::RemovedClassicMemberRejoins);
        assert!(named, "seed {seed}: the hazard explains it: {:?}", r.verdict.hazards);
    }
}

/// Regression: mixed_protocol_swarm seed 5615 reported `uncovered-commit` for a
/// consumer-protocol member that processed every record it committed. Its group emptied, gave
/// way to a classic group, and was created again by a consumer heartbeat, so member epochs
/// counted from 1 again; the member, fenced, rejoined under the same member id (the Java
/// consumer keeps its id across a fence) and reached epoch 6 a second time. The checker filed
/// its records at epoch 6 under its first membership's tenure of the partition. A new tenure now
/// drops the id's entries at its generation and above.
#[test]
fn a_member_whose_epochs_repeat_after_its_group_was_recreated_is_judged_by_its_tenure() {
    let r = run(5615);
    assert!(r.verdict.is_ok(), "seed 5615: {}", r.failure_report());
}

/// Regression: mixed_protocol_swarm seeds 2840, 3472, 4923 and 5087 reported `member-gave-up`:
/// a consumer-protocol member, removed from its consumer group while cut off, stopped on
/// GROUP_ID_NOT_FOUND when it came back. Every member had been removed and a classic member's
/// JoinGroup found the consumer group empty: Kafka deletes an empty consumer group there
/// (maybeDeleteEmptyConsumerGroup), whatever the join is answered (MEMBER_ID_REQUIRED, or
/// UNKNOWN_MEMBER_ID and no group at all), and a heartbeat above epoch 0 for a missing or
/// classic group is GROUP_ID_NOT_FOUND, fatal to the Java consumer and librdkafka. The deletion
/// left no trace in the history until the coordinator recorded it (`EmptyGroupDeleted`); the
/// checker now takes it for the `downgrade-strands-member` hazard's sign. Since Fetches wait at the broker for data
/// (its fetch purgatory) and members keep a fetched answer, every history differs: seeds
/// 90, 291, 415 and 493 meet it now.
#[test]
fn a_member_stranded_by_an_empty_group_deleted_for_a_classic_join_is_the_named_hazard() {
    for seed in [90, 291, 415, 493] {
        let r = run(seed);
        assert!(r.verdict.is_ok(), "seed {seed}: {}", r.failure_report());
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
        assert!(deleted, "seed {seed}: the coordinator deleted the empty consumer group");
        let named = r.verdict.hazards.iter().any(|e| e.hazard == Hazard::DowngradeStrandsMember);
        assert!(named, "seed {seed}: the hazard explains the stop: {:?}", r.verdict.hazards);
    }
}

/// Regression: mixed_protocol_swarm seed 2430 reported `stuck`. The group was downgraded, the
/// downgrade's rebalance was lost with its coordinator and the next one loaded the written
/// generation (the `lost-downgrade-rebalance` hazard); a JoinGroup there formed a generation
/// whose leader left before its SyncGroup, so it was never stored, and the coordinator moved
/// again: the next one loaded the downgrade's generation once more, and static replacements
/// kept it without a rebalance. The checker had disarmed the hazard when the lost generation
/// began; a load of the generation a downgrade wrote, nothing stored since, arms it again.
#[test]
fn a_second_load_of_a_downgrades_generation_is_the_lost_rebalance_hazard() {
    let r = run(2430);
    assert!(r.verdict.is_ok(), "seed 2430: {}", r.failure_report());
    let named = r.verdict.hazards.iter().any(|e| e.hazard == Hazard::LostDowngradeRebalance);
    assert!(named, "the hazard explains the stuck group: {:?}", r.verdict.hazards);
}

/// Regression: mixed_protocol_swarm seed 5262 reported `unowned-commit` (found by a clean sweep
/// of seeds 5000..5999 at d711c4b). The group was downgraded while a classic member was
/// revoking a partition the consumer group's target gave another member; Kafka writes the
/// classic generation with each member's target and starts its rebalance in memory only, and
/// the coordinator moved before that rebalance ran, so the next one loaded the written
/// generation as Stable. The revoking member, rejoining, was answered that generation without
/// the partition and committed it on revoking, under the generation that gave it to the other
/// member: Kafka accepts it. The `lost-downgrade-rebalance` hazard now opens a window on each
/// partition a loaded member still owned that the written generation gives another, as the
/// other taken-partition hazards do.
#[test]
fn a_partition_revoking_across_a_lost_downgrade_rebalance_is_the_named_hazard() {
    let r = run(5262);
    assert!(r.verdict.is_ok(), "seed 5262: {}", r.failure_report());
    let named = r.verdict.hazards.iter().any(|e| {
        e.hazard == Hazard::LostDowngradeRebalance
            && e.anomaly.class == groupsim_checker::AnomalyClass::UnownedCommit
    });
    assert!(named, "the hazard explains the revoke commit: {:?}", r.verdict.hazards);
}

/// Regression: mixed_protocol_swarm seed 10216 reported `stalled-member` (found by a clean
/// sweep at 2db451c). A `slow_batch` drawn early in the fault phase found a member processing
/// nothing and waited for its next batch; a batch that started shortly before the heal took it
/// up and ran past the heal, so the KIP-848 member's poll timeout sent its static leave and its
/// session ran out on a working path. A pending slow batch now lasts only its own window.
#[test]
fn a_slow_batch_nobody_took_up_in_its_window_stalls_no_later_batch() {
    let r = run(10216);
    assert!(r.verdict.is_ok(), "seed 10216: {}", r.failure_report());
}

/// Regression: mixed_protocol_swarm seed 21848 reported `lost-commit` (found by a clean sweep
/// at 13a2d40). A KIP-848 member was paused the moment its OffsetFetch answer arrived, with a
/// heartbeat answer also unread; its session ran out while it slept, it was the group's last
/// consumer-protocol member so the group became classic, and a classic member committed the
/// partition further. Waking, the member read both old answers and took its position from the
/// offset fetched before that commit. That position is a removed member's (its next heartbeat
/// is refused and it stops); the checker took it for a commit the coordinator lost, because it
/// looked for the removal only in a group still speaking the consumer protocol.
#[test]
fn a_removed_member_reading_old_answers_after_the_downgrade_lost_no_commit() {
    let r = run(21848);
    assert!(r.verdict.is_ok(), "seed 21848: {}", r.failure_report());
}

/// Regression: mixed_protocol_swarm seeds 3569, 3996 and 4628 reported `stuck`: partitions added
/// to a topic stayed unassigned. The leader of a Stable classic generation (the only member that
/// watches partition counts) stopped before its rejoin reached the coordinator; its new process
/// took the instance over, was answered leader with SkipAssignment (KIP-814), and snapshotted
/// the partition counts as they already were, so nothing ever rebalanced. Kafka and the Java
/// consumer do the same: the `static-leader-skips-new-partitions` hazard. (3996 met it too until
/// the coordinator stopped rebalancing a static replacement whose subscription alone changed;
/// since then 1658 meets it, with the coordinator moving after the replacement: the next one
/// loads the same generation, and the leader still watches counts that include the growth.
/// 4628 met it until a static takeover's answer waited for its append; 931 meets it since.)
/// Since Fetches wait at the broker for data
/// (its fetch purgatory) and members keep a fetched answer, every history differs: 931, 1119 and 2137 meet it now.
#[test]
fn partitions_added_before_a_static_leader_skipped_the_assignment_are_the_named_hazard() {
    for seed in [931, 1119, 2137] {
        let r = run(seed);
        assert!(r.verdict.is_ok(), "seed {seed}: {}", r.failure_report());
        let named =
            r.verdict.hazards.iter().any(|e| e.hazard == Hazard::StaticLeaderSkipsNewPartitions);
        assert!(named, "seed {seed}: the hazard explains it: {:?}", r.verdict.hazards);
    }
}

/// Regression: once the coordinator kept a Stable group through a static replacement whose
/// selected protocol is unchanged (as Kafka does), mixed_protocol_swarm seeds 146 and 507
/// reported `stuck`: a cooperative generation gave the partitions a member had to revoke to
/// nobody, and that member's process died and was replaced under its instance before it
/// rejoined for the follow-up rebalance; the replacement owns nothing to revoke and does not
/// rejoin, so nothing hands the partitions out. Kafka and the Java consumer do the same: the
/// `replaced-member-skips-follow-up-rebalance` hazard.
#[test]
fn partitions_revoked_by_a_member_replaced_before_it_rejoined_are_the_named_hazard() {
    for seed in [146, 507] {
        let r = run(seed);
        assert!(r.verdict.is_ok(), "seed {seed}: {}", r.failure_report());
        let named = r
            .verdict
            .hazards
            .iter()
            .any(|e| e.hazard == Hazard::ReplacedMemberSkipsFollowUpRebalance);
        assert!(named, "seed {seed}: the hazard explains it: {:?}", r.verdict.hazards);
    }
}
