//! Adapter processes: one group member each. Started with piped output, watched for their JSON
//! events, and faulted the way real processes fail: SIGKILL (a crash), SIGSTOP then SIGCONT (a
//! stop-the-world pause: a zombie, when longer than the session timeout), SIGTERM (a graceful
//! close). Every wait is bounded; dropping an adapter kills it.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::clients::Launcher;
use super::error::CheckError;

/// A running (or stopped) adapter process.
pub struct Adapter {
    /// The member's name in the campaign (`m0`, `m1`, …).
    pub member: String,
    client: String,
    child: Child,
    lines: mpsc::Receiver<String>,
    stderr: Arc<Mutex<String>>,
    stderr_reader: Option<std::thread::JoinHandle<()>>,
    paused: bool,
    /// Where its stderr goes when it is dropped (the seed's folder), if anywhere.
    stderr_file: Option<std::path::PathBuf>,
}

impl Adapter {
    /// Starts `launcher`'s adapter as member `member` with `args` (`key=value` strings).
    pub fn spawn(launcher: &Launcher, member: &str, args: &[String]) -> Result<Self, CheckError> {
        let mut child = Command::new(&launcher.program)
            .args(&launcher.script)
            .args(args)
            .envs(launcher.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|source| CheckError::Spawn {
                client: launcher.kind.name.into(),
                program: launcher.program.display().to_string(),
                source,
            })?;
        let (tx, lines) = mpsc::channel();
        let stdout = child.stdout.take().expect("stdout is piped");
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stderr = Arc::new(Mutex::new(String::new()));
        let mut pipe = child.stderr.take().expect("stderr is piped");
        let sink = stderr.clone();
        let stderr_reader = std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = pipe.read(&mut buf) {
                if n == 0 {
                    break;
                }
                let mut s = sink.lock().unwrap_or_else(|p| p.into_inner());
                s.push_str(&String::from_utf8_lossy(&buf[..n]));
                if s.len() > 256 * 1024 {
                    let cut = s.len() - 128 * 1024;
                    let cut = (cut..s.len()).find(|&i| s.is_char_boundary(i)).unwrap_or(0);
                    s.drain(..cut);
                }
            }
        });
        Ok(Self {
            member: member.into(),
            client: launcher.kind.name.into(),
            child,
            lines,
            stderr,
            stderr_reader: Some(stderr_reader),
            stderr_file: None,
            paused: false,
        })
    }

    /// The OS process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits (at most `timeout`) for the adapter's `ready` event; returns the client version it
    /// reports. A crash, a garbage line or the timeout is a named error.
    pub fn wait_ready(&mut self, timeout: Duration) -> Result<String, CheckError> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    let Ok(event) = serde_json::from_str::<Value>(&line) else {
                        return Err(CheckError::AdapterGarbage {
                            client: self.client.clone(),
                            member: self.member.clone(),
                            line,
                        });
                    };
                    if event["event"] == "ready" {
                        return Ok(event["version"].as_str().unwrap_or("?").to_string());
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    return Err(CheckError::AdapterTimeout {
                        client: self.client.clone(),
                        member: self.member.clone(),
                        secs: timeout.as_secs(),
                        stderr: self.stderr_tail(20),
                    });
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    let status = self.wait_exit(Duration::from_secs(5));
                    self.drain_stderr(Duration::from_secs(2));
                    return Err(CheckError::AdapterCrashed {
                        client: self.client.clone(),
                        member: self.member.clone(),
                        status: status.map_or("still running".into(), |s| s.to_string()),
                        stderr: self.stderr_tail(20),
                    });
                }
            }
        }
    }

    /// Whether the process has exited (and how).
    pub fn exited(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// SIGKILL: a crash. Waits for the process to be gone.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.wait_exit(Duration::from_secs(10));
        self.paused = false;
    }

    /// SIGSTOP: the process freezes, its sockets stay open.
    pub fn pause(&mut self) {
        if signal(self.pid(), "STOP") {
            self.paused = true;
        }
    }

    /// SIGCONT after [`Self::pause`].
    pub fn resume(&mut self) {
        if self.paused && signal(self.pid(), "CONT") {
            self.paused = false;
        }
    }

    /// SIGTERM, then up to `timeout` for the adapter to leave the group and exit; a SIGKILL
    /// if it does not. Returns whether it closed on its own.
    pub fn close(&mut self, timeout: Duration) -> bool {
        self.resume();
        if self.exited().is_some() {
            return false;
        }
        self.terminate();
        if self.wait_exit(timeout).is_some() {
            return true;
        }
        self.kill();
        false
    }

    /// SIGTERM: asks the adapter to leave the group and exit; does not wait.
    pub fn terminate(&mut self) {
        if self.exited().is_none() {
            signal(self.pid(), "TERM");
        }
    }

    /// Waits until the process exits or `deadline` passes.
    pub fn wait_until(&mut self, deadline: Instant) -> Option<ExitStatus> {
        self.wait_exit(deadline.saturating_duration_since(Instant::now()))
    }

    /// Waits (at most `timeout`) for everything an exited adapter wrote to stderr.
    pub fn drain_stderr(&mut self, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        while self.stderr_reader.as_ref().is_some_and(|h| !h.is_finished()) {
            if Instant::now() >= deadline {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        if let Some(h) = self.stderr_reader.take() {
            let _ = h.join();
        }
    }

    /// The last `n` lines the adapter wrote to stderr.
    pub fn stderr_tail(&self, n: usize) -> String {
        let all = self.stderr.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let lines: Vec<&str> = all.lines().collect();
        lines[lines.len().saturating_sub(n)..].join("\n")
    }

    fn wait_exit(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.exited() {
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Adapter {
    /// Keeps everything the process writes to stderr in `path` when it is dropped: a failing
    /// seed's folder then holds each client's own account of what it did.
    pub fn keep_stderr_in(&mut self, path: std::path::PathBuf) {
        self.stderr_file = Some(path);
    }
}

impl Drop for Adapter {
    fn drop(&mut self) {
        if self.exited().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        if let Some(path) = self.stderr_file.take() {
            self.drain_stderr(Duration::from_millis(500));
            let text = self.stderr.lock().unwrap_or_else(|p| p.into_inner()).clone();
            if let Err(e) = std::fs::write(&path, text) {
                tracing::warn!(path = %path.display(), error = %e, "could not keep an adapter's stderr");
            }
        }
    }
}

/// Sends signal `name` (`STOP`, `CONT`, `TERM`) to `pid` with kill(1): the workspace forbids
/// unsafe code, so no libc call.
pub(crate) fn signal(pid: u32, name: &str) -> bool {
    Command::new("kill")
        .args(["-s", name, &pid.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}
