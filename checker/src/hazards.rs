//! Anomalies Kafka itself allows, set apart from the ones that prove a bug: `explain` takes the
//! anomalies found and hands those a hazard explains to it ([`crate::stranded`] for a member a
//! downgrade stranded, windows on a partition from [`crate::taken_partitions`] and from the
//! late commits this module finds).
//!
//! Kafka orders a client's requests per connection only. A request the broker has read but not
//! yet processed (a stalled request handler) is processed even after its client gave up on it,
//! closed the connection and sent newer requests on another one: a late OffsetCommit then moves
//! the group's committed offset back below a newer commit, and what follows on that partition —
//! the next owner resuming below what was acknowledged, records committed twice — comes from
//! the same hazard. A late commit shows in the history one of two ways: the world names the
//! hazard when it plays it as a fault (`WorldEvent::RequestProcessedLate`), or the member
//! recorded the commit as lost with its connection (DISCONNECTED or TIMEOUT, no answer), yet the
//! coordinator accepted it afterwards — a frame already on its way when the connection went
//! (a lossy link retransmits it after the close), overtaken by the member's newer commits on a
//! new connection. The member may have sent the same offsets again: each acceptance is matched
//! to a send the member still awaits first, so only an acceptance beyond those is the given-up
//! one. A commit refused by the coordinator is no late request: its anomalies are the client's.
//!
//! An anomaly is explained when one of its proving events is a late commit that moved its
//! partition's offset back, or when it concerns that partition and one of its proving events
//! falls while the committed offset stays below the offset it was moved back from (until a
//! commit at or past it closes the window; what that commit itself shows is explained too): a
//! member given the partition then may learn the moved-back offset, however late it uses it. A
//! late commit its sender sent while it owned the partition explains what it proves itself (it
//! lands on a partition that moved on meanwhile). Nothing else is excused: a late commit that
//! moved nothing back, sent by a member that no longer owned its partition, explains nothing.

use std::collections::BTreeMap;

use groupsim_history::{CoordinatorEvent, EventKind, GroupApi, History, MemberEvent, WorldEvent};
use groupsim_wire::TopicPartition;

use crate::hazard::{Explained, Hazard, Window};
use crate::Anomaly;

/// Splits `anomalies` into those no hazard explains and those one does.
pub(crate) fn explain(
    history: &History,
    anomalies: Vec<Anomaly>,
) -> (Vec<Anomaly>, Vec<Explained>) {
    // Nothing to explain (most runs): the hazards' windows need not be read from the history.
    if anomalies.is_empty() {
        return (anomalies, Vec::new());
    }
    let (anomalies, stranded) = crate::stranded::explain(history, anomalies);
    let mut windows = late_commit_windows(history);
    windows.extend(crate::taken_partitions::windows(history));
    if windows.is_empty() {
        return (anomalies, stranded);
    }
    let mut kept = Vec::new();
    let mut explained = stranded;
    for anomaly in anomalies {
        let by = windows.iter().find(|w| {
            (w.hazard == Hazard::LateRequest && anomaly.events.contains(&w.cause))
                || anomaly.partition.as_ref() == Some(&w.partition)
                    && (anomaly.events.iter().any(|i| (w.from..w.to).contains(i))
                        || anomaly.events.last() == Some(&w.to))
        });
        match by {
            Some(w) => explained.push(Explained { hazard: w.hazard, cause: w.cause, anomaly }),
            None => kept.push(anomaly),
        }
    }
    (kept, explained)
}

/// Takes one from `key`'s count, if it has any.
fn take(
    counts: &mut BTreeMap<(String, TopicPartition, i64), usize>,
    key: &(String, TopicPartition, i64),
) -> bool {
    match counts.get_mut(key) {
        Some(n) if *n > 1 => {
            *n -= 1;
            true
        }
        Some(_) => {
            counts.remove(key);
            true
        }
        None => false,
    }
}

/// The late commits that moved a partition's committed offset back, each with its window.
fn late_commit_windows(history: &History) -> Vec<Window> {
    // (member id, instant) of every late OffsetCommit processed.
    let mut late: Vec<(String, u64)> = Vec::new();
    // (member id, partition, offset) -> how many such commits the member sent and still
    // awaits, and how many it gave up with their connection (that may still be processed).
    let mut sent: BTreeMap<(String, TopicPartition, i64), usize> = BTreeMap::new();
    let mut given_up: BTreeMap<(String, TopicPartition, i64), usize> = BTreeMap::new();
    // What each member reports owning; commits sent while the sender owned their partition.
    let mut owning = crate::taken_partitions::ReportedOwnership::default();
    let mut sent_owned: std::collections::BTreeSet<(String, TopicPartition, i64)> =
        Default::default();
    // Per partition: the highest offset committed so far.
    let mut high: BTreeMap<TopicPartition, i64> = BTreeMap::new();
    // Open windows: partition -> (cause, from, offset to reach).
    let mut open: BTreeMap<TopicPartition, (usize, usize, i64)> = BTreeMap::new();
    let mut windows = Vec::new();
    for (idx, e) in history.events().iter().enumerate() {
        owning.read(&e.kind);
        match &e.kind {
            EventKind::World(WorldEvent::RequestProcessedLate {
                api: GroupApi::OffsetCommit,
                member_id: Some(id),
                ..
            }) => late.push((id.clone(), e.at_ms)),
            EventKind::Member {
                event: MemberEvent::CommitSent { member_id, partition, offset, .. },
                ..
            } => {
                let key = (member_id.clone(), partition.clone(), *offset);
                if owning.held(member_id).is_some_and(|o| o.contains(partition)) {
                    sent_owned.insert(key.clone());
                } else {
                    sent_owned.remove(&key);
                }
                *sent.entry(key).or_default() += 1;
            }
            EventKind::Member {
                event: MemberEvent::CommitFailed { member_id, partition, offset, error, .. },
                ..
            } => {
                let key = (member_id.clone(), partition.clone(), *offset);
                // Refused, it was processed; lost with its connection, it may still be.
                if take(&mut sent, &key) && matches!(error.as_str(), "DISCONNECTED" | "TIMEOUT") {
                    *given_up.entry(key).or_default() += 1;
                }
            }
            EventKind::Coordinator {
                event:
                    CoordinatorEvent::OffsetCommitAccepted {
                        member_id,
                        partition,
                        offset,
                        validated_at_ms,
                        ..
                    },
                ..
            } => {
                let key = (member_id.clone(), partition.clone(), *offset);
                let played = late.iter().any(|(id, at)| id == member_id && at == validated_at_ms);
                // A send the member still awaits answers for this acceptance first.
                let is_late = played || (!take(&mut sent, &key) && take(&mut given_up, &key));
                let before = high.get(partition).copied();
                if let Some((cause, from, reach)) = open.get(partition).copied() {
                    if *offset >= reach {
                        open.remove(partition);
                        let partition = partition.clone();
                        let hazard = Hazard::LateRequest;
                        windows.push(Window { hazard, cause, partition, from, to: idx });
                    }
                }
                if is_late && before.is_some_and(|b| *offset < b) && !open.contains_key(partition) {
                    open.insert(partition.clone(), (idx, idx, before.unwrap_or_default()));
                } else if is_late && sent_owned.contains(&key) {
                    // Sent while its sender owned the partition, validated after it had moved
                    // on: what the commit itself proves (it landed on a partition the sender no
                    // longer owns) is the hazard's.
                    let (hazard, partition) = (Hazard::LateRequest, partition.clone());
                    windows.push(Window { hazard, cause: idx, partition, from: idx, to: idx });
                }
                high.insert(partition.clone(), before.map_or(*offset, |b| b.max(*offset)));
            }
            _ => {}
        }
    }
    let end = history.len().saturating_sub(1);
    for (partition, (cause, from, _)) in open {
        windows.push(Window { hazard: Hazard::LateRequest, cause, partition, from, to: end });
    }
    windows.sort_by_key(|w| w.cause);
    windows
}

#[cfg(test)]
mod tests {
    use groupsim_history::{GroupApi, MemberEvent, WorldEvent};

    use super::Hazard;
    use crate::tests::{clean, tp};
    use crate::{check, AnomalyClass};

    /// The world played the late-request hazard: member `a`'s OffsetCommit, read earlier, is
    /// processed now; the coordinator validates `offset` on partition 0 at this instant.
    fn late_commit(h: &mut crate::tests::H, offset: i64) {
        late_commit_in(h, 1, offset);
    }

    /// [`late_commit`] under `generation`.
    fn late_commit_in(h: &mut crate::tests::H, generation: i32, offset: i64) {
        h.world(WorldEvent::RequestProcessedLate {
            node: 0,
            member: "m0".into(),
            api: GroupApi::OffsetCommit,
            member_id: Some("a".into()),
            read_at_ms: 1,
        });
        let at = h.t;
        h.commit_validated_at("a", generation, 0, offset, at);
    }

    #[test]
    fn a_late_commit_that_moves_the_offset_back_is_a_hazard_not_a_failure() {
        let mut h = clean();
        late_commit(&mut h, 4);
        let v = check(&h.finish(&[(0, 10), (1, 10)]));
        assert!(v.is_ok(), "{:?}", v.anomalies);
        let e = v.hazards.first().expect("the regression is shown as a hazard");
        assert_eq!(e.hazard, Hazard::LateRequest);
        assert_eq!(e.anomaly.class, AnomalyClass::OffsetRegression);
        assert_eq!(e.anomaly.partition, Some(tp(0)));
        assert!(e.anomaly.events.contains(&e.cause), "the late commit proves it");
    }

    #[test]
    fn the_same_regression_without_the_hazard_fails() {
        let mut h = clean();
        let at = h.t + 10;
        h.commit_validated_at("a", 1, 0, 4, at);
        let v = check(&h.finish(&[(0, 10), (1, 10)]));
        assert!(v.hazards.is_empty());
        assert!(v.anomalies.iter().any(|a| a.class == AnomalyClass::OffsetRegression));
    }

    #[test]
    fn the_hazard_explains_its_partition_only_until_the_offset_is_back() {
        let mut h = clean();
        late_commit(&mut h, 4);
        // Back to 10: covers 4..10 a second time, inside the window (explained).
        h.commit("a", 1, 0, 10);
        // A regression after the window closed is nobody's hazard.
        h.commit("a", 1, 0, 6);
        let v = check(&h.finish(&[(0, 10), (1, 10)]));
        let explained: Vec<AnomalyClass> = v.hazards.iter().map(|e| e.anomaly.class).collect();
        assert!(explained.contains(&AnomalyClass::OffsetRegression), "{explained:?}");
        assert!(explained.contains(&AnomalyClass::DuplicateCommit), "{explained:?}");
        assert!(
            v.anomalies.iter().any(|a| a.class == AnomalyClass::OffsetRegression),
            "the later regression fails the run: {:?}",
            v.anomalies
        );
    }

    #[test]
    fn a_late_commit_that_moves_nothing_back_explains_nothing() {
        let mut h = clean();
        late_commit(&mut h, 10);
        let at = h.t + 10;
        h.commit_validated_at("a", 1, 0, 4, at);
        let v = check(&h.finish(&[(0, 10), (1, 10)]));
        assert!(v.hazards.is_empty(), "{:?}", v.hazards);
        assert!(v.anomalies.iter().any(|a| a.class == AnomalyClass::OffsetRegression));
    }

    /// swarm seed 78537 (the 100,000-seed campaign): m0 sent a commit of orders-0 at 192 just
    /// as it closed its coordinator connection (a heartbeat said NOT_COORDINATOR), and recorded it
    /// lost (DISCONNECTED); it sent the same offset again on a new connection, which was accepted
    /// and acknowledged, then committed 203. The first frame, retransmitted on a lossy link after
    /// the close, reached the broker 1.4 s later and was processed: the offset went back to 192.
    /// With `resent` false the member never sent 192 again (the case handled before); with it,
    /// the resend's acceptance answers the resend, and the extra one is the late original.
    fn given_up_then(resent: bool) -> crate::Verdict {
        let mut h = clean();
        h.produced(0, 5).processed("m0", "a", 1, 0, 10, 14);
        let event = |offset| MemberEvent::CommitSent {
            member_id: "a".into(),
            generation: 1,
            partition: tp(0),
            offset,
        };
        h.member("m0", event(12));
        h.member(
            "m0",
            MemberEvent::CommitFailed {
                member_id: "a".into(),
                generation: 1,
                partition: tp(0),
                offset: 12,
                error: "DISCONNECTED".into(),
            },
        );
        if resent {
            h.member("m0", event(12));
            h.commit("a", 1, 0, 12);
        }
        h.member("m0", event(15));
        h.commit("a", 1, 0, 15);
        h.commit("a", 1, 0, 12);
        check(&h.finish(&[(0, 15), (1, 10)]))
    }

    #[test]
    fn a_given_up_commit_processed_after_its_resend_and_a_newer_one_is_the_hazard() {
        for resent in [false, true] {
            let v = given_up_then(resent);
            assert!(v.is_ok(), "resent {resent}: {:?}", v.anomalies);
            let e = v.hazards.first().expect("the regression is shown as a hazard");
            assert_eq!(e.hazard, Hazard::LateRequest);
        }
    }

    #[test]
    fn a_commit_the_member_sent_twice_and_saw_accepted_twice_is_no_hazard() {
        // Both sends awaited, both accepted, then a lower one nobody gave up: the client's.
        let mut h = clean();
        let event = MemberEvent::CommitSent {
            member_id: "a".into(),
            generation: 1,
            partition: tp(0),
            offset: 12,
        };
        h.member("m0", event.clone()).member("m0", event);
        h.commit("a", 1, 0, 12).commit("a", 1, 0, 12).commit("a", 1, 0, 11);
        let v = check(&h.finish(&[(0, 12), (1, 10)]));
        assert!(v.hazards.is_empty(), "{:?}", v.hazards);
        assert!(v.anomalies.iter().any(|a| a.class == AnomalyClass::OffsetRegression));
    }

    /// consumer_protocol_swarm seed 6098: m1's commit of orders-10, read by the broker at
    /// 33.6 s while m1 owned the partition, was processed at 39.6 s, after m1 had released it:
    /// the commit lands on a partition its sender no longer owns. `owned`: whether a owned t-0
    /// when it sent the commit (a member committing after it revoked is at fault itself).
    fn late_after_handover(owned: bool) -> crate::Verdict {
        let mut h = clean();
        let sent = MemberEvent::CommitSent {
            member_id: "a".into(),
            generation: 1,
            partition: tp(0),
            offset: 10,
        };
        if owned {
            h.member("m0", sent.clone());
        }
        h.member(
            "m0",
            MemberEvent::Revoked { member_id: "a".into(), generation: 1, partitions: vec![tp(0)] },
        );
        h.generation(2, &[("m0", "a", &[]), ("m1", "b", &[0, 1])]);
        if !owned {
            h.member("m0", sent);
        }
        late_commit_in(&mut h, 2, 10);
        check(&h.finish(&[(0, 10), (1, 10)]))
    }

    #[test]
    fn a_late_commit_sent_while_owned_landing_after_the_handover_is_the_hazard() {
        let v = late_after_handover(true);
        assert!(v.is_ok(), "{:?}", v.anomalies);
        let e = v.hazards.first().expect("shown as a hazard");
        assert_eq!((e.hazard, e.anomaly.class), (Hazard::LateRequest, AnomalyClass::UnownedCommit));
    }

    #[test]
    fn a_late_commit_sent_after_revoking_is_the_members_fault() {
        let v = late_after_handover(false);
        assert!(v.hazards.is_empty(), "{:?}", v.hazards);
        assert!(v.anomalies.iter().any(|a| a.class == AnomalyClass::UnownedCommit), "{v:?}");
    }

    fn commit_event(kind: &str, offset: i64, error: &str) -> MemberEvent {
        let (member_id, generation, partition) = ("a".to_string(), 1, tp(0));
        match kind {
            "sent" => MemberEvent::CommitSent { member_id, generation, partition, offset },
            _ => MemberEvent::CommitFailed {
                member_id,
                generation,
                partition,
                offset,
                error: error.into(),
            },
        }
    }

    /// The commit of 4 the member gave up with its connection lands after its commit of 12 on a
    /// new connection (`resend`: unless the member sent it again itself).
    fn overtaken(resend: bool) -> crate::Verdict {
        let mut h = clean();
        h.member("m0", commit_event("sent", 4, ""));
        h.member("m0", commit_event("failed", 4, "DISCONNECTED"));
        if resend {
            h.member("m0", commit_event("sent", 4, ""));
        }
        h.commit("a", 1, 0, 12);
        h.commit("a", 1, 0, 4);
        check(&h.finish(&[(0, 12), (1, 10)]))
    }

    #[test]
    fn a_commit_given_up_with_its_connection_and_accepted_late_is_the_hazard() {
        let v = overtaken(false);
        assert!(v.anomalies.iter().all(|a| a.class != AnomalyClass::OffsetRegression), "{:?}", v);
        assert!(v.hazards.iter().any(|e| e.anomaly.class == AnomalyClass::OffsetRegression));
    }

    /// A client that sends a superseded commit again (spring-kafka #3186) is at fault.
    #[test]
    fn a_commit_the_member_sent_again_is_no_hazard() {
        let v = overtaken(true);
        assert!(v.hazards.is_empty(), "{:?}", v.hazards);
        assert!(v.anomalies.iter().any(|a| a.class == AnomalyClass::OffsetRegression));
    }
}
