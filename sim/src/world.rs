//! The world: one turmoil simulation built from a [`ScenarioSpec`]. It hosts the brokers and the
//! client hosts, runs the producer between steps, marks the phases, and collects the history.
//!
//! Everything here is thin glue around the sans-IO cores: the broker hosts run
//! `groupsim_wire::server`, the member tasks run [`crate::driver`].

use std::time::{Duration, UNIX_EPOCH};

use groupsim_history::History;
use groupsim_wire::Millis;

use crate::host::client_host;
use crate::rng::{self, Stream};
use crate::scenario::{MemberPlan, ScenarioSpec};
use crate::stage::Stage;

pub use crate::stage::{Producer, WorldError};

/// Runs `spec` and returns the recorded history. The run ends once the liveness rule has held
/// for the scenario's grace period with every member's faults played out, or at the liveness
/// deadline when it does not (the checker then reports `stuck`).
pub fn run(spec: &ScenarioSpec) -> Result<History, WorldError> {
    let mut stage = Stage::new(spec)?;
    let end_ms = stage.end_ms();
    let mut sim = turmoil::Builder::new()
        .epoch(UNIX_EPOCH + Duration::from_secs(1_700_000_000))
        .rng_seed(rng::sub_seed(spec.seed, Stream::Network))
        .enable_random_order()
        .tick_duration(Duration::from_millis(spec.tick_ms))
        .min_message_latency(Duration::from_millis(spec.latency_ms.0))
        .max_message_latency(Duration::from_millis(spec.latency_ms.1))
        .simulation_duration(Duration::from_millis(end_ms + 60_000))
        .tcp_capacity(4_096)
        .build();
    stage.cluster.install(&mut sim);
    for host in 0..spec.client_hosts {
        let plans: Vec<MemberPlan> =
            spec.members.iter().filter(|m| m.host == host).cloned().collect();
        let history = stage.history.clone();
        let controls = stage.controls.clone();
        let settling = stage.settling.clone();
        let name = client_host(host);
        sim.host(name.clone(), move || {
            crate::driver::run_client_host(
                name.clone(),
                plans.clone(),
                history.clone(),
                controls.clone(),
                settling.clone(),
            )
        });
    }
    loop {
        let now = sim.elapsed().as_millis() as Millis;
        if now >= end_ms || stage.tick(&mut sim, now) {
            break;
        }
        if let Err(e) = sim.step() {
            return Err(WorldError::Sim { at_ms: now, reason: e.to_string() });
        }
    }
    let now = sim.elapsed().as_millis() as Millis;
    let history = stage.finish(now);
    drop(sim);
    Ok(history)
}
