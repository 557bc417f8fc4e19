//! What every simulated host shares with the world: host names, the broker port, the simulated
//! clock inside a host, and the history being recorded. A leaf: the broker hosts, the member
//! drivers, the cluster control and the nemesis all use it; [`crate::world`] assembles them.

use std::cell::RefCell;
use std::rc::Rc;

use groupsim_history::{EventKind, History};
use groupsim_wire::Millis;

/// The port every simulated broker listens on.
pub const BROKER_PORT: u16 = 9092;

/// Shared, single-threaded handle to the history being recorded. Hosts and the world loop all
/// append to it; turmoil runs every host on one thread, so the order is deterministic.
pub type SharedHistory = Rc<RefCell<History>>;

/// Host name of broker `node_id`.
pub fn broker_host(node_id: i32) -> String {
    format!("broker-{node_id}")
}

/// Host name of client host `i`.
pub fn client_host(i: usize) -> String {
    format!("client-{i}")
}

/// Simulated time now, inside a host.
pub fn sim_now() -> Millis {
    turmoil::sim_elapsed().map_or(0, |d| d.as_millis() as Millis)
}

/// Records an event from inside a host.
pub fn record(history: &SharedHistory, kind: EventKind) {
    history.borrow_mut().record(sim_now(), kind);
}
