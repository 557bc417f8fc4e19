//! Runs end once the group has converged, not at the liveness deadline: the liveness rule must
//! hold for the grace period (the largest session timeout plus commit interval) with every
//! member's faults played out. The deadline stays the bound for `stuck`.

use groupsim::faults::{Fault, FaultSchedule, ScheduledFault};
use groupsim::runner::{run_spec, RunReport};
use groupsim::scenarios;
use groupsim_checker::AnomalyClass;
use groupsim_history::{EventKind, History, WorldEvent};
use groupsim_wire::Millis;

/// (converged since, grace, ended at) of a run that ended early; `None` if it ran to its bound.
fn held(h: &History) -> Option<(Millis, Millis, Millis)> {
    let events = h.events();
    let end = events.last().map(|e| e.at_ms)?;
    events.iter().find_map(|e| match &e.kind {
        EventKind::World(WorldEvent::LivenessHeld { since_ms, grace_ms }) => {
            Some((*since_ms, *grace_ms, end))
        }
        _ => None,
    })
}

fn run(
    name: &str,
    seed: u64,
    edit: impl FnOnce(&mut groupsim::scenario::ScenarioSpec),
) -> (RunReport, Millis, Millis, Millis) {
    let mut spec = scenarios::find(name).expect("in catalogue").build(seed);
    edit(&mut spec);
    let (start, deadline, grace) =
        (spec.liveness_start_ms, spec.end_ms(), spec.liveness_grace_ms());
    (run_spec(spec).expect("runs"), start, deadline, grace)
}

/// A clean run ends a grace period after it converged, well before its deadline, and passes.
#[test]
fn a_converged_run_ends_one_grace_period_after_convergence() {
    for seed in 0..3 {
        let (r, start, deadline, grace) = run("steady_state", seed, |_| {});
        assert!(r.verdict.is_ok(), "seed {seed}: {:?}", r.verdict.first());
        let (since, g, end) = held(&r.history).expect("ended early");
        assert_eq!(g, grace);
        assert!(since >= start, "seed {seed}: converged at {since}, before the heal at {start}");
        assert!(end >= since + grace && end < since + grace + 200, "seed {seed}: ended at {end}");
        assert!(end < deadline, "seed {seed}: ended at {end}, deadline {deadline}");
    }
}

/// A member crashed just before the heal, restarting later than the group needs to converge
/// without it (its session expires, the rest take its partitions over) plus the grace period:
/// the history shows it stopped, so the liveness rule holds without it — but the run may not
/// end while its restart is still to come; it ends a grace period after the group has
/// converged again with the restarted member. (A paused member needs no such care: it is live
/// in the history, so the rule fails until it has woken and rejoined.)
#[test]
fn a_crashed_member_holds_the_run_open_until_it_has_restarted_and_rejoined() {
    let restart_after_ms = 25_000;
    let (r, start, deadline, grace) = run("steady_state", 1, |spec| {
        let member = spec.members[0].name.clone();
        let at_ms = spec.liveness_start_ms - 1_000;
        spec.faults = FaultSchedule::new(vec![ScheduledFault {
            at_ms,
            fault: Fault::MemberCrash { member, restart_after_ms },
        }]);
    });
    assert!(r.verdict.is_ok(), "{:?}", r.verdict.first());
    let (since, _, end) = held(&r.history).expect("ended early");
    let restarted = start - 1_000 + restart_after_ms;
    assert!(since > restarted, "converged since {since}, but the member restarted at {restarted}");
    assert!(end >= since + grace && end < deadline);
}

/// A group that never converges runs to its deadline and is reported `stuck` there: the early
/// end never cuts a run short of its bound when liveness does not hold. (KAFKA-14024's switch: a
/// member waits for ever for the answer to its pre-rejoin commit.)
#[test]
fn a_group_that_never_converges_runs_to_the_deadline_and_is_stuck() {
    let bug = groupsim::bugs::find("member-revoke-commit-never-completes").expect("bug");
    // The first seed (of a few) whose member gets stuck in the default world: seed 1.
    let (r, _, deadline, _) = (0..5)
        .map(|seed| run("membership_churn", seed, |spec| bug.apply(spec)))
        .find(|(r, ..)| r.verdict.anomalies.iter().any(|a| a.class == AnomalyClass::Stuck))
        .expect("a member stuck within five seeds");
    assert!(held(&r.history).is_none(), "ended early although stuck");
    let end = r.history.events().last().expect("events").at_ms;
    assert!(end >= deadline, "ended at {end}, before the deadline {deadline}");
    assert!(r.verdict.anomalies.iter().any(|a| a.class == AnomalyClass::Stuck));
}
