//! Shrinking: given a failing run, remove faults from its schedule (delta debugging, Zeller's
//! ddmin) while the same anomaly class still occurs, down to a schedule where removing any one
//! more fault makes the anomaly disappear.

use std::collections::BTreeSet;

use crate::faults::FaultSchedule;
use crate::runner::WorldKind;
use crate::scenario::ScenarioSpec;
use crate::world::WorldError;
use groupsim_checker::AnomalyClass;

/// The result of shrinking.
#[derive(Clone, Debug)]
pub struct Shrunk {
    /// The minimal schedule found.
    pub schedule: FaultSchedule,
    /// How many runs it took.
    pub runs: usize,
    /// The anomaly class kept throughout.
    pub class: AnomalyClass,
}

/// Whether `spec` with `schedule` shows an anomaly of `class` (in the default world).
pub fn reproduces(
    spec: &ScenarioSpec,
    schedule: &FaultSchedule,
    class: AnomalyClass,
) -> Result<bool, WorldError> {
    reproduces_in(spec, schedule, class, WorldKind::default())
}

/// [`reproduces`] in `world`.
pub fn reproduces_in(
    spec: &ScenarioSpec,
    schedule: &FaultSchedule,
    class: AnomalyClass,
    world: WorldKind,
) -> Result<bool, WorldError> {
    let mut s = spec.clone();
    s.faults = schedule.clone();
    let history = world.run(&s)?;
    Ok(groupsim_checker::check(&history).anomalies.iter().any(|a| a.class == class))
}

/// Shrinks `spec.faults` while `class` still occurs (in the default world). `spec` must
/// already fail with `class`.
pub fn shrink(spec: &ScenarioSpec, class: AnomalyClass) -> Result<Shrunk, WorldError> {
    shrink_in(spec, class, WorldKind::default())
}

/// [`shrink`] in `world`.
pub fn shrink_in(
    spec: &ScenarioSpec,
    class: AnomalyClass,
    world: WorldKind,
) -> Result<Shrunk, WorldError> {
    let mut runs = 0;
    let mut current: Vec<usize> = (0..spec.faults.len()).collect();
    let full = &spec.faults;
    let keep = |kept: &[usize]| -> FaultSchedule {
        let removed: BTreeSet<usize> = (0..full.len()).filter(|i| !kept.contains(i)).collect();
        full.without(&removed)
    };
    let mut n = 2usize;
    while current.len() >= 2 {
        let chunk = current.len().div_ceil(n);
        let subsets: Vec<Vec<usize>> = current.chunks(chunk).map(|c| c.to_vec()).collect();
        let mut reduced = false;
        // Try each subset alone, then each complement.
        for subset in &subsets {
            runs += 1;
            if reproduces_in(spec, &keep(subset), class, world)? {
                current = subset.clone();
                n = 2;
                reduced = true;
                break;
            }
        }
        if !reduced {
            for subset in &subsets {
                let complement: Vec<usize> =
                    current.iter().copied().filter(|i| !subset.contains(i)).collect();
                runs += 1;
                if reproduces_in(spec, &keep(&complement), class, world)? {
                    current = complement;
                    n = (n - 1).max(2);
                    reduced = true;
                    break;
                }
            }
        }
        if !reduced {
            if n >= current.len() {
                break;
            }
            n = (2 * n).min(current.len());
        }
    }
    // A lone fault may not be needed at all.
    if current.len() == 1 {
        runs += 1;
        if reproduces_in(spec, &keep(&[]), class, world)? {
            current.clear();
        }
    }
    Ok(Shrunk { schedule: keep(&current), runs, class })
}
