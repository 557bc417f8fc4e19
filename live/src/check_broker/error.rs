//! [`CheckBrokerError`]: what stops `check-broker` before or during a run. Each names the broker
//! address and the step; the command line exits 2 on any of them.

/// Why `check-broker` could not run.
#[derive(Debug, thiserror::Error)]
pub enum CheckBrokerError {
    /// An argument that cannot work.
    #[error("bad argument: {0}")]
    BadArgument(String),
    /// Nothing answered at the address (refused, unresolvable, or no answer in time).
    #[error("broker {addr} is unreachable: {reason}")]
    Unreachable { addr: String, reason: String },
    /// The broker accepted the connection and closed it before answering ApiVersions.
    #[error("broker {addr} closed the connection before answering ApiVersions")]
    ClosedAtOnce { addr: String },
    /// The ApiVersions exchange failed some other way (garbage, a refused version).
    #[error("broker {addr}: ApiVersions failed: {reason}")]
    Handshake { addr: String, reason: String },
    /// The broker does not offer the APIs a consumer group needs.
    #[error("broker {addr} does not offer the group APIs: missing {missing}")]
    NoGroupApis { addr: String, missing: String },
    /// `--protocol` asked for a group protocol the broker does not offer.
    #[error("broker {addr} does not offer the {protocol} group protocol (missing {missing})")]
    ProtocolNotOffered { addr: String, protocol: String, missing: String },
    /// The topic is not there and creating it failed.
    #[error("topic {topic:?} cannot be created on {addr}: {reason}")]
    TopicNotCreatable { addr: String, topic: String, reason: String },
    /// A request of the harness's own (Metadata, CreateTopics, Produce) failed.
    #[error("broker {addr}: {what} failed: {reason}")]
    Request { addr: String, what: String, reason: String },
    /// The broker-restart command (`--restart-cmd`) failed, or ran past its time.
    #[error("the broker-restart command {command:?} failed: {reason}")]
    RestartFailed { command: String, reason: String },
    /// The local proxy could not listen.
    #[error("cannot start the local proxy: {0}")]
    Proxy(#[source] std::io::Error),
    /// The async runtime could not start.
    #[error("cannot start the runtime: {0}")]
    Runtime(#[source] std::io::Error),
}
