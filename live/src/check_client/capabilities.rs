//! What an installed client release offers, as its adapter reports it when run with
//! `--capabilities`: the commit modes, and per group protocol the partition assignors (classic)
//! or server assignors (`consumer`, KIP-848) it can use. Adapters ask their client library (an
//! import, a constructor that accepts or refuses a setting) rather than trusting a table, so a
//! release without cooperative-sticky, or without `group.protocol=consumer`, is never given
//! one. A seed draws its assignor from this list.
//!
//! The adapter prints one JSON line on stdout:
//! `{"event": "capabilities", "client": …, "version": …, "modes": [...],
//!   "group_protocols": {"classic": [...], "consumer": [...]}}`.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use groupsim_member::GroupProtocol;
use serde::Deserialize;

use super::bounded::tail;
use super::error::CheckError;

/// Longest a capabilities probe may take (it imports the client, some construct a consumer).
const PROBE: Duration = Duration::from_secs(60);

/// Kafka's name for a group protocol (`group.protocol`), as reports and command lines spell it.
pub fn protocol_name(protocol: GroupProtocol) -> &'static str {
    match protocol {
        GroupProtocol::Classic => "classic",
        GroupProtocol::Consumer => "consumer",
    }
}

/// Longest the probe waits, once the adapter is gone, for the rest of its stderr.
const STDERR_DRAIN: Duration = Duration::from_secs(1);

/// The commit modes a campaign can run (`before`, the deliberately broken one, is every
/// adapter's and not reported).
pub const MODES: [&str; 3] = ["sync", "async", "auto"];

/// What one client release offers.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
pub struct Capabilities {
    /// The client's name, as its adapter reports it.
    pub client: String,
    /// The release's version, as the library reports it.
    pub version: String,
    /// Commit modes, in the order a campaign runs them.
    pub modes: Vec<String>,
    /// Group protocol (`classic`, `consumer`) -> the assignors a seed draws from, in order.
    pub group_protocols: BTreeMap<String, Vec<String>>,
}

impl Capabilities {
    /// The assignors of `protocol` (empty: the protocol is not offered).
    pub fn assignors(&self, protocol: GroupProtocol) -> &[String] {
        self.group_protocols.get(protocol_name(protocol)).map_or(&[], Vec::as_slice)
    }

    /// The assignor seed `seed` of `protocol` uses, if the protocol is offered.
    pub fn assignor_for(&self, protocol: GroupProtocol, seed: u64) -> Option<&str> {
        let list = self.assignors(protocol);
        (!list.is_empty()).then(|| list[(seed % list.len() as u64) as usize].as_str())
    }

    /// What both `self` and `other` offer, in `self`'s order: two releases compared seed by
    /// seed draw from the same lists, so a seed runs the same assignor on both.
    pub fn common(&self, other: &Capabilities) -> Capabilities {
        let both = |a: &[String], b: &[String]| -> Vec<String> {
            a.iter().filter(|x| b.contains(x)).cloned().collect()
        };
        let group_protocols = self
            .group_protocols
            .iter()
            .map(|(p, list)| {
                let theirs = other.group_protocols.get(p).map_or(&[][..], Vec::as_slice);
                (p.clone(), both(list, theirs))
            })
            .filter(|(_, list)| !list.is_empty())
            .collect();
        Capabilities {
            client: self.client.clone(),
            version: self.version.clone(),
            modes: both(&self.modes, &other.modes),
            group_protocols,
        }
    }

    /// One line for a report: `modes sync, async; classic: range, roundrobin`.
    pub fn summary(&self) -> String {
        let protocols: Vec<String> =
            self.group_protocols.iter().map(|(p, l)| format!("{p}: {}", l.join(", "))).collect();
        format!("modes {}; {}", self.modes.join(", "), protocols.join("; "))
    }

    /// Refuses a report that names a mode or protocol this harness does not know, or offers
    /// nothing to run.
    fn validate(&self) -> Result<(), String> {
        if let Some(m) = self.modes.iter().find(|m| !MODES.contains(&m.as_str())) {
            return Err(format!("reports commit mode {m:?} (known: {})", MODES.join(", ")));
        }
        if self.modes.is_empty() {
            return Err("reports no commit mode".into());
        }
        if let Some(p) = self.group_protocols.keys().find(|p| *p != "classic" && *p != "consumer") {
            return Err(format!("reports group protocol {p:?} (known: classic, consumer)"));
        }
        if self.group_protocols.values().all(Vec::is_empty) {
            return Err("reports no assignor for any group protocol".into());
        }
        Ok(())
    }
}

/// Runs `program [script] --capabilities` and reads its report: the first line it prints. A
/// crash, silence past the deadline, a line that is not the report or a report that makes no
/// sense is a named error; the process is killed once its line is read (or the deadline
/// passes), so a probe never hangs.
pub fn probe(
    client: &str,
    program: &Path,
    script: Option<&Path>,
    env: &[(String, String)],
) -> Result<Capabilities, CheckError> {
    let fail = |why: String, stderr: String| CheckError::Capabilities {
        client: client.into(),
        script: script.unwrap_or(program).to_path_buf(),
        why,
        stderr: tail(&stderr, 20),
    };
    let mut child = Command::new(program)
        .args(script)
        .arg("--capabilities")
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| fail(format!("could not start {}: {e}", program.display()), String::new()))?;
    let (tx, lines) = mpsc::channel();
    let stdout = child.stdout.take().expect("stdout is piped");
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if !line.trim().is_empty() && tx.send(line).is_err() {
                break;
            }
        }
    });
    // Read in chunks into a shared buffer: a grandchild that outlives the adapter may hold the
    // pipe open, so the probe takes what arrived by then rather than waiting for its end.
    let stderr = Arc::new(Mutex::new(Vec::new()));
    let mut stderr_pipe = child.stderr.take().expect("stderr is piped");
    let sink = stderr.clone();
    let stderr_reader = std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = stderr_pipe.read(&mut buf) {
            if n == 0 {
                break;
            }
            sink.lock().unwrap_or_else(|p| p.into_inner()).extend_from_slice(&buf[..n]);
        }
    });
    let first = lines.recv_timeout(PROBE);
    let status = match &first {
        Ok(_) => None,
        Err(_) => {
            // Silence: either it exited without a line, or it is still running.
            let _ = child.kill();
            child.wait().ok()
        }
    };
    let _ = child.kill();
    let _ = child.wait();
    let drained = Instant::now() + STDERR_DRAIN;
    while !stderr_reader.is_finished() && Instant::now() < drained {
        std::thread::sleep(Duration::from_millis(10));
    }
    let stderr = {
        let bytes = stderr.lock().unwrap_or_else(|p| p.into_inner());
        String::from_utf8_lossy(&bytes).into_owned()
    };
    let line = match first {
        Ok(line) => line,
        Err(mpsc::RecvTimeoutError::Timeout) => {
            return Err(fail(format!("did not answer within {} s", PROBE.as_secs()), stderr))
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            let status = status.map_or("no status".into(), |s| s.to_string());
            return Err(fail(format!("failed without a report ({status})"), stderr));
        }
    };
    let report = serde_json::from_str::<serde_json::Value>(&line)
        .ok()
        .filter(|v| v["event"] == "capabilities")
        .ok_or_else(|| {
            let shown: String = line.chars().take(200).collect();
            fail(format!("printed garbage instead of its capabilities: {shown:?}"), stderr.clone())
        })?;
    let caps: Capabilities = serde_json::from_value(report)
        .map_err(|e| fail(format!("printed a report that does not parse: {e}"), stderr.clone()))?;
    caps.validate().map_err(|why| fail(why, stderr))?;
    Ok(caps)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caps(modes: &[&str], classic: &[&str], consumer: &[&str]) -> Capabilities {
        let list = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let mut group_protocols = BTreeMap::from([("classic".to_string(), list(classic))]);
        if !consumer.is_empty() {
            group_protocols.insert("consumer".into(), list(consumer));
        }
        Capabilities {
            client: "c".into(),
            version: "1".into(),
            modes: list(modes),
            group_protocols,
        }
    }

    #[test]
    fn a_seed_draws_only_among_the_assignors_its_release_offers() {
        let old = caps(&["sync"], &["range", "roundrobin"], &[]);
        let drawn: Vec<_> = (0..6).map(|s| old.assignor_for(GroupProtocol::Classic, s)).collect();
        assert!(drawn.iter().all(|a| matches!(a, Some("range" | "roundrobin"))), "{drawn:?}");
        assert_eq!(old.assignor_for(GroupProtocol::Consumer, 0), None);
    }

    #[test]
    fn two_releases_compared_share_only_what_both_offer() {
        let new = caps(
            &["sync", "async", "auto"],
            &["range", "roundrobin", "cooperative-sticky"],
            &["uniform"],
        );
        let old = caps(&["sync", "auto"], &["range", "roundrobin"], &[]);
        let both = new.common(&old);
        assert_eq!(both.modes, ["sync", "auto"]);
        assert_eq!(both.assignors(GroupProtocol::Classic), ["range", "roundrobin"]);
        assert!(both.assignors(GroupProtocol::Consumer).is_empty());
    }

    #[test]
    fn a_report_naming_unknown_modes_or_nothing_to_run_is_refused() {
        assert!(caps(&["sometimes"], &["range"], &[])
            .validate()
            .unwrap_err()
            .contains("sometimes"));
        assert!(caps(&["sync"], &[], &[]).validate().unwrap_err().contains("no assignor"));
        assert!(caps(&["sync"], &["range"], &[]).validate().is_ok());
    }
}
