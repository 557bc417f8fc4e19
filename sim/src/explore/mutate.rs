//! The mutation operators of the search: each takes a schedule (timed faults and triggers) and
//! gives a neighbour, in the scenario's own vocabulary — the faults and triggers its seeds draw —
//! so a mutated schedule holds only what the scenario was built to survive, aimed at other
//! members, instants, events and odds.
//!
//! Faults are edited through their JSON form, the schedule file's: a `member` field is a member
//! name, `node`, `to` and `broker` are broker ids, every other field ending in `_ms` is a
//! duration (`until_ms` an instant). A result that names a member, broker or host the drawn run
//! does not have is refused ([`fits`]), as is a fault at or after the end of the safety phase.

use std::collections::BTreeSet;

use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::faults::{Fault, FaultSchedule, ScheduledFault};
use crate::runner::RunOptions;
use crate::scenario::{Scenario, ScenarioSpec};
use crate::triggers::{Trigger, TriggerAction, TriggerEvent};
use groupsim_wire::Millis;

/// How many of a scenario's seeds its vocabulary is read from.
pub const VOCABULARY_SEEDS: u64 = 32;

/// The farthest a shift moves a fault or a splice point, in ms either way.
const SHIFT_MS: i64 = 5_000;

/// How soon after a parent's find most faults added after it land, in ms.
const NEAR_MS: Millis = 1_000;

/// How long after the fault it repeats a repeat lands, in ms: from a moment later to a few
/// sessions later.
const REPEAT_MS: std::ops::RangeInclusive<Millis> = 200..=10_000;

/// How far before the moment it aims at an aimed fault lands, in ms at most: near enough that
/// the request answered then, or one sent just before it, is still on its way.
const AIM_MS: Millis = 200;

/// One mutation operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mutation {
    /// Another seed of the scenario, with the schedule kept: the same faults under another
    /// workload, other latencies and other processing times.
    Reseed,
    /// A fault the scenario draws, at an instant drawn in the safety phase.
    AddFault,
    /// One timed fault removed.
    DropFault,
    /// One timed fault moved up to `SHIFT_MS` (5 s) earlier or later.
    ShiftFault,
    /// One timed fault aimed at another member (or broker).
    RetargetFault,
    /// One timed fault's durations scaled by a half to twice.
    StretchFault,
    /// One timed fault repeated: a copy aimed at the same target lands `REPEAT_MS` after it,
    /// its durations scaled by a half to twice. The shrunk catches of rare bugs are often such
    /// pairs (a host cut off past its session, then again a few seconds later), which adding
    /// faults one at a time seldom builds.
    RepeatFault,
    /// A trigger the scenario draws, under a fresh identity.
    AddTrigger,
    /// One trigger removed.
    DropTrigger,
    /// One trigger moved to another protocol event the scenario's triggers wait for.
    RetargetTrigger,
    /// One trigger's odds and most fires redrawn.
    TriggerOdds,
    /// The faults before an instant from this schedule, those after it from another corpus
    /// entry of the scenario, and both entries' triggers.
    Splice,
    /// A fault the scenario draws, landing up to `AIM_MS` before an instant at which the
    /// parent's run first reached one of its situations. With the seed kept the run is the same
    /// up to there, so the fault meets that moment as a trigger on its event would, in a
    /// scenario searched without triggers too (a coordinator moved while the first OffsetFetch
    /// is on its way, a member cut off as its first assignment arrives).
    AimFault,
}

impl Mutation {
    /// Every operator, in a fixed order (the draw picks among them by index).
    pub const ALL: [Mutation; 13] = [
        Mutation::Reseed,
        Mutation::AddFault,
        Mutation::DropFault,
        Mutation::ShiftFault,
        Mutation::RetargetFault,
        Mutation::StretchFault,
        Mutation::RepeatFault,
        Mutation::AddTrigger,
        Mutation::DropTrigger,
        Mutation::RetargetTrigger,
        Mutation::TriggerOdds,
        Mutation::Splice,
        Mutation::AimFault,
    ];

    /// The operator's name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Mutation::Reseed => "reseed",
            Mutation::AddFault => "add-fault",
            Mutation::DropFault => "drop-fault",
            Mutation::ShiftFault => "shift-fault",
            Mutation::RetargetFault => "retarget-fault",
            Mutation::StretchFault => "stretch-fault",
            Mutation::RepeatFault => "repeat-fault",
            Mutation::AddTrigger => "add-trigger",
            Mutation::DropTrigger => "drop-trigger",
            Mutation::RetargetTrigger => "retarget-trigger",
            Mutation::TriggerOdds => "trigger-odds",
            Mutation::Splice => "splice",
            Mutation::AimFault => "aim-fault",
        }
    }
}

/// What a scenario's own seeds draw: the material mutations add from.
#[derive(Clone, Debug, Default)]
pub struct Vocabulary {
    /// Timed faults drawn by the first [`VOCABULARY_SEEDS`] seeds (repeats removed).
    pub faults: Vec<Fault>,
    /// Triggers drawn by those seeds (repeats removed, identities as drawn).
    pub triggers: Vec<Trigger>,
    /// The events those triggers wait for.
    pub events: Vec<TriggerEvent>,
}

impl Vocabulary {
    /// The vocabulary of `scenario` under `options` (a bug switch may add faults of its own).
    pub fn of(scenario: &Scenario, options: &RunOptions) -> Self {
        Self::from_schedules((0..VOCABULARY_SEEDS).map(|seed| options.spec(scenario, seed).faults))
    }

    /// The faults and triggers of `schedules`, repeats removed, in order.
    pub fn from_schedules(schedules: impl IntoIterator<Item = FaultSchedule>) -> Self {
        let mut faults: Vec<Fault> = Vec::new();
        let mut triggers: Vec<Trigger> = Vec::new();
        let mut events = BTreeSet::new();
        for schedule in schedules {
            for f in schedule.faults {
                if !faults.contains(&f.fault) {
                    faults.push(f.fault);
                }
            }
            for t in schedule.triggers {
                events.insert(t.on);
                if !triggers.contains(&t) {
                    triggers.push(t);
                }
            }
        }
        Self { faults, triggers, events: events.into_iter().collect() }
    }

    /// Whether the scenario draws anything a mutation could add.
    pub fn is_empty(&self) -> bool {
        self.faults.is_empty() && self.triggers.is_empty()
    }
}

/// What a schedule may name and when its faults may land: the members, brokers and hosts of a
/// run, and the end of its fault phase (a simulated run's safety phase, a real-time run's fault
/// phase).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shape {
    /// Member names (`m0`, …).
    pub members: Vec<String>,
    /// Broker ids are `0..brokers`.
    pub brokers: i32,
    /// Host names (`client-K`, `broker-N`).
    pub hosts: BTreeSet<String>,
    /// Faults land before this instant.
    pub end_ms: Millis,
}

impl Shape {
    /// The shape of a drawn simulated run.
    pub fn of(spec: &ScenarioSpec) -> Self {
        let hosts = (0..spec.client_hosts)
            .map(|h| format!("client-{h}"))
            .chain((0..spec.brokers).map(|b| format!("broker-{b}")))
            .collect();
        Self {
            members: spec.members.iter().map(|m| m.name.clone()).collect(),
            brokers: spec.brokers,
            hosts,
            end_ms: spec.liveness_start_ms.max(1),
        }
    }
}

/// What a mutation may draw on besides the schedule and the scenario's vocabulary.
#[derive(Clone, Copy, Debug, Default)]
pub struct Material<'a> {
    /// Another corpus entry's schedule of the same scenario (for a splice).
    pub other: Option<&'a FaultSchedule>,
    /// The instants at which the run of this schedule and seed first reached its situations
    /// (for an aimed fault; empty when the seed changes, as they no longer hold).
    pub moments: &'a [Millis],
}

/// Applies `mutation` to `schedule` for a run of `shape`, drawing on `material`. `None` when
/// the operator has nothing to act on or its result does not fit the run. [`Mutation::Reseed`]
/// leaves the schedule as it is (the caller changes the seed).
///
/// Only what acts at or after `from_ms` changes: faults at or after it are added, removed,
/// moved (not before it), aimed elsewhere or stretched; triggers armed at or after it are
/// added (armed from it), removed, moved or redrawn. Everything before `from_ms` stays, so the
/// run is the same up to that instant (the seed kept): a search keeps the moment a run reached
/// something rare and explores what follows it. `from_ms` 0 is the whole schedule.
pub fn apply(
    mutation: Mutation,
    schedule: &FaultSchedule,
    shape: &Shape,
    vocabulary: &Vocabulary,
    material: Material<'_>,
    from_ms: Millis,
    rng: &mut ChaCha8Rng,
) -> Option<FaultSchedule> {
    let mut out = schedule.clone();
    let end = shape.end_ms.max(1);
    if from_ms >= end {
        return None;
    }
    let late_faults: Vec<usize> =
        (0..out.faults.len()).filter(|&i| out.faults[i].at_ms >= from_ms).collect();
    let late_triggers: Vec<usize> = (0..out.triggers.len())
        .filter(|&i| out.triggers[i].after_ms.unwrap_or(0) >= from_ms)
        .collect();
    match mutation {
        Mutation::Reseed => {}
        Mutation::AddFault => {
            let fault = pick(&vocabulary.faults, rng)?.clone();
            // After a parent's find, the window that matters is the one right after it: most
            // faults land within a second of it.
            let soon = (from_ms + NEAR_MS).min(end);
            let at_ms = if from_ms > 0 && rng.random_ratio(3, 4) {
                rng.random_range(from_ms..soon)
            } else {
                rng.random_range(from_ms..end)
            };
            out.faults.push(ScheduledFault { at_ms, fault });
        }
        Mutation::DropFault => {
            let i = *pick(&late_faults, rng)?;
            out.faults.remove(i);
        }
        Mutation::ShiftFault => {
            let i = *pick(&late_faults, rng)?;
            let shift = rng.random_range(-SHIFT_MS..=SHIFT_MS);
            let at = (out.faults[i].at_ms as i64 + shift).clamp(from_ms as i64, end as i64 - 1);
            out.faults[i].at_ms = at as u64;
        }
        Mutation::RetargetFault => {
            let i = *pick(&late_faults, rng)?;
            let fault = edit(&out.faults[i].fault, |key, value| match key {
                "member" => Some(Value::from(pick(&shape.members, rng)?.clone())),
                "node" | "to" | "broker" if value.is_i64() => {
                    Some(Value::from(rng.random_range(0..shape.brokers.max(1))))
                }
                _ => None,
            })?;
            if fault == out.faults[i].fault {
                return None;
            }
            out.faults[i].fault = fault;
        }
        Mutation::StretchFault => {
            let i = *pick(&late_faults, rng)?;
            let fault = edit(&out.faults[i].fault, |key, value| {
                let ms = value.as_u64()?;
                (key.ends_with("_ms") && ms > 0).then(|| {
                    let scaled = ms * rng.random_range(50..=200u64) / 100;
                    Value::from(scaled.max(1))
                })
            })?;
            out.faults[i].fault = fault;
        }
        Mutation::RepeatFault => {
            let i = *pick(&late_faults, rng)?;
            let original = &out.faults[i];
            let delay = rng.random_range(REPEAT_MS);
            let at_ms = original.at_ms + delay;
            if at_ms >= end {
                return None;
            }
            let fault = edit(&original.fault, |key, value| {
                let ms = value.as_u64()?;
                match key {
                    "until_ms" => Some(Value::from(ms + delay)),
                    _ if key.ends_with("_ms") && ms > 0 => {
                        Some(Value::from((ms * rng.random_range(50..=200u64) / 100).max(1)))
                    }
                    _ => None,
                }
            })
            .unwrap_or_else(|| original.fault.clone());
            out.faults.push(ScheduledFault { at_ms, fault });
        }
        Mutation::AddTrigger => {
            let mut trigger = pick(&vocabulary.triggers, rng)?.clone();
            trigger.id = fresh_id(&out.triggers);
            trigger.after_ms = (from_ms > 0).then_some(from_ms);
            out.triggers.push(trigger);
        }
        Mutation::DropTrigger => {
            let i = *pick(&late_triggers, rng)?;
            out.triggers.remove(i);
        }
        Mutation::RetargetTrigger => {
            let i = *pick(&late_triggers, rng)?;
            let others: Vec<TriggerEvent> =
                vocabulary.events.iter().copied().filter(|e| *e != out.triggers[i].on).collect();
            let on = *pick(&others, rng)?;
            out.triggers[i].on = on;
            if on == TriggerEvent::MemberEpochAdvanced {
                // What matters about an epoch advance is its answer on the way: a drop.
                out.triggers[i].action = TriggerAction::DropConnections;
            }
        }
        Mutation::TriggerOdds => {
            let i = *pick(&late_triggers, rng)?;
            out.triggers[i].per_mille = rng.random_range(50..=1_000u16);
            out.triggers[i].max_fires = rng.random_range(1..=5u16);
        }
        Mutation::Splice => {
            let other = material.other?;
            let cut = rng.random_range(from_ms..end);
            out.faults.retain(|f| f.at_ms < cut);
            out.faults.extend(other.faults.iter().filter(|f| f.at_ms >= cut).cloned());
            for t in &other.triggers {
                if !out.triggers.iter().any(|mine| mine.on == t.on && mine.action == t.action) {
                    let mut t = t.clone();
                    t.id = fresh_id(&out.triggers);
                    let armed = t.after_ms.unwrap_or(0).max(from_ms);
                    t.after_ms = (armed > 0).then_some(armed);
                    out.triggers.push(t);
                }
            }
            if out == *schedule {
                return None;
            }
        }
        Mutation::AimFault => {
            let reachable: Vec<Millis> =
                material.moments.iter().copied().filter(|&m| m >= from_ms && m < end).collect();
            let moment = *pick(&reachable, rng)?;
            let fault = pick(&vocabulary.faults, rng)?.clone();
            let at_ms = moment.saturating_sub(rng.random_range(0..=AIM_MS)).max(from_ms);
            out.faults.push(ScheduledFault { at_ms, fault });
        }
    }
    let out = FaultSchedule::new(out.faults).with_triggers(out.triggers).with_spec(out.spec);
    fits(&out, shape).then_some(out)
}

/// Whether every fault of `schedule` lands before `shape`'s end and names only members, brokers
/// and hosts it has, and its triggers' identities are distinct.
pub fn fits(schedule: &FaultSchedule, shape: &Shape) -> bool {
    let ids: BTreeSet<u32> = schedule.triggers.iter().map(|t| t.id).collect();
    ids.len() == schedule.triggers.len()
        && schedule.faults.iter().all(|f| {
            f.at_ms < shape.end_ms.max(1)
                && fields(&f.fault).iter().all(|(key, value)| match (key.as_str(), value) {
                    ("member", Value::String(m)) => shape.members.contains(m) || is_pick(m),
                    ("node" | "to" | "broker", Value::Number(n)) => {
                        n.as_i64().is_some_and(|b| (0..i64::from(shape.brokers)).contains(&b))
                    }
                    ("host" | "from" | "to", Value::String(h)) => shape.hosts.contains(h),
                    ("peers", Value::Array(peers)) => {
                        peers.iter().all(|p| p.as_str().is_some_and(|p| shape.hosts.contains(p)))
                    }
                    _ => true,
                })
        })
}

/// Whether `member` is a real-time schedule's `#N`: whichever member of the group is N-th when
/// the fault lands (see [`crate::faults`]), which fits any run.
fn is_pick(member: &str) -> bool {
    member.strip_prefix('#').is_some_and(|n| n.parse::<u32>().is_ok())
}

/// A fault's fields as its schedule JSON writes them (the `kind` tag left out).
fn fields(fault: &Fault) -> Vec<(String, Value)> {
    match serde_json::to_value(fault) {
        Ok(Value::Object(map)) => map.into_iter().filter(|(k, _)| k != "kind").collect(),
        _ => Vec::new(),
    }
}

/// `fault` with each field `change` gives a new value for replaced; `None` if nothing changed
/// or the result is not a fault.
fn edit(fault: &Fault, mut change: impl FnMut(&str, &Value) -> Option<Value>) -> Option<Fault> {
    let Ok(Value::Object(mut map)) = serde_json::to_value(fault) else { return None };
    let mut changed = false;
    for (key, value) in map.iter_mut() {
        if key == "kind" {
            continue;
        }
        if let Some(new) = change(key, value) {
            changed |= new != *value;
            *value = new;
        }
    }
    if !changed {
        return None;
    }
    serde_json::from_value(Value::Object(map)).ok()
}

/// An identity no trigger of `triggers` has (each trigger's draws come from its identity).
fn fresh_id(triggers: &[Trigger]) -> u32 {
    triggers.iter().map(|t| t.id + 1).max().unwrap_or(0).max(100)
}

/// An index drawn with probability proportional to its weight; `None` (and no draw) when the
/// weights sum to zero.
pub fn pick_weighted(weights: &[u64], rng: &mut ChaCha8Rng) -> Option<usize> {
    let total: u64 = weights.iter().sum();
    if total == 0 {
        return None;
    }
    let mut at = rng.random_range(0..total);
    weights.iter().position(|&w| {
        let here = at < w;
        at = at.saturating_sub(w);
        here
    })
}

fn index(len: usize, rng: &mut ChaCha8Rng) -> Option<usize> {
    (len > 0).then(|| rng.random_range(0..len))
}

fn pick<'a, T>(items: &'a [T], rng: &mut ChaCha8Rng) -> Option<&'a T> {
    index(items.len(), rng).map(|i| &items[i])
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn setup(name: &str) -> (Scenario, ScenarioSpec, Vocabulary) {
        let scenario = crate::scenarios::find(name).expect("in catalogue");
        let options = RunOptions::default();
        let vocabulary = Vocabulary::of(&scenario, &options);
        let spec = (0..50)
            .map(|s| options.spec(&scenario, s))
            .find(|s| s.faults.faults.len() >= 2 && !s.faults.triggers.is_empty())
            .expect("some seed draws faults and triggers");
        (scenario, spec, vocabulary)
    }

    /// Runs `mutation` on `spec`'s schedule under a few rng seeds until it gives a result.
    fn mutate(mutation: Mutation, spec: &ScenarioSpec, v: &Vocabulary) -> FaultSchedule {
        (0..50)
            .find_map(|k| {
                let rng = &mut ChaCha8Rng::seed_from_u64(k);
                apply(mutation, &spec.faults, &Shape::of(spec), v, Material::default(), 0, rng)
            })
            .unwrap_or_else(|| panic!("{} never applied", mutation.name()))
    }

    #[test]
    fn the_vocabulary_is_the_scenarios_own_draws() {
        let (_, _, v) = setup("swarm");
        assert!(!v.faults.is_empty() && !v.triggers.is_empty());
        for e in &v.events {
            assert!(TriggerEvent::CLASSIC_SWARM.contains(e), "{e:?}");
        }
        let quiet = crate::scenarios::find("steady_state").expect("in catalogue");
        assert!(Vocabulary::of(&quiet, &RunOptions::default()).is_empty());
    }

    #[test]
    fn each_fault_operator_changes_one_fault_as_named() {
        let (_, spec, v) = setup("swarm");
        let before = &spec.faults;
        let added = mutate(Mutation::AddFault, &spec, &v);
        assert_eq!(added.faults.len(), before.faults.len() + 1);
        let dropped = mutate(Mutation::DropFault, &spec, &v);
        assert_eq!(dropped.faults.len(), before.faults.len() - 1);
        let shifted = mutate(Mutation::ShiftFault, &spec, &v);
        let instants = |s: &FaultSchedule| s.faults.iter().map(|f| f.at_ms).collect::<Vec<_>>();
        assert_eq!(shifted.faults.len(), before.faults.len());
        assert_ne!(instants(&shifted), instants(before));
        let kinds = |s: &FaultSchedule| {
            let mut k: Vec<String> =
                s.faults.iter().map(|f| format!("{:?}", fields(&f.fault).len())).collect();
            k.sort();
            k
        };
        let retargeted = mutate(Mutation::RetargetFault, &spec, &v);
        assert_eq!(instants(&retargeted), instants(before), "instants kept");
        assert_ne!(retargeted.faults, before.faults);
        assert_eq!(kinds(&retargeted), kinds(before));
        let stretched = mutate(Mutation::StretchFault, &spec, &v);
        assert_eq!(instants(&stretched), instants(before));
        assert_ne!(stretched.faults, before.faults);
        let repeated = mutate(Mutation::RepeatFault, &spec, &v);
        assert_eq!(repeated.faults.len(), before.faults.len() + 1);
        let copy = repeated.faults.iter().find(|f| !before.faults.contains(f)).expect("a copy");
        let target = |f: &Fault| {
            fields(f).into_iter().filter(|(k, _)| !k.ends_with("_ms")).collect::<Vec<_>>()
        };
        assert!(
            before.faults.iter().any(|f| {
                target(&f.fault) == target(&copy.fault)
                    && std::mem::discriminant(&f.fault) == std::mem::discriminant(&copy.fault)
                    && copy.at_ms.checked_sub(f.at_ms).is_some_and(|d| REPEAT_MS.contains(&d))
            }),
            "{copy:?} repeats a fault of {before:?} on its target, later"
        );
        for s in [&added, &dropped, &shifted, &retargeted, &stretched, &repeated] {
            assert!(fits(s, &Shape::of(&spec)));
            assert_eq!(s.triggers, before.triggers, "triggers untouched");
            assert!(s.faults.windows(2).all(|w| w[0].at_ms <= w[1].at_ms), "kept in time order");
        }
    }

    #[test]
    fn each_trigger_operator_changes_one_trigger_as_named() {
        let (_, spec, v) = setup("swarm");
        let before = &spec.faults.triggers;
        let added = mutate(Mutation::AddTrigger, &spec, &v);
        assert_eq!(added.triggers.len(), before.len() + 1);
        let ids: BTreeSet<u32> = added.triggers.iter().map(|t| t.id).collect();
        assert_eq!(ids.len(), added.triggers.len(), "identities stay distinct");
        let dropped = mutate(Mutation::DropTrigger, &spec, &v);
        assert_eq!(dropped.triggers.len(), before.len() - 1);
        let moved = mutate(Mutation::RetargetTrigger, &spec, &v);
        let events = |ts: &[Trigger]| ts.iter().map(|t| t.on).collect::<Vec<_>>();
        assert_ne!(events(&moved.triggers), events(before));
        assert!(moved.triggers.iter().all(|t| v.events.contains(&t.on)));
        let odds = mutate(Mutation::TriggerOdds, &spec, &v);
        assert_eq!(events(&odds.triggers), events(before));
        assert!(odds.triggers.iter().all(|t| (50..=1_000).contains(&t.per_mille)));
        for s in [&added, &dropped, &moved, &odds] {
            assert_eq!(s.faults, spec.faults.faults, "timed faults untouched");
        }
    }

    #[test]
    fn a_splice_takes_the_early_faults_of_one_and_the_late_of_the_other() {
        let (scenario, spec, v) = setup("swarm");
        let other = (0..50)
            .map(|s| RunOptions::default().spec(&scenario, s).faults)
            .find(|f| *f != spec.faults && !f.faults.is_empty())
            .expect("another drawn schedule");
        let with_other = Material { other: Some(&other), ..Material::default() };
        let spliced = (0..50)
            .find_map(|k| {
                let rng = &mut ChaCha8Rng::seed_from_u64(k);
                apply(Mutation::Splice, &spec.faults, &Shape::of(&spec), &v, with_other, 0, rng)
            })
            .expect("a splice applies");
        for f in &spliced.faults {
            assert!(spec.faults.faults.contains(f) || other.faults.contains(f), "{f:?}");
        }
        assert!(fits(&spliced, &Shape::of(&spec)));
        assert!(
            apply(
                Mutation::Splice,
                &spec.faults,
                &Shape::of(&spec),
                &v,
                Material::default(),
                0,
                &mut ChaCha8Rng::seed_from_u64(0)
            )
            .is_none(),
            "no splice without a second entry"
        );
    }

    /// An aimed fault is one of the scenario's faults, added so that it lands at most
    /// `AIM_MS` before one of the parent's moments and never before `from_ms`; without moments
    /// (another seed), or with none after `from_ms`, there is nothing to aim at.
    #[test]
    fn an_aimed_fault_lands_just_before_a_moment_of_the_parent_run() {
        let (_, spec, v) = setup("swarm");
        let shape = Shape::of(&spec);
        let moments = [3_000, 7_500, 12_040];
        let aiming = Material { other: None, moments: &moments };
        let mut applied = 0;
        for k in 0..60 {
            let rng = &mut ChaCha8Rng::seed_from_u64(k);
            let from_ms = if k % 2 == 0 { 0 } else { 7_400 };
            // A drawn fault may name a member this run lacks: that result does not fit.
            let Some(aimed) =
                apply(Mutation::AimFault, &spec.faults, &shape, &v, aiming, from_ms, rng)
            else {
                continue;
            };
            applied += 1;
            assert_eq!(aimed.faults.len(), spec.faults.faults.len() + 1);
            let added = aimed.faults.iter().find(|f| !spec.faults.faults.contains(f)).expect("one");
            assert!(v.faults.contains(&added.fault), "{added:?} is the scenario's own");
            assert!(added.at_ms >= from_ms, "{added:?} before {from_ms}");
            assert!(
                moments.iter().any(|&m| m >= added.at_ms && m - added.at_ms <= AIM_MS),
                "{added:?} lands just before one of {moments:?}"
            );
            assert!(fits(&aimed, &shape));
            assert_eq!(aimed.triggers, spec.faults.triggers, "triggers untouched");
        }
        assert!(applied >= 20, "most aims fit: {applied} of 60");
        let rng = &mut ChaCha8Rng::seed_from_u64(0);
        assert!(apply(Mutation::AimFault, &spec.faults, &shape, &v, Material::default(), 0, rng)
            .is_none());
        let late = [shape.end_ms + 1];
        let past_end = Material { other: None, moments: &late };
        let rng = &mut ChaCha8Rng::seed_from_u64(0);
        assert!(
            apply(Mutation::AimFault, &spec.faults, &shape, &v, past_end, 0, rng).is_none(),
            "a moment past the fault phase is no target"
        );
    }

    #[test]
    fn a_schedule_naming_what_the_run_lacks_does_not_fit() {
        let (_, spec, _) = setup("swarm");
        let at = |fault| FaultSchedule::new(vec![ScheduledFault { at_ms: 10, fault }]);
        let shape = Shape::of(&spec);
        assert!(fits(&at(Fault::ConnectionDrop { member: spec.members[0].name.clone() }), &shape));
        assert!(!fits(&at(Fault::ConnectionDrop { member: "m999".into() }), &shape));
        // A real-time schedule's `#N` picks whichever member is N-th then: it fits any run.
        assert!(fits(&at(Fault::ConnectionDrop { member: "#294".into() }), &shape));
        assert!(!fits(&at(Fault::ConnectionDrop { member: "#m".into() }), &shape));
        assert!(!fits(&at(Fault::BrokerCrash { node: 99, restart_after_ms: 10 }), &shape));
        let late = FaultSchedule::new(vec![ScheduledFault {
            at_ms: spec.liveness_start_ms,
            fault: Fault::ConnectionDrop { member: spec.members[0].name.clone() },
        }]);
        assert!(!fits(&late, &shape), "after the safety phase");
    }
}
