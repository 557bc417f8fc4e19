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
