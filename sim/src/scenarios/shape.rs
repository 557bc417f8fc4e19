//! The shape most recipes share: members that start within 3 s, spread over the client hosts,
//! two topics, a producer until the safety phase ends, then the liveness phase.

use groupsim_coordinator::CoordinatorConfig;
use groupsim_member::ClientProfile;
use groupsim_wire::Millis;
use rand_chacha::ChaCha8Rng;

use crate::faults::{Fault, ScheduledFault};
use crate::recipe::{Recipe, MIN_SAFETY_MS};
use crate::scenario::{liveness_bound, member_config, ScenarioSpec};

/// The common shape, a [`Recipe`] like any user's: `members` Java eager members spread over
/// `client_hosts`, starting within 3 s, two topics (8 + 4 partitions), a producer until
/// `safety_end`, then the liveness phase with the bound the members' settings imply. Returns the
/// drawn run and the workload stream, for the scenario to shape further. A safety phase shorter
/// than a recipe allows (a scenario whose members arrive later) is drawn at the shortest and
/// set after.
pub(super) fn base(
    name: &str,
    seed: u64,
    members: u32,
    brokers: i32,
    client_hosts: usize,
    safety_end: Millis,
) -> (ScenarioSpec, ChaCha8Rng) {
    let coordinator = CoordinatorConfig { initial_rebalance_delay_ms: 1_000, ..Default::default() };
    let bound = liveness_bound(&member_config("m0", ClientProfile::JavaEager), &coordinator);
    let recipe = Recipe::builder(name)
        .brokers(brokers)
        .client_hosts(client_hosts)
        .topic("orders", 8)
        .topic("payments", 4)
        .members(members as usize, ClientProfile::JavaEager)
        .coordinator(|c| *c = coordinator)
        .safety_phase_ms(safety_end.max(MIN_SAFETY_MS))
        .liveness_bound_ms(bound)
        .build()
        .unwrap_or_else(|e| panic!("the catalogue's shape is a valid recipe: {e}"));
    let (mut spec, rng) = recipe.draw(seed);
    spec.producer.stop_ms = safety_end;
    spec.liveness_start_ms = safety_end;
    (spec, rng)
}

/// A fault at `at_ms`.
pub(super) fn at(at_ms: Millis, fault: Fault) -> ScheduledFault {
    ScheduledFault { at_ms, fault }
}
