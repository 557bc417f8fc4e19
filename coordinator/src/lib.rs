//! groupsim-coordinator: a sans-IO model of Apache Kafka's classic consumer-group coordinator
//! and the broker-side APIs a consumer needs (Metadata, ListOffsets, Fetch, FindCoordinator,
//! ApiVersions, Produce). What it shares with the members (types, error codes, the consumer
//! protocol's bytes, framing and codec) lives in `groupsim-wire`.
//!
//! The cores ([`GroupCoordinator`], [`broker::Broker`]) are plain state machines: every call
//! takes the current simulated time in milliseconds and queues outputs (responses and history
//! events) that the caller drains with `poll_output`. Nothing here reads a clock, opens a socket
//! or spawns a task, so the same code runs under turmoil, on real tokio sockets, and in unit tests
//! that drive it at chosen instants (as Kafka's GroupCoordinatorTest does with MockTime).

pub mod api;
pub mod broker;
pub mod cluster;
pub mod config;
pub mod coordinator;
pub mod event;
pub mod group;
pub mod log;
pub mod offsets;
pub mod offsets_log;
pub mod probes;

pub use config::{CoordinatorBugs, CoordinatorConfig};
pub use coordinator::{CoordinatorOutput, GroupCoordinator};
pub use event::{CoordinatorEvent, RemovalReason};
pub use group::GroupState;

// The shared vocabulary, under the names the modules of this crate have always used.
pub(crate) use groupsim_wire::{error_name, Millis, RequestId, TopicPartition};
