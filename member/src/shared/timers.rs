//! A deadline table keyed by timer kind: each member keeps one (its own `Timer` kinds), and its
//! `poll_timeout` is the earliest deadline not on hold. A held timer keeps its deadline but does
//! not wake the member (a heartbeat that is due but cannot be sent now).

use std::collections::{BTreeMap, BTreeSet};

use crate::Millis;

/// The deadline table.
#[derive(Debug)]
pub(crate) struct Timers<T> {
    deadlines: BTreeMap<T, Millis>,
    held: BTreeSet<T>,
}

impl<T> Default for Timers<T> {
    fn default() -> Self {
        Self { deadlines: BTreeMap::new(), held: BTreeSet::new() }
    }
}

impl<T: Ord + Copy> Timers<T> {
    /// Arms (or moves) `timer` to fire at `at`.
    pub(crate) fn set(&mut self, timer: T, at: Millis) {
        self.deadlines.insert(timer, at);
    }

    /// Arms `timer` at `at`, or cancels it when `at` is None.
    pub(crate) fn set_or_cancel(&mut self, timer: T, at: Option<Millis>) {
        match at {
            Some(at) => self.set(timer, at),
            None => self.cancel(timer),
        }
    }

    /// Forgets `timer`.
    pub(crate) fn cancel(&mut self, timer: T) {
        self.deadlines.remove(&timer);
    }

    /// When `timer` fires, if it is armed.
    pub(crate) fn get(&self, timer: T) -> Option<Millis> {
        self.deadlines.get(&timer).copied()
    }

    /// Whether `timer` is armed.
    pub(crate) fn is_set(&self, timer: T) -> bool {
        self.deadlines.contains_key(&timer)
    }

    /// Whether `timer` is armed and due by `now`.
    pub(crate) fn is_due(&self, timer: T, now: Millis) -> bool {
        self.get(timer).is_some_and(|t| t <= now)
    }

    /// Forgets every timer `which` selects that is due by `now` (an expired backoff).
    pub(crate) fn expire(&mut self, now: Millis, which: impl Fn(T) -> bool) {
        self.deadlines.retain(|timer, at| !which(*timer) || *at > now);
    }

    /// Puts `timer` on hold (or releases it): a held timer keeps its deadline but is left out
    /// of [`Self::next_deadline`].
    pub(crate) fn hold(&mut self, timer: T, held: bool) {
        if held {
            self.held.insert(timer);
        } else {
            self.held.remove(&timer);
        }
    }

    /// The earliest deadline of every armed timer not on hold.
    pub(crate) fn next_deadline(&self) -> Option<Millis> {
        self.deadlines.iter().filter(|(t, _)| !self.held.contains(t)).map(|(_, at)| *at).min()
    }
}
