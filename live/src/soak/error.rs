//! What stops a soak before it can judge anything (a failed goal is not an error: it is the
//! verdict).

use std::path::PathBuf;

/// Why a soak could not run.
#[derive(Debug, thiserror::Error)]
pub enum SoakError {
    /// A command-line setting no soak can run with.
    #[error("{0}")]
    Setting(String),
    /// kafka-python is not where the soak looks for it.
    #[error(
        "no kafka-python to run the real group: {python} does not import kafka ({why}); run \
         .ci/install-real-clients.sh python, or name an interpreter with --python"
    )]
    NoKafkaPython { python: PathBuf, why: String },
    /// The serve process did not start or report its brokers.
    #[error("groupsim serve did not start: {0}")]
    ServeStart(String),
    /// A real group member did not start.
    #[error("kafka-python consumer {member} did not start: {why}")]
    MemberStart { member: String, why: String },
    /// Reading or writing a file or process failed.
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    /// The served history could not be read back.
    #[error("reading the served history {path}: {why}")]
    History { path: PathBuf, why: String },
}

impl SoakError {
    /// An I/O error with what was being done.
    pub fn io(what: impl Into<String>, source: std::io::Error) -> Self {
        Self::Io { what: what.into(), source }
    }
}
