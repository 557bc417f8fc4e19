//! `check-broker` against `serve`: the reference coordinator must come out clean, a coordinator
//! with a bug switch on must be caught within five seeds, and bad brokers must be refused by
//! name, never hang. Each test runs its own loopback cluster in-process, one after another (a
//! lock), so clusters and members do not compete for the machine's cores.
//!
//! `GROUPSIM_CHECK_BROKER_SEEDS` sets how many seeds the clean runs take per protocol.

use std::net::TcpListener;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use groupsim::bugs;
use groupsim_checker::broker::{BrokerRule, Entry, Mark};
use groupsim_live::check_broker::plan::Fault;
use groupsim_live::check_broker::{run_seed, CheckBrokerError, RunConfig};
use groupsim_live::serve::{Cluster, ClusterConfig, TopicSpec};
use groupsim_member::GroupProtocol;

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn seeds() -> u64 {
    std::env::var("GROUPSIM_CHECK_BROKER_SEEDS").ok().and_then(|s| s.parse().ok()).unwrap_or(2)
}

/// A served cluster with topic `orders`, consumer-group sessions short enough for a CI run,
/// and the coordinator bug switch `bug` on, if given.
fn cluster(brokers: usize, bug: Option<&str>) -> Cluster {
    let mut config = ClusterConfig {
        brokers,
        topics: vec![TopicSpec::new("orders", 4).unwrap()],
        ..ClusterConfig::default()
    };
    config.coordinator.consumer_session_timeout_ms = 6_000;
    config.coordinator.consumer_heartbeat_interval_ms = 500;
    if let Some(name) = bug {
        bugs::find(name).unwrap().apply_to_coordinator(&mut config.coordinator).unwrap();
    }
    Cluster::start(config).unwrap()
}

fn config(cluster: &Cluster, seed: u64, protocol: GroupProtocol, topic: &str) -> RunConfig {
    let bootstrap = cluster.addrs()[0].to_string();
    RunConfig {
        bootstrap,
        seed,
        protocol,
        topic: Some(topic.into()),
        fault_ms: 6_000,
        heal_ms: 30_000,
        restart_cmd: None,
    }
}

fn clean_over_seeds(protocol: GroupProtocol) {
    let _one = one_at_a_time();
    let cluster = cluster(3, None);
    for seed in 0..seeds() {
        let report = run_seed(&config(&cluster, seed, protocol, "orders")).unwrap();
        let explained: Vec<String> =
            report.anomalies.iter().map(|a| a.explain(&report.log)).collect();
        assert!(
            explained.is_empty(),
            "seed {seed} ({protocol:?}) against serve found anomalies:\n{}\n{}",
            report.plan,
            explained.join("\n")
        );
        assert!(report.converged_after_ms.is_some(), "seed {seed}: the group converged");
        assert!(report.log.exchanges().count() > 20, "seed {seed}: the members were answered");
    }
}

#[test]
fn check_broker_finds_serve_clean_with_classic_members() {
    clean_over_seeds(GroupProtocol::Classic);
}

#[test]
fn check_broker_finds_serve_clean_with_consumer_protocol_members() {
    clean_over_seeds(GroupProtocol::Consumer);
}

/// Static members replaced by new processes under the same instance id (KIP-345): a classic
/// seed where the coordinator hands the instance over inside a Stable generation, and a KIP-848
/// seed. The reference coordinator must come out clean, so the rules must take a replacement
/// for what Kafka does, not for a membership change without a generation.
#[test]
fn check_broker_finds_serve_clean_through_static_replacements() {
    let _one = one_at_a_time();
    let cluster = cluster(3, None);
    for (seed, protocol) in [(32, GroupProtocol::Classic), (2, GroupProtocol::Consumer)] {
        let report = run_seed(&config(&cluster, seed, protocol, "orders")).unwrap();
        assert!(report.plan.static_members, "seed {seed}: static members");
        assert!(
            report.plan.faults.iter().any(|(_, f)| matches!(f, Fault::Replace { .. })),
            "seed {seed}: a replacement in the plan"
        );
        let explained: Vec<String> =
            report.anomalies.iter().map(|a| a.explain(&report.log)).collect();
        assert!(explained.is_empty(), "seed {seed}:\n{}\n{}", report.plan, explained.join("\n"));
        assert!(report.converged_after_ms.is_some(), "seed {seed}: the group converged");
    }
}

/// `--restart-cmd`: the command runs at each restart the seed draws, during the faults, and the
/// log marks each start. `serve` runs in-process here, so the command only records that it ran.
#[test]
fn the_restart_command_runs_at_each_drawn_restart() {
    let _one = one_at_a_time();
    let cluster = cluster(1, None);
    let dir = std::env::temp_dir().join(format!("groupsim-restart-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ran = dir.join("ran");
    let mut config = config(&cluster, 0, GroupProtocol::Classic, "orders");
    config.restart_cmd = Some(format!("echo restart >> '{}'", ran.display()));
    let report = run_seed(&config).unwrap();
    assert!(!report.plan.restarts.is_empty(), "a restart is drawn when a command is given");
    assert!(report.plan.restarts.iter().all(|at| *at < report.plan.fault_ms));
    let lines = std::fs::read_to_string(&ran).unwrap().lines().count();
    assert_eq!(lines, report.plan.restarts.len(), "the command ran once per restart");
    let marks = report
        .log
        .entries
        .iter()
        .filter(|e| matches!(e, Entry::Mark { mark: Mark::RestartStarted, .. }))
        .count();
    assert_eq!(marks, report.plan.restarts.len());
    let _ = std::fs::remove_dir_all(&dir);
}

/// A restart command that fails stops the run with an error naming it, not a verdict.
#[test]
fn a_failing_restart_command_is_a_named_error() {
    let _one = one_at_a_time();
    let cluster = cluster(1, None);
    let mut config = config(&cluster, 0, GroupProtocol::Classic, "orders");
    config.fault_ms = 2_000;
    config.restart_cmd = Some("echo no such broker >&2; exit 3".into());
    let error = run_seed(&config).expect_err("the restart failed");
    assert!(matches!(error, CheckBrokerError::RestartFailed { .. }), "{error}");
    assert!(error.to_string().contains("no such broker"), "{error}");
}

/// `coordinator-assigns-unreleased-partitions` hands a partition to its new owner while the
/// previous owner still holds it; the members' own heartbeats prove it.
#[test]
fn check_broker_catches_a_coordinator_that_assigns_unreleased_partitions_within_five_seeds() {
    let _one = one_at_a_time();
    let cluster = cluster(1, Some("coordinator-assigns-unreleased-partitions"));
    let mut tried = Vec::new();
    for seed in 0..5 {
        let report = run_seed(&config(&cluster, seed, GroupProtocol::Consumer, "orders")).unwrap();
        let rules: Vec<BrokerRule> = report.anomalies.iter().map(|a| a.rule).collect();
        if rules.contains(&BrokerRule::SplitAssignment) {
            return;
        }
        tried.push((seed, rules));
    }
    panic!("the broken coordinator passed five seeds: {tried:?}");
}

/// `coordinator-skips-generation-check` accepts a commit whatever its member id and
/// generation; the observer's stale-commit probe (and any zombie member) meets it.
#[test]
fn check_broker_catches_a_coordinator_that_skips_the_generation_check_within_five_seeds() {
    let _one = one_at_a_time();
    let cluster = cluster(1, Some("coordinator-skips-generation-check"));
    let mut tried = Vec::new();
    for seed in 0..5 {
        let report = run_seed(&config(&cluster, seed, GroupProtocol::Classic, "orders")).unwrap();
        let rules: Vec<BrokerRule> = report.anomalies.iter().map(|a| a.rule).collect();
        if rules.contains(&BrokerRule::ZombieCommit) {
            return;
        }
        tried.push((seed, rules));
    }
    panic!("the broken coordinator passed five seeds: {tried:?}");
}

fn error_of(bootstrap: String) -> CheckBrokerError {
    let config = RunConfig {
        bootstrap,
        seed: 0,
        protocol: GroupProtocol::Classic,
        topic: None,
        fault_ms: 1_000,
        heal_ms: 1_000,
        restart_cmd: None,
    };
    let started = Instant::now();
    let error = run_seed(&config).expect_err("this broker is refused");
    assert!(started.elapsed() < Duration::from_secs(30), "refused in time, not hung");
    error
}

#[test]
fn a_port_with_nothing_listening_is_an_unreachable_broker() {
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let error = error_of(format!("127.0.0.1:{port}"));
    assert!(matches!(error, CheckBrokerError::Unreachable { .. }), "{error}");
}

#[test]
fn a_broker_that_closes_connections_at_once_is_named() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            drop(stream);
        }
    });
    let error = error_of(addr.to_string());
    assert!(matches!(error, CheckBrokerError::ClosedAtOnce { .. }), "{error}");
}

#[test]
fn a_topic_the_broker_cannot_create_is_named() {
    let _one = one_at_a_time();
    let cluster = cluster(1, None); // serve does not create topics
    let mut config = config(&cluster, 0, GroupProtocol::Classic, "no-such-topic");
    config.fault_ms = 1_000;
    let error = run_seed(&config).expect_err("serve creates no topic");
    assert!(matches!(error, CheckBrokerError::TopicNotCreatable { .. }), "{error}");
    assert!(error.to_string().contains("no-such-topic"), "{error}");
}

/// A broker that answers ApiVersions listing only ApiVersions and Metadata: no group APIs.
fn broker_without_group_apis() -> std::net::SocketAddr {
    use groupsim_wire::codec::encode_response;
    use kafka_protocol::messages::api_versions_response::ApiVersion;
    use kafka_protocol::messages::{ApiKey, ApiVersionsResponse, ResponseKind};
    use std::io::{Read, Write};

    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            std::thread::spawn(move || loop {
                let mut len = [0u8; 4];
                if stream.read_exact(&mut len).is_err() {
                    return;
                }
                let mut frame = vec![0u8; i32::from_be_bytes(len) as usize];
                if stream.read_exact(&mut frame).is_err() {
                    return;
                }
                let version = i16::from_be_bytes([frame[2], frame[3]]);
                let correlation_id = i32::from_be_bytes([frame[4], frame[5], frame[6], frame[7]]);
                let listed = |key: ApiKey, max: i16| {
                    ApiVersion::default()
                        .with_api_key(key as i16)
                        .with_min_version(0)
                        .with_max_version(max)
                };
                let answer = ApiVersionsResponse::default().with_api_keys(vec![
                    listed(ApiKey::ApiVersions, 3),
                    listed(ApiKey::Metadata, 12),
                ]);
                let body = encode_response(
                    correlation_id,
                    ApiKey::ApiVersions,
                    version,
                    &ResponseKind::ApiVersions(answer),
                )
                .unwrap();
                let mut out = (body.len() as i32).to_be_bytes().to_vec();
                out.extend_from_slice(&body);
                if stream.write_all(&out).is_err() {
                    return;
                }
            });
        }
    });
    addr
}

#[test]
fn a_broker_without_the_group_apis_is_named() {
    let error = error_of(broker_without_group_apis().to_string());
    assert!(matches!(error, CheckBrokerError::NoGroupApis { .. }), "{error}");
    assert!(error.to_string().contains("FindCoordinator"), "names what is missing: {error}");
}
