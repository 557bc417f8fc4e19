//! `consumer_protocol_swarm`: the swarm's fault kinds on KIP-848 consumer-protocol members (Java
//! and librdkafka, drawn per member), with event triggers aimed at the consumer protocol's own
//! moments: a member asked to revoke (aimed at the partitions' new owner), its revocation done
//! and acknowledged, a partition handed over, a fenced member rejoining. The checker must find
//! no anomaly and the group must converge after the safety phase.
//!
//! Seeds: `GROUPSIM_SEEDS=<n>` (default sized for CI), or `GROUPSIM_SEED=<n>` to replay one.

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

/// Regression: consumer_protocol_swarm seed 311 (its schedule then, kept under `fixtures/`)
/// reported `stalled-member` for correct KIP-848 behaviour. Mechanism: m0's commit was accepted
/// after the heal and its session expired under a second later; the checker took the commit for
/// contact that restarts a session, as it does in a classic group, but a consumer group's
/// coordinator counts only heartbeats, and m0's last one came before a pause, its next not yet
/// due. Only a classic group's commits are contact now.
#[test]
fn a_consumer_members_commit_does_not_restart_its_session() {
    let path = format!(
        "{}/tests/fixtures/consumer_protocol_swarm-311.schedule.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let spec = groupsim::testing::recorded_swarm_spec("consumer_protocol_swarm", 311, &text);
    let r = groupsim::runner::run_spec_in(spec, groupsim::runner::WorldKind::Event).expect("runs");
    assert!(r.verdict.is_ok(), "{}", r.failure_report());
}
