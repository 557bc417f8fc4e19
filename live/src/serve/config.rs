//! What a loopback cluster runs: its topics, brokers and ports, from the library
//! ([`ClusterConfig`]) or the command line ([`ServeArgs`]), checked before anything starts.

use std::str::FromStr;

use groupsim_coordinator::CoordinatorConfig;
use groupsim_member::GroupProtocol;

use super::error::ServeError;

/// A topic to create at start: `name:partitions` on the command line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopicSpec {
    /// Topic name (Kafka's rules: 1–249 of `[a-zA-Z0-9._-]`, not `.` or `..`).
    pub name: String,
    /// Partition count, 1–10000.
    pub partitions: i32,
}

impl TopicSpec {
    /// A topic spec, checked like the command line's.
    pub fn new(name: &str, partitions: i32) -> Result<Self, ServeError> {
        let valid_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
        if name.is_empty() || name.len() > 249 || name == "." || name == ".." {
            return Err(ServeError::TopicNameLength(name.to_string()));
        }
        if !name.chars().all(valid_char) {
            return Err(ServeError::TopicNameChars(name.to_string()));
        }
        if !(1..=10_000).contains(&partitions) {
            return Err(ServeError::PartitionCount { topic: name.to_string(), partitions });
        }
        Ok(Self { name: name.to_string(), partitions })
    }
}

impl FromStr for TopicSpec {
    type Err = ServeError;

    fn from_str(s: &str) -> Result<Self, ServeError> {
        let Some((name, count)) = s.rsplit_once(':') else {
            return Err(ServeError::NoPartitionCount(s.to_string()));
        };
        let partitions = count.parse::<i32>().map_err(|_| {
            ServeError::PartitionCountNotANumber { topic: s.to_string(), count: count.to_string() }
        })?;
        Self::new(name, partitions)
    }
}

/// What a [`Cluster`](super::Cluster) runs.
#[derive(Clone, Debug)]
pub struct ClusterConfig {
    /// Number of brokers (node ids 0..brokers), at least 1.
    pub brokers: usize,
    /// Port of broker 0; broker i listens on `port + i`. 0 picks free ephemeral ports.
    pub port: u16,
    /// Topics created at start.
    pub topics: Vec<TopicSpec>,
    /// Records appended to every partition at start (values `"{topic}-{partition}-{i}"`).
    pub preload: u32,
    /// `offsets.topic.num.partitions`.
    pub offsets_topic_partitions: i32,
    /// Group coordinator settings (session timeout bounds, initial rebalance delay, …).
    pub coordinator: CoordinatorConfig,
    /// What the history's `RunStarted` calls the run (`serve`, `check-client kafka-python`, …).
    pub label: String,
    /// The seed the history's `RunStarted` names (the nemesis schedule's, when there is one).
    pub seed: u64,
    /// `connections.max.idle.ms`: a broker closes a connection idle this long (`None`: never).
    pub connections_max_idle_ms: Option<u64>,
    /// Largest request a broker reads, in bytes ([`DEFAULT_MAX_REQUEST_BYTES`]).
    pub max_request_bytes: usize,
    /// Most client connections one broker holds open at once
    /// ([`DEFAULT_MAX_CONNECTIONS_PER_BROKER`]).
    pub max_connections_per_broker: usize,
}

/// Largest request frame a broker reads, as Kafka's `socket.request.max.bytes`: a length prefix
/// above it closes the connection at once (logged), before any of the body is read. It also
/// bounds what one connection buffers: a broker reserves room for a frame when its length
/// prefix arrives, so a client that writes a prefix and stalls holds at most this much until
/// the connection closes or idles out. Far above any request a real client sends (clients cap
/// their own requests near a megabyte by default); the wire crate's default.
pub const DEFAULT_MAX_REQUEST_BYTES: usize = groupsim_wire::DEFAULT_MAX_FRAME_BYTES;

/// Most client connections one broker holds open at once, as Kafka's `max.connections`. One more
/// is accepted and closed at once, before it has sent anything, with a warning naming the limit:
/// no request is read and then dropped, and a client sees a closed connection it retries, as
/// from a Kafka broker at its limit. Each connection is one of the process's file descriptors,
/// so keep the limit times the broker count below the open-file limit (`ulimit -n`); past that,
/// accepts fail and the broker backs off until a descriptor frees.
pub const DEFAULT_MAX_CONNECTIONS_PER_BROKER: usize = 1_000;

/// Kafka's default `connections.max.idle.ms` (10 minutes).
pub const KAFKA_CONNECTIONS_MAX_IDLE_MS: u64 = 600_000;

impl Default for ClusterConfig {
    fn default() -> Self {
        Self {
            brokers: 1,
            port: 0,
            topics: Vec::new(),
            preload: 0,
            offsets_topic_partitions: 50,
            coordinator: CoordinatorConfig::default(),
            label: "serve".to_string(),
            seed: 0,
            connections_max_idle_ms: Some(KAFKA_CONNECTIONS_MAX_IDLE_MS),
            max_request_bytes: DEFAULT_MAX_REQUEST_BYTES,
            max_connections_per_broker: DEFAULT_MAX_CONNECTIONS_PER_BROKER,
        }
    }
}

/// Most brokers one cluster may run (each is a listener and a task: this is a test fixture).
pub const MAX_BROKERS: usize = 64;
/// Smallest `max_request_bytes` accepted: room for any group request a client sends.
pub const MIN_MAX_REQUEST_BYTES: usize = 64 * 1024;
/// Most records `preload` may put into one partition.
pub const MAX_PRELOAD: u32 = 1_000_000;

impl ClusterConfig {
    /// Refuses settings no cluster can run.
    pub(super) fn validate(&self) -> Result<(), ServeError> {
        if !(1..=MAX_BROKERS).contains(&self.brokers) {
            return Err(ServeError::Brokers { brokers: self.brokers, max: MAX_BROKERS });
        }
        if self.port != 0 && usize::from(self.port) + self.brokers - 1 > usize::from(u16::MAX) {
            return Err(ServeError::PortsPastEnd { port: self.port, brokers: self.brokers });
        }
        if self.preload > MAX_PRELOAD {
            return Err(ServeError::Preload { preload: self.preload, max: MAX_PRELOAD });
        }
        if !(MIN_MAX_REQUEST_BYTES..=i32::MAX as usize).contains(&self.max_request_bytes) {
            return Err(ServeError::MaxRequestBytes {
                bytes: self.max_request_bytes,
                min: MIN_MAX_REQUEST_BYTES,
            });
        }
        if self.max_connections_per_broker < 1 {
            return Err(ServeError::MaxConnections);
        }
        if self.offsets_topic_partitions < 1 {
            return Err(ServeError::OffsetsTopicPartitions);
        }
        let (heartbeat_ms, session_ms) = (
            self.coordinator.consumer_heartbeat_interval_ms,
            self.coordinator.consumer_session_timeout_ms,
        );
        if heartbeat_ms < 1 || heartbeat_ms >= session_ms {
            return Err(ServeError::ConsumerTimings { heartbeat_ms, session_ms });
        }
        let mut names: Vec<&str> = self.topics.iter().map(|t| t.name.as_str()).collect();
        names.sort_unstable();
        if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
            return Err(ServeError::TopicTwice(w[0].to_string()));
        }
        Ok(())
    }
}

/// `groupsim serve`: command-line arguments.
#[derive(clap::Args, Debug, Clone)]
pub struct ServeArgs {
    /// Number of brokers (node ids 0..N, consecutive ports from --port).
    #[arg(long, default_value_t = 1)]
    pub brokers: usize,
    /// Port of broker 0 on 127.0.0.1 (broker i listens on port + i).
    #[arg(long, default_value_t = 9092)]
    pub port: u16,
    /// A topic to create, as name:partitions (repeat the flag for more topics).
    #[arg(long = "topic", value_name = "NAME:PARTITIONS")]
    pub topics: Vec<String>,
    /// Records appended to every partition at start.
    #[arg(long, default_value_t = 0)]
    pub preload: u32,
    /// Write the cluster's history (JSON lines, as `groupsim run --save`) to this file on exit,
    /// and whenever the process gets SIGUSR1.
    #[arg(long, value_name = "FILE")]
    pub history: Option<std::path::PathBuf>,
    /// Apply this seed's fault schedule (printed at start) at the brokers.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Apply this schedule file's faults and triggers (JSON, as `groupsim run --schedule`
    /// reads) instead of a seed's; a fault or trigger serve cannot apply is refused by name.
    #[arg(long, value_name = "FILE")]
    pub schedule: Option<std::path::PathBuf>,
    /// The group the nemesis targets (default: the first group that forms).
    #[arg(long)]
    pub group: Option<String>,
    /// How long the nemesis applies faults before it heals, in seconds.
    #[arg(long, default_value_t = 60)]
    pub fault_secs: u64,
    /// `group.consumer.session.timeout.ms`: the session of consumer-protocol (KIP-848) members,
    /// which they take from the broker (librdkafka refuses `session.timeout.ms` with
    /// `group.protocol=consumer`).
    #[arg(long, default_value_t = 45_000)]
    pub consumer_session_timeout_ms: i32,
    /// `group.consumer.heartbeat.interval.ms`: the heartbeat interval the coordinator gives
    /// consumer-protocol members; less than the session timeout.
    #[arg(long, default_value_t = 5_000)]
    pub consumer_heartbeat_interval_ms: i32,
    /// The protocol of the group the nemesis targets (`classic` or `consumer`, KIP-848): which
    /// group APIs `--seed`'s held answers and injected errors aim at.
    #[arg(long, default_value = "classic", value_parser = parse_group_protocol)]
    pub group_protocol: GroupProtocol,
    /// `connections.max.idle.ms`: each broker closes a connection that sent no request for this
    /// long while none was in service (0: never). Kafka's default is 10 minutes.
    #[arg(long, default_value_t = KAFKA_CONNECTIONS_MAX_IDLE_MS)]
    pub connections_max_idle_ms: u64,
    /// `socket.request.max.bytes`: a request frame longer than this closes its connection.
    #[arg(long, default_value_t = DEFAULT_MAX_REQUEST_BYTES)]
    pub max_request_bytes: usize,
    /// `max.connections`, per broker: a connection past this many open ones is closed at once,
    /// before it sends anything.
    #[arg(long, default_value_t = DEFAULT_MAX_CONNECTIONS_PER_BROKER)]
    pub max_connections: usize,
    /// Run the coordinator with this bug switch on (`groupsim bugs` lists them; only the
    /// coordinator's, named `coordinator-…`): a deliberately broken broker, to see a checker
    /// catch it.
    #[arg(long, value_name = "SWITCH")]
    pub bug: Option<String>,
}

/// `classic` or `consumer`, as Kafka's `group.protocol` names them.
pub fn parse_group_protocol(s: &str) -> Result<GroupProtocol, String> {
    match s {
        "classic" => Ok(GroupProtocol::Classic),
        "consumer" => Ok(GroupProtocol::Consumer),
        other => Err(format!("{other:?}: the group protocol is classic or consumer")),
    }
}

impl ServeArgs {
    /// The shape of the schedule `--seed` draws for `brokers` brokers.
    pub fn schedule_shape(&self, brokers: usize) -> super::faults::ScheduleShape {
        super::faults::ScheduleShape {
            brokers: brokers as i32,
            duration_ms: self.fault_secs * 1000,
            mean_gap_ms: 2_000,
            session_timeout_ms: 10_000,
            client_actions: false,
            protocol: self.group_protocol,
        }
    }

    /// The cluster these arguments describe, or a message saying which argument is wrong.
    pub fn cluster_config(&self) -> Result<ClusterConfig, ServeError> {
        if self.port == 0 {
            return Err(ServeError::PortZero);
        }
        let topics = self.topics.iter().map(|t| t.parse()).collect::<Result<Vec<_>, _>>()?;
        let config = ClusterConfig {
            brokers: self.brokers,
            port: self.port,
            topics,
            preload: self.preload,
            coordinator: CoordinatorConfig {
                consumer_session_timeout_ms: self.consumer_session_timeout_ms,
                consumer_heartbeat_interval_ms: self.consumer_heartbeat_interval_ms,
                ..CoordinatorConfig::default()
            },
            connections_max_idle_ms: (self.connections_max_idle_ms > 0)
                .then_some(self.connections_max_idle_ms),
            max_request_bytes: self.max_request_bytes,
            max_connections_per_broker: self.max_connections,
            ..ClusterConfig::default()
        };
        let mut config = config;
        if let Some(name) = &self.bug {
            groupsim::bugs::find(name)?.apply_to_coordinator(&mut config.coordinator)?;
        }
        config.validate()?;
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(brokers: usize, port: u16, topics: &[&str]) -> ServeArgs {
        ServeArgs {
            brokers,
            port,
            topics: topics.iter().map(|t| t.to_string()).collect(),
            preload: 0,
            history: None,
            seed: None,
            schedule: None,
            group: None,
            fault_secs: 60,
            consumer_session_timeout_ms: 45_000,
            consumer_heartbeat_interval_ms: 5_000,
            group_protocol: GroupProtocol::Classic,
            connections_max_idle_ms: KAFKA_CONNECTIONS_MAX_IDLE_MS,
            max_request_bytes: DEFAULT_MAX_REQUEST_BYTES,
            max_connections: DEFAULT_MAX_CONNECTIONS_PER_BROKER,
            bug: None,
        }
    }

    fn error_of(a: ServeArgs) -> String {
        format!("{:#}", a.cluster_config().expect_err("these arguments are refused"))
    }

    #[test]
    fn topic_specs_parse_name_and_partition_count() {
        assert_eq!("orders:3".parse::<TopicSpec>().unwrap(), TopicSpec::new("orders", 3).unwrap());
        assert_eq!("a.b_c-d:1".parse::<TopicSpec>().unwrap().name, "a.b_c-d");
    }

    #[test]
    fn bad_serve_arguments_get_a_message_naming_the_problem() {
        let cases = [
            (args(1, 9092, &["orders"]), "needs a partition count"),
            (args(1, 9092, &["orders:"]), "is not a number"),
            (args(1, 9092, &["orders:0"]), "must be between 1 and 10000"),
            (args(1, 9092, &["bad name:1"]), "may only contain"),
            (args(1, 9092, &[":1"]), "must be 1 to 249 characters"),
            (args(1, 9092, &["a:1", "a:2"]), "given twice"),
            (args(1, 0, &[]), "--port must be between 1 and 65535"),
            (args(0, 9092, &[]), "--brokers 0 must be between 1"),
            (args(3, 65534, &[]), "past port 65535"),
            (
                ServeArgs { max_request_bytes: 100, ..args(1, 9092, &[]) },
                "--max-request-bytes 100 must be between 65536",
            ),
            (
                ServeArgs { max_connections: 0, ..args(1, 9092, &[]) },
                "--max-connections must be at least 1",
            ),
            (
                ServeArgs { consumer_heartbeat_interval_ms: 45_000, ..args(1, 9092, &[]) },
                "--consumer-heartbeat-interval-ms 45000 must be at least 1 and less than",
            ),
            (
                ServeArgs { consumer_heartbeat_interval_ms: 0, ..args(1, 9092, &[]) },
                "--consumer-heartbeat-interval-ms 0 must be at least 1",
            ),
            (
                ServeArgs { bug: Some("no-such-switch".into()), ..args(1, 9092, &[]) },
                "unknown bug switch \"no-such-switch\"",
            ),
            (
                ServeArgs { bug: Some("member-keeps-stale-acks".into()), ..args(1, 9092, &[]) },
                "is not the coordinator's alone",
            ),
        ];
        for (a, expected) in cases {
            let message = error_of(a.clone());
            assert!(message.contains(expected), "{a:?}: {message:?} lacks {expected:?}");
        }
        let ok = args(3, 9092, &["orders:6", "audit:1"]).cluster_config().unwrap();
        assert!(!ok.coordinator.bugs.skip_commit_generation_check, "no bug unless asked for");
        let broken = ServeArgs {
            bug: Some("coordinator-skips-generation-check".into()),
            ..args(1, 9092, &[])
        };
        let broken = broken.cluster_config().unwrap();
        assert!(broken.coordinator.bugs.skip_commit_generation_check, "--bug turns it on");
        assert_eq!((ok.brokers, ok.port, ok.topics.len()), (3, 9092, 2));
        let fast = ServeArgs {
            consumer_session_timeout_ms: 6_000,
            consumer_heartbeat_interval_ms: 500,
            ..args(1, 9092, &[])
        };
        let c = fast.cluster_config().unwrap().coordinator;
        assert_eq!((c.consumer_session_timeout_ms, c.consumer_heartbeat_interval_ms), (6_000, 500));
        assert_eq!(parse_group_protocol("consumer"), Ok(GroupProtocol::Consumer));
        assert_eq!(parse_group_protocol("classic"), Ok(GroupProtocol::Classic));
        assert!(parse_group_protocol("eager").unwrap_err().contains("classic or consumer"));
    }
}
