//! The black-box rules for a KIP-848 consumer group (a real client with
//! `group.protocol=consumer`): what the coordinator's consumer-group events say about
//! membership, member epochs and partition ownership, against the commits it accepted and what
//! the clients say they processed.
//!
//! Ownership follows the coordinator's events: a partition is a member's from
//! `PartitionsAssigned` until `PartitionsReleased` (it acknowledged the revocation, or was
//! removed), and a load replaces the group with what the offsets log held. A member is live from
//! `MemberJoined` until `MemberRemoved` (librdkafka rejoins with the same member id after being
//! fenced, so one id can have several live intervals).
//!
//! Rules (the classic black-box rules in consumer-protocol terms):
//! - `split-assignment`: a partition assigned while another member still owns it.
//! - `zombie-commit`: a commit accepted from a member that was not in the group, or under a
//!   member epoch that was not its epoch, when the coordinator validated it (Kafka answers
//!   UNKNOWN_MEMBER_ID and STALE_MEMBER_EPOCH there).
//! - `unowned-commit`: a commit accepted for a partition the member did not own when the
//!   coordinator validated it (Kafka does not check this: the client must not do it).
//! - `split-processing`: a client processed a partition while its member was live and did not
//!   own it, and another member did.
//! - `stuck` (its consumer part): after the heal phase the group is not Stable: no members, the
//!   target assignment behind the group epoch, or a member not reconciled to the target.
//!
//! Event instants are whole milliseconds and a commit carries only the millisecond it was
//! validated in, so where several events share that millisecond a commit is judged by the best
//! of them (it is not called a zombie if the member had its epoch at any point of it).

use std::collections::{BTreeMap, BTreeSet};

use groupsim_history::ConsumerGroupEvent;
use groupsim_wire::{Millis, TopicPartition};

use super::anomaly::{Anomaly, AnomalyClass};
use super::black_box_positions::{close, Holding};
use super::consumer::assigned_before_release;
use super::consumer_view::ConsumerGroupView;
use super::views::AcceptedCommit;

/// An interval of real milliseconds; `to` is `None` while it lasts.
#[derive(Clone, Copy, Debug)]
struct Span {
    from: Millis,
    to: Option<Millis>,
}

impl Span {
    fn open(at: Millis) -> Self {
        Self { from: at, to: None }
    }

    fn covers(&self, at: Millis) -> bool {
        self.from <= at && self.to.is_none_or(|to| at <= to)
    }

    fn overlaps(&self, from: Millis, to: Millis) -> bool {
        self.from <= to && self.to.is_none_or(|end| from <= end)
    }
}

/// One member as the events describe it now.
#[derive(Clone, Debug)]
struct Member {
    epoch: i32,
    state: String,
}

/// A consumer group as the broker history shows it.
#[derive(Default)]
pub(super) struct ConsumerGroupBox {
    /// The broker coordinating it (events from others are stale).
    coordinator: Option<i32>,
    group_epoch: i32,
    assignment_epoch: i32,
    members: BTreeMap<String, Member>,
    /// member id -> when it was live.
    live: BTreeMap<String, Vec<Span>>,
    /// member id -> (since, epoch), in order.
    epochs: BTreeMap<String, Vec<(Millis, i32)>>,
    /// partition -> (owner, when), in order.
    held: BTreeMap<TopicPartition, Vec<(String, Span)>>,
    /// The simulated checker's view of the group, for `split-assignment` (current owners).
    owners: ConsumerGroupView,
    /// partition -> (offset, event) of the last accepted commit.
    pub(super) committed: BTreeMap<TopicPartition, (i64, usize)>,
    /// Holdings the coordinator began by assigning a partition (not by an upgrade or a load,
    /// whose members go on with what they had).
    pub(super) holdings: Vec<Holding>,
}

impl ConsumerGroupBox {
    /// Reads one consumer-group event (number `idx`, at `at`, from broker `node`); returns
    /// the anomalies it shows.
    pub(super) fn apply(
        &mut self,
        idx: usize,
        at: Millis,
        node: i32,
        event: &ConsumerGroupEvent,
    ) -> Vec<Anomaly> {
        if let ConsumerGroupEvent::GroupLoaded { .. } = event {
            self.coordinator = Some(node);
        } else if *self.coordinator.get_or_insert(node) != node {
            return Vec::new();
        }
        let found = assigned_before_release(Some(&self.owners), idx, at, event);
        self.owners.apply(idx, at, event);
        match event {
            ConsumerGroupEvent::MemberJoined { member_id, .. } => self.join(member_id, at),
            ConsumerGroupEvent::GroupEpochBumped { epoch, .. } => self.group_epoch = *epoch,
            ConsumerGroupEvent::TargetAssignmentComputed { epoch, .. } => {
                self.assignment_epoch = *epoch;
            }
            ConsumerGroupEvent::MemberEpochChanged { member_id, to, state, .. } => {
                self.members.insert(member_id.clone(), Member { epoch: *to, state: state.clone() });
                self.epochs.entry(member_id.clone()).or_default().push((at, *to));
            }
            ConsumerGroupEvent::PartitionsAssigned { member_id, partitions, .. } => {
                for tp in partitions {
                    if self.take(tp, member_id, at) {
                        self.holdings.push(Holding {
                            member_id: member_id.clone(),
                            partition: tp.clone(),
                            from: at,
                            committed: self.committed.get(tp).copied(),
                            idx,
                            until: None,
                        });
                    }
                }
            }
            ConsumerGroupEvent::PartitionsRevoking { .. }
            | ConsumerGroupEvent::UpgradeRefused { .. }
            | ConsumerGroupEvent::EmptyGroupDeleted { .. } => {}
            ConsumerGroupEvent::PartitionsReleased { member_id, partitions, .. } => {
                for tp in partitions {
                    self.release(tp, member_id, at);
                }
            }
            ConsumerGroupEvent::MemberRemoved { member_id, .. } => self.remove(member_id, at),
            // Online migration: an upgraded group's classic members join it holding their
            // classic assignment; a downgraded group is classic again and leaves this view.
            ConsumerGroupEvent::GroupUpgraded { members, .. } => {
                for m in members {
                    self.join(&m.member_id, at);
                    let member = Member { epoch: m.member_epoch, state: "STABLE".to_string() };
                    self.members.insert(m.member_id.clone(), member);
                    self.epochs.entry(m.member_id.clone()).or_default().push((at, m.member_epoch));
                    for tp in &m.partitions {
                        self.take(tp, &m.member_id, at);
                    }
                }
            }
            ConsumerGroupEvent::GroupDowngraded { members, leaving_member, .. } => {
                self.remove(leaving_member, at);
                for m in members {
                    self.remove(&m.member_id, at);
                }
            }
            ConsumerGroupEvent::GroupLoaded { group_epoch, assignment_epoch, members, .. } => {
                self.group_epoch = *group_epoch;
                self.assignment_epoch = *assignment_epoch;
                let loaded: BTreeSet<&String> = members.iter().map(|m| &m.member_id).collect();
                let gone: Vec<String> =
                    self.members.keys().filter(|m| !loaded.contains(m)).cloned().collect();
                for m in gone {
                    self.remove(&m, at);
                }
                for m in members {
                    self.join(&m.member_id, at);
                    // The stored form keeps no reconciliation state: a member at the target
                    // epoch counts as Stable until its next heartbeat says otherwise.
                    let state = if m.member_epoch == *assignment_epoch { "STABLE" } else { "" };
                    let member = Member { epoch: m.member_epoch, state: state.to_string() };
                    self.members.insert(m.member_id.clone(), member);
                    self.epochs.entry(m.member_id.clone()).or_default().push((at, m.member_epoch));
                    let owned: BTreeSet<&TopicPartition> = m.owned.iter().collect();
                    let dropped: Vec<TopicPartition> = self
                        .held
                        .iter()
                        .filter(|(tp, spans)| {
                            !owned.contains(tp)
                                && spans
                                    .last()
                                    .is_some_and(|(o, s)| o == &m.member_id && s.to.is_none())
                        })
                        .map(|(tp, _)| tp.clone())
                        .collect();
                    for tp in dropped {
                        self.release(&tp, &m.member_id, at);
                    }
                    for tp in &m.owned {
                        self.take(tp, &m.member_id, at);
                    }
                }
            }
        }
        found
    }

    fn join(&mut self, member: &str, at: Millis) {
        let spans = self.live.entry(member.to_string()).or_default();
        if spans.last().is_none_or(|s| s.to.is_some()) {
            spans.push(Span::open(at));
        }
        self.members.entry(member.to_string()).or_insert(Member { epoch: 0, state: String::new() });
    }

    fn remove(&mut self, member: &str, at: Millis) {
        self.members.remove(member);
        if let Some(span) = self.live.get_mut(member).and_then(|s| s.last_mut()) {
            span.to.get_or_insert(at);
        }
        let owned: Vec<TopicPartition> = self
            .held
            .iter()
            .filter(|(_, spans)| spans.last().is_some_and(|(o, s)| o == member && s.to.is_none()))
            .map(|(tp, _)| tp.clone())
            .collect();
        for tp in owned {
            self.release(&tp, member, at);
        }
    }

    /// `member` holds `tp` from `at`; whether that began a holding (it did not hold it).
    fn take(&mut self, tp: &TopicPartition, member: &str, at: Millis) -> bool {
        let spans = self.held.entry(tp.clone()).or_default();
        if spans.last().is_some_and(|(o, s)| o == member && s.to.is_none()) {
            return false;
        }
        spans.push((member.to_string(), Span::open(at)));
        true
    }

    fn release(&mut self, tp: &TopicPartition, member: &str, at: Millis) {
        close(&mut self.holdings, at, |h| h.partition == *tp && h.member_id == member);
        let Some(spans) = self.held.get_mut(tp) else { return };
        for (owner, span) in spans.iter_mut().rev() {
            if owner == member && span.to.is_none() {
                span.to = Some(at);
            }
        }
    }

    fn live_at(&self, member: &str, at: Millis) -> bool {
        self.live.get(member).is_some_and(|spans| spans.iter().any(|s| s.covers(at)))
    }

    /// The epochs `member` had at any point of millisecond `at`.
    fn epochs_at(&self, member: &str, at: Millis) -> Vec<i32> {
        let Some(list) = self.epochs.get(member) else { return Vec::new() };
        let before = list.iter().rev().find(|(since, _)| *since < at).map(|(_, e)| *e);
        before.into_iter().chain(list.iter().filter(|(s, _)| *s == at).map(|(_, e)| *e)).collect()
    }

    fn owned_during(&self, member: &str, tp: &TopicPartition, from: Millis, to: Millis) -> bool {
        self.held
            .get(tp)
            .is_some_and(|spans| spans.iter().any(|(o, s)| o == member && s.overlaps(from, to)))
    }

    /// The member owning `tp` throughout `from..=to`, with when it took it.
    fn owner_throughout(
        &self,
        tp: &TopicPartition,
        from: Millis,
        to: Millis,
    ) -> Option<(&str, Millis)> {
        let spans = self.held.get(tp)?;
        spans
            .iter()
            .find(|(_, s)| s.covers(from) && s.covers(to))
            .map(|(o, s)| (o.as_str(), s.from))
    }

    /// `zombie-commit` and `unowned-commit` for one accepted commit by a member.
    pub(super) fn commit_rules(&self, c: &AcceptedCommit<'_>) -> Vec<Anomaly> {
        if !c.by_member() {
            return Vec::new();
        }
        let (member, epoch, at, offset) = (c.member_id, c.generation, c.validated_at, c.offset);
        let zombie = if !self.live_at(member, at) {
            Some(format!(
                "commit to {offset} from {member} validated at t={at}ms, when it was not a \
                 member of the consumer group"
            ))
        } else {
            let epochs = self.epochs_at(member, at);
            (!epochs.contains(&epoch)).then(|| {
                format!(
                    "commit to {offset} from {member} validated at t={at}ms under member epoch \
                     {epoch} while its member epoch was {epochs:?}"
                )
            })
        };
        if let Some(message) = zombie {
            return vec![Anomaly::new(
                AnomalyClass::ZombieCommit,
                Some(c.tp),
                c.at,
                message,
                vec![c.idx],
            )];
        }
        if self.owned_during(member, c.tp, at, at) {
            return Vec::new();
        }
        let who = match self.owner_throughout(c.tp, at, at) {
            Some((owner, since)) => format!("{owner} owned it (since t={since}ms)"),
            None => "nobody owned it".to_string(),
        };
        let message = format!(
            "{member} committed {} to {offset} at member epoch {epoch} (validated at t={at}ms) \
             but {who}",
            c.tp
        );
        vec![Anomaly::new(AnomalyClass::UnownedCommit, Some(c.tp), c.at, message, vec![c.idx])]
    }

    /// `split-processing` for one record of `tp` at `offset` that `client` (whose member ids
    /// are `client_members`) processed at `at_ms`, judged `jitter_ms` either side (the clocks of
    /// the client and the broker).
    pub(super) fn split_processing(
        &self,
        name: &str,
        record: (&str, &TopicPartition, i64, Millis),
        client_members: &[String],
        jitter_ms: Millis,
    ) -> Option<Anomaly> {
        let (client, tp, offset, at_ms) = record;
        let (from, to) = (at_ms.saturating_sub(jitter_ms), at_ms + jitter_ms);
        let live: Vec<&String> = client_members.iter().filter(|m| self.live_at(m, at_ms)).collect();
        let member = live.first()?;
        if live.iter().any(|m| self.owned_during(m, tp, from, to)) {
            return None;
        }
        let (owner, since) = self.owner_throughout(tp, from, to)?;
        Some(Anomaly::new(
            AnomalyClass::SplitProcessing,
            Some(tp),
            at_ms,
            format!(
                "{client} ({member}) processed offset {offset} of {tp} while a live member of \
                 consumer group {name} that did not own it; {owner} owned it (since t={since}ms)"
            ),
            Vec::new(),
        ))
    }

    /// Why the group is not Stable, if it is not.
    pub(super) fn unstable(&self, name: &str) -> Option<String> {
        if self.members.is_empty() {
            return Some(format!("consumer group {name} has no members"));
        }
        let behind: Vec<String> = self
            .members
            .iter()
            .filter(|(_, m)| m.epoch != self.assignment_epoch || m.state != "STABLE")
            .map(|(id, m)| format!("{id} at epoch {} ({})", m.epoch, m.state))
            .collect();
        if self.group_epoch == self.assignment_epoch && behind.is_empty() {
            return None;
        }
        Some(format!(
            "consumer group {name} is not Stable: group epoch {}, target epoch {}{}",
            self.group_epoch,
            self.assignment_epoch,
            if behind.is_empty() { String::new() } else { format!(", {}", behind.join(", ")) }
        ))
    }
}

#[cfg(test)]
#[path = "black_box_consumer_tests.rs"]
mod tests;
