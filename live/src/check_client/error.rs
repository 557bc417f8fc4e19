//! Why a `check-client` run could not judge a client: each message names the client, the
//! process or the file at fault. An anomaly found in a client is a result, not an error.

use std::path::PathBuf;

/// A campaign that could not run, or an adapter that misbehaved.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// A client name outside the catalogue.
    #[error("unknown client {name:?}: choose one of {known} or all")]
    UnknownClient { name: String, known: String },
    /// The interpreter to run the adapter with is not there.
    #[error("{client}: interpreter {path} not found ({hint})")]
    MissingInterpreter { client: String, path: PathBuf, hint: String },
    /// The folder `--clients-dir` names is not there.
    #[error("--clients-dir {path}: no such folder (it should hold python/member_<client>.py and node/member_kafkajs.js, like the repository's clients/)")]
    ClientsDir { path: PathBuf },
    /// The adapter script for a client is not in the clients folder.
    #[error("{client}: adapter {path} not found (a clients folder holds {expected})")]
    MissingAdapter { client: String, path: PathBuf, expected: String },
    /// The adapter process could not be started.
    #[error("{client}: cannot start {program}")]
    Spawn {
        client: String,
        program: String,
        #[source]
        source: std::io::Error,
    },
    /// The adapter exited before it said it was ready.
    #[error("{client}: adapter {member} exited before it was ready ({status}); its stderr ends:\n{stderr}")]
    AdapterCrashed { client: String, member: String, status: String, stderr: String },
    /// The adapter printed something that is not one of its JSON events.
    #[error("{client}: adapter {member} printed garbage instead of a JSON event: {line:?}")]
    AdapterGarbage { client: String, member: String, line: String },
    /// The adapter did not say it was ready in time.
    #[error(
        "{client}: adapter {member} was not ready within {secs} s; its stderr ends:\n{stderr}"
    )]
    AdapterTimeout { client: String, member: String, secs: u64, stderr: String },
    /// A processed-record log line that is not a processed record.
    #[error("{path}:{line}: not a processed record: {text:?}")]
    ProcessedGarbage { path: PathBuf, line: usize, text: String },
    /// A client spec that names no release clearly.
    #[error("malformed client spec {spec:?}: {why} (e.g. kafka-python==2.2.8, kafkajs@1.16.0)")]
    MalformedSpec { spec: String, why: String },
    /// The release cache cannot be used.
    #[error("release cache {path} is not writable: {source} (choose another with --cache-dir or GROUPSIM_CACHE)")]
    CacheDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The registry has no such release of the client.
    #[error("{spec}: no such release on {registry} (the installer's log: {log})")]
    NoSuchRelease { spec: String, registry: String, log: PathBuf },
    /// The registry could not be reached to install a release.
    #[error("{spec}: {registry} cannot be reached to install it; the installer's output ends:\n{tail}\n(log: {log})")]
    RegistryUnreachable { spec: String, registry: String, tail: String, log: PathBuf },
    /// A release exists but does not install (or does not import once installed).
    #[error("{spec}: cannot install: {why}; the installer's output ends:\n{tail}\n(log: {log})")]
    InstallFailed { spec: String, why: String, tail: String, log: PathBuf },
    /// A release in the cache that the adapter does not run as asked (it does not load, or
    /// the adapter reports another version).
    #[error("{spec}: installed in {dir}, but {why}")]
    ReleaseNotRun { spec: String, dir: PathBuf, why: String },
    /// The adapter could not say what its client offers (`--capabilities`).
    #[error("{client}: adapter {script} --capabilities {why}; its stderr ends:\n{stderr}")]
    Capabilities { client: String, script: PathBuf, why: String, stderr: String },
    /// A campaign setting refused.
    #[error("{0}")]
    Setting(String),
    /// The served cluster failed.
    #[error(transparent)]
    Serve(#[from] crate::serve::ServeError),
    /// A file or process operation failed.
    #[error("{what}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
}

impl CheckError {
    /// An I/O failure while doing `what`.
    pub(crate) fn io(what: impl Into<String>, source: std::io::Error) -> Self {
        Self::Io { what: what.into(), source }
    }
}
