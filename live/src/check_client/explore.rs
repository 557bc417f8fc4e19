//! `check-client --explore`: the search of `groupsim explore`, fitted to real clients. A real
//! client cannot be replayed bit for bit, and a seed takes about a minute, so there is no corpus
//! of exact runs to branch from: what is kept is what each seed's run met from the served
//! brokers' side — the coordinator's answers by API, error and group protocol, its events, the
//! triggers that fired — and the schedules that met something new. Each next seed either keeps
//! its own drawn plan or takes a kept schedule, favouring those that met the rarest situations,
//! mutated in the check-client fault vocabulary (faults at the brokers and on the member
//! processes), on its own workload. Deterministic in the seeds: the choice for seed N depends
//! only on N and what the seeds before it met.

use groupsim_history::{EventKind, History, WorldEvent};
use groupsim_wire::probe::ProbeHits;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::schedule::{self, Plan, PlanShape};
use groupsim::explore::mutate::{self, Mutation, Shape, Vocabulary, VOCABULARY_SEEDS};
use groupsim::faults::FaultSchedule;
use groupsim::signature::{Coverage, Element, Signature};

/// The share of seeds, in thousandths, that keep their own drawn plan once something is kept.
const FRESH_PER_MILLE: u32 = 333;

/// The search over one client release's seeds.
#[derive(Debug)]
pub struct ClientSearch {
    shape: PlanShape,
    vocabulary: Vocabulary,
    coverage: Coverage,
    kept: Vec<(u64, FaultSchedule, Signature)>,
}

impl ClientSearch {
    /// A search for runs of `shape`; its vocabulary is what the first seeds' plans draw.
    pub fn new(shape: PlanShape) -> Self {
        let vocabulary = Vocabulary::from_schedules(
            (0..VOCABULARY_SEEDS).map(|seed| schedule_of(&schedule::draw(seed, shape))),
        );
        Self { shape, vocabulary, coverage: Coverage::default(), kept: Vec::new() }
    }

    /// The plan for `seed`, and how it was made: the seed's own, or a kept schedule mutated on
    /// the seed's workload.
    pub fn plan_for(&self, seed: u64) -> (Plan, String) {
        let drawn = schedule::draw(seed, self.shape);
        let mut rng = Self::rng(seed);
        if self.kept.is_empty() || rng.random_ratio(FRESH_PER_MILLE, 1_000) {
            return (drawn, "its own draw".into());
        }
        let weights: Vec<u64> = self
            .kept
            .iter()
            .map(|(_, _, sig)| (1_000_000 / self.coverage.rarest(sig).max(1)).max(1))
            .collect();
        let parent = mutate::pick_weighted(&weights, &mut rng).unwrap_or(0);
        let (from_seed, parent_schedule, _) = &self.kept[parent];
        let shape = shape_of(&drawn, self.shape);
        let mut schedule = on_members(parent_schedule, drawn.members);
        let mut how = Vec::new();
        for _ in 0..8 {
            if how.len() >= 2 {
                break;
            }
            let mutation = Mutation::ALL[rng.random_range(0..Mutation::ALL.len())];
            if matches!(mutation, Mutation::Reseed | Mutation::Splice) {
                continue;
            }
            if let Some(next) =
                mutate::apply(mutation, &schedule, &shape, &self.vocabulary, None, 0, &mut rng)
            {
                schedule = next;
                how.push(mutation.name());
            }
        }
        match drawn.clone().with_schedule(schedule) {
            Ok(plan) if !how.is_empty() => {
                (plan, format!("seed {from_seed}'s schedule, {}", how.join(", ")))
            }
            _ => (drawn, "its own draw".into()),
        }
    }

    /// Seed `seed`'s own draws of the search (fresh or not, which kept schedule, how mutated).
    fn rng(seed: u64) -> ChaCha8Rng {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(0x0065_7870_6c6f_7265);
        rng
    }

    /// Takes what seed `seed`'s run under `plan` met (its served history); returns what no
    /// earlier seed had met. A run that met something new keeps its schedule.
    pub fn learn(&mut self, seed: u64, plan: &Plan, history: &History) -> Vec<Element> {
        let signature = met(history);
        let new = self.coverage.add(&signature);
        if !new.is_empty() {
            self.kept.push((seed, schedule_of(plan), signature));
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
    let mut signature = Signature::of(&ProbeHits::default(), history);
    for e in history.events() {
        if let EventKind::World(WorldEvent::TriggerFired { trigger, .. }) = &e.kind {
            let on = trigger.split(':').next().unwrap_or(trigger);
            signature.elements.insert(Element::Probe(format!("trigger fired {on}")));
        }
    }
    signature
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
mod tests {
    use super::*;
    use groupsim_member::GroupProtocol;

    fn shape() -> PlanShape {
        PlanShape {
            brokers: 3,
            fault_ms: 20_000,
            session_timeout_ms: 6_000,
            protocol: GroupProtocol::Classic,
        }
    }

    /// Before anything is kept every seed runs its own plan; once a run met something, later
    /// seeds take mutations of its schedule on their own workload (naming only their members),
    /// and the choice is the same every time.
    /// Once schedules are kept, a seed runs its own draw only when its coin says so: a kept
    /// schedule always yields a mutation, including the seeds' own drawn ones, whose broker
    /// faults name members as `#N` picks (these once made every mutation of such a schedule
    /// unfit, so most seeds fell back to their own draws).
    #[test]
    fn a_seed_runs_its_own_draw_only_when_its_coin_says_so() {
        let mut search = ClientSearch::new(shape());
        for seed in 0..12 {
            let plan = schedule::draw(seed, shape());
            let mut history = History::default();
            let trigger = format!("on e{seed}: drop");
            history.world(5, WorldEvent::TriggerFired { trigger, target: "c".into() });
            search.learn(seed, &plan, &history);
        }
        let picks = |s: &FaultSchedule| {
            s.faults.iter().any(|f| serde_json::to_string(&f.fault).unwrap().contains("\"#"))
        };
        assert!(search.kept.iter().any(|(_, s, _)| picks(s)), "the draws name members as #N");
        for seed in 12..80 {
            let fresh = ClientSearch::rng(seed).random_ratio(FRESH_PER_MILLE, 1_000);
            let (_, how) = search.plan_for(seed);
            assert_eq!(how == "its own draw", fresh, "seed {seed}: {how}");
        }
    }

    #[test]
    fn seeds_take_mutations_of_what_met_something_new() {
        let mut search = ClientSearch::new(shape());
        assert!(!search.vocabulary.is_empty());
        let (plan, how) = search.plan_for(0);
        assert_eq!(how, "its own draw");
        assert_eq!(plan, schedule::draw(0, shape()));
        let mut history = History::default();
        history.world(
            5,
            WorldEvent::TriggerFired { trigger: "on x: drop".into(), target: "c".into() },
        );
        assert_eq!(search.learn(0, &plan, &history).len(), 1);
        assert_eq!(search.learn(0, &plan, &history).len(), 0, "nothing new the second time");
        let mutated: Vec<u64> =
            (1..40).filter(|&s| search.plan_for(s).1 != "its own draw").collect();
        assert!(mutated.len() > 10, "most seeds mutate the kept schedule: {mutated:?}");
        for s in mutated {
            let (plan, how) = search.plan_for(s);
            assert_eq!((plan.clone(), how.clone()), search.plan_for(s), "deterministic");
            assert!(how.starts_with("seed 0's schedule"), "{how}");
            let own = schedule::draw(s, shape());
            assert_eq!((plan.members, plan.partitions), (own.members, own.partitions));
            for f in &plan.client {
                if let Some(m) = serde_json::to_value(&f.fault).unwrap().get("member") {
                    let m = m.as_str().unwrap();
                    assert!(schedule::member_index(m, plan.members).is_some(), "{m}");
                }
            }
        }
    }
}
