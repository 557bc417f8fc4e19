//! groupsim: a deterministic simulation harness for Kafka consumer-group rebalancing.
//!
//! A seed drives a simulated network (the event world's by default, or turmoil's) hosting
//! brokers (the sans-IO coordinator from `groupsim-coordinator`) and consumer-group members (from
//! `groupsim-member`) speaking the real Kafka wire protocol. Every run records a history
//! (`groupsim-history`); the checker (`groupsim-checker`) reads it and proves no committed offset
//! was lost or duplicated, no zombie committed, and the group recovered.
//!
//! Entry points: [`scenarios::catalogue`] lists the scenarios, [`runner::run_seed`] runs one
//! seed, [`sweep::Sweep`] runs many, [`testing::check_scenario`] is what scenario tests call,
//! and [`recipe::Recipe`] defines a scenario in a user's own crate.
//!
//! One seed of a catalogue scenario, judged, replayed bit for bit and read as a trace:
//!
//! ```
//! use groupsim::{runner, scenarios, trace};
//!
//! let scenario = scenarios::find("steady_state").expect("in the catalogue");
//! let run = runner::run_seed(&scenario, 7).expect("the world runs");
//! assert!(run.verdict.is_ok(), "{}", run.failure_details());
//! let again = runner::run_seed(&scenario, 7).expect("the world runs");
//! assert_eq!(run.history_hash(), again.history_hash(), "the same seed, the same history");
//! assert!(trace::text(&run.history).contains("generation"));
//! ```
//!
//! Modules, leaves first (imports flow one way, from the top of this list towards the bottom;
//! the layout test, `scenarios/tests/layout.rs`, fails on any import cycle):
//! - leaves: [`rng`] (seed streams), [`faults`] (fault kinds and schedules), [`record`] (the
//!   cores' events turned into the history's types where they are recorded), [`scenario`] (what
//!   a scenario is: [`scenario::ScenarioSpec`], the shared member settings), [`respec`] (spec
//!   edits a schedule file carries), [`triggers`],
//!   [`probes`], [`watch`] (the group as the history shows it, for triggers).
//! - [`process`]: the process shells (member, broker), sans-IO, that every world drives.
//! - [`world`]: one seed's run — the stage both worlds share (cluster control, nemesis,
//!   producer, phases, early end) and the event and turmoil worlds behind one interface.
//! - reading a run (the checker is its own crate, `groupsim-checker`): [`trace`] and
//!   [`pictures`] (rebalance traces, Mermaid and SVG timelines).
//! - drawing faults: [`fault_draw`] and [`swarm_draw`] (a seed's faults; swarm mode), [`bugs`]
//!   (bug switches).
//! - running: [`runner`] (one seed to a report), [`recipe`] (a scenario's public definition,
//!   each seed a run) and [`scenarios`] (the catalogue, one file per family, each a recipe),
//!   [`shrink`] (delta debugging of a schedule),
//!   [`signature`] and [`explore`] (the coverage-guided search for failing schedules),
//!   [`sweep`] (many seeds on every core, shards, the table), [`merge`] (shards back into one
//!   sweep), [`bench`](mod@bench) (throughput), [`testing`] (helpers for scenario tests).
//! - real time, in the `groupsim-live` crate: `serve` (the same coordinator on real loopback sockets for real Kafka clients)
//!   and `check-client` (real clients under seeded faults, judged by the checker's rules).

pub mod bench;
pub mod bugs;
pub mod coverage;
pub mod determinism;
pub mod exchange;
pub mod explore;
pub mod fault_draw;
pub mod faults;
pub mod merge;
pub mod panics;
pub mod pictures;
pub mod probes;
pub mod process;
pub mod recipe;
pub mod record;
pub mod respec;
pub mod rng;
pub mod runner;
pub mod scenario;
pub mod scenarios;
pub mod seeds;
pub mod shrink;
pub mod signature;
pub mod swarm_draw;
pub mod sweep;
pub mod testing;
pub mod threads;
pub mod trace;
pub mod triggers;
pub mod watch;
pub mod world;
