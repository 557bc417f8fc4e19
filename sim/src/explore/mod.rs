//! `groupsim explore`: a coverage-guided search for the schedules that break rebalancing.
//!
//! A sweep draws every seed's faults blindly. The search keeps the runs that reached something
//! no earlier run had — a probe, a coordinator answer, a member's step (see
//! [`crate::signature`]) — and spends most of its runs on mutations of those
//! ([`mutate`]), favouring the entries that hold the rarest elements, as greybox fuzzers do with
//! inputs. Its runs are ordinary runs: a schedule replaces the drawn one, as `run --schedule`
//! does, so every finding replays from one command.
//!
//! Deterministic: the search goes in rounds of [`ROUND`] runs; a round's candidates are drawn
//! from the search seed, the round's number and the corpus, then run on any number of threads,
//! and their results taken in candidate order. The same arguments give the same corpus and the
//! same findings, whatever `--jobs`; a search resumed from its corpus continues as if it had
//! never stopped (a time budget only decides how many rounds run).

pub mod corpus;
pub mod mutate;
pub mod respec;
pub mod versus;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::RwLock;
use std::time::Instant;

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::bench::thread_cpu_s;
use crate::faults::FaultSchedule;
use crate::runner::{self, RunOptions, RunReport};
use crate::scenario::Scenario;
use crate::signature::{Coverage, Element, Signature};
use crate::sweep::Shard;
use crate::threads::with_workers;
use crate::world::WorldError;
use corpus::{ArmStats, Corpus, Entry};
use groupsim_checker::AnomalyClass;
use groupsim_wire::Millis;
use mutate::{Material, Mutation, Shape, Vocabulary};
use respec::{SpecMutation, SpecRanges};

/// Runs per round: candidates are drawn a round at a time, from the corpus as the round found it.
pub const ROUND: u64 = 16;

/// Each way of making a candidate keeps at least this share of the runs, in thousandths, however
/// little it has paid lately: a way that stopped paying is still tried now and then.
const FLOOR_PER_MILLE: u64 = 100;

/// Fresh seeds keep at least this share: the sweep's own order goes on beside the mutations, so
/// a search meets what the blind order meets at no worse than about half its pace.
const FRESH_FLOOR_PER_MILLE: u64 = 500;

/// Most mutations stacked on one candidate.
const MAX_STACK: u32 = 8;

/// How the search spends its runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// Coverage-guided: mutate corpus entries, favouring rare elements.
    Guided,
    /// Blind: fresh seeds only, the scenarios in turn (what a sweep does), for comparison.
    Blind,
}

/// What a search runs and how long.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The scenarios searched.
    pub scenarios: Vec<Scenario>,
    /// Bug switch, world and `--no-triggers` (the schedule is the search's).
    pub options: RunOptions,
    /// Most runs (with a time budget, whichever ends first).
    pub runs: Option<u64>,
    /// Most wall-clock minutes (checked between rounds).
    pub minutes: Option<f64>,
    /// Threads.
    pub jobs: usize,
    /// The search's own seed.
    pub seed: u64,
    /// The first fresh seed of every scenario (`sweep --start`): searches from different starts
    /// meet different drawn seeds, which is how runs-to-catch is sampled fairly.
    pub start: u64,
    /// This machine's share of a search spread over several (fresh seeds interleaved, draws of
    /// their own); `merge` the corpora after.
    pub shard: Option<Shard>,
    /// Where failing schedules (and their shrunk forms) are written.
    pub findings_dir: PathBuf,
    /// Shrink the first failing run of each scenario and anomaly class.
    pub shrink: bool,
    /// Stop at the first run whose anomalies the bug switch expects (runs-to-catch).
    pub stop_at_catch: bool,
    /// Guided or blind.
    pub strategy: Strategy,
    /// Mutate what a seed draws beyond its schedule too ([`respec`]): its operators share the
    /// reseed's turn among the schedule's operators.
    pub respec: bool,
}

/// What is wrong with a search's arguments or state.
#[derive(Debug, thiserror::Error)]
pub enum ExploreError {
    /// No budget, or a zero one.
    #[error("explore needs a budget: --runs N (N >= 1) or --minutes M (M > 0)")]
    NoBudget,
    /// No scenario.
    #[error("explore needs at least one scenario")]
    NoScenario,
    /// `--jobs 0`.
    #[error("--jobs must be at least 1")]
    NoJobs,
    /// The corpus folder.
    #[error(transparent)]
    Corpus(#[from] corpus::CorpusError),
    /// Writing a finding.
    #[error("writing {path}: {source}")]
    Write { path: PathBuf, source: std::io::Error },
    /// Shrinking a finding.
    #[error("shrinking {scenario} seed {seed}: {source}")]
    Shrink { scenario: String, seed: u64, source: WorldError },
}

/// A failing run the search found.
#[derive(Clone, Debug)]
pub struct Finding {
    /// The run's number in the search (1 for the first).
    pub run: u64,
    /// The scenario.
    pub scenario: String,
    /// The seed.
    pub seed: u64,
    /// The first anomaly's class, or `None` for a run the harness could not carry out.
    pub class: Option<AnomalyClass>,
    /// The harness error, for such a run.
    pub error: Option<String>,
    /// The failing schedule's file.
    pub schedule: PathBuf,
    /// The shrunk schedule's file and its size, when shrunk.
    pub shrunk: Option<(PathBuf, usize)>,
    /// The command that replays it.
    pub replay: String,
    /// How many more failing runs of the same scenario and class followed.
    pub repeats: u64,
    /// How the failing run's schedule was made: `seed` for a scenario's own draw, else the
    /// mutations applied to its parent, in order.
    pub how: Vec<String>,
    /// The corpus entry it was mutated from (`None` for a seed's own draw).
    pub parent: Option<u64>,
}

/// The search's progress after a round.
#[derive(Clone, Debug, Default)]
pub struct Progress {
    /// Runs done (in this search, resumed ones included).
    pub runs: u64,
    /// Corpus entries.
    pub corpus: usize,
    /// Distinct elements reached.
    pub elements: usize,
    /// Elements the last round reached first.
    pub new_elements: usize,
    /// Distinct findings.
    pub findings: usize,
    /// Runs per wall second in this process.
    pub runs_per_s: f64,
}

impl std::fmt::Display for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "runs {:>6}  corpus {:>5}  elements {:>5} (+{})  findings {}  {:.1} runs/s",
            self.runs,
            self.corpus,
            self.elements,
            self.new_elements,
            self.findings,
            self.runs_per_s
        )
    }
}

/// What a search did.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The corpus at the end (to write back).
    pub corpus: Corpus,
    /// The distinct findings, in the order found.
    pub findings: Vec<Finding>,
    /// Distinct elements after each run of this process (the growth curve).
    pub growth: Vec<usize>,
    /// CPU seconds the runs took (their threads' own time).
    pub cpu_s: f64,
    /// Runs this process did.
    pub runs: u64,
    /// The run at which the bug switch was first caught (its expected classes), if it was.
    pub caught_at: Option<u64>,
    /// How the catching run's schedule was made (as [`Finding::how`]).
    pub caught_by: Vec<String>,
    /// Whether it stopped on a signal before its budget was spent.
    pub interrupted: bool,
}

/// The ways a candidate is made; the search shares its runs among them by what each has paid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Arm {
    /// A fresh seed of a scenario, its schedule as drawn.
    Fresh = 0,
    /// A corpus entry's schedule mutated anywhere (or its seed changed).
    Whole = 1,
    /// A corpus entry's schedule mutated after the instant it reached something new.
    Suffix = 2,
}

impl Arm {
    const ALL: [Arm; 3] = [Arm::Fresh, Arm::Whole, Arm::Suffix];
}

/// One run to do.
#[derive(Clone, Debug)]
struct Candidate {
    arm: Arm,
    scenario: usize,
    seed: u64,
    schedule: FaultSchedule,
    how: Vec<String>,
    parent: Option<u64>,
}

/// What a run gave back (its history is dropped on its thread).
struct Ran {
    signature: Signature,
    first_ms: BTreeMap<Element, Millis>,
    failure: Option<(Option<AnomalyClass>, Option<String>)>,
    caught: bool,
    report: Option<Box<RunReport>>,
    cpu_s: f64,
}

impl Ran {
    /// A run that reached nothing (the harness could not carry it out).
    fn nothing(cpu_s: f64) -> Self {
        Ran {
            signature: Signature::default(),
            first_ms: BTreeMap::new(),
            failure: None,
            caught: false,
            report: None,
            cpu_s,
        }
    }
}

/// Runs a search from `corpus` (new or resumed) until its budget is spent or `stop` is set;
/// `progress` hears after every round, `found` at every new finding.
pub fn explore(
    settings: &Settings,
    mut corpus: Corpus,
    stop: &AtomicBool,
    mut progress: impl FnMut(&Progress),
    mut found: impl FnMut(&Finding),
) -> Result<Outcome, ExploreError> {
    if settings.scenarios.is_empty() {
        return Err(ExploreError::NoScenario);
    }
    if settings.jobs == 0 {
        return Err(ExploreError::NoJobs);
    }
    let positive = |m: f64| m > 0.0 && m.is_finite();
    let budget_ok = match (settings.runs, settings.minutes) {
        (None, None) => false,
        (runs, minutes) => runs.is_none_or(|r| r > 0) && minutes.is_none_or(positive),
    };
    if !budget_ok {
        return Err(ExploreError::NoBudget);
    }
    let vocabularies: Vec<Vocabulary> =
        settings.scenarios.iter().map(|s| Vocabulary::of(s, &settings.options)).collect();
    let ranges: Vec<SpecRanges> = match settings.respec {
        true => settings.scenarios.iter().map(|s| SpecRanges::of(s, &settings.options)).collect(),
        false => vec![SpecRanges::default(); settings.scenarios.len()],
    };
    let vocabularies: Vec<(Vocabulary, SpecRanges)> =
        vocabularies.into_iter().zip(ranges).collect();
    let mut coverage = corpus.coverage();
    let mut findings: Vec<Finding> = Vec::new();
    let mut first: BTreeMap<(String, String), usize> = BTreeMap::new();
    // Wall time decides only whether another round starts (`--minutes`) and the progress
    // rate: never a candidate, a draw or a run, which come from the seed and the corpus.
    let started = Instant::now();
    let mut out_runs = 0u64;
    let mut growth = Vec::new();
    let mut cpu_s = 0.0;
    let mut caught_at = None;
    let mut caught_by = Vec::new();
    let mut interrupted = false;
    // The round's candidates, read by the workers while it runs and replaced between rounds;
    // the same threads run every round.
    let current: RwLock<Vec<Candidate>> = RwLock::new(Vec::new());
    let each = |_: usize, i: u64| {
        let candidates = current.read().unwrap_or_else(|p| p.into_inner());
        run_candidate(settings, &candidates[i as usize])
    };
    let never = AtomicBool::new(false);
    let jobs = settings.jobs.clamp(1, ROUND as usize);
    with_workers(jobs, &never, each, |workers| -> Result<(), ExploreError> {
        loop {
            if stop.load(std::sync::atomic::Ordering::SeqCst) {
                interrupted = true;
                break;
            }
            let left = settings.runs.map_or(ROUND, |r| r.saturating_sub(out_runs).min(ROUND));
            let out_of_time =
                settings.minutes.is_some_and(|m| started.elapsed().as_secs_f64() >= m * 60.0);
            if left == 0 || out_of_time || (settings.stop_at_catch && caught_at.is_some()) {
                break;
            }
            let drawn = draw_round(settings, &mut corpus, &vocabularies, &coverage, left);
            let count = drawn.len() as u64;
            *current.write().unwrap_or_else(|p| p.into_inner()) = drawn;
            let results = workers.round(0, 0..count);
            let candidates =
                std::mem::take(&mut *current.write().unwrap_or_else(|p| p.into_inner()));
            let mut new_elements = 0;
            for ((_, ran), candidate) in results.into_iter().zip(candidates) {
                out_runs += 1;
                cpu_s += ran.cpu_s;
                let new = coverage.add(&ran.signature);
                new_elements += new.len();
                corpus.arms[candidate.arm as usize].count(!new.is_empty());
                growth.push(coverage.reached.len());
                let scenario = settings.scenarios[candidate.scenario].name.to_string();
                if ran.caught && caught_at.is_none() {
                    caught_at = Some(coverage.runs);
                    caught_by.clone_from(&candidate.how);
                }
                if let Some((class, error)) = ran.failure {
                    let key = (scenario.clone(), class.map_or("error".into(), |c| c.to_string()));
                    if let Some(&i) = first.get(&key) {
                        findings[i].repeats += 1;
                    } else {
                        let finding = record_finding(
                            settings,
                            &candidate,
                            coverage.runs,
                            class,
                            error,
                            ran.report.as_deref(),
                        )?;
                        found(&finding);
                        first.insert(key, findings.len());
                        findings.push(finding);
                    }
                }
                // A failing run that reached something new joins the corpus too: under a bug switch
                // most runs fail, and the search still has to move on from them.
                if !new.is_empty() {
                    let frontier_ms = new.iter().filter_map(|e| ran.first_ms.get(e)).min().copied();
                    corpus.entries.push(Entry {
                        id: corpus.entries.len() as u64,
                        scenario,
                        seed: candidate.seed,
                        schedule: candidate.schedule,
                        how: candidate.how,
                        parent: candidate.parent,
                        signature: ran.signature,
                        found: new,
                        frontier_ms,
                        moments: moments(&ran.first_ms),
                    });
                }
                if settings.stop_at_catch && caught_at.is_some() {
                    break;
                }
            }
            corpus.rounds += 1;
            corpus.set_coverage(&coverage);
            let elapsed = started.elapsed().as_secs_f64().max(1e-9);
            progress(&Progress {
                runs: coverage.runs,
                corpus: corpus.entries.len(),
                elements: coverage.reached.len(),
                new_elements,
                findings: findings.len(),
                runs_per_s: out_runs as f64 / elapsed,
            });
        }
        Ok(())
    })?;
    Ok(Outcome {
        corpus,
        findings,
        growth,
        cpu_s,
        runs: out_runs,
        caught_at,
        caught_by,
        interrupted,
    })
}

/// The distinct instants of `first_ms`, in order: when the run first reached each of its timed
/// elements.
fn moments(first_ms: &BTreeMap<Element, Millis>) -> Vec<Millis> {
    let mut at: Vec<Millis> = first_ms.values().copied().collect();
    at.sort_unstable();
    at.dedup();
    at
}

/// The first fresh seed of this machine's share and the stride between its fresh seeds.
fn seed_stride(settings: &Settings) -> (u64, u64) {
    let (offset, stride) = settings.shard.map_or((0, 1), |s| (s.index - 1, s.count));
    (settings.start.saturating_add(offset), stride)
}

/// Takes the next fresh seed of scenario `name`. Seeds wrap past `u64::MAX` to 0, as a sweep
/// started near the top of the range would have to: a start is any seed a user printed.
fn fresh_seed(corpus: &mut Corpus, name: &str, settings: &Settings) -> u64 {
    let (first, stride) = seed_stride(settings);
    let next = corpus.next_seed.entry(name.to_string()).or_insert(first);
    let seed = *next;
    *next = next.wrapping_add(stride);
    seed
}

/// The candidates of the next round (at most `count`).
fn draw_round(
    settings: &Settings,
    corpus: &mut Corpus,
    vocabularies: &[(Vocabulary, SpecRanges)],
    coverage: &Coverage,
    count: u64,
) -> Vec<Candidate> {
    let shard_salt = settings.shard.map_or(0, |s| s.index << 32 | s.count);
    let stream = settings.seed ^ shard_salt.rotate_left(17);
    let mut rng = ChaCha8Rng::seed_from_u64(stream);
    rng.set_stream(corpus.rounds);
    let weights: Vec<u64> = corpus.entries.iter().map(|e| weight(coverage, &e.signature)).collect();
    let shares = arm_shares(&corpus.arms);
    (0..count)
        .map(|_| {
            let arm = if settings.strategy == Strategy::Blind
                || corpus.entries.is_empty()
                || unseeded(settings, corpus).is_some()
            {
                Arm::Fresh
            } else {
                mutate::pick_weighted(&shares, &mut rng).map_or(Arm::Fresh, |i| Arm::ALL[i])
            };
            if arm != Arm::Fresh {
                if let Some(c) = mutant(settings, corpus, vocabularies, &weights, arm, &mut rng) {
                    return c;
                }
            }
            fresh_candidate(settings, corpus)
        })
        .collect()
}

/// Each arm's share of the next round (thousandths of the whole): its pay — the share of its
/// recent runs that reached something new, counted as one success in two tries before it has
/// any — with a floor of [`FLOOR_PER_MILLE`] each.
fn arm_shares(arms: &[ArmStats; 3]) -> [u64; 3] {
    let pay: Vec<f64> =
        arms.iter().map(|a| (a.paid as f64 + 1.0) / (a.runs as f64 + 2.0)).collect();
    let total: f64 = pay.iter().sum();
    let floors = [FRESH_FLOOR_PER_MILLE, FLOOR_PER_MILLE, FLOOR_PER_MILLE];
    let free = 1_000 - floors.iter().sum::<u64>();
    let mut shares = [0u64; 3];
    for (i, p) in pay.iter().enumerate() {
        shares[i] = floors[i] + (free as f64 * p / total).round() as u64;
    }
    shares
}

/// A scenario with no fresh seed run yet, if any (each gets one before mutations start).
fn unseeded(settings: &Settings, corpus: &Corpus) -> Option<usize> {
    settings.scenarios.iter().position(|s| !corpus.next_seed.contains_key(s.name))
}

/// The next fresh seed of the scenario that had the fewest, with its drawn schedule.
fn fresh_candidate(settings: &Settings, corpus: &mut Corpus) -> Candidate {
    let (first, _) = seed_stride(settings);
    let scenario = unseeded(settings, corpus).unwrap_or_else(|| {
        let used = |s: &Scenario| corpus.next_seed.get(s.name).copied().unwrap_or(first);
        (0..settings.scenarios.len())
            .min_by_key(|&i| (used(&settings.scenarios[i]), i))
            .unwrap_or(0)
    });
    let s = &settings.scenarios[scenario];
    let seed = fresh_seed(corpus, s.name, settings);
    let schedule = settings.options.spec(s, seed).faults;
    Candidate { arm: Arm::Fresh, scenario, seed, schedule, how: vec!["seed".into()], parent: None }
}

/// An entry's draw weight: higher the rarer its rarest element.
fn weight(coverage: &Coverage, signature: &Signature) -> u64 {
    let rarest = coverage.rarest(signature).max(1);
    (1_000_000 / rarest).max(1)
}

/// A mutation of a corpus entry drawn by weight; `None` when no operator applies to it.
fn mutant(
    settings: &Settings,
    corpus: &mut Corpus,
    vocabularies: &[(Vocabulary, SpecRanges)],
    weights: &[u64],
    arm: Arm,
    rng: &mut ChaCha8Rng,
) -> Option<Candidate> {
    // A suffix mutation needs a parent that reached something at a known instant.
    let usable = |i: usize| arm != Arm::Suffix || corpus.entries[i].frontier_ms.is_some();
    let weights: Vec<u64> =
        weights.iter().enumerate().map(|(i, &w)| if usable(i) { w } else { 0 }).collect();
    let parent = mutate::pick_weighted(&weights, rng)?;
    let entry = corpus.entries[parent].clone();
    let scenario = settings.scenarios.iter().position(|s| s.name == entry.scenario)?;
    let s = &settings.scenarios[scenario];
    let (vocabulary, ranges) = &vocabularies[scenario];
    let mut seed = entry.seed;
    let mut schedule = entry.schedule.clone();
    let mut how = Vec::new();
    // Most mutations of an entry that reached something at a known instant keep its run up to
    // that instant and change only what follows (the seed kept).
    let from_ms = match (arm, entry.frontier_ms) {
        (Arm::Suffix, Some(at)) => {
            how.push(format!("after t={at}ms:"));
            at
        }
        (Arm::Suffix, None) => return None,
        _ => 0,
    };
    let prefix = how.len() as u32;
    let stack = rng.random_range(1..=MAX_STACK);
    for _ in 0..stack * 4 {
        if how.len() as u32 == prefix + stack {
            break;
        }
        let mutation = Mutation::ALL[rng.random_range(0..Mutation::ALL.len())];
        // With spec mutations on, they share the reseed's turn (each of them and the reseed
        // alike), so the schedule's own operators keep their share of the draws.
        let spec_op = match settings.respec && mutation == Mutation::Reseed {
            true => SpecMutation::ALL.get(rng.random_range(0..=SpecMutation::ALL.len())),
            false => None,
        };
        if let Some(&op) = spec_op {
            let drawn = settings.options.spec(s, seed);
            if let Some(next) = respec::apply(op, &schedule, &drawn, ranges, from_ms, rng) {
                schedule = next;
                how.push(op.name().to_string());
            }
            continue;
        }
        if mutation == Mutation::Reseed && from_ms > 0 {
            continue;
        }
        if mutation == Mutation::Reseed {
            seed = fresh_seed(corpus, s.name, settings);
            how.push(mutation.name().to_string());
            continue;
        }
        let spec = settings.options.spec(s, seed);
        let others: Vec<usize> = (0..corpus.entries.len())
            .filter(|&i| i != parent && corpus.entries[i].scenario == entry.scenario)
            .collect();
        let other = (!others.is_empty())
            .then(|| &corpus.entries[others[rng.random_range(0..others.len())]].schedule);
        // The parent's moments hold only while its seed does.
        let moments: &[Millis] = if seed == entry.seed { &entry.moments } else { &[] };
        let material = Material { other, moments };
        if let Some(next) = mutate::apply(
            mutation,
            &schedule,
            &Shape::of(&spec),
            vocabulary,
            material,
            from_ms,
            rng,
        ) {
            schedule = next;
            how.push(mutation.name().to_string());
        }
    }
    let spec = settings.options.spec(s, seed);
    if !schedule.spec.is_empty() {
        // Another seed may not take every edit (a leave of a member it keeps).
        schedule.spec = respec::fitting(&schedule.spec, &spec);
    }
    if how.len() as u32 == prefix || !mutate::fits(&schedule, &Shape::of(&spec)) {
        return None;
    }
    let arm = if from_ms > 0 { Arm::Suffix } else { Arm::Whole };
    Some(Candidate { arm, scenario, seed, schedule, how, parent: Some(entry.id) })
}

/// Runs one candidate on the calling thread and condenses it.
fn run_candidate(settings: &Settings, c: &Candidate) -> Ran {
    let scenario = &settings.scenarios[c.scenario];
    let options = RunOptions { schedule: Some(c.schedule.clone()), ..settings.options.clone() };
    let before = thread_cpu_s();
    let run = runner::run_seed_with(scenario, c.seed, &options);
    let cpu_s = match (before, thread_cpu_s()) {
        (Some(a), Some(b)) => b - a,
        _ => 0.0,
    };
    match run {
        Ok(report) => {
            let (signature, first_ms) = Signature::timed(&report.probes, &report.history);
            let classes: Vec<AnomalyClass> =
                report.verdict.anomalies.iter().map(|a| a.class).collect();
            let caught = settings.options.bug.is_some_and(|b| b.caught_by(&classes));
            if report.verdict.is_ok() {
                return Ran { signature, first_ms, failure: None, caught, report: None, cpu_s };
            }
            let class = report.verdict.first().map(|a| a.class);
            let failure = Some((class, None));
            let report = Some(Box::new(report));
            Ran { signature, first_ms, failure, caught, report, cpu_s }
        }
        Err(WorldError::InvalidScenario { .. }) => {
            // A schedule the scenario cannot take: nothing reached, nothing found.
            Ran::nothing(cpu_s)
        }
        Err(e) => Ran { failure: Some((None, Some(e.to_string()))), ..Ran::nothing(cpu_s) },
    }
}

/// Writes a failing run's schedule (and, if asked, its shrunk form) and the command that
/// replays it.
fn record_finding(
    settings: &Settings,
    c: &Candidate,
    run: u64,
    class: Option<AnomalyClass>,
    error: Option<String>,
    report: Option<&RunReport>,
) -> Result<Finding, ExploreError> {
    let scenario = settings.scenarios[c.scenario].name.to_string();
    let what = class.map_or("error".to_string(), |c| c.to_string());
    let stem = format!("{scenario}-{}-{what}", c.seed);
    let dir = &settings.findings_dir;
    let write = |path: &Path, text: String| {
        std::fs::create_dir_all(dir)
            .and_then(|()| std::fs::write(path, text))
            .map_err(|source| ExploreError::Write { path: path.to_path_buf(), source })
    };
    let schedule = dir.join(format!("{stem}.schedule.json"));
    write(&schedule, c.schedule.to_json())?;
    let mut replay_file = schedule.clone();
    let mut shrunk = None;
    if let (true, Some(class), Some(report)) = (settings.shrink, class, report) {
        let world = settings.options.world;
        let s = crate::shrink::shrink_in(&report.spec, class, world).map_err(|source| {
            ExploreError::Shrink { scenario: scenario.clone(), seed: c.seed, source }
        })?;
        let path = dir.join(format!("{stem}.min-schedule.json"));
        write(&path, s.schedule.to_json())?;
        replay_file = path.clone();
        shrunk = Some((path, s.schedule.len()));
    }
    let args = settings.options.args();
    let replay = format!(
        "cargo run --release -- run {scenario} --seed {}{args} --schedule {}",
        c.seed,
        replay_file.display()
    );
    Ok(Finding {
        run,
        scenario,
        seed: c.seed,
        class,
        error,
        schedule,
        shrunk,
        replay,
        repeats: 0,
        how: c.how.clone(),
        parent: c.parent,
    })
}

/// The elements reached, by kind, for reports: probes, answers, member steps, coordinator events.
pub fn element_counts(reached: &BTreeMap<Element, u64>) -> [usize; 4] {
    let mut counts = [0; 4];
    for e in reached.keys() {
        let i = match e.base() {
            Element::Probe(_) => 0,
            Element::Answer { .. } => 1,
            Element::MemberStep { .. } => 2,
            Element::Coordinator(_) | Element::Often { .. } => 3,
        };
        counts[i] += 1;
    }
    counts
}

#[cfg(test)]
mod tests;
