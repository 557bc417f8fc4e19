//! A KIP-848 consumer group as its coordinators' events describe it: the group epoch, the
//! target assignment, each member's epoch and reconciliation state over time, and who owns
//! each partition over time. A partition is a member's from `PartitionsAssigned` until
//! `PartitionsReleased` (it acknowledged the revocation, or was fenced, left or replaced); a
//! load replaces the group with what the offsets log held; an online upgrade starts it from the
//! classic group's members and assignments, a downgrade ends it. The consumer rules
//! (`consumer.rs`) and the liveness rule read this view; only [`ConsumerGroupView::apply`]
//! changes it.

use std::collections::{BTreeMap, BTreeSet};

use groupsim_history::{ConsumerGroupEvent, ConsumerRemovalReason};
use groupsim_wire::{Millis, TopicPartition};

use super::spans::Belonging;

/// Kafka's name of a member reconciled to its epoch's target.
pub(super) const STABLE: &str = "STABLE";

/// One member as the coordinator holds it now.
#[derive(Clone, Debug, Default)]
pub(super) struct ConsumerMemberView {
    /// Its member epoch (-2: a static member that left temporarily).
    pub(super) epoch: i32,
    /// Its reconciliation state (`STABLE`, `UNREVOKED_PARTITIONS`, `UNRELEASED_PARTITIONS`).
    pub(super) state: String,
}

/// One member epoch held over a stretch of time.
#[derive(Clone, Copy, Debug)]
pub(super) struct EpochSpan {
    pub(super) epoch: i32,
    pub(super) span: Belonging,
}

/// One consumer group.
#[derive(Debug, Default)]
pub(super) struct ConsumerGroupView {
    /// The group epoch.
    pub(super) group_epoch: i32,
    /// The epoch of the last target assignment.
    pub(super) assignment_epoch: i32,
    /// Members by member id, as the coordinator holds them now.
    pub(super) members: BTreeMap<String, ConsumerMemberView>,
    /// Every member id the group ever held.
    pub(super) known: BTreeSet<String>,
    /// Member id -> the epochs it held, in order, each over its stretch of time.
    pub(super) epochs: BTreeMap<String, Vec<EpochSpan>>,
    /// Partition -> (owner, the event that gave it the partition).
    pub(super) owners: BTreeMap<TopicPartition, (String, usize)>,
    /// (member id, partition) -> the stretches in which the coordinator counted it the owner.
    pub(super) owned: BTreeMap<(String, TopicPartition), Vec<Belonging>>,
    /// Partitions a member must revoke (it owns them until it releases them) -> that member.
    pub(super) revoking: BTreeMap<TopicPartition, String>,
    /// The target assignment of `assignment_epoch`, by member id.
    pub(super) target: BTreeMap<String, BTreeSet<TopicPartition>>,
    /// Static members: member id -> group.instance.id.
    instance_of: BTreeMap<String, String>,
    /// The targets of static members replaced by a new member id, by instance id, until the
    /// new member id joins (Kafka hands the replacement the target of the member it replaces,
    /// without computing a new one).
    replaced: BTreeMap<String, BTreeSet<TopicPartition>>,
    /// Member ids the group ever held as classic-protocol members (a member id never changes
    /// protocol).
    classic: BTreeSet<String>,
    /// Classic static members' instance ids -> the client that joined on it last, and the one
    /// before it (another client).
    holders: BTreeMap<String, (String, Option<String>)>,
    /// Instance ids two classic clients took from each other (one took it, the other took it
    /// back), with the taking back (event index) and the two clients: the
    /// `classic-twins-replace-each-other` hazard acting.
    pub(super) contested: BTreeMap<String, (usize, [String; 2])>,
    /// The broker whose events last spoke of the group.
    holder: Option<i32>,
    /// Its holder gave the group up and no coordinator has spoken of it since.
    unloaded: bool,
    /// Member id -> when the coordinator last removed it (left, fenced, expired, replaced),
    /// until it holds an epoch again: what it does as that id from then on is a zombie's, even
    /// once the group has become a classic group.
    removed: BTreeMap<String, Millis>,
}

impl ConsumerGroupView {
    /// Whether the group holds members and every one of them speaks the classic protocol.
    pub(super) fn all_classic(&self) -> bool {
        !self.members.is_empty() && self.members.keys().all(|m| self.classic.contains(m))
    }

    /// Whether `member_id` held member epoch `epoch` at some moment of millisecond `at` (within
    /// the millisecond of a change either side counts, as for classic generations).
    pub(super) fn held_epoch_at(&self, member_id: &str, epoch: i32, at: Millis) -> bool {
        self.epochs
            .get(member_id)
            .is_some_and(|spans| spans.iter().any(|s| s.epoch == epoch && s.span.covers(at)))
    }

    /// The epoch `member_id` held at millisecond `at` (the latest, if it changed within it).
    pub(super) fn epoch_at(&self, member_id: &str, at: Millis) -> Option<i32> {
        let spans = self.epochs.get(member_id)?;
        spans.iter().rev().find(|s| s.span.covers(at)).map(|s| s.epoch)
    }

    /// The event that last ended `member_id`'s membership before `at`, if any.
    pub(super) fn left_before(&self, member_id: &str, at: Millis) -> Option<usize> {
        let last = self.epochs.get(member_id)?.last()?;
        last.span.until.filter(|(until, _)| *until < at).map(|(_, idx)| idx)
    }

    /// Whether the coordinator removed `member_id` before `at` and it holds no epoch since (a
    /// conversion to the classic protocol ends every epoch without removing anyone).
    pub(super) fn removed_before(&self, member_id: &str, at: Millis) -> bool {
        self.removed.get(member_id).is_some_and(|&t| t < at)
    }

    /// Whether the coordinator counted `member_id` the owner of `tp` at some moment of `at`.
    pub(super) fn owned_at(&self, member_id: &str, tp: &TopicPartition, at: Millis) -> bool {
        self.owned
            .get(&(member_id.to_string(), tp.clone()))
            .is_some_and(|spans| spans.iter().any(|b| b.covers(at)))
    }

    /// Member `member_id` holds `instance` (a static classic member an upgrade converts).
    pub(super) fn learn_instance(&mut self, member_id: &str, instance: &str) {
        self.instance_of.insert(member_id.to_string(), instance.to_string());
    }

    /// Reads one event about this group (event `idx`, at `at`).
    /// Broker `broker` gave the group up (its memory goes; the offsets log keeps what was
    /// stored). A broker that is not the group's holder any more (the next one loaded the
    /// group first, in the same instant) gives up nothing the view holds.
    pub(super) fn unload(&mut self, broker: i32) {
        if self.holder.is_none_or(|h| h == broker) {
            self.unloaded = true;
        }
    }

    /// Broker `broker` speaks of the group with `event`, before [`Self::apply`] reads it. When
    /// it follows its holder's unload with anything but a load, the log held nothing of the
    /// group, so nothing the last holder gave was stored, and none of it was answered (an answer
    /// waits for its records): the group starts afresh and owns nothing.
    pub(super) fn spoken_by(
        &mut self,
        idx: usize,
        at: Millis,
        broker: i32,
        event: &ConsumerGroupEvent,
    ) {
        if std::mem::take(&mut self.unloaded)
            && !matches!(event, ConsumerGroupEvent::GroupLoaded { .. })
        {
            self.end_all(at, idx);
            self.group_epoch = 0;
            self.assignment_epoch = 0;
        }
        self.holder = Some(broker);
    }

    pub(super) fn apply(&mut self, idx: usize, at: Millis, event: &ConsumerGroupEvent) {
        match event {
            ConsumerGroupEvent::MemberJoined {
                member_id,
                group_instance_id,
                classic_protocol,
                client_id,
                ..
            } => {
                self.known.insert(member_id.clone());
                if *classic_protocol {
                    self.classic.insert(member_id.clone());
                    if let Some(instance) = group_instance_id {
                        self.classic_join(idx, instance, client_id);
                    }
                }
                self.members.entry(member_id.clone()).or_default();
                if let Some(instance) = group_instance_id {
                    self.instance_of.insert(member_id.clone(), instance.clone());
                    // A target computed in the same heartbeat already names the replacement;
                    // only without one does it inherit the replaced member's.
                    if let Some(target) = self.replaced.remove(instance) {
                        self.target.entry(member_id.clone()).or_insert(target);
                    }
                }
            }
            ConsumerGroupEvent::GroupEpochBumped { epoch, .. } => self.group_epoch = *epoch,
            ConsumerGroupEvent::TargetAssignmentComputed { epoch, assignments, .. } => {
                self.assignment_epoch = *epoch;
                self.group_epoch = self.group_epoch.max(*epoch);
                self.target = assignments
                    .iter()
                    .map(|a| (a.member_id.clone(), a.partitions.iter().cloned().collect()))
                    .collect();
            }
            ConsumerGroupEvent::MemberEpochChanged { member_id, from, to, state, .. } => {
                self.known.insert(member_id.clone());
                let m = self.members.entry(member_id.clone()).or_default();
                m.epoch = *to;
                m.state = state.clone();
                if from != to || self.epochs.get(member_id).is_none_or(|s| s.is_empty()) {
                    self.end_epoch(member_id, at, idx);
                    self.begin_epoch(member_id, *to, at);
                }
                // A member reaches a new epoch only with nothing left to revoke: what is still
                // listed as being revoked by it was given back by a newer target (a reclaim,
                // for which the coordinator records no release).
                if from != to {
                    self.revoking.retain(|_, owner| owner != member_id);
                }
            }
            ConsumerGroupEvent::PartitionsAssigned { member_id, partitions, .. } => {
                for tp in partitions {
                    self.give(member_id, tp, at, idx);
                }
            }
            ConsumerGroupEvent::PartitionsRevoking { member_id, partitions, .. } => {
                for tp in partitions {
                    self.revoking.insert(tp.clone(), member_id.clone());
                }
            }
            ConsumerGroupEvent::PartitionsReleased { member_id, partitions, .. } => {
                for tp in partitions {
                    self.release(member_id, tp, at, idx);
                }
            }
            ConsumerGroupEvent::MemberRemoved { member_id, reason, .. } => {
                self.members.remove(member_id);
                let target = self.target.remove(member_id);
                let instance = self.instance_of.get(member_id);
                if let (ConsumerRemovalReason::Replaced, Some(t), Some(i)) =
                    (reason, target, instance)
                {
                    self.replaced.insert(i.clone(), t);
                }
                self.end_epoch(member_id, at, idx);
                self.removed.insert(member_id.clone(), at);
                let owned: Vec<TopicPartition> = self
                    .owners
                    .iter()
                    .filter(|(_, (owner, _))| owner == member_id)
                    .map(|(tp, _)| tp.clone())
                    .collect();
                for tp in owned {
                    self.release(member_id, &tp, at, idx);
                }
            }
            ConsumerGroupEvent::GroupLoaded { group_epoch, assignment_epoch, members, .. } => {
                self.end_all(at, idx);
                self.group_epoch = *group_epoch;
                self.assignment_epoch = *assignment_epoch;
                for m in members {
                    self.known.insert(m.member_id.clone());
                    if let Some(instance) = &m.group_instance_id {
                        self.instance_of.insert(m.member_id.clone(), instance.clone());
                    }
                    self.members.insert(
                        m.member_id.clone(),
                        ConsumerMemberView { epoch: m.member_epoch, state: m.state.clone() },
                    );
                    self.begin_epoch(&m.member_id, m.member_epoch, at);
                    for tp in &m.owned {
                        self.give(&m.member_id, tp, at, idx);
                    }
                    for tp in &m.revoking {
                        self.revoking.insert(tp.clone(), m.member_id.clone());
                    }
                    if !m.target.is_empty() {
                        self.target.insert(m.member_id.clone(), m.target.iter().cloned().collect());
                    }
                }
            }
            // An online upgrade: every classic member is a member at epoch `generation`,
            // reconciled, owning its classic assignment, which is its target.
            ConsumerGroupEvent::GroupUpgraded { generation, members, .. } => {
                self.end_all(at, idx);
                self.group_epoch = *generation;
                self.assignment_epoch = *generation;
                for m in members {
                    self.known.insert(m.member_id.clone());
                    self.classic.insert(m.member_id.clone());
                    let view = ConsumerMemberView { epoch: m.member_epoch, state: STABLE.into() };
                    self.members.insert(m.member_id.clone(), view);
                    self.begin_epoch(&m.member_id, m.member_epoch, at);
                    for tp in &m.partitions {
                        self.give(&m.member_id, tp, at, idx);
                    }
                    self.target.insert(m.member_id.clone(), m.partitions.iter().cloned().collect());
                }
            }
            // An online downgrade: the group is a classic group now; nobody holds an epoch or
            // owns a partition here any more.
            ConsumerGroupEvent::GroupDowngraded { .. } => self.end_all(at, idx),
            // The classic group stays as it was.
            ConsumerGroupEvent::UpgradeRefused { .. }
            | ConsumerGroupEvent::EmptyGroupDeleted { .. } => {}
        }
    }

    /// A classic client `client` joined on static `instance` (event `idx`): the instance is
    /// contested once a client takes it back from the one that took it from it.
    fn classic_join(&mut self, idx: usize, instance: &str, client: &str) {
        let (last, before) = match self.holders.remove(instance) {
            Some((last, before)) if last == client => (last, before),
            Some((last, before)) => {
                if before.as_deref() == Some(client) && !self.contested.contains_key(instance) {
                    let clients = [last.clone(), client.to_string()];
                    self.contested.insert(instance.to_string(), (idx, clients));
                }
                (client.to_string(), Some(last))
            }
            None => (client.to_string(), None),
        };
        self.holders.insert(instance.to_string(), (last, before));
    }

    /// Every member's epoch and every ownership ends at event `idx` (the group is replaced: a
    /// load, or a conversion between the protocols).
    pub(super) fn end_all(&mut self, at: Millis, idx: usize) {
        for id in std::mem::take(&mut self.members).into_keys() {
            self.end_epoch(&id, at, idx);
        }
        self.owners.clear();
        for spans in self.owned.values_mut() {
            if let Some(last) = spans.last_mut() {
                last.until.get_or_insert((at, idx));
            }
        }
        self.revoking.clear();
        self.target.clear();
    }

    fn begin_epoch(&mut self, member_id: &str, epoch: i32, at: Millis) {
        self.removed.remove(member_id);
        let span = Belonging { from: at, until: None };
        self.epochs.entry(member_id.to_string()).or_default().push(EpochSpan { epoch, span });
    }

    fn end_epoch(&mut self, member_id: &str, at: Millis, idx: usize) {
        if let Some(last) = self.epochs.get_mut(member_id).and_then(|s| s.last_mut()) {
            last.span.until.get_or_insert((at, idx));
        }
    }

    /// `tp` is `member_id`'s from event `idx`. A previous owner that never released it (a split
    /// assignment, flagged by its rule) still owns it until it does.
    fn give(&mut self, member_id: &str, tp: &TopicPartition, at: Millis, idx: usize) {
        self.owners.insert(tp.clone(), (member_id.to_string(), idx));
        let spans = self.owned.entry((member_id.to_string(), tp.clone())).or_default();
        if spans.last().is_none_or(|b| b.until.is_some()) {
            spans.push(Belonging { from: at, until: None });
        }
    }

    /// `member_id` no longer owns `tp` (event `idx`).
    fn release(&mut self, member_id: &str, tp: &TopicPartition, at: Millis, idx: usize) {
        if self.owners.get(tp).is_some_and(|(owner, _)| owner == member_id) {
            self.owners.remove(tp);
        }
        if self.revoking.get(tp).is_some_and(|owner| owner == member_id) {
            self.revoking.remove(tp);
        }
        self.end_ownership(member_id, tp, at, idx);
    }

    fn end_ownership(&mut self, member_id: &str, tp: &TopicPartition, at: Millis, idx: usize) {
        let key = (member_id.to_string(), tp.clone());
        if let Some(last) = self.owned.get_mut(&key).and_then(|s| s.last_mut()) {
            last.until.get_or_insert((at, idx));
        }
    }
}
