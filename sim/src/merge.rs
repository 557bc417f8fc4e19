//! `groupsim merge`: one sweep's table from the `--json` files of its shards. A deep sweep runs
//! as N `sweep --shard K/N --json` processes (on N machines or CI jobs); merging their files
//! gives the rows, total line and exit code one unsharded sweep would have given. Only the
//! timing columns differ: a merged row's rates divide by the wall seconds summed over its shards
//! (the rate of one shard's machine, as if it had run every seed itself).
//!
//! Merging refuses, with a named error, whatever would make the table a lie: a file that is not
//! a sweep's JSON, shards of different sweeps (another seed range, bug switch, scenario list or
//! option), shards whose seeds overlap or leave a gap, and shards that stopped early.

use std::collections::BTreeMap;
use std::ops::Range;

use crate::runner;
use crate::sweep::{self, JsonRow, SweepPlan, SweepRow};

/// Why shard files cannot be merged into one sweep.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// No file given.
    #[error("no sweep JSON files to merge")]
    NoFiles,
    /// A file could not be read.
    #[error("reading {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// A file is not the JSON `groupsim sweep --json` writes.
    #[error("{path} is not a sweep's JSON (groupsim sweep --json): {reason}")]
    NotSweepJson {
        /// The file.
        path: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A sweep JSON without the plan merging needs (written by a groupsim before plans).
    #[error(
        "{path} records no sweep plan (written by an older groupsim): rerun its sweep with this one"
    )]
    NoPlan {
        /// The file.
        path: String,
    },
    /// Two files are shards of different sweeps.
    #[error("{a} and {b} are shards of different sweeps: {field} {value_a} vs {value_b}")]
    DifferentSweeps {
        /// One file.
        a: String,
        /// The other.
        b: String,
        /// The plan field they disagree on.
        field: &'static str,
        /// Its value in `a`.
        value_a: String,
        /// Its value in `b`.
        value_b: String,
    },
    /// Two files ran some of the same seeds.
    #[error("{a} and {b} overlap: both ran seeds {seeds:?}")]
    Overlap {
        /// One file.
        a: String,
        /// The other.
        b: String,
        /// The seeds both ran.
        seeds: Range<u64>,
    },
    /// Seeds of the sweep that no file ran.
    #[error("missing shard: no file ran seeds {seeds:?} of the sweep's {whole:?}")]
    Missing {
        /// The seeds no file ran.
        seeds: Range<u64>,
        /// The sweep's whole range.
        whole: Range<u64>,
    },
    /// A shard did not run every scenario over every one of its seeds.
    #[error("{path} stopped early: {what}")]
    Incomplete {
        /// The file.
        path: String,
        /// What it lacks.
        what: String,
    },
    /// A `--fail-fast` shard caught a failure: the unsharded sweep would have stopped at its
    /// first failing seed, which no set of shards can tell.
    #[error(
        "{path} is a --fail-fast shard that caught a failure: the unsharded sweep would have \
         stopped at its first failing seed, which shards cannot reproduce (rerun without --fail-fast)"
    )]
    FailFastCaught {
        /// The file.
        path: String,
    },
}

/// One shard's file, read and checked on its own.
#[derive(Clone, Debug)]
pub struct ShardFile {
    /// Where it came from (for errors).
    pub path: String,
    /// The sweep it belongs to.
    pub plan: SweepPlan,
    /// Its rows, one per scenario of the plan, in the plan's order.
    pub rows: Vec<SweepRow>,
}

impl ShardFile {
    /// Reads and checks the file at `path`.
    pub fn read(path: &std::path::Path) -> Result<Self, MergeError> {
        let label = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|source| MergeError::Read { path: label.clone(), source })?;
        Self::parse(&label, &text)
    }

    /// Parses and checks the text of a sweep JSON file named `path`.
    pub fn parse(path: &str, text: &str) -> Result<Self, MergeError> {
        let not_sweep =
            |reason: String| MergeError::NotSweepJson { path: path.to_string(), reason };
        let rows: Vec<JsonRow> =
            serde_json::from_str(text).map_err(|e| not_sweep(e.to_string()))?;
        let Some(first) = rows.first() else { return Err(not_sweep("no rows".into())) };
        let plan = first.sweep.clone().ok_or_else(|| MergeError::NoPlan { path: path.into() })?;
        if rows.iter().any(|r| r.sweep.as_ref() != Some(&plan)) {
            return Err(not_sweep("its rows carry different sweep plans".into()));
        }
        let rows: Vec<SweepRow> = rows.into_iter().map(|r| r.row).collect();
        let names: Vec<&str> = rows.iter().map(|r| r.scenario.as_str()).collect();
        if names.len() > plan.scenarios.len()
            || names.iter().zip(&plan.scenarios).any(|(a, b)| a != b)
        {
            return Err(not_sweep(format!(
                "rows {names:?} are not the plan's scenarios {:?} in order",
                plan.scenarios
            )));
        }
        if plan.fail_fast && rows.iter().any(|r| r.failed > 0) {
            return Err(MergeError::FailFastCaught { path: path.into() });
        }
        let incomplete = |what: String| MergeError::Incomplete { path: path.into(), what };
        if rows.len() < plan.scenarios.len() {
            return Err(incomplete(format!(
                "{} of {} scenarios",
                rows.len(),
                plan.scenarios.len()
            )));
        }
        let whole = plan.start..plan.start.saturating_add(plan.seeds);
        if plan.first_seed > plan.end_seed
            || plan.first_seed < whole.start
            || plan.end_seed > whole.end
        {
            return Err(not_sweep(format!(
                "its seeds {:?} are not within its sweep's {whole:?}",
                plan.range()
            )));
        }
        let wanted = (plan.end_seed.saturating_sub(plan.first_seed)) as usize;
        for r in &rows {
            if r.seeds != wanted || r.passed + r.failed != r.seeds {
                return Err(incomplete(format!(
                    "{} ran {} of {wanted} seeds",
                    r.scenario, r.seeds
                )));
            }
            if let Some(f) = r.failures.iter().find(|f| !plan.range().contains(&f.seed)) {
                return Err(not_sweep(format!(
                    "{} lists failing seed {} outside its seeds {:?}",
                    r.scenario,
                    f.seed,
                    plan.range()
                )));
            }
        }
        Ok(Self { path: path.into(), plan, rows })
    }
}

/// The unsharded sweep rebuilt from its shards.
#[derive(Clone, Debug)]
pub struct Merged {
    /// The whole sweep's plan (no shard, every seed).
    pub plan: SweepPlan,
    /// One row per scenario, as the unsharded sweep would have printed it.
    pub rows: Vec<SweepRow>,
}

/// Merges shard files into the sweep they split, or says why they are not one sweep's shards.
pub fn merge(mut files: Vec<ShardFile>) -> Result<Merged, MergeError> {
    let Some(first) = files.first() else { return Err(MergeError::NoFiles) };
    for f in &files[1..] {
        for ((field, a), (_, b)) in first.plan.sweep_fields().into_iter().zip(f.plan.sweep_fields())
        {
            if a != b {
                return Err(MergeError::DifferentSweeps {
                    a: first.path.clone(),
                    b: f.path.clone(),
                    field,
                    value_a: a,
                    value_b: b,
                });
            }
        }
    }
    let mut plan = first.plan.clone();
    let whole = plan.start..plan.start + plan.seeds;
    files.sort_by_key(|f| f.plan.first_seed);
    let mut covered = whole.start;
    for (i, f) in files.iter().enumerate() {
        let r = f.plan.range();
        if r.start < whole.start || r.end > whole.end {
            return Err(MergeError::NotSweepJson {
                path: f.path.clone(),
                reason: format!("its seeds {r:?} are not within its sweep's {whole:?}"),
            });
        }
        if r.start < covered {
            let prev = &files[i - 1];
            return Err(MergeError::Overlap {
                a: prev.path.clone(),
                b: f.path.clone(),
                seeds: r.start..covered.min(r.end),
            });
        }
        if r.start > covered {
            return Err(MergeError::Missing { seeds: covered..r.start, whole });
        }
        covered = r.end;
    }
    if covered < whole.end {
        return Err(MergeError::Missing { seeds: covered..whole.end, whole });
    }
    plan.shard = None;
    plan.first_seed = whole.start;
    plan.end_seed = whole.end;
    let rows = (0..plan.scenarios.len()).map(|i| merge_row(&files, i)).collect();
    Ok(Merged { plan, rows })
}

/// Row `i` of every file (in seed order), summed into one.
fn merge_row(files: &[ShardFile], i: usize) -> SweepRow {
    let parts: Vec<&SweepRow> = files.iter().map(|f| &f.rows[i]).collect();
    let mut probe_seeds: BTreeMap<String, usize> = BTreeMap::new();
    for p in &parts {
        for (name, n) in &p.probe_seeds {
            *probe_seeds.entry(name.clone()).or_insert(0) += n;
        }
    }
    let mut row = SweepRow::from_sums(
        &parts[0].scenario,
        parts.iter().map(|p| p.seeds).sum(),
        parts.iter().flat_map(|p| p.failures.iter().cloned()).collect(),
        parts.iter().find_map(|p| p.replay.clone()),
        probe_seeds,
        (
            parts.iter().map(|p| p.rebalances).sum(),
            parts.iter().map(|p| p.simulated_ms).sum(),
            parts.iter().map(|p| p.wall_seconds).sum::<f64>().max(1e-9),
        ),
    );
    row.hazard_seeds = parts.iter().flat_map(|p| p.hazard_seeds.iter().copied()).collect();
    row
}

impl Merged {
    /// The table an unsharded sweep prints: header, rows, total line.
    pub fn table(&self) -> String {
        let mut out = sweep::table_header(self.plan.range(), &self.plan.args());
        for r in &self.rows {
            out.push_str(&r.table_lines());
        }
        out.push_str(&sweep::total_line(&self.rows));
        out
    }

    /// The merged sweep's JSON, as an unsharded `sweep --json` writes it.
    pub fn json(&self) -> serde_json::Result<String> {
        sweep::json_summary(&self.plan, &self.rows)
    }

    /// One replay command per failing seed, in table order, each followed by a comment naming
    /// its first anomaly (or harness error).
    pub fn replay_commands(&self) -> String {
        let mut out = String::new();
        for r in &self.rows {
            for f in &r.failures {
                let why = f.first_anomaly.map(|c| c.to_string()).or(f.error.clone());
                out.push_str(&format!(
                    "{}{}  # {}\n",
                    runner::replay_command(&r.scenario, f.seed),
                    self.plan.args(),
                    why.unwrap_or_default()
                ));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::{RunOptions, SeedResult, WorldKind};
    use crate::sweep::{Seeds, Shard, Sweep};

    fn result(seed: u64, ok: bool) -> SeedResult {
        let mut r = crate::sweep::tests::result(seed, ok, seed % 3);
        r.simulated_ms = 1_500 + seed;
        r.probes = [format!("p:{}", seed % 2)].into();
        r
    }

    /// The JSON of shard `shard` of seeds 0..8 of two scenarios, where seeds 3 and 6 fail.
    fn shard_json(shard: Option<&str>, bug: Option<&str>) -> String {
        let options =
            RunOptions { bug: bug.map(|b| crate::bugs::find(b).unwrap()), ..Default::default() };
        let seeds = Seeds { start: 0, count: 8, shard: shard.map(|s| s.parse::<Shard>().unwrap()) };
        let names = ["steady_state".to_string(), "zombie_pause".to_string()];
        let sweep = Sweep::new(&names, seeds, 1, options.clone()).unwrap();
        let rows: Vec<SweepRow> = names
            .iter()
            .map(|n| {
                let results: Vec<SeedResult> =
                    seeds.range().map(|s| result(s, s != 3 && s != 6)).collect();
                SweepRow::new(n, &results, 0.5, &options.args())
            })
            .collect();
        sweep::json_summary(&sweep.plan(), &rows).unwrap()
    }

    fn files(shards: &[&str]) -> Vec<ShardFile> {
        shards.iter().map(|s| ShardFile::parse(s, &shard_json(Some(s), None)).unwrap()).collect()
    }

    fn without_rates(table: &str) -> Vec<String> {
        table
            .lines()
            .map(|l| {
                let cols: Vec<&str> = l.split_whitespace().collect();
                if cols.len() >= 8 && cols[1].parse::<usize>().is_ok() {
                    [&cols[..5], &cols[7..]].concat().join(" ")
                } else {
                    cols.join(" ")
                }
            })
            .collect()
    }

    #[test]
    fn four_shards_merge_into_the_unsharded_table() {
        let merged = merge(files(&["3/4", "1/4", "4/4", "2/4"])).unwrap();
        let whole = merge(vec![ShardFile::parse("all", &shard_json(None, None)).unwrap()]).unwrap();
        assert_eq!(without_rates(&merged.table()), without_rates(&whole.table()));
        assert!(merged.table().starts_with("seeds 0..8\n"), "{}", merged.table());
        assert!(merged.table().ends_with("total: 16 runs, 12 passed, 4 failed\n"));
        let row = &merged.rows[0];
        assert_eq!(row.failures.iter().map(|f| f.seed).collect::<Vec<_>>(), [3, 6]);
        assert_eq!((row.rebalances, row.probe_seeds["p:1"]), (whole.rows[0].rebalances, 4));
        assert_eq!(row.wall_seconds, 4.0 * 0.5, "rates use the wall time summed over shards");
        assert_eq!(merged.replay_commands().lines().count(), 4);
        assert!(merged.replay_commands().starts_with(&runner::replay_command("steady_state", 3)));
        // Shards of shards: 1/4 and 2/4 are shard 1/2.
        let halves = merge(files(&["1/4", "2/4", "2/2"])).unwrap();
        assert_eq!(without_rates(&halves.table()), without_rates(&whole.table()));
    }

    #[test]
    fn overlapping_missing_and_foreign_shards_are_named_errors() {
        let err = merge(files(&["1/4", "2/4", "1/2", "2/2"])).unwrap_err();
        assert!(matches!(err, MergeError::Overlap { .. }), "{err}");
        let err = merge(files(&["1/4", "2/4", "4/4"])).unwrap_err();
        assert_eq!(err.to_string(), "missing shard: no file ran seeds 4..6 of the sweep's 0..8");
        let err = merge(files(&["1/2"])).unwrap_err();
        assert!(matches!(err, MergeError::Missing { .. }), "{err}");
        let mut mixed = files(&["1/2"]);
        let bug = "coordinator-skips-generation-check";
        mixed.push(ShardFile::parse("b", &shard_json(Some("2/2"), Some(bug))).unwrap());
        let err = merge(mixed).unwrap_err().to_string();
        assert_eq!(err, format!("1/2 and b are shards of different sweeps: bug none vs {bug}"));
        assert!(matches!(merge(vec![]), Err(MergeError::NoFiles)));
    }

    /// Regression, found by the `shard_reader` fuzz target: a shard whose own seeds began before
    /// its sweep's (`first_seed` below `start`, a hand-edited or corrupt file) sorted first and
    /// was taken for an overlap with the shard before it, which did not exist: an index below
    /// zero, a panic. Such a file is now refused when read, and `merge` names it if one is built
    /// by hand.
    #[test]
    fn a_shard_whose_seeds_lie_outside_its_sweep_is_refused() {
        let json = shard_json(Some("1/4"), None);
        let edited = json.replace("\"start\": 0", "\"start\": 1");
        assert_ne!(edited, json, "the plan names its start");
        let e = ShardFile::parse("bad.json", &edited).expect_err("refused when read");
        assert!(e.to_string().contains("not within its sweep"), "{e}");
        let mut f = files(&["1/4"]).remove(0);
        f.plan.start = 1;
        let e = merge(vec![f]).expect_err("refused by merge");
        assert!(e.to_string().contains("not within its sweep"), "{e}");
    }

    #[test]
    fn shards_run_in_different_worlds_are_refused() {
        let mut rows: Vec<serde_json::Value> =
            serde_json::from_str(&shard_json(Some("2/2"), None)).unwrap();
        rows.iter_mut().for_each(|r| r["sweep"]["world"] = "turmoil".into());
        let turmoil = ShardFile::parse("t", &serde_json::to_string(&rows).unwrap()).unwrap();
        assert!(turmoil.plan.args().ends_with(" --world turmoil"), "{}", turmoil.plan.args());
        let mut mixed = files(&["1/2"]);
        mixed.push(turmoil);
        let err = merge(mixed).unwrap_err().to_string();
        assert_eq!(err, "1/2 and t are shards of different sweeps: world event vs turmoil");
        // A file from before the event world names no world: its runs were turmoil's.
        rows.iter_mut().for_each(|r| {
            r["sweep"].as_object_mut().expect("plan").remove("world");
        });
        let old = ShardFile::parse("o", &serde_json::to_string(&rows).unwrap()).unwrap();
        assert_eq!(old.plan.world, WorldKind::Turmoil);
    }

    #[test]
    fn files_that_are_not_whole_sweep_shards_are_refused() {
        let cases: &[(&str, &str)] = &[
            ("{\"not\": \"rows\"}", "is not a sweep's JSON"),
            ("[]", "no rows"),
            ("seeds 0..8\nscenario", "is not a sweep's JSON"),
        ];
        for (text, wanted) in cases {
            let err = ShardFile::parse("f", text).unwrap_err().to_string();
            assert!(err.contains(wanted), "{text}: {err}");
        }
        // A file from before plans: rows without `sweep`.
        let mut rows: Vec<serde_json::Value> =
            serde_json::from_str(&shard_json(Some("1/2"), None)).unwrap();
        rows.iter_mut().for_each(|r| {
            r.as_object_mut().unwrap().remove("sweep");
        });
        let old = serde_json::to_string(&rows).unwrap();
        assert!(matches!(ShardFile::parse("old", &old), Err(MergeError::NoPlan { .. })));
        // A shard missing its last scenario's row.
        let mut rows: Vec<serde_json::Value> =
            serde_json::from_str(&shard_json(Some("1/2"), None)).unwrap();
        rows.pop();
        let short = serde_json::to_string(&rows).unwrap();
        let err = ShardFile::parse("short", &short).unwrap_err();
        assert_eq!(err.to_string(), "short stopped early: 1 of 2 scenarios");
        // A --fail-fast shard with a failure, even one that ran every seed.
        let mut rows: Vec<serde_json::Value> =
            serde_json::from_str(&shard_json(Some("1/2"), None)).unwrap();
        rows.iter_mut().for_each(|r| r["sweep"]["fail_fast"] = true.into());
        let caught = serde_json::to_string(&rows).unwrap();
        let err = ShardFile::parse("ff", &caught).unwrap_err();
        assert!(matches!(err, MergeError::FailFastCaught { .. }), "{err}");
    }
}
