//! Each rule fires on a hand-made bad history, and a clean history passes.

use groupsim_history::{
    CoordinatorEvent, EventKind, GroupState, History, MemberAssignment, MemberEvent, WorldEvent,
};
use groupsim_wire::TopicPartition;

use super::{check, AnomalyClass};

pub(super) const G: &str = "g";

pub(super) fn tp(p: i32) -> TopicPartition {
    TopicPartition::new("t", p)
}

/// A tiny builder for histories: one group "g", one topic "t".
pub(super) struct H {
    pub(super) h: History,
    pub(super) t: u64,
}

impl H {
    pub(super) fn new(partitions: i32) -> Self {
        let mut h = History::new();
        h.world(0, WorldEvent::TopicCreated { topic: "t".into(), partitions });
        H { h, t: 0 }
    }
    pub(super) fn tick(&mut self) -> u64 {
        self.t += 10;
        self.t
    }
    pub(super) fn coord(&mut self, e: CoordinatorEvent) -> &mut Self {
        let t = self.tick();
        self.h.record(t, EventKind::Coordinator { broker: 0, event: e });
        self
    }
    pub(super) fn member(&mut self, name: &str, e: MemberEvent) -> &mut Self {
        let t = self.tick();
        self.h.record(t, EventKind::Member { member: name.into(), event: e });
        self
    }
    pub(super) fn world(&mut self, e: WorldEvent) -> &mut Self {
        let t = self.tick();
        self.h.world(t, e);
        self
    }
    pub(super) fn started(&mut self, name: &str) -> &mut Self {
        self.world(WorldEvent::MemberStarted {
            member: name.into(),
            group: G.into(),
            host: "c".into(),
        })
    }
    pub(super) fn state(&mut self, to: GroupState, generation: i32) -> &mut Self {
        self.coord(CoordinatorEvent::GroupStateChanged {
            group: G.into(),
            from: GroupState::Empty,
            to,
            generation,
        })
    }
    /// A complete generation: GenerationStarted, AssignmentStored, Stable, and each member's
    /// Joined + Assigned events. `assign` lists (name, member id, partitions).
    pub(super) fn generation(
        &mut self,
        generation: i32,
        assign: &[(&str, &str, &[i32])],
    ) -> &mut Self {
        self.coord(CoordinatorEvent::GenerationStarted {
            group: G.into(),
            generation,
            protocol: Some("range".into()),
            leader: Some(assign[0].1.into()),
            members: assign.iter().map(|a| a.1.to_string()).collect(),
        });
        self.coord(CoordinatorEvent::AssignmentStored {
            group: G.into(),
            generation,
            assignments: assign
                .iter()
                .map(|(_, id, ps)| MemberAssignment {
                    member_id: id.to_string(),
                    partitions: ps.iter().map(|p| tp(*p)).collect(),
                })
                .collect(),
        });
        self.state(GroupState::Stable, generation);
        for (name, id, ps) in assign {
            self.member(
                name,
                MemberEvent::Joined {
                    member_id: id.to_string(),
                    generation,
                    leader: assign[0].1.into(),
                    protocol: "range".into(),
                    is_leader: id == &assign[0].1,
                },
            );
            self.member(
                name,
                MemberEvent::Assigned {
                    member_id: id.to_string(),
                    generation,
                    partitions: ps.iter().map(|p| tp(*p)).collect(),
                },
            );
        }
        self
    }
    pub(super) fn processed(
        &mut self,
        name: &str,
        id: &str,
        generation: i32,
        p: i32,
        first: i64,
        last: i64,
    ) -> &mut Self {
        self.member(
            name,
            MemberEvent::RecordsProcessed {
                member_id: id.into(),
                generation,
                partition: tp(p),
                first_offset: first,
                last_offset: last,
            },
        )
    }
    /// A commit validated and appended at once (recorded at the next tick).
    pub(super) fn commit(&mut self, id: &str, generation: i32, p: i32, offset: i64) -> &mut Self {
        let validated_at = self.t + 10;
        self.commit_validated_at(id, generation, p, offset, validated_at)
    }
    /// A commit recorded now (its append completed) that the coordinator validated at
    /// `validated_at`.
    pub(super) fn commit_validated_at(
        &mut self,
        id: &str,
        generation: i32,
        p: i32,
        offset: i64,
        validated_at: u64,
    ) -> &mut Self {
        self.coord(CoordinatorEvent::OffsetCommitAccepted {
            group: G.into(),
            member_id: id.into(),
            generation,
            partition: tp(p),
            offset,
            validated_at_ms: validated_at,
        })
    }
    /// The join phase ended without member `id`: removed by the rebalance timeout.
    fn rebalance_timeout_removes(&mut self, id: &str) -> &mut Self {
        self.coord(CoordinatorEvent::MemberRemoved {
            group: G.into(),
            member_id: id.into(),
            reason: groupsim_history::RemovalReason::RebalanceTimeout,
        })
    }
    /// A generation starts with `members` (the first leads); its assignment is not stored yet.
    pub(super) fn generation_started(&mut self, generation: i32, members: &[&str]) -> &mut Self {
        self.coord(CoordinatorEvent::GenerationStarted {
            group: G.into(),
            generation,
            protocol: Some("range".into()),
            leader: members.first().map(|m| m.to_string()),
            members: members.iter().map(|m| m.to_string()).collect(),
        })
    }
    /// Static membership: member id `new` takes instance `instance` over from `old` (Kafka
    /// fences the old id and adds the new one).
    pub(super) fn static_takeover(&mut self, old: &str, new: &str, instance: &str) -> &mut Self {
        self.coord(CoordinatorEvent::MemberRemoved {
            group: G.into(),
            member_id: old.into(),
            reason: groupsim_history::RemovalReason::Fenced,
        });
        self.coord(CoordinatorEvent::MemberAdded {
            group: G.into(),
            member_id: new.into(),
            group_instance_id: Some(instance.into()),
            client_id: "m".into(),
        })
    }
    pub(super) fn produced(&mut self, p: i32, count: i64) -> &mut Self {
        self.world(WorldEvent::Produced { partition: tp(p), base_offset: 0, count })
    }
    pub(super) fn finish(&mut self, log_ends: &[(i32, i64)]) -> History {
        self.world(WorldEvent::ProducerStopped {
            log_end_offsets: log_ends.iter().map(|(p, e)| (tp(*p), *e)).collect(),
        });
        let deadline = self.t + 1;
        self.world(WorldEvent::LivenessPhase { deadline_ms: deadline, stall_ms: None });
        self.world(WorldEvent::RunEnded);
        self.h.clone()
    }
}

/// Two members, one partition each, everything processed and committed.
pub(super) fn clean() -> H {
    let mut h = H::new(2);
    h.started("m0").started("m1");
    h.state(GroupState::PreparingRebalance, 0);
    h.generation(1, &[("m0", "a", &[0]), ("m1", "b", &[1])]);
    h.produced(0, 10).produced(1, 10);
    h.processed("m0", "a", 1, 0, 0, 9).processed("m1", "b", 1, 1, 0, 9);
    h.commit("a", 1, 0, 10).commit("b", 1, 1, 10);
    h
}

/// A coordinator's load of `clean()`'s group from offsets partition `partition`: Stable at
/// generation 1, a on t-0 and b on t-1, both committed at 10.
pub(super) fn loaded_generation_1(partition: i32) -> CoordinatorEvent {
    CoordinatorEvent::GroupLoaded {
        group: G.into(),
        partition,
        state: GroupState::Stable,
        generation: 1,
        protocol: Some("range".into()),
        leader: Some("a".into()),
        members: vec!["a".into(), "b".into()],
        assignments: vec![
            MemberAssignment { member_id: "a".into(), partitions: vec![tp(0)] },
            MemberAssignment { member_id: "b".into(), partitions: vec![tp(1)] },
        ],
        offsets: vec![(tp(0), 10), (tp(1), 10)],
    }
}

pub(super) fn classes(h: &History) -> Vec<AnomalyClass> {
    check(h).anomalies.iter().map(|a| a.class).collect()
}

#[test]
fn clean_history_passes() {
    let h = clean().finish(&[(0, 10), (1, 10)]);
    let v = check(&h);
    assert!(v.is_ok(), "{:?}", v.anomalies);
    assert_eq!(v.stats.rebalances, 1);
    assert_eq!(v.stats.commits_accepted, 2);
    assert_eq!(v.stats.records_processed, 20);
}

#[test]
fn regression_is_flagged() {
    let mut h = clean();
    h.commit("a", 1, 0, 4);
    let got = classes(&h.finish(&[(0, 10), (1, 10)]));
    assert!(got.contains(&AnomalyClass::OffsetRegression), "{got:?}");
}

#[test]
fn duplicate_commit_is_flagged_when_records_are_covered_twice() {
    let mut h = clean();
    h.commit("a", 1, 0, 4).commit("a", 1, 0, 10);
    let v = check(&h.finish(&[(0, 10), (1, 10)]));
    let dup =
        v.anomalies.iter().find(|a| a.class == AnomalyClass::DuplicateCommit).expect("duplicate");
    assert_eq!(dup.partition, Some(tp(0)));
    assert!(dup.events.len() >= 2, "names the earlier commit and this one");
}

#[test]
fn commit_of_unprocessed_records_is_uncovered() {
    let mut h = clean();
    h.produced(0, 10);
    // Member a processed only up to 14 but commits 20: records 15..20 are lost.
    h.processed("m0", "a", 1, 0, 10, 14).commit("a", 1, 0, 20);
    let v = check(&h.finish(&[(0, 20), (1, 10)]));
    let a =
        v.anomalies.iter().find(|a| a.class == AnomalyClass::UncoveredCommit).expect("uncovered");
    assert!(a.message.contains("15..20"), "{}", a.message);
}

#[test]
fn processing_in_another_generation_does_not_cover_a_commit() {
    // An eager member gives every partition up before it rejoins: what it processed before
    // the revoke belongs to a tenure that ended, so it cannot vouch for a later commit.
    let mut h = H::new(1);
    h.started("m0");
    h.generation(1, &[("m0", "a", &[0])]);
    h.produced(0, 10).processed("m0", "a", 1, 0, 0, 9);
    h.member(
        "m0",
        MemberEvent::Revoked { member_id: "a".into(), generation: 1, partitions: vec![tp(0)] },
    );
    h.generation(2, &[("m0", "a", &[0])]);
    h.commit("a", 2, 0, 10);
    assert!(classes(&h.finish(&[(0, 10)])).contains(&AnomalyClass::UncoveredCommit));
}

#[test]
fn a_cooperative_member_may_commit_a_partition_it_is_revoking_under_the_generation_that_revokes_it()
{
    // KIP-429's first rebalance assigns a moving partition to nobody; its owner revokes it after
    // SyncGroup and commits its progress under that new generation (Kafka accepts: the member
    // and generation are current). Another member owning it would still be unowned.
    let mut h = H::new(2);
    h.started("m0").started("m1");
    h.generation(1, &[("m0", "a", &[0, 1]), ("m1", "b", &[])]);
    h.produced(0, 10).processed("m0", "a", 1, 0, 0, 9);
    h.generation(2, &[("m0", "a", &[1]), ("m1", "b", &[])]);
    h.commit("a", 2, 0, 10);
    let got = classes(&h.finish(&[(0, 10)]));
    assert!(!got.contains(&AnomalyClass::UnownedCommit), "{got:?}");
    assert!(!got.contains(&AnomalyClass::UncoveredCommit), "{got:?}");
}

#[test]
fn a_revoking_members_commit_accepted_after_it_gave_the_partition_up_is_judged_when_validated_or_sent(
) {
    // A cooperative member commits in its revoke callback, under the generation that takes the
    // partition away; the connection drops, the member takes the commit as failed and revokes,
    // but the request was on the wire: the coordinator validates it (before or after the
    // revoke) and its append lands afterwards. The member held the partition when it sent the
    // commit, and processed what it covers.
    #[derive(Clone, Copy)]
    enum Case {
        ValidatedWhileHeld,
        SentWhileHeld,
        Neither,
    }
    let revoking = |case: Case| {
        let mut h = H::new(2);
        h.started("m0").started("m1");
        h.generation(1, &[("m0", "a", &[0, 1]), ("m1", "b", &[])]);
        h.produced(0, 10).processed("m0", "a", 1, 0, 0, 9);
        h.generation(2, &[("m0", "a", &[1]), ("m1", "b", &[])]);
        if matches!(case, Case::SentWhileHeld) {
            let sent = MemberEvent::CommitSent {
                member_id: "a".into(),
                generation: 2,
                partition: tp(0),
                offset: 10,
            };
            h.member("m0", sent);
        }
        let held_at = h.t + 1;
        h.member(
            "m0",
            MemberEvent::Revoked { member_id: "a".into(), generation: 2, partitions: vec![tp(0)] },
        );
        let validated = match case {
            Case::ValidatedWhileHeld => held_at,
            Case::SentWhileHeld | Case::Neither => h.t + 5,
        };
        h.commit_validated_at("a", 2, 0, 10, validated);
        classes(&h.finish(&[(0, 10)]))
    };
    for case in [Case::ValidatedWhileHeld, Case::SentWhileHeld] {
        let got = revoking(case);
        assert!(!got.contains(&AnomalyClass::UnownedCommit), "{got:?}");
        assert!(!got.contains(&AnomalyClass::UncoveredCommit), "{got:?}");
    }
    // Neither sent nor validated while held: the same commit is neither owned nor covered.
    let got = revoking(Case::Neither);
    assert!(got.contains(&AnomalyClass::UnownedCommit), "{got:?}");
    assert!(got.contains(&AnomalyClass::UncoveredCommit), "{got:?}");
}

#[test]
fn a_partition_kept_across_generations_covers_what_was_processed_before_the_new_one() {
    // KIP-429: a cooperative member keeps a partition through the rebalance, keeps its position
    // and commits, under the new generation, what it processed under the old one. That is
    // Kafka's contract, not a lost record.
    let mut h = H::new(1);
    h.started("m0");
    h.generation(1, &[("m0", "a", &[0])]);
    h.produced(0, 10).processed("m0", "a", 1, 0, 0, 9);
    h.generation(2, &[("m0", "a", &[0])]);
    h.commit("a", 2, 0, 10);
    let got = classes(&h.finish(&[(0, 10)]));
    assert!(!got.contains(&AnomalyClass::UncoveredCommit), "{got:?}");
}

#[test]
fn commit_under_stale_generation_is_a_zombie() {
    let mut h = clean();
    h.generation(2, &[("m1", "b", &[0, 1])]);
    h.processed("m0", "a", 1, 0, 10, 11).commit("a", 1, 0, 12);
    let got = classes(&h.finish(&[(0, 12), (1, 10)]));
    assert!(got.contains(&AnomalyClass::ZombieCommit), "{got:?}");
}

#[test]
fn commit_from_removed_member_is_a_zombie() {
    let mut h = clean();
    h.coord(CoordinatorEvent::MemberRemoved {
        group: G.into(),
        member_id: "a".into(),
        reason: groupsim_history::RemovalReason::SessionTimeout,
    });
    h.produced(0, 2).processed("m0", "a", 1, 0, 10, 11).commit("a", 1, 0, 12);
    let v = check(&h.finish(&[(0, 12), (1, 10)]));
    let z = v.anomalies.iter().find(|a| a.class == AnomalyClass::ZombieCommit).expect("zombie");
    assert_eq!(z.events.len(), 2, "names the commit and the removal");
}

/// Kafka validates an OffsetCommit when it arrives and applies it when its offsets-log append
/// completes, without checking again (GroupMetadataManager.storeOffsets' putCacheCallback). A
/// member that commits just before the rebalance timeout removes it (a slow revoke callback,
/// then the commit) has its commit land after it is gone and a new generation has begun: correct
/// Kafka behaviour, so the commit is judged by the group as it stood when it was validated.
#[test]
fn a_commit_validated_in_its_generation_whose_append_outlives_the_member_is_not_a_zombie() {
    let mut h = clean();
    h.produced(0, 2).processed("m0", "a", 1, 0, 10, 11);
    let validated_at = h.t + 1;
    h.rebalance_timeout_removes("a");
    h.generation_started(2, &["b"]);
    h.commit_validated_at("a", 1, 0, 12, validated_at);
    // (The hand-made history stops before the group recovers: only `stuck` may be reported.)
    let got = classes(&h.finish(&[(0, 12), (1, 10)]));
    assert!(got.iter().all(|c| *c == AnomalyClass::Stuck), "{got:?}");
}

/// The same commit validated after the member's removal is a zombie's, whenever it lands: the
/// coordinator should have refused it (`coordinator-skips-generation-check`).
#[test]
fn a_commit_validated_after_the_member_was_removed_is_a_zombie() {
    let mut h = clean();
    h.produced(0, 2).processed("m0", "a", 1, 0, 10, 11);
    h.rebalance_timeout_removes("a");
    let removed = h.t;
    h.generation_started(2, &["b"]);
    // Validated between the removal and the next generation: not a member of generation 1.
    h.commit_validated_at("a", 1, 0, 12, removed + 1);
    let v = check(&h.finish(&[(0, 12), (1, 10)]));
    let z = v.anomalies.iter().find(|a| a.class == AnomalyClass::ZombieCommit).expect("zombie");
    assert!(z.message.contains("not a member of generation 1"), "{}", z.message);
    assert_eq!(z.events.len(), 2, "names the commit and the removal: {z:?}");

    // Validated once generation 2 had begun: a stale generation.
    let mut h = clean();
    h.produced(0, 2).processed("m0", "a", 1, 0, 10, 11);
    h.generation_started(2, &["b"]);
    let started = h.t;
    h.commit_validated_at("a", 1, 0, 12, started + 5);
    let got = check(&h.finish(&[(0, 12), (1, 10)]));
    let z = got.anomalies.iter().find(|a| a.class == AnomalyClass::ZombieCommit).expect("zombie");
    assert!(z.message.contains("while the group was in generation 2"), "{}", z.message);
}

/// Events are stamped in milliseconds: a commit validated in the very millisecond its member
/// was removed may have been validated first, so it is not a zombie's.
#[test]
fn a_commit_validated_in_the_millisecond_of_the_removal_is_not_a_zombie() {
    let mut h = clean();
    h.produced(0, 2).processed("m0", "a", 1, 0, 10, 11);
    h.rebalance_timeout_removes("a");
    let removed = h.t;
    h.commit_validated_at("a", 1, 0, 12, removed);
    // (The hand-made history stops before the group recovers: only `stuck` may be reported.)
    let got = classes(&h.finish(&[(0, 12), (1, 10)]));
    assert!(got.iter().all(|c| *c == AnomalyClass::Stuck), "{got:?}");
}

/// A cooperative member revoking a partition commits it under the generation that takes it
/// away; if it finishes revoking while the commit's append is replicated, the commit still held
/// the partition when it was validated.
#[test]
fn a_revoking_members_commit_that_lands_after_the_revoke_is_not_unowned() {
    let mut h = H::new(2);
    h.started("m0").started("m1");
    h.generation(1, &[("m0", "a", &[0, 1]), ("m1", "b", &[])]);
    h.produced(0, 10).processed("m0", "a", 1, 0, 0, 9);
    h.generation(2, &[("m0", "a", &[1]), ("m1", "b", &[])]);
    let validated_at = h.t + 1;
    h.member(
        "m0",
        MemberEvent::Revoked { member_id: "a".into(), generation: 2, partitions: vec![tp(0)] },
    );
    h.commit_validated_at("a", 2, 0, 10, validated_at);
    let got = classes(&h.finish(&[(0, 10)]));
    assert!(!got.contains(&AnomalyClass::UnownedCommit), "{got:?}");
    assert!(!got.contains(&AnomalyClass::UncoveredCommit), "{got:?}");

    // Validated after the revoke, it is unowned.
    let mut h = H::new(2);
    h.started("m0").started("m1");
    h.generation(1, &[("m0", "a", &[0, 1]), ("m1", "b", &[])]);
    h.produced(0, 10).processed("m0", "a", 1, 0, 0, 9);
    h.generation(2, &[("m0", "a", &[1]), ("m1", "b", &[])]);
    h.member(
        "m0",
        MemberEvent::Revoked { member_id: "a".into(), generation: 2, partitions: vec![tp(0)] },
    );
    let revoked = h.t;
    h.commit_validated_at("a", 2, 0, 10, revoked + 1);
    let got = classes(&h.finish(&[(0, 10)]));
    assert!(got.contains(&AnomalyClass::UnownedCommit), "{got:?}");
}

#[test]
fn commit_for_partition_owned_by_another_member_is_unowned() {
    let mut h = clean();
    h.produced(1, 2).processed("m0", "a", 1, 1, 10, 11).commit("a", 1, 1, 12);
    let got = classes(&h.finish(&[(0, 10), (1, 12)]));
    assert!(got.contains(&AnomalyClass::UnownedCommit), "{got:?}");
}

#[test]
fn partition_assigned_twice_in_a_generation_is_split() {
    let mut h = H::new(2);
    h.started("m0").started("m1");
    h.generation(1, &[("m0", "a", &[0, 1]), ("m1", "b", &[1])]);
    let got = classes(&h.finish(&[]));
    assert!(got.contains(&AnomalyClass::SplitAssignment), "{got:?}");
}

#[test]
fn resuming_below_an_acknowledged_commit_is_a_lost_commit() {
    let mut h = clean();
    h.generation(2, &[("m0", "a", &[0, 1]), ("m1", "b", &[])]);
    h.member(
        "m0",
        MemberEvent::PositionInitialized {
            member_id: "a".into(),
            generation: 2,
            partition: tp(1),
            committed: Some(3),
            position: 3,
            reset_after: None,
        },
    );
    let v = check(&h.finish(&[(0, 10), (1, 10)]));
    let lost = v.anomalies.iter().find(|a| a.class == AnomalyClass::LostCommit).expect("lost");
    assert_eq!(lost.partition, Some(tp(1)));
    assert_eq!(lost.events.len(), 3);
}

#[test]
fn group_not_caught_up_at_deadline_is_stuck() {
    let h = clean().finish(&[(0, 15), (1, 10)]);
    let v = check(&h);
    let s = v.anomalies.iter().find(|a| a.class == AnomalyClass::Stuck).expect("stuck");
    assert!(s.message.contains("committed 10 < log end 15"), "{}", s.message);
}

#[test]
fn live_member_outside_the_last_generation_is_stuck() {
    let mut h = clean();
    h.started("m2");
    let got = classes(&h.finish(&[(0, 10), (1, 10)]));
    assert_eq!(got, vec![AnomalyClass::Stuck]);
}

#[test]
fn group_left_rebalancing_is_stuck() {
    let mut h = clean();
    h.state(GroupState::PreparingRebalance, 1);
    let v = check(&h.finish(&[(0, 10), (1, 10)]));
    assert!(v
        .anomalies
        .iter()
        .any(|a| a.class == AnomalyClass::Stuck && a.message.contains("not Stable")));
}

#[test]
fn reprocessing_is_counted_not_flagged() {
    let mut h = clean();
    h.processed("m1", "b", 1, 0, 5, 9);
    let v = check(&h.finish(&[(0, 10), (1, 10)]));
    assert!(v.is_ok());
    assert_eq!(v.stats.records_reprocessed, 5);
}

#[test]
fn anomaly_names_round_trip() {
    for c in AnomalyClass::ALL {
        assert_eq!(AnomalyClass::from_name(c.name()), Some(c));
    }
}

#[test]
fn static_member_replacement_inherits_the_generation_and_assignment() {
    let mut h = clean();
    h.coord(CoordinatorEvent::MemberRemoved {
        group: G.into(),
        member_id: "a".into(),
        reason: groupsim_history::RemovalReason::Fenced,
    });
    // "a" was added with an instance id in a real run; declare it so the checker knows.
    let mut h2 = H::new(2);
    h2.coord(CoordinatorEvent::MemberAdded {
        group: G.into(),
        member_id: "a".into(),
        group_instance_id: Some("i0".into()),
        client_id: "m0".into(),
    });
    h2.started("m0").started("m1");
    h2.generation(1, &[("m0", "a", &[0]), ("m1", "b", &[1])]);
    h2.produced(0, 10).produced(1, 10);
    h2.processed("m0", "a", 1, 0, 0, 4).commit("a", 1, 0, 5);
    h2.coord(CoordinatorEvent::MemberRemoved {
        group: G.into(),
        member_id: "a".into(),
        reason: groupsim_history::RemovalReason::Fenced,
    });
    h2.coord(CoordinatorEvent::MemberAdded {
        group: G.into(),
        member_id: "a2".into(),
        group_instance_id: Some("i0".into()),
        client_id: "m0".into(),
    });
    h2.member(
        "m0",
        MemberEvent::Joined {
            member_id: "a2".into(),
            generation: 1,
            leader: "a".into(),
            protocol: "range".into(),
            is_leader: false,
        },
    );
    h2.processed("m0", "a2", 1, 0, 5, 9).commit("a2", 1, 0, 10);
    h2.processed("m1", "b", 1, 1, 0, 9).commit("b", 1, 1, 10);
    let v = check(&h2.finish(&[(0, 10), (1, 10)]));
    assert!(v.is_ok(), "{:?}", v.anomalies);
    // Without the instance id, the same commit is a zombie's.
    h.processed("m0", "a", 1, 0, 10, 11);
    h.commit("a", 1, 0, 12);
    assert!(classes(&h.finish(&[(0, 12), (1, 10)])).contains(&AnomalyClass::ZombieCommit));
}

/// Regression (static_churn seed 105, when a static takeover was answered before it was
/// stored): a static member's commit validated in the millisecond its twin's JoinGroup replaced
/// its member id, and appended after, when the generation's assignment already named the new id
/// in the checker's view. Kafka validated the commit while the old id held the place (it would
/// have refused it FENCED_INSTANCE_ID after): it is the replaced member's, not a zombie's or an
/// unowned one.
#[test]
fn a_commit_validated_in_the_millisecond_of_a_static_replacement_is_the_replaced_members() {
    // (The hand-made history stops before the new process joins: only `stuck` may be reported.)
    let got = commit_around_a_static_replacement(0);
    assert!(got.iter().all(|c| *c == AnomalyClass::Stuck), "{got:?}");
    // Validated a millisecond after the replacement, the same commit is a zombie's.
    let got = commit_around_a_static_replacement(1);
    assert!(got.contains(&AnomalyClass::ZombieCommit), "{got:?}");
}

/// Static member `a` (instance `i0`) is replaced by `a2`; a commit of `a`'s, validated
/// `after_ms` after the replacement, lands after it. The classes the checker reports.
fn commit_around_a_static_replacement(after_ms: u64) -> Vec<AnomalyClass> {
    let added = |member_id: &str| CoordinatorEvent::MemberAdded {
        group: G.into(),
        member_id: member_id.into(),
        group_instance_id: Some("i0".into()),
        client_id: "m0".into(),
    };
    let mut h = H::new(2);
    h.coord(added("a"));
    h.started("m0").started("m1");
    h.generation(1, &[("m0", "a", &[0]), ("m1", "b", &[1])]);
    h.produced(0, 10).produced(1, 10);
    h.processed("m0", "a", 1, 0, 0, 9);
    h.coord(CoordinatorEvent::MemberRemoved {
        group: G.into(),
        member_id: "a".into(),
        reason: groupsim_history::RemovalReason::Fenced,
    });
    let validated = h.t + after_ms;
    h.coord(added("a2"));
    h.commit_validated_at("a", 1, 0, 10, validated);
    h.processed("m1", "b", 1, 1, 0, 9).commit("b", 1, 1, 10);
    classes(&h.finish(&[(0, 10), (1, 10)]))
}

#[test]
fn commit_acknowledged_to_a_member_but_missing_later_is_a_lost_commit() {
    // The coordinator acknowledged offset 10 to member a (its accepted event never made it to
    // the log), the group moved, and the next owner resumed from 4.
    let mut h = H::new(1);
    h.started("m0").started("m1");
    h.generation(1, &[("m0", "a", &[0]), ("m1", "b", &[])]);
    h.produced(0, 10).processed("m0", "a", 1, 0, 0, 3).commit("a", 1, 0, 4);
    h.processed("m0", "a", 1, 0, 4, 9);
    h.member(
        "m0",
        MemberEvent::CommitAcked {
            member_id: "a".into(),
            generation: 1,
            partition: tp(0),
            offset: 10,
        },
    );
    h.generation(2, &[("m1", "b", &[0]), ("m0", "a", &[])]);
    h.member(
        "m1",
        MemberEvent::PositionInitialized {
            member_id: "b".into(),
            generation: 2,
            partition: tp(0),
            committed: Some(4),
            position: 4,
            reset_after: None,
        },
    );
    let v = check(&h.finish(&[(0, 10)]));
    let lost =
        v.anomalies.iter().find(|a| a.class == AnomalyClass::LostCommit).expect("lost-commit");
    assert!(lost.message.contains("offset 10"), "{}", lost.message);
}

#[test]
fn acknowledged_commit_missing_from_a_load_is_a_lost_commit() {
    let loaded = |offset: i64| CoordinatorEvent::GroupLoaded {
        group: G.into(),
        partition: 7,
        state: GroupState::Stable,
        generation: 1,
        protocol: Some("range".into()),
        leader: Some("a".into()),
        members: vec!["a".into(), "b".into()],
        assignments: vec![],
        offsets: vec![(tp(0), offset)],
    };
    let acked = MemberEvent::CommitAcked {
        member_id: "a".into(),
        generation: 1,
        partition: tp(0),
        offset: 10,
    };
    let mut bad = clean();
    bad.member("m0", acked.clone()).coord(loaded(4));
    let v = check(&bad.finish(&[(0, 10), (1, 10)]));
    let lost =
        v.anomalies.iter().find(|a| a.class == AnomalyClass::LostCommit).expect("lost-commit");
    assert_eq!(lost.events.len(), 2, "names the ack and the load");
    let mut good = clean();
    good.member("m0", acked).coord(loaded(10));
    assert!(check(&good.finish(&[(0, 10), (1, 10)])).is_ok());
}

#[test]
fn old_coordinators_unload_recorded_after_the_new_load_does_not_kill_the_group() {
    // Within one step the new coordinator (broker 2) may record its load before the old one
    // (broker 0) records its unload: the group is Stable at broker 2, not Dead.
    let mut h = clean();
    let t = h.tick();
    h.h.record(t, EventKind::Coordinator { broker: 2, event: loaded_generation_1(42) });
    h.coord(CoordinatorEvent::GroupStateChanged {
        group: G.into(),
        from: GroupState::Stable,
        to: GroupState::Dead,
        generation: 1,
    });
    let v = check(&h.finish(&[(0, 10), (1, 10)]));
    assert!(v.is_ok(), "{:?}", v.anomalies);
    // Without the load, a Dead group at the end is stuck.
    let mut dead = clean();
    dead.state(GroupState::Dead, 1);
    assert!(classes(&dead.finish(&[(0, 10), (1, 10)])).contains(&AnomalyClass::Stuck));
}

#[test]
fn a_group_created_afresh_on_a_new_coordinator_follows_that_coordinator() {
    // The old coordinator (broker 0) unloads the group; the new one (broker 1) never loaded it
    // from the log (nothing stored) and creates it afresh: its transitions are the group's.
    let mut h = clean();
    h.state(GroupState::Dead, 1);
    for to in [GroupState::PreparingRebalance, GroupState::CompletingRebalance, GroupState::Stable]
    {
        let t = h.tick();
        h.h.record(
            t,
            EventKind::Coordinator {
                broker: 1,
                event: CoordinatorEvent::GroupStateChanged {
                    group: G.into(),
                    from: GroupState::Empty,
                    to,
                    generation: 1,
                },
            },
        );
    }
    let v = check(&h.finish(&[(0, 10), (1, 10)]));
    assert!(v.is_ok(), "{:?}", v.anomalies);
}

/// `m0` (member `a`, generation 1) resets after ILLEGAL_GENERATION; `about` is the membership
/// the answered request was sent under, when it was not generation 1's.
fn reset_after(about: Option<groupsim_history::SentUnder>) -> History {
    let mut h = clean();
    h.member(
        "m0",
        MemberEvent::GenerationReset {
            member_id: "a".into(),
            generation: 1,
            error: "ILLEGAL_GENERATION".into(),
            reset_member_id: false,
            answer_about: about,
        },
    );
    h.finish(&[(0, 10), (1, 10)])
}

#[test]
fn a_reset_on_an_answer_about_the_current_generation_is_not_flagged() {
    assert!(!classes(&reset_after(None)).contains(&AnomalyClass::StaleReset));
}

#[test]
fn a_reset_on_an_answer_about_an_earlier_generation_is_a_stale_reset() {
    // Mechanism (KAFKA-9823): the answer concerned generation 0; the member holds generation 1
    // and drops it anyway, losing its assignment and forcing a needless rebalance.
    let h = reset_after(Some(groupsim_history::SentUnder { member_id: "a".into(), generation: 0 }));
    let v = check(&h);
    let a = v.anomalies.iter().find(|a| a.class == AnomalyClass::StaleReset).expect("flagged");
    assert!(
        a.message.contains("generation 1") && a.message.contains("generation 0"),
        "{}",
        a.message
    );
    assert_eq!(
        a.events,
        vec![h.len() - 4],
        "proved by the reset event (three run-end events follow)"
    );
}

/// A static group where `a` (instance i0) leads generation 1 with `assign`, t grows to three
/// partitions, and a2 takes i0 over in Stable generation 1 as its leader with SkipAssignment
/// (KIP-814): it joins generation 1 as leader and assigns nothing.
fn static_leader_replaced_after_growth(assign: &[(&str, &str, &[i32])]) -> crate::Verdict {
    let mut h = H::new(2);
    h.coord(CoordinatorEvent::MemberAdded {
        group: G.into(),
        member_id: "a".into(),
        group_instance_id: Some("i0".into()),
        client_id: "m0".into(),
    });
    h.started("m0").started("m1");
    h.generation(1, assign);
    h.produced(0, 10).produced(1, 10);
    h.world(WorldEvent::PartitionsAdded { topic: "t".into(), partitions: 3 });
    h.static_takeover("a", "a2", "i0");
    h.member(
        "m0",
        MemberEvent::Joined {
            member_id: "a2".into(),
            generation: 1,
            leader: "a2".into(),
            protocol: "range".into(),
            is_leader: true,
        },
    );
    for (name, id, parts) in assign {
        let id = if *id == "a" { "a2" } else { id };
        for p in *parts {
            h.processed(name, id, 1, *p, 0, 9).commit(id, 1, *p, 10);
        }
    }
    check(&h.finish(&[(0, 10), (1, 10), (2, 0)]))
}

/// mixed_protocol_swarm seeds 3569, 3996 and 4628: a partition added after the generation's
/// assignment, while its leader's process stopped before it rejoined, stays unassigned when the
/// leader's replacement is told to skip the assignment: the named hazard.
#[test]
fn a_partition_added_before_a_static_leader_skipped_the_assignment_is_the_hazard() {
    let v = static_leader_replaced_after_growth(&[("m0", "a", &[0]), ("m1", "b", &[1])]);
    assert!(v.is_ok(), "{:?}", v.anomalies);
    let e = v.hazards.first().expect("t-2 unassigned is shown as a hazard");
    assert_eq!(e.hazard, crate::Hazard::StaticLeaderSkipsNewPartitions);
    assert!(e.anomaly.message.contains("t-2 is unassigned"), "{:?}", e.anomaly);
}

/// The hazard covers grown partitions only: a partition the generation's assignment lacks from
/// the start is the assignor's fault, whoever leads.
#[test]
fn an_original_partition_missing_from_the_assignment_is_still_stuck() {
    let v = static_leader_replaced_after_growth(&[("m0", "a", &[0]), ("m1", "b", &[])]);
    assert!(v.anomalies.iter().any(|a| a.class == AnomalyClass::Stuck), "{:?}", v.anomalies);
}

/// A cooperative group: generation 1 gives b t-1; generation 2 gives t-1 to nobody (b must
/// revoke it first); then, if `replaced`, b's process is replaced under its instance (static, no
/// rebalance) before it rejoined for the follow-up rebalance. At the deadline t-1 is unassigned.
fn revoked_then(replaced: bool) -> crate::Verdict {
    let mut h = H::new(2);
    h.coord(CoordinatorEvent::MemberAdded {
        group: G.into(),
        member_id: "b".into(),
        group_instance_id: Some("i1".into()),
        client_id: "m1".into(),
    });
    h.started("m0").started("m1");
    h.generation(1, &[("m0", "a", &[0]), ("m1", "b", &[1])]);
    h.generation(2, &[("m0", "a", &[0]), ("m1", "b", &[])]);
    h.produced(0, 10).produced(1, 10);
    h.processed("m0", "a", 2, 0, 0, 9).commit("a", 2, 0, 10);
    if replaced {
        h.static_takeover("b", "b2", "i1");
        h.member(
            "m1",
            MemberEvent::Joined {
                member_id: "b2".into(),
                generation: 2,
                leader: "a".into(),
                protocol: "range".into(),
                is_leader: false,
            },
        );
        h.member(
            "m1",
            MemberEvent::Assigned { member_id: "b2".into(), generation: 2, partitions: vec![] },
        );
    }
    check(&h.finish(&[(0, 10), (1, 0)]))
}

/// mixed_protocol_swarm seeds 146 and 507: the member that revoked partitions in a cooperative
/// rebalance was replaced before it rejoined, so no follow-up rebalance came: the named hazard.
#[test]
fn partitions_revoked_by_a_member_replaced_before_it_rejoined_are_the_hazard() {
    let v = revoked_then(true);
    assert!(v.is_ok(), "{:?}", v.anomalies);
    let e = v.hazards.first().expect("t-1 unassigned is shown as a hazard");
    assert_eq!(e.hazard, crate::Hazard::ReplacedMemberSkipsFollowUpRebalance);
}

/// Without the replacement the revoking member would rejoin: t-1 left to nobody is stuck.
#[test]
fn partitions_revoked_and_never_handed_out_without_a_replacement_are_stuck() {
    let v = revoked_then(false);
    assert!(v.hazards.is_empty(), "{:?}", v.hazards);
    assert!(v.anomalies.iter().any(|a| a.class == AnomalyClass::Stuck), "{:?}", v.anomalies);
}
