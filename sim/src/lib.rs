//! groupsim: a deterministic simulation harness for Kafka consumer-group rebalancing.
//!
//! A seed drives a turmoil network hosting brokers (the sans-IO coordinator from
//! `groupsim-coordinator`) and consumer-group members (from `groupsim-member`) speaking the real
//! Kafka wire protocol. Every run records a [`history::History`]; the [`checker`] reads it and
//! proves no committed offset was lost or duplicated, no zombie committed, and the group
//! recovered.
//!
//! Entry points: [`scenario::catalogue`] lists the scenarios, [`runner::run_seed`] runs one seed,
//! [`testing::check_scenario`] is what scenario tests call.

pub mod bench;
pub mod broker_host;
pub mod broker_task;
pub mod bugs;
pub mod checker;
pub mod cluster;
pub mod driver;
pub mod faults;
pub mod history;
pub mod host;
pub mod nemesis;
pub mod pictures;
pub mod rng;
pub mod runner;
pub mod scenario;
pub mod scenarios;
pub mod serve;
pub mod shrink;
pub mod sweep;
pub mod testing;
pub mod trace;
pub mod world;
