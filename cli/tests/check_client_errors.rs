//! `groupsim check-client` on bad input and broken adapters: an unknown client, a missing
//! interpreter, an adapter that crashes on start and one that prints garbage each get a named
//! error and exit 2, within a bounded time; so do a missing `--clients-dir` and an adapter missing
//! from it. An adapter that exits by itself mid-run gave up (`member-gave-up`, not restarted)
//! and does not abort the campaign. The broken
//! adapters are fake interpreters (shell scripts) or the fake adapter in
//! cli/tests/fixtures/fake-clients, so these tests run without any real client installed.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
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
    assert!(
        err.contains("member_kafka_python.py --capabilities failed without a report")
            && err.contains("boom"),
        "{err}"
    );
    assert!(took < Duration::from_secs(20), "bounded: {took:?}");

    // One that reports its capabilities, then crashes as a member.
    let caps = r#"{"event":"capabilities","client":"f","version":"1","modes":["sync"],"group_protocols":{"classic":["range"]}}"#;
    let body = format!(
        "if [ \"$2\" = --capabilities ]; then echo '{caps}'; exit 0; fi\n\
         echo 'Traceback: boom' >&2\nexit 1"
    );
    let python = fake_python("crashing-member", &body);
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

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the crate is in the workspace").into()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("groupsim-adapters-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn has_python3() -> bool {
    Command::new("python3").arg("--version").output().is_ok_and(|o| o.status.success())
}

/// `check-client kafka-python` with `extra` arguments, its output under `out` (CARGO_TARGET_DIR).
fn check(out: &Path, extra: &[&str]) -> (Output, Duration) {
    let started = Instant::now();
    let o = Command::new(env!("CARGO_BIN_EXE_groupsim"))
        .args(["check-client", "kafka-python", "--seeds", "1", "--mode", "sync"])
        .args(extra)
        .env("CARGO_TARGET_DIR", out)
        .output()
        .expect("runs");
    (o, started.elapsed())
}

#[test]
fn an_adapter_exiting_by_itself_gave_up_and_the_campaign_goes_on() {
    if !has_python3() {
        println!("skipped: no python3");
        return;
    }
    let dir = scratch("exit");
    let python = fake_python("python3", "exec python3 \"$@\"");
    let clients = repo_root().join("cli/tests/fixtures/fake-clients");
    let (o, took) = check(
        &dir,
        &[
            "--python",
            python.to_str().unwrap(),
            "--clients-dir",
            clients.to_str().unwrap(),
            "--fault-secs",
            "3",
            "--heal-secs",
            "2",
        ],
    );
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    // The campaign ran to its table and failed the seed (exit 1), not aborted by the exit
    // (exit 2): the member that exited by itself gave up.
    assert_eq!(o.status.code(), Some(1), "stdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(stdout.contains("fake-adapter 0"), "the adapter came from --clients-dir:\n{stdout}");
    assert!(
        stdout.contains(
            "adapter exited: kafka-python member m0 (m0.0), exit status: 3, not restarted"
        ) && stdout.contains("RuntimeError: fake adapter: injected failure"),
        "the report names client, member, exit code and stderr tail:\n{stdout}"
    );
    assert_eq!(stdout.matches("adapter exited:").count(), 1, "only m0.0 exits:\n{stdout}");
    assert!(
        stdout.contains("member-gave-up at t=")
            && stdout.contains("m0 (m0.0) exited by itself (exit status: 3)")
            && stdout.contains("last words: RuntimeError: fake adapter: injected failure"),
        "the anomaly names the member, its exit status and its client's last error:\n{stdout}"
    );
    assert!(took < Duration::from_secs(40), "bounded: {took:?}");

    // The history records the exit, then the member stopped; the member is not started again.
    let history = std::fs::read_to_string(
        dir.join("groupsim/check-client-kafka-python-sync-0/history.jsonl"),
    )
    .expect("a failing seed writes its history");
    let lines: Vec<&str> = history.lines().collect();
    let exited = lines
        .iter()
        .position(|l| l.contains("MemberExited") && l.contains("\"m0.0\""))
        .expect("a MemberExited event for m0.0");
    assert!(lines[exited].contains("exit status: 3") && lines[exited].contains("injected failure"));
    assert!(
        lines[exited + 1].contains("MemberStopped") && lines[exited + 1].contains("\"m0\""),
        "{}",
        lines[exited + 1]
    );
    let m0_starts =
        lines.iter().filter(|l| l.contains("MemberStarted") && l.contains("\"m0\"")).count();
    assert_eq!(m0_starts, 1, "m0 is not restarted after it gave up");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_missing_clients_dir_or_adapter_in_it_is_named() {
    let dir = scratch("missing");
    let (o, _) = check(&dir, &["--clients-dir", "/nonexistent/clients"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("--clients-dir /nonexistent/clients: no such folder"), "{err}");

    let empty = dir.join("clients");
    std::fs::create_dir_all(empty.join("python")).unwrap();
    let (o, _) = check(&dir, &["--clients-dir", empty.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("kafka-python: adapter")
            && err.contains("python/member_kafka_python.py not found"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn malformed_specs_and_a_compare_of_two_clients_are_named() {
    for (args, says) in [
        (&["check-client", "kafka-python@2.0.2"][..], "kafka-python releases are named"),
        (&["check-client", "kafkajs==1.16.0"][..], "kafkajs releases are named"),
        (&["check-client", "aiokafka>=0.7"][..], "no ranges"),
        (&["check-client", "kafka-python=="][..], "the version is empty"),
        (&["check-client", "kafka-pyton==2.0.2"][..], "unknown client \"kafka-pyton\""),
        (
            &["check-client", "--compare", "kafka-python==2.0.2", "aiokafka==0.7.1"][..],
            "compare two releases of one client",
        ),
    ] {
        let started = Instant::now();
        let o = groupsim(args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(started.elapsed() < Duration::from_secs(10), "{args:?}: nothing ran");
    }
}

#[test]
fn a_release_cache_that_cannot_be_written_is_named() {
    let dir = scratch("unwritable-cache");
    let file = dir.join("a-file");
    std::fs::write(&file, "not a folder").unwrap();
    for release in ["kafka-python==2.0.2", "kafkajs@1.16.0"] {
        let o = groupsim(&["check-client", release, "--cache-dir", file.to_str().unwrap()]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(
            err.contains(&format!("release cache {} is not writable", file.display())),
            "{err}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A version the registry does not have is named as such (the registry answers at once); when
/// the registry cannot be reached the test says so and checks that this too is a named error.
#[test]
fn a_release_the_registry_does_not_have_is_named() {
    let dir = scratch("no-such-release");
    let cache = dir.join("cache");
    for (release, runtime) in [("kafka-python==99.0.0", "python3"), ("kafkajs@99.0.0", "npm")] {
        if !Command::new(runtime).arg("--version").output().is_ok_and(|o| o.status.success()) {
            eprintln!(
                "SKIPPED: a_release_the_registry_does_not_have_is_named: {release}: no {runtime}"
            );
            continue;
        }
        let started = Instant::now();
        let o = groupsim(&["check-client", release, "--cache-dir", cache.to_str().unwrap()]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{err}");
        if err.contains("cannot be reached") {
            eprintln!(
                "SKIPPED: a_release_the_registry_does_not_have_is_named: {release}: the \
                 registry is unreachable (a named error too: {})",
                err.lines().next().unwrap_or_default()
            );
            continue;
        }
        assert!(err.contains(&format!("{release}: no such release on")), "{err}");
        assert!(started.elapsed() < Duration::from_secs(300), "bounded");
        let leftovers: Vec<_> = std::fs::read_dir(cache.join("clients"))
            .unwrap()
            .flat_map(|d| std::fs::read_dir(d.unwrap().path()).unwrap())
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| !n.ends_with(".install.log"))
            .collect();
        assert!(leftovers.is_empty(), "a failed install leaves only its log: {leftovers:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
