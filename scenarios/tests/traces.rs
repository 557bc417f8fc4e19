//! Rebalance trace snapshots: one per scenario for a fixed seed, stored in the top-level
//! `snapshots/` folder. A behaviour change shows up as a snapshot diff; review it with
//! `cargo insta review`.

use groupsim::runner::run_seed;
use groupsim::scenario;
use groupsim::trace;

fn snapshot(name: &str, seed: u64) {
    let s = scenario::find(name).expect("in catalogue");
    let report = run_seed(&s, seed).expect("run");
    assert!(report.verdict.is_ok(), "{}", report.failure_report());
    let text = trace::text(&report.history);
    insta::with_settings!({
        snapshot_path => "../../snapshots",
        prepend_module_to_snapshot => false,
        omit_expression => true,
    }, {
        insta::assert_snapshot!(format!("{name}-seed{seed}"), text);
    });
}

#[test]
fn membership_churn_trace() {
    snapshot("membership_churn", 1);
}
