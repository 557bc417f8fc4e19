//! The history and its events: who recorded each one, and when.

use std::fmt;

use groupsim_wire::Millis;
use serde::{Deserialize, Serialize};

use crate::coordinator::CoordinatorEvent;
use crate::member::MemberEvent;
use crate::wire::{Entry, WireRecord};
use crate::world::WorldEvent;

/// One event of a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// Simulated milliseconds since the run started.
    pub at_ms: Millis,
    /// What happened.
    pub kind: EventKind,
}

/// Where an event came from and what it says.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum EventKind {
    /// The group coordinator on broker `broker` recorded this.
    Coordinator { broker: i32, event: CoordinatorEvent },
    /// Member `member` (its scenario name, stable across member ids) recorded this.
    Member { member: String, event: MemberEvent },
    /// The world (scenario driver, producer, nemesis) recorded this.
    World(WorldEvent),
}

/// The ordered list of a run's events, and beside them its wire stream ([`crate::wire`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct History {
    events: Vec<Event>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    wire: Vec<WireRecord>,
}

impl History {
    /// An empty history.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty history that takes the room a history dropped earlier on this thread left
    /// (see `spare.rs`): for a world that records one run after another.
    pub fn reusing_spare_room() -> Self {
        let (events, wire) = crate::spare::take();
        Self { events, wire }
    }

    /// Appends an event.
    pub fn record(&mut self, at_ms: Millis, kind: EventKind) {
        self.events.push(Event { at_ms, kind });
    }

    /// Appends a world event.
    pub fn world(&mut self, at_ms: Millis, event: WorldEvent) {
        self.record(at_ms, EventKind::World(event));
    }

    /// Appends an entry to the wire stream, after the events recorded so far.
    pub fn record_wire(&mut self, wire: Entry) {
        self.wire.push(WireRecord { after: self.events.len(), wire });
    }

    /// The wire stream in the order it was recorded.
    pub fn wire(&self) -> &[WireRecord] {
        &self.wire
    }

    /// All events in order.
    pub fn events(&self) -> &[Event] {
        &self.events
    }

    /// Number of events.
    pub fn len(&self) -> usize {
        self.events.len()
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// Builds a history from events (used by tests that hand-make histories).
    pub fn from_events(events: Vec<Event>) -> Self {
        Self { events, wire: Vec::new() }
    }

    /// Builds a history from events and a wire stream (read from a file, or hand-made).
    pub fn from_parts(events: Vec<Event>, wire: Vec<WireRecord>) -> Self {
        Self { events, wire }
    }
}

impl Drop for History {
    fn drop(&mut self) {
        crate::spare::give_back(std::mem::take(&mut self.events), std::mem::take(&mut self.wire));
    }
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "t={}ms ", self.at_ms)?;
        match &self.kind {
            EventKind::Coordinator { broker, event } => write!(f, "broker-{broker}: {event:?}"),
            EventKind::Member { member, event } => write!(f, "{member}: {event:?}"),
            EventKind::World(w) => write!(f, "world: {w:?}"),
        }
    }
}
