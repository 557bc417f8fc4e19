//! Running scenarios: one seed to a verdict, many seeds to a table, and the reports a person
//! reads when a seed fails (with the one command that replays it bit for bit).

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::PathBuf;

use groupsim_history::History;
use groupsim_wire::probe::{self, ProbeHits};
use serde::{Deserialize, Serialize};

use crate::bugs::BugSwitch;
use crate::faults::FaultSchedule;
use crate::respec::RespecError;
use crate::scenario::{Scenario, ScenarioSpec};
use crate::world::{self, WorldError};
use groupsim_checker::{AnomalyClass, Verdict};

/// Everything one seed produced.
#[derive(Clone, Debug)]
pub struct RunReport {
    /// The drawn scenario.
    pub spec: ScenarioSpec,
    /// The recorded history.
    pub history: History,
    /// The checker's verdict.
    pub verdict: Verdict,
    /// SHA-256 of the history, computed when first asked ([`Self::history_hash`]): a sweep
    /// that prints no hash does not pay for it.
    history_hash: std::sync::OnceLock<String>,
    /// CLI arguments that reproduce the run's options (e.g. ` --bug <name>`).
    pub extra_args: String,
    /// Coverage probes hit during the run, with counts (kept outside the history).
    pub probes: ProbeHits,
}

/// Which world simulates a run: the event world (the default), which drives the sans-IO cores
/// from one event queue and jumps time to the next due event (see [`crate::world::event`]), or
/// turmoil's fixed 5 ms steps of every host over its simulated TCP, kept for fidelity runs. The
/// two give different histories for one seed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum WorldKind {
    /// The turmoil world ([`crate::world::turmoil`]).
    Turmoil,
    /// The event world ([`crate::world::event`]).
    #[default]
    Event,
}

impl WorldKind {
    /// The name on the command line (`--world <name>`).
    pub fn name(self) -> &'static str {
        match self {
            WorldKind::Turmoil => "turmoil",
            WorldKind::Event => "event",
        }
    }

    /// Runs `spec` in this world (a panic inside the run is [`WorldError::Panicked`]).
    pub fn run(self, spec: &ScenarioSpec) -> Result<History, WorldError> {
        caught(|| match self {
            WorldKind::Turmoil => world::turmoil::run(spec),
            WorldKind::Event => world::event::run(spec),
        })
    }

    /// Runs `spec` in this world: the history and the checker that read it as it grew (a panic
    /// inside the run is [`WorldError::Panicked`]).
    pub fn run_watched(
        self,
        spec: &ScenarioSpec,
    ) -> Result<(History, groupsim_checker::LivenessWatch), WorldError> {
        caught(|| match self {
            WorldKind::Turmoil => world::turmoil::run_watched(spec),
            WorldKind::Event => world::event::run_watched(spec),
        })
    }

    /// ` --world <name>` for replay commands; nothing for the default world.
    pub fn arg(self) -> String {
        match self {
            WorldKind::Event => String::new(),
            world => format!(" --world {}", world.name()),
        }
    }
}

/// Variations on a scenario's drawn run.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// A bug switch to turn on.
    pub bug: Option<BugSwitch>,
    /// A fault schedule to use instead of the drawn one (replay of a shrunk schedule).
    pub schedule: Option<FaultSchedule>,
    /// Drop the schedule's event triggers, keeping its timed faults: what the timed faults
    /// alone reach (`--no-triggers`).
    pub no_triggers: bool,
    /// The world that simulates the run (`--world`).
    pub world: WorldKind,
}

impl RunOptions {
    /// The scenario drawn for `seed`, with these options applied; the schedule's spec edits
    /// are left out if the drawn run cannot take them ([`Self::try_spec`] refuses them).
    pub fn spec(&self, scenario: &Scenario, seed: u64) -> ScenarioSpec {
        let mut spec = self.drawn(scenario, seed);
        if let Some(schedule) = &self.schedule {
            let _ = spec.respec(&schedule.spec);
        }
        spec
    }

    /// [`Self::spec`], refusing a schedule whose spec edits the drawn run cannot take.
    pub fn try_spec(&self, scenario: &Scenario, seed: u64) -> Result<ScenarioSpec, RespecError> {
        let mut spec = self.drawn(scenario, seed);
        if let Some(schedule) = &self.schedule {
            spec.respec(&schedule.spec)?;
        }
        Ok(spec)
    }

    /// The scenario drawn for `seed` with the bug switch, the schedule (its spec edits not yet
    /// applied) and `--no-triggers`.
    fn drawn(&self, scenario: &Scenario, seed: u64) -> ScenarioSpec {
        let mut spec = scenario.build(seed);
        if let Some(bug) = &self.bug {
            bug.apply(&mut spec);
        }
        if let Some(schedule) = &self.schedule {
            spec.faults = schedule.clone();
        }
        if self.no_triggers {
            spec.faults.triggers.clear();
        }
        spec
    }

    /// The command-line arguments that give these options (`--bug`, `--no-triggers` and
    /// `--world`), for replay commands; a schedule is named `<file>`.
    pub fn args(&self) -> String {
        let args = option_args(
            self.bug.as_ref().map(|b| b.name),
            self.no_triggers,
            self.schedule.is_some(),
        );
        args + &self.world.arg()
    }
}

/// The command-line arguments for a bug switch, `--no-triggers` and a schedule (named `<file>`),
/// each with a leading space: what replay commands append.
pub fn option_args(bug: Option<&str>, no_triggers: bool, schedule: bool) -> String {
    let mut args = String::new();
    if let Some(bug) = bug {
        args.push_str(&format!(" --bug {bug}"));
    }
    if no_triggers {
        args.push_str(" --no-triggers");
    }
    if schedule {
        args.push_str(" --schedule <file>");
    }
    args
}

/// Runs `scenario` with `seed` and checks the history.
pub fn run_seed(scenario: &Scenario, seed: u64) -> Result<RunReport, WorldError> {
    run_seed_with(scenario, seed, &RunOptions::default())
}

/// Runs `scenario` with `seed` and `options` and checks the history.
pub fn run_seed_with(
    scenario: &Scenario,
    seed: u64,
    options: &RunOptions,
) -> Result<RunReport, WorldError> {
    let spec = options.try_spec(scenario, seed).map_err(|e| WorldError::InvalidScenario {
        name: scenario.name.to_string(),
        reason: e.to_string(),
    })?;
    let mut report = run_spec_in(spec, options.world)?;
    report.extra_args = options.args();
    Ok(report)
}

/// Runs a fully drawn spec in the default world and checks the history.
pub fn run_spec(spec: ScenarioSpec) -> Result<RunReport, WorldError> {
    run_spec_in(spec, WorldKind::default())
}

/// Runs a fully drawn spec in `world` and checks the history.
pub fn run_spec_in(spec: ScenarioSpec, world: WorldKind) -> Result<RunReport, WorldError> {
    let (finished, probes) = probe::record(|| world.run_watched(&spec));
    let (history, watch) = finished?;
    // The same verdict `groupsim_checker::check` gives, without reading the events twice.
    let verdict = caught(|| Ok(watch.finish(&history)))?;
    let history_hash = std::sync::OnceLock::new();
    let extra_args = String::new();
    Ok(RunReport { spec, history, verdict, history_hash, extra_args, probes })
}

/// `run`'s outcome, a panic inside it made [`WorldError::Panicked`] ([`crate::panics`]).
fn caught<T>(run: impl FnOnce() -> Result<T, WorldError>) -> Result<T, WorldError> {
    crate::panics::catching(run).unwrap_or_else(|message| Err(WorldError::Panicked { message }))
}

/// The CLI command that replays a seed.
pub fn replay_command(scenario: &str, seed: u64) -> String {
    format!("cargo run --release -- replay {scenario} --seed {seed}")
}

/// The test command that replays a seed.
pub fn test_replay_command(scenario: &str, seed: u64) -> String {
    format!("GROUPSIM_SEED={seed} cargo test -p groupsim-scenarios --test {scenario}")
}

impl RunReport {
    /// SHA-256 of the history's JSONL (same seed and binary: same hash).
    pub fn history_hash(&self) -> &str {
        self.history_hash.get_or_init(|| self.history.hash_hex())
    }

    /// Simulated duration of the run.
    pub fn simulated_ms(&self) -> u64 {
        self.history.events().last().map_or(0, |e| e.at_ms)
    }

    /// A short summary: verdict, figures and the history hash.
    pub fn summary(&self) -> String {
        let s = &self.verdict.stats;
        let mut out = String::new();
        let verdict = if self.verdict.is_ok() {
            "PASS".to_string()
        } else {
            format!("FAIL ({} anomalies)", self.verdict.anomalies.len())
        };
        let _ = writeln!(
            out,
            "scenario: {}  seed: {}  verdict: {verdict}",
            self.spec.name, self.spec.seed
        );
        let _ = writeln!(
            out,
            "simulated: {} ms  events: {}  members: {}  partitions: {}",
            self.simulated_ms(),
            self.history.len(),
            self.spec.members.len(),
            self.spec.topics.iter().map(|t| t.1).sum::<i32>()
        );
        let _ = writeln!(
            out,
            "rebalances: {}  commits accepted/rejected: {}/{}  produced: {}  processed: {} (reprocessed {})  max unowned: {} ms",
            s.rebalances, s.commits_accepted, s.commits_rejected, s.records_produced,
            s.records_processed, s.records_reprocessed, s.max_unowned_ms
        );
        if let Some(swarm) = &self.spec.swarm {
            let _ = writeln!(
                out,
                "swarm: {}  faults scheduled: {}",
                swarm.describe(),
                self.spec.faults.faults.len()
            );
        }
        for t in &self.spec.faults.triggers {
            let _ = writeln!(out, "trigger: {t}");
        }
        for (class, n) in self.verdict.counts() {
            let _ = writeln!(out, "anomaly {class}: {n}");
        }
        let mut hazards: Vec<_> = self.verdict.hazards.iter().map(|e| e.hazard).collect();
        hazards.sort();
        hazards.dedup();
        for hazard in hazards {
            let explained: Vec<String> = (self.verdict.hazards.iter())
                .filter(|e| e.hazard == hazard)
                .map(|e| {
                    let a = &e.anomaly;
                    let on = a.partition.as_ref().map(|p| format!(" {p}")).unwrap_or_default();
                    format!("{}{on} t={}", a.class, a.at_ms)
                })
                .collect();
            let _ = writeln!(
                out,
                "hazard {hazard} (not a failure: {}): explains {}",
                hazard.why(),
                explained.join(", ")
            );
        }
        let _ = writeln!(out, "history-hash: {}", self.history_hash());
        let _ = writeln!(out, "wire-hash: {}", self.history.wire_hash_hex());
        out
    }

    /// The failure report: [`Self::failure_details`], then the replay commands.
    pub fn failure_report(&self) -> String {
        let mut out = self.failure_details();
        let _ = writeln!(
            out,
            "replay: {}{}",
            replay_command(&self.spec.name, self.spec.seed),
            self.extra_args
        );
        let _ = writeln!(
            out,
            "replay as a test: {}",
            test_replay_command(&self.spec.name, self.spec.seed)
        );
        out
    }

    /// What failed: scenario, seed, swarm choice, fault schedule, first anomaly with its events,
    /// and every anomaly class with its count.
    pub fn failure_details(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "scenario {} failed with seed {}", self.spec.name, self.spec.seed);
        if let Some(swarm) = &self.spec.swarm {
            let _ = writeln!(out, "swarm: {}", swarm.describe());
        }
        if !self.spec.faults.faults.is_empty() {
            let _ = writeln!(out, "fault schedule ({} faults):", self.spec.faults.faults.len());
            for f in &self.spec.faults.faults {
                let _ = writeln!(out, "    t={}ms {}", f.at_ms, f.fault);
            }
        }
        if !self.spec.faults.triggers.is_empty() {
            let _ = writeln!(out, "triggers ({}):", self.spec.faults.triggers.len());
            for t in &self.spec.faults.triggers {
                let _ = writeln!(out, "    {t}");
            }
        }
        if let Some(a) = self.verdict.first() {
            let _ = write!(out, "first anomaly: {}", a.render(&self.history));
        }
        let counts: Vec<String> =
            self.verdict.counts().iter().map(|(c, n)| format!("{c}={n}")).collect();
        let _ = writeln!(out, "all anomalies: {}", counts.join(" "));
        out
    }

    /// Writes the history (JSON lines), the text trace and the fault schedule (JSON) under
    /// `target/groupsim/` and returns the history's path.
    pub fn save_history(&self) -> std::io::Result<PathBuf> {
        let dir = output_dir();
        std::fs::create_dir_all(&dir)?;
        let stem = format!("{}-{}", self.spec.name, self.spec.seed);
        let path = dir.join(format!("{stem}.history.jsonl"));
        std::fs::write(&path, self.history.to_jsonl())?;
        std::fs::write(dir.join(format!("{stem}.trace.txt")), crate::trace::text(&self.history))?;
        std::fs::write(dir.join(format!("{stem}.schedule.json")), self.spec.faults.to_json())?;
        Ok(path)
    }
}

/// Where reports go: `$CARGO_TARGET_DIR/groupsim` or `target/groupsim` under the workspace.
pub fn output_dir() -> PathBuf {
    if let Ok(dir) = std::env::var("CARGO_TARGET_DIR") {
        return PathBuf::from(dir).join("groupsim");
    }
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let workspace = manifest.parent().map(PathBuf::from).unwrap_or(manifest);
    workspace.join("target").join("groupsim")
}

/// One seed's line in a sweep.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SeedResult {
    /// The seed.
    pub seed: u64,
    /// Whether it passed.
    pub ok: bool,
    /// First anomaly class, if any.
    pub first_anomaly: Option<AnomalyClass>,
    /// Every class the run broke, each once, in the order first found (a failing seed may
    /// break an answer rule and a history rule at once; campaigns that ask which rules catch a
    /// change read this).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub anomalies: Vec<AnomalyClass>,
    /// Harness error, if the run could not be carried out.
    pub error: Option<String>,
    /// History hash (empty when the sweep did not ask for it: only `--json` and
    /// `--check-determinism` do).
    pub history_hash: String,
    /// The wire stream's hash, when a determinism check asked for it (not in sweep files).
    #[serde(skip)]
    pub wire_hash: String,
    /// Simulated milliseconds.
    pub simulated_ms: u64,
    /// Rebalances in the run.
    pub rebalances: u64,
    /// The probes the run hit (family members as `name:detail`).
    #[serde(skip)]
    pub probes: BTreeSet<String>,
    /// Anomalies a hazard Kafka allows explains (not failures).
    #[serde(default)]
    pub hazards: usize,
}

impl SeedResult {
    /// Condenses a run (or its harness error) to a sweep line, with its history hash.
    pub fn from_run(seed: u64, run: &Result<RunReport, WorldError>) -> Self {
        let mut r = Self::unhashed(seed, run);
        if let Ok(run) = run {
            r.history_hash = run.history_hash().to_string();
        }
        r
    }

    /// [`Self::from_run`] without the history hash (the hash is a share of a run's cost).
    pub fn unhashed(seed: u64, run: &Result<RunReport, WorldError>) -> Self {
        match run {
            Ok(r) => SeedResult {
                seed,
                ok: r.verdict.is_ok(),
                first_anomaly: r.verdict.first().map(|a| a.class),
                anomalies: distinct_classes(&r.verdict.anomalies),
                error: None,
                history_hash: String::new(),
                wire_hash: String::new(),
                simulated_ms: r.simulated_ms(),
                rebalances: r.verdict.stats.rebalances,
                probes: r.probes.keys().cloned().collect(),
                hazards: r.verdict.hazards.len(),
            },
            Err(e) => SeedResult {
                seed,
                ok: false,
                first_anomaly: None,
                anomalies: Vec::new(),
                error: Some(e.to_string()),
                history_hash: String::new(),
                wire_hash: String::new(),
                simulated_ms: 0,
                rebalances: 0,
                probes: BTreeSet::new(),
                hazards: 0,
            },
        }
    }
}

/// The classes of `anomalies`, each once, in the order first found.
fn distinct_classes(anomalies: &[groupsim_checker::Anomaly]) -> Vec<AnomalyClass> {
    let mut classes: Vec<AnomalyClass> = Vec::new();
    for a in anomalies {
        if !classes.contains(&a.class) {
            classes.push(a.class);
        }
    }
    classes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_triggers_drops_the_triggers_and_keeps_the_timed_faults() {
        let swarm = crate::scenarios::find("swarm").expect("in catalogue");
        let seed = (0..20)
            .find(|&s| !swarm.build(s).faults.triggers.is_empty())
            .expect("some swarm seed draws triggers");
        let drawn = RunOptions::default().spec(&swarm, seed);
        let options = RunOptions { no_triggers: true, ..RunOptions::default() };
        let without = options.spec(&swarm, seed);
        assert!(without.faults.triggers.is_empty());
        assert_eq!(without.faults.faults, drawn.faults.faults);
        assert_eq!(options.args(), " --no-triggers");
    }

    #[test]
    fn a_seed_line_names_each_class_broken_once_in_the_order_found() {
        use groupsim_checker::Anomaly;
        let at = |class, ms| Anomaly::new(class, None, ms, String::new(), vec![]);
        let found = [
            at(AnomalyClass::AnswerLiveMemberFenced, 10),
            at(AnomalyClass::StalledMember, 20),
            at(AnomalyClass::AnswerLiveMemberFenced, 30),
            at(AnomalyClass::Stuck, 40),
        ];
        assert_eq!(
            distinct_classes(&found),
            [
                AnomalyClass::AnswerLiveMemberFenced,
                AnomalyClass::StalledMember,
                AnomalyClass::Stuck
            ]
        );
        let passing = crate::sweep::tests::result(3, true, 0);
        let json = serde_json::to_string(&passing).unwrap();
        assert!(!json.contains("anomalies"), "a passing seed's line is as before: {json}");
        let back: SeedResult = serde_json::from_str(&json).unwrap();
        assert!(back.anomalies.is_empty());
    }
}
