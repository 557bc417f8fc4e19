//! `check-broker` against librdkafka's mock cluster, CI-sized: one seed for each finding of the
//! campaign in docs/check-broker.md, against the confluent-kafka (librdkafka) release the
//! real-client installer pins.
//!
//! Each test starts a fresh 3-broker mock with `clients/python/mock_cluster.py` (in the venv
//! the installer sets up on first use, see `common::real_clients`), runs one seed of
//! `check-broker` against it with a short fault phase, and checks what the campaign found:
//! - kafka-go members (JoinGroup v1, v2) are served: the group converges after the heal;
//! - a JoinGroup v6 (the mock advertises 0–6 with v6 flexible, but its handler reads the
//!   request's array counts as fixed-width, so it fails to parse every flexible JoinGroup and
//!   closes the connection) is never answered, and the group never forms;
//! - a ConsumerGroupHeartbeat naming topics with a null topic regex (as the Java consumer sends
//!   it, and Kafka accepts) trips an assertion in the mock's `validate_subscription` and the
//!   process aborts.
//!
//! A test skips, saying so on stderr, where the Python clients cannot run (see
//! `common::real_clients`). The tests run one at a time: each holds real sockets and timers.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{mpsc, Mutex};
use std::time::{Duration, Instant};

use groupsim_checker::broker::BrokerRule;
use groupsim_checker::broker::{Entry, Request};
use groupsim_live::check_broker::{run_seed, RunConfig, SeedReport};
use groupsim_member::GroupProtocol;

use common::real_clients::{self, Runtime};

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// A running mock cluster; killed when dropped.
struct Mock {
    child: Child,
    /// Held open: the script stops its cluster when stdin closes.
    _stdin: Option<ChildStdin>,
    bootstrap: String,
}

impl Drop for Mock {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Mock {
    /// Starts a 3-broker mock with topic `orders`; `None` when `test` is skipped.
    fn start(test: &str) -> Option<Mock> {
        if !real_clients::ready(test, Runtime::Python) {
            return None;
        }
        let root = real_clients::repo_root();
        let mut child = Command::new(real_clients::interpreters().python)
            .arg(root.join("clients/python/mock_cluster.py"))
            .args(["--brokers", "3", "--topic", "orders"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("the mock cluster script starts");
        let stdout = child.stdout.take().expect("piped");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = rx.recv_timeout(Duration::from_secs(60)).unwrap_or_default();
        let bootstrap = line.trim().split(',').next().unwrap_or_default().to_string();
        let stdin = child.stdin.take();
        let mock = Mock { child, _stdin: stdin, bootstrap };
        assert!(!mock.bootstrap.is_empty(), "{test}: the mock printed no broker address");
        Some(mock)
    }

    /// Whether the mock's process has ended (and how), without waiting.
    fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().expect("the mock's status")
    }
}

/// Runs `seed` with 4 s of faults and up to `heal_ms` for the group to converge (the mock's
/// rebalances can wait out a leaver's rebalance timeout).
fn run(mock: &Mock, seed: u64, protocol: GroupProtocol, heal_ms: u64) -> SeedReport {
    let config = RunConfig {
        bootstrap: mock.bootstrap.clone(),
        seed,
        protocol,
        topic: Some("orders".into()),
        fault_ms: 4_000,
        heal_ms,
        restart_cmd: None,
    };
    run_seed(&config).expect("the run reaches a verdict")
}

fn rules(report: &SeedReport) -> Vec<BrokerRule> {
    report.anomalies.iter().map(|a| a.rule).collect()
}

/// Seed 3 draws four kafka-go members (JoinGroup v1): the mock serves them.
#[test]
fn the_mock_serves_kafka_go_members_and_their_group_converges() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let Some(mock) = Mock::start("the_mock_serves_kafka_go_members_and_their_group_converges")
    else {
        return;
    };
    let report = run(&mock, 3, GroupProtocol::Classic, 45_000);
    assert!(
        report.plan.profiles.iter().all(|p| p.name() == "kafka-go"),
        "seed 3 draws kafka-go members: {:?}",
        report.plan.profiles
    );
    assert!(
        report.converged_after_ms.is_some(),
        "the group converged after the heal: {:?}",
        rules(&report)
    );
    let joined = report.log.exchanges().any(|(_, x)| matches!(x.request, Request::Join { .. }));
    assert!(joined, "the members' JoinGroups were answered");
}

/// Seed 0 draws four Elsa members, which send JoinGroup v6 (brod's highest, advertised by the
/// mock): no JoinGroup is ever answered and the group never forms.
#[test]
fn the_mock_never_answers_a_flexible_join_group() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let Some(mock) = Mock::start("the_mock_never_answers_a_flexible_join_group") else {
        return;
    };
    let report = run(&mock, 0, GroupProtocol::Classic, 10_000);
    assert!(
        report.plan.profiles.iter().all(|p| p.name() == "elsa"),
        "seed 0 draws Elsa members: {:?}",
        report.plan.profiles
    );
    let answered = report.log.exchanges().any(|(_, x)| matches!(x.request, Request::Join { .. }));
    let unanswered = report
        .log
        .entries
        .iter()
        .filter(|e| matches!(e, Entry::Unanswered { call: Request::Join { .. }, .. }))
        .count();
    assert!(!answered, "no JoinGroup v6 was answered");
    assert!(unanswered > 0, "the members sent JoinGroups that went unanswered");
    assert!(rules(&report).contains(&BrokerRule::NotConverged), "{:?}", rules(&report));
}

/// A KIP-848 heartbeat naming topics with a null regex aborts the mock process.
#[test]
fn a_consumer_heartbeat_without_a_topic_regex_aborts_the_mock() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let Some(mut mock) = Mock::start("a_consumer_heartbeat_without_a_topic_regex_aborts_the_mock")
    else {
        return;
    };
    let report = run(&mock, 0, GroupProtocol::Consumer, 10_000);
    assert!(rules(&report).contains(&BrokerRule::NotConverged), "{:?}", rules(&report));
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = mock.exited() {
            break status;
        }
        assert!(Instant::now() < deadline, "the mock is still running after the heartbeats");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(!status.success(), "the mock aborted: {status:?}");
}
