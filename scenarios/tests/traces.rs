//! Rebalance summary snapshots: one per scenario for a fixed seed, stored in the top-level
//! `snapshots/` folder. Each holds the run's compact rebalance summary (one block per
//! generation or target epoch, then the verdict), short enough to review; the full trace of the
//! same run is `groupsim trace <scenario> --seed 1`. A behaviour change shows up as a snapshot
//! diff; review it with `cargo insta review` (or accept new ones with
//! `INSTA_UPDATE=always cargo test`).

use groupsim::runner::run_seed;
use groupsim::scenarios;
use groupsim::trace;

/// The seed every trace snapshot uses.
const SEED: u64 = 1;

fn snapshot(name: &str) {
    let s = scenarios::find(name).expect("in catalogue");
    let report = run_seed(&s, SEED).expect("run");
    assert!(report.verdict.is_ok(), "{}", report.failure_report());
    let text = trace::summary(&report.history, &report.verdict);
    insta::with_settings!({
        snapshot_path => "../../snapshots",
        prepend_module_to_snapshot => false,
        omit_expression => true,
        // Shown with a failing snapshot's diff and in `cargo insta review`: how to see the run
        // behind it.
        description => replay(name),
    }, {
        insta::assert_snapshot!(format!("{name}-seed{SEED}"), text);
    });
}

/// The commands that print the summary a snapshot holds and the full trace behind it.
fn replay(name: &str) -> String {
    format!(
        "summary: groupsim trace {name} --seed {SEED} --format summary; \
         full trace: groupsim trace {name} --seed {SEED}"
    )
}

macro_rules! trace_tests {
    ($($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                snapshot(stringify!($name));
            }
        )*

        /// Every scenario in the catalogue has a trace snapshot test above.
        #[test]
        fn every_scenario_has_a_trace_snapshot() {
            let tested = [$(stringify!($name)),*];
            for s in scenarios::catalogue() {
                assert!(tested.contains(&s.name), "scenario {} has no trace snapshot test", s.name);
            }
        }
    };
}

trace_tests!(
    membership_churn,
    coordinator_moves,
    swarm,
    swarm_cooperative,
    swarm_mixed,
    mixed_protocol_swarm,
    steady_state,
    scale_up_down,
    rolling_restart,
    rolling_restart_static,
    coordinator_failover,
    connection_flaps,
    zombie_pause,
    stale_acks,
    partition_expansion,
    slow_revoke,
    rebalance_timeout,
    join_storm,
    cooperative_upgrade,
    profile_java_eager,
    profile_java_cooperative,
    profile_brod,
    profile_elsa,
    profile_kafka_go,
    mixed_profiles,
    consumer_protocol_churn,
    consumer_protocol_swarm,
    protocol_migration,
    consumer_protocol_static,
    migration_faults,
    mixed_subscriptions,
    static_churn,
    group_limits,
    admin_observer,
    static_migration,
    invalid_requests,
);
