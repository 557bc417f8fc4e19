//! Coverage probes: rare, bug-prone situations named in the code where they happen, counted per
//! run, so a sweep can say which of them its seeds reached (FoundationDB's code probes).
//!
//! A probe is a `static` [`Probe`] with a dotted name (`coordinator.offset_fetch.while_loading`)
//! and a one-line description, declared in its crate's probe catalogue with [`probes!`](crate::probes!), and hit
//! with `PROBE.hit()` beside the code it names. Families of situations (a request answered in a
//! given group state with a given error) hit one probe with a detail: `PROBE.hit_as(detail)`.
//!
//! Hits are counted outside the history, in a per-thread recorder that a run switches on with
//! [`record`]: adding a probe never changes a history, and outside a recording a hit costs one
//! thread-local flag check. A simulation runs on one thread, so each run's counts are its own even
//! when a sweep runs several runs at once on other threads.
//!
//! Probes are also the simulation's trigger points: while [`tapping`] is on, every hit is logged
//! in order, and the process shell that handed its core the input drains that log
//! ([`take_taps`]) right after, naming itself as the [`Tap`]'s actor; the world hands the taps to
//! the fault injector, which fires faults on protocol events (a commit appended, a revoke
//! started) rather than at random instants. A run that names no probe in a trigger never taps,
//! and its history does not depend on the log.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::fmt::{Display, Write};
use std::sync::Arc;

/// A named rare situation. Declare with [`probes!`](crate::probes!); hit with [`Probe::hit`].
#[derive(Debug)]
pub struct Probe {
    /// Dotted name: `<crate area>.<concept>.<situation>`.
    pub name: &'static str,
    /// One line on the situation and why it is worth reaching.
    pub description: &'static str,
    /// Whether a coverage campaign must reach it (`groupsim coverage` fails if it does not).
    pub required: bool,
}

/// Hits counted during one recording: probe name (with `:detail` for family members) -> count.
pub type ProbeHits = BTreeMap<String, u64>;

/// One hit while tapping: which probe, hit by which actor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tap {
    /// The probe's name (family details are not logged).
    pub probe: &'static str,
    /// Who hit it: the member, or the client whose request a broker served (`None` for a
    /// broker's own timers and instructions).
    pub actor: Option<Arc<str>>,
}

thread_local! {
    static RECORDING: Cell<bool> = const { Cell::new(false) };
    static HITS: RefCell<ProbeHits> = const { RefCell::new(BTreeMap::new()) };
    /// Hits of plain probes by the probe's address, folded into `HITS` whenever a recording's
    /// counts are read: a hit compares one integer per step instead of long dotted names.
    static PLAIN: RefCell<BTreeMap<usize, (&'static str, u64)>> =
        const { RefCell::new(BTreeMap::new()) };
    static TAPPING: Cell<bool> = const { Cell::new(false) };
    static TAPS: RefCell<Vec<&'static str>> = const { RefCell::new(Vec::new()) };
    /// A family member's key is written here, so a hit allocates only for a key not seen yet.
    static KEY: RefCell<String> = const { RefCell::new(String::new()) };
}

/// Turns this thread's tap log on or off. Either way the log starts empty, so a run never sees
/// taps left by an earlier run on the same thread (one that failed midway, say).
pub fn tapping(on: bool) {
    TAPPING.with(|t| t.set(on));
    TAPS.with(|t| t.borrow_mut().clear());
}

/// Whether this thread's tap log is on.
pub fn is_tapping() -> bool {
    TAPPING.with(Cell::get)
}

/// The probes hit since the last call, in hit order (empty unless tapping).
pub fn take_taps() -> Vec<&'static str> {
    if !TAPPING.with(Cell::get) {
        return Vec::new();
    }
    TAPS.with(|t| std::mem::take(&mut *t.borrow_mut()))
}

fn tap(probe: &'static str) {
    if TAPPING.with(Cell::get) {
        TAPS.with(|t| t.borrow_mut().push(probe));
    }
}

impl Probe {
    /// Counts one hit, if this thread is recording.
    #[inline]
    pub fn hit(&'static self) {
        if RECORDING.with(Cell::get) {
            count_plain(self);
        }
        tap(self.name);
    }

    /// Counts one hit of the family member `detail` (recorded as `name:detail`), if this thread
    /// is recording. The detail is only formatted while recording.
    #[inline]
    pub fn hit_as(&'static self, detail: impl Display) {
        if RECORDING.with(Cell::get) {
            KEY.with(|k| match k.try_borrow_mut() {
                Ok(mut key) => {
                    key.clear();
                    let _ = write!(key, "{}:{detail}", self.name);
                    count(&key);
                }
                // A detail whose formatting hits a probe itself: its own key.
                Err(_) => count(&format!("{}:{detail}", self.name)),
            });
        }
        tap(self.name);
    }
}

/// Counts one hit of `key`; the key is copied only the first time it is hit.
fn count(key: &str) {
    HITS.with(|h| {
        let mut hits = h.borrow_mut();
        match hits.get_mut(key) {
            Some(n) => *n += 1,
            None => {
                hits.insert(key.to_string(), 1);
            }
        }
    });
}

/// Counts one hit of plain probe `probe` (see `PLAIN`).
fn count_plain(probe: &'static Probe) {
    PLAIN.with(|p| match p.try_borrow_mut() {
        Ok(mut plain) => {
            plain.entry(probe as *const Probe as usize).or_insert((probe.name, 0)).1 += 1
        }
        Err(_) => count(probe.name),
    });
}

/// Moves the plain probes' hits into `HITS`.
fn fold_plain() {
    PLAIN.with(|p| {
        let mut plain = p.borrow_mut();
        if plain.is_empty() {
            return;
        }
        HITS.with(|h| {
            let mut hits = h.borrow_mut();
            for (name, n) in std::mem::take(&mut *plain).into_values() {
                *hits.entry(name.to_string()).or_insert(0) += n;
            }
        });
    });
}

/// Runs `f` with this thread's probe recorder on and returns what it returned with the hits
/// counted meanwhile. Recordings nest: an inner one counts only its own hits, and the outer one
/// goes on counting after it.
pub fn record<T>(f: impl FnOnce() -> T) -> (T, ProbeHits) {
    let was_recording = RECORDING.with(|r| r.replace(true));
    fold_plain();
    let outer = HITS.with(|h| std::mem::take(&mut *h.borrow_mut()));
    // Restore the outer recording even if `f` panics (a failing run must not leak its hits).
    struct Restore {
        was_recording: bool,
        outer: Option<ProbeHits>,
    }
    impl Drop for Restore {
        fn drop(&mut self) {
            RECORDING.with(|r| r.set(self.was_recording));
            fold_plain();
            let outer = self.outer.take().unwrap_or_default();
            HITS.with(|h| {
                let inner = std::mem::replace(&mut *h.borrow_mut(), outer);
                drop(inner);
            });
        }
    }
    let mut restore = Restore { was_recording, outer: Some(outer) };
    let value = f();
    fold_plain();
    let hits = HITS.with(|h| std::mem::take(&mut *h.borrow_mut()));
    if was_recording {
        // The outer recording counts the inner hits too.
        let outer = restore.outer.as_mut().expect("outer hits");
        for (k, n) in &hits {
            *outer.entry(k.clone()).or_insert(0) += n;
        }
    }
    drop(restore);
    (value, hits)
}

/// Declares a crate's probe catalogue: one `pub static` [`Probe`] per entry, and `ALL`, every
/// probe of the catalogue, so reports can list the probes nobody hit.
///
/// ```
/// groupsim_wire::probes! {
///     /// Docs for the static.
///     WHILE_LOADING = required "demo.offset_fetch.while_loading": "OffsetFetch while loading";
///     RARE_EXTRA = optional "demo.extra": "a situation worth seeing, not worth failing for";
/// }
/// assert_eq!(ALL.len(), 2);
/// assert!(WHILE_LOADING.required && !RARE_EXTRA.required);
/// ```
#[macro_export]
macro_rules! probes {
    ($( $(#[$meta:meta])* $id:ident = $req:ident $name:literal : $desc:literal; )*) => {
        $(
            $(#[$meta])*
            pub static $id: $crate::probe::Probe = $crate::probe::Probe {
                name: $name,
                description: $desc,
                required: $crate::probes!(@required $req),
            };
        )*
        /// Every probe of this catalogue, in declaration order.
        pub static ALL: &[&$crate::probe::Probe] = &[$(&$id),*];
    };
    (@required required) => { true };
    (@required optional) => { false };
}

#[cfg(test)]
mod tests {
    use super::*;

    crate::probes! {
        A = required "test.a": "first";
        B = optional "test.b": "second";
    }

    #[test]
    fn hits_outside_a_recording_are_not_counted() {
        A.hit();
        let ((), hits) = record(|| B.hit());
        assert_eq!(hits, BTreeMap::from([("test.b".to_string(), 1)]));
    }

    #[test]
    fn a_recording_counts_hits_and_family_details() {
        let (v, hits) = record(|| {
            A.hit();
            A.hit();
            B.hit_as("JoinGroup/Stable");
            7
        });
        assert_eq!(v, 7);
        assert_eq!(hits["test.a"], 2);
        assert_eq!(hits["test.b:JoinGroup/Stable"], 1);
        assert_eq!(hits.len(), 2);
    }

    #[test]
    fn nested_recordings_keep_their_own_counts_and_the_outer_sees_both() {
        let (inner, outer) = record(|| {
            A.hit();
            let ((), inner) = record(|| B.hit());
            A.hit();
            inner
        });
        assert_eq!(inner, BTreeMap::from([("test.b".to_string(), 1)]));
        assert_eq!(outer["test.a"], 2);
        assert_eq!(outer["test.b"], 1);
    }

    #[test]
    fn a_panicking_run_leaves_the_recorder_off_and_empty() {
        let caught = std::panic::catch_unwind(|| {
            record(|| {
                A.hit();
                panic!("run failed");
            })
        });
        assert!(caught.is_err());
        A.hit();
        let ((), hits) = record(|| {});
        assert!(hits.is_empty());
    }

    #[test]
    fn plain_hits_and_family_details_of_one_probe_count_apart() {
        let ((), hits) = record(|| {
            B.hit();
            B.hit_as("x");
            B.hit();
        });
        assert_eq!(hits, BTreeMap::from([("test.b".into(), 2), ("test.b:x".into(), 1)]));
    }

    #[test]
    fn a_panicking_inner_recording_leaves_its_hits_out_of_the_outer() {
        let ((), outer) = record(|| {
            A.hit();
            let caught = std::panic::catch_unwind(|| {
                record(|| {
                    B.hit();
                    panic!("inner run failed");
                })
            });
            assert!(caught.is_err());
            A.hit();
        });
        assert_eq!(outer, BTreeMap::from([("test.a".into(), 2)]));
    }

    #[test]
    fn taps_log_hits_in_order_only_while_tapping() {
        A.hit();
        tapping(true);
        A.hit();
        B.hit_as("detail");
        assert_eq!(take_taps(), vec!["test.a", "test.b"]);
        assert!(take_taps().is_empty());
        tapping(false);
        A.hit();
        assert!(take_taps().is_empty());
    }

    #[test]
    fn turning_tapping_on_again_forgets_taps_left_by_an_earlier_run() {
        tapping(true);
        A.hit(); // an earlier run that stopped before draining its taps
        tapping(true);
        B.hit();
        assert_eq!(take_taps(), vec!["test.b"]);
        tapping(false);
    }

    #[test]
    fn the_catalogue_lists_every_probe_in_order() {
        let names: Vec<_> = ALL.iter().map(|p| (p.name, p.required)).collect();
        assert_eq!(names, vec![("test.a", true), ("test.b", false)]);
    }
}
