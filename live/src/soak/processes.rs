//! The soak's child processes: `groupsim serve` (so its memory and descriptors are its own) and
//! the real group's kafka-python consumers. Every wait is bounded; dropping a child kills it.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::error::SoakError;

/// A child process whose stdout lines arrive on a channel (read by a thread, so the pipe never
/// fills) and whose stderr goes to a file.
pub struct ChildProcess {
    name: String,
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl ChildProcess {
    /// Starts `program args`, its stderr appended to `stderr_file`.
    pub fn spawn(
        name: &str,
        program: &Path,
        args: &[String],
        stderr_file: &Path,
    ) -> Result<Self, SoakError> {
        let stderr = std::fs::File::create(stderr_file)
            .map_err(|e| SoakError::io(format!("creating {}", stderr_file.display()), e))?;
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .map_err(|e| SoakError::io(format!("starting {name} ({})", program.display()), e))?;
        let stdout = child.stdout.take();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            let Some(stdout) = stdout else { return };
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        Ok(Self { name: name.to_string(), child, lines })
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// What it is called in messages.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Waits up to `timeout` for a stdout line `wanted` accepts; the lines before it are
    /// returned with it, or in the error when it never comes.
    pub fn wait_line(
        &mut self,
        timeout: Duration,
        wanted: impl Fn(&str) -> bool,
    ) -> Result<String, String> {
        let deadline = Instant::now() + timeout;
        let mut seen = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if wanted(&line) => return Ok(line),
                Ok(line) => seen.push(line),
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    return Err(format!(
                        "nothing after {} s; it printed {seen:?}",
                        timeout.as_secs()
                    ))
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    let status = self.child.wait().map(|s| s.to_string()).unwrap_or_default();
                    return Err(format!("it exited ({status}); it printed {seen:?}"));
                }
            }
        }
    }

    /// Stdout lines printed so far and not yet read.
    pub fn drain_lines(&mut self) -> Vec<String> {
        self.lines.try_iter().collect()
    }

    /// Its exit status, if it has exited.
    pub fn exited(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// Sends signal `name` (`INT`, `TERM`), then waits up to `timeout` for it to exit; kills it
    /// if it has not. Returns its status, or `None` if it had to be killed.
    pub fn stop(&mut self, signal: &str, timeout: Duration) -> Option<ExitStatus> {
        if let Some(status) = self.exited() {
            return Some(status);
        }
        crate::check_client::process::signal(self.child.id(), signal);
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if let Some(status) = self.exited() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        tracing::warn!(process = %self.name, "did not exit after SIG{signal}: killed");
        let _ = self.child.kill();
        let _ = self.child.wait();
        None
    }
}

impl Drop for ChildProcess {
    fn drop(&mut self) {
        if self.exited().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// A free port on 127.0.0.1 for serve's broker (another process could take it before serve
/// binds; serve then fails to start, saying so).
pub fn free_port() -> Result<u16, SoakError> {
    let listener = std::net::TcpListener::bind(("127.0.0.1", 0))
        .map_err(|e| SoakError::io("finding a free port", e))?;
    let port = listener.local_addr().map_err(|e| SoakError::io("finding a free port", e))?.port();
    Ok(port)
}

/// Checks that `python` imports kafka, and returns its version.
pub fn kafka_python_version(python: &Path) -> Result<String, SoakError> {
    let output = Command::new(python)
        .args(["-c", "import kafka; print(kafka.__version__)"])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| SoakError::NoKafkaPython {
            python: python.to_path_buf(),
            why: e.to_string(),
        })?;
    if !output.status.success() {
        let why = String::from_utf8_lossy(&output.stderr).trim().to_string();
        return Err(SoakError::NoKafkaPython { python: python.to_path_buf(), why });
    }
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
}

/// The arguments of one real group member (`clients/python/member.py`'s key=value form).
pub fn member_args(
    script: &Path,
    bootstrap: &str,
    topic: &str,
    group: &str,
    client_id: &str,
    out: &Path,
) -> Vec<String> {
    vec![
        script.display().to_string(),
        format!("bootstrap={bootstrap}"),
        format!("topic={topic}"),
        format!("group={group}"),
        format!("client_id={client_id}"),
        "commit=sync".to_string(),
        format!("out={}", out.display()),
        "session_timeout_ms=10000".to_string(),
    ]
}

/// Lines in a processed-record log (0 when it does not exist yet).
pub fn count_lines(path: &PathBuf) -> u64 {
    std::fs::read(path).map(|b| b.iter().filter(|&&c| c == b'\n').count() as u64).unwrap_or(0)
}
