//! `invalid_requests`: a misbehaving client sends the coordinator, every second or so, a request
//! Kafka refuses whatever state the group is in (malformed ConsumerGroupHeartbeats, bad
//! JoinGroups, strangers' SyncGroup, Heartbeat, LeaveGroup and OffsetCommit, an unknown
//! FindCoordinator key type) while a classic group is rolled over to the consumer protocol and
//! back. These tests show every case is sent and refused in both worlds with the group
//! undisturbed, and that the checker's `invalid-request-accepted` rule catches an answer that
//! let one through.
//!
//! Seeds: `GROUPSIM_SEEDS=<n>` (default sized for CI), or `GROUPSIM_SEED=<n>` to replay one.

use std::collections::BTreeSet;

use groupsim::runner::{RunOptions, WorldKind};
use groupsim::testing::check_scenario_with;
use groupsim_checker::AnomalyClass;
use groupsim_history::{ConsumerGroupEvent, CoordinatorEvent, EventKind, History, MemberEvent};
use groupsim_member::InvalidCase;

/// The cases answered in `history`, with the errors they got.
fn answers(history: &History) -> Vec<(String, Option<String>)> {
    history
        .events()
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Member {
                event: MemberEvent::InvalidRequestAnswered { case, error, .. },
                ..
            } => Some((case.clone(), error.clone())),
            _ => None,
        })
        .collect()
}

#[test]
fn every_case_is_sent_and_refused_in_both_worlds() {
    for world in [WorldKind::Event, WorldKind::Turmoil] {
        let options = RunOptions { world, ..RunOptions::default() };
        // check_scenario_with fails on any anomaly: the group converged and nothing was
        // accepted.
        let reports = check_scenario_with("invalid_requests", 3, &options);
        let mut seen = BTreeSet::new();
        for r in &reports {
            for (case, error) in answers(&r.history) {
                assert!(error.is_some(), "{world:?} seed {}: {case} accepted", r.spec.seed);
                seen.insert(case);
            }
        }
        let missing: Vec<&str> =
            InvalidCase::ALL.iter().map(|c| c.name()).filter(|n| !seen.contains(*n)).collect();
        assert!(missing.is_empty(), "{world:?}: never answered: {missing:?}");
    }
}

#[test]
fn an_invalid_request_answered_without_error_is_caught() {
    let reports = check_scenario_with("invalid_requests", 1, &RunOptions::default());
    let history = &reports[0].history;
    let mut events = history.events().to_vec();
    let idx = events
        .iter()
        .position(|e| {
            matches!(
                &e.kind,
                EventKind::Member {
                    event: MemberEvent::InvalidRequestAnswered { error: Some(_), .. },
                    ..
                }
            )
        })
        .expect("an answered probe");
    if let EventKind::Member { event: MemberEvent::InvalidRequestAnswered { error, .. }, .. } =
        &mut events[idx].kind
    {
        *error = None;
    }
    let verdict = groupsim_checker::check(&History::from_events(events));
    let caught = verdict
        .anomalies
        .iter()
        .find(|a| a.class == AnomalyClass::InvalidRequestAccepted)
        .unwrap_or_else(|| panic!("not caught: {:?}", verdict.anomalies));
    assert_eq!(caught.events, vec![idx], "{}", caught.message);
}

/// Regression, found by `groupsim explore` (invalid_requests seeds 137 and 144, their drawn
/// schedules mutated into the member upgrades kept under `fixtures/`): `answer-zombie-commit`,
/// `answer-stale-generation-accepted` and `answer-removed-member-accepted` for correct answers.
/// Mechanism: every classic member rolled to the consumer protocol and back; the group emptied,
/// became a consumer group, emptied again, and m3's classic JoinGroup had the coordinator
/// delete the empty consumer group and make a new classic group, whose generations start over
/// at 1, as Kafka's do. The answer rules compared that generation 1 with the first classic
/// group's generation 2 and its first member list. A proof read while the group was plainly
/// classic no longer counts against an answer read after a consumer-protocol member spoke,
/// unless it is the member's own (the checker's `recreated` rule tests).
#[test]
fn a_classic_group_made_again_after_a_consumer_group_is_judged_afresh() {
    for seed in [137, 144] {
        let path = format!(
            "{}/tests/fixtures/invalid_requests-{seed}.schedule.json",
            env!("CARGO_MANIFEST_DIR")
        );
        let r = groupsim::testing::run_schedule_file(
            "invalid_requests",
            seed,
            &path,
            &RunOptions::default(),
        );
        assert!(r.verdict.is_ok(), "seed {seed}: {}", r.failure_report());
        let deleted = r.history.events().iter().position(|e| {
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
        let deleted = deleted.unwrap_or_else(|| panic!("seed {seed}: no consumer group deleted"));
        let first_again = r.history.events()[deleted..].iter().any(|e| {
            matches!(
                &e.kind,
                EventKind::Coordinator {
                    event: CoordinatorEvent::GenerationStarted { generation: 1, .. },
                    ..
                }
            )
        });
        assert!(first_again, "seed {seed}: the classic group made again starts at generation 1");
    }
}
