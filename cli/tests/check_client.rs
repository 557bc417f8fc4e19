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

use std::os::unix::fs::PermissionsExt;
use std::process::Command;
use std::time::Instant;

use groupsim_checker::AnomalyClass;
use groupsim_live::check_client::cache::ReleaseCache;
use groupsim_live::check_client::clients::{self, Launcher};
use groupsim_live::check_client::run::{self, Settings};
use groupsim_live::check_client::{spec, CheckError};
use groupsim_member::GroupProtocol;

use common::real_clients::{self, Runtime};

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
        // A built (Rust) adapter is not installed by the installer: its own test builds it.
        let Some(runtime) = Runtime::of(kind.runtime) else {
            continue;
        };
        let runtime_ready = match ready.iter().find(|(r, _)| *r == runtime) {
            Some(&(_, ok)) => ok,
            None => {
                let ok = real_clients::ready(test, runtime);
                ready.push((runtime, ok));
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
/// form, and commit-before-process is caught as lost records within the five `before` seeds,
/// as for the classic protocol. One seed is not enough: a killed consumer-group member's
/// partitions wait for its session to expire, so when the first kill lands before m0 owns
/// anything (a slow process start), the later kills of that seed find it owning nothing.
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
        let caught = BEFORE_SEEDS.clone().find(|&seed| {
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
            classes.contains(&AnomalyClass::LostRecord)
        });
        assert!(
            caught.is_some(),
            "{}: commit-before-process not caught as lost within five seeds",
            kind.name
        );
    }
}

/// An old release of each family, installed into the release cache on first use: the oldest
/// the adapters support that installs from a wheel on the CI's Python (aiokafka 0.7.1, older
/// still, builds from source and runs too: docs/log/findings.md); samsa's only if the cache has it
/// built already (its build takes minutes).
const OLD_RELEASES: [&str; 5] = [
    "kafka-python==2.0.2",
    "aiokafka==0.8.0",
    "confluent-kafka==2.0.2",
    "kafkajs@1.16.0",
    "samsa@0.1.8",
];

/// An old release of each family runs a short faulted seed to a verdict: the adapter
/// reports what the release offers, every member starts, processes records and stays up (an
/// adapter that exited by itself would be an incompatibility, not a finding; samsa's members
/// exit on coordinator errors by design, so for it only the start and the processing count). The verdict
/// itself is printed, not asserted: an old release may have bugs of its own. A release that
/// cannot be fetched because the registry is unreachable is skipped, saying so.
#[test]
fn an_old_release_of_each_family_runs_a_short_seed_to_a_verdict() {
    const TEST: &str = "an_old_release_of_each_family_runs_a_short_seed_to_a_verdict";
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let cache = ReleaseCache::locate(None).expect("a release cache");
    let mut base = real_clients::interpreters();
    base.python = "python3".into();
    for text in OLD_RELEASES {
        let spec = spec::parse(text).unwrap();
        match Runtime::of(spec.kind.runtime) {
            Some(runtime) if !real_clients::ready(TEST, runtime) => continue,
            Some(_) => {}
            None if cache.built(&spec).is_none() => {
                let why = format!(
                    "{text}: not built in the release cache {} (`groupsim check-client {text}` \
                     builds it, in minutes)",
                    cache.root().display()
                );
                real_clients::skipped(TEST, &why);
                continue;
            }
            None => {}
        }
        let started = Instant::now();
        let interp = match cache.provide(&spec, &base) {
            Ok(i) => i,
            Err(CheckError::RegistryUnreachable { registry, .. }) => {
                real_clients::skipped(TEST, &format!("{text}: {registry} unreachable"));
                continue;
            }
            Err(e) => panic!("{text}: {e}"),
        };
        let launcher = clients::launcher(spec.kind, &interp)
            .unwrap_or_else(|e| panic!("{text}: {e}"))
            .unwrap_or_else(|| panic!("{text} was installed but does not load"));
        let version = spec.version.as_deref().unwrap();
        assert!(
            spec::same_release(version, &launcher.capabilities.version),
            "{text}: the adapter runs {}",
            launcher.capabilities.version
        );
        let mode = launcher.capabilities.modes[0].clone();
        let short = Settings { fault_ms: 4_000, ..settings(2) };
        let outcome = run::run_seed(&launcher, &mode, CI_SEED, &short)
            .unwrap_or_else(|e| panic!("{text}: {e}"));
        // samsa's stream ends on the first coordinator error (docs/log/findings.md): its members
        // exiting is its verdict, not an incompatibility.
        if spec.kind.runtime != clients::Runtime::Rust {
            assert!(outcome.exits.is_empty(), "{text}: an adapter exited: {:?}", outcome.exits);
        }
        assert!(outcome.verdict.processed > 0, "{text}: nothing processed");
        println!(
            "{text} ({}, offers {}) {mode} {} seed {CI_SEED}: {:?}, {} processed, {:.1} s",
            outcome.version,
            launcher.capabilities.summary(),
            outcome.assignor,
            run::classes(&outcome.verdict),
            outcome.verdict.processed,
            started.elapsed().as_secs_f64()
        );
    }
}

/// `--compare A B` with a fake pair of releases of kafka-python, laid in a release cache of the
/// test's own (so nothing is installed: the cache is reused as a campaign reuses it): both run
/// the real kafka-python adapter on the real kafka-python, and B commits each batch before
/// processing it. On the `before` check's seed, A passes, B loses records: the report shows
/// both verdicts and B's first anomaly, and the command exits 1. A third fake release whose
/// adapter reports the real kafka-python's version (as a shadowed install would) is refused.
#[test]
fn compare_shows_where_b_fails_a_seed_a_passed_and_exits_1() {
    const TEST: &str = "compare_shows_where_b_fails_a_seed_a_passed_and_exits_1";
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    if !real_clients::ready(TEST, Runtime::Python) {
        return;
    }
    let venv_python = real_clients::interpreters().python;
    let scratch = groupsim::runner::output_dir().join("ci-compare");
    let _ = std::fs::remove_dir_all(&scratch);
    let tag = String::from_utf8(
        Command::new("python3")
            .args(["-c", "import sys; print('%d.%d' % sys.version_info[:2])"])
            .output()
            .expect("python3 runs")
            .stdout,
    )
    .unwrap();
    let releases = scratch.join(format!("cache/clients/python{}", tag.trim()));
    // 0.0.1 and 0.0.2 report their own versions; 0.0.3's interpreter reports the real one, as
    // a shadowed install would.
    for (version, env) in [
        ("0.0.1", "GROUPSIM_FAKE_VERSION=0.0.1 "),
        ("0.0.2", "GROUPSIM_FAKE_VERSION=0.0.2 GROUPSIM_FAKE_COMMIT_BEFORE=1 "),
        ("0.0.3", ""),
    ] {
        let dir = releases.join(format!("kafka-python-{version}"));
        std::fs::create_dir_all(dir.join("bin")).unwrap();
        let python = dir.join("bin/python");
        let script = format!("#!/bin/sh\n{env}exec {} \"$@\"\n", venv_python.display());
        std::fs::write(&python, script).unwrap();
        std::fs::set_permissions(&python, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::write(dir.join(".groupsim-release"), format!("kafka-python=={version}\n"))
            .unwrap();
    }
    let fakes = real_clients::repo_root().join("cli/tests/fixtures/fake-clients/releases");
    let seed = BEFORE_SEEDS.start.to_string();
    let started = Instant::now();
    // `check-client` with `args`, on the scratch release cache and the fake adapters.
    let check_client = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_groupsim"))
            .arg("check-client")
            .args(args)
            .arg("--cache-dir")
            .arg(scratch.join("cache"))
            .arg("--clients-dir")
            .arg(&fakes)
            .env("CARGO_TARGET_DIR", &scratch)
            .output()
            .expect("runs")
    };
    let o = check_client(&[
        "--compare",
        "kafka-python==0.0.1",
        "kafka-python==0.0.2",
        "--seeds",
        "1",
        "--start",
        &seed,
        "--mode",
        "sync",
        "--work-ms",
        "50",
        "--fault-secs",
        "6",
        "--heal-secs",
        "30",
    ]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    println!("{stdout}");
    assert_eq!(o.status.code(), Some(1), "stdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(!stderr.contains("installing"), "the cached releases were reused:\n{stderr}");
    let line = format!("classic sync range seed {seed}: A ok, B FAIL lost-record");
    assert!(stdout.contains(&line), "A passes and B loses records:\n{stdout}");
    assert!(stdout.contains("<- B fails a seed A passed"), "{stdout}");
    assert!(stdout.contains("B first anomaly: lost-record at t="), "{stdout}");
    assert!(stdout.contains(&format!("B fails 1 that A passed (sync seed {seed})")), "{stdout}");
    assert!(
        stdout.contains("compare A kafka-python==0.0.1 (0.0.1) with B kafka-python==0.0.2 (0.0.2)"),
        "each side ran the release it named:\n{stdout}"
    );
    println!("compare: {:.1} s", started.elapsed().as_secs_f64());

    // A release whose adapter reports another version is refused by name, not run.
    let o = check_client(&["kafka-python==0.0.3", "--seeds", "1"]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("kafka-python==0.0.3: installed in")
            && stderr.contains("but the adapter runs kafka-python 3."),
        "{stderr}"
    );
}
