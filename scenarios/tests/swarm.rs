//! `swarm`: every fault kind is available to a seeded swarm. Each seed enables a random subset of
//! kinds at random rates (swarm testing: different seeds explore different fault mixes), applies
//! them during a 60 s safety phase, then heals everything; the group must converge within the
//! liveness bound and the checker must find no anomaly.
//!
//! Seeds: `GROUPSIM_SEEDS=<n>` (default sized for CI), or `GROUPSIM_SEED=<n>` to replay one.

mod support;

use groupsim::testing::check_scenario;
use groupsim_checker::AnomalyClass;
use groupsim_history::{EventKind, WorldEvent};

/// Swarm seed `seed` on the fault schedule it drew when its regression was found (kept under
/// `fixtures/`), in the swarm's shape of then (see `recorded_swarm_spec`).
fn recorded(seed: u64) -> groupsim::scenario::ScenarioSpec {
    let path = format!("{}/tests/fixtures/swarm-{seed}.schedule.json", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    support::recorded_swarm_spec("swarm", seed, &text)
}

/// [`recorded`] run in `world`.
fn run_recorded(seed: u64, world: groupsim::runner::WorldKind) -> groupsim::runner::RunReport {
    groupsim::runner::run_spec_in(recorded(seed), world).expect("runs")
}

#[test]
fn swarm_passes_the_checker() {
    let reports = check_scenario("swarm", 24);
    let mut injected = 0;
    for r in &reports {
        assert!(r.spec.swarm.is_some(), "swarm scenario records its swarm choice");
        injected += r
            .history
            .events()
            .iter()
            .filter(|e| {
                matches!(e.kind, EventKind::World(WorldEvent::FaultInjected { applied: true, .. }))
            })
            .count();
    }
    // The sweep really exercised faults (not a run of quiet seeds).
    assert!(
        injected >= reports.len(),
        "only {injected} faults applied over {} seeds",
        reports.len()
    );
}

/// Regression: swarm seed 361 reported a regressed, lost and duplicated commit for correct Kafka
/// behaviour. Mechanism: member m1 sent a commit of orders-2 at offset 416 while a latency spike
/// slowed broker-1's links; its connections were dropped, it reconnected and committed 419,
/// and the old connection's commit of 416 was validated after it, half a second later — the
/// event world drew each frame's latency on its own, so a frame on the new connection overtook
/// one sent earlier on the old connection over the same path by more than a second. Two TCP
/// connections between the same hosts share the path (a spike is queueing on it), so a frame
/// now lands at most the link's normal jitter before an earlier one of another connection.
#[test]
fn a_later_connection_does_not_overtake_an_earlier_one_through_a_latency_spike() {
    let r = run_recorded(361, groupsim::runner::WorldKind::Event);
    assert!(r.verdict.is_ok(), "{}", r.failure_report());
    let spikes = r.history.events().iter().filter(|e| {
        matches!(&e.kind, EventKind::World(WorldEvent::FaultInjected { fault, applied: true })
            if format!("{fault:?}").starts_with("LatencySpike"))
    });
    assert!(spikes.count() > 0, "seed 361 still draws the latency spike it needs");
}

/// The slow revokes a seed draws for `member` before the faults heal.
fn slow_revokes_of(spec: &groupsim::scenario::ScenarioSpec, member: &str) -> usize {
    spec.faults
        .faults
        .iter()
        .filter(|f| f.at_ms < spec.liveness_start_ms)
        .filter(|f| matches!(&f.fault, groupsim::faults::Fault::SlowRevoke { member: m, .. } if m == member))
        .count()
}

/// Regression: swarm seeds 819 and 2676 (and, in the turmoil world, 2207) ended `stuck` at the
/// liveness deadline for a fault model that outlived its faults. Mechanism: several slow-revoke
/// faults drawn for one member before its next revoke callback added up (819: four slowdowns of
/// at most 23 s made one 56 s callback for m3, which began just before the heal), and an eager
/// member kept a slowdown no callback had taken up through the heal (819: m0's 25 s, taken up by
/// a rebalance 57 s into the liveness phase, so m0 rejoined 0.2 s before the deadline). Kafka's
/// timeouts bound neither: the scenario's liveness bound counts from the heal, after which no
/// fault acts. Now slowdowns before one callback describe that callback (the longest holds),
/// and the heal drops a slowdown not yet taken up, eager or cooperative.
#[test]
fn slow_revokes_neither_add_up_nor_outlive_the_heal() {
    use groupsim::runner::{run_spec_in, WorldKind};
    for (seed, member, world) in [
        (819, "m3", WorldKind::Event),
        (2676, "m0", WorldKind::Event),
        (2676, "m0", WorldKind::Turmoil),
    ] {
        let spec = recorded(seed);
        assert!(
            slow_revokes_of(&spec, member) >= 2,
            "seed {seed} still draws the repeated slow revokes of {member} it needs"
        );
        let r = run_spec_in(spec, world).expect("runs");
        assert!(r.verdict.is_ok(), "seed {seed} in {world:?}: {}", r.failure_report());
    }
}

/// The late-request hazard (issue: a request can outlive its connection). Mechanism: a stalled
/// request handler holds a member's OffsetCommit past the member's request timeout; the member
/// gives it up, reconnects and commits further on the new connection; then the broker processes
/// the old request, and the group's committed offset goes back (swarm seed 361 showed it once
/// through latency draws). Kafka orders requests per connection only, so this is Kafka's hazard,
/// not a client bug: the swarm plays it as a named fault (`late_request`), the history records
/// when it acts, and the checker reports the anomalies it explains apart, without failing the run.
#[test]
fn the_late_request_hazard_is_played_recorded_and_explained_in_both_worlds() {
    use groupsim::runner::{run_spec_in, WorldKind};
    let s = groupsim::scenarios::find("swarm").expect("in catalogue");
    for world in [WorldKind::Event, WorldKind::Turmoil] {
        let mut seen = None;
        for seed in 0..40 {
            let spec = s.build(seed);
            let armed = spec
                .faults
                .faults
                .iter()
                .any(|f| matches!(f.fault, groupsim::faults::Fault::LateRequest { .. }));
            if !armed {
                continue;
            }
            let r = run_spec_in(spec, world).expect("runs");
            assert!(r.verdict.is_ok(), "seed {seed} in {world:?}: {}", r.failure_report());
            let played = r.history.events().iter().any(|e| {
                matches!(e.kind, EventKind::World(WorldEvent::RequestProcessedLate { .. }))
            });
            if played && !r.verdict.hazards.is_empty() {
                seen = Some(seed);
                break;
            }
        }
        assert!(seen.is_some(), "no swarm seed of 0..40 showed the hazard in {world:?}");
    }
}

/// The first swarm seed of `seeds` (event world) that passes while its late-request hazard
/// explains an offset regression whose late commit `fits` (the history, and the late commit's
/// member id, partition and offset).
fn first_late_regression(
    seeds: std::ops::Range<u64>,
    fits: impl Fn(&groupsim_history::History, &str, &groupsim_wire::TopicPartition, i64) -> bool,
) -> Option<u64> {
    use groupsim_history::CoordinatorEvent;
    let s = groupsim::scenarios::find("swarm").expect("in catalogue");
    seeds.into_iter().find(|&seed| {
        let r = groupsim::runner::run_spec_in(s.build(seed), groupsim::runner::WorldKind::Event)
            .expect("runs");
        assert!(r.verdict.is_ok(), "seed {seed}: {}", r.failure_report());
        r.verdict.hazards.iter().any(|e| {
            e.hazard == groupsim_checker::Hazard::LateRequest
                && e.anomaly.class == AnomalyClass::OffsetRegression
                && match &r.history.events()[e.cause].kind {
                    EventKind::Coordinator {
                        event:
                            CoordinatorEvent::OffsetCommitAccepted {
                                member_id, partition, offset, ..
                            },
                        ..
                    } => fits(&r.history, member_id, partition, *offset),
                    _ => false,
                }
        })
    })
}

/// Regression: swarm seed 26431 reported an offset regression for Kafka's late-request hazard
/// arising without the named fault. Mechanism: m0's commit of orders-0 at 769 was on its way
/// during a latency spike on broker-0 when a connection drop closed its connection; m0 recorded
/// it as failed (DISCONNECTED), reconnected and committed 772, and the old frame, already on the
/// wire, reached the broker 6 ms after the new one (within the network's jitter between
/// connections) and was processed: 772 went back to 769. The checker now recognises a commit the
/// member gave up with its connection, never sent again and the coordinator accepted after a
/// newer one as the late-request hazard. Every history since has differed (Fetches wait at the
/// broker; overlapping pauses overlap); of swarm seeds 0..14999 at 05b9960 one plays it, 13618:
/// a late commit, explained by the hazard, whose member no named late-request fault delayed.
#[test]
fn a_commit_outliving_its_dropped_connection_is_the_late_request_hazard() {
    let unnamed = |h: &groupsim_history::History, member_id: &str, _: &_, _| {
        !h.events().iter().any(|e| {
            matches!(&e.kind, EventKind::World(WorldEvent::RequestProcessedLate {
                member_id: Some(id), ..
            }) if id == member_id)
        })
    };
    let seed = first_late_regression(13618..13619, unnamed);
    assert!(seed.is_some(), "swarm seed 13618 no longer plays the hazard without the named fault");
}

/// Regression: swarm seed 78537 (the 100,000-seed campaign) reported offset regressions and
/// duplicate commits for the same hazard. Mechanism: m0 sent its commit of orders-0 at 192 on its
/// coordinator connection just as a NOT_COORDINATOR heartbeat answer made it close that
/// connection; it recorded the commit lost (DISCONNECTED), sent the same offsets again on a new
/// connection (accepted, acknowledged), then committed 203. The first frame, lost on broker-1's
/// lossy link and retransmitted after the close, reached the broker 1.4 s later and was
/// processed: 203 went back to 192. The checker matched the resend to that old frame's offsets
/// and no longer counted the old one as given up; it now matches each acceptance to a send the
/// member still awaits first, so the acceptance beyond those is the given-up frame. Every history
/// since has differed; the first swarm seed at 05b9960 that plays it is 332: a late commit,
/// explained by the hazard, whose offset the coordinator also accepted from the same member id
/// (its resend).
#[test]
fn a_given_up_commit_landing_after_its_own_resend_is_the_late_request_hazard() {
    use groupsim_history::CoordinatorEvent;
    let resent = |h: &groupsim_history::History, member_id: &str, tp: &_, offset: i64| {
        let accepted = h.events().iter().filter(|e| {
            matches!(&e.kind, EventKind::Coordinator {
                event: CoordinatorEvent::OffsetCommitAccepted {
                    member_id: m, partition: p, offset: o, ..
                },
                ..
            } if m == member_id && p == tp && *o == offset)
        });
        accepted.count() >= 2
    };
    let seed = first_late_regression(332..333, resent);
    assert!(seed.is_some(), "swarm seed 332 no longer lands a given-up commit after its resend");
}

/// Regression: swarm seed 83345 (the 100,000-seed campaign) reported `stalled-member`. Mechanism:
/// a stale-ack fault (27.6 s) and a slow-batch fault (24.4 s) were drawn for m3 at 26.8 s and
/// 29.3 s while it had nothing to process; both waited for its next batch, the first of orders-5
/// at 59.99 s, 6 ms before the heal, and added up: the batch finished at 112.2 s, and m3 (which
/// processes a partition's batches in order) processed nothing more of orders-5 for 52 s after
/// the heal. Faults taken up by one batch now describe that batch, the longer holding, as slow
/// revokes before one callback do: no fault outlives the heal by more than it was drawn to last.
#[test]
fn a_slow_batch_and_a_stale_ack_on_one_batch_do_not_add_up() {
    let spec = groupsim::scenarios::find("swarm").expect("in catalogue").build(83345);
    let r = groupsim::runner::run_spec_in(spec, groupsim::runner::WorldKind::Event).expect("runs");
    assert!(r.verdict.is_ok(), "{}", r.failure_report());
}

/// Regression: swarm seeds 9864 and 10455 reported `lost-commit` for the late-request hazard's
/// aftermath. Mechanism (9864): a late commit moved orders-2 back from 295 to 259; m2, given the
/// partition while 259 was in force, fetched it, then was held up and started from 259 only after
/// the offset had caught up again, 20 s later. What it fetched was the coordinator's answer while
/// the hazard's effect lasted, so the hazard explains its start however late it is used.
#[test]
fn a_member_using_an_offset_the_hazard_moved_back_is_explained() {
    for seed in [9864, 10455] {
        let r = run_recorded(seed, groupsim::runner::WorldKind::Event);
        assert!(r.verdict.is_ok(), "seed {seed}: {}", r.failure_report());
        assert!(
            r.verdict.hazards.iter().any(|e| e.anomaly.class == AnomalyClass::LostCommit),
            "seed {seed} still shows the lost commit, as a hazard"
        );
    }
}

/// Regression: swarm seeds 10968 and 4222 reported `stalled-member` for a member paused across
/// the heal. Mechanism (10968): a trigger paused m3 for 9.2 s right after its SyncGroup was
/// answered, from 54.3 s to 63.5 s; the answer reached it when the pause ended, after the heal,
/// and its session (last renewed by its join at 54.3 s) expired 0.8 s later, before it could
/// heartbeat. A member can heartbeat only once it settled (the heal, its pause's end, its
/// start), so only contact its coordinator had with it after that counts.
#[test]
fn a_member_paused_across_the_heal_is_not_stalled() {
    for seed in [10968, 4222] {
        let r = run_recorded(seed, groupsim::runner::WorldKind::Event);
        assert!(r.verdict.is_ok(), "seed {seed}: {}", r.failure_report());
        let paused = r.history.events().iter().any(|e| {
            matches!(&e.kind, EventKind::World(WorldEvent::FaultInjected { fault, applied: true })
                if matches!(fault, groupsim::faults::Fault::MemberPause { .. }))
        });
        assert!(paused, "seed {seed} still pauses a member");
    }
}

/// Regression: swarm seed 1854 (and 4436, 7008, 8265) reported `stalled-member` for a crashed
/// incarnation's session. Mechanism (1854): m3-10's commit, held by the late-request hazard,
/// was processed at 61.4 s, after m3 had crashed (56.0 s) and restarted (58.0 s) as a process
/// that had not joined yet; the coordinator renewed m3-10's session with that commit and expired
/// it ten seconds later. The checker took the old id for the live process's: an id a member
/// reported before its last start belongs to the incarnation before.
#[test]
fn a_crashed_incarnations_session_is_not_the_live_members() {
    for seed in [1854, 4436] {
        let r = run_recorded(seed, groupsim::runner::WorldKind::Event);
        assert!(r.verdict.is_ok(), "seed {seed}: {}", r.failure_report());
    }
}

/// Regression: swarm seeds 53293 and 74009 reported `stalled-member` for a member that never
/// learned it had joined. Mechanism (53293): m4's JoinGroup was read by broker-1 at 52.4 s; a
/// connection drop closed that connection at 55.9 s, and a partition of m4's host (57.3 s to
/// 58.0 s) lost the answer to the new connection's handshake, so the member waited for its join
/// request's timeout. After the heal the coordinator completed generation 6 with m4-14's old
/// join, which restarted its session there; the answer went to the closed connection and the
/// session expired ten seconds later. The checker counted the generation as the coordinator
/// hearing from the member: only an answer the member got, or a commit read from it, is contact.
#[test]
fn a_generation_the_member_never_heard_of_is_no_contact() {
    for seed in [53293, 74009] {
        let r = run_recorded(seed, groupsim::runner::WorldKind::Event);
        assert!(r.verdict.is_ok(), "seed {seed}: {}", r.failure_report());
    }
}

/// Broker-side BUGGIFY, in both worlds: a broker answers a member's next commits with an error
/// Kafka's coordinator gives (here COORDINATOR_NOT_AVAILABLE, as when the offsets log is not
/// writable), and the nemesis starts a rebalance as a membership change elsewhere would. A
/// correct member gets the error, retries, and follows the rebalance; the run passes and the
/// history records both faults.
#[test]
fn injected_error_answers_and_forced_rebalances_are_played_in_both_worlds() {
    use groupsim::faults::{Fault, FaultSchedule, GroupApi, InjectedError, ScheduledFault};
    use groupsim::runner::{run_spec_in, WorldKind};
    use groupsim_history::{CoordinatorEvent, MemberEvent};
    let s = groupsim::scenarios::find("steady_state").expect("in catalogue");
    for world in [WorldKind::Event, WorldKind::Turmoil] {
        let mut spec = s.build(1);
        let inject = Fault::InjectError {
            api: GroupApi::OffsetCommit,
            error: InjectedError::CoordinatorNotAvailable,
            count: 3,
        };
        let force = Fault::ForceRebalance { group: String::new() };
        spec.faults = FaultSchedule::new(vec![
            ScheduledFault { at_ms: 15_000, fault: inject },
            ScheduledFault { at_ms: 20_000, fault: force },
        ]);
        let r = run_spec_in(spec, world).expect("runs");
        assert!(r.verdict.is_ok(), "{world:?}: {}", r.failure_report());
        let events = r.history.events();
        let refused = events.iter().filter(|e| {
            matches!(&e.kind, EventKind::Member { event: MemberEvent::CommitFailed { error, .. }, .. }
                if error.contains("COORDINATOR_NOT_AVAILABLE") && e.at_ms >= 15_000)
        });
        assert!(refused.count() >= 1, "{world:?}: a commit got the injected error");
        let generations_after = events.iter().filter(|e| {
            e.at_ms >= 20_000
                && matches!(
                    e.kind,
                    EventKind::Coordinator {
                        event: CoordinatorEvent::GenerationStarted { .. },
                        ..
                    }
                )
        });
        assert!(generations_after.count() >= 1, "{world:?}: the forced rebalance ran");
        let applied = events.iter().filter(|e| {
            matches!(&e.kind, EventKind::World(WorldEvent::FaultInjected { applied: true, .. }))
        });
        assert_eq!(applied.count(), 2, "{world:?}: both faults recorded as applied");
    }
}

/// A lost MEMBER_ID_REQUIRED answer (JoinGroup v4+): the coordinator keeps the member id it
/// handed out pending; the member, its connection gone, joins again without an id and gets
/// another. The first id never comes back and expires at its JoinGroup's session timeout (as
/// Kafka's `addPendingMemberExpiration` does) without holding up the group, in both worlds. A
/// member crashed at that moment leaves its pending id behind the same way.
#[test]
fn a_lost_member_id_required_answer_leaves_a_pending_member_that_expires() {
    use groupsim::runner::{run_spec_in, WorldKind};
    use groupsim::triggers::{Trigger, TriggerAction, TriggerEvent};
    let s = groupsim::scenarios::find("steady_state").expect("in catalogue");
    for world in [WorldKind::Event, WorldKind::Turmoil] {
        for action in
            [TriggerAction::DropConnections, TriggerAction::Crash { restart_after_ms: 3_000 }]
        {
            let mut spec = s.build(1);
            spec.faults.triggers = vec![Trigger {
                id: 0,
                on: TriggerEvent::MemberIdRequired,
                action,
                per_mille: 1000,
                max_fires: 2,
                after_ms: None,
            }];
            let r = run_spec_in(spec, world).expect("runs");
            assert!(r.verdict.is_ok(), "{world:?} {action:?}: {}", r.failure_report());
            let fired = r.history.events().iter().any(|e| {
                matches!(&e.kind, EventKind::World(WorldEvent::TriggerFired { trigger, .. })
                    if trigger.contains("member_id_required"))
            });
            assert!(fired, "{world:?} {action:?}: the trigger never fired");
            let expired = r.probes.get("coordinator.member.pending_expired").copied().unwrap_or(0);
            assert!(expired > 0, "{world:?} {action:?}: no pending member expired: {:?}", r.probes);
        }
    }
}
