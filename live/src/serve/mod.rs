//! `groupsim serve`: the simulated coordinator on real loopback sockets, as a small Kafka cluster
//! that real clients (kafka-python, librdkafka, aiokafka, kafkajs, …) can use.
//!
//! Each broker is a real tokio `TcpListener` on 127.0.0.1 in front of the same sans-IO
//! `Broker` core the simulation runs, driven by `run_broker_controlled`. All brokers share
//! one set of partition logs, the cluster metadata and the offsets log, as in the simulation.
//! This is the one place in groupsim that reads the wall clock: the brokers' `now` is real time
//! since the cluster started, in milliseconds.
//!
//! Connections (`connection`) run the wire crate's frame loop (`groupsim_wire::serve_connection`:
//! the same framing, codec and bad-input handling as the simulation, and no answer to a Produce
//! with acks=0, as in Kafka) with one hook in front of the broker task for the nemesis's gate
//! (`gate`, `nemesis`) and the record of what was produced. The cluster records its history
//! (`recorder`). A Fetch that finds no records is held by the broker core itself up to its
//! `max_wait_ms`, until a Produce or the world's producer appends something, as in the
//! simulation.
//!
//! Use it from Rust tests through [`Cluster`] (ephemeral ports), or from the command line with
//! `groupsim serve` ([`ServeArgs`]).

mod cluster;
mod command;
mod config;
mod connection;
mod error;
pub mod faults;
mod gate;
mod nemesis;
mod recorder;
mod shared;

pub use self::cluster::{Cluster, LOOPBACK};
pub use self::command::run;
pub use self::config::{
    parse_group_protocol, ClusterConfig, ServeArgs, TopicSpec, DEFAULT_MAX_CONNECTIONS_PER_BROKER,
    DEFAULT_MAX_REQUEST_BYTES, KAFKA_CONNECTIONS_MAX_IDLE_MS, MAX_BROKERS, MAX_PRELOAD,
    MIN_MAX_REQUEST_BYTES,
};
pub use self::error::ServeError;
pub use self::nemesis::{ClientAction, Nemesis};
pub use self::recorder::Recorder;
