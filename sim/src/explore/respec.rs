//! Spec mutations (`explore --respec`): operators over what a seed draws beyond its fault
//! schedule, written into the schedule as [`SpecEdit`]s so a mutated run still replays from its
//! seed and one file. A parent's faults are kept and one drawn choice moves — when a member
//! starts or leaves (within the instants the scenario's own seeds draw for it), a member's
//! processing times, the world's latencies and same-instant order, the offsets log's delay —
//! where [`super::mutate::Mutation::Reseed`] changes every drawn choice at once.

use std::collections::BTreeMap;

use rand::RngExt;
use rand_chacha::ChaCha8Rng;

use super::mutate::VOCABULARY_SEEDS;
use crate::faults::FaultSchedule;
use crate::respec::{with_edit, SpecEdit};
use crate::runner::RunOptions;
use crate::scenario::{Scenario, ScenarioSpec};
use groupsim_wire::Millis;

/// How far a nudge moves a member's start or leave, in ms either way.
const NUDGE_MS: i64 = 2_000;

/// One spec mutation operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpecMutation {
    /// A member starts at another instant: a nudge of up to `NUDGE_MS` or a fresh draw within
    /// the instants the scenario's seeds start that member at.
    MemberStart,
    /// A leaving member leaves at another instant, the same way within its drawn leaves.
    MemberLeave,
    /// A member's processing times from another seed.
    MemberProcessing,
    /// The world's own draws (latencies, same-instant order, production rates, trigger odds)
    /// from another seed: the same workload and faults, other timings.
    World,
    /// Another offsets-log replication delay, within those the scenario draws.
    AppendDelay,
}

impl SpecMutation {
    /// Every operator, in a fixed order (the draw picks among them by index).
    pub const ALL: [SpecMutation; 5] = [
        SpecMutation::MemberStart,
        SpecMutation::MemberLeave,
        SpecMutation::MemberProcessing,
        SpecMutation::World,
        SpecMutation::AppendDelay,
    ];

    /// The operator's name in reports.
    pub fn name(self) -> &'static str {
        match self {
            SpecMutation::MemberStart => "member-start",
            SpecMutation::MemberLeave => "member-leave",
            SpecMutation::MemberProcessing => "member-processing",
            SpecMutation::World => "world-seed",
            SpecMutation::AppendDelay => "append-delay",
        }
    }
}

/// The ranges a scenario's own seeds draw its choices in: the material spec mutations move
/// within.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SpecRanges {
    /// Per member name, the earliest and latest start drawn.
    pub starts: BTreeMap<String, (Millis, Millis)>,
    /// Per member name, the earliest and latest leave drawn (members that some seed has leave).
    pub leaves: BTreeMap<String, (Millis, Millis)>,
    /// The least and most offsets-log delay drawn.
    pub append_delay: Option<(u64, u64)>,
}

impl SpecRanges {
    /// The ranges of `scenario` under `options`, read from its first [`VOCABULARY_SEEDS`] seeds.
    pub fn of(scenario: &Scenario, options: &RunOptions) -> Self {
        Self::from_specs((0..VOCABULARY_SEEDS).map(|seed| options.spec(scenario, seed)))
    }

    /// The ranges `specs` draw.
    pub fn from_specs(specs: impl IntoIterator<Item = ScenarioSpec>) -> Self {
        let widen = |range: Option<(u64, u64)>, v: u64| match range {
            Some((lo, hi)) => Some((lo.min(v), hi.max(v))),
            None => Some((v, v)),
        };
        let mut out = SpecRanges::default();
        for spec in specs {
            for m in &spec.members {
                let start = out.starts.get(&m.name).copied();
                out.starts.insert(m.name.clone(), widen(start, m.start_ms).unwrap_or_default());
                if let Some(leave) = m.leave_ms {
                    let old = out.leaves.get(&m.name).copied();
                    out.leaves.insert(m.name.clone(), widen(old, leave).unwrap_or_default());
                }
            }
            out.append_delay = widen(out.append_delay, spec.coordinator.offsets_append_delay_ms);
        }
        out
    }
}

/// Applies `op` to `schedule`'s spec edits for a run drawn as `drawn` (the seed's spec, before
/// the schedule's edits). `None` when the operator has nothing to move in this run or its result
/// does not apply; the faults and triggers are kept as they are.
///
/// With `from_ms` past 0 only a start or leave at or after it moves, and not before it: the run
/// stays the same up to that instant, as [`super::mutate::apply`] keeps it.
pub fn apply(
    op: SpecMutation,
    schedule: &FaultSchedule,
    drawn: &ScenarioSpec,
    ranges: &SpecRanges,
    from_ms: Millis,
    rng: &mut ChaCha8Rng,
) -> Option<FaultSchedule> {
    let mut now = drawn.clone();
    now.respec(&schedule.spec).ok()?;
    let members: Vec<&str> = now.members.iter().map(|m| m.name.as_str()).collect();
    let edit = match op {
        SpecMutation::MemberStart => {
            let movable: Vec<&str> = members
                .iter()
                .copied()
                .filter(|m| ranges.starts.get(*m).is_some_and(|(lo, hi)| hi > lo))
                .collect();
            let member = *pick(&movable, rng)?;
            let current = now.members.iter().find(|m| m.name == member)?.start_ms;
            let ms = moved(current, ranges.starts[member], rng)?;
            if current.min(ms) < from_ms {
                return None;
            }
            SpecEdit::Start { member: member.to_string(), ms }
        }
        SpecMutation::MemberLeave => {
            let leaving: Vec<(&str, Millis)> = now
                .members
                .iter()
                .filter_map(|m| Some((m.name.as_str(), m.leave_ms?)))
                .filter(|(m, _)| ranges.leaves.get(*m).is_some_and(|(lo, hi)| hi > lo))
                .collect();
            let (member, current) = *pick(&leaving, rng)?;
            let ms = moved(current, ranges.leaves[member], rng)?;
            if current.min(ms) < from_ms {
                return None;
            }
            SpecEdit::Leave { member: member.to_string(), ms }
        }
        _ if from_ms > 0 => return None,
        SpecMutation::MemberProcessing => {
            let member = *pick(&members, rng)?;
            SpecEdit::Processing { member: member.to_string(), seed: rng.random() }
        }
        SpecMutation::World => SpecEdit::World { seed: rng.random() },
        SpecMutation::AppendDelay => {
            let (lo, hi) = ranges.append_delay.filter(|(lo, hi)| hi > lo)?;
            let ms = rng.random_range(lo..=hi);
            if ms == now.coordinator.offsets_append_delay_ms {
                return None;
            }
            SpecEdit::AppendDelay { ms }
        }
    };
    let out = schedule.clone().with_spec(with_edit(&schedule.spec, edit));
    drawn.clone().respec(&out.spec).ok()?;
    Some(out)
}

/// An instant other than `current` within `range`: half the time a nudge of up to `NUDGE_MS`
/// (clamped to the range), else a fresh draw in it.
fn moved(current: Millis, (lo, hi): (Millis, Millis), rng: &mut ChaCha8Rng) -> Option<Millis> {
    let ms = if rng.random_bool(0.5) {
        let at = current as i64 + rng.random_range(-NUDGE_MS..=NUDGE_MS);
        at.clamp(lo as i64, hi as i64) as Millis
    } else {
        rng.random_range(lo..=hi)
    };
    (ms != current).then_some(ms)
}

/// `edits` without those `drawn` cannot take, each tried on its own: what a schedule keeps of
/// its edits when it moves to another seed.
pub fn fitting(edits: &[SpecEdit], drawn: &ScenarioSpec) -> Vec<SpecEdit> {
    let mut spec = drawn.clone();
    edits.iter().filter(|e| spec.respec(std::slice::from_ref(e)).is_ok()).cloned().collect()
}

fn pick<'a, T>(items: &'a [T], rng: &mut ChaCha8Rng) -> Option<&'a T> {
    (!items.is_empty()).then(|| &items[rng.random_range(0..items.len())])
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn setup(name: &str) -> (ScenarioSpec, SpecRanges) {
        let scenario = crate::scenarios::find(name).expect("in catalogue");
        let options = RunOptions::default();
        (options.spec(&scenario, 3), SpecRanges::of(&scenario, &options))
    }

    /// Runs `op` under a few rng seeds until it gives a result.
    fn mutate(op: SpecMutation, spec: &ScenarioSpec, r: &SpecRanges) -> FaultSchedule {
        (0..50)
            .find_map(|k| apply(op, &spec.faults, spec, r, 0, &mut ChaCha8Rng::seed_from_u64(k)))
            .unwrap_or_else(|| panic!("{} never applied", op.name()))
    }

    /// `spec` with `schedule`'s edits applied.
    fn edited(spec: &ScenarioSpec, schedule: &FaultSchedule) -> ScenarioSpec {
        let mut s = spec.clone();
        s.respec(&schedule.spec).expect("the edits apply");
        s
    }

    #[test]
    fn a_member_start_moves_within_what_the_scenario_draws_for_it() {
        let (spec, r) = setup("membership_churn");
        let out = mutate(SpecMutation::MemberStart, &spec, &r);
        assert_eq!((&out.faults, &out.triggers), (&spec.faults.faults, &spec.faults.triggers));
        let [SpecEdit::Start { member, ms }] = out.spec.as_slice() else { panic!("{out:?}") };
        let (lo, hi) = r.starts[member];
        assert!((lo..=hi).contains(ms));
        let after = edited(&spec, &out);
        let changed: Vec<_> =
            spec.members.iter().zip(&after.members).filter(|(a, b)| a != b).collect();
        assert_eq!(changed.len(), 1, "one member moved");
        assert_eq!(changed[0].1.start_ms, *ms);
    }

    #[test]
    fn a_member_leave_moves_within_the_drawn_leaves_and_after_the_start() {
        let (spec, r) = setup("membership_churn");
        let out = mutate(SpecMutation::MemberLeave, &spec, &r);
        let [SpecEdit::Leave { member, ms }] = out.spec.as_slice() else { panic!("{out:?}") };
        let after = edited(&spec, &out);
        let m = after.members.iter().find(|m| &m.name == member).expect("the member");
        assert_eq!(m.leave_ms, Some(*ms));
        assert!(*ms > m.start_ms && *ms <= after.liveness_start_ms);
        // A scenario whose members never leave has nothing to move.
        let (swarm, sr) = setup("swarm");
        assert!((0..20).all(|k| {
            let rng = &mut ChaCha8Rng::seed_from_u64(k);
            apply(SpecMutation::MemberLeave, &swarm.faults, &swarm, &sr, 0, rng).is_none()
        }));
    }

    #[test]
    fn processing_and_world_seeds_change_only_their_own_draws() {
        let (spec, r) = setup("swarm");
        let out = mutate(SpecMutation::MemberProcessing, &spec, &r);
        let after = edited(&spec, &out);
        let seeds = |s: &ScenarioSpec| s.members.iter().map(|m| m.seed).collect::<Vec<_>>();
        let moved = seeds(&spec).iter().zip(seeds(&after)).filter(|(a, b)| **a != *b).count();
        assert_eq!(moved, 1);
        assert_eq!(after.world_seed, None);
        let out = mutate(SpecMutation::World, &spec, &r);
        let after = edited(&spec, &out);
        assert_ne!(after.world_seed(), spec.seed);
        assert_eq!(after.seed, spec.seed, "the run's seed, as the replay names it, is kept");
        assert_eq!(after.members, spec.members);
        assert_eq!(after.faults.faults, spec.faults.faults);
    }

    #[test]
    fn an_append_delay_stays_within_the_drawn_ones() {
        let (spec, r) = setup("swarm");
        let out = mutate(SpecMutation::AppendDelay, &spec, &r);
        let (lo, hi) = r.append_delay.expect("the swarm draws its delay");
        let ms = edited(&spec, &out).coordinator.offsets_append_delay_ms;
        assert!((lo..=hi).contains(&ms) && ms != spec.coordinator.offsets_append_delay_ms);
        // A scenario with one delay for every seed has none to move to.
        let (churn, cr) = setup("membership_churn");
        let rng = &mut ChaCha8Rng::seed_from_u64(0);
        assert!(apply(SpecMutation::AppendDelay, &churn.faults, &churn, &cr, 0, rng).is_none());
    }

    #[test]
    fn after_a_frontier_only_later_starts_and_leaves_move_and_not_before_it() {
        let (spec, r) = setup("membership_churn");
        let from = 30_000;
        let outs: Vec<FaultSchedule> = (0..200)
            .filter_map(|k| {
                let rng = &mut ChaCha8Rng::seed_from_u64(k);
                let op = SpecMutation::ALL[k as usize % SpecMutation::ALL.len()];
                apply(op, &spec.faults, &spec, &r, from, rng)
            })
            .collect();
        assert!(!outs.is_empty(), "a leave after the frontier moves");
        for out in outs {
            let [SpecEdit::Leave { member, ms }] = out.spec.as_slice() else { panic!("{out:?}") };
            let m = spec.members.iter().find(|m| &m.name == member).expect("the member");
            assert!(*ms >= from && m.leave_ms.is_some_and(|l| l >= from));
        }
    }

    #[test]
    fn a_second_edit_of_one_target_replaces_the_first() {
        let (spec, r) = setup("swarm");
        let once = mutate(SpecMutation::World, &spec, &r);
        let twice = (0..50)
            .find_map(|k| {
                let rng = &mut ChaCha8Rng::seed_from_u64(100 + k);
                apply(SpecMutation::World, &once, &spec, &r, 0, rng)
            })
            .expect("applies again");
        assert_eq!(twice.spec.len(), 1);
        assert_ne!(twice.spec, once.spec);
    }

    #[test]
    fn edits_another_seed_cannot_take_are_left_behind() {
        let (spec, _) = setup("membership_churn");
        let stayer = spec.members.iter().find(|m| m.leave_ms.is_none()).expect("two stay");
        let edits = vec![
            SpecEdit::Leave { member: stayer.name.clone(), ms: 40_000 },
            SpecEdit::World { seed: 5 },
            SpecEdit::Processing { member: "m99".into(), seed: 1 },
        ];
        assert_eq!(fitting(&edits, &spec), vec![SpecEdit::World { seed: 5 }]);
    }
}
