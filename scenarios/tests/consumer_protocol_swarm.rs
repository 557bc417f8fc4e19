//! `consumer_protocol_swarm`: the swarm's fault kinds on KIP-848 consumer-protocol members (Java
//! and librdkafka, drawn per member), with event triggers aimed at the consumer protocol's own
//! moments: a member asked to revoke (aimed at the partitions' new owner), its revocation done
//! and acknowledged, a partition handed over, a fenced member rejoining. The checker must find
//! no anomaly and the group must converge after the safety phase.
//!
//! Seeds: `GROUPSIM_SEEDS=<n>` (default sized for CI), or `GROUPSIM_SEED=<n>` to replay one.

mod support;

use std::collections::BTreeSet;

use groupsim::testing::check_scenario;
use groupsim::triggers::TriggerEvent;
use groupsim_history::{ConsumerGroupEvent, CoordinatorEvent, EventKind, MemberEvent, WorldEvent};
use groupsim_member::ClientProfile;

#[test]
fn consumer_protocol_swarm_passes_the_checker_with_kip_848_triggers_firing() {
    let reports = check_scenario("consumer_protocol_swarm", 8);
    let mut fired: BTreeSet<String> = BTreeSet::new();
    let mut profiles = BTreeSet::new();
    let (mut injected, mut fenced, mut handed_over) = (0, 0, 0);
    for r in &reports {
        let seed = r.spec.seed;
        assert!(r.spec.swarm.is_some(), "seed {seed}: the scenario records its swarm choice");
        for m in &r.spec.members {
            assert!(
                matches!(
                    m.config.profile,
                    ClientProfile::JavaConsumer | ClientProfile::LibrdkafkaConsumer
                ),
                "seed {seed}: {} is not a consumer-protocol member",
                m.name
            );
            profiles.insert(m.config.profile);
        }
        for t in &r.spec.faults.triggers {
            assert!(TriggerEvent::CONSUMER_SWARM.contains(&t.on), "seed {seed}: {t}");
        }
        for e in r.history.events() {
            match &e.kind {
                EventKind::World(WorldEvent::FaultInjected { applied: true, .. }) => injected += 1,
                EventKind::World(WorldEvent::TriggerFired { trigger, .. }) => {
                    let event = trigger.trim_start_matches("on ").split(':').next();
                    fired.insert(event.unwrap_or_default().to_string());
                }
                EventKind::Member { event: MemberEvent::Fenced { .. }, .. } => fenced += 1,
                EventKind::Coordinator {
                    event:
                        CoordinatorEvent::ConsumerGroup(ConsumerGroupEvent::PartitionsAssigned {
                            ..
                        }),
                    ..
                } => handed_over += 1,
                // No classic generation ever forms: the group is a consumer group.
                EventKind::Coordinator {
                    event: CoordinatorEvent::GenerationStarted { .. },
                    ..
                } => {
                    panic!("seed {seed}: a classic generation in a consumer group")
                }
                _ => {}
            }
        }
    }
    assert_eq!(profiles.len(), 2, "both consumer-protocol clients run: {profiles:?}");
    assert!(injected >= reports.len(), "only {injected} faults over {} seeds", reports.len());
    assert!(fenced > 0 && handed_over > 0, "fenced {fenced}, assigned {handed_over}");
    // Every KIP-848 trigger point fires somewhere in the CI-sized sweep.
    for event in [
        TriggerEvent::RevocationRequested,
        TriggerEvent::RevocationDone,
        TriggerEvent::PartitionHandedOver,
        TriggerEvent::MemberFenced,
    ] {
        assert!(fired.contains(event.name()), "{} never fired: {fired:?}", event.name());
    }
}

/// consumer_protocol_swarm's seed `seed` on the schedule recorded when its regression was found
/// (`fixtures/`), in the event world.
fn run_recorded(seed: u64) -> groupsim::runner::RunReport {
    let path = format!(
        "{}/tests/fixtures/consumer_protocol_swarm-{seed}.schedule.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let spec = support::recorded_swarm_spec("consumer_protocol_swarm", seed, &text);
    groupsim::runner::run_spec_in(spec, groupsim::runner::WorldKind::Event).expect("runs")
}

/// Regression: consumer_protocol_swarm seed 311 (its schedule then, kept under `fixtures/`)
/// reported `stalled-member` for correct KIP-848 behaviour. Mechanism: m0's commit was accepted
/// after the heal and its session expired under a second later; the checker took the commit for
/// contact that restarts a session, as it does in a classic group, but a consumer group's
/// coordinator counts only heartbeats, and m0's last one came before a pause, its next not yet
/// due. Only a classic group's commits are contact now.
#[test]
fn a_consumer_members_commit_does_not_restart_its_session() {
    let r = run_recorded(311);
    assert!(r.verdict.is_ok(), "{}", r.failure_report());
}

/// Regression: consumer_protocol_swarm seeds 1303 and 3119 (1303's schedule kept under
/// `fixtures/`) reported `lost-commit` and `position-rewind` for a zombie's start. Mechanism
/// (1303): m4's session expired at 28.1 s while pauses held it; its partitions went to other
/// members, who committed. When its last pause ended (60.6 s) m4 applied the OffsetFetch answer
/// it had before and started orders-0 from 0, then heard UNKNOWN_MEMBER_ID at its next
/// heartbeat. A member the group removed is a zombie until it hears so: where it starts is not
/// the group's resume (its commits meet the zombie rules).
#[test]
fn a_removed_members_start_from_an_old_offset_fetch_is_not_judged() {
    let r = run_recorded(1303);
    assert!(r.verdict.is_ok(), "{}", r.failure_report());
    // The situation is still played: a member starts a partition after its session expired.
    let removed_then_started = r.history.events().iter().any(|e| {
        matches!(&e.kind, groupsim_history::EventKind::Member {
            event: groupsim_history::MemberEvent::PositionInitialized { member_id, .. }, ..
        } if r.history.events().iter().any(|f| f.at_ms < e.at_ms && matches!(&f.kind,
            groupsim_history::EventKind::Coordinator {
                event: groupsim_history::CoordinatorEvent::ConsumerGroup(
                    groupsim_history::ConsumerGroupEvent::MemberRemoved { member_id: gone, .. }), ..
            } if gone == member_id)))
    });
    assert!(removed_then_started, "no member starts a partition after its removal any more");
}

/// Regression: consumer_protocol_swarm seed 6098 (its schedule of then) reported
/// `unowned-commit`. Mechanism: the broker read m1's commit of orders-1, orders-9 and orders-10
/// at 33.6 s, while m1 owned them, and the `late_request` fault held it until 39.6 s; m1 had
/// released orders-10 at 38.8 s. The coordinator validated the member epoch, still m1's, and
/// accepted the commit on a partition m1 no longer owned. The late-request hazard explains what
/// a late commit sent while owned proves, as it explains the offsets it moves back. Since
/// Fetches wait at the broker every history differs; the drawn seed 8145 plays the same.
#[test]
fn a_late_commit_sent_while_owned_is_the_late_request_hazard() {
    let spec = groupsim::scenarios::find("consumer_protocol_swarm").expect("in catalogue");
    let r = groupsim::runner::run_spec_in(spec.build(8145), groupsim::runner::WorldKind::Event)
        .expect("runs");
    assert!(r.verdict.is_ok(), "{}", r.failure_report());
    let unowned = r.verdict.hazards.iter().any(|e| {
        e.hazard == groupsim_checker::Hazard::LateRequest
            && e.anomaly.class == groupsim_checker::AnomalyClass::UnownedCommit
    });
    assert!(unowned, "{:?}", r.verdict.hazards);
}

/// Regression: consumer_protocol_swarm seed 523 (once Fetches waited at the broker) reported
/// `stuck`: m1 owned nothing while its target was payments-2 and payments-6. Mechanism: m1
/// rejoined at epoch 0 on its coordinator connection behind an OffsetCommit the `late_request`
/// fault held; it gave the rejoin up, rejoined again on a new connection and was answered epoch
/// 22 with nothing yet (the partitions were still being released). When the held commit was
/// processed, so was the rejoin behind it: Kafka accepts epoch 0 from a member it knows
/// (KAFKA-19233), reconciled m1 to the now released partitions and wrote them into an answer
/// nobody read; a coordinator sends an assignment again only when it changes or the member
/// sends its owned partitions, so m1 never heard of them. Kafka does the same: the
/// `overtaken-rejoin` hazard. Since a reset reaches a connection that lost a frame (648b0f9)
/// the seed's history no longer plays that rejoin; the hazard's rule is pinned by the checker's
/// own test,
/// `partitions_given_by_a_rejoin_processed_after_its_newer_retry_are_the_overtaken_rejoin_hazard`,
/// and the seed stays a regression seed: it must pass, named hazard or not.
#[test]
fn a_rejoin_processed_after_its_newer_retry_is_the_overtaken_rejoin_hazard() {
    let spec =
        groupsim::scenarios::find("consumer_protocol_swarm").expect("in catalogue").build(523);
    let r = groupsim::runner::run_spec_in(spec, groupsim::runner::WorldKind::Event).expect("runs");
    assert!(r.verdict.is_ok(), "{}", r.failure_report());
}

/// Regression, found by `groupsim explore` with no bug switch (consumer_protocol_swarm seed
/// 50169, its drawn schedule mutated; shrunk to the one fault below): a false `split-assignment`.
/// Mechanism: the first member joined at t=88 ms and broker 0 gave it every partition at member
/// epoch 1, its answer waiting for the group's records to be stored; the coordinator moved to
/// broker 1 at t=103 ms before they were, so the member was answered NOT_COORDINATOR and broker
/// 1's load found nothing of the group. Broker 1 started the group afresh and gave the
/// partitions to the first member to reach it. Kafka does the same (its records were never
/// written); the checker's view of the group, built from the coordinators' events, still counted
/// the first member the owner. A group the next coordinator starts without loading now owns
/// nothing (the checker's own test is
/// `a_group_started_afresh_after_an_unload_owns_nothing_but_a_loaded_one_keeps_its_owners`).
#[test]
fn a_group_started_afresh_after_a_move_before_its_store_splits_nothing() {
    use groupsim::faults::{Fault, FaultSchedule, ScheduledFault};
    use groupsim::runner::{run_seed_with, RunOptions};
    let schedule = FaultSchedule::new(vec![ScheduledFault {
        at_ms: 103,
        fault: Fault::CoordinatorMove { group: "groupsim".into(), to: 1, load_ms: 2_583 },
    }]);
    let s = groupsim::scenarios::find("consumer_protocol_swarm").expect("in catalogue");
    let options = RunOptions { schedule: Some(schedule), ..RunOptions::default() };
    let r = run_seed_with(&s, 50_169, &options).expect("runs");
    assert!(r.verdict.is_ok(), "{}", r.failure_report());
    // The situation: broker 0 gave partitions before the move, broker 1 never loaded the group
    // and gave them again.
    let (mut given_by, mut loaded) = (BTreeSet::new(), false);
    for e in r.history.events() {
        if let EventKind::Coordinator { broker, event: CoordinatorEvent::ConsumerGroup(ce) } =
            &e.kind
        {
            match ce {
                ConsumerGroupEvent::PartitionsAssigned { .. } => {
                    given_by.insert(*broker);
                }
                ConsumerGroupEvent::GroupLoaded { .. } => loaded = true,
                _ => {}
            }
        }
    }
    assert!(given_by.contains(&0) && given_by.contains(&1), "assigned by {given_by:?}");
    assert!(!loaded, "broker 1 loaded the group: not the situation this test is about");
}
