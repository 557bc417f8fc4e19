//! What every host of the event world reaches while it handles an event.

use groupsim_wire::probe::Tap;
use groupsim_wire::Millis;

use super::network::Network;
use super::queue::EventQueue;
use crate::world::orders::SharedHistory;
use crate::world::stage::settle::SharedSettling;
use groupsim_history::EventKind;

/// What every host reaches while it handles an event: the current instant, the queue, the
/// network, and the run's shared records.
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
    /// Probe hits since the stage's last tick, in hit order.
    pub(super) taps: Vec<Tap>,
    /// Brokers close connections idle this long (`connections.max.idle.ms`), if set.
    pub(super) idle_close_ms: Option<Millis>,
}

impl Ctx {
    /// Records `kind` at the current instant.
    pub(super) fn record(&self, kind: EventKind) {
        self.history.borrow_mut().record(self.now, kind);
    }
}
