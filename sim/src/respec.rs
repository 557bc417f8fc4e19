//! Spec edits: explicit choices that replace what a seed drew beyond its fault schedule — when a
//! member starts or leaves, the seed of its processing times, the seed of the world's own draws
//! (latencies, same-instant order, production rates, trigger odds), the offsets log's append
//! delay. A schedule file carries them beside its faults (`"spec": [...]`), so a run whose
//! workload was varied and not its faults (or the other way round) still replays from its seed
//! and one file. A leaf: [`crate::scenario::ScenarioSpec::respec`] applies them.

use std::fmt;

use groupsim_wire::Millis;
use serde::{Deserialize, Serialize};

/// One drawn choice of a run, set explicitly. Every edit sets a value (applying it twice is
/// applying it once), so a spec that already holds it is unchanged by it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(tag = "set", rename_all = "snake_case")]
pub enum SpecEdit {
    /// When a member's process starts.
    Start { member: String, ms: Millis },
    /// When a member that the draw has leave asks to leave the group.
    Leave { member: String, ms: Millis },
    /// The seed of a member's processing times.
    Processing { member: String, seed: u64 },
    /// The seed of the world's own draws: message latencies, the order of same-instant
    /// events, production rates and whether each trigger fires.
    World { seed: u64 },
    /// The offsets log's replication delay (the coordinator's `offsets_append_delay_ms`).
    AppendDelay { ms: u64 },
}

impl SpecEdit {
    /// What the edit sets, without the value: two edits of one target replace each other.
    pub fn target(&self) -> (u8, &str) {
        match self {
            SpecEdit::Start { member, .. } => (0, member),
            SpecEdit::Leave { member, .. } => (1, member),
            SpecEdit::Processing { member, .. } => (2, member),
            SpecEdit::World { .. } => (3, ""),
            SpecEdit::AppendDelay { .. } => (4, ""),
        }
    }

    /// The member the edit names, if any.
    pub fn member(&self) -> Option<&str> {
        match self {
            SpecEdit::Start { member, .. }
            | SpecEdit::Leave { member, .. }
            | SpecEdit::Processing { member, .. } => Some(member),
            SpecEdit::World { .. } | SpecEdit::AppendDelay { .. } => None,
        }
    }
}

/// `edits` with `edit` in place of any edit of the same target, in target order.
pub fn with_edit(edits: &[SpecEdit], edit: SpecEdit) -> Vec<SpecEdit> {
    let mut out: Vec<SpecEdit> =
        edits.iter().filter(|e| e.target() != edit.target()).cloned().collect();
    out.push(edit);
    out.sort();
    out
}

impl fmt::Display for SpecEdit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SpecEdit::Start { member, ms } => write!(f, "{member} starts at {ms} ms"),
            SpecEdit::Leave { member, ms } => write!(f, "{member} leaves at {ms} ms"),
            SpecEdit::Processing { member, seed } => {
                write!(f, "{member}'s processing times from seed {seed}")
            }
            SpecEdit::World { seed } => write!(f, "the world's draws from seed {seed}"),
            SpecEdit::AppendDelay { ms } => write!(f, "offsets log append delay {ms} ms"),
        }
    }
}

/// A spec edit the drawn run cannot take.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RespecError {
    /// An edit naming a member the run does not start.
    #[error("spec edit `{edit}`: the run has no member {member:?}")]
    UnknownMember { edit: String, member: String },
    /// A leave set for a member the draw never has leave.
    #[error("spec edit `{edit}`: the drawn run never has {member} leave")]
    NoLeave { edit: String, member: String },
    /// An instant outside what the run allows (a start after the safety phase, a leave before
    /// the start or after the safety phase).
    #[error("spec edit `{edit}`: {why}")]
    OutOfRange { edit: String, why: String },
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::faults::{FaultSchedule, Mode};
    use crate::runner::{run_seed_with, RunOptions};
    use crate::world::WorldError;

    fn with(edits: Vec<SpecEdit>) -> RunOptions {
        let schedule = FaultSchedule::default().with_spec(edits);
        RunOptions { schedule: Some(schedule), ..RunOptions::default() }
    }

    #[test]
    fn a_schedule_file_without_edits_reads_and_writes_as_before() {
        let old = r#"{ "faults": [ { "at_ms": 5000, "fault": { "kind": "connection_drop", "member": "m1" } } ] }"#;
        let s = FaultSchedule::from_json(old).expect("an old file reads");
        assert!(s.spec.is_empty());
        assert!(!s.to_json().contains("spec"), "nothing new written");
        let edited = s.with_spec(vec![
            SpecEdit::World { seed: 9 },
            SpecEdit::Start { member: "m1".into(), ms: 700 },
        ]);
        assert_eq!(FaultSchedule::from_json(&edited.to_json()).expect("reads"), edited);
        let refused = edited.refuse_unsupported(Mode::CheckClient).expect_err("real time");
        assert!(refused.to_string().contains("spec edits"), "{refused}");
        edited.refuse_unsupported(Mode::Simulated).expect("a simulated run takes them");
    }

    #[test]
    fn shrinking_a_schedule_keeps_its_edits() {
        use crate::faults::{Fault, ScheduledFault};
        let drop = Fault::ConnectionDrop { member: "m0".into() };
        let s = FaultSchedule::new(vec![ScheduledFault { at_ms: 5, fault: drop }])
            .with_spec(vec![SpecEdit::World { seed: 1 }]);
        let shrunk = s.without(&[0].into_iter().collect());
        assert!(shrunk.is_empty());
        assert_eq!(shrunk.spec, s.spec, "a shrunk finding still replays its edits");
    }

    #[test]
    fn an_edit_the_run_cannot_take_is_refused_naming_it() {
        let s = crate::scenarios::find("membership_churn").expect("in catalogue");
        let bad = with(vec![SpecEdit::Processing { member: "m42".into(), seed: 1 }]);
        match run_seed_with(&s, 0, &bad) {
            Err(WorldError::InvalidScenario { reason, .. }) => assert!(reason.contains("m42")),
            other => panic!("{:?}", other.map(|r| r.verdict)),
        }
        let late = with(vec![SpecEdit::Start { member: "m0".into(), ms: 10_000_000 }]);
        let e = RunOptions::try_spec(&late, &s, 0).expect_err("after the safety phase");
        assert!(matches!(e, RespecError::OutOfRange { .. }), "{e}");
    }

    #[test]
    fn the_world_seed_edit_moves_only_the_worlds_draws() {
        let s = crate::scenarios::find("steady_state").expect("in catalogue");
        let plain = run_seed_with(&s, 4, &RunOptions::default()).expect("runs");
        let own = run_seed_with(&s, 4, &with(vec![SpecEdit::World { seed: 4 }])).expect("runs");
        assert_eq!(own.history_hash(), plain.history_hash(), "its own seed changes nothing");
        let other = run_seed_with(&s, 4, &with(vec![SpecEdit::World { seed: 5 }])).expect("runs");
        assert_ne!(other.history_hash(), plain.history_hash());
        assert_eq!(other.spec.members, plain.spec.members, "the same workload");
    }
}
