//! The checker on hand-made histories of a group migrating between the protocols: classic
//! members keep their generation as a member epoch after an upgrade and are judged by it, the
//! group is judged by generations again after a downgrade, a commit validated in the millisecond
//! of a conversion may satisfy either rule, and a coordinator that loads the classic form undoes
//! an upgrade. Each rule fires on the bad history beside a correct one.

use groupsim_history::{
    ConsumerGroupEvent, ConsumerRemovalReason, ConvertedMember, CoordinatorEvent, GroupState,
    MemberAssignment, MemberEvent, TargetShare,
};

use super::tests::{classes, clean, loaded_generation_1, tp, G, H};
use super::{check, AnomalyClass};

fn parts(ps: &[i32]) -> Vec<groupsim_wire::TopicPartition> {
    ps.iter().map(|p| tp(*p)).collect()
}

fn converted(members: &[(&str, i32, &[i32])]) -> Vec<ConvertedMember> {
    members
        .iter()
        .map(|(id, epoch, ps)| ConvertedMember {
            member_id: id.to_string(),
            member_epoch: *epoch,
            partitions: parts(ps),
        })
        .collect()
}

/// Migration steps on top of the history builder.
trait Steps {
    fn cg(&mut self, e: ConsumerGroupEvent) -> &mut Self;
    fn epoch_of(&mut self, id: &str, from: i32, to: i32) -> &mut Self;
    fn classic_member_at(&mut self, name: &str, id: &str, generation: i32, ps: &[i32])
        -> &mut Self;
}

impl Steps for H {
    fn cg(&mut self, e: ConsumerGroupEvent) -> &mut Self {
        self.coord(CoordinatorEvent::ConsumerGroup(e))
    }
    /// The coordinator moves member `id` from epoch `from` to `to`, reconciled.
    fn epoch_of(&mut self, id: &str, from: i32, to: i32) -> &mut Self {
        self.cg(ConsumerGroupEvent::MemberEpochChanged {
            group: G.into(),
            member_id: id.into(),
            from,
            to,
            state: "STABLE".into(),
        })
    }
    /// A classic member's own report of a JoinGroup/SyncGroup: generation `generation` (its
    /// member epoch in a consumer group), partitions `ps`.
    fn classic_member_at(
        &mut self,
        name: &str,
        id: &str,
        generation: i32,
        ps: &[i32],
    ) -> &mut Self {
        self.member(
            name,
            MemberEvent::Joined {
                member_id: id.into(),
                generation,
                leader: String::new(),
                protocol: "range".into(),
                is_leader: false,
            },
        );
        self.member(
            name,
            MemberEvent::Assigned { member_id: id.into(), generation, partitions: parts(ps) },
        )
    }
}

/// Classic members a (t-0) and b (t-1) at generation 1, both processed and committed; the
/// group is upgraded and a's member epoch moves to 2 (it rejoined with nothing to revoke).
fn upgraded() -> H {
    let mut h = clean();
    h.cg(ConsumerGroupEvent::GroupUpgraded {
        group: G.into(),
        generation: 1,
        members: converted(&[("a", 1, &[0]), ("b", 1, &[1])]),
    });
    h.cg(ConsumerGroupEvent::GroupEpochBumped { group: G.into(), epoch: 2 });
    h.cg(ConsumerGroupEvent::TargetAssignmentComputed {
        group: G.into(),
        epoch: 2,
        assignor: "uniform".into(),
        assignments: vec![
            TargetShare { member_id: "a".into(), partitions: parts(&[0]) },
            TargetShare { member_id: "b".into(), partitions: parts(&[1]) },
        ],
    });
    h.epoch_of("a", 1, 2).classic_member_at("m0", "a", 2, &[0]);
    h
}

#[test]
fn after_an_upgrade_a_classic_member_commits_under_its_member_epoch() {
    let mut h = upgraded();
    // Generation 2 was never a classic generation: member epochs judge it.
    h.produced(0, 5).processed("m0", "a", 2, 0, 10, 14).commit("a", 2, 0, 15);
    assert_eq!(classes(&h.h.clone()), vec![]);
    // b is still at member epoch 1 (not reconciled yet) and commits under it.
    h.produced(1, 5).processed("m1", "b", 1, 1, 10, 14).commit("b", 1, 1, 15);
    assert_eq!(classes(&h.h.clone()), vec![]);
    // a's old generation is a stale member epoch now.
    h.produced(0, 5).processed("m0", "a", 2, 0, 15, 19).commit("a", 1, 0, 20);
    let v = check(&h.h.clone());
    let z = v.anomalies.iter().find(|a| a.class == AnomalyClass::ZombieCommit).expect("zombie");
    assert!(z.message.contains("member epoch 1 while its member epoch was 2"), "{}", z.message);
}

#[test]
fn a_commit_validated_in_the_millisecond_of_the_upgrade_may_meet_either_rule() {
    let at_upgrade = |generation: i32| {
        let mut h = H::new(2);
        h.started("m0").started("m1");
        h.state(GroupState::PreparingRebalance, 0);
        h.generation(1, &[("m0", "a", &[0]), ("m1", "b", &[1])]);
        h.produced(0, 10).processed("m0", "a", 1, 0, 0, 9);
        h.cg(ConsumerGroupEvent::GroupUpgraded {
            group: G.into(),
            generation: 1,
            members: converted(&[("a", 1, &[0]), ("b", 1, &[1])]),
        });
        let upgraded_at = h.t;
        h.commit_validated_at("a", generation, 0, 10, upgraded_at);
        classes(&h.h.clone())
    };
    assert_eq!(at_upgrade(1), vec![], "generation 1 = member epoch 1 on both sides");
    assert_eq!(at_upgrade(7), vec![AnomalyClass::ZombieCommit], "neither side knows 7");
}

/// `upgraded`, then consumer member c joins at epoch 3 with nothing, b reaches epoch 3, c
/// leaves and the group is downgraded at generation 3 with a on t-0 and b on t-1.
fn downgraded() -> H {
    downgraded_after(true)
}

/// [`downgraded`]; c's removal recorded only when `c_removed` (else only the downgrade ends its
/// epoch).
fn downgraded_after(c_removed: bool) -> H {
    let mut h = upgraded();
    h.cg(ConsumerGroupEvent::MemberJoined {
        group: G.into(),
        member_id: "c".into(),
        group_instance_id: None,
        client_id: "m2".into(),
        classic_protocol: false,
    });
    h.cg(ConsumerGroupEvent::GroupEpochBumped { group: G.into(), epoch: 3 });
    h.epoch_of("c", 0, 3).epoch_of("a", 2, 3).epoch_of("b", 1, 3);
    h.classic_member_at("m0", "a", 3, &[0]).classic_member_at("m1", "b", 3, &[1]);
    if c_removed {
        h.cg(ConsumerGroupEvent::MemberRemoved {
            group: G.into(),
            member_id: "c".into(),
            member_epoch: 3,
            reason: ConsumerRemovalReason::SessionTimeout,
        });
    }
    h.cg(ConsumerGroupEvent::GroupDowngraded {
        group: G.into(),
        group_epoch: 3,
        leaving_member: "c".into(),
        members: converted(&[("a", 3, &[0]), ("b", 3, &[1])]),
    });
    h.coord(CoordinatorEvent::GroupStateChanged {
        group: G.into(),
        from: GroupState::Stable,
        to: GroupState::PreparingRebalance,
        generation: 3,
    });
    h
}

#[test]
fn after_a_downgrade_commits_are_judged_by_generations_again() {
    let mut h = downgraded();
    // Generation 3 is the downgraded group's: a commits in it while the rebalance runs.
    h.produced(0, 5).processed("m0", "a", 3, 0, 10, 14).commit("a", 3, 0, 15);
    assert_eq!(classes(&h.h.clone()), vec![]);
    // The rebalance completes into generation 4; a commit under 3 is a zombie now.
    h.coord(CoordinatorEvent::GenerationStarted {
        group: G.into(),
        generation: 4,
        protocol: Some("range".into()),
        leader: Some("a".into()),
        members: vec!["a".into(), "b".into()],
    });
    h.coord(CoordinatorEvent::AssignmentStored {
        group: G.into(),
        generation: 4,
        assignments: vec![
            MemberAssignment { member_id: "a".into(), partitions: parts(&[0]) },
            MemberAssignment { member_id: "b".into(), partitions: parts(&[1]) },
        ],
    });
    h.produced(1, 5).processed("m1", "b", 3, 1, 10, 14).commit("b", 3, 1, 15);
    let v = check(&h.h.clone());
    let z = v.anomalies.iter().find(|a| a.class == AnomalyClass::ZombieCommit).expect("zombie");
    assert!(
        z.message.contains("generation 3 while the group was in generation 4"),
        "{}",
        z.message
    );
}

#[test]
fn the_consumer_member_that_left_is_not_in_the_downgraded_group() {
    let mut h = downgraded();
    h.produced(1, 5).commit("c", 3, 1, 15);
    assert!(classes(&h.h.clone()).contains(&AnomalyClass::ZombieCommit));
}

/// mixed_protocol_swarm 21848: consumer member c (client m2), paused while its answers were on
/// the way, was removed when its session ran out, which left the group to its classic members
/// (a downgrade); b committed t-1 further; then c woke and read what the group had answered it
/// before all that, an assignment of t-1 and an OffsetFetch from before b's commit. The
/// position it took is a zombie's (its next heartbeat learns it is gone), not a commit the
/// coordinator lost. A member whose epoch only the downgrade ended is judged as before.
#[test]
fn a_removed_consumer_member_reading_old_answers_after_a_downgrade_is_no_lost_commit() {
    let late_reads = |c_removed: bool| {
        let mut h = downgraded_after(c_removed);
        h.started("m2");
        h.produced(1, 5).processed("m1", "b", 3, 1, 10, 14).commit("b", 3, 1, 15);
        h.member(
            "m2",
            MemberEvent::MemberEpochChanged { member_id: "c".into(), previous: 0, epoch: 3 },
        );
        h.member(
            "m2",
            MemberEvent::Assigned { member_id: "c".into(), generation: 3, partitions: parts(&[1]) },
        );
        h.member(
            "m2",
            MemberEvent::PositionInitialized {
                member_id: "c".into(),
                generation: 3,
                partition: tp(1),
                committed: Some(10),
                position: 10,
                reset_after: None,
            },
        );
        classes(&h.h.clone()).contains(&AnomalyClass::LostCommit)
    };
    assert!(!late_reads(true), "a removed member's stale position");
    assert!(late_reads(false), "judged when nothing removed it");
}

#[test]
fn a_coordinator_loading_the_classic_form_undoes_an_upgrade() {
    // The upgrade's record never reached the log: the next coordinator loads generation 1.
    let mut h = upgraded();
    h.coord(loaded_generation_1(0));
    // Generation 1 is the group's again; member epoch 2 means nothing to a classic group.
    h.produced(1, 5).processed("m1", "b", 1, 1, 10, 14).commit("b", 1, 1, 15);
    assert_eq!(classes(&h.h.clone()), vec![]);
    h.produced(0, 5).processed("m0", "a", 2, 0, 10, 14).commit("a", 2, 0, 15);
    assert!(classes(&h.h.clone()).contains(&AnomalyClass::ZombieCommit));
}

/// `clean()` with m1 (b) stopped and the group downgraded to classic generation 3, a on t-0.
fn b_stopped_and_downgraded() -> H {
    let mut h = clean();
    h.world(groupsim_history::WorldEvent::MemberStopped { member: "m1".into() });
    h.cg(ConsumerGroupEvent::GroupDowngraded {
        group: G.into(),
        group_epoch: 3,
        leaving_member: "b".into(),
        members: converted(&[("a", 3, &[0])]),
    });
    h
}

/// A downgrade as Kafka writes it (b, the last consumer member, left with t-1; a holds t-0)
/// and the rebalance it starts in memory; then, if `lost`, the coordinator gives the group up
/// before that rebalance completes and the next loads the written generation as Stable. At the
/// deadline t-1 is unassigned either way.
fn downgrade_then(lost: bool) -> crate::Verdict {
    let mut h = b_stopped_and_downgraded();
    h.coord(CoordinatorEvent::GroupStateChanged {
        group: G.into(),
        from: GroupState::Stable,
        to: GroupState::PreparingRebalance,
        generation: 3,
    });
    if lost {
        moved_and_loaded(&mut h, &["a"]);
        h.classic_member_at("m0", "a", 3, &[0]);
    }
    check(&h.finish(&[(0, 10), (1, 10)]))
}

/// The coordinator gives the group up and the next loads generation 3 as the downgrade wrote
/// it: `members`, a on t-0, both partitions committed at 10.
fn moved_and_loaded(h: &mut H, members: &[&str]) {
    h.coord(CoordinatorEvent::GroupUnloaded { group: G.into(), partition: 0 });
    h.coord(CoordinatorEvent::GroupLoaded {
        group: G.into(),
        partition: 0,
        state: GroupState::Stable,
        generation: 3,
        protocol: Some("range".into()),
        leader: Some("a".into()),
        members: members.iter().map(|m| m.to_string()).collect(),
        assignments: vec![MemberAssignment { member_id: "a".into(), partitions: parts(&[0]) }],
        offsets: vec![(tp(0), 10), (tp(1), 10)],
    });
}

/// protocol_migration seeds 7169 and 8882: the last consumer member's session expired, the
/// group was downgraded and its rebalance started, and 0.2–1 s later the coordinator moved.
/// Kafka writes the converted group before it starts the rebalance, in memory: the next
/// coordinator loads the written generation as Stable and nothing rebalances it, so the
/// leaver's partitions stay unassigned. Kafka allows it: a named hazard, not a failure.
#[test]
fn a_downgrade_rebalance_lost_with_its_coordinator_is_the_hazard_not_a_failure() {
    let v = downgrade_then(true);
    assert!(v.is_ok(), "{:?}", v.anomalies);
    let e = v.hazards.first().expect("the stuck group is shown as a hazard");
    assert_eq!(e.hazard, crate::Hazard::LostDowngradeRebalance);
    assert_eq!(e.anomaly.class, AnomalyClass::Stuck);
    assert!(e.anomaly.message.contains("t-1 is unassigned in generation 3"), "{:?}", e.anomaly);
}

#[test]
fn a_downgrade_rebalance_that_never_completes_on_its_own_coordinator_is_stuck() {
    let v = downgrade_then(false);
    assert!(v.hazards.is_empty(), "{:?}", v.hazards);
    assert!(v.anomalies.iter().any(|a| a.class == AnomalyClass::Stuck), "{:?}", v.anomalies);
}

#[test]
fn the_lost_rebalance_explains_nothing_once_a_later_generation_forms() {
    let mut h = clean();
    h.cg(ConsumerGroupEvent::GroupDowngraded {
        group: G.into(),
        group_epoch: 3,
        leaving_member: "b".into(),
        members: converted(&[("a", 3, &[0])]),
    });
    moved_and_loaded(&mut h, &["a", "b"]);
    // A membership change rebalances the group; the new generation leaves t-1 unassigned.
    h.generation(4, &[("m0", "a", &[0]), ("m1", "b", &[])]);
    let v = check(&h.finish(&[(0, 10), (1, 10)]));
    assert!(v.hazards.is_empty(), "{:?}", v.hazards);
    assert!(v.anomalies.iter().any(|a| a.class == AnomalyClass::Stuck), "{:?}", v.anomalies);
}

/// mixed_protocol_swarm seed 2430: the downgrade's rebalance was lost with its coordinator and
/// the next loaded the written generation 3; a JoinGroup there started generation 4, whose
/// leader left before its SyncGroup, so generation 4 was never stored, and the coordinator moved
/// again: the next one loaded generation 3 once more. The hazard holds again: t-1 is still the
/// leaver's partition nobody was given.
#[test]
fn a_second_load_of_the_downgrades_generation_after_a_lost_one_is_still_the_hazard() {
    let mut h = b_stopped_and_downgraded();
    moved_and_loaded(&mut h, &["a"]);
    h.coord(CoordinatorEvent::GenerationStarted {
        group: G.into(),
        generation: 4,
        protocol: Some("range".into()),
        leader: Some("a".into()),
        members: vec!["a".into()],
    });
    moved_and_loaded(&mut h, &["a"]);
    h.classic_member_at("m0", "a", 3, &[0]);
    let v = check(&h.finish(&[(0, 10), (1, 10)]));
    assert!(v.is_ok(), "{:?}", v.anomalies);
    let e = v.hazards.first().expect("the stuck group is shown as a hazard");
    assert_eq!(e.hazard, crate::Hazard::LostDowngradeRebalance);
}

/// protocol_migration seeds 1089 and 6159: generation 2 of a cooperative classic group went
/// back to joining before its SyncGroup (a member left), which reset every stored assignment to
/// empty; then a consumer-protocol member joined and the group was upgraded from those empty
/// assignments. The consumer group gave t-1 to a at once while b, a cooperative member, still
/// owned it and committed it under its member epoch. Kafka allows it: a named hazard. With
/// `reset`, b had been told its generation was gone (it should have given t-1 up), so the
/// commit is b's fault.
fn upgraded_mid_rebalance(reset: bool) -> crate::Verdict {
    let mut h = clean();
    h.generation_started(2, &["a", "b"]);
    h.state(GroupState::PreparingRebalance, 2);
    if reset {
        h.member(
            "m1",
            MemberEvent::GenerationReset {
                member_id: "b".into(),
                generation: 1,
                error: "ILLEGAL_GENERATION".into(),
                reset_member_id: false,
                answer_about: None,
            },
        );
    }
    h.cg(ConsumerGroupEvent::GroupUpgraded {
        group: G.into(),
        generation: 2,
        members: converted(&[("a", 2, &[]), ("b", 2, &[])]),
    });
    h.cg(ConsumerGroupEvent::GroupEpochBumped { group: G.into(), epoch: 3 });
    h.cg(ConsumerGroupEvent::TargetAssignmentComputed {
        group: G.into(),
        epoch: 3,
        assignor: "uniform".into(),
        assignments: vec![
            TargetShare { member_id: "a".into(), partitions: parts(&[0, 1]) },
            TargetShare { member_id: "b".into(), partitions: vec![] },
        ],
    });
    h.epoch_of("a", 2, 3).cg(ConsumerGroupEvent::PartitionsAssigned {
        group: G.into(),
        member_id: "a".into(),
        member_epoch: 3,
        partitions: parts(&[0, 1]),
    });
    h.produced(1, 5).processed("m1", "b", 2, 1, 10, 14).commit("b", 2, 1, 15);
    check(&h.h.clone())
}

#[test]
fn an_upgrade_from_assignments_a_rebalance_reset_is_the_hazard_not_a_failure() {
    let v = upgraded_mid_rebalance(false);
    assert!(v.anomalies.is_empty(), "{:?}", v.anomalies);
    let e = v.hazards.first().expect("the unowned commit is shown as a hazard");
    assert_eq!(e.hazard, crate::Hazard::UpgradeMidRebalance);
    assert_eq!(e.anomaly.class, AnomalyClass::UnownedCommit);
    assert_eq!(e.anomaly.partition, Some(tp(1)));
}

#[test]
fn a_member_told_its_generation_was_gone_owns_nothing_the_upgrade_took() {
    let v = upgraded_mid_rebalance(true);
    assert!(v.hazards.is_empty(), "{:?}", v.hazards);
    assert!(v.anomalies.iter().any(|a| a.class == AnomalyClass::UnownedCommit), "{:?}", v);
}

/// static_churn seed 67: static member b, cut off within its session, did not rejoin
/// generation 2; Kafka kept it there with its last subscription, and the cooperative leader gave
/// t-1, which b held, to a. Back, b committed t-1 under generation 2 after a had: the commit
/// moves the offset back and lands on a partition b no longer owns. Kafka allows it (the
/// `static-member-missed-rebalance` hazard); a dynamic member is never kept without rejoining,
/// so the same commits from one are a failure.
fn missed_rebalance(is_static: bool) -> crate::Verdict {
    missed_rebalance_after(CoordinatorEvent::MemberAdded {
        group: G.into(),
        member_id: "b".into(),
        group_instance_id: is_static.then(|| "i-b".to_string()),
        client_id: "m1".into(),
    })
}

/// The same, with member b added by `added`.
fn missed_rebalance_after(added: CoordinatorEvent) -> crate::Verdict {
    let mut h = clean();
    h.coord(added);
    h.generation_started(2, &["a", "b"]);
    h.coord(CoordinatorEvent::AssignmentStored {
        group: G.into(),
        generation: 2,
        assignments: vec![
            MemberAssignment { member_id: "a".into(), partitions: parts(&[0, 1]) },
            MemberAssignment { member_id: "b".into(), partitions: vec![] },
        ],
    });
    h.state(GroupState::Stable, 2);
    h.classic_member_at("m0", "a", 2, &[0, 1]);
    h.produced(1, 10).processed("m0", "a", 2, 1, 10, 19).commit("a", 2, 1, 20);
    h.processed("m1", "b", 1, 1, 10, 14).commit("b", 2, 1, 15);
    check(&h.h.clone())
}

/// mixed_protocol_swarm with classic twins drawn (seed 903 of that draw): a classic static
/// member joined the consumer group (its instance id on the consumer group's MemberJoined, no
/// classic MemberAdded), a downgrade made the group classic with it as a static member, and it
/// missed the next generation while paused. It is a static member all the same: the same
/// commits are the hazard.
#[test]
fn a_static_member_that_joined_a_consumer_group_keeps_the_hazard_after_a_downgrade() {
    let v =
        missed_rebalance_after(CoordinatorEvent::ConsumerGroup(ConsumerGroupEvent::MemberJoined {
            group: G.into(),
            member_id: "b".into(),
            group_instance_id: Some("i-b".into()),
            client_id: "m1".into(),
            classic_protocol: true,
        }));
    assert!(v.anomalies.is_empty(), "{:?}", v.anomalies);
    assert!(v.hazards.iter().all(|e| e.hazard == crate::Hazard::StaticMemberMissedRebalance));
    assert!(!v.hazards.is_empty());
}

#[test]
fn a_static_member_kept_in_a_generation_it_missed_is_the_hazard_not_a_failure() {
    let v = missed_rebalance(true);
    assert!(v.anomalies.is_empty(), "{:?}", v.anomalies);
    assert!(v.hazards.iter().all(|e| e.hazard == crate::Hazard::StaticMemberMissedRebalance));
    let explained: Vec<AnomalyClass> = v.hazards.iter().map(|e| e.anomaly.class).collect();
    assert!(explained.contains(&AnomalyClass::OffsetRegression), "{explained:?}");
}

#[test]
fn a_dynamic_member_committing_a_partition_given_away_fails() {
    let v = missed_rebalance(false);
    assert!(v.hazards.is_empty(), "{:?}", v.hazards);
    assert!(v.anomalies.iter().any(|a| a.class == AnomalyClass::OffsetRegression), "{v:?}");
}

/// migration_faults seed 8: consumer-protocol member c, paused past its session, was removed;
/// the last other consumer-protocol member left and the group was downgraded. Back, c's
/// heartbeat was answered GROUP_ID_NOT_FOUND and the Java consumer stopped. Kafka does this:
/// the `downgrade-strands-member` hazard. Without the downgrade the same stop is a failure.
/// With `emptied`, the group became classic another way: every member was removed and a
/// classic member's join found it empty (Kafka replaces it by a classic group); with
/// `recorded_after`, that classic group's first event is recorded after the fatal error, in the
/// same millisecond.
fn stranded_by(downgrade: bool, emptied: bool, recorded_after: bool) -> crate::Verdict {
    stranded_in(downgrade, emptied.then_some(G), recorded_after)
}

/// [`stranded_by`] with the classic state change in group `emptied` (another group's says
/// nothing about this one).
fn stranded_in(downgrade: bool, emptied: Option<&str>, recorded_after: bool) -> crate::Verdict {
    let mut h = upgraded();
    h.started("m2");
    h.cg(ConsumerGroupEvent::MemberJoined {
        group: G.into(),
        member_id: "c".into(),
        group_instance_id: None,
        client_id: "m2".into(),
        classic_protocol: false,
    });
    h.cg(ConsumerGroupEvent::MemberRemoved {
        group: G.into(),
        member_id: "c".into(),
        member_epoch: 2,
        reason: ConsumerRemovalReason::SessionTimeout,
    });
    if downgrade {
        h.cg(ConsumerGroupEvent::GroupDowngraded {
            group: G.into(),
            group_epoch: 3,
            leaving_member: "d".into(),
            members: converted(&[("a", 3, &[0]), ("b", 3, &[1])]),
        });
    }
    let emptied_event = CoordinatorEvent::GroupStateChanged {
        group: emptied.unwrap_or(G).into(),
        from: GroupState::Empty,
        to: GroupState::PreparingRebalance,
        generation: 0,
    };
    if emptied.is_some() && !recorded_after {
        h.coord(emptied_event.clone());
    }
    h.member(
        "m2",
        MemberEvent::Fatal {
            member_id: "c".into(),
            generation: 2,
            error: "GROUP_ID_NOT_FOUND".into(),
        },
    );
    if emptied.is_some() && recorded_after {
        let at = h.h.events().last().expect("the fatal error").at_ms;
        h.h.record(
            at,
            groupsim_history::EventKind::Coordinator { broker: 0, event: emptied_event },
        );
    }
    check(&h.h.clone())
}

fn stranded(downgrade: bool) -> crate::Verdict {
    stranded_by(downgrade, false, false)
}

#[test]
fn a_member_stranded_by_a_group_emptied_and_taken_by_a_classic_join_is_the_hazard() {
    // mixed_protocol_swarm seed 171: every member's session expired behind a partition, a
    // classic join turned the empty group classic, and the returning member stopped.
    // Seed 408: the classic group's first event is recorded after the fatal error, in the
    // same millisecond.
    for recorded_after in [false, true] {
        let v = stranded_by(false, true, recorded_after);
        let e = v.hazards.iter().find(|e| e.anomaly.class == AnomalyClass::MemberGaveUp);
        assert_eq!(e.map(|e| e.hazard), Some(crate::Hazard::DowngradeStrandsMember), "{v:?}");
    }
    // Another group turning classic strands nobody here.
    let v = stranded_in(false, Some("other"), false);
    assert!(v.anomalies.iter().any(|a| a.class == AnomalyClass::MemberGaveUp), "{v:?}");
}

#[test]
fn a_member_stranded_by_a_downgrade_stopping_is_the_hazard_not_a_failure() {
    let v = stranded(true);
    assert!(v.anomalies.iter().all(|a| a.class != AnomalyClass::MemberGaveUp), "{v:?}");
    let e = v.hazards.iter().find(|e| e.anomaly.class == AnomalyClass::MemberGaveUp);
    assert_eq!(e.map(|e| e.hazard), Some(crate::Hazard::DowngradeStrandsMember), "{v:?}");
    let v = stranded(false);
    assert!(v.anomalies.iter().any(|a| a.class == AnomalyClass::MemberGaveUp), "{v:?}");
}

/// mixed_protocol_swarm seed 25: with `group.consumer.migration.policy=downgrade`, the group's
/// only consumer-protocol member left, a classic member's join turned the empty consumer group
/// into a classic group, and a consumer-protocol member joining next was refused the upgrade:
/// GROUP_ID_NOT_FOUND, fatal to the Java consumer. Kafka does this: the
/// `refused-upgrade-stops-member` hazard. The same stop with no refusal naming the member fails.
fn refused_upgrade(refusal_for: &str) -> crate::Verdict {
    let mut h = upgraded();
    h.started("m2");
    h.cg(ConsumerGroupEvent::UpgradeRefused {
        group: G.into(),
        member_id: refusal_for.into(),
        reason: "policy".into(),
    });
    h.member(
        "m2",
        MemberEvent::Fatal {
            member_id: "c".into(),
            generation: 0,
            error: "GROUP_ID_NOT_FOUND".into(),
        },
    );
    check(&h.h.clone())
}

#[test]
fn a_member_refused_the_upgrade_stopping_is_the_hazard_not_a_failure() {
    let v = refused_upgrade("c");
    assert!(v.anomalies.iter().all(|a| a.class != AnomalyClass::MemberGaveUp), "{v:?}");
    let e = v.hazards.iter().find(|e| e.anomaly.class == AnomalyClass::MemberGaveUp);
    assert_eq!(e.map(|e| e.hazard), Some(crate::Hazard::RefusedUpgradeStopsMember), "{v:?}");
    let v = refused_upgrade("someone-else");
    assert!(v.anomalies.iter().any(|a| a.class == AnomalyClass::MemberGaveUp), "{v:?}");
}

/// migration_faults seed 937: b, a cooperative classic member of a consumer group, was cut off
/// long enough that its session expired; the group removed it, released t-1 and gave it to a.
/// b, which heard nothing, rejoined under its old member id, and Kafka's consumer group created
/// a member with that id (a classic join names the member to create); its assignment empty, b
/// revoked t-1, committing it under its new member epoch after a had committed it higher. Kafka
/// allows it: the `removed-classic-member-rejoins` hazard. A member that rejoins under a new id
/// (as after an UNKNOWN_MEMBER_ID) was told, so its commit is its own fault.
fn removed_then_rejoined(same_id: bool) -> crate::Verdict {
    let id = if same_id { "b" } else { "b2" };
    let mut h = rejoined_as(id);
    h.commit(id, 4, 1, 15);
    h.member(
        "m1",
        MemberEvent::Revoked { member_id: id.into(), generation: 4, partitions: parts(&[1]) },
    );
    check(&h.h.clone())
}

/// The history of [`removed_then_rejoined`] up to b's rejoin as `id`, at member epoch 4 with
/// nothing assigned (it still owns t-1, which a holds and committed at 20).
fn rejoined_as(id: &str) -> H {
    let mut h = upgraded();
    h.cg(ConsumerGroupEvent::PartitionsReleased {
        group: G.into(),
        member_id: "b".into(),
        member_epoch: 1,
        partitions: parts(&[1]),
    });
    h.cg(ConsumerGroupEvent::MemberRemoved {
        group: G.into(),
        member_id: "b".into(),
        member_epoch: 1,
        reason: ConsumerRemovalReason::SessionTimeout,
    });
    h.epoch_of("a", 2, 3).cg(ConsumerGroupEvent::PartitionsAssigned {
        group: G.into(),
        member_id: "a".into(),
        member_epoch: 3,
        partitions: parts(&[0, 1]),
    });
    h.classic_member_at("m0", "a", 3, &[0, 1]);
    h.produced(1, 10).processed("m0", "a", 3, 1, 10, 19).commit("a", 3, 1, 20);
    h.cg(ConsumerGroupEvent::MemberJoined {
        group: G.into(),
        member_id: id.into(),
        group_instance_id: None,
        client_id: "m1".into(),
        classic_protocol: true,
    });
    h.epoch_of(id, 0, 4).classic_member_at("m1", id, 4, &[]);
    h
}

/// mixed_protocol_swarm seed 60037 (found by `explore`): the same, but the rejoined member sent
/// its revoke commit in the instant a fault crashed it, and the coordinator took the commit
/// after the crash. The window must not close at the crash while the commit is on its way.
#[test]
fn a_revoke_commit_sent_as_the_rejoined_member_crashed_is_the_hazard_too() {
    let run = |crash_first: bool| {
        let mut h = rejoined_as("b");
        let sent = MemberEvent::CommitSent {
            member_id: "b".into(),
            generation: 4,
            partition: tp(1),
            offset: 15,
        };
        if crash_first {
            // Stopped before it sent anything: a commit taken later is not its revoke commit.
            h.world(groupsim_history::WorldEvent::MemberStopped { member: "m1".into() });
        } else {
            h.member("m1", sent);
            h.world(groupsim_history::WorldEvent::MemberStopped { member: "m1".into() });
        }
        h.commit("b", 4, 1, 15);
        check(&h.h.clone())
    };
    let v = run(false);
    assert!(v.anomalies.is_empty(), "{:?}", v.anomalies);
    assert!(v.hazards.iter().all(|e| e.hazard == crate::Hazard::RemovedClassicMemberRejoins));
    assert!(!v.hazards.is_empty());
    let v = run(true);
    assert!(!v.anomalies.is_empty(), "a commit the stopped member never sent is not excused");
}

#[test]
fn a_removed_classic_member_rejoining_under_its_old_id_is_the_hazard_not_a_failure() {
    let v = removed_then_rejoined(true);
    assert!(v.anomalies.is_empty(), "{:?}", v.anomalies);
    assert!(!v.hazards.is_empty(), "the commit's anomalies are shown as the hazard's");
    for e in &v.hazards {
        assert_eq!(e.hazard, crate::Hazard::RemovedClassicMemberRejoins);
        assert_eq!(e.anomaly.partition, Some(tp(1)));
    }
    let v = removed_then_rejoined(false);
    assert!(v.hazards.is_empty(), "{:?}", v.hazards);
    assert!(!v.anomalies.is_empty(), "a member rejoining under a new id was told it was out");
}
