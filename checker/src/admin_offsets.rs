//! What admin clients were told about committed offsets, held against the history: every
//! offset an OffsetFetch answer (naming no topics: all the group's) shows for a partition was
//! the group's committed offset of that partition at some instant between the request's sending
//! and the answer's arrival, and a partition committed before the request was sent is shown.
//! Committed offsets are what the coordinators recorded as accepted (appended), in order; a
//! load restores what was appended, so it adds nothing. Answers with an error are not judged.

use std::collections::BTreeMap;

use groupsim_history::{CoordinatorEvent, EventKind, History, MemberEvent, WorldEvent};
use groupsim_wire::{Millis, TopicPartition};

use crate::anomaly::{Anomaly, AnomalyClass};

/// (group, partition) -> its committed offsets in order, each with when it took effect.
type Committed = BTreeMap<(String, TopicPartition), Vec<(Millis, i64)>>;

/// Every OffsetFetch answer that showed an offset never committed while it was asked, or left
/// out a partition committed before.
pub(super) fn check(history: &History) -> Vec<Anomaly> {
    let mut committed: Committed = BTreeMap::new();
    // Admin client -> the group it watches.
    let mut watches: BTreeMap<&str, &str> = BTreeMap::new();
    let mut out = Vec::new();
    for (idx, e) in history.events().iter().enumerate() {
        match &e.kind {
            EventKind::World(WorldEvent::ObserverStarted { observer, group, .. }) => {
                watches.insert(observer, group);
            }
            EventKind::Coordinator {
                event: CoordinatorEvent::OffsetCommitAccepted { group, partition, offset, .. },
                ..
            } => committed
                .entry((group.clone(), partition.clone()))
                .or_default()
                .push((e.at_ms, *offset)),
            EventKind::Member {
                member,
                event: MemberEvent::OffsetsFetched { node_id, sent_at, error: None, offsets },
            } => {
                let group = watches.get(member.as_str()).copied().unwrap_or_default();
                let key = |tp: &TopicPartition| (group.to_string(), tp.clone());
                let mut shown: BTreeMap<&TopicPartition, i64> = BTreeMap::new();
                for (tp, offset) in offsets {
                    shown.insert(tp, *offset);
                    let values = values_between(committed.get(&key(tp)), *sent_at, e.at_ms);
                    if !values.contains(offset) {
                        let message = format!(
                            "{member}'s OffsetFetch (sent at {sent_at} ms) was told by broker \
                             {node_id} that {tp} is committed at {offset}; it was at {values:?} \
                             meanwhile"
                        );
                        out.push(Anomaly::new(
                            AnomalyClass::AdminMismatch,
                            Some(tp),
                            e.at_ms,
                            message,
                            vec![idx],
                        ));
                    }
                }
                for ((g, tp), points) in &committed {
                    if g != group {
                        continue;
                    }
                    let before = points.iter().any(|(at, _)| *at < *sent_at);
                    if before && !shown.contains_key(tp) {
                        let message = format!(
                            "{member}'s OffsetFetch (sent at {sent_at} ms) was not shown {tp} by \
                             broker {node_id}, committed before it asked"
                        );
                        out.push(Anomaly::new(
                            AnomalyClass::AdminMismatch,
                            Some(tp),
                            e.at_ms,
                            message,
                            vec![idx],
                        ));
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// The committed offsets in force at some instant from `sent` to `answered`: the last one
/// before `sent` (and, within `sent`'s millisecond, the one before it), and every later one.
fn values_between(points: Option<&Vec<(Millis, i64)>>, sent: Millis, answered: Millis) -> Vec<i64> {
    let Some(points) = points else { return Vec::new() };
    let before = points.iter().rev().find(|(at, _)| *at < sent).map(|(_, o)| *o);
    let during = points.iter().filter(|(at, _)| (sent..=answered).contains(at)).map(|(_, o)| *o);
    before.into_iter().chain(during).collect()
}

#[cfg(test)]
mod tests {
    use groupsim_history::{CoordinatorEvent, EventKind, History, MemberEvent, WorldEvent};
    use groupsim_wire::TopicPartition;

    use crate::{check, AnomalyClass};

    fn tp(p: i32) -> TopicPartition {
        TopicPartition::new("t", p)
    }

    fn watching() -> History {
        let mut h = History::new();
        let started = WorldEvent::ObserverStarted {
            observer: "a0".into(),
            group: "g".into(),
            host: "c".into(),
        };
        h.world(0, started);
        h
    }

    fn commit(h: &mut History, at: u64, p: i32, offset: i64) {
        let event = CoordinatorEvent::OffsetCommitAccepted {
            group: "g".into(),
            member_id: "m".into(),
            generation: 1,
            partition: tp(p),
            offset,
            validated_at_ms: at,
        };
        h.record(at, EventKind::Coordinator { broker: 0, event });
    }

    fn fetched(h: &mut History, sent_at: u64, at: u64, offsets: &[(i32, i64)]) {
        let offsets = offsets.iter().map(|(p, o)| (tp(*p), *o)).collect();
        let event = MemberEvent::OffsetsFetched { node_id: 0, sent_at, error: None, offsets };
        h.record(at, EventKind::Member { member: "a0".into(), event });
    }

    fn mismatches(h: &History) -> Vec<String> {
        let v = check(h);
        v.anomalies
            .iter()
            .filter(|a| a.class == AnomalyClass::AdminMismatch)
            .map(|a| a.message.clone())
            .collect()
    }

    #[test]
    fn an_offset_committed_while_it_was_asked_may_be_shown_either_side() {
        let mut h = watching();
        commit(&mut h, 10, 0, 5);
        commit(&mut h, 30, 0, 9);
        let mut old = h.clone();
        fetched(&mut h, 20, 40, &[(0, 9)]);
        fetched(&mut old, 20, 40, &[(0, 5)]);
        assert!(mismatches(&h).is_empty(), "{:?}", mismatches(&h));
        assert!(mismatches(&old).is_empty(), "{:?}", mismatches(&old));
    }

    #[test]
    fn an_offset_no_longer_committed_when_asked_is_a_mismatch() {
        let mut h = watching();
        commit(&mut h, 10, 0, 5);
        commit(&mut h, 15, 0, 9);
        fetched(&mut h, 20, 40, &[(0, 5)]);
        let m = mismatches(&h);
        assert_eq!(m.len(), 1, "{m:?}");
        assert!(m[0].contains("t-0 is committed at 5"), "{}", m[0]);
    }

    #[test]
    fn a_partition_committed_before_the_request_left_out_is_a_mismatch() {
        let mut h = watching();
        commit(&mut h, 10, 0, 5);
        commit(&mut h, 25, 1, 3);
        // t-1's first commit came while it asked: leaving it out is fine; t-0's is not.
        fetched(&mut h, 20, 40, &[]);
        let m = mismatches(&h);
        assert_eq!(m.len(), 1, "{m:?}");
        assert!(m[0].contains("not shown t-0"), "{}", m[0]);
    }
}
