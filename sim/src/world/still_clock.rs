//! A guard both worlds put on their simulated clock: a process that keeps asking to run at an
//! instant it has already handled (a core whose `handle_timeout` leaves a timer due, against the
//! sans-IO contract) would otherwise hold the clock still for ever. Past a number of steps at
//! one instant far beyond any run's, the run ends with an error naming the instant and its last
//! step instead.

use groupsim_wire::Millis;

use super::error::WorldError;

/// How many steps one instant may hold before the run is called stuck in time. Every step
/// moves a frame, a process or the stage's schedule on, so an instant holds as many as its
/// hosts have work; a number far past any run's keeps a broken process from hanging a sweep.
pub(super) const STILL_CLOCK_STEPS: u64 = 1_000_000;

/// Counts the steps taken at one instant (see the module docs).
pub(super) struct StillClock {
    limit: u64,
    at: Millis,
    steps: u64,
}

impl StillClock {
    /// A guard allowing `limit` steps per instant.
    pub(super) fn new(limit: u64) -> Self {
        Self { limit, at: 0, steps: 0 }
    }

    /// One more step at `at`, `what` naming it (written only for the error): the error once
    /// the instant has held more than the limit.
    pub(super) fn step(
        &mut self,
        at: Millis,
        what: impl FnOnce() -> String,
    ) -> Result<(), WorldError> {
        if at != self.at {
            self.at = at;
            self.steps = 0;
        }
        self.steps += 1;
        if self.steps <= self.limit {
            return Ok(());
        }
        Err(WorldError::Sim {
            at_ms: at,
            reason: format!(
                "the simulated clock stood still: more than {} steps at this instant, the last \
                 {}; a process keeps asking to run at an instant it has already handled (a timer \
                 still due after its handle_timeout)",
                self.limit,
                what()
            ),
        })
    }
}
