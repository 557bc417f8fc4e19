//! Client profiles under membership churn (3 -> 6 -> 2 members, 2 topics, 12 partitions): one
//! scenario per client the members model — Java eager, Java cooperative (KIP-429 with
//! cooperative-sticky), brod, Elsa, kafka-go — and a group mixing all five. Each must pass the
//! checker on every seed.
//!
//! Then the member bug switches: each makes members misbehave in one realistic way, and the
//! checker must name the resulting anomaly within a few seeds while the same seeds pass with
//! the switch off.
//!
//! Seeds: `GROUPSIM_SEEDS=<n>` (default sized for CI), or `GROUPSIM_SEED=<n>` to replay one.

use std::collections::BTreeSet;

use groupsim::scenario::{member_config, ScenarioSpec};
use groupsim::scenarios::churn::churn_spec;
use groupsim::testing::check_scenario;
use groupsim::world::turmoil as world;
use groupsim_checker::AnomalyClass;
use groupsim_history::{EventKind, History, MemberEvent, WorldEvent};
use groupsim_member::{ClientProfile, MemberBugs};
use groupsim_wire::TopicPartition;

const SEEDS: u64 = 10;

/// Every run of the scenario rebalanced, committed, and processed everything produced.
fn check_profile_scenario(name: &str) -> Vec<groupsim::runner::RunReport> {
    let reports = check_scenario(name, SEEDS);
    for r in &reports {
        let s = &r.verdict.stats;
        assert!(s.rebalances >= 4, "{name} seed {}: only {} rebalances", r.spec.seed, s.rebalances);
        assert!(
            s.commits_accepted > 0 && s.records_processed >= s.records_produced,
            "{name} seed {}: processed {} of {} produced",
            r.spec.seed,
            s.records_processed,
            s.records_produced
        );
    }
    reports
}

#[test]
fn profile_java_eager_passes_the_checker() {
    check_profile_scenario("profile_java_eager");
}

/// KIP-429: a partition the new assignment keeps with its owner is never revoked. Every
/// `Revoked` of a cooperative member is checked against the assignment of the generation that
/// revoked it (a member that was asked to leave revokes everything, which is not a rebalance).
fn assert_kept_partitions_never_revoked(history: &History, seed: u64) -> usize {
    let mut leaving: BTreeSet<String> = BTreeSet::new();
    let mut cooperative_revokes = 0;
    let events = history.events();
    for (i, e) in events.iter().enumerate() {
        match &e.kind {
            EventKind::World(WorldEvent::MemberLeaveRequested { member }) => {
                leaving.insert(member.clone());
            }
            EventKind::Member {
                member,
                event: MemberEvent::Revoked { member_id, generation, partitions },
            } if !leaving.contains(member) => {
                cooperative_revokes += 1;
                let assigned: Vec<&TopicPartition> = events
                    .iter()
                    .filter_map(|x| match &x.kind {
                        EventKind::Member {
                            member: m,
                            event: MemberEvent::Assigned { generation: g, partitions: p, .. },
                        } if m == member && g == generation => Some(p),
                        _ => None,
                    })
                    .flatten()
                    .collect();
                let kept: Vec<&&TopicPartition> =
                    assigned.iter().filter(|tp| partitions.contains(tp)).collect();
                assert!(
                    kept.is_empty(),
                    "seed {seed}: #{i} {member} ({member_id}) revoked {kept:?} in generation \
                     {generation} although that generation kept them with it"
                );
            }
            _ => {}
        }
    }
    cooperative_revokes
}

#[test]
fn profile_java_cooperative_passes_and_never_revokes_kept_partitions() {
    let reports = check_profile_scenario("profile_java_cooperative");
    let mut revokes = 0;
    for r in &reports {
        revokes += assert_kept_partitions_never_revoked(&r.history, r.spec.seed);
        // Every rebalance under cooperative-sticky: no generation assigns a partition twice
        // and the protocol chosen was cooperative-sticky.
        assert!(r.history.events().iter().any(|e| matches!(
            &e.kind,
            EventKind::Member { event: MemberEvent::Joined { protocol, .. }, .. }
                if protocol == "cooperative-sticky"
        )));
    }
    assert!(revokes > 0, "churn never moved a partition between members");
}

#[test]
fn profile_brod_passes_the_checker() {
    check_profile_scenario("profile_brod");
}

#[test]
fn profile_elsa_passes_the_checker() {
    check_profile_scenario("profile_elsa");
}

#[test]
fn profile_kafka_go_passes_the_checker() {
    check_profile_scenario("profile_kafka_go");
}

/// kafka-go's `ConsumerGroup` sends JoinGroup v1 (`ClientProfile::pinned_api_versions`), older
/// than KIP-394's MEMBER_ID_REQUIRED (v4): the coordinator hands a new member its id in the
/// first JoinGroup answer. The Java consumer negotiates the newest JoinGroup and meets
/// MEMBER_ID_REQUIRED on every first join.
#[test]
fn kafka_go_joins_at_its_pinned_version_without_member_id_required() {
    const PROBE: &str = "coordinator.join.member_id_required";
    let asked = |r: &groupsim::runner::RunReport| r.probes.keys().any(|p| p.starts_with(PROBE));
    for r in check_scenario("profile_kafka_go", 3) {
        assert!(!asked(&r), "kafka-go seed {} was answered MEMBER_ID_REQUIRED", r.spec.seed);
    }
    for r in check_scenario("profile_java_eager", 3) {
        assert!(asked(&r), "Java seed {} was never answered MEMBER_ID_REQUIRED", r.spec.seed);
    }
}

#[test]
fn mixed_profiles_pass_the_checker_and_vote_a_shared_protocol() {
    for r in check_profile_scenario("mixed_profiles") {
        let protocols: BTreeSet<&str> = r
            .history
            .events()
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::Member { event: MemberEvent::Joined { protocol, .. }, .. } => {
                    Some(protocol.as_str())
                }
                _ => None,
            })
            .collect();
        // roundrobin is the only protocol all five share, so it wins while they are all in the
        // group; survivors may then vote for one only they share (range, roundrobin_v2), never
        // for cooperative-sticky, which only the Java cooperative member offers.
        assert!(protocols.contains("roundrobin"), "seed {}: {protocols:?}", r.spec.seed);
        assert!(!protocols.contains("cooperative-sticky"), "seed {}: {protocols:?}", r.spec.seed);
    }
}

// ------------------------------------------------------------------------------------------
// Member bug switches
// ------------------------------------------------------------------------------------------

/// The anomaly classes of one run of `spec`.
fn classes(spec: &ScenarioSpec) -> BTreeSet<AnomalyClass> {
    let history = world::run(spec).unwrap_or_else(|e| panic!("seed {}: {e}", spec.seed));
    groupsim_checker::check(&history).anomalies.iter().map(|a| a.class).collect()
}

/// Runs seeds `0..max_seeds` of a churn group of `profile` members built with `bugs` until one
/// shows one of `expected`; asserts it does, and that the same seed is clean with the switch
/// off. Returns the first seed that caught it.
fn assert_bug_caught(
    profile: ClientProfile,
    slow_processing: bool,
    bugs: MemberBugs,
    expected: &[AnomalyClass],
    max_seeds: u64,
) -> u64 {
    let spec = |seed: u64, bugs: MemberBugs| {
        churn_spec("member_bug", seed, |_, name| {
            let mut c = member_config(name, profile);
            if slow_processing {
                // Batches long enough to straddle rebalances, so acks arrive late.
                c.processing_ms_per_record = (20, 60);
            }
            c.bugs = bugs;
            c
        })
    };
    let mut seen = Vec::new();
    for seed in 0..max_seeds {
        let with_bug = classes(&spec(seed, bugs));
        if expected.iter().any(|c| with_bug.contains(c)) {
            let without = classes(&spec(seed, MemberBugs::default()));
            assert!(without.is_empty(), "seed {seed} fails without the bug too: {without:?}");
            eprintln!("{bugs:?} on {profile:?}: caught as {with_bug:?} at seed {seed}");
            return seed;
        }
        seen.push((seed, with_bug));
    }
    panic!("{expected:?} not caught in {max_seeds} seeds with {bugs:?}: {seen:?}");
}

/// A stale ack replaces the partition's acked offset: committed under the new generation it
/// covers records not processed in it (uncovered), moves the offset back (then later commits
/// cover records twice), or lands on a partition the member no longer owns.
#[test]
fn bug_keep_stale_acks_is_caught() {
    let bugs = MemberBugs { keep_stale_acks: true, ..Default::default() };
    let expected = [
        AnomalyClass::UncoveredCommit,
        AnomalyClass::OffsetRegression,
        AnomalyClass::DuplicateCommit,
        AnomalyClass::UnownedCommit,
    ];
    assert_bug_caught(ClientProfile::Brod, true, bugs, &expected, 10);
}

#[test]
fn bug_commit_after_revoke_is_caught_as_unowned_commit() {
    let bugs = MemberBugs { commit_after_revoke: true, ..Default::default() };
    assert_bug_caught(ClientProfile::JavaEager, false, bugs, &[AnomalyClass::UnownedCommit], 5);
}

#[test]
fn bug_skip_revoke_commit_then_overcommit_is_caught_as_uncovered_commit() {
    let bugs = MemberBugs { skip_revoke_commit_then_overcommit: true, ..Default::default() };
    assert_bug_caught(ClientProfile::JavaEager, true, bugs, &[AnomalyClass::UncoveredCommit], 5);
}

#[test]
fn bug_double_assign_is_caught_as_split_assignment() {
    let bugs = MemberBugs { double_assign: true, ..Default::default() };
    assert_bug_caught(ClientProfile::JavaEager, false, bugs, &[AnomalyClass::SplitAssignment], 3);
}

/// The member fault hooks under every profile: a batch of m0 acks 8 s late, detached from the
/// revoke (its ack arrives in a later generation and must be dropped), and m1's next revoke
/// callback runs 20 s, past the 15 s rebalance timeout (it is removed from the group and must
/// recover). Correct members pass the checker.
#[test]
fn every_profile_survives_stale_acks_and_slow_revokes() {
    use groupsim::faults::{Fault, FaultSchedule, ScheduledFault};
    let mut stale_acks = 0;
    for profile in ClientProfile::CLASSIC {
        for seed in groupsim::testing::seeds(3) {
            let mut spec =
                churn_spec("profile_faults", seed, |_, name| member_config(name, profile));
            spec.faults = FaultSchedule::new(vec![
                ScheduledFault {
                    at_ms: 9_000,
                    fault: Fault::StaleAck { member: "m0".into(), delay_ms: 8_000 },
                },
                ScheduledFault {
                    at_ms: 5_000,
                    fault: Fault::SlowRevoke { member: "m1".into(), extra_ms: 20_000 },
                },
            ]);
            let history = world::run(&spec).unwrap_or_else(|e| panic!("{profile:?} {seed}: {e}"));
            let verdict = groupsim_checker::check(&history);
            if let Some(a) = verdict.first() {
                panic!("{profile:?} seed {seed}: {}", a.render(&history));
            }
            // The slow revoke bit: m1 was put out of the group (poll timeout or removal).
            let m1_reset = history.events().iter().any(|e| {
                matches!(&e.kind, EventKind::Member { member, event: MemberEvent::GenerationReset { .. } } if member == "m1")
            });
            assert!(m1_reset, "{profile:?} seed {seed}: m1 never lost its membership");
            // Batches m0 finished under a generation older than its latest assignment.
            let mut latest = -1;
            for e in history.events() {
                match &e.kind {
                    EventKind::Member {
                        member,
                        event: MemberEvent::Assigned { generation, .. },
                    } if member == "m0" => latest = *generation,
                    EventKind::Member {
                        member,
                        event: MemberEvent::RecordsProcessed { generation, .. },
                    } if member == "m0" && *generation < latest => stale_acks += 1,
                    _ => {}
                }
            }
        }
    }
    assert!(stale_acks > 0, "no stale ack reached m0 after a rebalance");
}
