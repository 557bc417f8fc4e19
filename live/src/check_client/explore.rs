//! `check-client --explore`: the search of `groupsim explore`, fitted to real clients. A real
//! client cannot be replayed bit for bit, and a seed takes about a minute, so there is no corpus
//! of exact runs to branch from: what is kept is what each seed's run met from the served
//! brokers' side — the coordinator's answers by API, error and group protocol, its events, the
//! triggers that fired — and, for each run that met something new, its schedule, what it met
//! first and when.
//!
//! Each next seed runs its own drawn plan (its workload and faults, well spread over the run),
//! either as drawn (**fresh**) or with one or two pieces **grafted** into it from kept runs: a
//! fault or trigger of a kept schedule that acted shortly before that run met something rare,
//! at the same instant of the fault phase, sometimes with one of the seed's own faults aimed at
//! another member or broker too. The share of grafted seeds follows what each arm paid (new
//! situations per seed over its recent seeds), with a floor for each. Kept runs are drawn by the
//! rarity of what they met first, less each time one was grafted from, so later finds get used
//! too. Deterministic in the seeds: the choice for seed N depends only on N and what the seeds
//! before it met.

use std::collections::{BTreeMap, VecDeque};

use groupsim_history::{EventKind, History, WorldEvent};
use groupsim_wire::probe::ProbeHits;
use groupsim_wire::Millis;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::schedule::{self, Plan, PlanShape};
use groupsim::explore::mutate::{self, Mutation, Shape};
use groupsim::faults::{FaultSchedule, ScheduledFault};
use groupsim::signature::{Coverage, Element, Signature};
use groupsim::triggers::Trigger;

/// The least share of seeds, in thousandths, each arm gets once something is kept.
const FLOOR_PER_MILLE: u32 = 250;

/// How many of an arm's latest seeds its pay is judged by.
const RECENT: usize = 10;

/// How long before a kept run met something a fault or trigger of its schedule may have acted
/// to be grafted as a cause of it.
const CAUSE_MS: Millis = 4_000;

/// The share of grafted seeds, in thousandths, that also aim one of the seed's own faults
/// elsewhere.
const RETARGET_PER_MILLE: u32 = 250;

/// How a seed's plan was made.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Arm {
    /// The seed's own draw, as drawn.
    Fresh,
    /// The seed's own draw with pieces of kept schedules grafted in.
    Graft,
}

/// The plan for one seed, and how it was made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Choice {
    /// The plan to run.
    pub plan: Plan,
    /// How it was made, for the seed's line.
    pub how: String,
    /// The arm that made it; `None` before anything is kept (there is nothing to choose).
    pub arm: Option<Arm>,
    /// The kept runs it grafted from (indices into the kept runs).
    sources: Vec<usize>,
}

/// A run that met something no earlier run had.
#[derive(Clone, Debug)]
struct Kept {
    seed: u64,
    /// Its faults and triggers, instants in ms into the fault phase.
    schedule: FaultSchedule,
    /// What it met first, each with the instant (ms into the fault phase) it first met it.
    found: Vec<(Element, Millis)>,
    /// Each trigger that fired (as it reads in the history) and when it first fired.
    fired: BTreeMap<String, Millis>,
    /// How many seeds grafted from it.
    uses: u64,
}

/// The search over one client release's seeds.
#[derive(Debug)]
pub struct ClientSearch {
    shape: PlanShape,
    coverage: Coverage,
    kept: Vec<Kept>,
    /// New situations met by each arm's latest seeds, oldest first.
    paid: BTreeMap<Arm, VecDeque<usize>>,
}

impl ClientSearch {
    /// A search for runs of `shape`.
    pub fn new(shape: PlanShape) -> Self {
        Self { shape, coverage: Coverage::default(), kept: Vec::new(), paid: BTreeMap::new() }
    }

    /// The plan for `seed`: its own draw, as drawn or with pieces of kept schedules grafted in.
    pub fn plan_for(&self, seed: u64) -> Choice {
        let drawn = schedule::draw(seed, self.shape);
        let own = |arm| Choice {
            plan: drawn.clone(),
            how: "its own draw".into(),
            arm,
            sources: Vec::new(),
        };
        if self.kept.is_empty() {
            return own(None);
        }
        let mut rng = Self::rng(seed);
        if !rng.random_ratio(self.graft_per_mille(), 1_000) {
            return own(Some(Arm::Fresh));
        }
        let shape = shape_of(&drawn, self.shape);
        let mut schedule = schedule_of(&drawn);
        let mut how = Vec::new();
        let mut sources = Vec::new();
        let pieces = rng.random_range(1..=2);
        for _ in 0..8 {
            if sources.len() >= pieces {
                break;
            }
            let weights = self.weights(&sources);
            let Some(k) = mutate::pick_weighted(&weights, &mut rng) else { break };
            if let Some((next, what)) = self.graft(k, &schedule, &shape, drawn.members, &mut rng) {
                schedule = next;
                how.push(what);
                sources.push(k);
            }
        }
        if sources.is_empty() {
            return own(Some(Arm::Fresh));
        }
        if rng.random_ratio(RETARGET_PER_MILLE, 1_000) {
            let retargeted = mutate::apply(
                Mutation::RetargetFault,
                &schedule,
                &shape,
                &Default::default(),
                Default::default(),
                0,
                &mut rng,
            );
            if let Some(next) = retargeted {
                schedule = next;
                how.push(Mutation::RetargetFault.name().into());
            }
        }
        match drawn.clone().with_schedule(schedule) {
            Ok(plan) => Choice {
                plan,
                how: format!("its own draw with {}", how.join(", ")),
                arm: Some(Arm::Graft),
                sources,
            },
            Err(_) => own(Some(Arm::Fresh)),
        }
    }

    /// The share of seeds, in thousandths, to graft: each arm's share follows what its recent
    /// seeds met that was new (one more seed meeting one new situation being each arm's prior),
    /// within the floors.
    fn graft_per_mille(&self) -> u32 {
        let pay = |arm| {
            let recent = self.paid.get(&arm);
            let met: usize = recent.map_or(0, |r| r.iter().sum());
            let seeds = recent.map_or(0, VecDeque::len);
            (met as u64 + 1) * 1_000 / (seeds as u64 + 1)
        };
        let (fresh, graft) = (pay(Arm::Fresh), pay(Arm::Graft));
        let share = (graft * 1_000 / (fresh + graft).max(1)) as u32;
        share.clamp(FLOOR_PER_MILLE, 1_000 - FLOOR_PER_MILLE)
    }

    /// Each kept run's weight as a source: the rarity of the rarest thing it met first, divided
    /// by one more than the seeds that grafted from it; none for those in `taken`.
    fn weights(&self, taken: &[usize]) -> Vec<u64> {
        self.kept
            .iter()
            .enumerate()
            .map(|(i, k)| {
                if taken.contains(&i) {
                    return 0;
                }
                let rarest =
                    k.found.iter().map(|(e, _)| self.runs_that_met(e)).min().unwrap_or(u64::MAX);
                (1_000_000 / rarest.max(1) / (k.uses + 1)).max(1)
            })
            .collect()
    }

    fn runs_that_met(&self, e: &Element) -> u64 {
        self.coverage.reached.get(e).copied().unwrap_or(0)
    }

    /// `schedule` with one piece of kept run `k`'s schedule added: a fault or trigger of it that
    /// acted within [`CAUSE_MS`] before the run first met one of the things it met first
    /// (favouring the rarest), or failing that the latest fault before it; with a description.
    fn graft(
        &self,
        k: usize,
        schedule: &FaultSchedule,
        shape: &Shape,
        members: usize,
        rng: &mut ChaCha8Rng,
    ) -> Option<(FaultSchedule, String)> {
        let kept = &self.kept[k];
        let weights: Vec<u64> =
            kept.found.iter().map(|(e, _)| 1_000_000 / self.runs_that_met(e).max(1)).collect();
        let (_, at) = &kept.found[mutate::pick_weighted(&weights, rng)?];
        // A situation met in the heal phase follows what the fault phase's end left.
        let at = (*at).min(shape.end_ms.saturating_sub(1));
        let window = at.saturating_sub(CAUSE_MS)..=at;
        let theirs = on_members(&kept.schedule, members);
        let faults: Vec<&ScheduledFault> = theirs
            .faults
            .iter()
            .filter(|f| window.contains(&f.at_ms) && !schedule.faults.contains(f))
            .collect();
        let triggers: Vec<&Trigger> = theirs
            .triggers
            .iter()
            .filter(|t| kept.fired.get(&t.to_string()).is_some_and(|at| window.contains(at)))
            .filter(|t| !schedule.triggers.iter().any(|m| m.on == t.on && m.action == t.action))
            .collect();
        let mut out = schedule.clone();
        let piece = rng.random_range(0..(faults.len() + triggers.len()).max(1));
        let what = if let Some(f) = faults.get(piece) {
            out.faults.push((*f).clone());
            format!("seed {}'s {} at {} ms", kept.seed, f.fault, f.at_ms)
        } else if let Some(t) = triggers.get(piece.saturating_sub(faults.len())) {
            let mut t = (*t).clone();
            t.id = out.triggers.iter().map(|m| m.id + 1).max().unwrap_or(0).max(100);
            let what = format!("seed {}'s trigger {t}", kept.seed);
            out.triggers.push(t);
            what
        } else {
            let f = theirs
                .faults
                .iter()
                .rev()
                .find(|f| f.at_ms <= at && !schedule.faults.contains(f))?;
            out.faults.push(f.clone());
            format!("seed {}'s {} at {} ms", kept.seed, f.fault, f.at_ms)
        };
        let out = FaultSchedule::new(out.faults).with_triggers(out.triggers);
        mutate::fits(&out, shape).then_some((out, what))
    }

    /// Seed `seed`'s own draws of the search (which arm, which kept runs, which pieces).
    fn rng(seed: u64) -> ChaCha8Rng {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(0x0065_7870_6c6f_7265);
        rng
    }

    /// Takes what seed `seed`'s run under `plan` met (its served history); returns what no
    /// earlier seed had met. A run that met something new is kept.
    pub fn learn(&mut self, seed: u64, plan: &Plan, history: &History) -> Vec<Element> {
        let (signature, first, fired) = met_timed(history);
        let new = self.coverage.add(&signature);
        if !new.is_empty() {
            let found =
                new.iter().map(|e| (e.clone(), first.get(e).copied().unwrap_or(0))).collect();
            let kept = Kept { seed, schedule: schedule_of(plan), found, fired, uses: 0 };
            self.kept.push(kept);
        }
        new
    }

    /// [`Self::learn`] for a seed run under `choice`: also counts what its arm paid and that
    /// its sources were grafted from.
    pub fn learn_chosen(
        &mut self,
        seed: u64,
        choice: &Choice,
        plan: &Plan,
        history: &History,
    ) -> Vec<Element> {
        for &k in &choice.sources {
            if let Some(kept) = self.kept.get_mut(k) {
                kept.uses += 1;
            }
        }
        let new = self.learn(seed, plan, history);
        if let Some(arm) = choice.arm {
            let recent = self.paid.entry(arm).or_default();
            recent.push_back(new.len());
            if recent.len() > RECENT {
                recent.pop_front();
            }
        }
        new
    }

    /// Distinct situations met so far.
    pub fn met(&self) -> usize {
        self.coverage.reached.len()
    }
}

/// What a real-client run met, from the served brokers' side: the coordinator's answers and
/// events (the signature of a history without member events), and the triggers that fired.
pub fn met(history: &History) -> Signature {
    met_timed(history).0
}

/// [`met`], with the instant (ms into the fault phase) each element was first met, and each
/// fired trigger's first firing.
fn met_timed(
    history: &History,
) -> (Signature, BTreeMap<Element, Millis>, BTreeMap<String, Millis>) {
    let (mut signature, mut first) = Signature::timed(&ProbeHits::default(), history);
    let start = phase_start(history);
    for at in first.values_mut() {
        *at = at.saturating_sub(start);
    }
    let mut fired = BTreeMap::new();
    for e in history.events() {
        if let EventKind::World(WorldEvent::TriggerFired { trigger, .. }) = &e.kind {
            let at = e.at_ms.saturating_sub(start);
            fired.entry(trigger.clone()).or_insert(at);
            let on = trigger.split(':').next().unwrap_or(trigger);
            let element = Element::Probe(format!("trigger fired {on}"));
            first.entry(element.clone()).or_insert(at);
            signature.elements.insert(element);
        }
    }
    (signature, first, fired)
}

/// When a run's fault phase began, in its history's time: the producer's first append after
/// the preload (it appends at once when the phase begins); the history's start if none.
fn phase_start(history: &History) -> Millis {
    history
        .events()
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::World(WorldEvent::Produced { base_offset, .. }) if *base_offset > 0 => {
                Some(e.at_ms)
            }
            _ => None,
        })
        .unwrap_or(0)
}

/// A plan's faults and triggers as one schedule.
pub fn schedule_of(plan: &Plan) -> FaultSchedule {
    FaultSchedule::new(plan.client.iter().chain(&plan.brokers.faults).cloned().collect())
        .with_triggers(plan.brokers.triggers.clone())
}

/// `schedule` with each fault naming member `mK` aimed at member `m(K mod members)`: a kept
/// schedule fitted to another seed's workload.
fn on_members(schedule: &FaultSchedule, members: usize) -> FaultSchedule {
    let mut out = schedule.clone();
    for f in &mut out.faults {
        let Ok(serde_json::Value::Object(mut map)) = serde_json::to_value(&f.fault) else {
            continue;
        };
        let Some(name) = map.get("member").and_then(|m| m.as_str()) else { continue };
        let Some(k) = name.strip_prefix('m').and_then(|k| k.parse::<usize>().ok()) else {
            continue;
        };
        map.insert("member".into(), format!("m{}", k % members.max(1)).into());
        if let Ok(fault) = serde_json::from_value(serde_json::Value::Object(map)) {
            f.fault = fault;
        }
    }
    out
}

/// What a plan's schedule may name: its member processes, the brokers, no host (the real-time
/// modes cannot partition hosts), faults within the fault phase.
fn shape_of(plan: &Plan, shape: PlanShape) -> Shape {
    Shape {
        members: (0..plan.members).map(|i| format!("m{i}")).collect(),
        brokers: shape.brokers,
        hosts: Default::default(),
        end_ms: shape.fault_ms,
    }
}

#[cfg(test)]
#[path = "explore_tests.rs"]
mod tests;
