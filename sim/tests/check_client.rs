//! `check-client` in CI: one short seed (a few seconds of faults, then the heal phase) per
//! installed real client under client and broker faults must pass the black-box rules, and the
//! deliberately wrong commit-before-process mode of one adapter must be caught as lost records
//! within five seeds. Run one after another in one test, so the clusters and client processes
//! do not compete for the CI machine's cores. With GROUPSIM_SKIP_REAL_CLIENTS=1 the test prints
//! that it skipped; clients that are not installed are skipped by name.
//!
//! Real clients and real time make a seed repeatable (the same schedule), not bit-exact: a
//! failure here prints the schedule and where the history and timelines were written.

use std::path::{Path, PathBuf};
use std::time::Instant;

use groupsim::check_client::clients::{self, Interpreters, Launcher};
use groupsim::check_client::run::{self, Settings};
use groupsim::checker::AnomalyClass;

/// The seed every client runs in CI.
const CI_SEED: u64 = 1;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the crate is in the workspace").into()
}

fn settings(work_ms: u64) -> Settings {
    Settings {
        fault_ms: 6_000,
        heal_ms: 30_000,
        session_timeout_ms: 6_000,
        work_ms,
        out_dir: groupsim::runner::output_dir().join("ci"),
    }
}

fn failure(launcher: &Launcher, outcome: &run::Outcome) -> String {
    let dir = run::write_artifacts(outcome).map(|d| d.display().to_string()).unwrap_or_default();
    let anomalies: Vec<String> =
        outcome.verdict.anomalies.iter().map(|a| format!("{}: {}", a.class, a.message)).collect();
    format!(
        "{} {} seed {}: {}\nschedule:\n{}\nhistory, trace and timelines: {dir}",
        launcher.kind.name,
        outcome.version,
        outcome.seed,
        anomalies.join("\n"),
        outcome.plan
    )
}

#[test]
fn every_installed_client_passes_a_short_faulted_seed_and_commit_before_process_is_caught() {
    if std::env::var("GROUPSIM_SKIP_REAL_CLIENTS").is_ok_and(|v| v == "1") {
        println!("skipped: GROUPSIM_SKIP_REAL_CLIENTS=1 (check-client not run)");
        return;
    }
    let interp = Interpreters::defaults(&repo_root());
    let mut kafka_python = None;
    for kind in clients::CLIENTS {
        let Some(launcher) = clients::launcher(kind, &interp).expect("probing the client") else {
            println!("{}: skipped (not installed)", kind.name);
            continue;
        };
        let started = Instant::now();
        let mode = kind.modes[0];
        let outcome = run::run_seed(&launcher, mode, CI_SEED, &settings(2))
            .unwrap_or_else(|e| panic!("{}: {e}", kind.name));
        assert!(outcome.verdict.anomalies.is_empty(), "{}", failure(&launcher, &outcome));
        assert!(outcome.verdict.processed > 0, "{}: nothing processed", kind.name);
        println!(
            "{} {} {mode} seed {CI_SEED}: ok, {} processed, {} duplicates, {:.1} s",
            kind.name,
            outcome.version,
            outcome.verdict.processed,
            outcome.verdict.duplicates,
            started.elapsed().as_secs_f64()
        );
        if kind.name == "kafka-python" {
            kafka_python = Some(launcher);
        }
    }

    // Commit-before-process: the batch's offsets are committed, then each record takes 50 ms
    // to process; a member killed (or expelled) meanwhile leaves records below the committed
    // offset that nobody processes. The checker must call them lost.
    let Some(launcher) = kafka_python else { return };
    for seed in 0..5 {
        let outcome = run::run_seed(&launcher, "before", seed, &settings(50))
            .unwrap_or_else(|e| panic!("kafka-python before: {e}"));
        let classes: Vec<AnomalyClass> =
            outcome.verdict.anomalies.iter().map(|a| a.class).collect();
        println!("kafka-python before seed {seed}: {classes:?}");
        if classes.contains(&AnomalyClass::LostRecord) {
            return;
        }
    }
    panic!("commit-before-process was not caught as lost records within 5 seeds");
}
