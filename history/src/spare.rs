//! Room for the next history: a dropped history leaves its (emptied) vectors to the next one
//! made on the same thread with [`crate::History::reusing_spare_room`].
//!
//! A sweep runs many seeds per thread, and each run's history grows to tens of megabytes. Made
//! afresh, its vectors regrow by doubling (each step a copy) into memory the allocator has
//! given back to the kernel since the last run, which the kernel must then clear page by page.
//! Reused, the memory stays mapped and the vectors never regrow past the largest run so far.
//! Capacity is never read by anything a run records, so reuse changes no history.

use std::cell::RefCell;

use crate::history::Event;
use crate::wire::WireRecord;

/// A thread keeps no more room than this many events' worth: a search that once met a huge
/// run does not hold its memory for ever.
const MAX_KEPT_EVENTS: usize = 1 << 20;

thread_local! {
    static SPARE: RefCell<(Vec<Event>, Vec<WireRecord>)> = const { RefCell::new((Vec::new(), Vec::new())) };
}

/// The thread's spare vectors (empty, perhaps with room), leaving none behind.
pub(crate) fn take() -> (Vec<Event>, Vec<WireRecord>) {
    SPARE.try_with(|s| std::mem::take(&mut *s.borrow_mut())).unwrap_or_default()
}

/// Empties `events` and `wire` and keeps each as the thread's spare when it has more room than
/// the spare it would replace.
pub(crate) fn give_back(mut events: Vec<Event>, mut wire: Vec<WireRecord>) {
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
mod tests {
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
