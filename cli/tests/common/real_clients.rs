//! The real Kafka clients the conformance tests drive, installed on first use.
//!
//! [`ready`] is what a test calls before starting a client of a runtime (Python or Node). The
//! first call installs that runtime's clients with `.ci/install-real-clients.sh <runtime>` (a
//! venv under `target/real-clients`, node modules under `clients/node`): once per test binary
//! (later calls reuse the outcome), and across processes under an exclusive lock file, so a
//! second test binary or test process waits for the install under way instead of racing it. A
//! marker records the install (a hash of the script and the npm lock file), so warm runs start
//! no process at all.
//!
//! A test skips, with a `SKIPPED:` line on stderr (written past the test harness's capture, so
//! it shows for passing tests too), only when the runtime's interpreter is absent or
//! `GROUPSIM_SKIP_REAL_CLIENTS=1`; under `CI` an absent interpreter is a failure. A failed
//! install fails the test with the tail of the installer's output.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{mpsc, OnceLock};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant, SystemTime};

use groupsim_live::check_client::clients::{self, Interpreters};
use sha2::{Digest, Sha256};

/// The runtimes whose clients the installer installs together.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Runtime {
    Python,
    Node,
}

impl Runtime {
    /// The installer's runtime for a client of `runtime`; `None` for a built (Rust) adapter,
    /// which the release cache builds instead.
    pub fn of(runtime: clients::Runtime) -> Option<Runtime> {
        match runtime {
            clients::Runtime::Python => Some(Runtime::Python),
            clients::Runtime::Node => Some(Runtime::Node),
            clients::Runtime::Rust => None,
        }
    }
}

/// The installer, relative to the repository root.
pub const INSTALLER: &str = ".ci/install-real-clients.sh";
/// The environment variable that skips every real-client test.
pub const SKIP_VAR: &str = "GROUPSIM_SKIP_REAL_CLIENTS";
/// Lines of the installer's output a failure shows.
const TAIL_LINES: usize = 40;

/// The installer's name for `runtime` (its clients install together).
pub fn name(runtime: Runtime) -> &'static str {
    match runtime {
        Runtime::Python => "python",
        Runtime::Node => "node",
    }
}

/// The interpreter that must be on the PATH for `runtime`'s clients to install and run.
pub fn interpreter(runtime: Runtime) -> &'static str {
    match runtime {
        Runtime::Python => "python3",
        Runtime::Node => "node",
    }
}

/// The file whose presence shows `runtime`'s clients are installed.
fn probe(runtime: Runtime, interp: &Interpreters) -> PathBuf {
    match runtime {
        Runtime::Python => interp.python.clone(),
        Runtime::Node => interp.node_modules.join("node_modules/kafkajs/package.json"),
    }
}

/// The files whose content decides what gets installed (a change re-runs the installer).
fn inputs(runtime: Runtime) -> Vec<PathBuf> {
    let root = repo_root();
    let mut inputs = vec![root.join(INSTALLER)];
    if runtime == Runtime::Node {
        inputs.push(root.join("clients/node/package-lock.json"));
    }
    inputs
}

/// The workspace root (the parent of the `sim` crate).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the crate is in the workspace").into()
}

/// Where the installer puts the clients (the defaults of `groupsim check-client`).
pub fn interpreters() -> Interpreters {
    Interpreters::defaults(&repo_root())
}

/// Whether `test` can run `runtime`'s clients: `true` once they are installed (installing them
/// on first use), `false` when the test is skipped (a `SKIPPED:` line says why). Panics when
/// the install fails, or when the interpreter is absent under `CI`.
pub fn ready(test: &str, runtime: Runtime) -> bool {
    if std::env::var(SKIP_VAR).is_ok_and(|v| v == "1") {
        skipped(test, &format!("{SKIP_VAR}=1 (the {} clients were not run)", name(runtime)));
        return false;
    }
    let interpreter = interpreter(runtime);
    if !on_path(interpreter) {
        if in_ci() {
            panic!(
                "{test}: {interpreter} not found, and CI must run the real {} clients \
                 (install {interpreter}, or set {SKIP_VAR}=1 to skip them)",
                name(runtime)
            );
        }
        skipped(
            test,
            &format!("{interpreter} not found (the {} clients were not run)", name(runtime)),
        );
        return false;
    }
    static PYTHON: OnceLock<Result<(), String>> = OnceLock::new();
    static NODE: OnceLock<Result<(), String>> = OnceLock::new();
    let once = match runtime {
        Runtime::Python => &PYTHON,
        Runtime::Node => &NODE,
    };
    if let Err(e) = once.get_or_init(|| install(runtime)) {
        panic!("{test}: {e}");
    }
    true
}

/// Prints `SKIPPED: <test>: <why>` to the process's stderr, past the harness's capture.
pub fn skipped(test: &str, why: &str) {
    notice(&format!("SKIPPED: {test}: {why}"));
}

/// A line on the process's stderr that the test harness does not capture.
fn notice(line: &str) {
    let _ = writeln!(io::stderr().lock(), "{line}");
}

/// Whether the tests run in CI (`CI` set, and not to `false` or `0`).
fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0")
}

/// Whether `program --version` runs.
fn on_path(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Runs the installer for `runtime` unless its marker shows the same inputs installed.
fn install(runtime: Runtime) -> Result<(), String> {
    let name = name(runtime);
    let root = repo_root();
    let dir = root.join("target/real-clients");
    fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let fingerprint = fingerprint(runtime)?;
    let marker = dir.join(format!("{name}.installed"));
    let probe = probe(runtime, &interpreters());
    let done = || fs::read_to_string(&marker).is_ok_and(|m| m == fingerprint) && probe.exists();
    if done() {
        return Ok(());
    }
    let lock_path = dir.join(format!("{name}.lock"));
    let _lock = FileLock::acquire(&lock_path, Lease::DEFAULT, || {
        notice(&format!(
            "real-clients: waiting for another process's install of the {name} clients ({})",
            lock_path.display()
        ));
    })
    .map_err(|e| format!("cannot take the install lock {}: {e}", lock_path.display()))?;
    if done() {
        return Ok(()); // installed by the process that held the lock
    }

    let command = format!("bash {INSTALLER} {name}");
    let log_path = dir.join(format!("{name}-install.log"));
    notice(&format!(
        "real-clients: installing the {name} clients (first use): {command} (log: {})",
        log_path.display()
    ));
    let started = Instant::now();
    let log = File::create(&log_path)
        .map_err(|e| format!("cannot create {}: {e}", log_path.display()))?;
    let log_err = log.try_clone().map_err(|e| format!("{}: {e}", log_path.display()))?;
    let status = Command::new("bash")
        .arg(root.join(INSTALLER))
        .arg(name)
        .current_dir(&root)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log_err)
        .status()
        .map_err(|e| format!("cannot run `{command}`: {e}"))?;
    let output = fs::read_to_string(&log_path).unwrap_or_default();
    if !status.success() {
        return Err(format!(
            "installing the real {name} clients failed: `{command}` exited with {status}; \
             the last lines of its output ({}):\n{}",
            log_path.display(),
            tail(&output, TAIL_LINES)
        ));
    }
    if !probe.exists() {
        return Err(format!(
            "`{command}` succeeded but {} is missing; its output:\n{}",
            probe.display(),
            tail(&output, TAIL_LINES)
        ));
    }
    write_atomically(&marker, &fingerprint)
        .map_err(|e| format!("cannot write {}: {e}", marker.display()))?;
    notice(&format!(
        "real-clients: {name} clients installed in {:.1} s: {}",
        started.elapsed().as_secs_f64(),
        tail(&output, 1)
    ));
    Ok(())
}

/// A hash of the installer's inputs for `runtime`.
fn fingerprint(runtime: Runtime) -> Result<String, String> {
    let mut hasher = Sha256::new();
    for input in inputs(runtime) {
        let bytes =
            fs::read(&input).map_err(|e| format!("cannot read {}: {e}", input.display()))?;
        hasher.update(&bytes);
    }
    Ok(format!("{:x}", hasher.finalize()))
}

/// The last `n` lines of `text`.
fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// Writes `content` to `path` through a temporary file and a rename, so a reader sees either
/// the old content or the whole new one.
fn write_atomically(path: &Path, content: &str) -> io::Result<()> {
    let tmp = path.with_extension(format!("tmp.{}", std::process::id()));
    fs::write(&tmp, content)?;
    fs::rename(&tmp, path)
}

/// How a [`FileLock`] shows it is held: its holder touches the file every `heartbeat`; a lock
/// file untouched for `stale` was left by a process that died (a killed test run), and the next
/// process takes it over.
#[derive(Clone, Copy, Debug)]
pub struct Lease {
    /// How often the holder refreshes the lock file's modification time.
    pub heartbeat: Duration,
    /// How long an untouched lock file is honoured.
    pub stale: Duration,
}

impl Lease {
    /// Two-second heartbeats; a lock untouched for 30 s is stale.
    pub const DEFAULT: Lease =
        Lease { heartbeat: Duration::from_secs(2), stale: Duration::from_secs(30) };
}

/// An exclusive lock across processes: a file created with `create_new` (which fails when it
/// exists), kept fresh by a heartbeat thread while held, removed on drop. Standard-library only
/// (the workspace's minimum Rust predates `File::lock`).
pub struct FileLock {
    path: PathBuf,
    stop: Option<mpsc::Sender<()>>,
    heartbeat: Option<JoinHandle<()>>,
}

impl FileLock {
    /// Takes the lock at `path`, waiting while another holder keeps it fresh; `on_wait` runs
    /// once if it has to wait.
    pub fn acquire(path: &Path, lease: Lease, on_wait: impl FnOnce()) -> io::Result<FileLock> {
        let mut on_wait = Some(on_wait);
        loop {
            match OpenOptions::new().write(true).create_new(true).open(path) {
                Ok(mut file) => {
                    writeln!(file, "pid {}", std::process::id())?;
                    let (stop, stopped) = mpsc::channel::<()>();
                    let heartbeat = thread::spawn(move || {
                        while let Err(mpsc::RecvTimeoutError::Timeout) =
                            stopped.recv_timeout(lease.heartbeat)
                        {
                            let _ = file.set_modified(SystemTime::now());
                        }
                    });
                    return Ok(FileLock {
                        path: path.to_path_buf(),
                        stop: Some(stop),
                        heartbeat: Some(heartbeat),
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                    if age(path).is_some_and(|age| age > lease.stale) {
                        break_stale(path, lease)?;
                        continue;
                    }
                    if let Some(f) = on_wait.take() {
                        f();
                    }
                    thread::sleep(Duration::from_millis(100));
                }
                Err(e) => return Err(e),
            }
        }
    }
}

impl Drop for FileLock {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(heartbeat) = self.heartbeat.take() {
            let _ = heartbeat.join();
        }
        let _ = fs::remove_file(&self.path);
    }
}

/// How long ago `path` was modified; `None` if it is gone.
fn age(path: &Path) -> Option<Duration> {
    let modified = fs::metadata(path).ok()?.modified().ok()?;
    Some(SystemTime::now().duration_since(modified).unwrap_or_default())
}

/// Removes a stale lock file by renaming it aside (only one of several waiters' renames gets
/// it). A waiter that looked just before another one broke the lock and took a fresh one may
/// rename that fresh lock instead: it sees that from the file's age and links it back.
fn break_stale(path: &Path, lease: Lease) -> io::Result<()> {
    let nanos = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default();
    let aside = path.with_extension(format!("stale.{}.{}", std::process::id(), nanos.as_nanos()));
    match fs::rename(path, &aside) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    }
    if age(&aside).is_some_and(|age| age <= lease.stale) {
        let _ = fs::hard_link(&aside, path);
    }
    fs::remove_file(&aside)
}
