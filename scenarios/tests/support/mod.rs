//! What several scenario test files share.

use groupsim::faults::FaultSchedule;
use groupsim::scenario::ScenarioSpec;
use groupsim::scenarios;

/// `scenario`'s seed `seed` on a fault schedule recorded when a regression was found (JSON, as
/// `replay` writes it), in the shape swarms drew before fault breadth: the plain network, no
/// traffic lulls, the swarms' topics. Later additions to the swarms' draws change what a seed
/// draws, not the run a regression test needs.
pub fn recorded_swarm_spec(scenario: &str, seed: u64, schedule_json: &str) -> ScenarioSpec {
    let mut spec = scenarios::find(scenario).unwrap_or_else(|e| panic!("{e}")).build(seed);
    spec.faults = FaultSchedule::from_json(schedule_json)
        .unwrap_or_else(|e| panic!("{scenario} seed {seed}: not a schedule: {e}"));
    spec.network = Default::default();
    spec.producer.lulls.clear();
    spec.topics = scenarios::swarm::SWARM_TOPICS.iter().map(|(t, n)| (t.to_string(), *n)).collect();
    spec
}
