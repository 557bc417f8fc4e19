//! Why a loopback cluster cannot start or do what was asked: each message names the argument
//! or the broker at fault.

/// A `serve` setting refused, or a cluster operation that failed.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// A topic name outside Kafka's length rules.
    #[error("topic name {0:?} must be 1 to 249 characters and not '.' or '..'")]
    TopicNameLength(String),
    /// A topic name with a character Kafka refuses.
    #[error("topic name {0:?} may only contain ASCII letters, digits, '.', '_' and '-'")]
    TopicNameChars(String),
    /// A partition count out of range.
    #[error("topic {topic:?}: partition count {partitions} must be between 1 and 10000")]
    PartitionCount { topic: String, partitions: i32 },
    /// `--topic name` without `:partitions`.
    #[error("topic {0:?} needs a partition count: write it as name:partitions, e.g. {0}:3")]
    NoPartitionCount(String),
    /// `--topic name:x` with a count that is not a number.
    #[error("topic {topic:?}: partition count {count:?} is not a number")]
    PartitionCountNotANumber { topic: String, count: String },
    /// The same topic twice.
    #[error("topic {0:?} is given twice")]
    TopicTwice(String),
    /// A broker count out of range.
    #[error("--brokers {brokers} must be between 1 and {max}")]
    Brokers { brokers: usize, max: usize },
    /// Consecutive broker ports past 65535.
    #[error("--port {port}: {brokers} brokers on consecutive ports would go past port 65535")]
    PortsPastEnd { port: u16, brokers: usize },
    /// Port 0 on the command line.
    #[error(
        "--port must be between 1 and 65535 (port 0 is only for the library's ephemeral ports)"
    )]
    PortZero,
    /// Too many preloaded records.
    #[error("--preload {preload} must be at most {max}")]
    Preload { preload: u32, max: u32 },
    /// Consumer-group (KIP-848) timings Kafka refuses.
    #[error(
        "--consumer-heartbeat-interval-ms {heartbeat_ms} must be at least 1 and less than \
         --consumer-session-timeout-ms {session_ms}"
    )]
    ConsumerTimings { heartbeat_ms: i32, session_ms: i32 },
    /// No offsets topic partitions.
    #[error(transparent)]
    UnknownBug(#[from] groupsim::bugs::UnknownBug),
    /// `--bug` names a switch that changes more than the coordinator.
    #[error(transparent)]
    NotACoordinatorBug(#[from] groupsim::bugs::NotACoordinatorBug),
    #[error("offsets_topic_partitions must be at least 1")]
    OffsetsTopicPartitions,
    /// `--max-request-bytes` out of range.
    #[error("--max-request-bytes {bytes} must be between {min} and 2147483647")]
    MaxRequestBytes { bytes: usize, min: usize },
    /// `--max-connections 0`.
    #[error("--max-connections must be at least 1")]
    MaxConnections,
    /// A `--schedule` file that cannot be read or applied.
    #[error("schedule {path}: {source}")]
    Schedule {
        path: std::path::PathBuf,
        #[source]
        source: groupsim::faults::ScheduleError,
    },
    /// No broker has this node id.
    #[error("no broker {node_id} (brokers are 0..{brokers})")]
    NoBroker { node_id: i32, brokers: usize },
    /// The broker is stopped.
    #[error("broker {0} is not running")]
    NotRunning(i32),
    /// The broker runs already.
    #[error("broker {0} is already running")]
    AlreadyRunning(i32),
    /// Creating or preloading a topic failed.
    #[error(transparent)]
    Log(#[from] groupsim_coordinator::log::LogError),
    /// The cluster's runtime went away while waiting on it.
    #[error("the cluster stopped")]
    Stopped(#[source] std::sync::mpsc::RecvError),
    /// A socket or runtime operation failed.
    #[error("{what}")]
    Io {
        /// What was being done.
        what: String,
        /// Why it failed.
        #[source]
        source: std::io::Error,
    },
}

impl ServeError {
    /// An I/O failure while doing `what`.
    pub(super) fn io(what: impl Into<String>, source: std::io::Error) -> Self {
        Self::Io { what: what.into(), source }
    }
}
