//! The world interface: what the stage (the world-agnostic half of a run) asks of whichever
//! world simulates it, as one typed [`Order`] at a time through [`Hosts::order`], and the names
//! both sides use for hosts. A leaf: the stage, both worlds and the process shells use it.

use std::cell::RefCell;
use std::rc::Rc;

use groupsim_member::{AssignorKind, ClientProfile};
use groupsim_wire::Millis;

use crate::process::BrokerOrder;

use groupsim_history::History;

/// The port every simulated broker listens on.
pub const BROKER_PORT: u16 = 9092;

/// Shared, single-threaded handle to the history being recorded: the stage and the world's
/// hosts append to it in the order things happen.
pub type SharedHistory = Rc<RefCell<History>>;

/// Host name of broker `node_id`.
pub fn broker_host(node_id: i32) -> String {
    format!("broker-{node_id}")
}

/// Host name of client host `i`.
pub fn client_host(i: usize) -> String {
    format!("client-{i}")
}

/// What the fault injector tells a member process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MemberCommand {
    /// Reset every connection.
    DropConnections,
    /// Stop the world for this long.
    Pause { duration_ms: Millis },
    /// Die now (no LeaveGroup, uncommitted progress lost); start again as a new member later.
    Crash { restart_after_ms: Millis },
    /// Leave gracefully; start again as a new member later, with a new profile and assignors
    /// when `upgrade` says so.
    Leave { restart_after_ms: Millis, upgrade: Option<(ClientProfile, Vec<AssignorKind>)> },
    /// Make the processing in progress finish late, detached from the next revoke.
    StaleAck { delay_ms: Millis },
    /// Make the batch the poll loop is processing (or its next) take longer, the loop waiting.
    SlowBatch { extra_ms: Millis },
    /// Make the next revoke callback slower.
    SlowRevoke { extra_ms: Millis },
    /// Make the revoke callback under way (or else the next one) last until this instant.
    SlowRevokeUntil { until_ms: Millis },
    /// The liveness phase begins: a cooperative member drops a revoke slowdown no callback has
    /// taken up yet.
    Heal,
}

/// TCP's smallest retransmission timeout (Linux's `TCP_RTO_MIN`): a lost frame arrives this
/// long after it would have, or a multiple of it when its retransmissions are lost too.
pub const RETRANSMIT_MIN_MS: Millis = 200;

/// One order from the stage to the world, carried out at the instant it is given.
#[derive(Clone, Debug, PartialEq)]
pub enum Order {
    /// A command for a member process. Commands are taken after the stage's work at this
    /// instant, in member order (a paused process takes them when its pause ends).
    Member { member: String, command: MemberCommand },
    /// An instruction for broker `node`'s process (a coordinator move, an armed late request),
    /// taken after the stage's work at this instant, in node order.
    Broker { node: i32, control: BrokerOrder },
    /// Kill broker `node`'s host: its software and in-memory state are gone.
    CrashBroker { node: i32 },
    /// Start broker `node`'s software again, with empty state.
    RestartBroker { node: i32 },
    /// Cut the link between hosts `a` and `b`.
    Partition { a: String, b: String },
    /// Restore the link between hosts `a` and `b`.
    Repair { a: String, b: String },
    /// Set the largest latency of a frame between hosts `a` and `b`.
    MaxLatency { a: String, b: String, max_ms: Millis },
    /// Cut the link from host `from` to host `to` only: the other direction still delivers.
    PartitionOneWay { from: String, to: String },
    /// Restore the link from host `from` to host `to`.
    RepairOneWay { from: String, to: String },
    /// Lose `per_mille`/1000 of the frames between hosts `a` and `b`, each retransmitted after
    /// TCP's retransmission timeout (0: no loss).
    FrameLoss { a: String, b: String, per_mille: u32 },
}

/// The world as the stage sees it.
pub trait Hosts {
    /// Carries out `order` at `now`. Returns whether it reached its target: a member process
    /// that takes commands (started, not finished for good), a broker whose software runs.
    /// Host and network orders always return true.
    fn order(&mut self, now: Millis, order: Order) -> bool;
}
