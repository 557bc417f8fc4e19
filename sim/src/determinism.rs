//! `sweep --check-determinism`: every seed runs twice — the second pass in reverse seed order,
//! so a seed lands on another thread after other seeds than the first time — and the two
//! history hashes must agree. A seed whose hashes differ fails with both hashes and the first
//! event where the two histories part (the seed is run again until its first history comes
//! back, to show the difference). This catches what one run cannot: state leaking between runs
//! on a thread, hash-order iteration, the wall clock, unseeded randomness.

use std::fmt;
use std::sync::atomic::AtomicBool;

use groupsim_history::History;

use crate::threads::on_threads;

/// How many more runs of a mismatching seed are tried to get its first history back.
const RETRIES: usize = 3;

/// A seed whose runs gave different histories.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mismatch {
    /// The seed.
    pub seed: u64,
    /// The first pass's history hash.
    pub first: String,
    /// The second pass's.
    pub second: String,
    /// The first event where the histories differ, when a rerun gave the first history back.
    pub difference: Option<String>,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "nondeterministic: history hash {} then {}", self.first, self.second)?;
        match &self.difference {
            Some(d) => write!(f, "; {d}"),
            None => write!(f, "; the first history did not come back in {RETRIES} more runs"),
        }
    }
}

/// Runs each seed of `first` (seed, first pass's hash; seeds without a hash are skipped) again
/// with `run`, in reverse order on `jobs` threads, and returns the seeds whose hash changed, in
/// seed order. `run` gives a seed's history, or `None` when the run could not be carried out.
pub fn recheck(
    first: &[(u64, String)],
    jobs: usize,
    run: impl Fn(u64) -> Option<History> + Sync,
) -> Vec<Mismatch> {
    let seeds: Vec<&(u64, String)> = first.iter().filter(|(_, h)| !h.is_empty()).collect();
    let n = seeds.len() as u64;
    let never = AtomicBool::new(false);
    let checked = on_threads(0..n, jobs, &never, |i| {
        let (seed, hash) = seeds[(n - 1 - i) as usize];
        let second = run(*seed)?;
        let second_hash = history_hash(&second);
        if second_hash == *hash {
            return None;
        }
        let difference = (0..RETRIES)
            .filter_map(|_| run(*seed))
            .find(|h| history_hash(h) == *hash)
            .map(|h| first_difference(&h, &second));
        Some(Mismatch { seed: *seed, first: hash.clone(), second: second_hash, difference })
    });
    let mut mismatches: Vec<Mismatch> = checked.into_iter().filter_map(|(_, m)| m).collect();
    mismatches.sort_by_key(|m| m.seed);
    mismatches
}

/// The hash a determinism check compares: the history's events and its wire stream.
pub fn run_hash(history_hash: &str, wire_hash: &str) -> String {
    format!("{history_hash}/{wire_hash}")
}

/// [`run_hash`] of a history.
pub fn history_hash(h: &History) -> String {
    run_hash(&h.hash_hex(), &h.wire_hash_hex())
}

/// Where two histories of one seed part: the first event that differs, as each run recorded it.
pub fn first_difference(first: &History, second: &History) -> String {
    let (a, b) = (first.events(), second.events());
    let show = |e: Option<&groupsim_history::Event>| match e {
        Some(e) => serde_json::to_string(e).unwrap_or_else(|_| format!("{e:?}")),
        None => "(the history had ended)".to_string(),
    };
    match (0..a.len().max(b.len())).find(|&i| a.get(i) != b.get(i)) {
        Some(i) => {
            format!(
                "event #{i} differs: first run {}, second run {}",
                show(a.get(i)),
                show(b.get(i))
            )
        }
        None => {
            let (a, b) = (first.wire(), second.wire());
            match (0..a.len().max(b.len())).find(|&i| a.get(i) != b.get(i)) {
                Some(i) => format!(
                    "wire entry #{i} differs: first run {:?}, second run {:?}",
                    a.get(i),
                    b.get(i)
                ),
                None => "the histories are equal but their hashes differ".to_string(),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use groupsim_history::WorldEvent;

    use super::*;

    fn history(seed: u64, scenario: &str) -> History {
        let mut h = History::new();
        h.world(0, WorldEvent::RunStarted { scenario: "s".into(), seed });
        h.world(5, WorldEvent::RunStarted { scenario: scenario.into(), seed });
        h
    }

    #[test]
    fn seeds_whose_rerun_matches_pass() {
        let first: Vec<(u64, String)> =
            (0..6).map(|s| (s, history_hash(&history(s, "a")))).collect();
        assert!(recheck(&first, 2, |s| Some(history(s, "a"))).is_empty());
    }

    #[test]
    fn a_seed_whose_rerun_differs_fails_with_both_hashes_and_the_first_differing_event() {
        let first: Vec<(u64, String)> =
            (0..4).map(|s| (s, history_hash(&history(s, "a")))).collect();
        // Seed 2 gives another history on its second run only (the first later reruns agree).
        let runs_of_2 = AtomicUsize::new(0);
        let mismatches = recheck(&first, 2, |s| {
            let other = s == 2 && runs_of_2.fetch_add(1, Ordering::SeqCst) == 0;
            Some(history(s, if other { "b" } else { "a" }))
        });
        assert_eq!(mismatches.len(), 1, "{mismatches:?}");
        let m = &mismatches[0];
        assert_eq!((m.seed, &m.first), (2, &first[2].1));
        assert_eq!(m.second, history_hash(&history(2, "b")));
        let shown = m.to_string();
        assert!(shown.contains("event #1 differs") && shown.contains("\"b\""), "{shown}");
    }

    #[test]
    fn a_difference_that_never_comes_back_is_still_a_failure() {
        let first = vec![(7, history_hash(&history(7, "a")))];
        let mismatches = recheck(&first, 1, |s| Some(history(s, "z")));
        assert_eq!(mismatches.len(), 1);
        assert_eq!(mismatches[0].difference, None);
        assert!(mismatches[0].to_string().contains("did not come back"));
    }

    #[test]
    fn two_runs_of_real_seeds_agree_in_both_worlds() {
        let scenario = crate::scenarios::find("steady_state").expect("in catalogue");
        for world in [crate::runner::WorldKind::Event, crate::runner::WorldKind::Turmoil] {
            let options = crate::runner::RunOptions { world, ..Default::default() };
            let run = |seed| crate::runner::run_seed_with(&scenario, seed, &options).ok();
            let first: Vec<(u64, String)> =
                (0..3).map(|s| (s, history_hash(&run(s).expect("runs").history))).collect();
            assert!(recheck(&first, 2, |s| run(s).map(|r| r.history)).is_empty());
        }
    }
}
