//! groupsim-checker: reads only a run's [`History`] and proves (or refutes) that no committed
//! offset was lost or duplicated across rebalances, that no zombie committed, and that the group
//! recovered. It never calls the coordinator or a member, so a bug there cannot hide itself:
//! the crate depends on `groupsim-history` and the wire's base types, not on either core.
//!
//! It reads the events in order into views over the history (`views`: each group, partition
//! and member as the events describe them) and checks each rule group against the views as
//! they stood before the event: `commits`, `ownership`, `liveness`; `metrics` gathers
//! the run's figures. Rules (each anomaly names its class, the partition and the events that
//! prove it):
//! - `offset-regression`: an accepted commit is lower than the partition's previous one.
//! - `duplicate-commit`: a record is covered by two accepted commits (a commit covers the
//!   records between the previous committed offset and its own).
//! - `uncovered-commit`: an accepted commit covers records the committing member did not process
//!   while it held the partition (across generations, for a partition it kept): they were never
//!   processed by anyone who could vouch for them, so they are lost to the application.
//! - `zombie-commit`: a commit accepted from a member that was no longer in the group, or under a
//!   generation that was not the group's current one, when the coordinator validated it (the
//!   accepted event is recorded when the append completes, and Kafka does not check again then).
//! - `unowned-commit`: a commit accepted for a partition the committer was not assigned in that
//!   generation.
//! - `split-assignment`: one generation's assignment gives a partition to two members; in a
//!   KIP-848 consumer group, a partition assigned while another member still owns it
//!   (`consumer`).
//! - `lost-commit`: a member resumed from an offset lower than a commit that had been accepted
//!   before its assignment (the acknowledged commit vanished).
//! - `stale-reset`: a member reset its generation or member id on an ILLEGAL_GENERATION or
//!   UNKNOWN_MEMBER_ID answering a request sent under an earlier generation or member id
//!   (KAFKA-9823: a needless lost assignment and rebalance).
//! - `fenced-join`: a KIP-848 join (member epoch 0) answered FENCED_MEMBER_EPOCH (`consumer`;
//!   KAFKA-19233: a fenced member's rejoin with its member id must be accepted).
//! - `stalled-member`: after the heal, a live member's session expired more than the stall bound
//!   after it, or a partition it owns with unprocessed records saw nothing processed by it for
//!   twice that bound (`stalls`).
//! - `member-gave-up`: a member stopped consuming on its own: a fatal error a correct client
//!   survives, or a leave nobody asked for (`gave_up`).
//! - `position-rewind` / `position-skip`: a member started a partition it was given below /
//!   above the committed offset in force since it got it (`positions`).
//! - `stuck`: at the end of the liveness phase the group is not Stable with every live member in
//!   the latest generation, every partition assigned and commits at the log end.
//!
//! Anomalies a hazard Kafka allows explains (`hazard` names them; `hazards`, `taken_partitions`,
//! `stranded` and `liveness` find where each acted) are reported apart, with the hazard, and do
//! not fail the run.
//!
//! A KIP-848 consumer group is judged by member epochs, not generations (`consumer_view` reads
//! its events, `consumer` holds its rules): `zombie-commit` is a commit accepted under a member
//! epoch that was not the committer's when validated, or from a member the group no longer held;
//! `unowned-commit` a commit for a partition the coordinator did not count the committer the
//! owner of; the commit rules follow a member's holding of a partition across epochs; `stuck`
//! asks for every live member reconciled to the target of the group epoch.
//!
//! A group that migrates between the protocols (KIP-848's online upgrade and downgrade) is
//! judged by the protocol it spoke when the coordinator validated a commit (`protocols`): after
//! an upgrade every member, classic-protocol members included (their generation is their member
//! epoch), by member epochs and the coordinator's ownership events; after a downgrade by
//! generations again, starting from the downgraded generation and its stored assignments; in the
//! millisecond of a conversion by either rule.

mod admin;
mod admin_offsets;
mod anomaly;
pub mod black_box;
mod black_box_consumer;
mod black_box_positions;
mod black_box_stalls;
pub mod broker;
mod commits;
mod consumer;
mod consumer_view;
mod conversions;
mod fixed_hash;
mod gave_up;
mod hazard;
mod hazards;
mod interned;
mod invalid_requests;
mod liveness;
mod member_views;
mod metrics;
mod overtaken_rejoin;
mod ownership;
mod positions;
mod processed;
mod protocols;
mod ranges;
mod resets;
mod spans;
mod stalls;
mod stranded;
mod taken_partitions;
mod tenures;
mod views;

use std::collections::BTreeMap;

use groupsim_history::{
    ConsumerGroupEvent, ConsumerRemovalReason, CoordinatorEvent, Event, EventKind, History,
    MemberEvent, RemovalReason,
};
use serde::{Deserialize, Serialize};

pub use self::anomaly::{Anomaly, AnomalyClass};
pub use self::hazard::{Explained, Hazard};
use self::metrics::Metrics;
pub use self::metrics::Stats;
use self::protocols::Judged;
use self::views::{AcceptedCommit, Views};

/// The checker's conclusion about a run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verdict {
    /// Every anomaly found that no hazard explains, in the order found.
    pub anomalies: Vec<Anomaly>,
    /// Anomalies a hazard Kafka allows explains (the world played it as a named fault): shown,
    /// not failing the run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hazards: Vec<Explained>,
    /// Run figures.
    pub stats: Stats,
}

impl Verdict {
    /// Whether the run is clean.
    pub fn is_ok(&self) -> bool {
        self.anomalies.is_empty()
    }

    /// The first anomaly, if any.
    pub fn first(&self) -> Option<&Anomaly> {
        self.anomalies.first()
    }

    /// Anomaly counts by class.
    pub fn counts(&self) -> BTreeMap<AnomalyClass, usize> {
        let mut m = BTreeMap::new();
        for a in &self.anomalies {
            *m.entry(a.class).or_insert(0) += 1;
        }
        m
    }
}

/// Checks a history against every rule. Pure: the same history gives the same verdict.
pub fn check(history: &History) -> Verdict {
    LivenessWatch::default().finish(history)
}

/// The per-event rules over `events[from..]`, against `views` as they stand before each event.
fn read_events(
    from: usize,
    events: &[Event],
    views: &mut Views,
    metrics: &mut Metrics,
    anomalies: &mut Vec<Anomaly>,
    fenced_joins: &mut consumer::FencedJoins,
    stalls: &mut stalls::Stalls,
) {
    for (idx, event) in events.iter().enumerate().skip(from) {
        anomalies.extend(stalls.due(views, event.at_ms, idx));
        let found = rules(views, idx, event);
        // Mostly none: an empty vector is dropped without walking it.
        if !found.is_empty() {
            for a in found {
                if fenced_joins.admit(&event.kind, &a, anomalies.len()) {
                    anomalies.push(a);
                }
            }
        }
        views.apply(idx, event, metrics);
    }
}

/// The rules that read the whole history, once every event has been read.
fn finish_verdict(
    history: &History,
    views: Views,
    metrics: Metrics,
    mut anomalies: Vec<Anomaly>,
    fenced_joins: consumer::FencedJoins,
    mut stalls: stalls::Stalls,
) -> Verdict {
    fenced_joins.finish(&mut anomalies);
    anomalies.extend(admin::check(history));
    anomalies.extend(admin_offsets::check(history));
    anomalies.extend(invalid_requests::check(history));
    let answers = broker::history::anomalies(history);
    let mut stuck_explained = Vec::new();
    if let Some(deadline) = views.liveness_deadline {
        let last = history.len().saturating_sub(1);
        // The run may end early, converged: a stall's bound can only pass while it runs.
        anomalies.extend(stalls.due(&views, deadline.min(views.end_ms), last));
        let overtaken = overtaken_rejoin::overtaken(history);
        let (stuck, explained) = liveness::stuck(&views, last, &overtaken);
        anomalies.extend(stuck);
        stuck_explained = explained;
    }
    anomalies.extend(answers);
    let (anomalies, mut hazards) = hazards::explain(history, anomalies);
    hazards.extend(stuck_explained);
    Verdict { anomalies, hazards, stats: metrics.finish(views.end_ms) }
}

/// The checker read while a run records its history, so the world can end a run as soon as
/// the group has converged instead of at the liveness deadline (it asks the same question
/// `stuck` asks at the deadline), and so the verdict at the end reads only the events recorded
/// since ([`Self::finish`]): the views are built once per run, not twice.
#[derive(Default)]
pub struct LivenessWatch {
    views: Views,
    metrics: Metrics,
    anomalies: Vec<Anomaly>,
    fenced_joins: consumer::FencedJoins,
    stalls: stalls::Stalls,
    read: usize,
}

impl LivenessWatch {
    /// Reads the events of `events` (the history from its start) not read yet.
    pub fn read(&mut self, events: &[Event]) {
        read_events(
            self.read,
            events,
            &mut self.views,
            &mut self.metrics,
            &mut self.anomalies,
            &mut self.fenced_joins,
            &mut self.stalls,
        );
        self.read = self.read.max(events.len());
    }

    /// The verdict on `history`, of which this watch has read a prefix (the world only ever
    /// appends): the same verdict [`check`] gives.
    pub fn finish(mut self, history: &History) -> Verdict {
        self.read(history.events());
        let Self { views, metrics, anomalies, fenced_joins, stalls, .. } = self;
        finish_verdict(history, views, metrics, anomalies, fenced_joins, stalls)
    }

    /// Whether the liveness phase has begun and the group has converged as far as the events
    /// read show: `stuck` would find nothing if the run ended now.
    pub fn holds(&self) -> bool {
        self.views.liveness_deadline.is_some() && liveness::holds(&self.views)
    }
}

/// Checks a saved history of either kind: a simulated one (it holds member events) against
/// every rule, a served one (only the broker's events) against the black-box rules that need
/// no processed-record logs.
pub fn check_any(history: &History) -> Verdict {
    let simulated = history.events().iter().any(|e| matches!(e.kind, EventKind::Member { .. }));
    if simulated {
        check(history)
    } else {
        black_box::check_black_box(history, None).verdict()
    }
}

/// The anomalies event `idx` shows against the views as they stood before it, in report order.
fn rules(views: &Views, idx: usize, event: &Event) -> Vec<Anomaly> {
    let at = event.at_ms;
    match &event.kind {
        EventKind::Coordinator { event, .. } => match event {
            CoordinatorEvent::AssignmentStored { generation, assignments, .. } => {
                ownership::split_assignment(idx, at, *generation, assignments)
            }
            CoordinatorEvent::OffsetCommitAccepted { .. } => {
                let Some(c) = AcceptedCommit::of(idx, at, event) else { return Vec::new() };
                let by_epochs =
                    |cg| (consumer::zombie_commit(cg, &c), consumer::unowned_commit(cg, &c));
                let by_generations =
                    || (ownership::zombie_commit(views, &c), ownership::unowned_commit(views, &c));
                let (zombie, unowned) = match views.commit_judged(&c) {
                    (Judged::Consumer, Some(cg)) => by_epochs(cg),
                    // Validated in the millisecond of a conversion: either protocol's rule may
                    // have been in force, so only what both find is an anomaly.
                    (Judged::Either, Some(cg)) => {
                        let ((z1, u1), (z2, u2)) = (by_epochs(cg), by_generations());
                        (z1.filter(|_| z2.is_some()), u1.filter(|_| u2.is_some()))
                    }
                    _ => by_generations(),
                };
                [
                    zombie,
                    unowned,
                    commits::offset_regression(views, &c),
                    commits::duplicate_commit(views, &c),
                    commits::uncovered_commit(views, &c),
                ]
                .into_iter()
                .flatten()
                .collect()
            }
            CoordinatorEvent::GroupLoaded { group, offsets, .. } => {
                commits::lost_on_load(views, idx, at, group, offsets)
            }
            CoordinatorEvent::MemberRemoved {
                member_id,
                reason: RemovalReason::SessionTimeout,
                ..
            } => stalls::session_expired(views, idx, at, member_id).into_iter().collect(),
            CoordinatorEvent::ConsumerGroup(e) => {
                let group = views.consumer_groups.get(e.group());
                let mut found: Vec<Anomaly> =
                    consumer::assigned_before_release(group, idx, at, e).into_iter().collect();
                if let ConsumerGroupEvent::MemberRemoved {
                    member_id,
                    reason: ConsumerRemovalReason::SessionTimeout,
                    ..
                } = e
                {
                    found.extend(stalls::session_expired(views, idx, at, member_id));
                }
                found
            }
            _ => Vec::new(),
        },
        EventKind::Member {
            member,
            event:
                MemberEvent::PositionInitialized {
                    member_id,
                    generation,
                    partition,
                    committed,
                    position,
                    reset_after,
                },
        } if !views.removed_from_consumer_group(member, member_id, at) => [
            // A member that reset after an OffsetFetch error did not learn what the coordinator
            // holds: where it starts is judged, not the coordinator.
            reset_after
                .is_none()
                .then(|| {
                    commits::lost_on_resume(
                        views,
                        idx,
                        at,
                        member,
                        *generation,
                        partition,
                        *committed,
                    )
                })
                .flatten(),
            positions::moved_position(
                views,
                idx,
                at,
                member,
                *generation,
                partition,
                *committed,
                *position,
            ),
        ]
        .into_iter()
        .flatten()
        .collect(),
        EventKind::Member {
            member,
            event: event @ (MemberEvent::Fatal { .. } | MemberEvent::Left { .. }),
        } => gave_up::gave_up(views, idx, at, member, event).into_iter().collect(),
        EventKind::Member { member, event: event @ MemberEvent::GenerationReset { .. } } => {
            resets::stale_reset(idx, at, member, event).into_iter().collect()
        }
        EventKind::Member { member, event: event @ MemberEvent::HeartbeatFailed { .. } } => {
            consumer::fenced_join(&views.consumer_groups, idx, at, member, event)
                .into_iter()
                .collect()
        }
        EventKind::Member { .. } | EventKind::World(_) => Vec::new(),
    }
}

#[cfg(test)]
mod consumer_tests;
#[cfg(test)]
mod migration_tests;
#[cfg(test)]
mod static_migration_tests;
#[cfg(test)]
mod tests;
