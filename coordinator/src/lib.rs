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

//!
//! Modules, from the leaves up (each imports only modules listed before it):
//! - leaves: `state` (group states), `placement` (who leads what), `timers`, `answers` (answers
//!   before encoding), `event` (history events), `config`, `offsets`, `offsets_log`, `log`
//!   (partition logs), `effects` (the output and timer queue), `cluster` (shared metadata);
//! - leaves too: `topics` (the topics image a consumer group is assigned from), `consumer_event`
//!   (consumer group history events);
//! - `group`: the classic group state machine, one file per concern;
//! - `consumer_group`: the KIP-848 consumer group (epochs, reconciliation, server assignors);
//! - `coordinator`: the core owning the groups, offsets, timers, appends and partition loads;
//! - `api`: one module per Kafka API (rules, decoding and encoding);
//! - `broker`: the sans-IO broker dispatching every request.

pub(crate) mod answers;
pub mod api;
pub mod broker;
pub mod cluster;
pub mod config;
pub mod consumer_event;
pub mod consumer_group;
pub mod coordinator;
pub(crate) mod effects;
pub mod event;
pub mod group;
pub mod log;
pub mod offsets;
pub mod offsets_log;
pub mod placement;
pub mod probes;
pub mod state;
pub(crate) mod timers;
pub mod topics;

pub use config::{CoordinatorBugs, CoordinatorConfig, MigrationPolicy};
pub use consumer_event::{ConsumerGroupEvent, ConsumerRemovalReason};
pub use consumer_group::{ConsumerGroup, ConsumerGroupState};
pub use coordinator::GroupCoordinator;
pub use effects::CoordinatorOutput;
pub use event::{CoordinatorEvent, RemovalReason};
pub use state::GroupState;
pub use topics::TopicsImage;

// The shared vocabulary, under the names the modules of this crate have always used.
pub(crate) use groupsim_wire::{error_name, Millis, RequestId, TopicPartition};
