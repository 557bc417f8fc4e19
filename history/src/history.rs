//! The history and its events: who recorded each one, and when.

use std::cell::RefCell;
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
    /// (see `give_back`): for a world that records one run after another.
    pub fn reusing_spare_room() -> Self {
        let (events, wire) = take_spare();
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
        give_back(std::mem::take(&mut self.events), std::mem::take(&mut self.wire));
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

// Room for the next history: a dropped history leaves its (emptied) vectors to the next one
// made on the same thread with `History::reusing_spare_room`. A sweep runs many seeds per
// thread, and each run's history grows to tens of megabytes: made afresh, its vectors regrow by
// doubling (each step a copy) into memory the allocator has given back to the kernel since the
// last run, which the kernel must clear again. Capacity is never read by anything a run
// records, so reuse changes no history.

/// A thread keeps no more room than this many events' worth: a search that once met a huge
/// run does not hold its memory for ever.
const MAX_KEPT_EVENTS: usize = 1 << 20;

thread_local! {
    static SPARE: RefCell<(Vec<Event>, Vec<WireRecord>)> = const { RefCell::new((Vec::new(), Vec::new())) };
}

/// The thread's spare vectors (empty, perhaps with room), leaving none behind.
fn take_spare() -> (Vec<Event>, Vec<WireRecord>) {
    SPARE.try_with(|s| std::mem::take(&mut *s.borrow_mut())).unwrap_or_default()
}

/// Empties `events` and `wire` and keeps each as the thread's spare when it has more room than
/// the spare it would replace.
fn give_back(mut events: Vec<Event>, mut wire: Vec<WireRecord>) {
    events.clear();
    wire.clear();
    let _ = SPARE.try_with(|s| {
        let Ok(mut spare) = s.try_borrow_mut() else { return };
        if events.capacity() > spare.0.capacity() && events.capacity() <= MAX_KEPT_EVENTS {
            spare.0 = events;
        }
        if wire.capacity() > spare.1.capacity() && wire.capacity() <= MAX_KEPT_EVENTS {
            spare.1 = wire;
        }
    });
}

#[cfg(test)]
mod spare_tests {
    use crate::{History, WorldEvent};

    #[test]
    fn a_dropped_history_leaves_its_room_to_the_next_one_on_its_thread() {
        let mut h = History::reusing_spare_room();
        for at in 0..1000 {
            h.world(at, WorldEvent::RunEnded);
        }
        let room = h.events().as_ptr();
        drop(h);
        let next = History::reusing_spare_room();
        assert!(next.is_empty(), "the reused room holds no event");
        assert_eq!(next.events().as_ptr(), room, "the next history reuses the same memory");
        let after = History::reusing_spare_room();
        assert_ne!(after.events().as_ptr(), room, "room is handed to one history at a time");
    }

    #[test]
    fn a_plain_new_history_takes_no_room() {
        let mut h = History::reusing_spare_room();
        h.world(0, WorldEvent::RunEnded);
        let room = h.events().as_ptr();
        drop(h);
        let plain = History::new();
        assert_ne!(plain.events().as_ptr(), room);
        let reused = History::reusing_spare_room();
        assert_eq!(reused.events().as_ptr(), room, "History::new left the spare where it was");
    }
}
