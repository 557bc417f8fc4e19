//! `groupsim serve --seed N` on the command line: it prints the seed's schedule before the
//! bootstrap servers, heals after `--fault-secs`, and on SIGINT writes the history it recorded
//! (which `groupsim trace --history` renders).

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

#[test]
fn serve_with_a_seed_prints_its_schedule_heals_and_writes_its_history_on_exit() {
    let dir = std::env::temp_dir().join(format!("groupsim-serve-cli-{}", std::process::id()));
    let history = dir.join("h.jsonl");
    let mut child = Command::new(env!("CARGO_BIN_EXE_groupsim"))
        .args(["serve", "--port", &free_port().to_string(), "--topic", "t:2"])
        .args(["--seed", "3", "--fault-secs", "4", "--history", history.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut lines = Vec::new();
    while !lines.iter().any(|l: &String| l.starts_with("fault phase over")) {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) => lines.push(line),
            Err(_) => {
                let _ = child.kill();
                panic!("serve did not heal within 20 s: {lines:#?}");
            }
        }
    }
    let text = lines.join("\n");
    assert!(text.contains("seed 3: the nemesis applies this schedule"), "{text}");
    assert!(text.contains("repeatable, not bit-exact"), "{text}");
    let schedule = groupsim_live::serve::faults::draw(3, {
        let args = groupsim_live::serve::ServeArgs {
            brokers: 1,
            port: 9092,
            topics: Vec::new(),
            preload: 0,
            history: None,
            seed: Some(3),
            schedule: None,
            group: None,
            fault_secs: 4,
            consumer_session_timeout_ms: 45_000,
            consumer_heartbeat_interval_ms: 5_000,
            group_protocol: groupsim_member::GroupProtocol::Classic,
            connections_max_idle_ms: 600_000,
            max_request_bytes: groupsim_live::serve::DEFAULT_MAX_REQUEST_BYTES,
            max_connections: groupsim_live::serve::DEFAULT_MAX_CONNECTIONS_PER_BROKER,
            bug: None,
        };
        args.schedule_shape(1)
    });
    assert!(!schedule.faults.is_empty(), "seed 3 draws faults in 4 s");
    for t in &schedule.faults {
        assert!(text.contains(&t.fault.to_string()), "{} not printed:\n{text}", t.fault);
    }
    Command::new("kill").args(["-s", "INT", &child.id().to_string()]).status().unwrap();
    let status = child.wait().unwrap();
    assert!(status.success(), "{status}");
    let saved = std::fs::read_to_string(&history).expect("the history is written on exit");
    let parsed = groupsim_history::History::from_jsonl(&saved).unwrap();
    assert!(parsed.events().iter().any(|e| matches!(
        &e.kind,
        groupsim_history::EventKind::World(groupsim_history::WorldEvent::FaultHealed { .. })
    )));
    let trace = Command::new(env!("CARGO_BIN_EXE_groupsim"))
        .args(["trace", "--history", history.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(trace.status.success());
    assert!(String::from_utf8_lossy(&trace.stdout).contains("run serve seed 3"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn serve_refuses_a_schedule_file_holding_a_fault_it_cannot_apply_naming_it() {
    let dir = std::env::temp_dir().join(format!("groupsim-serve-schedule-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("schedule.json");
    let text =
        r#"{"faults":[{"at_ms":100,"fault":{"kind":"stale_ack","member":"m0","delay_ms":500}}]}"#;
    std::fs::write(&path, text).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_groupsim"))
        .args(["serve", "--port", &free_port().to_string(), "--schedule"])
        .arg(&path)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "refused: {stderr}");
    assert!(stderr.contains("serve cannot apply stale_ack faults"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// serve opts out of transparent huge pages (Linux), so its resident memory follows what it
/// holds rather than growing in 2 MiB steps as the allocator's arenas are first touched: the
/// soak's flat-RSS goal judges serve, not the page size. On a kernel that does not report the
/// flag in /proc there is nothing to read, and the test says so.
#[cfg(target_os = "linux")]
#[test]
fn serve_runs_without_transparent_huge_pages() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_groupsim"))
        .args(["serve", "--port", &free_port().to_string(), "--topic", "t:1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let started = BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .any(|l| l.starts_with("bootstrap servers:"));
    let status = std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap();
    let _ = child.kill();
    let _ = child.wait();
    assert!(started, "serve did not start");
    match status.lines().find(|l| l.starts_with("THP_enabled:")) {
        Some(line) => assert_eq!(line.split_whitespace().nth(1), Some("0"), "{line}"),
        None => eprintln!("skipped: this kernel does not report THP_enabled in /proc/PID/status"),
    }
}
