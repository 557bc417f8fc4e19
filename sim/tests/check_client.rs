//! `check-client` in CI: one short seed (a few seconds of faults, then the heal phase) per
//! installed real client under client and broker faults must pass the black-box rules, and the
//! deliberately wrong commit-before-process mode of every installed adapter must be caught as
//! lost records within five seeds; the same for KIP-848's consumer protocol with the adapter that
//! offers it. Run one after another (each test takes one lock), so the clusters and client
//! processes do not compete for the CI machine's cores. The clients install on first use (see
//! `common::real_clients`); a runtime's clients are skipped, saying so on stderr, when its
//! interpreter (python3, node) is absent (a failure under CI) or GROUPSIM_SKIP_REAL_CLIENTS=1.
//!
//! Real clients and real time make a seed repeatable (the same schedule), not bit-exact: a
//! failure here prints the schedule and where the history and timelines were written.

mod common;

use std::time::Instant;

use groupsim::live::check_client::clients::{self, Launcher};
use groupsim::live::check_client::run::{self, Settings};
use groupsim_checker::AnomalyClass;
use groupsim_member::GroupProtocol;

use common::real_clients;

/// Held by each test of this file: real clients under real time must not compete for cores.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The seed every client runs in CI.
const CI_SEED: u64 = 1;
/// The first seed of the commit-before-process check. Seed 24's plan (6 s of faults) has two
/// members on three partitions, so both always own partitions, and SIGKILLs m0 three times (at
/// 1.1, 3.1 and 4.1 s): a kill lands mid-batch unless a rebalance is under way (when commits
/// are refused, so nothing was committed ahead). Seeds 0..4 catch each adapter too, but at
/// different seeds (kafka-python's first kills land during rebalances until seed 3).
const BEFORE_SEEDS: std::ops::Range<u64> = 24..29;

fn settings(work_ms: u64) -> Settings {
    Settings {
        fault_ms: 6_000,
        heal_ms: 30_000,
        session_timeout_ms: 6_000,
        work_ms,
        out_dir: groupsim::runner::output_dir().join("ci"),
        protocol: GroupProtocol::Classic,
        connections_max_idle_ms: None,
    }
}

fn consumer_protocol(work_ms: u64) -> Settings {
    Settings { protocol: GroupProtocol::Consumer, ..settings(work_ms) }
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

/// The launcher of each of `kinds` whose runtime `test` can run (installed on first use);
/// the others are skipped, with a line saying why.
fn launchers<'a>(
    test: &str,
    kinds: impl IntoIterator<Item = &'a clients::ClientKind>,
) -> Vec<Launcher> {
    let interp = real_clients::interpreters();
    let mut ready = Vec::new();
    let mut launchers = Vec::new();
    for kind in kinds {
        let runtime_ready = match ready.iter().find(|(r, _)| *r == kind.runtime) {
            Some(&(_, ok)) => ok,
            None => {
                let ok = real_clients::ready(test, kind.runtime);
                ready.push((kind.runtime, ok));
                ok
            }
        };
        if !runtime_ready {
            continue;
        }
        let launcher = clients::launcher(*kind, &interp)
            .unwrap_or_else(|e| panic!("{}: {e}", kind.name))
            .unwrap_or_else(|| panic!("{} was installed but does not load", kind.name));
        launchers.push(launcher);
    }
    launchers
}

#[test]
fn every_real_client_passes_a_short_faulted_seed_and_commit_before_process_is_caught() {
    const TEST: &str =
        "every_real_client_passes_a_short_faulted_seed_and_commit_before_process_is_caught";
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let mut installed = Vec::new();
    for launcher in launchers(TEST, &clients::CLIENTS) {
        let kind = launcher.kind;
        let started = Instant::now();
        let mode = launcher.capabilities.modes[0].clone();
        let outcome = run::run_seed(&launcher, &mode, CI_SEED, &settings(2))
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
        installed.push(launcher);
    }

    // Commit-before-process: a batch's offsets are committed, then each record takes 50 ms to
    // process, so a member is behind the producer and mid-batch most of the time. A member
    // SIGKILLed meanwhile (kafkajs: also one closed, or whose batch goes stale in a rebalance,
    // as its eachBatch stops early) leaves records below the committed offset that nobody
    // processes; the next owner starts at the committed offset. The checker must call them lost,
    // for every adapter, within five seeds (each is caught at the first on this machine).
    for launcher in &installed {
        let name = launcher.kind.name;
        let caught = BEFORE_SEEDS.clone().find(|&seed| {
            let started = Instant::now();
            let outcome = run::run_seed(launcher, "before", seed, &settings(50))
                .unwrap_or_else(|e| panic!("{name} before: {e}"));
            let classes: Vec<AnomalyClass> =
                outcome.verdict.anomalies.iter().map(|a| a.class).collect();
            println!(
                "{name} before seed {seed}: {classes:?}, {:.1} s",
                started.elapsed().as_secs_f64()
            );
            classes.contains(&AnomalyClass::LostRecord)
        });
        assert!(
            caught.is_some(),
            "{name}: commit-before-process not caught as lost within 5 seeds"
        );
    }
}

/// KIP-848 (`group.protocol=consumer`), for the adapter that offers it (confluent-kafka): the
/// CI seed under client and broker faults (consumer-group holds and injected errors, expelled
/// members, epoch bumps, coordinator moves) passes the black-box rules in their consumer-group
/// form, and commit-before-process is caught as lost records at the first `before` seed, as
/// for the classic protocol.
#[test]
fn the_consumer_protocol_passes_a_short_faulted_seed_and_commit_before_process_is_caught() {
    const TEST: &str =
        "the_consumer_protocol_passes_a_short_faulted_seed_and_commit_before_process_is_caught";
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let offering: Vec<Launcher> = launchers(TEST, &clients::CLIENTS)
        .into_iter()
        .filter(|l| !l.capabilities.assignors(GroupProtocol::Consumer).is_empty())
        .collect();
    if offering.is_empty() {
        real_clients::skipped(TEST, "no installed release offers group.protocol=consumer");
    }
    for launcher in offering {
        let kind = launcher.kind;
        let started = Instant::now();
        let outcome = run::run_seed(&launcher, "sync", CI_SEED, &consumer_protocol(2))
            .unwrap_or_else(|e| panic!("{} consumer: {e}", kind.name));
        assert!(outcome.verdict.anomalies.is_empty(), "{}", failure(&launcher, &outcome));
        assert!(outcome.verdict.processed > 0, "{}: nothing processed", kind.name);
        let history = std::fs::read_to_string(outcome.dir.join("history.jsonl")).unwrap();
        assert!(
            history.contains("MemberJoined") && !history.contains("GenerationStarted"),
            "{}: the group was not a consumer group",
            kind.name
        );
        println!(
            "{} {} consumer sync seed {CI_SEED}: ok, {} processed, {} duplicates, {:.1} s",
            kind.name,
            outcome.version,
            outcome.verdict.processed,
            outcome.verdict.duplicates,
            started.elapsed().as_secs_f64()
        );
        let seed = BEFORE_SEEDS.start;
        let started = Instant::now();
        let outcome = run::run_seed(&launcher, "before", seed, &consumer_protocol(50))
            .unwrap_or_else(|e| panic!("{} consumer before: {e}", kind.name));
        let classes: Vec<AnomalyClass> =
            outcome.verdict.anomalies.iter().map(|a| a.class).collect();
        println!(
            "{} consumer before seed {seed}: {classes:?}, {:.1} s",
            kind.name,
            started.elapsed().as_secs_f64()
        );
        assert!(
            classes.contains(&AnomalyClass::LostRecord),
            "{}: commit-before-process not caught as lost at seed {seed}",
            kind.name
        );
    }
}
