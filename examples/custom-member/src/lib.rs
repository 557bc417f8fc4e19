//! An outside user's crate, as one would write it to test their own consumer against groupsim.
//!
//! - [`member::SimpleConsumer`] is a classic-protocol consumer written from scratch as a sans-IO
//!   state machine, implementing groupsim's [`SansIoMember`](groupsim_member::SansIoMember)
//!   trait, with a deliberate mistake behind a flag ([`Mistake`]).
//! - [`recipe`] is this crate's own scenario: three of those members (or two and a Java
//!   consumer beside them) on a six-partition topic over three brokers, joining at drawn
//!   instants, with dropped connections, coordinator moves and member crashes drawn per seed.
//! - `tests/simple_consumer.rs` checks seeds of it under `cargo test`: the correct member passes;
//!   the mistaken one is caught, and the failure report names the seed to replay.

mod answers;
pub mod assign;
mod lifecycle;
pub mod member;

use groupsim::faults::FaultKind;
use groupsim::recipe::{Recipe, RecipeError};
use groupsim_member::{ClientProfile, PluginMember};

pub use member::{Mistake, SimpleConsumer};

/// The plug-in member kind: a [`SimpleConsumer`] making `mistake`.
pub fn simple_consumer(mistake: Mistake) -> PluginMember {
    let name = match mistake {
        Mistake::None => "simple_consumer",
        Mistake::StaleOffsets => "simple_consumer_stale_offsets",
    };
    PluginMember::new(name, move |config, _seed| Box::new(SimpleConsumer::new(config, mistake)))
}

/// This crate's scenario: three simple consumers making `mistake` and one Java consumer (the
/// built-in eager profile) in one group, on a topic of six partitions over three brokers, with
/// dropped connections, coordinator moves and member crashes drawn per seed.
pub fn recipe(mistake: Mistake) -> Result<Recipe, RecipeError> {
    Recipe::builder(&format!(
        "simple_consumer_{}",
        if mistake == Mistake::None { "ok" } else { "stale_offsets" }
    ))
    .brokers(3)
    .topic("orders", 6)
    .members(1, ClientProfile::JavaEager)
    .plugin_members(3, ClientProfile::JavaEager, simple_consumer(mistake))
    .safety_phase_ms(30_000)
    .faults(&[FaultKind::ConnectionDrop, FaultKind::CoordinatorMove, FaultKind::MemberCrash], 6_000)
    .build()
}
