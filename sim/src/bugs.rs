//! Bug switches: named, off by default, each making the coordinator or the members misbehave in
//! one realistic way. They prove the checker: a switch that the checker cannot catch would mean
//! a blind spot. `groupsim bugs` lists them; `--bug <name>` turns one on for `run`, `sweep`,
//! `replay` and `shrink`.

use crate::checker::AnomalyClass;
use crate::scenario::ScenarioSpec;

/// One bug switch.
#[derive(Clone, Copy)]
pub struct BugSwitch {
    /// The name used with `--bug`.
    pub name: &'static str,
    /// Which side misbehaves and how.
    pub summary: &'static str,
    /// The anomaly classes the checker should report when the bug bites.
    pub expected: &'static [AnomalyClass],
    apply: fn(&mut ScenarioSpec),
}

impl std::fmt::Debug for BugSwitch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BugSwitch").field("name", &self.name).finish()
    }
}

impl BugSwitch {
    /// Turns the bug on in a drawn scenario.
    pub fn apply(&self, spec: &mut ScenarioSpec) {
        (self.apply)(spec)
    }

    /// Whether a verdict shows this bug (one of its expected classes occurred).
    pub fn caught_by(&self, classes: &[AnomalyClass]) -> bool {
        classes.iter().any(|c| self.expected.contains(c))
    }
}

/// A `--bug` name that does not exist.
#[derive(Debug, thiserror::Error)]
#[error("unknown bug switch {name:?}; known switches: {known}")]
pub struct UnknownBug {
    /// What was asked for.
    pub name: String,
    /// Known names, comma-separated.
    pub known: String,
}

/// Every bug switch.
pub fn all() -> Vec<BugSwitch> {
    vec![
        BugSwitch {
            name: "coordinator-skips-generation-check",
            summary:
                "coordinator: OffsetCommit is accepted whatever the member id and generation, \
                      so a paused zombie's commit gets in",
            expected: &[
                AnomalyClass::ZombieCommit,
                AnomalyClass::UnownedCommit,
                AnomalyClass::UncoveredCommit,
            ],
            apply: |s| s.coordinator.bugs.skip_commit_generation_check = true,
        },
        BugSwitch {
            name: "coordinator-acks-before-log-append",
            summary:
                "coordinator: a commit is acknowledged before its offsets-log append completes; \
                      a broker crash in between loses an acknowledged commit",
            expected: &[
                AnomalyClass::LostCommit,
                AnomalyClass::OffsetRegression,
                AnomalyClass::DuplicateCommit,
            ],
            // The bug bites when replication is slow (a lagging follower in the ISR): model a
            // 500 ms offsets-log append so a crash lands inside the window.
            apply: |s| {
                s.coordinator.bugs.ack_commit_before_log_append = true;
                s.coordinator.offsets_append_delay_ms =
                    s.coordinator.offsets_append_delay_ms.max(500);
            },
        },
        BugSwitch {
            name: "member-keeps-stale-acks",
            summary: "member: acks from an older generation are applied and committed under the \
                      current generation",
            expected: &[
                AnomalyClass::UncoveredCommit,
                AnomalyClass::DuplicateCommit,
                AnomalyClass::UnownedCommit,
            ],
            apply: |s| s.members.iter_mut().for_each(|m| m.config.bugs.keep_stale_acks = true),
        },
        BugSwitch {
            name: "member-commits-after-revoke",
            summary:
                "member: after revoking, it commits the revoked partitions' offsets under its \
                      new generation",
            expected: &[
                AnomalyClass::UnownedCommit,
                AnomalyClass::UncoveredCommit,
                AnomalyClass::DuplicateCommit,
            ],
            apply: |s| s.members.iter_mut().for_each(|m| m.config.bugs.commit_after_revoke = true),
        },
        BugSwitch {
            name: "member-overcommits-after-skipped-revoke-commit",
            summary: "member: forgets to commit on revoke, and later commits a higher offset than \
                      it processed",
            expected: &[AnomalyClass::UncoveredCommit],
            apply: |s| {
                s.members
                    .iter_mut()
                    .for_each(|m| m.config.bugs.skip_revoke_commit_then_overcommit = true)
            },
        },
        BugSwitch {
            name: "assignor-double-assigns",
            summary: "member (leader): the assignor gives one partition to two members",
            expected: &[AnomalyClass::SplitAssignment],
            apply: |s| s.members.iter_mut().for_each(|m| m.config.bugs.double_assign = true),
        },
    ]
}

/// Looks a bug switch up by name.
pub fn find(name: &str) -> Result<BugSwitch, UnknownBug> {
    let all = all();
    all.iter().find(|b| b.name == name).copied().ok_or_else(|| UnknownBug {
        name: name.to_string(),
        known: all.iter().map(|b| b.name).collect::<Vec<_>>().join(", "),
    })
}
