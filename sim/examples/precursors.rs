//! What a bug switch's catch needs, measured by hand: each experiment runs a scenario's seeds
//! with a switch on (and without the seeds' triggers, as the hard rows of `docs/explore.md` are
//! searched) and counts the runs the switch's anomaly fails, either as drawn, split by what the
//! draw holds, or after adding one or more faults to passing seeds. The figures of "What the
//! median row needs" in `docs/explore.md` came from it.
//!
//! ```text
//! cargo run --release -p groupsim --example precursors -- \
//!     SCENARIO SWITCH FROM SEEDS VARIANTS EXPERIMENT [PARAMETERS]
//! ```
//!
//! `SWITCH` `none` runs without one. Experiments (`VARIANTS` runs per passing seed where faults
//! are added):
//! - `holds API ERROR`: seeds as drawn, split by whether their schedule injects ERROR into API.
//! - `inject API ERROR anywhere|after-fault`: one such injection (1 to 3 answers) added to each
//!   passing seed, at an instant of the safety phase or 0.2 to 3 s after one of its own faults.
//! - `lower-commit`: seeds as drawn, split by whether a member sent an OffsetCommit lower than one
//!   it sent for that partition earlier in the same life (a near miss of offset regression).
//! - `after-assigned KIND LO HI`: one fault of KIND from the scenario's vocabulary, landing LO to
//!   HI ms (LO may be negative) after a member's `Assigned` event of the seed's own run
//!   (`after-assigned KIND anywhere`: at an instant of the safety phase).
//! - `at-moments COUNT before|after20|afterlog|anywhere`: COUNT vocabulary faults aimed at the
//!   instants the run first reached its signature's elements.
//! - `leave SPREAD_MS` and `world`: one leaving member's leave moved, or the world's draws redrawn.
//! - `denser EXTRA`: the drawn schedules of EXTRA other seeds added (the faults that fit).

use groupsim::explore::mutate::{fits, Shape, Vocabulary};
use groupsim::faults::{Fault, FaultSchedule, ScheduledFault};
use groupsim::respec::SpecEdit;
use groupsim::runner::{run_spec, RunOptions, RunReport};
use groupsim::scenario::{Scenario, ScenarioSpec};
use groupsim::signature::Signature;
use groupsim_history::{EventKind, MemberEvent, WorldEvent};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// What the program returns: a bad argument ends it with its message.
type Res<T> = Result<T, Box<dyn std::error::Error>>;

fn main() -> Res<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 6 {
        return Err("usage: SCENARIO SWITCH FROM SEEDS VARIANTS EXPERIMENT ...".into());
    }
    let scenario = groupsim::scenarios::find(&args[0])?;
    let bug = match args[1].as_str() {
        "none" => None,
        name => Some(groupsim::bugs::find(name)?),
    };
    let (from, seeds, variants): (u64, u64, u64) =
        (args[2].parse()?, args[3].parse()?, args[4].parse()?);
    let options = RunOptions { bug, no_triggers: true, ..RunOptions::default() };
    let experiment = Experiment::parse(&args[5..])?;
    let vocabulary = Vocabulary::of(&scenario, &options);
    let caught = |r: &RunReport| {
        let classes: Vec<_> = r.verdict.anomalies.iter().map(|a| a.class).collect();
        match options.bug {
            Some(b) => b.caught_by(&classes),
            None => !r.verdict.is_ok(),
        }
    };
    let (mut split, mut added) = ([(0u64, 0u64); 2], (0u64, 0u64));
    for seed in from..from + seeds {
        let spec = options.spec(&scenario, seed);
        let drawn = run_spec(spec.clone())?;
        if let Some(side) = experiment.split(&spec, &drawn) {
            split[side].0 += 1;
            split[side].1 += u64::from(caught(&drawn));
            continue;
        }
        if !drawn.verdict.is_ok() {
            continue;
        }
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        for v in 0..variants {
            let Some(variant) =
                experiment.variant(&spec, &drawn, &vocabulary, (&scenario, &options), v, &mut rng)
            else {
                continue;
            };
            added.0 += 1;
            added.1 += u64::from(caught(&run_spec(variant)?));
        }
    }
    let rate =
        |(n, c): (u64, u64)| format!("{c} of {n} ({:.1} %)", 100.0 * c as f64 / n.max(1) as f64);
    match experiment.splits() {
        true => println!("with: {}; without: {}", rate(split[0]), rate(split[1])),
        false => println!("variants of passing seeds: {}", rate(added)),
    }
    Ok(())
}

/// One experiment and its parameters.
enum Experiment {
    Holds { api: String, error: String },
    Inject { fault: Fault, after_fault: bool },
    LowerCommit,
    AfterAssigned { kind: String, window: Option<(i64, i64)> },
    AtMoments { count: usize, how: String },
    Leave { spread: u64 },
    World,
    Denser { extra: u64 },
}

impl Experiment {
    fn parse(args: &[String]) -> Res<Self> {
        let arg = |i: usize| args.get(i).cloned().ok_or("missing parameter");
        Ok(match args[0].as_str() {
            "holds" => Experiment::Holds { api: arg(1)?, error: arg(2)? },
            "inject" => Experiment::Inject {
                fault: serde_json::from_value(serde_json::json!({
                    "kind": "inject_error", "api": arg(1)?, "error": arg(2)?, "count": 1
                }))?,
                after_fault: arg(3)? == "after-fault",
            },
            "lower-commit" => Experiment::LowerCommit,
            "after-assigned" => Experiment::AfterAssigned {
                kind: arg(1)?,
                window: match arg(2)?.as_str() {
                    "anywhere" => None,
                    lo => Some((lo.parse()?, arg(3)?.parse()?)),
                },
            },
            "at-moments" => Experiment::AtMoments { count: arg(1)?.parse()?, how: arg(2)? },
            "leave" => Experiment::Leave { spread: arg(1)?.parse()? },
            "world" => Experiment::World,
            "denser" => Experiment::Denser { extra: arg(1)?.parse()? },
            other => return Err(format!("no experiment {other}").into()),
        })
    }

    /// Whether the experiment splits drawn seeds rather than adding to passing ones.
    fn splits(&self) -> bool {
        matches!(self, Experiment::Holds { .. } | Experiment::LowerCommit)
    }

    /// For a splitting experiment, the side a drawn seed falls on (0: with, 1: without).
    fn split(&self, spec: &ScenarioSpec, drawn: &RunReport) -> Option<usize> {
        let with = match self {
            Experiment::Holds { api, error } => spec.faults.faults.iter().any(|f| {
                let v = serde_json::to_value(&f.fault).unwrap_or_default();
                v["kind"] == "inject_error"
                    && v["api"] == api.as_str()
                    && v["error"] == error.as_str()
            }),
            Experiment::LowerCommit => lower_commit(drawn),
            _ => return None,
        };
        Some(usize::from(!with))
    }

    /// One variant of a passing seed, `None` when it cannot be made (nothing fits).
    fn variant(
        &self,
        spec: &ScenarioSpec,
        drawn: &RunReport,
        vocabulary: &Vocabulary,
        (scenario, options): (&Scenario, &RunOptions),
        v: u64,
        rng: &mut ChaCha8Rng,
    ) -> Option<ScenarioSpec> {
        let end = spec.liveness_start_ms;
        let shape = Shape::of(spec);
        let mut faults = spec.faults.faults.clone();
        let mut out = spec.clone();
        match self {
            Experiment::Inject { fault, after_fault } => {
                let at = match after_fault {
                    true => {
                        faults.get(rng.random_range(0..faults.len().max(1)))?.at_ms
                            + rng.random_range(200..3_000)
                    }
                    false => rng.random_range(0..end),
                };
                let mut fault = fault.clone();
                if let Fault::InjectError { count, .. } = &mut fault {
                    *count = rng.random_range(1..=3);
                }
                faults.push(ScheduledFault { at_ms: at, fault });
            }
            Experiment::AfterAssigned { kind, window } => {
                let assigned: Vec<u64> = drawn
                    .history
                    .events()
                    .iter()
                    .filter(|e| {
                        matches!(
                            &e.kind,
                            EventKind::Member { event: MemberEvent::Assigned { .. }, .. }
                        )
                    })
                    .map(|e| e.at_ms)
                    .filter(|&m| m < end)
                    .collect();
                let pool: Vec<&Fault> = vocabulary
                    .faults
                    .iter()
                    .filter(|f| serde_json::to_value(f).is_ok_and(|v| v["kind"] == kind.as_str()))
                    .collect();
                let at = match window {
                    Some((lo, hi)) => {
                        let moment = *assigned.get(rng.random_range(0..assigned.len().max(1)))?;
                        (moment as i64 + rng.random_range(*lo..*hi)).max(0) as u64
                    }
                    None => rng.random_range(0..end),
                };
                let fault = (*pool.get(rng.random_range(0..pool.len().max(1)))?).clone();
                faults.push(ScheduledFault { at_ms: at, fault });
            }
            Experiment::AtMoments { count, how } => {
                let (_, first) = Signature::timed(&drawn.probes, &drawn.history);
                let moments: Vec<u64> = first.values().copied().filter(|&m| m < end).collect();
                for _ in 0..*count {
                    let m = *moments.get(rng.random_range(0..moments.len().max(1)))?;
                    let at = match how.as_str() {
                        "before" => m.saturating_sub(rng.random_range(0..=200)),
                        "after20" => m + rng.random_range(0..20),
                        "afterlog" => m + 2f64.powf(rng.random_range(0.0..10.0)) as u64,
                        _ => rng.random_range(0..end),
                    };
                    if at >= end {
                        continue;
                    }
                    // Faults naming what this run lacks are drawn again.
                    let fitting = (0..20).find_map(|_| {
                        let f = ScheduledFault {
                            at_ms: at,
                            fault: vocabulary.faults[rng.random_range(0..vocabulary.faults.len())]
                                .clone(),
                        };
                        fits(&FaultSchedule::new(vec![f.clone()]), &shape).then_some(f)
                    });
                    faults.extend(fitting);
                }
            }
            Experiment::Leave { spread } => {
                let leavers: Vec<&str> = spec
                    .members
                    .iter()
                    .filter(|m| m.leave_ms.is_some())
                    .map(|m| m.name.as_str())
                    .collect();
                let member = *leavers.get(rng.random_range(0..leavers.len().max(1)))?;
                let m = spec.members.iter().find(|m| m.name == member)?;
                let shift = rng.random_range(0..=2 * spread) as i64 - *spread as i64;
                let ms = (m.leave_ms? as i64 + shift).max(m.start_ms as i64 + 1) as u64;
                out.respec(&[SpecEdit::Leave { member: member.to_string(), ms }]).ok()?;
                return Some(out);
            }
            Experiment::World => {
                out.respec(&[SpecEdit::World { seed: rng.random() }]).ok()?;
                return Some(out);
            }
            Experiment::Denser { extra } => {
                for e in 0..*extra {
                    let other = 1_000_000 + spec.seed * 1_000 + v * 10 + e;
                    let drawn_other = options.spec(scenario, other);
                    faults.extend(
                        drawn_other
                            .faults
                            .faults
                            .into_iter()
                            .filter(|f| fits(&FaultSchedule::new(vec![f.clone()]), &shape)),
                    );
                }
            }
            Experiment::Holds { .. } | Experiment::LowerCommit => return None,
        }
        if faults.iter().any(|f| f.at_ms >= end) {
            return None;
        }
        let schedule = FaultSchedule::new(faults)
            .with_triggers(spec.faults.triggers.clone())
            .with_spec(spec.faults.spec.clone());
        if !fits(&schedule, &shape) {
            return None;
        }
        out.faults = schedule;
        Some(out)
    }
}

/// Whether a member sent an OffsetCommit for a partition lower than one it sent for that
/// partition earlier in the same life.
fn lower_commit(run: &RunReport) -> bool {
    let mut sent: std::collections::BTreeMap<(String, String), i64> = Default::default();
    for e in run.history.events() {
        match &e.kind {
            EventKind::Member {
                member,
                event: MemberEvent::CommitSent { partition, offset, .. },
            } => {
                let key = (member.clone(), partition.to_string());
                if sent.get(&key).is_some_and(|&high| *offset < high) {
                    return true;
                }
                let high = sent.entry(key).or_insert(*offset);
                *high = (*high).max(*offset);
            }
            EventKind::World(WorldEvent::MemberStarted { member, .. }) => {
                sent.retain(|(m, _), _| m != member);
            }
            _ => {}
        }
    }
    false
}
