//! The rebalance summary of hand-built histories: each test builds the events of one story and
//! checks the lines that tell it.

use groupsim_history::MemberAssignment;
use groupsim_history::MemberEvent;
use groupsim_history::{ConsumerGroupEvent, ConsumerRemovalReason, TargetShare};
use groupsim_history::{CoordinatorEvent, GroupState, RemovalReason};
use groupsim_wire::{Millis, TopicPartition};

use super::summary;
use groupsim_checker::{Anomaly, AnomalyClass, Verdict};
use groupsim_history::Fault;
use groupsim_history::{Event, EventKind, History, WorldEvent};

const G: &str = "g";

/// A history under construction.
#[derive(Default)]
struct H(Vec<Event>);

impl H {
    fn new() -> Self {
        let mut h = H::default();
        h.world(0, WorldEvent::RunStarted { scenario: "hand".into(), seed: 7 });
        h.world(0, WorldEvent::TopicCreated { topic: "t".into(), partitions: 4 });
        h
    }

    fn world(&mut self, at_ms: Millis, w: WorldEvent) -> &mut Self {
        self.0.push(Event { at_ms, kind: EventKind::World(w) });
        self
    }

    fn coord(&mut self, at_ms: Millis, event: CoordinatorEvent) -> &mut Self {
        self.0.push(Event { at_ms, kind: EventKind::Coordinator { broker: 0, event } });
        self
    }

    fn consumer(&mut self, at_ms: Millis, e: ConsumerGroupEvent) -> &mut Self {
        self.coord(at_ms, CoordinatorEvent::ConsumerGroup(e))
    }

    fn member(&mut self, at_ms: Millis, name: &str, event: MemberEvent) -> &mut Self {
        self.0.push(Event { at_ms, kind: EventKind::Member { member: name.into(), event } });
        self
    }

    /// `name` joins as `id` (classic): the coordinator adds it with `name` as client id.
    fn join(&mut self, at: Millis, name: &str, id: &str) -> &mut Self {
        self.coord(
            at,
            CoordinatorEvent::MemberAdded {
                group: G.into(),
                member_id: id.into(),
                group_instance_id: None,
                client_id: name.into(),
            },
        )
    }

    fn state(
        &mut self,
        at: Millis,
        from: GroupState,
        to: GroupState,
        generation: i32,
    ) -> &mut Self {
        self.coord(
            at,
            CoordinatorEvent::GroupStateChanged { group: G.into(), from, to, generation },
        )
    }

    fn generation(
        &mut self,
        at: Millis,
        generation: i32,
        leader: &str,
        members: &[&str],
    ) -> &mut Self {
        self.coord(
            at,
            CoordinatorEvent::GenerationStarted {
                group: G.into(),
                generation,
                protocol: Some("range".into()),
                leader: Some(leader.into()),
                members: members.iter().map(|m| m.to_string()).collect(),
            },
        )
    }

    fn stored(&mut self, at: Millis, generation: i32, shares: &[(&str, &[i32])]) -> &mut Self {
        let assignments = shares
            .iter()
            .map(|(id, ps)| MemberAssignment { member_id: id.to_string(), partitions: tps(ps) })
            .collect();
        self.coord(
            at,
            CoordinatorEvent::AssignmentStored { group: G.into(), generation, assignments },
        )
    }

    fn commit(&mut self, at: Millis, id: &str, generation: i32, error: Option<&str>) -> &mut Self {
        let partition = TopicPartition::new("t", 0);
        let event = match error {
            None => CoordinatorEvent::OffsetCommitAccepted {
                group: G.into(),
                member_id: id.into(),
                generation,
                partition,
                offset: 1,
                validated_at_ms: at,
            },
            Some(e) => CoordinatorEvent::OffsetCommitRejected {
                group: G.into(),
                member_id: id.into(),
                generation,
                partition,
                offset: 1,
                error: e.into(),
            },
        };
        self.coord(at, event)
    }

    fn fault(&mut self, at: Millis, fault: Fault) -> &mut Self {
        self.world(at, WorldEvent::FaultInjected { fault, applied: true })
    }

    fn text(&self, verdict: &Verdict) -> String {
        summary(&History::from_events(self.0.clone()), verdict)
    }
}

fn tps(ps: &[i32]) -> Vec<TopicPartition> {
    ps.iter().map(|p| TopicPartition::new("t", *p)).collect()
}

/// Two members join an empty group; the generation settles; each commits under it.
fn one_generation() -> H {
    let mut h = H::new();
    h.join(10, "m1", "m1-1")
        .state(10, GroupState::Empty, GroupState::PreparingRebalance, 0)
        .join(20, "m0", "m0-2")
        .state(30, GroupState::PreparingRebalance, GroupState::CompletingRebalance, 1)
        .generation(30, 1, "m1-1", &["m0-2", "m1-1"])
        .stored(35, 1, &[("m0-2", &[0, 1]), ("m1-1", &[2, 3])])
        .state(35, GroupState::CompletingRebalance, GroupState::Stable, 1)
        .commit(40, "m0-2", 1, None)
        .commit(41, "m0-2", 1, None)
        .commit(42, "m1-1", 1, Some("REBALANCE_IN_PROGRESS"));
    h
}

#[test]
fn a_settled_generation_shows_its_why_its_assignment_and_commits_per_member() {
    let text = one_generation().text(&Verdict::default());
    let expected = "\
hand seed 7: topics t (4 partitions)

generation 1: 10 -> 35 settled (range, leader m1)
  why: +m1
  during: +m0
  m0  t[0-1]  commits 2
  m1  t[2-3]  commits 0, 1 refused (REBALANCE_IN_PROGRESS)
";
    assert!(text.starts_with(expected), "{text}");
}

#[test]
fn the_closing_block_gives_the_verdict_the_ending_and_the_totals() {
    let mut h = one_generation();
    h.world(50, WorldEvent::LivenessPhase { deadline_ms: 90, stall_ms: None })
        .world(70, WorldEvent::LivenessHeld { since_ms: 60, grace_ms: 10 })
        .world(70, WorldEvent::RunEnded);
    let mut verdict = Verdict::default();
    verdict.stats.commits_accepted = 2;
    verdict.stats.commits_rejected = 1;
    let ok = h.text(&verdict);
    assert!(ok.contains("\nverdict: ok\n"), "{ok}");
    assert!(
        ok.contains("\nend: converged at 60 and held for the 10 ms grace; ended at 70\n"),
        "{ok}"
    );
    assert!(ok.contains("\ntotals: 1 rebalance (1 settled), commits 2 accepted and 1 refused\n"));

    let lost = |at| Anomaly::new(AnomalyClass::LostCommit, None, at, "lost".into(), vec![]);
    verdict.anomalies = vec![lost(40), lost(41)];
    let mut deadline = one_generation();
    deadline
        .world(50, WorldEvent::LivenessPhase { deadline_ms: 90, stall_ms: None })
        .world(90, WorldEvent::RunEnded);
    let failed = deadline.text(&verdict);
    assert!(failed.contains("\nverdict: FAIL lost-commit x2\n"), "{failed}");
    assert!(failed.contains("\nend: ran to the liveness deadline 90; ended at 90\n"), "{failed}");
}

#[test]
fn a_generation_abandoned_before_sync_is_followed_by_its_retry() {
    let mut h = one_generation();
    h.join(100, "m2", "m2-3")
        .state(100, GroupState::Stable, GroupState::PreparingRebalance, 1)
        .state(110, GroupState::PreparingRebalance, GroupState::CompletingRebalance, 2)
        .generation(110, 2, "m1-1", &["m0-2", "m1-1", "m2-3"])
        .join(115, "m3", "m3-4")
        .state(115, GroupState::CompletingRebalance, GroupState::PreparingRebalance, 2)
        .state(120, GroupState::PreparingRebalance, GroupState::CompletingRebalance, 3)
        .generation(120, 3, "m1-1", &["m0-2", "m1-1", "m2-3", "m3-4"])
        .stored(125, 3, &[("m0-2", &[0]), ("m1-1", &[1]), ("m2-3", &[2]), ("m3-4", &[3])]);
    let text = h.text(&Verdict::default());
    let expected = "
generation 2: 100 -> 115 abandoned before sync (range, leader m1)
  why: +m2
  members: m0, m1, m2

generation 3: 115 -> 125 settled (range, leader m1)
  why: +m3
  m0  t[0]
  m1  t[1]
  m2  t[2]
  m3  t[3]
";
    assert!(text.contains(expected), "{text}");
}

#[test]
fn faults_are_filed_before_during_or_after_the_rebalance_they_meet() {
    let mut h = H::new();
    h.world(
        5,
        WorldEvent::TriggerFired {
            trigger: "on join_responses: drop its connections, p=0.5, at most 1x".into(),
            target: "m1".into(),
        },
    )
    .fault(5, Fault::ConnectionDrop { member: "m1".into() })
    .join(10, "m1", "m1-1")
    .state(10, GroupState::Empty, GroupState::PreparingRebalance, 0)
    .fault(20, Fault::MemberPause { member: "m1".into(), duration_ms: 7 })
    .fault(22, Fault::MemberPause { member: "m1".into(), duration_ms: 7 })
    .generation(30, 1, "m1-1", &["m1-1"])
    .stored(35, 1, &[("m1-1", &[0, 1, 2, 3])])
    .fault(50, Fault::CoordinatorMove { group: G.into(), to: 2, load_ms: 9 });
    let text = h.text(&Verdict::default());
    assert!(text.contains("\n  why: drop m1 [on join_responses], +m1\n"), "{text}");
    assert!(text.contains("\n  during: pause m1 7 ms x2\n"), "{text}");
    assert!(text.contains("\nafter the last rebalance: coordinator -> broker-2 (load 9 ms)\n"));
}

#[test]
fn a_rebalance_with_no_recorded_cause_says_a_member_rejoined() {
    let mut h = one_generation();
    h.state(100, GroupState::Stable, GroupState::PreparingRebalance, 1)
        .generation(110, 2, "m1-1", &["m0-2", "m1-1"])
        .stored(112, 2, &[("m0-2", &[0, 1]), ("m1-1", &[2, 3])]);
    let text = h.text(&Verdict::default());
    assert!(
        text.contains(
            "generation 2: 100 -> 112 settled (range, leader m1)\n  why: a member rejoined"
        ),
        "{text}"
    );
}

#[test]
fn an_unloaded_group_interrupts_its_rebalance_and_one_never_formed_is_unsettled() {
    let mut h = one_generation();
    h.state(100, GroupState::Stable, GroupState::PreparingRebalance, 1)
        .generation(110, 2, "m1-1", &["m0-2", "m1-1"])
        .state(111, GroupState::CompletingRebalance, GroupState::Dead, 2)
        .coord(111, CoordinatorEvent::GroupUnloaded { group: G.into(), partition: 1 });
    let text = h.text(&Verdict::default());
    assert!(
        text.contains("generation 2: 100 -> 111 interrupted: the group was unloaded"),
        "{text}"
    );
    assert!(text.contains("generation 3: 111 -> unsettled at the end, never formed\n"), "{text}");
}

/// A consumer member joins: the coordinator's and the member's own events.
fn consumer_join(h: &mut H, at: Millis, name: &str, id: &str) {
    h.consumer(
        at,
        ConsumerGroupEvent::MemberJoined {
            group: G.into(),
            member_id: id.into(),
            group_instance_id: None,
            client_id: "client".into(),
            classic_protocol: false,
        },
    );
    // The member's own report names the id (its client id does not).
    h.member(
        at,
        name,
        MemberEvent::MemberEpochChanged { member_id: id.into(), previous: 0, epoch: 1 },
    );
}

fn bump_and_target(h: &mut H, at: Millis, epoch: i32, shares: &[(&str, &[i32])]) {
    h.consumer(at, ConsumerGroupEvent::GroupEpochBumped { group: G.into(), epoch });
    let assignments = shares
        .iter()
        .map(|(id, ps)| TargetShare { member_id: id.to_string(), partitions: tps(ps) })
        .collect();
    h.consumer(
        at,
        ConsumerGroupEvent::TargetAssignmentComputed {
            group: G.into(),
            epoch,
            assignor: "uniform".into(),
            assignments,
        },
    );
}

fn epoch(h: &mut H, at: Millis, id: &str, from: i32, to: i32, state: &str) {
    h.consumer(
        at,
        ConsumerGroupEvent::MemberEpochChanged {
            group: G.into(),
            member_id: id.into(),
            from,
            to,
            state: state.into(),
        },
    );
}

#[test]
fn a_target_epoch_settles_when_every_member_reaches_it_reconciled() {
    let mut h = H::new();
    bump_and_target(&mut h, 10, 1, &[("AAAA", &[0, 1, 2, 3])]);
    consumer_join(&mut h, 10, "m0", "AAAA");
    epoch(&mut h, 10, "AAAA", 0, 1, "STABLE");
    bump_and_target(&mut h, 20, 2, &[("AAAA", &[0, 1]), ("BBBB", &[2, 3])]);
    consumer_join(&mut h, 20, "m1", "BBBB");
    epoch(&mut h, 20, "BBBB", 0, 2, "UNRELEASED_PARTITIONS");
    epoch(&mut h, 25, "AAAA", 1, 1, "UNREVOKED_PARTITIONS");
    epoch(&mut h, 30, "AAAA", 1, 2, "STABLE");
    h.commit(31, "AAAA", 1, None);
    epoch(&mut h, 40, "BBBB", 2, 2, "STABLE");
    h.commit(41, "AAAA", 2, None).commit(42, "BBBB", 2, Some("STALE_MEMBER_EPOCH"));
    let text = h.text(&Verdict::default());
    let expected = "
target epoch 1: 10 -> 10 settled (uniform)
  why: +m0
  m0  t[0-3]  commits 1

target epoch 2: 20 -> 40 settled (uniform)
  why: +m1
  m0  t[0-1]  commits 1
  m1  t[2-3]  commits 0, 1 refused (STALE_MEMBER_EPOCH)
";
    assert!(text.contains(expected), "{text}");
}

#[test]
fn target_epochs_superseded_one_after_another_are_one_block() {
    let mut h = H::new();
    bump_and_target(&mut h, 10, 1, &[("AAAA", &[0, 1, 2, 3])]);
    consumer_join(&mut h, 10, "m0", "AAAA");
    epoch(&mut h, 10, "AAAA", 0, 1, "STABLE");
    bump_and_target(&mut h, 20, 2, &[("AAAA", &[0, 1]), ("BBBB", &[2, 3])]);
    consumer_join(&mut h, 20, "m1", "BBBB");
    bump_and_target(&mut h, 30, 3, &[("AAAA", &[0]), ("BBBB", &[1, 2]), ("CCCC", &[3])]);
    consumer_join(&mut h, 30, "m2", "CCCC");
    h.commit(32, "BBBB", 3, None);
    h.consumer(
        35,
        ConsumerGroupEvent::MemberRemoved {
            group: G.into(),
            member_id: "CCCC".into(),
            member_epoch: 3,
            reason: ConsumerRemovalReason::SessionTimeout,
        },
    );
    bump_and_target(&mut h, 35, 4, &[("AAAA", &[0, 1]), ("BBBB", &[2, 3])]);
    let text = h.text(&Verdict::default());
    let expected = "
target epochs 2-3: 20 -> 35 each superseded by the next group epoch (uniform)
  why: +m1
  during: +m2
  members: m0, m1, m2
  commits: m1 1

target epoch 4: 35 -> unsettled at the end (uniform)
  why: -m2 (session expired)
";
    assert!(text.contains(expected), "{text}");
}

#[test]
fn a_replacement_s_commits_join_its_member_s_row_and_two_live_ids_are_told_apart() {
    let mut h = one_generation();
    // m0 restarts as m0-5 and takes over m0-2's place without a rebalance.
    h.coord(
        50,
        CoordinatorEvent::MemberRemoved {
            group: G.into(),
            member_id: "m0-2".into(),
            reason: RemovalReason::Fenced,
        },
    )
    .join(50, "m0", "m0-5")
    .commit(55, "m0-5", 1, None);
    let text = h.text(&Verdict::default());
    assert!(text.contains("\n  m0  t[0-1]  commits 3\n"), "{text}");
    assert!(text.contains("\nafter the last rebalance: -m0 (replaced), +m0\n"), "{text}");

    // Both ids in one generation: each is shown with its incarnation.
    h.state(60, GroupState::Stable, GroupState::PreparingRebalance, 1)
        .generation(70, 2, "m1-1", &["m0-2", "m0-5", "m1-1"])
        .stored(71, 2, &[("m0-2", &[0]), ("m0-5", &[1]), ("m1-1", &[2, 3])]);
    let text = h.text(&Verdict::default());
    assert!(text.contains("\n  m0#1  t[0]\n  m0#2  t[1]\n  m1    t[2-3]\n"), "{text}");
}

#[test]
fn a_large_group_shows_the_shape_of_its_assignment() {
    let mut h = H::new();
    let ids: Vec<String> = (0..20).map(|i| format!("m{i}-{i}")).collect();
    for (i, id) in ids.iter().enumerate() {
        h.join(10, &format!("m{i}"), id);
    }
    let members: Vec<&str> = ids.iter().map(String::as_str).collect();
    let shares: Vec<(&str, &[i32])> =
        vec![(members[0], &[0, 1]), (members[1], &[2]), (members[2], &[3])];
    h.state(10, GroupState::Empty, GroupState::PreparingRebalance, 0)
        .generation(30, 1, members[0], &members)
        .stored(35, 1, &shares)
        .commit(40, members[0], 1, None)
        .commit(41, members[1], 1, None);
    let text = h.text(&Verdict::default());
    assert!(text.contains("\n  why: +20 members\n"), "{text}");
    let shape =
        "\n  20 members: 1 with 2 partitions, 2 with 1 partition, 17 with none (assignment ";
    assert!(text.contains(shape), "{text}");
    assert!(text.contains("\n  commits 2 from 2 members\n"), "{text}");
}
