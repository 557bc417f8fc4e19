//! `groupsim check-client`: real Kafka clients under seeded faults, judged by the checker.
//!
//! A served cluster ([`crate::serve`]) records the broker-side history; a producer appends
//! records; several adapter processes (one group member each, `clients/`) consume, write what
//! they processed to logs and commit; the seed's schedule kills, pauses and closes them and
//! faults the brokers; a heal phase follows. The broker history plus the processed logs then go
//! through the checker's black-box rules ([`crate::checker::black_box`]). Real clients and real
//! time make a run repeatable (same seed, same schedule), not bit-exact.

pub mod clients;
pub mod error;
pub mod process;
pub mod processed;

pub use self::error::CheckError;
