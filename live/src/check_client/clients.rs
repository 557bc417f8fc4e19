//! The clients `check-client` knows: their package names (what the command line takes), the
//! adapter script that runs one group member of each, and where the client library comes from
//! (a Python interpreter or virtualenv, or a `node_modules` folder: the user's choice or a
//! release from the cache, so the version checked is the version they ship). What a release
//! offers (commit modes, assignors, group protocols) its adapter reports
//! ([`super::capabilities`]).

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::bounded::run_bounded;
pub use super::capabilities::protocol_name;
use super::capabilities::{self, Capabilities};
use super::error::CheckError;

/// How an adapter runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Runtime {
    /// `python member_<client>.py …`, importing the library from the interpreter's packages.
    Python,
    /// `node member_kafkajs.js …`, loading the library from a `node_modules` folder.
    Node,
    /// A binary built from the adapter's Cargo project (`clients/rust/member_<client>`) against
    /// one release of a Rust client crate, kept in the release cache.
    Rust,
}

/// One client of the catalogue.
#[derive(Clone, Copy, Debug)]
pub struct ClientKind {
    /// The package name (`kafka-python`, `confluent-kafka`, `aiokafka`, `kafkajs`).
    pub name: &'static str,
    /// How its adapter runs.
    pub runtime: Runtime,
    /// The adapter script, under `clients/python` or `clients/node`, or the adapter's Cargo
    /// project under `clients/rust`.
    pub script: &'static str,
    /// The module to import (Python), require (Node) or depend on (Rust: the crate).
    pub module: &'static str,
}

/// The release of samsa a bare `samsa` means (the adapter's Cargo.toml pins it too).
pub const SAMSA_DEFAULT: &str = "0.1.8";

/// Every client, in table order.
pub const CLIENTS: [ClientKind; 5] = [
    ClientKind {
        name: "kafka-python",
        runtime: Runtime::Python,
        script: "member_kafka_python.py",
        module: "kafka",
    },
    ClientKind {
        name: "confluent-kafka",
        runtime: Runtime::Python,
        script: "member_confluent.py",
        module: "confluent_kafka",
    },
    ClientKind {
        name: "aiokafka",
        runtime: Runtime::Python,
        script: "member_aiokafka.py",
        module: "aiokafka",
    },
    ClientKind {
        name: "kafkajs",
        runtime: Runtime::Node,
        script: "member_kafkajs.js",
        module: "kafkajs",
    },
    ClientKind { name: "samsa", runtime: Runtime::Rust, script: "member_samsa", module: "samsa" },
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
    /// A built adapter binary (a Rust client's release from the cache), if one was built.
    pub adapter_binary: Option<PathBuf>,
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
            adapter_binary: None,
        }
    }
}

/// How to start one client's adapter.
#[derive(Clone, Debug)]
pub struct Launcher {
    /// The client.
    pub kind: ClientKind,
    /// The program (`python`, `node`, or a built adapter binary).
    pub program: PathBuf,
    /// The adapter script (absolute) the program runs; `None` for a built adapter.
    pub script: Option<PathBuf>,
    /// Extra environment (NODE_PATH).
    pub env: Vec<(String, String)>,
    /// What the installed release offers, as the adapter reported it.
    pub capabilities: Capabilities,
}

/// Longest an installation probe (`python -c 'import …'`) may take.
const PROBE: Duration = Duration::from_secs(30);

/// The adapter script of `kind` in `interp`'s clients folder, which must be there.
pub fn adapter_script(kind: ClientKind, interp: &Interpreters) -> Result<PathBuf, CheckError> {
    let sub = match kind.runtime {
        Runtime::Python => "python",
        Runtime::Node => "node",
        Runtime::Rust => "rust",
    };
    let script = interp.clients_dir.join(sub).join(kind.script);
    let present = match kind.runtime {
        Runtime::Rust => script.join("Cargo.toml").is_file(),
        Runtime::Python | Runtime::Node => script.is_file(),
    };
    if !present {
        return Err(CheckError::MissingAdapter {
            client: kind.name.into(),
            path: script,
            expected: format!("{sub}/{}", kind.script),
        });
    }
    Ok(script)
}

/// The launcher for `kind`, with what its release offers, or `Ok(None)` when the client is not
/// installed (skipped). An interpreter the user named that is not there, an adapter missing
/// from the clients folder, or one that cannot report its capabilities is an error.
pub fn launcher(kind: ClientKind, interp: &Interpreters) -> Result<Option<Launcher>, CheckError> {
    let Some((program, script, env)) = located(kind, interp)? else {
        return Ok(None);
    };
    let capabilities = capabilities::probe(kind.name, &program, script.as_deref(), &env)?;
    Ok(Some(Launcher { kind, program, script, env, capabilities }))
}

/// The program, adapter script and environment that run `kind`, or `Ok(None)` when it is not
/// installed.
type Located = (PathBuf, Option<PathBuf>, Vec<(String, String)>);

fn located(kind: ClientKind, interp: &Interpreters) -> Result<Option<Located>, CheckError> {
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
                .is_ok_and(|done| done.status.success());
            let env = vec![("PYTHONUNBUFFERED".to_string(), "1".to_string())];
            Ok(ok.then(|| (interp.python.clone(), Some(script), env)))
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
                .is_ok_and(|done| done.status.success());
            if !node_ok {
                return Err(CheckError::MissingInterpreter {
                    client: kind.name.into(),
                    path: "node".into(),
                    hint: "node is not on the PATH".into(),
                });
            }
            // The adapter loads kafkajs from GROUPSIM_NODE_MODULES first: a node_modules beside
            // the script would otherwise shadow the release asked for.
            let env = vec![
                ("NODE_PATH".to_string(), modules.display().to_string()),
                ("GROUPSIM_NODE_MODULES".to_string(), interp.node_modules.display().to_string()),
            ];
            Ok(Some(("node".into(), Some(script), env)))
        }
        Runtime::Rust => Ok(interp
            .adapter_binary
            .as_ref()
            .filter(|b| b.is_file())
            .map(|b| (b.clone(), None, Vec::new()))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clients_are_named_by_package_and_unknown_names_are_refused() {
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(find(&names(&["all"])).unwrap().len(), CLIENTS.len());
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
