//! The CI-sized coverage campaign: a sweep of the default catalogue must reach every probe
//! marked required (a rare, bug-prone situation named in the coordinator, the members or the
//! world). A required probe that no seed reaches is a blind spot where a bug would hide unseen;
//! the fix is a scenario or a trigger that reaches it, never un-requiring the probe.

use groupsim::coverage::Coverage;
use groupsim::runner::RunOptions;
use groupsim::sweep::{default_jobs, Seeds, Sweep};

/// Seeds per scenario: what `groupsim coverage --seeds 30` runs (about a minute on 2 cores).
const SEEDS: u64 = 30;

#[test]
fn a_ci_sized_sweep_hits_every_required_probe() {
    let seeds = Seeds { start: 0, count: SEEDS, shard: None };
    let sweep = Sweep::new(&[], seeds, default_jobs(), RunOptions::default()).expect("valid sweep");
    let rows = sweep.run(|_| {});
    let coverage = Coverage::from_rows(&rows);
    let unhit: Vec<String> = coverage
        .unhit_required()
        .iter()
        .map(|p| format!("{} ({})", p.name, p.description))
        .collect();
    assert!(
        unhit.is_empty(),
        "required probes never hit in {} seeds:\n  {}\n{}",
        coverage.seeds,
        unhit.join("\n  "),
        coverage.table()
    );
    // The campaign is also a clean sweep: no anomaly in any seed.
    let failed: Vec<String> = rows
        .iter()
        .filter(|r| r.failed > 0)
        .map(|r| format!("{}: {} failed", r.scenario, r.failed))
        .collect();
    assert!(failed.is_empty(), "{failed:?}");
}
