//! `groupsim check-broker` on the command line: a broker it cannot use is a named error and
//! exit code 2, promptly.

use std::net::TcpListener;
use std::process::Command;
use std::time::{Duration, Instant};

fn check_broker(bootstrap: &str) -> (Option<i32>, String) {
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_groupsim"))
        .args(["check-broker", "--bootstrap", bootstrap, "--duration", "1", "--heal-secs", "1"])
        .output()
        .expect("runs");
    assert!(started.elapsed() < Duration::from_secs(30), "answered in time, not hung");
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn an_unreachable_bootstrap_exits_2_naming_it() {
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let addr = format!("127.0.0.1:{port}");
    let (code, stderr) = check_broker(&addr);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains(&format!("broker {addr} is unreachable")), "{stderr}");
}

#[test]
fn a_broker_that_closes_connections_at_once_exits_2_naming_it() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            drop(stream);
        }
    });
    let (code, stderr) = check_broker(&addr);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("closed the connection before answering ApiVersions"), "{stderr}");
}

#[test]
fn a_zero_seed_count_exits_2() {
    let out = Command::new(env!("CARGO_BIN_EXE_groupsim"))
        .args(["check-broker", "--bootstrap", "127.0.0.1:1", "--seeds", "0"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--seeds must be at least 1"));
}
