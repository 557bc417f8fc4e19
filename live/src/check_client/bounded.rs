//! Helper processes with a deadline: version probes, capability probes and installs. A process
//! past its deadline is killed, so no probe or install can hang a campaign.

use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// How a bounded process ended and what it printed on stdout.
pub struct Finished {
    pub status: ExitStatus,
    pub stdout: String,
}

/// Runs `program args` to completion within `timeout` (killed past it, a `TimedOut` error),
/// its stderr discarded; its exit status and stdout.
pub fn run_bounded(
    program: &Path,
    args: &[&str],
    env: &[(String, String)],
    timeout: Duration,
) -> std::io::Result<Finished> {
    let mut child = Command::new(program)
        .args(args)
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let mut pipe = child.stdout.take().expect("stdout is piped");
    let stdout = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    });
    let status = wait(&mut child, timeout)?;
    Ok(Finished { status, stdout: stdout.join().unwrap_or_default() })
}

/// Runs `command` within `timeout`, its stdout and stderr both appended to the file `log`.
pub fn run_logged(
    command: &mut Command,
    log: &Path,
    timeout: Duration,
) -> std::io::Result<ExitStatus> {
    let out = std::fs::OpenOptions::new().create(true).append(true).open(log)?;
    let err = out.try_clone()?;
    let mut child = command.stdin(Stdio::null()).stdout(out).stderr(err).spawn()?;
    wait(&mut child, timeout)
}

/// Waits for `child` until `timeout`; past it, kills it and returns a `TimedOut` error.
fn wait(child: &mut Child, timeout: Duration) -> std::io::Result<ExitStatus> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(status);
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            let secs = timeout.as_secs();
            let msg = format!("killed after {secs} s");
            return Err(std::io::Error::new(std::io::ErrorKind::TimedOut, msg));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The last `n` lines of `text`.
pub fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_past_its_deadline_is_killed_and_one_within_it_gives_its_stdout() {
        let started = Instant::now();
        let e = run_bounded(Path::new("sleep"), &["30"], &[], Duration::from_millis(200))
            .err()
            .expect("killed");
        assert_eq!(e.kind(), std::io::ErrorKind::TimedOut);
        assert!(started.elapsed() < Duration::from_secs(10));
        let done = run_bounded(
            Path::new("sh"),
            &["-c", "echo out; echo err >&2"],
            &[],
            Duration::from_secs(10),
        )
        .unwrap();
        assert!(done.status.success());
        assert_eq!(done.stdout, "out\n", "stdout kept, stderr discarded");
    }
}
