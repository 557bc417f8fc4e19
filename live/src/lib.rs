//! Real time, real sockets: the same coordinator and checker rules outside the simulation.
//!
//! - [`serve`]: the coordinator cluster on loopback sockets for real Kafka clients, optionally
//!   under a seeded real-time nemesis.
//! - [`check_client`]: real client processes run against [`serve`] under seeded faults and
//!   judged by the black-box checker.
//! - [`soak`]: serve run for minutes under a real group and bad loopback clients, measured.

pub mod check_broker;
pub mod check_client;
pub mod serve;
pub mod soak;
