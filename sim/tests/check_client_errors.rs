//! `groupsim check-client` on bad input: an unknown client, a missing interpreter, an adapter
//! that crashes on start and one that prints garbage each get a named error and exit 2, within
//! a bounded time. The broken adapters are fake interpreters (shell scripts), so these tests run
//! without any real client installed.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

fn groupsim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_groupsim")).args(args).output().expect("runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A fake Python: answers the installation probe (`-c 'import …'`) and otherwise runs `body`.
fn fake_python(name: &str, body: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("groupsim-fake-python-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    let script = format!("#!/bin/sh\nif [ \"$1\" = \"-c\" ]; then exit 0; fi\n{body}\n");
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    // Another test thread forking while the script was open for writing can make the first
    // exec fail with ETXTBSY ("text file busy"): wait until it runs.
    for _ in 0..100 {
        match Command::new(&path).arg("-c").status() {
            Err(e) if e.raw_os_error() == Some(26) => std::thread::sleep(Duration::from_millis(20)),
            _ => break,
        }
    }
    path
}

fn check_with(python: &std::path::Path) -> (Output, Duration) {
    let started = Instant::now();
    let o = groupsim(&[
        "check-client",
        "kafka-python",
        "--seeds",
        "1",
        "--python",
        python.to_str().unwrap(),
    ]);
    (o, started.elapsed())
}

#[test]
fn an_unknown_client_is_named_with_the_known_ones() {
    let o = groupsim(&["check-client", "kafka-pyton"]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains("unknown client \"kafka-pyton\"") && err.contains("kafkajs"), "{err}");
}

#[test]
fn a_missing_interpreter_is_named() {
    let o = groupsim(&["check-client", "aiokafka", "--python", "/nonexistent/python"]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains("interpreter /nonexistent/python not found"), "{err}");
}

#[test]
fn an_adapter_that_crashes_on_start_is_named_with_its_stderr() {
    let python = fake_python("crashing", "echo 'Traceback: boom' >&2\nexit 1");
    let (o, took) = check_with(&python);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains("adapter m0 exited before it was ready") && err.contains("boom"), "{err}");
    assert!(took < Duration::from_secs(20), "bounded: {took:?}");
}

#[test]
fn an_adapter_that_prints_garbage_is_named_with_the_line() {
    let python = fake_python("garbage", "echo 'hello, I am not JSON'\nsleep 60");
    let (o, took) = check_with(&python);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains("printed garbage") && err.contains("hello, I am not JSON"), "{err}");
    assert!(took < Duration::from_secs(20), "bounded, the sleeping adapter killed: {took:?}");
}
