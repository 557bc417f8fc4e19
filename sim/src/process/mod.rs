//! The process shells: one per role, the same for every host that runs it. A shell wraps a
//! sans-IO core with what a real process has around it — connections, request deadlines,
//! restarts, pauses, the commands the fault injector gives — and is sans-IO itself: inputs
//! with the current instant in, [`Action`]s out. The event world, the turmoil world and
//! `groupsim serve` are thin loops that carry the actions out on their network.
//!
//! - [`member::MemberProcess`]: a consumer process; its [`incarnation`] is one run of the member
//!   core with its connections (a crash or an ordered leave starts a new one).
//! - [`broker::BrokerProcess`]: a broker's coordinator core with the requests it owes answers;
//!   [`broker_task`] is the tokio loop around it that the turmoil world and `serve` share.
//!
//! Leaves first: [`actions`], [`incarnation`], [`member`], [`broker`], [`broker_task`].

pub mod actions;
pub mod broker;
pub mod broker_task;
pub mod incarnation;
pub mod member;

pub use actions::{Action, ConnKey, Delivery, Settle};
pub use broker::{BrokerOrder, BrokerOutput, BrokerProcess};
pub use member::MemberProcess;
