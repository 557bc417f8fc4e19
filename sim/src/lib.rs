//! groupsim: a deterministic simulation harness for Kafka consumer-group rebalancing.
//!
//! A seed drives a turmoil network hosting brokers (the sans-IO coordinator from
//! `groupsim-coordinator`) and consumer-group members (from `groupsim-member`) speaking the real
//! Kafka wire protocol. Every run records a [`history::History`]; the [`checker`] reads it and
//! proves no committed offset was lost or duplicated.

pub mod checker;
pub mod history;
