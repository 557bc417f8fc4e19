//! The release cache: each client release a command line names (`kafka-python==2.0.2`,
//! `kafkajs@1.16.0`) is installed once, into a folder of its own, and reused by every later
//! run: a virtualenv per Python release (per Python minor version, as wheels are), a
//! `node_modules` per kafkajs release.
//!
//! A Rust client's release is the adapter's Cargo project (`clients/rust/member_<name>`) copied
//! with its dependency pinned to that release and built (`cargo build --release`): the cache
//! keeps the project, its build and the binary.
//!
//! Where: `--cache-dir`, else `$GROUPSIM_CACHE`, else `$XDG_CACHE_HOME/groupsim`, else
//! `~/.cache/groupsim`; releases live under `clients/python3.<minor>/<name>-<version>/`,
//! `clients/node/kafkajs-<version>/` and `clients/rust/<name>-<version>/`. A release is installed beside its final folder and
//! renamed into place once it imports, with a marker file, so a killed install leaves nothing
//! that looks installed and two campaigns installing the same release at once both end with
//! one good copy. Every installer step is bounded; the installer's log stays beside the release
//! (`<name>-<version>.install.log`).
//!
//! An old release may need the dependencies of its day: aiokafka before 0.9 imports parts of
//! kafka-python that kafka-python 2.1 removed, so it is installed with kafka-python 2.0.2.

use std::fs::OpenOptions;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

use super::bounded::{run_bounded, run_logged, tail};
use super::clients::{Interpreters, Runtime};
use super::error::CheckError;
use super::spec::{numbers, ClientSpec};

/// The environment variable naming the cache folder.
pub const CACHE_VAR: &str = "GROUPSIM_CACHE";
/// The file whose presence marks a release folder as completely installed.
const MARKER: &str = ".groupsim-release";
/// Longest a virtualenv creation may take.
const VENV_TIMEOUT: Duration = Duration::from_secs(120);
/// Longest a release's install may take (an old release without a wheel for this Python is
/// built from source).
const INSTALL_TIMEOUT: Duration = Duration::from_secs(15 * 60);
/// Longest a Rust adapter's build may take (its dependencies compile from source).
const BUILD_TIMEOUT: Duration = Duration::from_secs(30 * 60);
/// Longest an interpreter probe may take.
const PROBE: Duration = Duration::from_secs(30);
/// Lines of the installer's output an error shows.
const TAIL_LINES: usize = 15;

/// The release cache folder.
#[derive(Clone, Debug)]
pub struct ReleaseCache {
    root: PathBuf,
}

impl ReleaseCache {
    /// The cache at `explicit`, or where the environment says (module docs).
    pub fn locate(explicit: Option<&Path>) -> Result<Self, CheckError> {
        let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
        let root = explicit
            .map(Path::to_path_buf)
            .or_else(|| var(CACHE_VAR))
            .or_else(|| var("XDG_CACHE_HOME").map(|d| d.join("groupsim")))
            .or_else(|| var("HOME").map(|h| h.join(".cache/groupsim")))
            .ok_or_else(|| {
                CheckError::Setting(format!(
                    "no release cache: set {CACHE_VAR}, XDG_CACHE_HOME or HOME, or pass --cache-dir"
                ))
            })?;
        Ok(Self { root })
    }

    /// The cache folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where `spec`'s release runs from, installing it first unless the cache has it:
    /// `interp` with the release's interpreter (Python) or `node_modules` folder (kafkajs).
    /// `interp.python` is the Python the virtualenv is made from.
    pub fn provide(
        &self,
        spec: &ClientSpec,
        interp: &Interpreters,
    ) -> Result<Interpreters, CheckError> {
        let version = spec.version.as_deref().expect("a release names its version");
        self.writable()?;
        let mut out = interp.clone();
        match spec.kind.runtime {
            Runtime::Python => {
                let tag = python_tag(&interp.python, spec)?;
                let dir = self.folder(&format!("python{tag}"), spec.kind.name, version)?;
                if !is_installed(&dir) {
                    self.install(spec, &dir, |partial, log| {
                        install_python(spec, &interp.python, partial, log)
                    })?;
                }
                out.python = dir.join("bin/python");
                out.python_given = true;
            }
            Runtime::Node => {
                let dir = self.folder("node", spec.kind.name, version)?;
                if !is_installed(&dir) {
                    self.install(spec, &dir, |partial, log| install_node(spec, partial, log))?;
                }
                out.node_modules = dir;
                out.node_modules_given = true;
            }
            Runtime::Rust => {
                let dir = self.folder("rust", spec.kind.name, version)?;
                let project = interp.clients_dir.join("rust").join(spec.kind.script);
                if !is_installed(&dir) {
                    self.install(spec, &dir, |partial, log| {
                        build_rust(spec, &project, partial, log)
                    })?;
                }
                out.adapter_binary = Some(rust_binary(spec, &dir));
            }
        }
        Ok(out)
    }

    /// Where `spec`'s built adapter is, if the cache has it (nothing is built).
    pub fn built(&self, spec: &ClientSpec) -> Option<PathBuf> {
        let version = spec.version.as_deref()?;
        let dir = self.root.join("clients/rust").join(format!("{}-{version}", spec.kind.name));
        is_installed(&dir).then(|| rust_binary(spec, &dir))
    }

    /// Whether the cache can be written (created if need be): the first thing a release
    /// needs, so an unwritable cache is named before any installer runs.
    pub fn writable(&self) -> Result<(), CheckError> {
        let dir = self.root.join("clients");
        let unwritable = |source| CheckError::CacheDir { path: self.root.clone(), source };
        std::fs::create_dir_all(&dir).map_err(unwritable)?;
        let probe = dir.join(format!(".write-probe-{}", std::process::id()));
        std::fs::write(&probe, b"").map_err(unwritable)?;
        let _ = std::fs::remove_file(&probe);
        Ok(())
    }

    /// The folder of release `name`-`version` under `group`, its parent created.
    fn folder(&self, group: &str, name: &str, version: &str) -> Result<PathBuf, CheckError> {
        let parent = self.root.join("clients").join(group);
        std::fs::create_dir_all(&parent)
            .map_err(|source| CheckError::CacheDir { path: self.root.clone(), source })?;
        Ok(parent.join(format!("{name}-{version}")))
    }

    /// Installs into a fresh folder beside `dir` with `step` (given that folder and the log),
    /// then renames it to `dir`. A failure is classified from the log and the folder removed.
    fn install(
        &self,
        spec: &ClientSpec,
        dir: &Path,
        step: impl FnOnce(&Path, &Path) -> Result<(), Step>,
    ) -> Result<(), CheckError> {
        let name = dir.file_name().expect("a release folder has a name").to_string_lossy();
        let log = dir.with_file_name(format!("{name}.install.log"));
        let nanos =
            SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default().as_nanos();
        let partial = dir.with_file_name(format!(".{name}.partial-{}-{nanos}", std::process::id()));
        let _ = std::fs::remove_file(&log);
        eprintln!(
            "check-client: installing {spec} into {} (log: {})",
            dir.display(),
            log.display()
        );
        let result = step(&partial, &log).and_then(|()| {
            std::fs::write(partial.join(MARKER), format!("{spec}\n")).map_err(Step::Io)
        });
        if let Err(e) = result {
            let _ = std::fs::remove_dir_all(&partial);
            return Err(self.failure(spec, e, &log));
        }
        if std::fs::rename(&partial, dir).is_err() {
            // Another campaign installed it meanwhile (its copy is as good), or a broken
            // leftover without a marker sits there: replace that.
            if !is_installed(dir) {
                let _ = std::fs::remove_dir_all(dir);
                if let Err(e) = std::fs::rename(&partial, dir) {
                    let _ = std::fs::remove_dir_all(&partial);
                    let what = format!("moving the installed {spec} into {}", dir.display());
                    return Err(CheckError::io(what, e));
                }
            } else {
                let _ = std::fs::remove_dir_all(&partial);
            }
        }
        Ok(())
    }

    /// The named error for a failed install step, read from the installer's log.
    fn failure(&self, spec: &ClientSpec, step: Step, log: &Path) -> CheckError {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        let registry = match spec.kind.runtime {
            Runtime::Python => "PyPI",
            Runtime::Node => "the npm registry",
            Runtime::Rust => "crates.io",
        }
        .to_string();
        let (spec, log) = (spec.to_string(), log.to_path_buf());
        let tail = tail(&text, TAIL_LINES);
        match step {
            Step::Failed(_) if unreachable(&text) => {
                CheckError::RegistryUnreachable { spec, registry, tail, log }
            }
            Step::Failed(_) if no_such_release(&text) => {
                CheckError::NoSuchRelease { spec, registry, log }
            }
            Step::Failed(why) => CheckError::InstallFailed { spec, why, tail, log },
            Step::Io(e) if e.kind() == std::io::ErrorKind::TimedOut => {
                let why = format!("the installer ran too long ({e})");
                CheckError::InstallFailed { spec, why, tail, log }
            }
            Step::Io(e) => {
                let why = format!("the installer could not run: {e}");
                CheckError::InstallFailed { spec, why, tail, log }
            }
        }
    }
}

/// Why an install step failed: a command that exited non-zero (with a description), or one
/// that could not run or ran too long.
enum Step {
    Failed(String),
    Io(std::io::Error),
}

/// Whether `dir` holds a completely installed release.
fn is_installed(dir: &Path) -> bool {
    dir.join(MARKER).is_file()
}

/// Runs `command` with its output appended to `log`, bounded by `timeout`; `what` describes a
/// non-zero exit.
fn step(command: &mut Command, log: &Path, timeout: Duration, what: &str) -> Result<(), Step> {
    let status = run_logged(command, log, timeout).map_err(Step::Io)?;
    if status.success() {
        Ok(())
    } else {
        Err(Step::Failed(format!("{what} exited with {status}")))
    }
}

/// `python3.11`'s `3.11`: the Python minor version a virtualenv (and its wheels) belongs to.
fn python_tag(python: &Path, spec: &ClientSpec) -> Result<String, CheckError> {
    let code = "import sys; print('%d.%d' % sys.version_info[:2])";
    let missing = || CheckError::MissingInterpreter {
        client: spec.kind.name.into(),
        path: python.to_path_buf(),
        hint: format!("{spec} is installed into a virtualenv made with it; --python names another"),
    };
    let done = run_bounded(python, &["-c", code], &[], PROBE).map_err(|_| missing())?;
    let tag = done.stdout.trim().to_string();
    if !done.status.success() || numbers(&tag).len() != 2 {
        return Err(missing());
    }
    Ok(tag)
}

/// Other packages a Python release needs pinned (module docs).
fn companions(spec: &ClientSpec) -> Vec<String> {
    let version = numbers(spec.version.as_deref().unwrap_or_default());
    if spec.kind.name == "aiokafka" && version < vec![0, 9] {
        return vec!["kafka-python==2.0.2".into()];
    }
    Vec::new()
}

/// A virtualenv at `dir` made with `python`, holding `spec`'s release; it must import.
fn install_python(spec: &ClientSpec, python: &Path, dir: &Path, log: &Path) -> Result<(), Step> {
    let mut venv = Command::new(python);
    venv.args(["-m", "venv"]).arg(dir);
    step(&mut venv, log, VENV_TIMEOUT, "creating the virtualenv")?;
    let venv_python = dir.join("bin/python");
    let mut pip = Command::new(&venv_python);
    pip.args(["-m", "pip", "install", "--disable-pip-version-check", "--no-input"])
        .args(["--retries", "1", "--timeout", "20"])
        .arg(spec.to_string())
        .args(companions(spec))
        .env("PIP_NO_INPUT", "1");
    step(&mut pip, log, INSTALL_TIMEOUT, "pip install")?;
    let mut import = Command::new(&venv_python);
    import.args(["-c", &format!("import {}", spec.kind.module)]);
    step(&mut import, log, PROBE, &format!("the installed release (import {})", spec.kind.module))
}

/// A folder at `dir` whose `node_modules` holds `spec`'s release, at that exact version.
fn install_node(spec: &ClientSpec, dir: &Path, log: &Path) -> Result<(), Step> {
    std::fs::create_dir_all(dir).map_err(Step::Io)?;
    std::fs::write(dir.join("package.json"), "{\"private\": true}\n").map_err(Step::Io)?;
    let mut npm = Command::new("npm");
    npm.args(["install", "--prefix"])
        .arg(dir)
        .args(["--no-audit", "--no-fund", "--no-package-lock", "--loglevel=error"])
        .args(["--fetch-retries=1", "--fetch-timeout=20000"])
        .arg(spec.to_string());
    step(&mut npm, log, INSTALL_TIMEOUT, "npm install")?;
    let package = dir.join("node_modules").join(spec.kind.module).join("package.json");
    let text = std::fs::read_to_string(&package).map_err(Step::Io)?;
    let version = spec.version.as_deref().unwrap_or_default();
    if !text.contains(&format!("\"version\": \"{version}\"")) {
        let mut f = OpenOptions::new().append(true).open(log).map_err(Step::Io)?;
        let _ = std::io::Write::write_all(
            &mut f,
            b"the installed package.json names another version\n",
        );
        return Err(Step::Failed(format!("npm installed another version than {version}")));
    }
    Ok(())
}

/// The adapter binary of `spec`'s release folder `dir`.
fn rust_binary(spec: &ClientSpec, dir: &Path) -> PathBuf {
    dir.join("target/release").join(spec.kind.script)
}

/// The adapter's Cargo project `project` copied to `dir` with its `spec.kind.module`
/// requirement pinned to `spec`'s release, then built there.
fn build_rust(spec: &ClientSpec, project: &Path, dir: &Path, log: &Path) -> Result<(), Step> {
    let version = spec.version.as_deref().unwrap_or_default();
    let manifest = std::fs::read_to_string(project.join("Cargo.toml")).map_err(Step::Io)?;
    let crate_line = format!("{} = ", spec.kind.module);
    let mut pinned = false;
    let manifest: String = manifest
        .lines()
        .map(|line| {
            if line.starts_with(&crate_line) && !pinned {
                pinned = true;
                format!("{crate_line}\"={version}\"\n")
            } else {
                format!("{line}\n")
            }
        })
        .collect();
    if !pinned {
        let why = format!("the adapter's Cargo.toml has no `{crate_line}` line to pin");
        return Err(Step::Failed(why));
    }
    std::fs::create_dir_all(dir.join("src")).map_err(Step::Io)?;
    std::fs::write(dir.join("Cargo.toml"), manifest).map_err(Step::Io)?;
    for file in ["Cargo.lock", "src/main.rs"] {
        let from = project.join(file);
        if from.is_file() {
            std::fs::copy(&from, dir.join(file)).map_err(Step::Io)?;
        }
    }
    let mut cargo = Command::new("cargo");
    cargo
        .args(["build", "--release", "--manifest-path"])
        .arg(dir.join("Cargo.toml"))
        .env("CARGO_TARGET_DIR", dir.join("target"))
        .env("GROUPSIM_CLIENT_VERSION", version)
        .env_remove("RUSTFLAGS");
    step(&mut cargo, log, BUILD_TIMEOUT, "cargo build")
}

/// Whether an installer's log shows the registry could not be reached.
fn unreachable(log: &str) -> bool {
    [
        "Failed to establish a new connection",
        "Temporary failure in name resolution",
        "Name or service not known",
        "Network is unreachable",
        "ConnectTimeoutError",
        "ProxyError",
        "ENOTFOUND",
        "EAI_AGAIN",
        "ECONNREFUSED",
        "ETIMEDOUT",
        "ENETUNREACH",
        "Could not resolve host",
        "failed to download from",
    ]
    .iter()
    .any(|s| log.contains(s))
}

/// Whether an installer's log says the registry has no such version.
fn no_such_release(log: &str) -> bool {
    [
        "No matching distribution found",
        "ETARGET",
        "No matching version found",
        "failed to select a version for the requirement",
    ]
    .iter()
    .any(|s| log.contains(s))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check_client::spec::parse;

    #[test]
    fn old_aiokafka_gets_the_kafka_python_of_its_day_and_nothing_else_does() {
        let pins = |s: &str| companions(&parse(s).unwrap());
        assert_eq!(pins("aiokafka==0.7.1"), ["kafka-python==2.0.2"]);
        assert_eq!(pins("aiokafka==0.8.0"), ["kafka-python==2.0.2"]);
        assert!(pins("aiokafka==0.9.0").is_empty());
        assert!(pins("kafka-python==2.0.2").is_empty());
    }

    #[test]
    fn installer_logs_are_read_as_missing_releases_or_an_unreachable_registry() {
        let pip_missing = "ERROR: Could not find a version that satisfies the requirement \
                           kafka-python==9.9.9 (from versions: 0.9.0, 2.0.2)\nERROR: No matching \
                           distribution found for kafka-python==9.9.9";
        assert!(no_such_release(pip_missing) && !unreachable(pip_missing));
        let npm_missing = "npm error code ETARGET\nnpm error notarget No matching version found";
        assert!(no_such_release(npm_missing) && !unreachable(npm_missing));
        let offline = "WARNING: Retrying ... NewConnectionError: Failed to establish a new \
                       connection: [Errno -3] Temporary failure in name resolution";
        assert!(unreachable(offline));
    }

    #[test]
    fn a_cache_that_cannot_be_written_is_a_named_error() {
        let file = std::env::temp_dir().join(format!("groupsim-cache-file-{}", std::process::id()));
        std::fs::write(&file, "not a folder").unwrap();
        let cache = ReleaseCache::locate(Some(&file)).unwrap();
        let e = cache.writable().unwrap_err().to_string();
        assert!(e.contains("release cache") && e.contains("is not writable"), "{e}");
        std::fs::remove_file(&file).unwrap();
    }
}
