//! The simulated worlds: one seed's run of a [`ScenarioSpec`](crate::scenario::ScenarioSpec),
//! from its opening events to its history.
//!
//! Two worlds share one interface (FoundationDB's simulated and real network idea, here two
//! simulated ones): [`stage`] is the world-agnostic half of a run — the history's opening, the
//! cluster control, the fault injector, the producer, the phases and the early end — and gives
//! its orders through the [`orders::Hosts`] trait; each world drives the same process shells
//! ([`crate::process`]) over its own network:
//! - [`event`] (the default): one ordered event queue; time jumps to the next due event.
//! - [`turmoil`]: the same shells as tokio tasks over turmoil's simulated TCP in fixed steps,
//!   kept as the cross-check. Only this folder imports turmoil.
//!
//! Leaves first: [`error`], [`orders`], [`stage`], the clock guard both worlds keep
//! (`still_clock`), then the two worlds.

pub mod error;
pub mod event;
pub mod orders;
pub mod stage;
mod still_clock;
pub mod turmoil;

pub use error::WorldError;
