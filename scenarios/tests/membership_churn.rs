//! `membership_churn`: members join and leave over time (3 -> 6 -> 2 members, 2 topics, 12
//! partitions). Every join and every LeaveGroup forces an eager rebalance: members commit what
//! they processed on revoke, rejoin, and new owners resume from the committed offsets. The
//! checker must find no lost, duplicated, zombie or unowned commit, and the two survivors must
//! converge (Stable, all 12 partitions assigned, commits at the log end) within the liveness
//! bound.
//!
//! Seeds: `GROUPSIM_SEEDS=<n>` (default sized for CI), or `GROUPSIM_SEED=<n>` to replay one.

use groupsim::testing::check_scenario;

#[test]
fn membership_churn_passes_the_checker() {
    let reports = check_scenario("membership_churn", 40);
    for r in &reports {
        let s = &r.verdict.stats;
        // The run really churned: one generation for the first three members, then at least one
        // per later join and per leave (joins and leaves close together may share a rebalance).
        assert!(s.rebalances >= 4, "seed {}: only {} rebalances", r.spec.seed, s.rebalances);
        assert!(
            s.commits_accepted > 0 && s.records_processed >= s.records_produced,
            "seed {}: processed {} of {} produced",
            r.spec.seed,
            s.records_processed,
            s.records_produced
        );
    }
}
