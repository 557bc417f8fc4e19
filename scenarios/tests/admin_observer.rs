//! `admin_observer`: an admin client describes the group (ConsumerGroupDescribe, falling back
//! to DescribeGroups for a classic group) and lists every broker's groups every second or so
//! while a classic group is rolled over to the consumer protocol and back. Every answer is held
//! against the history by the checker's `admin-mismatch` rule: these tests show that the rule
//! judges real answers of both APIs in both worlds, and that an answer that was never true
//! (a member invented, one left out, an assignment no generation stored) is caught.
//!
//! Seeds: `GROUPSIM_SEEDS=<n>` (default sized for CI), or `GROUPSIM_SEED=<n>` to replay one.

use groupsim::runner::{RunOptions, WorldKind};
use groupsim::testing::{check_scenario, check_scenario_with};
use groupsim_checker::AnomalyClass;
use groupsim_history::{DescribedMember, EventKind, History, MemberEvent};

/// Counts the answers of `reports` the rule judged: (consumer-group describes, classic
/// describes, lists), each without error.
fn judged(histories: &[&History]) -> (usize, usize, usize) {
    let mut n = (0, 0, 0);
    for h in histories {
        for e in h.events() {
            match &e.kind {
                EventKind::Member {
                    event: MemberEvent::GroupDescribed { api, error: None, .. },
                    ..
                } => {
                    if api == "DescribeGroups" {
                        n.1 += 1
                    } else {
                        n.0 += 1
                    }
                }
                EventKind::Member {
                    event: MemberEvent::GroupsListed { error: None, .. }, ..
                } => n.2 += 1,
                _ => {}
            }
        }
    }
    n
}

#[test]
fn every_answer_matches_the_group_in_both_worlds() {
    for world in [WorldKind::Event, WorldKind::Turmoil] {
        let options = RunOptions { world, ..RunOptions::default() };
        let reports = check_scenario_with("admin_observer", 3, &options);
        let histories: Vec<&History> = reports.iter().map(|r| &r.history).collect();
        let (consumer, classic, lists) = judged(&histories);
        assert!(
            consumer > 10 && classic > 10 && lists > 30,
            "{world:?}: too few answers judged: {consumer} ConsumerGroupDescribe, \
             {classic} DescribeGroups, {lists} ListGroups"
        );
    }
}

/// Seed 1's history with its `n`th error-free describe answer showing a Stable classic group
/// with members changed by `f`; None when the history has no such answer.
fn altered(history: &History, f: impl Fn(&mut Vec<DescribedMember>)) -> Option<(History, usize)> {
    let mut events = history.events().to_vec();
    let idx = events.iter().position(|e| {
        matches!(&e.kind, EventKind::Member {
            event: MemberEvent::GroupDescribed { api, error: None, state, members, .. }, ..
        } if api == "DescribeGroups" && state == "Stable" && members.len() > 1)
    })?;
    if let EventKind::Member { event: MemberEvent::GroupDescribed { members, .. }, .. } =
        &mut events[idx].kind
    {
        f(members);
    }
    Some((History::from_events(events), idx))
}

#[test]
fn an_answer_that_was_never_true_is_caught_as_admin_mismatch() {
    let reports = check_scenario("admin_observer", 3);
    let history = reports
        .iter()
        .map(|r| &r.history)
        .find(|h| altered(h, |_| {}).is_some())
        .expect("some seed describes a Stable classic group with two members or more");
    type Change = fn(&mut Vec<DescribedMember>);
    let changes: [(&str, Change); 3] = [
        ("an invented member", |ms| {
            ms.push(DescribedMember {
                member_id: "nobody-1".into(),
                instance_id: None,
                partitions: Some(Vec::new()),
                epoch: None,
            })
        }),
        ("a member left out", |ms| {
            ms.pop();
        }),
        ("two members' partitions swapped", |ms| {
            let (a, b) = (ms[0].partitions.clone(), ms[1].partitions.clone());
            if a == b {
                ms[0].partitions = Some(Vec::new());
            } else {
                ms[0].partitions = b;
                ms[1].partitions = a;
            }
        }),
    ];
    for (what, change) in changes {
        let (bad, idx) = altered(history, change).expect("found above");
        let verdict = groupsim_checker::check(&bad);
        let caught = verdict
            .anomalies
            .iter()
            .find(|a| a.class == AnomalyClass::AdminMismatch)
            .unwrap_or_else(|| panic!("{what}: not caught: {:?}", verdict.anomalies));
        assert_eq!(caught.events, vec![idx], "{what}: {}", caught.message);
    }
}

/// The coordinator expelling a live member (`expel_member`, applied by the simulated nemesis
/// at the group's coordinator) removes it at that instant, as its session expiring would, and
/// the member joins again (or, when the expel left a consumer group without consumer-protocol
/// members, stops on the named `downgrade-strands-member` hazard; or a coordinator move before
/// the classic group wrote the removal loads the group with the member still in, as Kafka's
/// would).
#[test]
fn an_expelled_member_is_removed_at_once_and_comes_back() {
    use groupsim::faults::Fault;
    use groupsim_history::{ConsumerGroupEvent, CoordinatorEvent, WorldEvent};
    let mut expelled = 0;
    for world in [WorldKind::Event, WorldKind::Turmoil] {
        let options = RunOptions { world, ..RunOptions::default() };
        for r in check_scenario_with("admin_observer", 4, &options) {
            let events = r.history.events();
            for (i, e) in events.iter().enumerate() {
                let EventKind::World(WorldEvent::FaultInjected {
                    fault: Fault::ExpelMember { member },
                    applied: true,
                }) = &e.kind
                else {
                    continue;
                };
                expelled += 1;
                // The turmoil world records a step's events host by host: look a few events on.
                let removed = events[i..].iter().take(20).filter(|p| p.at_ms == e.at_ms).find_map(
                    |p| match &p.kind {
                        EventKind::Coordinator {
                            event: CoordinatorEvent::MemberRemoved { member_id, .. },
                            ..
                        }
                        | EventKind::Coordinator {
                            event:
                                CoordinatorEvent::ConsumerGroup(ConsumerGroupEvent::MemberRemoved {
                                    member_id,
                                    ..
                                }),
                            ..
                        } => Some(member_id.clone()),
                        _ => None,
                    },
                );
                let seed = r.spec.seed;
                let Some(id) = removed else {
                    panic!("{world:?} seed {seed}: expel of {member} at {} removed no one", e.at_ms)
                };
                // Back: it joins again (or stops on a fatal answer), or a coordinator move
                // before the removal was written loads the group with it still in.
                let back = events[i..].iter().any(|n| match &n.kind {
                    EventKind::Member { member: m, event } => {
                        m == member
                            && matches!(
                                event,
                                MemberEvent::Joined { .. }
                                    | MemberEvent::MemberEpochChanged { previous: 0, .. }
                                    | MemberEvent::Fatal { .. }
                            )
                    }
                    EventKind::Coordinator {
                        event: CoordinatorEvent::GroupLoaded { members, .. },
                        ..
                    } => members.contains(&id),
                    _ => false,
                });
                assert!(
                    back,
                    "{world:?} seed {seed}: {member} ({id}) never came back after its expel"
                );
            }
        }
    }
    assert!(expelled >= 4, "only {expelled} expels applied");
}

/// The admin client also fetches every committed offset of the group with each describe; the
/// `admin-mismatch` rule holds each offset shown against the commits the coordinators accepted
/// while it asked. Real answers pass; one offset moved past anything committed is caught.
#[test]
fn committed_offsets_shown_to_the_admin_client_are_judged() {
    let reports = check_scenario("admin_observer", 2);
    let history = &reports[0].history;
    let shown = |e: &groupsim_history::Event| {
        matches!(&e.kind, EventKind::Member {
            event: MemberEvent::OffsetsFetched { error: None, offsets, .. }, ..
        } if !offsets.is_empty())
    };
    let answers = history.events().iter().filter(|e| shown(e)).count();
    assert!(answers > 10, "only {answers} OffsetFetch answers showed offsets");
    let mut events = history.events().to_vec();
    let idx = events.iter().position(shown).expect("counted above");
    if let EventKind::Member { event: MemberEvent::OffsetsFetched { offsets, .. }, .. } =
        &mut events[idx].kind
    {
        offsets[0].1 += 1_000_000;
    }
    let verdict = groupsim_checker::check(&History::from_events(events));
    let caught = verdict
        .anomalies
        .iter()
        .find(|a| a.class == AnomalyClass::AdminMismatch)
        .unwrap_or_else(|| panic!("not caught: {:?}", verdict.anomalies));
    assert_eq!(caught.events, vec![idx], "{}", caught.message);
}

/// Regression, found by `groupsim explore` with no bug switch (admin_observer seed 50000, its
/// drawn schedule mutated; shrunk to the three faults below): `stalled-member`. Mechanism: m0
/// and m1 were upgraded to the consumer protocol, so the group became a consumer group, and m0
/// was expelled. The expel fenced m0 by calling the session timer's handler directly, which
/// forgot m0's scheduled session deadline without taking it out of the coordinator's timer
/// table. m0 rejoined under the member id it had (epoch 0, as KIP-848 members do); the orphaned
/// deadline then fired against it as a session timeout though every heartbeat of its new
/// session was answered, and that fence orphaned the next deadline the same way, so m0 was
/// fenced once per session until the run ended. The expel now moves the session deadline in
/// the timer table, as a classic group's expel always did; the coordinator's own test is
/// `an_expelled_member_that_rejoins_under_its_id_keeps_the_session_it_heartbeats`.
#[test]
fn an_expelled_consumer_protocol_member_that_rejoins_is_not_fenced_again() {
    use groupsim::faults::{Fault, FaultSchedule, ScheduledFault};
    use groupsim::runner::run_seed_with;
    use groupsim_history::{ClientProfile, ConsumerRemovalReason, CoordinatorEvent};
    let upgrade = |member: &str, restart_after_ms| Fault::MemberUpgrade {
        member: member.into(),
        restart_after_ms,
        profile: ClientProfile::JavaConsumer,
        assignors: vec![],
    };
    let schedule = FaultSchedule::new(vec![
        ScheduledFault { at_ms: 9_875, fault: upgrade("m0", 1_556) },
        ScheduledFault { at_ms: 17_799, fault: upgrade("m1", 1_895) },
        ScheduledFault { at_ms: 25_331, fault: Fault::ExpelMember { member: "m0".into() } },
    ]);
    let s = groupsim::scenarios::find("admin_observer").expect("in catalogue");
    let options = RunOptions { schedule: Some(schedule), ..RunOptions::default() };
    let r = run_seed_with(&s, 50_000, &options).expect("runs");
    assert!(r.verdict.is_ok(), "{}", r.failure_report());
    // The expel is the run's only session timeout: m0 rejoined and kept its session after it.
    let timeouts = r
        .history
        .events()
        .iter()
        .filter(|e| {
            matches!(
                &e.kind,
                EventKind::Coordinator {
                    event: CoordinatorEvent::ConsumerGroup(
                        groupsim_history::ConsumerGroupEvent::MemberRemoved {
                            reason: ConsumerRemovalReason::SessionTimeout,
                            ..
                        }
                    ),
                    ..
                }
            )
        })
        .count();
    assert_eq!(timeouts, 1, "{}", r.failure_report());
}
