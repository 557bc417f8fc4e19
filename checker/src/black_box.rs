//! The checker's rules for a black-box client: a real Kafka client reports nothing to the
//! broker, so all there is to judge is the broker's history (what the coordinator stored and
//! answered, what was produced) plus what the application says it processed (one line per
//! record, written by the adapter before any commit covering it).
//!
//! Rules:
//! - `unowned-commit`: a commit accepted for a partition the committer was not assigned in that
//!   generation (unless nobody was — no stored assignment names it, or none was stored — and the
//!   committer's previous assignment had it: a cooperative member keeps what it owns through a
//!   rebalance, and commits what it revokes under the generation that takes it away).
//! - `zombie-commit`: a commit accepted under a generation that is not the group's current one.
//! - `offset-regression`: the committed offset of a partition moves backwards.
//! - `split-assignment`: one generation's assignment gives a partition to two members.
//! - `lost-record`: a record below the final committed offset that no member processed.
//! - `split-processing`: a client processed a partition while it was a live member of a
//!   generation whose assignment gave that partition to another member.
//! - `position-rewind` / `position-skip`: a client's first record of a partition it was just
//!   given is below the committed offset in force then, or above it past records nobody
//!   processed (`black_box_positions.rs`).
//! - `stalled-member` (when the run recorded a stall bound): after the heal, a client holding a
//!   partition with records nobody processed processes none of it for twice the bound
//!   (`black_box_stalls.rs`).
//! - `stuck` (when the run had a heal phase): at the end the group is not Stable, or a partition's
//!   committed offset is short of its log end, or a produced record above it was never processed.
//!
//! A KIP-848 consumer group (`group.protocol=consumer`) is judged by the same rules in its own
//! terms, member epochs and the coordinator's per-partition ownership (`black_box_consumer.rs`).
//!
//! Records processed more than once (around crashes, zombies and rebalances) are counted, not
//! failed: at-least-once delivery allows them.

use std::collections::{BTreeMap, BTreeSet};

use groupsim_history::{
    ConsumerGroupEvent, CoordinatorEvent, EventKind, GroupState, History, WorldEvent,
};
use groupsim_wire::{Millis, TopicPartition};

use super::anomaly::{Anomaly, AnomalyClass};
use super::black_box_consumer::ConsumerGroupBox;
use super::black_box_positions::{close, positions, Holding};
use super::black_box_stalls::{stalls, Presence, StallRun};
use super::commits::went_back;
pub use super::processed::{Processed, CLOCK_JITTER_MS};
use super::ranges::RangeSet;
use super::views::AcceptedCommit;
use super::{ownership, Verdict};

/// What the black-box rules found, with the figures a campaign table shows.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BlackBoxVerdict {
    /// Anomalies, in the order found.
    pub anomalies: Vec<Anomaly>,
    /// Records processed more than once (each extra processing counts once).
    pub duplicates: u64,
    /// Records processed in all.
    pub processed: u64,
    /// Records produced (preloaded ones included).
    pub produced: u64,
}

impl BlackBoxVerdict {
    /// The verdict in the checker's usual form (for the trace renderers).
    pub fn verdict(&self) -> Verdict {
        let mut v = Verdict { anomalies: self.anomalies.clone(), ..Verdict::default() };
        v.stats.records_produced = self.produced;
        v.stats.records_processed = self.processed;
        v.stats.records_reprocessed = self.duplicates;
        v
    }
}

/// One generation of a group, as the coordinator started or loaded it.
struct Period {
    start: Millis,
    generation: i32,
    members: BTreeSet<String>,
    /// The stored assignment, once there is one.
    owners: Option<BTreeMap<TopicPartition, String>>,
}

/// A group as the broker history shows it.
#[derive(Default)]
struct Group {
    coordinator: Option<i32>,
    state: Option<GroupState>,
    generation: i32,
    periods: Vec<Period>,
    /// member id -> (generation, partitions) of each assignment that named it.
    assigned: BTreeMap<String, Vec<(i32, BTreeSet<TopicPartition>)>>,
    /// partition -> (offset, event) of the last accepted commit.
    committed: BTreeMap<TopicPartition, (i64, usize)>,
    /// Each member's holdings of partitions, as stored assignments began them.
    holdings: Vec<Holding>,
}

impl Group {
    fn owner(&self, generation: i32, tp: &TopicPartition) -> Option<Option<&String>> {
        let period = self.periods.iter().rev().find(|p| p.generation == generation)?;
        Some(period.owners.as_ref()?.get(tp))
    }

    /// Records `generation`'s stored assignment. When `began` (its time and event) is given, a
    /// partition a member's previous assignment did not have begins a holding.
    fn store(
        &mut self,
        generation: i32,
        assignments: &[groupsim_history::MemberAssignment],
        began: Option<(Millis, usize)>,
    ) {
        if let Some((from, idx)) = began {
            for a in assignments {
                for tp in &a.partitions {
                    if !self.held_before(&a.member_id, generation, tp) {
                        close(&mut self.holdings, from, |h| h.partition == *tp);
                        self.holdings.push(Holding {
                            member_id: a.member_id.clone(),
                            partition: tp.clone(),
                            from,
                            committed: self.committed.get(tp).copied(),
                            idx,
                            until: None,
                        });
                    }
                }
            }
        }
        let owners: BTreeMap<TopicPartition, String> = assignments
            .iter()
            .flat_map(|a| a.partitions.iter().map(|tp| (tp.clone(), a.member_id.clone())))
            .collect();
        if let Some(p) = self.periods.iter_mut().rev().find(|p| p.generation == generation) {
            p.owners = Some(owners);
        }
        for a in assignments {
            let parts = a.partitions.iter().cloned().collect();
            self.assigned.entry(a.member_id.clone()).or_default().push((generation, parts));
        }
    }

    /// Whether `member`'s last assignment before `generation` gave it `tp`.
    fn held_before(&self, member: &str, generation: i32, tp: &TopicPartition) -> bool {
        self.assigned
            .get(member)
            .and_then(|list| list.iter().rev().find(|(g, _)| *g < generation))
            .is_some_and(|(_, parts)| parts.contains(tp))
    }
}

/// Everything the broker history says, read in order.
#[derive(Default)]
struct Broker {
    groups: BTreeMap<String, Group>,
    consumer_groups: BTreeMap<String, ConsumerGroupBox>,
    /// member id -> client id.
    clients: BTreeMap<String, String>,
    /// member id -> when it was removed.
    removed: BTreeMap<String, Millis>,
    /// partition -> log end, from Produced events.
    log_end: BTreeMap<TopicPartition, i64>,
    produced: u64,
    heal_phase: bool,
    /// When the faults healed and the stall bound the run recorded, if it did.
    healed: Option<(Millis, Millis)>,
    /// Partition -> (when, offset) of every accepted commit.
    commit_log: BTreeMap<TopicPartition, Vec<(Millis, i64)>>,
    /// Which live client processes have a member in the group.
    presence: Presence,
    last_idx: usize,
    end_ms: Millis,
}

/// Judges a black-box run: the broker history plus, when given, what the clients processed.
/// Without processed records only the broker-side rules apply (`lost-record`,
/// `split-processing` and `stuck` need to know what was processed).
pub fn check_black_box(history: &History, processed: Option<&[Processed]>) -> BlackBoxVerdict {
    let mut broker = Broker::default();
    let mut anomalies = Vec::new();
    for (idx, event) in history.events().iter().enumerate() {
        broker.last_idx = idx;
        broker.end_ms = event.at_ms;
        match &event.kind {
            EventKind::Coordinator { broker: node, event: e } => {
                anomalies.extend(broker.coordinator(idx, event.at_ms, *node, e));
            }
            EventKind::World(WorldEvent::Produced { partition, base_offset, count }) => {
                broker.produced += *count as u64;
                let end = broker.log_end.entry(partition.clone()).or_insert(0);
                *end = (*end).max(base_offset + count);
            }
            EventKind::World(WorldEvent::MemberStarted { member, host, .. }) => {
                // check-client names the process's host "<client id> pid <pid>".
                let client = host.split_whitespace().next().unwrap_or(host);
                broker.presence.process(member, Some(client), event.at_ms);
            }
            EventKind::World(WorldEvent::MemberStopped { member }) => {
                broker.presence.process(member, None, event.at_ms);
            }
            EventKind::World(WorldEvent::LivenessPhase { stall_ms, .. }) => {
                broker.heal_phase = true;
                broker.healed = stall_ms.map(|bound| (event.at_ms, bound));
            }
            EventKind::World(WorldEvent::MemberExited {
                member,
                client_id,
                status,
                stderr_tail,
            }) => {
                // A process the nemesis killed is recorded as a crash, not an exit: this one
                // stopped by itself, and nothing consumes for it again.
                broker.presence.process(member, None, event.at_ms);
                let last = stderr_tail.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("");
                anomalies.push(Anomaly::new(
                    AnomalyClass::MemberGaveUp,
                    None,
                    event.at_ms,
                    format!(
                        "{member} ({client_id}) exited by itself ({status}) and no longer \
                         consumes; its client's last words: {}",
                        last.trim()
                    ),
                    vec![idx],
                ));
            }
            _ => {}
        }
    }
    let mut verdict = BlackBoxVerdict { produced: broker.produced, ..Default::default() };
    if let Some(records) = processed {
        let done = processed_sets(records, &mut verdict);
        anomalies.extend(lost_records(&broker, &done));
        anomalies.extend(split_processing(&broker, records));
        // Every group's holdings, classic then consumer.
        let classic = broker.groups.values().map(|g| &g.holdings);
        let holdings: Vec<&Vec<Holding>> =
            classic.chain(broker.consumer_groups.values().map(|g| &g.holdings)).collect();
        for h in &holdings {
            anomalies.extend(positions(h, &broker.clients, records, &done));
        }
        if let Some((heal, bound)) = broker.healed {
            let run = StallRun {
                heal,
                bound,
                end: broker.end_ms,
                clients: &broker.clients,
                records,
                log_end: &broker.log_end,
                commits: &broker.commit_log,
            };
            for h in &holdings {
                anomalies.extend(stalls(h, &run));
            }
            anomalies.extend(broker.presence.absent(heal, bound, broker.end_ms));
        }
        if broker.heal_phase {
            anomalies.extend(stuck(&broker, &done));
        }
    }
    // The protocol's rules over the served connections' requests and answers.
    anomalies.extend(crate::broker::history::anomalies(history));
    verdict.anomalies = anomalies;
    verdict
}

impl Broker {
    fn coordinator(
        &mut self,
        idx: usize,
        at: Millis,
        node: i32,
        event: &CoordinatorEvent,
    ) -> Vec<Anomaly> {
        match event {
            CoordinatorEvent::GroupStateChanged { group, from, to, generation } => {
                let g = self.groups.entry(group.clone()).or_default();
                // A broker that is not the group's coordinator refuses its joins, so only the
                // coordinator can start the group afresh (from Empty at generation 0): that is
                // how a coordinator that found nothing stored takes a group over, with no load.
                let fresh = *from == GroupState::Empty && *generation == 0;
                if g.coordinator.is_none_or(|c| c == node) || fresh {
                    g.coordinator = Some(node);
                    g.state = Some(*to);
                    g.generation = *generation;
                }
            }
            CoordinatorEvent::GroupUnloaded { group, .. } => {
                // The coordinator gave the group up: whoever starts or loads it next leads it.
                if let Some(g) = self.groups.get_mut(group).filter(|g| g.coordinator == Some(node))
                {
                    g.coordinator = None;
                }
            }
            CoordinatorEvent::MemberAdded { member_id, client_id, .. } => {
                self.clients.insert(member_id.clone(), client_id.clone());
                self.presence.joined(member_id, client_id);
            }
            CoordinatorEvent::MemberRemoved { member_id, .. } => {
                self.removed.entry(member_id.clone()).or_insert(at);
                self.presence.left(member_id, at, idx);
                for g in self.groups.values_mut() {
                    close(&mut g.holdings, at, |h| h.member_id == *member_id);
                }
            }
            CoordinatorEvent::GenerationStarted { group, generation, members, .. } => {
                let g = self.groups.entry(group.clone()).or_default();
                g.generation = *generation;
                g.periods.push(Period {
                    start: at,
                    generation: *generation,
                    members: members.iter().cloned().collect(),
                    owners: None,
                });
            }
            CoordinatorEvent::AssignmentStored { group, generation, assignments } => {
                let g = self.groups.entry(group.clone()).or_default();
                g.store(*generation, assignments, Some((at, idx)));
                return ownership::split_assignment(idx, at, *generation, assignments);
            }
            loaded @ CoordinatorEvent::GroupLoaded { members, .. } => {
                // A loaded group's members are in it again, whatever an earlier coordinator did.
                for m in members {
                    if let Some(client) = self.clients.get(m) {
                        self.presence.joined(m, client);
                    }
                }
                self.loaded(node, at, loaded)
            }
            CoordinatorEvent::OffsetCommitAccepted { .. } => {
                let Some(c) = AcceptedCommit::of(idx, at, event) else { return Vec::new() };
                self.commit_log.entry(c.tp.clone()).or_default().push((at, c.offset));
                if let Some(g) = self.consumer_groups.get_mut(c.group) {
                    let mut found: Vec<Anomaly> =
                        regression(&g.committed, &c).into_iter().collect();
                    found.extend(g.commit_rules(&c));
                    g.committed.insert(c.tp.clone(), (c.offset, idx));
                    return found;
                }
                let g = self.groups.entry(c.group.to_string()).or_default();
                let found = commit_rules(g, &c);
                g.committed.insert(c.tp.clone(), (c.offset, idx));
                return found;
            }
            CoordinatorEvent::ConsumerGroup(e) => {
                match e {
                    ConsumerGroupEvent::MemberJoined { member_id, client_id, .. } => {
                        self.clients.insert(member_id.clone(), client_id.clone());
                        self.presence.joined(member_id, client_id);
                    }
                    ConsumerGroupEvent::MemberRemoved { member_id, .. } => {
                        self.presence.left(member_id, at, idx);
                    }
                    ConsumerGroupEvent::GroupLoaded { members, .. } => {
                        for m in members {
                            if let Some(client) = self.clients.get(&m.member_id) {
                                self.presence.joined(&m.member_id, client);
                            }
                        }
                    }
                    _ => {}
                }
                let g = self.consumer_groups.entry(e.group().to_string()).or_default();
                return g.apply(idx, at, node, e);
            }
            _ => {}
        }
        Vec::new()
    }
}

impl Broker {
    /// A coordinator took the group over from the offsets log: its stored generation (with its
    /// members and assignment) is current again.
    fn loaded(&mut self, node: i32, at: Millis, event: &CoordinatorEvent) {
        let CoordinatorEvent::GroupLoaded { group, state, generation: gen, .. } = event else {
            return;
        };
        let g = self.groups.entry(group.clone()).or_default();
        (g.coordinator, g.state, g.generation) = (Some(node), Some(*state), *gen);
        if g.periods.last().is_some_and(|p| p.generation == *gen) {
            return;
        }
        let CoordinatorEvent::GroupLoaded { members, assignments, .. } = event else { return };
        let members = members.iter().cloned().collect();
        g.periods.push(Period { start: at, generation: *gen, members, owners: None });
        // A load is no new holding: its members go on with what they had.
        g.store(*gen, assignments, None);
    }
}

/// `offset-regression`: the accepted commit `c` is below the partition's last one in `committed`.
fn regression(
    committed: &BTreeMap<TopicPartition, (i64, usize)>,
    c: &AcceptedCommit<'_>,
) -> Option<Anomaly> {
    went_back(committed.get(c.tp).copied(), c)
}

/// `unowned-commit`, `zombie-commit` and `offset-regression` for one accepted commit.
fn commit_rules(g: &Group, c: &AcceptedCommit<'_>) -> Vec<Anomaly> {
    let (idx, at, member, generation) = (c.idx, c.at, c.member_id, c.generation);
    let (tp, offset, validated_at) = (c.tp, c.offset, c.validated_at);
    let mut found: Vec<Anomaly> = regression(&g.committed, c).into_iter().collect();
    if generation < 0 {
        return found; // an admin or simple-consumer commit: no member, no ownership
    }
    // Judged by the generation the group was in when the coordinator validated the commit
    // (its append may land after the next generation began, as in Kafka).
    let then = g.periods.iter().rev().find(|p| p.start <= validated_at).map(|p| p.generation);
    if generation != g.generation && then != Some(generation) {
        found.push(Anomaly::new(
            AnomalyClass::ZombieCommit,
            Some(tp),
            at,
            format!(
                "commit to {offset} from {member} accepted under generation {generation} \
                 while the group is in generation {}",
                g.generation
            ),
            vec![idx],
        ));
    }
    // A partition that no assignment of the generation gives to anyone — none stored (its
    // leader never synced) or none naming it — stays with the member that held it before: a
    // cooperative member keeps what it owns through a rebalance, and Kafka accepts its commits.
    let who = match g.owner(generation, tp) {
        Some(Some(owner)) if owner == member => return found,
        Some(Some(owner)) => format!("it is owned by {owner}"),
        Some(None) | None if g.held_before(member, generation, tp) => return found,
        Some(None) => "no assignment of that generation gives it to anyone".to_string(),
        None => "that generation has no stored assignment".to_string(),
    };
    found.push(Anomaly::new(
        AnomalyClass::UnownedCommit,
        Some(tp),
        at,
        format!("{member} committed {tp} to {offset} in generation {generation} but {who}"),
        vec![idx],
    ));
    found
}

/// The offsets processed per partition; counts records and duplicates into `verdict`.
fn processed_sets(
    records: &[Processed],
    verdict: &mut BlackBoxVerdict,
) -> BTreeMap<TopicPartition, RangeSet> {
    let mut done: BTreeMap<TopicPartition, RangeSet> = BTreeMap::new();
    for r in records {
        let set = done.entry(r.partition.clone()).or_default();
        verdict.processed += 1;
        verdict.duplicates += set.overlap(r.offset, r.offset + 1) as u64;
        set.insert(r.offset, r.offset + 1);
    }
    done
}

/// `lost-record`: below a partition's final committed offset, records nobody processed.
fn lost_records(broker: &Broker, done: &BTreeMap<TopicPartition, RangeSet>) -> Vec<Anomaly> {
    let empty = RangeSet::default();
    let mut found = Vec::new();
    let committed = broker.groups.values().map(|g| &g.committed);
    for committed in committed.chain(broker.consumer_groups.values().map(|g| &g.committed)) {
        for (tp, &(offset, idx)) in committed {
            let set = done.get(tp).unwrap_or(&empty);
            if let Some((from, to)) = set.first_gap(0, offset) {
                found.push(Anomaly::new(
                    AnomalyClass::LostRecord,
                    Some(tp),
                    broker.end_ms,
                    format!(
                        "committed offset is {offset} but no client processed records \
                         {from}..{to}: they are lost"
                    ),
                    vec![idx],
                ));
            }
        }
    }
    found
}

/// `split-processing`: a live member of a generation processed a partition that generation
/// assigned to another member. Only the first such record per (client, partition) is shown.
fn split_processing(broker: &Broker, records: &[Processed]) -> Vec<Anomaly> {
    let mut shown: BTreeSet<(String, TopicPartition)> = BTreeSet::new();
    let mut found = Vec::new();
    let mut client_members: BTreeMap<&String, Vec<String>> = BTreeMap::new();
    for (member, client) in &broker.clients {
        client_members.entry(client).or_default().push(member.clone());
    }
    for r in records {
        for (name, g) in &broker.groups {
            let Some(period) = g.periods.iter().rev().find(|p| p.start + CLOCK_JITTER_MS < r.at_ms)
            else {
                continue;
            };
            let Some(owner) = period.owners.as_ref().and_then(|o| o.get(&r.partition)) else {
                continue;
            };
            let live_here = period.members.iter().find(|m| {
                broker.clients.get(*m) == Some(&r.client)
                    && broker.removed.get(*m).is_none_or(|&gone| gone > r.at_ms)
            });
            let Some(member) = live_here else { continue };
            if member == owner || !shown.insert((r.client.clone(), r.partition.clone())) {
                continue;
            }
            found.push(Anomaly::new(
                AnomalyClass::SplitProcessing,
                Some(&r.partition),
                r.at_ms,
                format!(
                    "{} ({member}) processed offset {} of {} while a live member of {name} \
                     generation {}, which assigned the partition to {owner}",
                    r.client, r.offset, r.partition, period.generation
                ),
                Vec::new(),
            ));
        }
        for (name, g) in &broker.consumer_groups {
            let key = (r.client.clone(), r.partition.clone());
            if shown.contains(&key) {
                continue;
            }
            let members = client_members.get(&r.client).map(Vec::as_slice).unwrap_or_default();
            let record = (r.client.as_str(), &r.partition, r.offset, r.at_ms);
            if let Some(a) = g.split_processing(name, record, members, CLOCK_JITTER_MS) {
                shown.insert(key);
                found.push(a);
            }
        }
    }
    found
}

/// Partitions whose commits in `committed` fall short of their log end.
fn short_commits(
    broker: &Broker,
    committed: &BTreeMap<TopicPartition, (i64, usize)>,
) -> Vec<String> {
    let mut problems = Vec::new();
    for (tp, end) in &broker.log_end {
        let at = committed.get(tp).map_or(0, |c| c.0);
        if at < *end {
            problems.push(format!("{tp} committed {at} < log end {end}"));
        }
    }
    problems
}

/// `stuck`: after the heal phase a group is not Stable, or a partition's commits or processing
/// fall short of its log end.
fn stuck(broker: &Broker, done: &BTreeMap<TopicPartition, RangeSet>) -> Option<Anomaly> {
    let mut problems = Vec::new();
    for (name, g) in &broker.groups {
        if g.state != Some(GroupState::Stable) {
            problems.push(format!("group {name} is {:?}, not Stable", g.state));
        }
        problems.extend(short_commits(broker, &g.committed));
    }
    for (name, g) in &broker.consumer_groups {
        problems.extend(g.unstable(name));
        problems.extend(short_commits(broker, &g.committed));
    }
    // Records below the committed offset that nobody processed are lost (`lost-record`), not
    // late: only those above it can still be processed.
    let empty = RangeSet::default();
    let committed = |tp: &TopicPartition| {
        let classic = broker.groups.values().map(|g| &g.committed);
        let all = classic.chain(broker.consumer_groups.values().map(|g| &g.committed));
        all.filter_map(|c| c.get(tp)).map(|c| c.0).max().unwrap_or(0)
    };
    for (tp, end) in &broker.log_end {
        let from = committed(tp).min(*end);
        if let Some((from, to)) = done.get(tp).unwrap_or(&empty).first_gap(from, *end) {
            problems.push(format!("{tp} records {from}..{to} never processed"));
        }
    }
    if problems.is_empty() {
        return None;
    }
    let n = problems.len();
    let more = if n > 6 { format!(" (+{} more)", n - 6) } else { String::new() };
    problems.truncate(6);
    Some(Anomaly::new(
        AnomalyClass::Stuck,
        None,
        broker.end_ms,
        format!("not converged after the heal phase: {}{more}", problems.join("; ")),
        vec![broker.last_idx],
    ))
}

#[cfg(test)]
#[path = "black_box_tests.rs"]
mod tests;
