//! What every host of the event world reaches while it handles an event: the current instant,
//! the queue, the network, and the run's shared records (history, settling, member controls).

use groupsim_history::EventKind;
use groupsim_wire::Millis;

use super::network::Network;
use super::queue::EventQueue;
use crate::host::SharedHistory;
use crate::nemesis::MemberControls;
use crate::settle::SharedSettling;

/// The event world's shared state (see the module docs).
pub(super) struct Ctx {
    /// The instant being handled.
    pub(super) now: Millis,
    /// Everything still to happen.
    pub(super) queue: EventQueue,
    /// Links and connections.
    pub(super) net: Network,
    /// The history being recorded.
    pub(super) history: SharedHistory,
    /// Whether the members' faults have played out (for the early end).
    pub(super) settling: SharedSettling,
    /// Running members' control channels (the nemesis sends on them).
    pub(super) controls: MemberControls,
}

impl Ctx {
    /// Records `kind` at the current instant.
    pub(super) fn record(&self, kind: EventKind) {
        self.history.borrow_mut().record(self.now, kind);
    }
}
