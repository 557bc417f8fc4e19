//! Conformance tests: real Kafka clients (kafka-python, confluent-kafka/librdkafka, aiokafka,
//! kafkajs) run consumer groups against `groupsim_live::serve::Cluster` on loopback sockets.
//!
//! Each test starts a 3-broker cluster in-process, runs one client script from `clients/` with
//! the interpreter the installer set up (a venv under target/real-clients, node modules under
//! clients/node; the first test to need them installs them, see `common::real_clients`), and
//! checks the JSON the script prints against the cluster's own logs. The scripts bound every
//! wait; the test also kills a script that runs past its deadline. A test skips, saying so on
//! stderr, when python3 or node is absent (a failure under CI) or GROUPSIM_SKIP_REAL_CLIENTS=1.
//! GROUPSIM_REAL_CLIENTS_VERBOSE=1 prints the end of each script's log even when it passes.

mod common;

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use groupsim_coordinator::CoordinatorConfig;
use groupsim_history::{ConsumerGroupEvent, ConsumerRemovalReason, CoordinatorEvent, EventKind};
use groupsim_live::serve::{Cluster, ClusterConfig, TopicSpec};
use groupsim_member::GroupProtocol as Protocol;
use groupsim_wire::TopicPartition;
use serde_json::Value;

use common::real_clients::{self, Runtime};

const PARTITIONS: i32 = 6;
const PRELOAD: u32 = 20;
/// Records each script produces per partition per round (after the leave, before the restart).
const PRODUCE: i64 = 5;
/// Longest a client script may run before the test kills it.
const SCRIPT_DEADLINE: Duration = Duration::from_secs(180);

/// The interpreter and working directory for a client of `runtime`, installed on first use;
/// `None` when `test` is skipped.
fn interpreter(test: &str, runtime: Runtime) -> Option<(PathBuf, PathBuf)> {
    if !real_clients::ready(test, runtime) {
        return None;
    }
    let root = real_clients::repo_root();
    Some(match runtime {
        Runtime::Python => (real_clients::interpreters().python, root.join("clients/python")),
        Runtime::Node => (PathBuf::from("node"), root.join("clients/node")),
    })
}

/// The script argument that selects `protocol` (`group.protocol`).
fn protocol_arg(protocol: Protocol) -> &'static str {
    match protocol {
        Protocol::Classic => "protocol=classic",
        Protocol::Consumer => "protocol=consumer",
    }
}

fn cluster(topic: &str) -> Cluster {
    Cluster::start(ClusterConfig {
        brokers: 3,
        topics: vec![TopicSpec::new(topic, PARTITIONS).unwrap()],
        preload: PRELOAD,
        coordinator: CoordinatorConfig {
            // Short first rebalance: the scenario starts its three members together.
            initial_rebalance_delay_ms: 300,
            // Consumer-protocol members take their session and heartbeat interval from the
            // broker (`group.consumer.*`): short ones, as the classic members ask for.
            consumer_session_timeout_ms: 6_000,
            consumer_heartbeat_interval_ms: 500,
            ..CoordinatorConfig::default()
        },
        ..ClusterConfig::default()
    })
    .expect("the cluster starts")
}

/// A running client script: its JSON stdout lines arrive on a channel; stderr is kept for
/// failure messages. Killed on drop, so a failing test leaves no process behind.
struct Script {
    name: String,
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    stderr: std::sync::Arc<std::sync::Mutex<String>>,
    deadline: Instant,
}

impl Script {
    fn start(kind: &str, program: &Path, dir: &Path, script: &str, args: &[String]) -> Script {
        let mut child = Command::new(program)
            .arg(script)
            .args(args)
            .current_dir(dir)
            .env("PYTHONUNBUFFERED", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {} {script}: {e}", program.display()));
        let (tx, lines) = mpsc::channel();
        let stdout = child.stdout.take().expect("piped stdout");
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stderr = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let mut err_pipe = child.stderr.take().expect("piped stderr");
        let sink = stderr.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = err_pipe.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock().unwrap().push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        let stdin = child.stdin.take();
        Script {
            name: format!("{kind} {script}"),
            child,
            stdin,
            lines,
            stderr,
            deadline: Instant::now() + SCRIPT_DEADLINE,
        }
    }

    /// The next JSON event line, skipping anything else; fails the test past the deadline.
    fn next_event(&mut self) -> Value {
        loop {
            let left = self.deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => match serde_json::from_str::<Value>(&line) {
                    Ok(v) if v.get("event").is_some() => return v,
                    _ => continue,
                },
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    let _ = self.child.kill();
                    panic!("{} ran past {SCRIPT_DEADLINE:?}\n{}", self.name, self.stderr_tail());
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    let status = self.child.wait().ok();
                    panic!(
                        "{} exited ({status:?}) without a result\n{}",
                        self.name,
                        self.stderr_tail()
                    );
                }
            }
        }
    }

    fn send_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin is piped");
        writeln!(stdin, "{line}").and_then(|()| stdin.flush()).expect("writing to the script");
    }

    /// The result event, checked for `"ok": true`.
    fn result(&mut self) -> Value {
        let result = loop {
            let event = self.next_event();
            if event["event"] == "result" {
                break event;
            }
        };
        let _ = self.child.wait();
        if std::env::var("GROUPSIM_REAL_CLIENTS_VERBOSE").is_ok_and(|v| v == "1") {
            println!("{}", self.stderr_tail());
        }
        assert_eq!(
            result["ok"],
            Value::Bool(true),
            "{} failed: {}\n{}",
            self.name,
            result["error"],
            self.stderr_tail()
        );
        result
    }

    fn stderr_tail(&self) -> String {
        let all = self.stderr.lock().unwrap().clone();
        let lines: Vec<&str> = all.lines().collect();
        let tail = lines[lines.len().saturating_sub(40)..].join("\n");
        format!("--- last stderr lines of {} ---\n{tail}", self.name)
    }
}

impl Drop for Script {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn script_args(
    cluster: &Cluster,
    topic: &str,
    group: &str,
    scenario: &str,
    protocol: Protocol,
) -> Vec<String> {
    vec![
        protocol_arg(protocol).to_string(),
        format!("bootstrap={}", cluster.bootstrap()),
        format!("topic={topic}"),
        format!("group={group}"),
        format!("partitions={PARTITIONS}"),
        format!("preload={PRELOAD}"),
        format!("produce={PRODUCE}"),
        format!("scenario={scenario}"),
    ]
}

fn offsets_of(result: &Value, key: &str, p: i32) -> Option<i64> {
    result[key][p.to_string()].as_i64()
}

/// Every offset of every partition up to the log end was consumed: no record skipped.
fn assert_nothing_skipped(client: &str, cluster: &Cluster, topic: &str, result: &Value) {
    let logs = cluster.logs().lock().unwrap();
    for p in 0..PARTITIONS {
        let end = logs.log_end_offset(&TopicPartition::new(topic, p)).unwrap();
        assert_eq!(result["log_end"][p as usize].as_i64(), Some(end), "{client}: log end of p{p}");
        let seen: BTreeSet<i64> = result["consumed"][p.to_string()]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_i64).collect())
            .unwrap_or_default();
        let missing: Vec<i64> = (0..end).filter(|o| !seen.contains(o)).collect();
        assert!(missing.is_empty(), "{client}: partition {p} skipped offsets {missing:?}");
    }
}

/// What the cluster's history says about `group`'s protocol: the consumer-protocol members
/// that joined it (their member ids, in order), the classic members added to it, and the
/// brokers that loaded it as a consumer group.
struct GroupFacts {
    consumer_members: Vec<String>,
    classic_members: usize,
    consumer_loads_on: Vec<i32>,
    /// Why each consumer-protocol member was removed, in order.
    consumer_removals: Vec<ConsumerRemovalReason>,
}

fn group_facts(cluster: &Cluster, group: &str) -> GroupFacts {
    let mut facts = GroupFacts {
        consumer_members: Vec::new(),
        classic_members: 0,
        consumer_loads_on: Vec::new(),
        consumer_removals: Vec::new(),
    };
    for event in cluster.history().events() {
        let EventKind::Coordinator { broker, event } = &event.kind else { continue };
        match event {
            CoordinatorEvent::MemberAdded { group: g, .. } if g == group => {
                facts.classic_members += 1;
            }
            CoordinatorEvent::ConsumerGroup(e) if e.group() == group => match e {
                ConsumerGroupEvent::MemberJoined { member_id, .. } => {
                    facts.consumer_members.push(member_id.clone());
                }
                ConsumerGroupEvent::GroupLoaded { .. } => facts.consumer_loads_on.push(*broker),
                ConsumerGroupEvent::MemberRemoved { reason, .. } => {
                    facts.consumer_removals.push(*reason);
                }
                _ => {}
            },
            _ => {}
        }
    }
    facts
}

/// The group ran the protocol the test asked for: with `Consumer`, only ConsumerGroupHeartbeat
/// members (at least `members` of them) and no classic JoinGroup member; with `Classic`, no
/// consumer-protocol member.
fn assert_protocol(cluster: &Cluster, group: &str, protocol: Protocol, members: usize) {
    let facts = group_facts(cluster, group);
    match protocol {
        Protocol::Consumer => {
            assert_eq!(facts.classic_members, 0, "{group}: a classic member joined");
            assert!(
                facts.consumer_members.len() >= members,
                "{group}: {} consumer-protocol members joined, expected {members}: {:?}",
                facts.consumer_members.len(),
                facts.consumer_members
            );
        }
        Protocol::Classic => {
            assert!(facts.consumer_members.is_empty(), "{group}: a consumer-protocol member");
        }
    }
}

/// The "group" scenario (see clients/python/harness.py) for one client.
fn group_scenario(test: &str, runtime: Runtime, script: &str, client: &str, protocol: Protocol) {
    let Some((program, dir)) = interpreter(test, runtime) else { return };
    let topic = "orders";
    let group = format!("{client}-group");
    let cluster = cluster(topic);
    let started = Instant::now();
    let args = script_args(&cluster, topic, &group, "group", protocol);
    let mut run = Script::start(real_clients::name(runtime), &program, &dir, script, &args);
    let result = run.result();
    println!("{client}: group scenario passed in {:.1} s", started.elapsed().as_secs_f64());

    // Three members shared the partitions; the leaver's partitions were taken over.
    let three = result["assignment_of_three"].as_object().expect("assignment of three");
    assert_eq!(three.len(), 3, "{client}: {three:?}");
    assert!(three.values().all(|a| a.as_array().is_some_and(|a| !a.is_empty())), "{three:?}");
    let leaver = &result["leaver_partitions"];
    assert!(leaver.as_array().is_some_and(|a| !a.is_empty()), "{client}: leaver had {leaver}");
    assert_eq!(&result["taken_over_partitions"], leaver, "{client}: takeover");

    // The producer's records went to the right partitions, in order.
    {
        let logs = cluster.logs().lock().unwrap();
        for p in 0..PARTITIONS {
            let tp = TopicPartition::new(topic, p);
            let first_produced = &logs.read(&tp, i64::from(PRELOAD), 1).unwrap()[0];
            assert_eq!(first_produced.value, format!("{topic}-{p}-b-0"), "{client}: p{p}");
        }
    }

    // The restart resumed exactly at the committed offsets, which covered everything consumed.
    let resumed = i64::from(PRELOAD) + PRODUCE;
    for p in 0..PARTITIONS {
        let committed = offsets_of(&result, "committed_before_restart", p);
        assert_eq!(committed, Some(resumed), "{client}: committed offset of p{p}");
        assert_eq!(offsets_of(&result, "consumed_before_restart", p), Some(resumed));
        assert_eq!(
            offsets_of(&result, "first_after_restart", p),
            committed,
            "{client}: p{p} resumed elsewhere than its committed offset"
        );
    }
    assert_nothing_skipped(client, &cluster, topic, &result);
    // Three members, then the two new ones of the restart.
    assert_protocol(&cluster, &group, protocol, 5);
    if protocol == Protocol::Consumer {
        // The leaver left with a heartbeat at epoch -1 (its partitions released at once), not
        // by its session running out.
        let removals = group_facts(&cluster, &group).consumer_removals;
        assert_eq!(removals.first(), Some(&ConsumerRemovalReason::Left), "{removals:?}");
    }
}

#[test]
fn kafka_python_group_survives_leave_and_restart() {
    group_scenario(
        "kafka_python_group_survives_leave_and_restart",
        Runtime::Python,
        "kafka_python_client.py",
        "kafka-python",
        Protocol::Classic,
    );
}

#[test]
fn confluent_kafka_group_survives_leave_and_restart() {
    group_scenario(
        "confluent_kafka_group_survives_leave_and_restart",
        Runtime::Python,
        "confluent_client.py",
        "confluent-kafka",
        Protocol::Classic,
    );
}

#[test]
fn aiokafka_group_survives_leave_and_restart() {
    group_scenario(
        "aiokafka_group_survives_leave_and_restart",
        Runtime::Python,
        "aiokafka_client.py",
        "aiokafka",
        Protocol::Classic,
    );
}

#[test]
fn kafkajs_group_survives_leave_and_restart() {
    group_scenario(
        "kafkajs_group_survives_leave_and_restart",
        Runtime::Node,
        "kafkajs_client.js",
        "kafkajs",
        Protocol::Classic,
    );
}

#[test]
fn confluent_kafka_group_survives_a_coordinator_move() {
    coordinator_move(
        "confluent_kafka_group_survives_a_coordinator_move",
        "librdkafka-move",
        Protocol::Classic,
    );
}

/// KIP-848 with librdkafka (`group.protocol=consumer`): the same steps as the classic group —
/// three members share the partitions (assigned by the coordinator's `uniform` assignor), one
/// leaves (a heartbeat at member epoch -1) and the coordinator hands its partitions to the
/// two others once it released them, a restart resumes at the committed offsets (OffsetCommit
/// and OffsetFetch v9 carry the member id and epoch) with nothing skipped.
#[test]
fn confluent_kafka_consumer_protocol_group_survives_leave_and_restart() {
    group_scenario(
        "confluent_kafka_consumer_protocol_group_survives_leave_and_restart",
        Runtime::Python,
        "confluent_client.py",
        "confluent-kafka-cp",
        Protocol::Consumer,
    );
}

/// KIP-848 with librdkafka across a coordinator move: the new coordinator rebuilds the
/// consumer group from the offsets log (members, epochs, assignments), the members find it
/// after NOT_COORDINATOR, go on heartbeating at their epochs and commit on it.
#[test]
fn confluent_kafka_consumer_protocol_group_survives_a_coordinator_move() {
    coordinator_move(
        "confluent_kafka_consumer_protocol_group_survives_a_coordinator_move",
        "librdkafka-cp-move",
        Protocol::Consumer,
    );
}

/// The "move" scenario (clients/python/harness.py) with librdkafka: three members consume,
/// the test moves the group's coordinator to the next broker, and the records produced after
/// the move must all be consumed and committed on the new coordinator.
fn coordinator_move(test: &str, group: &str, protocol: Protocol) {
    let Some((program, dir)) = interpreter(test, Runtime::Python) else { return };
    let topic = "payments";
    let cluster = cluster(topic);
    let started = Instant::now();
    let args = script_args(&cluster, topic, group, "move", protocol);
    let mut run = Script::start("python", &program, &dir, "confluent_client.py", &args);
    let ready = run.next_event();
    assert_eq!(ready["event"], "ready_for_move", "{ready}\n{}", run.stderr_tail());
    let from = cluster.group_coordinator(group).expect("the group has a coordinator");
    let to = (from + 1) % 3;
    cluster.move_group_coordinator(group, to).expect("the move succeeds");
    assert_eq!(cluster.group_coordinator(group), Some(to));
    run.send_line("moved");
    let result = run.result();
    println!(
        "confluent-kafka ({group}): coordinator move {from} -> {to} passed in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    for p in 0..PARTITIONS {
        assert_eq!(
            offsets_of(&result, "committed_before_move", p),
            Some(i64::from(PRELOAD)),
            "p{p} committed before the move"
        );
        let end = result["log_end"][p as usize].as_i64();
        assert_eq!(offsets_of(&result, "committed_after_move", p), end, "p{p} after the move");
    }
    assert_nothing_skipped("confluent-kafka", &cluster, topic, &result);
    assert_protocol(&cluster, group, protocol, 3);
    if protocol == Protocol::Consumer {
        let loads = group_facts(&cluster, group).consumer_loads_on;
        assert!(loads.contains(&to), "{group}: broker {to} never loaded the group: {loads:?}");
    }
}
