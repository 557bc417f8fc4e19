//! A member whose own code is broken fails its run with an error that says so, in both worlds,
//! and never takes the harness down with it.
//!
//! Plug-in members (`PluginMember`) are code the harness does not control, and a bug in a core
//! is what a sweep is for: a panic would otherwise unwind through the sweep's worker thread and
//! stop the whole sweep with a message that names no seed, and a timer that stays due after
//! `handle_timeout` (against the sans-IO contract) would hold the simulated clock still for
//! ever. Each becomes the run's `WorldError`: the sweep counts the seed as failed, prints its
//! replay command and goes on, and the seed replays the same failure.

use groupsim::recipe::Recipe;
use groupsim::runner::WorldKind;
use groupsim::world::WorldError;
use groupsim_member::{ClientProfile, MemberOutput, PluginMember, RequestFailure, SansIoMember};
use groupsim_wire::{Millis, RequestId};
use kafka_protocol::messages::ResponseKind;

/// How the member is broken.
#[derive(Clone, Copy, Debug)]
enum Fault {
    /// Its first timer, half a second after it starts, panics.
    Panics,
    /// Its timer stays due however often it fires.
    TimerNeverMovesOn,
}

/// A member that joins nothing and is broken in one way.
#[derive(Debug)]
struct Broken {
    fault: Fault,
    started_at: Option<Millis>,
}

impl SansIoMember for Broken {
    fn start(&mut self, now: Millis) {
        self.started_at = Some(now);
    }
    fn leave(&mut self, _: Millis) {}
    fn handle_response(&mut self, _: Millis, _: RequestId, _: ResponseKind) {}
    fn handle_failure(&mut self, _: Millis, _: RequestId, _: RequestFailure) {}
    fn poll_timeout(&self) -> Option<Millis> {
        let started = self.started_at?;
        Some(match self.fault {
            Fault::Panics => started + 500,
            Fault::TimerNeverMovesOn => started,
        })
    }
    fn handle_timeout(&mut self, now: Millis) {
        if let Fault::Panics = self.fault {
            panic!("broken member: its timer fired at t={now}ms");
        }
    }
    fn poll_output(&mut self) -> Option<MemberOutput> {
        None
    }
    fn is_finished(&self) -> bool {
        false
    }
    fn member_id(&self) -> &str {
        ""
    }
}

/// Two Java consumers and one broken member, in `world`.
fn recipe(fault: Fault, world: WorldKind) -> Recipe {
    let kind = PluginMember::new(format!("broken-{fault:?}"), move |_, _| {
        Box::new(Broken { fault, started_at: None })
    });
    Recipe::builder("broken")
        .topic("orders", 4)
        .members(2, ClientProfile::JavaEager)
        .plugin_members(1, ClientProfile::JavaEager, kind)
        .safety_phase_ms(5_000)
        .world(world)
        .build()
        .expect("a valid recipe")
}

/// A panicking member is the run's error, naming the panic and where it happened; the runs
/// around it are untouched (the same thread runs the next seed), and the seed replays it.
#[test]
fn a_member_that_panics_fails_its_run_with_the_panic_named() {
    for world in [WorldKind::Event, WorldKind::Turmoil] {
        let r = recipe(Fault::Panics, world);
        let runs = r.sweep(0..3);
        assert_eq!(runs.len(), 3, "{world:?}: every seed ran");
        for (seed, run) in runs {
            let Err(WorldError::Panicked { message }) = run else {
                panic!("{world:?} seed {seed}: not a panic: {run:?}");
            };
            assert!(message.starts_with("broken member: its timer fired at t="), "{message}");
            assert!(message.contains("scenarios/tests/broken_members.rs:"), "{message}");
        }
        let fine = Recipe::builder("fine")
            .topic("orders", 4)
            .members(2, ClientProfile::JavaEager)
            .safety_phase_ms(5_000)
            .world(world)
            .build()
            .expect("a valid recipe");
        let before = fine.run(1).expect("runs").history_hash().to_string();
        let _ = r.run(1);
        let after = fine.run(1).expect("runs after a panic on this thread");
        assert_eq!(after.history_hash(), before, "{world:?}: the thread is fit for the next run");
    }
}

/// A member whose timer never moves on ends its run with an error saying its timer is still
/// due, instead of holding the simulated clock still for ever: the member shell's contract
/// check where debug assertions are on (tests), the worlds' clock guard where they are not.
#[test]
fn a_member_whose_timer_never_moves_on_fails_its_run_instead_of_hanging() {
    for world in [WorldKind::Event, WorldKind::Turmoil] {
        let err = recipe(Fault::TimerNeverMovesOn, world).run(0).expect_err("the run fails");
        let text = err.to_string();
        let named = match cfg!(debug_assertions) {
            true => "a member timer is still due at ",
            false => "the simulated clock stood still",
        };
        assert!(text.contains(named), "{world:?}: {text}");
    }
}
