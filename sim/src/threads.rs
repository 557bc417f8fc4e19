//! Seeds on several threads: one whole simulation per thread at a time, each single-threaded,
//! results in seed order. Sweeps, benchmarks and the determinism check share it.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Runs `each` for the seeds of `seeds` on `jobs` threads, one seed per thread at a time (each
/// seed's simulation stays single-threaded on its thread), and returns `(seed, output)` in seed
/// order. Seeds start in order; none starts once `stop` is set (those started finish).
pub fn on_threads<T: Send>(
    seeds: Range<u64>,
    jobs: usize,
    stop: &AtomicBool,
    each: impl Fn(u64) -> T + Sync,
) -> Vec<(u64, T)> {
    let threads = jobs.clamp(1, (seeds.end - seeds.start).max(1) as usize);
    with_workers(threads, stop, |_, seed| each(seed), |workers| workers.round(0, seeds))
}

/// Worker threads kept for several rounds of seeds (a sweep's scenarios, one after the other):
/// what a thread keeps between runs (the allocator's thread heap, a history's spare room, the
/// shared topic names) carries over from one round to the next instead of being built again
/// by fresh threads for every scenario.
pub struct Workers<'a, T> {
    shared: &'a Shared<T>,
    stop: &'a AtomicBool,
}

/// The round in progress, guarded by [`Shared::state`].
struct Round<T> {
    /// What the round's seeds are run for (`each`'s first argument).
    key: usize,
    next: u64,
    end: u64,
    /// Seeds started and not yet finished.
    running: usize,
    /// When each running seed started (wall time, for [`SeedWatch`] only: nothing a run records
    /// reads it).
    started: BTreeMap<u64, Instant>,
    results: Vec<(u64, T)>,
    /// A worker's `each` panicked: no seed starts any more, and [`Workers::round`] panics.
    panicked: bool,
    /// No more rounds: the workers return.
    closed: bool,
}

struct Shared<T> {
    state: Mutex<Round<T>>,
    /// Workers wait here for a round (or the close).
    work: Condvar,
    /// The caller of [`Workers::round`] waits here for the round's last seed.
    finished: Condvar,
}

impl<T> Shared<T> {
    fn lock(&self) -> MutexGuard<'_, Round<T>> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl<T> Round<T> {
    /// Whether no seed of the round is running and none will start.
    fn over(&self, stop: &AtomicBool) -> bool {
        self.running == 0 && (self.next >= self.end || stop.load(Ordering::SeqCst) || self.panicked)
    }
}

/// Runs `body` with `jobs` worker threads that run `each(key, seed)` for the rounds `body`
/// asks for ([`Workers::round`]); the threads end when `body` returns. Rounds behave as
/// [`on_threads`] does: seeds start in order, none once `stop` is set, results in seed order.
pub fn with_workers<T: Send, R>(
    jobs: usize,
    stop: &AtomicBool,
    each: impl Fn(usize, u64) -> T + Sync,
    body: impl FnOnce(&Workers<'_, T>) -> R,
) -> R {
    let shared = Shared {
        state: Mutex::new(Round {
            key: 0,
            next: 0,
            end: 0,
            running: 0,
            started: BTreeMap::new(),
            results: Vec::new(),
            panicked: false,
            closed: false,
        }),
        work: Condvar::new(),
        finished: Condvar::new(),
    };
    std::thread::scope(|scope| {
        for _ in 0..jobs.max(1) {
            scope.spawn(|| work(&shared, stop, &each));
        }
        // Closes the rounds however `body` ends, so the scope's join never waits for ever.
        struct Close<'s, T>(&'s Shared<T>);
        impl<T> Drop for Close<'_, T> {
            fn drop(&mut self) {
                self.0.lock().closed = true;
                self.0.work.notify_all();
            }
        }
        let _close = Close(&shared);
        body(&Workers { shared: &shared, stop })
    })
}

/// A worker: takes the round's next seed while there is one, else waits for the next round.
fn work<T>(shared: &Shared<T>, stop: &AtomicBool, each: &(impl Fn(usize, u64) -> T + Sync)) {
    // Ends the round if `each` panics, so the caller waiting for it is woken.
    struct Running<'s, T>(&'s Shared<T>);
    impl<T> Drop for Running<'_, T> {
        fn drop(&mut self) {
            if std::thread::panicking() {
                let mut round = self.0.lock();
                round.running -= 1;
                round.panicked = true;
                self.0.finished.notify_all();
            }
        }
    }
    let mut round = shared.lock();
    loop {
        if round.closed {
            return;
        }
        if round.next < round.end && !round.panicked && !stop.load(Ordering::SeqCst) {
            let (key, seed) = (round.key, round.next);
            round.next += 1;
            round.running += 1;
            round.started.insert(seed, Instant::now());
            drop(round);
            let running = Running(shared);
            let out = each(key, seed);
            std::mem::forget(running);
            round = shared.lock();
            round.running -= 1;
            round.started.remove(&seed);
            round.results.push((seed, out));
            if round.over(stop) {
                shared.finished.notify_all();
            }
            continue;
        }
        round = shared.work.wait(round).unwrap_or_else(|p| p.into_inner());
    }
}

/// A time limit on one seed's run, and what to do about a seed that passes it: a run is a
/// single-threaded simulation, so one that never ends is a core stuck inside one call (an
/// endless loop), which nothing can interrupt; the caller decides (the CLI reports the seed and
/// exits).
pub struct SeedWatch<'a> {
    /// How long one seed may run, in wall time.
    pub limit: Duration,
    /// Called once per seed past the limit, while it still runs: the round's key, the seed, and
    /// how long it has run.
    pub overrun: &'a (dyn Fn(usize, u64, Duration) + Sync),
}

impl<T> Workers<'_, T> {
    /// Runs `each(key, seed)` for the seeds of `seeds` on the workers and returns `(seed,
    /// output)` in seed order, as [`on_threads`] does.
    ///
    /// # Panics
    ///
    /// When a worker's `each` panicked (in this round or an earlier one): the caller stops at
    /// once instead of waiting for rounds no worker will run.
    pub fn round(&self, key: usize, seeds: Range<u64>) -> Vec<(u64, T)> {
        self.round_watched(key, seeds, None)
    }

    /// [`Self::round`], telling `watch` of every seed that runs past its limit.
    ///
    /// # Panics
    ///
    /// As [`Self::round`].
    pub fn round_watched(
        &self,
        key: usize,
        seeds: Range<u64>,
        watch: Option<&SeedWatch<'_>>,
    ) -> Vec<(u64, T)> {
        let mut round = self.shared.lock();
        round.key = key;
        round.next = seeds.start;
        round.end = seeds.end;
        round.results.clear();
        self.shared.work.notify_all();
        let mut told = BTreeSet::new();
        while !round.over(self.stop) {
            let Some(watch) = watch else {
                round = self.shared.finished.wait(round).unwrap_or_else(|p| p.into_inner());
                continue;
            };
            let poll = (watch.limit / 4).clamp(Duration::from_millis(1), Duration::from_secs(1));
            round = match self.shared.finished.wait_timeout(round, poll) {
                Ok((guard, _)) => guard,
                Err(p) => p.into_inner().0,
            };
            let late: Vec<(u64, Duration)> = round
                .started
                .iter()
                .map(|(&seed, since)| (seed, since.elapsed()))
                .filter(|&(seed, ran)| ran >= watch.limit && !told.contains(&seed))
                .collect();
            if !late.is_empty() {
                drop(round);
                for (seed, ran) in late {
                    told.insert(seed);
                    (watch.overrun)(key, seed, ran);
                }
                round = self.shared.lock();
            }
        }
        if round.panicked {
            drop(round);
            panic!("a run panicked on a worker thread (its message is above)");
        }
        let mut results = std::mem::take(&mut round.results);
        results.sort_by_key(|(seed, _)| *seed);
        results
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::sync::atomic::AtomicUsize;

    use super::*;

    #[test]
    fn on_threads_returns_every_seed_in_order_whatever_the_thread_count() {
        let stop = AtomicBool::new(false);
        for jobs in [1, 2, 3, 16] {
            let out = on_threads(5..12, jobs, &stop, |seed| seed * 2);
            assert_eq!(out, (5..12).map(|s| (s, s * 2)).collect::<Vec<_>>(), "{jobs} jobs");
        }
        stop.store(true, Ordering::SeqCst);
        assert!(on_threads(0..4, 2, &stop, |seed| seed).is_empty());
    }

    /// Every round gets each of its seeds once, for its own key, in seed order, and the rounds
    /// run on the same threads (no thread is started per round).
    #[test]
    fn workers_run_each_round_on_the_same_threads() {
        let stop = AtomicBool::new(false);
        for jobs in [1, 2, 3, 16] {
            let threads = Mutex::new(BTreeSet::new());
            let each = |key: usize, seed: u64| {
                threads.lock().unwrap().insert(format!("{:?}", std::thread::current().id()));
                (key, seed * 2)
            };
            with_workers(jobs, &stop, each, |workers| {
                for (key, seeds) in [(0, 5..12), (1, 0..1), (2, 3..3), (3, 100..140)] {
                    let out = workers.round(key, seeds.clone());
                    let want: Vec<_> = seeds.map(|s| (s, (key, s * 2))).collect();
                    assert_eq!(out, want, "{jobs} jobs, round {key}");
                }
            });
            assert!(threads.lock().unwrap().len() <= jobs, "{jobs} jobs");
        }
    }

    /// Once `stop` is set no seed starts: the round returns the seeds that finished, and later
    /// rounds return nothing.
    #[test]
    fn workers_start_no_seed_once_stopped() {
        let stop = AtomicBool::new(false);
        let ran = AtomicUsize::new(0);
        let each = |_: usize, seed: u64| {
            ran.fetch_add(1, Ordering::SeqCst);
            if seed == 3 {
                stop.store(true, Ordering::SeqCst);
            }
            seed
        };
        with_workers(1, &stop, each, |workers| {
            assert_eq!(workers.round(0, 0..10), [(0, 0), (1, 1), (2, 2), (3, 3)]);
            assert!(workers.round(1, 0..10).is_empty());
        });
        assert_eq!(ran.load(Ordering::SeqCst), 4);
    }

    /// A seed that runs past the watch's limit is told of once, while it still runs, and the
    /// round still returns every seed; a round without a watch waits as before.
    #[test]
    fn a_seed_past_its_time_limit_is_told_of_while_it_runs() {
        let stop = AtomicBool::new(false);
        let told = Mutex::new(Vec::new());
        let overrun = |key: usize, seed: u64, ran: Duration| {
            told.lock().unwrap().push((key, seed, ran >= Duration::from_millis(200)));
        };
        let watch = SeedWatch { limit: Duration::from_millis(200), overrun: &overrun };
        let each = |_: usize, seed: u64| {
            if seed == 2 {
                std::thread::sleep(Duration::from_secs(2));
            }
            seed
        };
        with_workers(2, &stop, each, |workers| {
            let out = workers.round_watched(7, 0..4, Some(&watch));
            assert_eq!(out, [(0, 0), (1, 1), (2, 2), (3, 3)]);
        });
        assert_eq!(*told.lock().unwrap(), [(7, 2, true)], "seed 2 once, past the limit");
    }

    /// A panic in a seed's run ends its round and surfaces from the round's caller, which
    /// would otherwise go on asking for rounds (an endless loop waits for none).
    #[test]
    fn a_panicking_seed_surfaces_instead_of_hanging() {
        let stop = AtomicBool::new(false);
        let rounds = AtomicUsize::new(0);
        let outcome = std::panic::catch_unwind(|| {
            let each = |_: usize, seed: u64| assert_ne!(seed, 4, "seed 4 fails");
            with_workers(2, &stop, each, |workers| loop {
                rounds.fetch_add(1, Ordering::SeqCst);
                workers.round(0, 0..10);
            })
        });
        assert!(outcome.is_err(), "the panic reached the caller");
        assert_eq!(rounds.load(Ordering::SeqCst), 1, "the first round's caller stopped");
    }
}
