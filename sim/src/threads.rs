//! Seeds on several threads: one whole simulation per thread at a time, each single-threaded,
//! results in seed order. Sweeps, benchmarks and the determinism check share it.

use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

/// Runs `each` for the seeds of `seeds` on `jobs` threads, one seed per thread at a time (each
/// seed's simulation stays single-threaded on its thread), and returns `(seed, output)` in seed
/// order. Seeds start in order; none starts once `stop` is set (those started finish).
pub fn on_threads<T: Send>(
    seeds: Range<u64>,
    jobs: usize,
    stop: &AtomicBool,
    each: impl Fn(u64) -> T + Sync,
) -> Vec<(u64, T)> {
    let next = AtomicU64::new(seeds.start);
    let results = Mutex::new(Vec::with_capacity((seeds.end - seeds.start) as usize));
    let threads = jobs.clamp(1, (seeds.end - seeds.start).max(1) as usize);
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| loop {
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                let seed = next.fetch_add(1, Ordering::SeqCst);
                if seed >= seeds.end {
                    break;
                }
                let out = each(seed);
                results.lock().expect("results lock").push((seed, out));
            });
        }
    });
    let mut results = results.into_inner().expect("results lock");
    results.sort_by_key(|(seed, _)| *seed);
    results
}
