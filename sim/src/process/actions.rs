//! What the process shells hand their host: actions to carry out, and what a connection
//! delivers back.

use bytes::Bytes;
use groupsim_wire::conn::{ClientConn, HandedRequest, HandedResponse};
use groupsim_wire::probe::Tap;
use groupsim_wire::Millis;

use groupsim_history::wire::Entry;
use groupsim_history::EventKind;

/// A member process's name for one of its connections (never reused by that process).
pub type ConnKey = u64;

/// Something a member process asks its host to do, in the order given.
#[derive(Debug)]
pub enum Action {
    /// Record this in the history at the current instant.
    Record(EventKind),
    /// Open connection `conn` to broker `node`, run its handshake, then deliver
    /// [`Delivery::Connected`] (or [`Delivery::Failed`]).
    Connect { conn: ConnKey, node: i32 },
    /// Send `frame` on connection `conn`.
    Transmit { conn: ConnKey, frame: Bytes },
    /// Send this request on connection `conn` as a value (only a host that asked for values
    /// gets these: [`crate::process::MemberProcess::hand_over_values`]; a host that moves bytes
    /// sends [`HandedRequest::to_frame`]).
    Hand { conn: ConnKey, request: Box<HandedRequest> },
    /// Close connection `conn` (the broker sees it closed); deliver nothing more from it.
    Close { conn: ConnKey },
    /// A probe was hit (for event triggers).
    Tap(Tap),
    /// An entry of the history's wire stream: a request written and its answer read, or a
    /// request whose answer will never be read.
    Wire(Entry),
    /// A change in whether this process's faults have played out.
    Settling(Settle),
    /// Its timer is now due at this instant (`None`: nothing due, or paused or down): call
    /// `timer` then. Each supersedes the one before.
    Timer(Option<Millis>),
    /// The process is paused (stopped the world) until then: call `pause_end` at that instant.
    PauseUntil(Millis),
    /// The process is down until then: call `start` at that instant.
    RestartAt(Millis),
    /// Whether the process takes commands from now on (it does from its first start until it
    /// finishes for good).
    TakesCommands(bool),
}

impl Action {
    /// This action for a host that moves bytes only: a request handed over as a value becomes
    /// its frame ([`Action::Transmit`]); every other action is itself. A request the encoder
    /// refuses (the handover checked it when it was written, so none should be) closes its
    /// connection instead, which the process sees as a failed connection.
    pub fn framed(self) -> Self {
        match self {
            Action::Hand { conn, request } => match request.to_frame() {
                Ok(frame) => Action::Transmit { conn, frame },
                Err(e) => {
                    tracing::error!(conn, error = %e, "a handed-over request does not encode");
                    Action::Close { conn }
                }
            },
            other => other,
        }
    }
}

/// How a process's faults are playing out (see [`crate::world::stage::settle`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Settle {
    /// Paused, or down until a restart.
    Disturbed,
    /// Running again.
    Settled,
    /// A fault delivered to it may act until this instant.
    ActsUntil(Millis),
}

/// What a connection hands its member process, in arrival order.
#[derive(Debug)]
pub enum Delivery {
    /// The handshake completed: requests can be written with this connection.
    Connected { conn: ConnKey, client: Box<ClientConn> },
    /// A frame from the broker.
    Frame { conn: ConnKey, frame: Bytes },
    /// An answer from the broker handed over as a value.
    Handed { conn: ConnKey, response: Box<HandedResponse> },
    /// The connection failed (refused, closed or reset by the broker, a handshake that failed).
    Failed { conn: ConnKey, reason: String },
}

impl Delivery {
    /// The connection it came from.
    pub fn conn(&self) -> ConnKey {
        match self {
            Delivery::Connected { conn, .. }
            | Delivery::Frame { conn, .. }
            | Delivery::Handed { conn, .. }
            | Delivery::Failed { conn, .. } => *conn,
        }
    }
}
