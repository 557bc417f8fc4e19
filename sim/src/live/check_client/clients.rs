//! The clients `check-client` knows: their package names (what the command line takes), the
//! adapter script that runs one group member of each, the commit modes it offers, and where the
//! client library comes from (a Python interpreter or virtualenv, or a `node_modules` folder:
//! the user's choice, so the version checked is the version they ship).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use groupsim_member::GroupProtocol;

use super::error::CheckError;

/// How an adapter runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Runtime {
    /// `python member_<client>.py …`, importing the library from the interpreter's packages.
    Python,
    /// `node member_kafkajs.js …`, loading the library from a `node_modules` folder.
    Node,
}

/// One client of the catalogue.
#[derive(Clone, Copy, Debug)]
pub struct ClientKind {
    /// The package name (`kafka-python`, `confluent-kafka`, `aiokafka`, `kafkajs`).
    pub name: &'static str,
    /// How its adapter runs.
    pub runtime: Runtime,
    /// The adapter script, under `clients/python` or `clients/node`.
    pub script: &'static str,
    /// The module to import (Python) or require (Node) to see whether it is installed.
    pub module: &'static str,
    /// The commit modes a campaign runs (the broken `before` mode is only for tests).
    pub modes: &'static [&'static str],
    /// The partition assignors its adapter offers; each seed uses one (seed modulo the count).
    pub assignors: &'static [&'static str],
    /// With `group.protocol=consumer` (KIP-848): the server assignors a seed picks from
    /// (`group.remote.assignor`); empty when the adapter has no consumer-protocol mode.
    pub consumer_assignors: &'static [&'static str],
}

impl ClientKind {
    /// The assignors a seed of `protocol` picks from (empty: the protocol is not offered).
    pub fn assignors_for(&self, protocol: GroupProtocol) -> &'static [&'static str] {
        match protocol {
            GroupProtocol::Classic => self.assignors,
            GroupProtocol::Consumer => self.consumer_assignors,
        }
    }
}

/// Kafka's name for a group protocol (`group.protocol`).
pub fn protocol_name(protocol: GroupProtocol) -> &'static str {
    match protocol {
        GroupProtocol::Classic => "classic",
        GroupProtocol::Consumer => "consumer",
    }
}

/// Every client, in table order.
pub const CLIENTS: [ClientKind; 4] = [
    ClientKind {
        name: "kafka-python",
        runtime: Runtime::Python,
        script: "member_kafka_python.py",
        module: "kafka",
        modes: &["sync", "async", "auto"],
        assignors: &["range", "roundrobin", "cooperative-sticky"],
        consumer_assignors: &[],
    },
    ClientKind {
        name: "confluent-kafka",
        runtime: Runtime::Python,
        script: "member_confluent.py",
        module: "confluent_kafka",
        modes: &["sync", "async", "auto"],
        assignors: &["range", "roundrobin", "cooperative-sticky"],
        consumer_assignors: &["uniform", "range"],
    },
    ClientKind {
        name: "aiokafka",
        runtime: Runtime::Python,
        script: "member_aiokafka.py",
        module: "aiokafka",
        modes: &["sync"],
        assignors: &["range", "roundrobin"],
        consumer_assignors: &[],
    },
    ClientKind {
        name: "kafkajs",
        runtime: Runtime::Node,
        script: "member_kafkajs.js",
        module: "kafkajs",
        modes: &["sync", "auto"],
        assignors: &["roundrobin"],
        consumer_assignors: &[],
    },
];

/// The clients a command line names (`all`: every one).
pub fn find(names: &[String]) -> Result<Vec<ClientKind>, CheckError> {
    let known = || CLIENTS.iter().map(|c| c.name).collect::<Vec<_>>().join(", ");
    if names.iter().any(|n| n == "all") {
        return Ok(CLIENTS.to_vec());
    }
    if names.is_empty() {
        return Err(CheckError::UnknownClient { name: String::new(), known: known() });
    }
    names
        .iter()
        .map(|n| {
            CLIENTS
                .iter()
                .find(|c| c.name == n)
                .copied()
                .ok_or_else(|| CheckError::UnknownClient { name: n.clone(), known: known() })
        })
        .collect()
}

/// Where the client libraries come from.
#[derive(Clone, Debug)]
pub struct Interpreters {
    /// The Python interpreter (a virtualenv's `bin/python` holds its packages).
    pub python: PathBuf,
    /// Whether `python` was given by the user (then its absence is an error, not a skip).
    pub python_given: bool,
    /// The folder whose `node_modules` holds kafkajs.
    pub node_modules: PathBuf,
    /// Whether `node_modules` was given by the user.
    pub node_modules_given: bool,
    /// The folder of the adapter scripts: the repository's `clients/`, or `--clients-dir`.
    pub clients_dir: PathBuf,
}

impl Interpreters {
    /// The defaults `.ci/install-real-clients.sh` installs, under the workspace `root`.
    pub fn defaults(root: &Path) -> Self {
        Self {
            python: root.join("target/real-clients/venv/bin/python"),
            python_given: false,
            node_modules: root.join("clients/node"),
            node_modules_given: false,
            clients_dir: root.join("clients"),
        }
    }
}

/// How to start one client's adapter.
#[derive(Clone, Debug)]
pub struct Launcher {
    /// The client.
    pub kind: ClientKind,
    /// The program (`python` or `node`).
    pub program: PathBuf,
    /// The adapter script (absolute).
    pub script: PathBuf,
    /// Extra environment (NODE_PATH).
    pub env: Vec<(String, String)>,
}

/// Longest a version probe (`python -c 'import …'`) may take.
const PROBE: Duration = Duration::from_secs(30);

/// The adapter script of `kind` in `interp`'s clients folder, which must be there.
pub fn adapter_script(kind: ClientKind, interp: &Interpreters) -> Result<PathBuf, CheckError> {
    let sub = match kind.runtime {
        Runtime::Python => "python",
        Runtime::Node => "node",
    };
    let script = interp.clients_dir.join(sub).join(kind.script);
    if !script.is_file() {
        return Err(CheckError::MissingAdapter {
            client: kind.name.into(),
            path: script,
            expected: format!("{sub}/{}", kind.script),
        });
    }
    Ok(script)
}

/// The launcher for `kind`, or `Ok(None)` when the client is not installed (skipped). An
/// interpreter the user named that is not there, or an adapter missing from the clients
/// folder, is an error.
pub fn launcher(kind: ClientKind, interp: &Interpreters) -> Result<Option<Launcher>, CheckError> {
    let script = adapter_script(kind, interp)?;
    match kind.runtime {
        Runtime::Python => {
            if !interp.python.exists() {
                if interp.python_given {
                    return Err(CheckError::MissingInterpreter {
                        client: kind.name.into(),
                        path: interp.python.clone(),
                        hint: "--python names a Python interpreter or a virtualenv's bin/python"
                            .into(),
                    });
                }
                return Ok(None);
            }
            let code = format!("import {}", kind.module);
            let ok = run_bounded(&interp.python, &["-c", &code], &[], PROBE)
                .is_ok_and(|(status, _)| status.success());
            Ok(ok.then(|| Launcher {
                kind,
                program: interp.python.clone(),
                script,
                env: vec![("PYTHONUNBUFFERED".into(), "1".into())],
            }))
        }
        Runtime::Node => {
            let modules = interp.node_modules.join("node_modules");
            let package = modules.join(kind.module).join("package.json");
            if !package.exists() {
                if interp.node_modules_given {
                    return Err(CheckError::MissingInterpreter {
                        client: kind.name.into(),
                        path: package,
                        hint: "--node-modules names a folder whose node_modules holds kafkajs"
                            .into(),
                    });
                }
                return Ok(None);
            }
            let node_ok = run_bounded(Path::new("node"), &["--version"], &[], PROBE)
                .is_ok_and(|(status, _)| status.success());
            if !node_ok {
                return Err(CheckError::MissingInterpreter {
                    client: kind.name.into(),
                    path: "node".into(),
                    hint: "node is not on the PATH".into(),
                });
            }
            Ok(Some(Launcher {
                kind,
                program: "node".into(),
                script,
                env: vec![("NODE_PATH".into(), modules.display().to_string())],
            }))
        }
    }
}

/// Runs `program args` to completion within `timeout` (killed past it); its exit status and
/// stdout.
pub fn run_bounded(
    program: &Path,
    args: &[&str],
    env: &[(String, String)],
    timeout: Duration,
) -> std::io::Result<(ExitStatus, String)> {
    let mut child = Command::new(program)
        .args(args)
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let mut stdout = child.stdout.take().expect("stdout is piped");
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let deadline = Instant::now() + timeout;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(std::io::Error::new(std::io::ErrorKind::TimedOut, "timed out"));
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Ok((status, reader.join().unwrap_or_default()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clients_are_named_by_package_and_unknown_names_are_refused() {
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(find(&names(&["all"])).unwrap().len(), 4);
        assert_eq!(find(&names(&["kafkajs"])).unwrap()[0].runtime, Runtime::Node);
        let e = find(&names(&["kafka-pyton"])).unwrap_err().to_string();
        assert!(e.contains("unknown client \"kafka-pyton\"") && e.contains("aiokafka"), "{e}");
    }

    #[test]
    fn a_python_the_user_named_that_does_not_exist_is_an_error_not_a_skip() {
        let mut interp = Interpreters::defaults(Path::new("/nonexistent"));
        interp.clients_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../clients");
        assert!(launcher(CLIENTS[0], &interp).unwrap().is_none(), "default missing: skipped");
        interp.python_given = true;
        let e = launcher(CLIENTS[0], &interp).unwrap_err().to_string();
        assert!(e.contains("interpreter /nonexistent") && e.contains("--python"), "{e}");
    }

    #[test]
    fn an_adapter_missing_from_the_clients_folder_is_named_with_its_path() {
        let mut interp = Interpreters::defaults(Path::new("/nonexistent"));
        interp.clients_dir = std::env::temp_dir().join("groupsim-no-adapters-here");
        for kind in CLIENTS {
            let e = launcher(kind, &interp).unwrap_err().to_string();
            assert!(
                e.contains(kind.name) && e.contains(kind.script) && e.contains("not found"),
                "{e}"
            );
        }
        interp.clients_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../clients");
        for kind in CLIENTS {
            assert!(adapter_script(kind, &interp).is_ok(), "the repository has every adapter");
        }
    }
}
