//! The consumer-group (KIP-848) rules on hand-made histories: each rule fires on a bad history
//! and stays quiet on the correct one beside it.

use groupsim_history::{
    ConsumerGroupEvent, ConsumerRemovalReason, CoordinatorEvent, LoadedMember, MemberEvent,
    TargetShare, WorldEvent,
};

use super::tests::{classes, tp, G, H};
use super::{check, AnomalyClass, LivenessWatch};

fn parts(ps: &[i32]) -> Vec<groupsim_wire::TopicPartition> {
    ps.iter().map(|p| tp(*p)).collect()
}

/// What the coordinator does with a member's partitions.
#[derive(Clone, Copy)]
enum Move {
    Given,
    Revoking,
    Released,
}

/// Consumer-group steps on top of the history builder.
trait ConsumerSteps {
    fn cg(&mut self, e: ConsumerGroupEvent) -> &mut Self;
    fn group_epoch(&mut self, epoch: i32, target: &[(&str, &[i32])]) -> &mut Self;
    fn coordinator_epoch(&mut self, id: &str, from: i32, to: i32, state: &str) -> &mut Self;
    fn join(&mut self, name: &str, id: &str, epoch: i32, ps: &[i32]) -> &mut Self;
    fn member_epoch(&mut self, name: &str, id: &str, previous: i32, epoch: i32) -> &mut Self;
    fn revoking(&mut self, id: &str, epoch: i32, ps: &[i32]) -> &mut Self;
    fn released(&mut self, id: &str, epoch: i32, ps: &[i32]) -> &mut Self;
    fn given(&mut self, id: &str, epoch: i32, ps: &[i32]) -> &mut Self;
    fn moved(&mut self, how: Move, id: &str, member_epoch: i32, ps: &[i32]) -> &mut Self;
    fn owns(&mut self, name: &str, id: &str, epoch: i32, ps: &[i32]) -> &mut Self;
    fn removed(&mut self, id: &str, epoch: i32) -> &mut Self;
}

impl ConsumerSteps for H {
    fn cg(&mut self, e: ConsumerGroupEvent) -> &mut Self {
        self.coord(CoordinatorEvent::ConsumerGroup(e))
    }
    /// The group epoch moves to `epoch` and its target is computed at once.
    fn group_epoch(&mut self, epoch: i32, target: &[(&str, &[i32])]) -> &mut Self {
        self.cg(ConsumerGroupEvent::GroupEpochBumped { group: G.into(), epoch });
        self.cg(ConsumerGroupEvent::TargetAssignmentComputed {
            group: G.into(),
            epoch,
            assignor: "uniform".into(),
            assignments: target
                .iter()
                .map(|(id, ps)| TargetShare { member_id: id.to_string(), partitions: parts(ps) })
                .collect(),
        })
    }
    fn coordinator_epoch(&mut self, id: &str, from: i32, to: i32, state: &str) -> &mut Self {
        self.cg(ConsumerGroupEvent::MemberEpochChanged {
            group: G.into(),
            member_id: id.into(),
            from,
            to,
            state: state.into(),
        })
    }
    /// A member joins at `epoch` and is given `ps` (free partitions) at once.
    fn join(&mut self, name: &str, id: &str, epoch: i32, ps: &[i32]) -> &mut Self {
        self.cg(ConsumerGroupEvent::MemberJoined {
            group: G.into(),
            member_id: id.into(),
            group_instance_id: None,
            client_id: name.into(),
            classic_protocol: false,
        });
        self.coordinator_epoch(id, 0, epoch, "STABLE").given(id, epoch, ps);
        self.member_epoch(name, id, 0, epoch).owns(name, id, epoch, ps)
    }
    fn member_epoch(&mut self, name: &str, id: &str, previous: i32, epoch: i32) -> &mut Self {
        self.member(name, MemberEvent::MemberEpochChanged { member_id: id.into(), previous, epoch })
    }
    fn revoking(&mut self, id: &str, epoch: i32, ps: &[i32]) -> &mut Self {
        self.moved(Move::Revoking, id, epoch, ps)
    }
    fn released(&mut self, id: &str, epoch: i32, ps: &[i32]) -> &mut Self {
        self.moved(Move::Released, id, epoch, ps)
    }
    fn given(&mut self, id: &str, epoch: i32, ps: &[i32]) -> &mut Self {
        if ps.is_empty() {
            return self;
        }
        self.moved(Move::Given, id, epoch, ps)
    }
    /// The coordinator gives `ps` to member `id`, asks it to revoke them, or records their
    /// release.
    fn moved(&mut self, how: Move, id: &str, member_epoch: i32, ps: &[i32]) -> &mut Self {
        let (group, member_id, partitions) = (G.to_string(), id.to_string(), parts(ps));
        use ConsumerGroupEvent as E;
        self.cg(match how {
            Move::Given => E::PartitionsAssigned { group, member_id, member_epoch, partitions },
            Move::Revoking => E::PartitionsRevoking { group, member_id, member_epoch, partitions },
            Move::Released => E::PartitionsReleased { group, member_id, member_epoch, partitions },
        })
    }
    /// The member's own report: it owns `ps` now.
    fn owns(&mut self, name: &str, id: &str, epoch: i32, ps: &[i32]) -> &mut Self {
        self.member(
            name,
            MemberEvent::Assigned {
                member_id: id.into(),
                generation: epoch,
                partitions: parts(ps),
            },
        )
    }
    fn removed(&mut self, id: &str, epoch: i32) -> &mut Self {
        self.cg(ConsumerGroupEvent::MemberRemoved {
            group: G.into(),
            member_id: id.into(),
            member_epoch: epoch,
            reason: ConsumerRemovalReason::SessionTimeout,
        })
    }
}

/// Two consumer members at epoch 2, one partition each, everything processed and committed.
fn clean() -> H {
    let mut h = H::new(2);
    h.started("m0").started("m1");
    h.group_epoch(1, &[("a", &[0, 1])]).join("m0", "a", 1, &[0, 1]);
    h.group_epoch(2, &[("a", &[0]), ("b", &[1])]);
    h.join("m1", "b", 2, &[]);
    h.coordinator_epoch("a", 1, 1, "UNREVOKED_PARTITIONS").revoking("a", 1, &[1]);
    h.owns("m0", "a", 1, &[0]);
    h.member(
        "m0",
        MemberEvent::Revoked { member_id: "a".into(), generation: 1, partitions: parts(&[1]) },
    );
    h.released("a", 1, &[1]).coordinator_epoch("a", 1, 2, "STABLE").member_epoch("m0", "a", 1, 2);
    h.given("b", 2, &[1]).owns("m1", "b", 2, &[1]);
    h.produced(0, 10).produced(1, 10);
    h.processed("m0", "a", 2, 0, 0, 9).processed("m1", "b", 2, 1, 0, 9);
    h.commit("a", 2, 0, 10).commit("b", 2, 1, 10);
    h
}

#[test]
fn a_reconciled_consumer_group_passes_and_counts_its_target_assignments() {
    let v = check(&clean().finish(&[(0, 10), (1, 10)]));
    assert!(v.is_ok(), "{:?}", v.anomalies);
    assert_eq!(v.stats.rebalances, 2, "one per target assignment");
    assert_eq!(v.stats.commits_accepted, 2);
}

#[test]
fn a_commit_under_the_members_current_epoch_is_not_a_zombie_but_a_stale_one_is() {
    let mut h = clean();
    h.produced(0, 5).processed("m0", "a", 2, 0, 10, 14);
    // Epoch 1 was a's before it reconciled: Kafka answers STALE_MEMBER_EPOCH.
    h.commit("a", 1, 0, 15);
    let v = check(&h.finish(&[(0, 15), (1, 10)]));
    let z = v.anomalies.iter().find(|a| a.class == AnomalyClass::ZombieCommit).expect("zombie");
    assert!(z.message.contains("member epoch 1 while its member epoch was 2"), "{}", z.message);
    assert_eq!(v.anomalies.len(), 1, "{:?}", v.anomalies);
}

#[test]
fn a_commit_validated_in_the_millisecond_its_epoch_moved_on_is_not_a_zombie() {
    let validated = |delay: u64| {
        let mut h = clean();
        h.produced(0, 5).processed("m0", "a", 2, 0, 10, 14);
        h.group_epoch(3, &[("a", &[0]), ("b", &[1])]).coordinator_epoch("a", 2, 3, "STABLE");
        let moved_at = h.t;
        h.member_epoch("m0", "a", 2, 3);
        h.commit_validated_at("a", 2, 0, 15, moved_at + delay);
        classes(&h.h.clone())
    };
    assert_eq!(validated(0), vec![], "within the millisecond either side counts");
    assert_eq!(validated(1), vec![AnomalyClass::ZombieCommit]);
}

#[test]
fn a_commit_from_a_member_the_group_removed_is_a_zombie() {
    let mut h = clean();
    h.removed("b", 2);
    h.produced(1, 5).processed("m1", "b", 2, 1, 10, 14).commit("b", 2, 1, 15);
    let v = check(&h.h.clone());
    let z = v.anomalies.iter().find(|a| a.class == AnomalyClass::ZombieCommit).expect("zombie");
    assert!(z.message.contains("UNKNOWN_MEMBER_ID"), "{}", z.message);
    assert_eq!(z.events.len(), 2, "the commit and the removal");
}

#[test]
fn a_revoking_member_may_commit_until_it_releases_the_partition() {
    let mut h = clean();
    h.group_epoch(3, &[("a", &[0, 1]), ("b", &[])]);
    h.coordinator_epoch("b", 2, 2, "UNREVOKED_PARTITIONS").revoking("b", 2, &[1]);
    h.produced(1, 5).processed("m1", "b", 2, 1, 10, 14).commit("b", 2, 1, 15);
    let before = check(&h.h.clone());
    assert!(before.is_ok(), "commit while revoking: {:?}", before.anomalies);
    h.released("b", 2, &[1]).coordinator_epoch("b", 2, 3, "STABLE");
    h.produced(1, 5).processed("m1", "b", 2, 1, 15, 19).commit("b", 3, 1, 20);
    let got = classes(&h.h.clone());
    assert_eq!(got, vec![AnomalyClass::UnownedCommit], "commit after the release");
}

#[test]
fn a_commit_for_another_members_partition_is_unowned() {
    let mut h = clean();
    h.produced(1, 5).processed("m0", "a", 2, 1, 10, 14).commit("a", 2, 1, 15);
    let v = check(&h.h.clone());
    let u = v.anomalies.iter().find(|a| a.class == AnomalyClass::UnownedCommit).expect("unowned");
    assert!(u.message.contains("b owns it"), "{}", u.message);
}

#[test]
fn records_processed_at_an_earlier_epoch_of_the_same_holding_cover_a_commit() {
    let mut h = clean();
    h.produced(0, 5).processed("m0", "a", 2, 0, 10, 14);
    h.group_epoch(3, &[("a", &[0]), ("b", &[1])]).coordinator_epoch("a", 2, 3, "STABLE");
    h.member_epoch("m0", "a", 2, 3).commit("a", 3, 0, 15);
    assert!(check(&h.h.clone()).is_ok());
    // Records nobody processed are not covered.
    h.produced(0, 5).commit("a", 3, 0, 20);
    assert_eq!(classes(&h.h.clone()), vec![AnomalyClass::UncoveredCommit]);
}

#[test]
fn a_new_owner_resuming_below_the_previous_owners_commit_is_a_lost_commit() {
    // a commits 10 on partition 1 and releases it; b is given it at epoch 2, acknowledges and
    // moves to epoch 3 before the answer to its OffsetFetch: its resume is judged against its
    // assignment, not its epoch.
    let resume = |committed: i64| -> Vec<AnomalyClass> {
        let mut h = H::new(2);
        h.started("m0").started("m1");
        h.group_epoch(1, &[("a", &[0, 1])]).join("m0", "a", 1, &[0, 1]);
        h.produced(1, 10).processed("m0", "a", 1, 1, 0, 9).commit("a", 1, 1, 10);
        h.group_epoch(2, &[("a", &[0]), ("b", &[1])]);
        h.join("m1", "b", 2, &[]);
        h.revoking("a", 1, &[1]).released("a", 1, &[1]).coordinator_epoch("a", 1, 2, "STABLE");
        h.given("b", 2, &[1]).owns("m1", "b", 2, &[1]).member_epoch("m1", "b", 2, 3);
        h.member(
            "m1",
            MemberEvent::PositionInitialized {
                member_id: "b".into(),
                generation: 3,
                partition: tp(1),
                committed: Some(committed),
                position: committed,
                reset_after: None,
            },
        );
        classes(&h.h.clone())
    };
    assert_eq!(resume(10), vec![]);
    assert_eq!(resume(4), vec![AnomalyClass::LostCommit]);
}

/// consumer_protocol_swarm seeds 3119 and 1303: a member paused 19 s right after its
/// OffsetFetch was answered (nothing committed then); its session expired and the coordinator
/// gave its partition to another member, which committed. When the pause ended the member
/// applied the old answer and started from 0, and heard it was fenced at its next heartbeat.
/// Kafka's clients do the same: a member the group removed is a zombie until it hears so, and
/// where it starts is no resume of the group's (its commits meet the zombie rules). A member
/// still in the group is judged as before.
#[test]
fn a_member_the_group_removed_starting_from_an_old_offset_fetch_is_not_judged() {
    let start = |removed: bool| -> Vec<AnomalyClass> {
        let mut h = H::new(2);
        h.started("m0").started("m1");
        h.group_epoch(1, &[("b", &[0, 1])]).join("m1", "b", 1, &[0, 1]);
        h.produced(1, 10).processed("m1", "b", 1, 1, 0, 9).commit("b", 1, 1, 10);
        h.group_epoch(2, &[("a", &[1]), ("b", &[0])]);
        h.revoking("b", 1, &[1]).released("b", 1, &[1]).coordinator_epoch("b", 1, 2, "STABLE");
        h.join("m0", "a", 2, &[1]);
        if removed {
            h.removed("a", 2);
        }
        h.member(
            "m0",
            MemberEvent::PositionInitialized {
                member_id: "a".into(),
                generation: 2,
                partition: tp(1),
                committed: None,
                position: 0,
                reset_after: None,
            },
        );
        classes(&h.h.clone())
            .into_iter()
            .filter(|c| matches!(c, AnomalyClass::LostCommit | AnomalyClass::PositionRewind))
            .collect()
    };
    assert_eq!(start(true), vec![]);
    assert_ne!(start(false), vec![], "a member still in the group is judged");
}

/// A converged run's history ends; `stuck` reads it.
fn stuck_reason(h: &mut H, ends: &[(i32, i64)]) -> Option<String> {
    let v = check(&h.finish(ends));
    v.anomalies.iter().find(|a| a.class == AnomalyClass::Stuck).map(|a| a.message.clone())
}

#[test]
fn a_reconciled_group_holds_liveness_and_the_watch_agrees() {
    let mut h = clean();
    let history = h.finish(&[(0, 10), (1, 10)]);
    let mut watch = LivenessWatch::default();
    watch.read(history.events());
    assert!(watch.holds());
}

#[test]
fn a_group_that_has_not_reconciled_is_stuck() {
    // A new target that the members never reached.
    let mut h = clean();
    h.group_epoch(3, &[("a", &[1]), ("b", &[0])]);
    let why = stuck_reason(&mut h, &[(0, 10), (1, 10)]).expect("stuck");
    assert!(why.contains("not reconciled to 3"), "{why}");
    assert!(why.contains("owns t[0] but its target is t[1]"), "{why}");
}

#[test]
fn a_member_revoking_at_the_deadline_is_stuck() {
    let mut h = clean();
    h.group_epoch(3, &[("a", &[0, 1]), ("b", &[])]);
    h.coordinator_epoch("b", 2, 2, "UNREVOKED_PARTITIONS").revoking("b", 2, &[1]);
    let why = stuck_reason(&mut h, &[(0, 10), (1, 10)]).expect("stuck");
    assert!(why.contains("m1 (b) is at epoch 2 (UNREVOKED_PARTITIONS)"), "{why}");
}

/// A reclaim (KAFKA-16147's setting): b is asked to revoke t[1], the partition's new owner
/// goes, and the next target gives t[1] back to b before it acknowledged. Kafka moves b to the
/// new epoch with t[1] still owned, and records no release: the revocation is over all the
/// same, so the group has converged. (consumer_protocol_swarm seed 181 was flagged `stuck`
/// before the view ended pending revocations on an epoch advance.)
#[test]
fn a_partition_given_back_to_the_member_revoking_it_is_no_longer_being_revoked() {
    let mut h = clean();
    h.group_epoch(3, &[("a", &[0, 1]), ("b", &[])]);
    h.coordinator_epoch("b", 2, 2, "UNREVOKED_PARTITIONS").revoking("b", 2, &[1]);
    h.coordinator_epoch("a", 2, 3, "UNRELEASED_PARTITIONS").member_epoch("m0", "a", 2, 3);
    h.group_epoch(4, &[("a", &[0]), ("b", &[1])]);
    h.coordinator_epoch("b", 2, 4, "STABLE").member_epoch("m1", "b", 2, 4);
    h.coordinator_epoch("a", 3, 4, "STABLE").member_epoch("m0", "a", 3, 4);
    assert_eq!(stuck_reason(&mut h, &[(0, 10), (1, 10)]), None);
}

#[test]
fn a_member_that_never_heard_of_its_epoch_is_stuck() {
    // The coordinator moved b on; b's answer never arrived.
    let mut h = clean();
    h.group_epoch(3, &[("a", &[0]), ("b", &[1])]).coordinator_epoch("b", 2, 3, "STABLE");
    h.coordinator_epoch("a", 2, 3, "STABLE").member_epoch("m0", "a", 2, 3);
    let why = stuck_reason(&mut h, &[(0, 10), (1, 10)]).expect("stuck");
    assert!(why.contains("m1 (b) reports epoch 2, not 3"), "{why}");
}

#[test]
fn a_group_holding_a_stopped_member_is_stuck() {
    let mut h = clean();
    h.world(groupsim_history::WorldEvent::MemberStopped { member: "m1".into() });
    let why = stuck_reason(&mut h, &[(0, 10), (1, 10)]).expect("stuck");
    assert!(why.contains("still holds b, which is not live"), "{why}");
}

#[test]
fn a_load_replaces_the_group_with_what_the_log_held() {
    // The log held a and b reconciled at epoch 2: the loaded group is converged.
    let mut h = clean();
    let loaded = |id: &str, p: i32| LoadedMember {
        member_id: id.into(),
        group_instance_id: None,
        member_epoch: 2,
        owned: parts(&[p]),
        revoking: Vec::new(),
        state: "STABLE".into(),
        target: parts(&[p]),
        classic_protocol: false,
    };
    h.cg(ConsumerGroupEvent::GroupLoaded {
        group: G.into(),
        partition: 0,
        group_epoch: 2,
        assignment_epoch: 2,
        members: vec![loaded("a", 0), loaded("b", 1)],
    });
    h.produced(0, 5).processed("m0", "a", 2, 0, 10, 14).commit("a", 2, 0, 15);
    let v = check(&h.finish(&[(0, 15), (1, 10)]));
    assert!(v.is_ok(), "{:?}", v.anomalies);
}

#[test]
fn a_static_replacement_takes_over_the_target_of_the_member_it_replaces() {
    // b (instance i-b) leaves with epoch -2 and a new process, member id c, takes instance i-b
    // over: Kafka removes b and gives c b's target and partitions without a new target.
    let replaced = |rejoin_instance: &str| {
        let mut h = H::new(2);
        h.started("m0").started("m1");
        h.group_epoch(1, &[("a", &[0]), ("b", &[1])]).join("m0", "a", 1, &[0]);
        h.cg(ConsumerGroupEvent::MemberJoined {
            group: G.into(),
            member_id: "b".into(),
            group_instance_id: Some("i-b".into()),
            client_id: "m1".into(),
            classic_protocol: false,
        });
        h.coordinator_epoch("b", 0, 1, "STABLE").given("b", 1, &[1]);
        h.member_epoch("m1", "b", 0, 1).owns("m1", "b", 1, &[1]);
        h.coordinator_epoch("b", 1, -2, "STABLE");
        h.member(
            "m1",
            MemberEvent::Lost {
                member_id: "b".into(),
                generation: 1,
                partitions: parts(&[1]),
                reason: "LEAVING".into(),
            },
        );
        h.world(groupsim_history::WorldEvent::MemberStopped { member: "m1".into() });
        h.started("m1");
        h.released("b", -2, &[1]).cg(ConsumerGroupEvent::MemberRemoved {
            group: G.into(),
            member_id: "b".into(),
            member_epoch: -2,
            reason: ConsumerRemovalReason::Replaced,
        });
        h.cg(ConsumerGroupEvent::MemberJoined {
            group: G.into(),
            member_id: "c".into(),
            group_instance_id: Some(rejoin_instance.into()),
            client_id: "m1".into(),
            classic_protocol: false,
        });
        h.coordinator_epoch("c", 0, 1, "STABLE").given("c", 1, &[1]);
        h.member_epoch("m1", "c", 0, 1).owns("m1", "c", 1, &[1]);
        stuck_reason(&mut h, &[])
    };
    assert_eq!(replaced("i-b"), None);
    let why = replaced("i-other").expect("a new static member has no target of its own");
    assert!(why.contains("m1 (c) owns t[1] but its target is -"), "{why}");
}

/// consumer_protocol_static seed 941: another member's session expired, so the group epoch had
/// moved on when a static member's new process took its instance over. Kafka hands the
/// replacement the old target and, in the same heartbeat, computes the new epoch's target, which
/// names the replacement: that target is the one to reach. The view kept the replaced member's
/// stale target over the fresh one and called the converged group stuck.
#[test]
fn a_target_computed_with_the_replacement_is_not_overridden_by_the_replaced_one() {
    let mut h = H::new(3);
    h.started("m0").started("m1");
    h.group_epoch(1, &[("a", &[0]), ("b", &[1, 2])]).join("m0", "a", 1, &[0]);
    let joined = |id: &str| ConsumerGroupEvent::MemberJoined {
        group: G.into(),
        member_id: id.into(),
        group_instance_id: Some("i-b".into()),
        client_id: "m1".into(),
        classic_protocol: false,
    };
    h.cg(joined("b")).coordinator_epoch("b", 0, 1, "STABLE").given("b", 1, &[1, 2]);
    h.member_epoch("m1", "b", 0, 1).owns("m1", "b", 1, &[1, 2]);
    h.coordinator_epoch("b", 1, -2, "STABLE");
    h.world(groupsim_history::WorldEvent::MemberStopped { member: "m1".into() });
    h.started("m1");
    h.released("b", -2, &[1, 2]).cg(ConsumerGroupEvent::MemberRemoved {
        group: G.into(),
        member_id: "b".into(),
        member_epoch: -2,
        reason: ConsumerRemovalReason::Replaced,
    });
    h.group_epoch(2, &[("a", &[0, 2]), ("c", &[1])]).cg(joined("c"));
    h.coordinator_epoch("c", 0, 2, "STABLE").given("c", 2, &[1]);
    h.member_epoch("m1", "c", 0, 2).owns("m1", "c", 2, &[1]);
    h.coordinator_epoch("a", 1, 2, "STABLE").given("a", 2, &[2]);
    h.member_epoch("m0", "a", 1, 2).owns("m0", "a", 2, &[0, 2]);
    assert_eq!(stuck_reason(&mut h, &[]), None);
}

/// A coordinator that refuses a rejoin refuses every retry until the session ends: one fault,
/// reported once per member id with the count, whichever members are refused.
#[test]
fn a_refused_rejoin_is_reported_once_per_member_with_its_count() {
    let mut h = clean();
    let refused = |id: &str| MemberEvent::HeartbeatFailed {
        member_id: id.into(),
        epoch: 0,
        error: "FENCED_MEMBER_EPOCH".into(),
    };
    for _ in 0..3 {
        h.member("m0", refused("a"));
    }
    h.member("m1", refused("b"));
    let v = check(&h.h.clone());
    let found: Vec<&str> = v
        .anomalies
        .iter()
        .filter(|a| a.class == AnomalyClass::FencedJoin)
        .map(|a| a.message.as_str())
        .collect();
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(found[0].starts_with("m0 ") && found[0].ends_with("(refused 3 times in all)"));
    assert!(found[1].starts_with("m1 ") && !found[1].contains("times in all"), "{}", found[1]);
}

#[test]
fn only_a_join_answered_fenced_member_epoch_is_a_fenced_join() {
    // (behaviour, the heartbeat's member epoch, the error answering it, flagged)
    let cases = [
        ("a rejoin at epoch 0 fenced (KAFKA-19233)", 0, "FENCED_MEMBER_EPOCH", true),
        ("a heartbeat at a stale epoch fenced", 1, "FENCED_MEMBER_EPOCH", false),
        ("a heartbeat at an epoch ahead fenced", 3, "FENCED_MEMBER_EPOCH", false),
        ("a join of a member id the group removed", 0, "UNKNOWN_MEMBER_ID", false),
        ("a static join while the instance is held", 0, "UNRELEASED_INSTANCE_ID", false),
        ("a join that got no answer", 0, "DISCONNECTED", false),
    ];
    for (behaviour, epoch, error, flagged) in cases {
        let mut h = clean();
        h.member(
            "m0",
            MemberEvent::HeartbeatFailed { member_id: "a".into(), epoch, error: error.into() },
        );
        let v = check(&h.h.clone());
        let found = v.anomalies.iter().find(|a| a.class == AnomalyClass::FencedJoin);
        assert_eq!(found.is_some(), flagged, "{behaviour}: {:?}", v.anomalies);
        assert_eq!(v.anomalies.len(), usize::from(flagged), "{behaviour}: {:?}", v.anomalies);
        if let Some(a) = found {
            assert!(a.message.contains("held a last at member epoch 2"), "{}", a.message);
            assert_eq!(a.events, vec![h.h.len() - 1], "the answer proves it");
        }
    }
}

/// `clean()`, then m0 ("a") is given partition 2 (ten records nobody processes) in a target
/// assignment it receives; the producer stops and the faults heal at once, stall bound 1 s.
fn given_partition_two() -> H {
    let mut h = clean();
    h.produced(2, 10);
    h.group_epoch(3, &[("a", &[0, 2]), ("b", &[1])]);
    h.coordinator_epoch("a", 2, 3, "RECONCILING").given("a", 3, &[2]);
    h.member(
        "m0",
        MemberEvent::AssignmentReceived {
            member_id: "a".into(),
            epoch: 3,
            partitions: parts(&[0, 2]),
            unresolved: Vec::new(),
        },
    );
    h.world(WorldEvent::ProducerStopped {
        log_end_offsets: vec![(tp(0), 10), (tp(1), 10), (tp(2), 10)],
    });
    let heal = h.t;
    h.world(WorldEvent::LivenessPhase { deadline_ms: heal + 60_000, stall_ms: Some(1_000) });
    h
}

fn stalls_in(h: &H) -> Vec<String> {
    let v = check(&h.h.clone());
    let found = v.anomalies.iter().filter(|a| a.class == AnomalyClass::StalledMember);
    found.map(|a| a.message.clone()).collect()
}

/// A reconciliation that never ends (the member received partitions in its target assignment
/// and never takes them up) is a stall once twice the bound has passed since the heal.
#[test]
fn a_target_partition_never_taken_up_is_a_reconciliation_stall() {
    let mut h = given_partition_two();
    h.t += 2_500;
    h.world(WorldEvent::RunEnded);
    let got = stalls_in(&h);
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(got[0].contains("m0's coordinator gave it t-2"), "{}", got[0]);
    assert!(got[0].contains("its reconciliation never ended"), "{}", got[0]);
}

/// Taking the partition up in time, or the run ending before the bound, is no stall.
#[test]
fn a_target_partition_taken_up_and_consumed_is_no_stall() {
    let mut h = given_partition_two();
    h.t += 500;
    h.owns("m0", "a", 3, &[0, 2]);
    h.processed("m0", "a", 3, 2, 0, 9);
    h.t += 2_500;
    h.world(WorldEvent::RunEnded);
    assert_eq!(stalls_in(&h), Vec::<String>::new());
    let mut h = given_partition_two();
    h.t += 1_500;
    h.world(WorldEvent::RunEnded);
    assert_eq!(stalls_in(&h), Vec::<String>::new(), "the bound had not passed");
}

/// A consumer member whose epoch a heartbeat moved after the heal, which got that answer and
/// then let its session expire, stopped heartbeating; one that never got the answer did not
/// learn it should.
#[test]
fn a_consumer_session_expiring_after_an_epoch_the_member_got_is_a_stall() {
    let expire = |got_answer: bool| {
        let mut h = clean();
        h.world(WorldEvent::ProducerStopped { log_end_offsets: vec![(tp(0), 10), (tp(1), 10)] });
        let heal = h.t;
        h.world(WorldEvent::LivenessPhase { deadline_ms: heal + 60_000, stall_ms: Some(5_000) });
        h.group_epoch(3, &[("a", &[0]), ("b", &[1])]).coordinator_epoch("a", 2, 3, "STABLE");
        if got_answer {
            h.member_epoch("m0", "a", 2, 3);
        }
        h.t += 1_000;
        h.removed("a", 3);
        h.world(WorldEvent::RunEnded);
        stalls_in(&h)
    };
    let got = expire(true);
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(got[0].contains("m0 (a) is alive but its session expired"), "{}", got[0]);
    assert_eq!(expire(false), Vec::<String>::new());
}

/// consumer_protocol_swarm 311: a consumer member's commit accepted after the heal, then its
/// session expired under a second later. A KIP-848 coordinator does not count a commit as a
/// heartbeat (a classic one does), so the commit showed nothing about the session: the member's
/// last heartbeat was before a pause, and its next was not yet due.
#[test]
fn a_consumer_members_commit_is_no_contact_for_its_session() {
    let mut h = clean();
    h.world(WorldEvent::ProducerStopped { log_end_offsets: vec![(tp(0), 10), (tp(1), 10)] });
    let heal = h.t;
    h.world(WorldEvent::LivenessPhase { deadline_ms: heal + 60_000, stall_ms: Some(5_000) });
    h.t += 100;
    h.commit("a", 2, 0, 10);
    h.t += 700;
    h.removed("a", 2);
    h.world(WorldEvent::RunEnded);
    assert_eq!(stalls_in(&h), Vec::<String>::new());
}

/// A classic client `name` joins the consumer group as member `id` on static instance `i`.
fn classic_static_join(h: &mut H, name: &str, id: &str) {
    h.cg(ConsumerGroupEvent::MemberJoined {
        group: G.into(),
        member_id: id.into(),
        group_instance_id: Some("i".into()),
        client_id: name.into(),
        classic_protocol: true,
    });
}

/// Static twins inside a consumer group (`classic-twins-replace-each-other`): m2 runs as a
/// classic static member on instance `i`, and a second process, m3, starts on the same instance
/// and takes it over. Kafka's consumer group fences m2 on its next Heartbeat or SyncGroup, but
/// checks its OffsetCommit by member id only: a commit sent first is answered
/// UNKNOWN_MEMBER_ID, m2 resets its member id and rejoins, taking the instance back, and so on
/// while both run. The group never settles: its problems are the hazard's, proved by the take
/// back. A single takeover (a replacement) is no hazard, and once a twin stops the group's
/// problems are its own again.
#[test]
fn classic_twins_taking_an_instance_from_each_other_are_the_hazard_while_both_run() {
    let twins = |take_back: bool, stop: bool| {
        let mut h = clean();
        h.started("m2").started("m3");
        classic_static_join(&mut h, "m2", "c");
        classic_static_join(&mut h, "m3", "d");
        if take_back {
            classic_static_join(&mut h, "m2", "e");
        }
        if stop {
            h.world(WorldEvent::MemberStopped { member: "m3".into() });
        }
        check(&h.finish(&[(0, 10), (1, 10)]))
    };
    let stuck = |v: &crate::Verdict| v.anomalies.iter().any(|a| a.class == AnomalyClass::Stuck);
    let v = twins(true, false);
    assert!(!stuck(&v), "{:?}", v.anomalies);
    let hazards: Vec<_> = v.hazards.iter().map(|e| e.hazard).collect();
    assert_eq!(hazards, [crate::Hazard::ClassicTwinsReplaceEachOther]);
    assert_eq!(v.hazards[0].anomaly.class, AnomalyClass::Stuck);
    for (take_back, stop) in [(false, false), (true, true)] {
        let v = twins(take_back, stop);
        assert!(stuck(&v), "{take_back} {stop}");
        assert!(v.hazards.is_empty(), "{take_back} {stop}: {:?}", v.hazards);
    }
}

/// The `overtaken-rejoin` hazard (consumer_protocol_swarm seed 523): member b, removed, rejoins
/// at epoch 0, gives that request up and rejoins again; the coordinator answers the second at
/// epoch 3 with nothing yet (t[1] still on its way to it). The first, processed later, moves
/// t[1] to b in an answer b never reads, and b, reconciled to epoch 3 with nothing, never hears
/// of it: stuck, as Kafka would be, and the hazard's. Without the overtaken rejoin (the
/// coordinator gave b t[1] while no request of b's was being processed) it stays `stuck`.
#[test]
fn partitions_given_by_a_rejoin_processed_after_its_newer_retry_are_the_overtaken_rejoin_hazard() {
    use groupsim_history::wire::{Answer, Entry, Exchange, Request};
    let heartbeat = |epoch| Request::ConsumerHeartbeat {
        member_id: "b".into(),
        epoch,
        owned: (epoch == 0).then(Vec::new),
        instance: None,
    };
    let run = |overtaken: bool| {
        let mut h = clean();
        h.removed("b", 2).released("b", 2, &[1]);
        let lost = MemberEvent::Lost {
            member_id: "b".into(),
            generation: 2,
            partitions: parts(&[1]),
            reason: "FENCED_MEMBER_EPOCH".into(),
        };
        h.member("m1", lost);
        let given_up = h.t + 1;
        if overtaken {
            let call = heartbeat(0);
            h.h.record_wire(Entry::Unanswered {
                actor: "m1.0".into(),
                sent_ms: given_up,
                call,
                group: G.into(),
            });
        }
        h.group_epoch(3, &[("a", &[0]), ("b", &[1])]);
        h.cg(ConsumerGroupEvent::MemberJoined {
            group: G.into(),
            member_id: "b".into(),
            group_instance_id: None,
            client_id: "m1".into(),
            classic_protocol: false,
        });
        h.coordinator_epoch("b", 0, 3, "UNRELEASED_PARTITIONS");
        let answered = h.t;
        h.h.record_wire(Entry::Exchange(Exchange {
            actor: "m1.0".into(),
            sent_ms: given_up + 2,
            answered_ms: answered,
            request: heartbeat(0),
            answer: Answer::ConsumerHeartbeat {
                error: 0,
                member_id: "b".into(),
                epoch: 3,
                assignment: Some(Vec::new()),
                interval_ms: None,
            },
            group: G.into(),
            node: None,
            conn: None,
        }));
        h.member_epoch("m1", "b", 2, 3).owns("m1", "b", 3, &[]);
        h.coordinator_epoch("a", 2, 3, "STABLE").member_epoch("m0", "a", 2, 3);
        // The first rejoin, processed now: b is given t[1] in an answer nobody reads.
        h.coordinator_epoch("b", 3, 3, "STABLE").given("b", 3, &[1]);
        check(&h.finish(&[(0, 10), (1, 10)]))
    };
    let v = run(true);
    assert!(v.is_ok(), "{:?}", v.anomalies);
    let e = v.hazards.iter().find(|e| e.anomaly.class == AnomalyClass::Stuck);
    let e = e.unwrap_or_else(|| panic!("{:?}", v.hazards));
    assert_eq!(e.hazard, super::Hazard::OvertakenRejoin);
    assert!(e.anomaly.message.contains("owns - but its target is t[1]"), "{}", e.anomaly.message);
    let v = run(false);
    assert!(v.anomalies.iter().any(|a| a.class == AnomalyClass::Stuck), "{:?}", v.anomalies);
}

/// A coordinator move before the group's records were stored: the next coordinator finds
/// nothing in the log and starts the group afresh, so what the first gave (never stored, so
/// never answered) is nobody's, and giving it to another member splits nothing. Had the next
/// coordinator loaded the group with its owner, giving the partitions away would be a split.
#[test]
fn a_group_started_afresh_after_an_unload_owns_nothing_but_a_loaded_one_keeps_its_owners() {
    // How the group reaches the next coordinator: started afresh after the unload, loaded after
    // it, or loaded by the next broker in the instant before the last one's unload is recorded.
    #[derive(Clone, Copy, PartialEq)]
    enum Next {
        Afresh,
        Loaded,
        LoadedFirst,
    }
    let split = |next: Next| {
        let loaded = next != Next::Afresh;
        let mut h = H::new(2);
        h.group_epoch(1, &[("a", &[0, 1])]);
        h.join("m0", "a", 1, &[0, 1]);
        let unload = CoordinatorEvent::GroupUnloaded { group: G.into(), partition: 0 };
        if next != Next::LoadedFirst {
            h.coord(unload.clone());
        }
        if loaded {
            let t = h.tick();
            let event = CoordinatorEvent::ConsumerGroup(ConsumerGroupEvent::GroupLoaded {
                group: G.into(),
                partition: 0,
                group_epoch: 1,
                assignment_epoch: 1,
                members: vec![LoadedMember {
                    member_id: "a".into(),
                    group_instance_id: None,
                    member_epoch: 1,
                    owned: parts(&[0, 1]),
                    revoking: Vec::new(),
                    state: "STABLE".into(),
                    target: parts(&[0, 1]),
                    classic_protocol: false,
                }],
            });
            h.h.record(t, groupsim_history::EventKind::Coordinator { broker: 1, event });
        }
        if next == Next::LoadedFirst {
            h.coord(unload);
        }
        let epoch = if loaded { 2 } else { 1 };
        h.group_epoch(epoch, &[("b", &[0, 1])]);
        h.join("m1", "b", epoch, &[0, 1]);
        classes(&h.h.clone()).contains(&AnomalyClass::SplitAssignment)
    };
    assert!(!split(Next::Afresh), "a group started afresh owns nothing");
    assert!(split(Next::Loaded), "a loaded owner keeps its partitions");
    assert!(split(Next::LoadedFirst), "the last holder's unload after the load takes nothing");
}
