//! `position-rewind` and `position-skip` for black-box clients: where a real client starts a
//! partition it was just given, judged from what it processed.
//!
//! A real client reports no positions, but its processed-record log shows them: the first record
//! a client processes of a partition after the broker gave the partition to its member is the
//! position it fetched from (the topics a campaign uses keep every offset, so the record at the
//! position exists). A holding begins when a stored assignment (classic) or the coordinator's
//! `PartitionsAssigned` (KIP-848) gives a member a partition its previous assignment did not;
//! it ends when the partition's next holding begins. The committed offset in force when it began
//! is what a correct client starts from (or a later one, if the previous owner's last commit
//! landed before the client's OffsetFetch):
//! - `position-rewind`: the first record is below it: the client re-delivers committed records
//!   (a stale in-memory position kept across the rebalance, a reset to earliest on an error).
//! - `position-skip`: the first record is above it and records in between were processed by
//!   nobody, ever: the client skipped them (a reset to latest on an error).
//!
//! A holding that began with nothing committed is not judged: the client's `auto.offset.reset`
//! decides where it starts, and both ends are legitimate.

use std::collections::BTreeMap;

use groupsim_wire::{Millis, TopicPartition};

use super::anomaly::{Anomaly, AnomalyClass};
use super::processed::{Processed, CLOCK_JITTER_MS};
use super::ranges::RangeSet;

/// One member's holding of one partition, from when the broker gave it.
#[derive(Clone, Debug)]
pub(super) struct Holding {
    pub(super) member_id: String,
    pub(super) partition: TopicPartition,
    pub(super) from: Millis,
    /// The committed offset in force when it began, and the event that committed it.
    pub(super) committed: Option<(i64, usize)>,
    /// The event that began it.
    pub(super) idx: usize,
    /// When it ended (the partition's next holding began, the member left or was removed, or
    /// it released the partition); `None` while it lasts.
    pub(super) until: Option<Millis>,
}

/// Ends the open holdings `which` selects at `at`.
pub(super) fn close(holdings: &mut [Holding], at: Millis, which: impl Fn(&Holding) -> bool) {
    for h in holdings.iter_mut().filter(|h| h.until.is_none() && which(h)) {
        h.until = Some(at);
    }
}

/// The rewinds and skips of `holdings` (one group's, in order), given who is which client and
/// what every client processed (`done`: every processed offset per partition).
pub(super) fn positions(
    holdings: &[Holding],
    clients: &BTreeMap<String, String>,
    records: &[Processed],
    done: &BTreeMap<TopicPartition, RangeSet>,
) -> Vec<Anomaly> {
    // (client, partition) -> what it processed, in the order it did.
    let mut by_client: BTreeMap<(&str, &TopicPartition), Vec<&Processed>> = BTreeMap::new();
    for r in records {
        by_client.entry((r.client.as_str(), &r.partition)).or_default().push(r);
    }
    let empty = RangeSet::default();
    let mut found = Vec::new();
    for h in holdings {
        let Some((committed, commit_idx)) = h.committed else { continue };
        let Some(client) = clients.get(&h.member_id) else { continue };
        let until = h.until;
        let mine = by_client.get(&(client.as_str(), &h.partition)).map(Vec::as_slice);
        let first = mine
            .unwrap_or_default()
            .iter()
            .find(|r| r.at_ms > h.from + CLOCK_JITTER_MS && until.is_none_or(|end| r.at_ms < end));
        let Some(first) = first else { continue };
        let (tp, at, start) = (&h.partition, first.at_ms, first.offset);
        let who = format!("{client} ({})", h.member_id);
        if start < committed {
            found.push(Anomaly::new(
                AnomalyClass::PositionRewind,
                Some(tp),
                at,
                format!(
                    "{who} got {tp} at t={}ms with {committed} committed, but the first record \
                     it processed of it was {start}: records {start}..{committed} are delivered \
                     again",
                    h.from
                ),
                vec![commit_idx, h.idx],
            ));
        } else if start > committed {
            let set = done.get(tp).unwrap_or(&empty);
            if let Some((gap_from, gap_to)) = set.first_gap(committed, start) {
                found.push(Anomaly::new(
                    AnomalyClass::PositionSkip,
                    Some(tp),
                    at,
                    format!(
                        "{who} got {tp} at t={}ms with {committed} committed, but the first \
                         record it processed of it was {start}, and nobody ever processed \
                         records {gap_from}..{gap_to}: it skipped them",
                        h.from
                    ),
                    vec![commit_idx, h.idx],
                ));
            }
        }
    }
    found
}
