//! groupsim-history: the record of a run, in its own types and its own JSON-lines form.
//!
//! A history is every ground-truth event of a run in the order it happened, stamped with
//! simulated time: the single source of truth for the checker and for traces. Events are
//! recorded where they become true (the coordinator records a commit when its append completes,
//! a member records processed records when its handler returns, the world records members
//! starting and stopping, records produced and faults injected).
//!
//! The event types here are the history's own: the simulation converts the cores' events into
//! them where it records them, and this crate depends on neither core. A reader of the history
//! (the checker above all) therefore sees only what was recorded, never the code that recorded
//! it, and the serialised form (whose SHA-256 is a run's history hash) changes only when these
//! types do.
//!
//! Modules, leaves first: `fault`, `coordinator` and `consumer` (the coordinator's events),
//! `member`, `world`, `history` (the history, its events and their sources), `jsonl` (the
//! versioned file form and the hash), `partitions` (the compact partition lists traces print),
//! `wire` (the stream of requests and answers recorded beside the events).

mod consumer;
mod coordinator;
mod fault;
mod history;
mod jsonl;
mod member;
mod partitions;
pub mod wire;
mod world;

pub use consumer::{
    ConsumerGroupEvent, ConsumerRemovalReason, ConvertedMember, LoadedMember, TargetShare,
};
pub use coordinator::{CoordinatorEvent, GroupState, MemberAssignment, RemovalReason};
pub use fault::{AssignorKind, ClientProfile, Fault, GroupApi, InjectedError};
pub use history::{Event, EventKind, History};
pub use jsonl::{HistoryParseError, FORMAT_VERSION};
pub use member::{DescribedMember, ListedGroup, MemberEvent, SentUnder};
pub use partitions::partition_list;
pub use world::WorldEvent;
