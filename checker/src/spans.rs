//! Stretches of time the views record: a member in a generation (classic) or at a member epoch
//! (KIP-848), a member owning a partition. A leaf both kinds of group view share.

use groupsim_wire::Millis;

/// A stretch of time in which something held: a member belonged to one generation of its group
/// (from the event that put it there — the generation's start, a load, a static member's
/// takeover — to the one that ended it: its removal, the next generation, a load), held a member
/// epoch, or owned a partition.
#[derive(Clone, Copy, Debug)]
pub(super) struct Belonging {
    pub(super) from: Millis,
    /// When it ended and the event that ended it; `None` while it lasts.
    pub(super) until: Option<(Millis, usize)>,
}

impl Belonging {
    /// Whether it lasted through some moment of millisecond `at`: the history stamps events in
    /// milliseconds, so within the millisecond of a change either side counts.
    pub(super) fn covers(&self, at: Millis) -> bool {
        self.from <= at && self.until.is_none_or(|(until, _)| until >= at)
    }
}
