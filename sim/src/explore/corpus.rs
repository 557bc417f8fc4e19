//! The search's corpus: the schedules that reached something no earlier run had, each with its
//! signature, and the union of what every run reached. Kept in one JSON file in a folder
//! (`--corpus DIR`), written whole to a temporary file and renamed over the old one, so a crash
//! or Ctrl-C mid-write leaves the previous corpus intact; read back only by the build and for the
//! scenarios that wrote it (a corpus is the runs of one binary: another's draws differ).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::faults::FaultSchedule;
use crate::runner::RunOptions;
use crate::scenario::Scenario;
use crate::signature::{Coverage, Element, Signature};
use groupsim_wire::Millis;

/// The corpus file's format version: 2 since signatures count how often an element recurred
/// (a corpus of format 1 holds unions without those counts, which would all look new).
pub const FORMAT: u32 = 2;

/// The corpus file inside a corpus folder.
pub const FILE: &str = "corpus.json";

/// One schedule kept: a seed of a scenario, its schedule, and what it reached.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// The entry's number in its corpus (in the order entries joined).
    pub id: u64,
    /// The scenario.
    pub scenario: String,
    /// The seed the run was drawn from.
    pub seed: u64,
    /// The schedule that replaced the drawn one.
    pub schedule: FaultSchedule,
    /// How it was made: `seed` for a scenario's own draw, else the mutations applied to its
    /// parent, in order.
    pub how: Vec<String>,
    /// The entry it was mutated from.
    pub parent: Option<u64>,
    /// Everything the run reached.
    pub signature: Signature,
    /// What it reached first (the reason it was kept).
    pub found: Vec<Element>,
    /// The earliest instant at which the run reached one of `found` (probes carry no time):
    /// mutations after it keep the run as it was up to it.
    #[serde(default)]
    pub frontier_ms: Option<Millis>,
    /// The instants at which the run first reached each of its timed elements, in order,
    /// repeats removed: where an aimed fault ([`super::mutate::Mutation::AimFault`]) lands.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub moments: Vec<Millis>,
}

/// The search's state: what a resumed search continues from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Corpus {
    /// [`FORMAT`].
    pub groupsim_corpus: u32,
    /// Which build and scenarios made it ([`fingerprint`]).
    pub fingerprint: String,
    /// The scenarios searched, in order.
    pub scenarios: Vec<String>,
    /// The bug switch on, if any.
    pub bug: Option<String>,
    /// The world (`event` or `turmoil`).
    pub world: String,
    /// The kept schedules.
    pub entries: Vec<Entry>,
    /// Runs done, and how many reached each element.
    pub runs: u64,
    /// The union of every run's signature, as (element, runs that reached it).
    pub reached: Vec<(Element, u64)>,
    /// Rounds of the search done (each round's draws come from the search seed and its number).
    pub rounds: u64,
    /// The next fresh seed of each scenario.
    pub next_seed: BTreeMap<String, u64>,
    /// What each way of making a candidate (fresh seeds, mutations anywhere, mutations after
    /// the parent's new find) has paid lately.
    #[serde(default)]
    pub arms: [ArmStats; 3],
}

/// An arm's counts are halved once it has this many runs, so its pay follows what it does now.
pub const ARM_MEMORY: u64 = 128;

/// How one way of making candidates has paid: its recent runs, and how many of them reached
/// something new.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArmStats {
    /// Recent runs.
    pub runs: u64,
    /// Of those, the runs that reached a new element.
    pub paid: u64,
}

impl ArmStats {
    /// Counts one run; halves both counts once they reach the arm's memory, so the pay follows
    /// what the arm does now.
    pub fn count(&mut self, paid: bool) {
        self.runs += 1;
        self.paid += u64::from(paid);
        if self.runs >= ARM_MEMORY {
            self.runs /= 2;
            self.paid /= 2;
        }
    }
}

/// What is wrong with a corpus folder.
#[derive(Debug, thiserror::Error)]
pub enum CorpusError {
    /// The file could not be read or written.
    #[error("corpus {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    /// The file is not a corpus this build reads.
    #[error("corpus {path} is corrupt or not a corpus: {reason}")]
    Corrupt { path: PathBuf, reason: String },
    /// The file was written for another search.
    #[error("corpus {path} was made {theirs}, not {ours}: use another --corpus folder")]
    Mismatch { path: PathBuf, theirs: String, ours: String },
}

impl Corpus {
    /// An empty corpus for a search of `scenarios` under `options`.
    pub fn new(scenarios: &[Scenario], options: &RunOptions) -> Self {
        Self {
            groupsim_corpus: FORMAT,
            fingerprint: fingerprint(scenarios, options),
            scenarios: scenarios.iter().map(|s| s.name.to_string()).collect(),
            bug: options.bug.map(|b| b.name.to_string()),
            world: options.world.name().to_string(),
            entries: Vec::new(),
            runs: 0,
            reached: Vec::new(),
            rounds: 0,
            next_seed: BTreeMap::new(),
            arms: [ArmStats::default(); 3],
        }
    }

    /// The union of the runs' signatures.
    pub fn coverage(&self) -> Coverage {
        Coverage { reached: self.reached.iter().cloned().collect(), runs: self.runs }
    }

    /// Stores `coverage` as the union of the runs' signatures.
    pub fn set_coverage(&mut self, coverage: &Coverage) {
        self.runs = coverage.runs;
        self.reached = coverage.reached.iter().map(|(e, n)| (e.clone(), *n)).collect();
    }

    /// Reads the corpus in `dir`, or `None` when the folder holds none yet. A corpus written for
    /// other scenarios, another bug switch or world, or by a build whose draws differ is refused
    /// by name, as is a corrupt file; nothing is written over it.
    pub fn read(dir: &Path, expected: &Corpus) -> Result<Option<Self>, CorpusError> {
        let path = dir.join(FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(CorpusError::Io { path, source }),
        };
        let corpus = Self::parse(&text, &path)?;
        let describe = |c: &Corpus| {
            format!(
                "for [{}] (bug {}, {} world)",
                c.scenarios.join(", "),
                c.bug.as_deref().unwrap_or("none"),
                c.world
            )
        };
        if describe(&corpus) != describe(expected) {
            let (theirs, ours) = (describe(&corpus), describe(expected));
            return Err(CorpusError::Mismatch { path, theirs, ours });
        }
        if corpus.fingerprint != expected.fingerprint {
            return Err(CorpusError::Mismatch {
                path,
                theirs: format!("by another build (draws fingerprint {})", corpus.fingerprint),
                ours: format!("this build's ({})", expected.fingerprint),
            });
        }
        Ok(Some(corpus))
    }

    /// Parses a corpus file's text (`path` names it in errors).
    pub fn parse(text: &str, path: &Path) -> Result<Self, CorpusError> {
        let corrupt = |reason: String| CorpusError::Corrupt { path: path.to_path_buf(), reason };
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| corrupt(e.to_string()))?;
        match value.get("groupsim_corpus").and_then(|v| v.as_u64()) {
            Some(v) if v == u64::from(FORMAT) => {}
            Some(v) => return Err(corrupt(format!("format {v}, this build reads {FORMAT}"))),
            None => return Err(corrupt("no groupsim_corpus format field".into())),
        }
        let corpus: Corpus = serde_json::from_value(value).map_err(|e| corrupt(e.to_string()))?;
        let ids_in_order = corpus.entries.iter().enumerate().all(|(i, e)| e.id == i as u64);
        if !ids_in_order {
            return Err(corrupt("entry ids are not 0, 1, 2, …".into()));
        }
        if let Some(e) = corpus.entries.iter().find(|e| !corpus.scenarios.contains(&e.scenario)) {
            return Err(corrupt(format!("entry {} is of unknown scenario {}", e.id, e.scenario)));
        }
        Ok(corpus)
    }

    /// Writes the corpus into `dir` (created if needed): to a temporary file, then renamed over
    /// the corpus file, so the old corpus stays whole until the new one is.
    pub fn write(&self, dir: &Path) -> Result<PathBuf, CorpusError> {
        let path = dir.join(FILE);
        let io = |source| CorpusError::Io { path: path.clone(), source };
        std::fs::create_dir_all(dir).map_err(io)?;
        let text = serde_json::to_string(self)
            .map_err(|e| CorpusError::Corrupt { path: path.clone(), reason: e.to_string() })?;
        let tmp = dir.join(format!("{FILE}.tmp"));
        std::fs::write(&tmp, text + "\n").map_err(io)?;
        std::fs::rename(&tmp, &path).map_err(io)?;
        Ok(path)
    }

    /// One corpus from several of the same search (shards of one search, or searches resumed
    /// apart): entries taken in order, corpus by corpus, each kept only if it reaches an element
    /// the entries kept before it did not; the run counts summed, and each element's count too.
    pub fn merge(corpora: Vec<Corpus>) -> Result<Corpus, String> {
        let mut iter = corpora.into_iter();
        let Some(first) = iter.next() else { return Err("no corpus to merge".into()) };
        let mut merged = Corpus { entries: Vec::new(), ..first.clone() };
        let mut counts: BTreeMap<Element, u64> = BTreeMap::new();
        let mut kept = Coverage::default();
        let mut runs = 0;
        for corpus in std::iter::once(first).chain(iter) {
            let same = corpus.fingerprint == merged.fingerprint
                && corpus.scenarios == merged.scenarios
                && corpus.bug == merged.bug
                && corpus.world == merged.world;
            if !same {
                return Err(format!(
                    "corpora of different searches: [{}] ({}) and [{}] ({})",
                    merged.scenarios.join(", "),
                    merged.fingerprint,
                    corpus.scenarios.join(", "),
                    corpus.fingerprint
                ));
            }
            runs += corpus.runs;
            for (e, n) in &corpus.reached {
                *counts.entry(e.clone()).or_insert(0) += n;
            }
            for mut entry in corpus.entries {
                let found = kept.add(&entry.signature);
                if found.is_empty() {
                    continue;
                }
                entry.id = merged.entries.len() as u64;
                entry.parent = None;
                entry.found = found;
                merged.entries.push(entry);
            }
            merged.rounds = merged.rounds.max(corpus.rounds);
            for (s, n) in corpus.next_seed {
                let next = merged.next_seed.entry(s).or_insert(0);
                *next = (*next).max(n);
            }
        }
        merged.runs = runs;
        merged.reached = counts.into_iter().collect();
        Ok(merged)
    }
}

/// What identifies a search's runs: the binary's version and, per scenario, a digest of the
/// runs it draws for its first seeds (any change to a scenario, a profile's settings or a bug
/// switch changes them), with the bug switch and the world.
pub fn fingerprint(scenarios: &[Scenario], options: &RunOptions) -> String {
    let mut h = Sha256::new();
    h.update(env!("CARGO_PKG_VERSION").as_bytes());
    h.update(options.world.name().as_bytes());
    for s in scenarios {
        h.update(s.name.as_bytes());
        for seed in 0..2 {
            let spec = options.spec(s, seed);
            h.update(serde_json::to_string(&spec).unwrap_or_default().as_bytes());
        }
    }
    let digest = h.finalize();
    digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn corpus() -> Corpus {
        let s = crate::scenarios::find("membership_churn").expect("in catalogue");
        Corpus::new(&[s], &RunOptions::default())
    }

    fn entry(id: u64, elements: &[&str]) -> Entry {
        let elements = elements.iter().map(|e| Element::Probe(e.to_string())).collect();
        Entry {
            id,
            scenario: "membership_churn".into(),
            seed: id,
            schedule: FaultSchedule::default(),
            how: vec!["seed".into()],
            parent: None,
            signature: Signature { elements },
            found: Vec::new(),
            frontier_ms: None,
            moments: Vec::new(),
        }
    }

    fn tmp(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("groupsim-corpus-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn a_corpus_round_trips_and_resumes_only_for_its_own_search() {
        let dir = tmp("round-trip");
        let mut c = corpus();
        c.entries.push(entry(0, &["a"]));
        c.runs = 3;
        c.reached = vec![(Element::Probe("a".into()), 3)];
        c.write(&dir).expect("writes");
        assert_eq!(Corpus::read(&dir, &corpus()).expect("reads"), Some(c.clone()));

        let other = crate::scenarios::find("swarm").expect("in catalogue");
        let theirs = Corpus::new(&[other], &RunOptions::default());
        let e = Corpus::read(&dir, &theirs).expect_err("another search's corpus");
        assert!(e.to_string().contains("[membership_churn]"), "{e}");
        assert!(e.to_string().contains("[swarm]"), "{e}");

        let mut rebuilt = corpus();
        rebuilt.fingerprint = "0123456789abcdef".into();
        let e = Corpus::read(&dir, &rebuilt).expect_err("another build's corpus");
        assert!(e.to_string().contains("another build"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_corrupt_corpus_is_a_named_error_and_stays_on_disk() {
        let dir = tmp("corrupt");
        std::fs::create_dir_all(&dir).unwrap();
        for (text, says) in [
            ("{not json", "corrupt"),
            ("{\"groupsim_corpus\": 99}", "format 99"),
            ("{\"entries\": []}", "no groupsim_corpus"),
            ("{\"groupsim_corpus\": 1, \"entries\": 3}", "corrupt"),
        ] {
            std::fs::write(dir.join(FILE), text).unwrap();
            let e = Corpus::read(&dir, &corpus()).expect_err(text);
            assert!(e.to_string().contains(says), "{text}: {e}");
            assert_eq!(std::fs::read_to_string(dir.join(FILE)).unwrap(), text, "left as it was");
        }
        assert_eq!(Corpus::read(&tmp("empty"), &corpus()).expect("no corpus yet"), None);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn merging_keeps_what_adds_something_and_sums_the_counts() {
        let mut a = corpus();
        a.entries = vec![entry(0, &["a"]), entry(1, &["a", "b"])];
        a.reached = vec![(Element::Probe("a".into()), 5), (Element::Probe("b".into()), 1)];
        a.rounds = 4;
        let mut b = corpus();
        b.entries = vec![entry(0, &["b"]), entry(1, &["c"])];
        b.reached = vec![(Element::Probe("b".into()), 2), (Element::Probe("c".into()), 1)];
        b.rounds = 6;
        let m = Corpus::merge(vec![a, b.clone()]).expect("same search");
        let kept: Vec<&Signature> = m.entries.iter().map(|e| &e.signature).collect();
        assert_eq!(kept.len(), 3, "b's first entry adds nothing: {kept:?}");
        assert_eq!(m.entries.iter().map(|e| e.id).collect::<Vec<_>>(), [0, 1, 2]);
        assert_eq!(m.coverage().reached[&Element::Probe("b".into())], 3);
        assert_eq!(m.rounds, 6);

        let mut other = b;
        other.scenarios = vec!["swarm".into()];
        assert!(Corpus::merge(vec![m, other]).expect_err("another search").contains("swarm"));
        assert!(Corpus::merge(Vec::new()).is_err());
    }
}
