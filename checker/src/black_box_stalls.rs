//! `stalled-member` for black-box clients: after the heal, a client that holds a partition with
//! records nobody has processed, and processes nothing of it for twice the stall bound.
//!
//! Once the faults heal nothing stands between a correct client and its records. A holding (see
//! `black_box_positions.rs`) that lasts past the heal plus twice the run's stall bound (the
//! clients' rebalance timeout plus session timeout, recorded with the liveness phase), while the
//! partition had records above its committed offset that nobody had processed when the window
//! began, must show the client processing some of them in that window. One that does not is a
//! consumer that stopped while its process lives and its member keeps the partition: a fetcher
//! that never started, an assignment never applied. Twice the bound, as in the simulated rule:
//! a rebalance through the heal and the one after it may each take a bound.

use std::collections::BTreeMap;

use groupsim_wire::{Millis, TopicPartition};

use super::anomaly::{Anomaly, AnomalyClass};
use super::black_box_positions::Holding;
use super::processed::Processed;
use super::ranges::RangeSet;

/// What the stall rule needs of the run beside the holdings.
pub(super) struct StallRun<'a> {
    /// When the faults healed, and the stall bound.
    pub(super) heal: Millis,
    pub(super) bound: Millis,
    /// When the run ended.
    pub(super) end: Millis,
    /// Member id -> client id.
    pub(super) clients: &'a BTreeMap<String, String>,
    /// Every processed record, in log order.
    pub(super) records: &'a [Processed],
    /// Partition -> log end.
    pub(super) log_end: &'a BTreeMap<TopicPartition, i64>,
    /// Partition -> (when, offset) of every accepted commit, in order.
    pub(super) commits: &'a BTreeMap<TopicPartition, Vec<(Millis, i64)>>,
}

/// The stalls among `holdings`, each flagged when its bound passed.
pub(super) fn stalls(holdings: &[Holding], run: &StallRun<'_>) -> Vec<Anomaly> {
    let limit = 2 * run.bound;
    let mut found = Vec::new();
    for h in holdings {
        let Some(client) = run.clients.get(&h.member_id) else { continue };
        let start = h.from.max(run.heal);
        let due = start + limit;
        if run.end <= due || h.until.is_some_and(|until| until <= due) {
            continue;
        }
        let tp = &h.partition;
        let Some(&end) = run.log_end.get(tp) else { continue };
        let committed = run
            .commits
            .get(tp)
            .into_iter()
            .flatten()
            .filter(|(at, _)| *at < start)
            .map(|(_, offset)| *offset)
            .max()
            .unwrap_or(0);
        let mut before = RangeSet::default();
        let mut in_window = false;
        for r in run.records.iter().filter(|r| r.partition == *tp) {
            if r.at_ms < start {
                before.insert(r.offset, r.offset + 1);
            } else if r.at_ms <= due && r.client == *client {
                in_window = true;
            }
        }
        let Some((from, to)) = before.first_gap(committed.min(end), end) else { continue };
        if in_window {
            continue;
        }
        found.push(Anomaly::new(
            AnomalyClass::StalledMember,
            Some(tp),
            due,
            format!(
                "{client} ({}) holds {tp} (since t={}ms), whose records {from}..{to} nobody had \
                 processed, but processed nothing of it from t={start}ms to t={due}ms (twice \
                 the stall bound of {} ms after the heal): it stopped consuming while it lives",
                h.member_id, h.from, run.bound
            ),
            vec![h.idx],
        ));
    }
    found
}

/// Who is in the group, per client, as the broker history shows it: the absent-member part of
/// the rule. A client process that lives but has no member in the group for twice the stall
/// bound after the heal stopped consuming as surely as one that holds a partition and consumes
/// nothing: its consumer gave up rejoining (a client that stops its consumer on an error it
/// should retry and keeps its process alive).
#[derive(Default)]
pub(super) struct Presence {
    /// Process name (`m0`) -> its live client id, while the process lives.
    processes: BTreeMap<String, String>,
    /// Client id -> when its process started.
    started: BTreeMap<String, Millis>,
    /// Client id -> its member ids in the group now.
    members: BTreeMap<String, std::collections::BTreeSet<String>>,
    /// Client id -> when its last member left the group (it has none since), with the event.
    gone: BTreeMap<String, (Millis, usize)>,
    /// Member id -> client id.
    client_of: BTreeMap<String, String>,
}

impl Presence {
    /// Process `member` started (or stopped, when `client` is `None`) at `at`.
    pub(super) fn process(&mut self, member: &str, client: Option<&str>, at: Millis) {
        match client {
            Some(client) => {
                self.processes.insert(member.to_string(), client.to_string());
                self.started.insert(client.to_string(), at);
            }
            None => {
                self.processes.remove(member);
            }
        }
    }

    /// Member id `member_id` of client `client` joined the group.
    pub(super) fn joined(&mut self, member_id: &str, client: &str) {
        self.client_of.insert(member_id.to_string(), client.to_string());
        self.members.entry(client.to_string()).or_default().insert(member_id.to_string());
        self.gone.remove(client);
    }

    /// Member id `member_id` left the group at `at` (event `idx`).
    pub(super) fn left(&mut self, member_id: &str, at: Millis, idx: usize) {
        let Some(client) = self.client_of.get(member_id) else { return };
        let Some(ids) = self.members.get_mut(client) else { return };
        if ids.remove(member_id) && ids.is_empty() {
            self.gone.insert(client.clone(), (at, idx));
        }
    }

    /// The live processes with no member in the group for twice the bound after the heal.
    pub(super) fn absent(&self, heal: Millis, bound: Millis, end: Millis) -> Vec<Anomaly> {
        let mut found = Vec::new();
        for (process, client) in &self.processes {
            let in_group = self.members.get(client).is_some_and(|ids| !ids.is_empty());
            if in_group {
                continue;
            }
            let (since, why, proof) = match self.gone.get(client) {
                Some(&(at, idx)) => (at, "since its last member left the group", vec![idx]),
                None => {
                    (self.started.get(client).copied().unwrap_or(0), "since it started", vec![])
                }
            };
            let start = since.max(heal);
            let due = start + 2 * bound;
            if end <= due {
                continue;
            }
            found.push(Anomaly::new(
                AnomalyClass::StalledMember,
                None,
                due,
                format!(
                    "{process} ({client}) lives but had no member in the group from t={since}ms \
                     ({why}) to t={due}ms (twice the stall bound of {bound} ms after the heal): \
                     it stopped consuming while it lives"
                ),
                proof,
            ));
        }
        found
    }
}
