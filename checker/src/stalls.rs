//! `stalled-member`: a live member that stops heartbeating or stops consuming after the heal.
//!
//! Once the faults heal, nothing stands between a correct member and its coordinator. Two
//! things then show a member stalled while its process lives, each at the moment its bound
//! passes rather than at the run's deadline:
//! - its coordinator expires its session though the path between them worked after the member
//!   settled — the heal, the end of its last pause, its last start: a generation started with
//!   the member and it got the answer, or the coordinator validated a commit of it. A whole
//!   session on a working path went by without a heartbeat from it (a heartbeat thread that
//!   died or deadlocked). Or the session expired more than the stall bound after it settled;
//! - a partition it owns, with records nobody has processed yet, sees nothing processed by it
//!   for twice the stall bound after the heal or after it got the partition (a fetcher that
//!   never started, a revocation that never ends) — or, for a KIP-848 member, a partition its
//!   coordinator gave it in a target assignment is not taken up in that time (a reconciliation
//!   that never ends). Twice, because a revoke callback running through the heal and the
//!   rebalance after it may each take a bound.
//!
//! The stall bound is the scenario's: the largest rebalance timeout plus session timeout of its
//! members, recorded with the liveness phase. Histories without it are not judged.

use std::collections::BTreeSet;

use groupsim_wire::{Millis, TopicPartition};

use super::anomaly::{Anomaly, AnomalyClass};
use super::views::Views;

/// The progress rule's state: which (member, partition) stalls were reported already.
#[derive(Default)]
pub(super) struct Stalls {
    reported: BTreeSet<(String, TopicPartition)>,
}

impl Stalls {
    /// The progress stalls whose bound passed by `now` (event `idx` is the first at or after
    /// it), each reported once.
    pub(super) fn due(&mut self, views: &Views, now: Millis, idx: usize) -> Vec<Anomaly> {
        let (Some(heal), Some(bound)) = (views.healed_at, views.stall_ms) else {
            return Vec::new();
        };
        let limit = 2 * bound;
        let mut found = Vec::new();
        for (name, m) in views.members.iter().filter(|(_, m)| m.live) {
            // Owned partitions that stopped progressing, then (KIP-848) partitions the
            // coordinator gave that were never taken up.
            let owned = m.progress.iter().map(|(tp, since)| (tp, *since, false));
            let pending = m.pending.iter().map(|(tp, since)| (tp, *since, true));
            for (tp, since, never_taken) in owned.chain(pending) {
                let since = since.max(heal);
                let due = since + limit;
                if now <= due || !backlog(views, tp) {
                    continue;
                }
                if !self.reported.insert((name.clone(), tp.clone())) {
                    continue;
                }
                let what = if never_taken {
                    format!(
                        "{name}'s coordinator gave it {tp}, which has records nobody processed, \
                         but from t={since}ms to t={due}ms (twice the stall bound of {bound} ms \
                         after the heal) it never took the partition up: its reconciliation \
                         never ended"
                    )
                } else {
                    format!(
                        "{name} owns {tp}, which has records nobody processed, but processed \
                         nothing of it from t={since}ms to t={due}ms (twice the stall bound of \
                         {bound} ms after the heal): it stopped consuming while it lives"
                    )
                };
                found.push(Anomaly::new(
                    AnomalyClass::StalledMember,
                    Some(tp),
                    due,
                    what,
                    vec![idx],
                ));
            }
        }
        found
    }
}

/// Whether records of `tp` at or past its committed offset are unprocessed by anyone.
fn backlog(views: &Views, tp: &TopicPartition) -> bool {
    let pv = views.partition(tp);
    let Some(end) = pv.log_end else { return false };
    let from = pv.committed.map_or(0, |(o, _)| o);
    from < end && pv.processed_any.first_gap(from, end).is_some()
}

/// The heartbeat rule: member id `member_id`'s session expired at `at` (event `idx`). The member
/// could heartbeat from when it settled: the heal, the end of its last pause, its last start.
pub(super) fn session_expired(
    views: &Views,
    idx: usize,
    at: Millis,
    member_id: &str,
) -> Option<Anomaly> {
    let (heal, bound) = (views.healed_at?, views.stall_ms?);
    // The live process whose id this is: an id reported before its last start belonged to the
    // incarnation before.
    let (name, m) = views.members.iter().find(|(_, m)| {
        m.live && m.member_id.as_deref() == Some(member_id) && m.id_at >= m.started_at
    })?;
    let settled = heal.max(m.paused_until).max(m.started_at);
    let (why, contact) = match views.contact.get(member_id) {
        Some(&(contact, event)) if contact >= settled => (
            format!(
                "its path to its coordinator worked at t={contact}ms, after it settled (t={settled}ms)"
            ),
            Some(event),
        ),
        _ if at > settled + bound => (
            format!("more than the stall bound of {bound} ms after it settled (t={settled}ms)"),
            None,
        ),
        _ => return None,
    };
    Some(Anomaly::new(
        AnomalyClass::StalledMember,
        None,
        at,
        format!(
            "{name} ({member_id}) is alive but its session expired at t={at}ms though {why}: it \
             stopped heartbeating"
        ),
        contact.into_iter().chain([idx]).collect(),
    ))
}

#[cfg(test)]
mod tests {
    use groupsim_history::{CoordinatorEvent, EventKind, History, RemovalReason, WorldEvent};

    use crate::tests::{clean, tp, G, H};
    use crate::{check, AnomalyClass};

    const STALL: u64 = 1_000;

    /// `clean()` with partition 1's log grown to 20 (m1 owns it, committed 10), the producer
    /// stopped and the liveness phase begun at `heal` with a stall bound of one second.
    fn healed(heal: u64) -> H {
        let mut h = clean();
        h.world(WorldEvent::ProducerStopped { log_end_offsets: vec![(tp(0), 10), (tp(1), 20)] });
        h.t = h.t.max(heal - 10);
        h.world(WorldEvent::LivenessPhase { deadline_ms: heal + 10_000, stall_ms: Some(STALL) });
        h
    }

    fn at(h: &mut H, t: u64, e: CoordinatorEvent) {
        h.t = t - 10;
        h.coord(e);
    }

    fn end(h: &mut H, t: u64) -> History {
        h.t = t - 10;
        h.world(WorldEvent::RunEnded);
        h.h.clone()
    }

    fn stalls(h: &History) -> Vec<(u64, String)> {
        let v = check(h);
        let found = v.anomalies.iter().filter(|a| a.class == AnomalyClass::StalledMember);
        found.map(|a| (a.at_ms, a.message.clone())).collect()
    }

    fn expired(member_id: &str) -> CoordinatorEvent {
        CoordinatorEvent::MemberRemoved {
            group: G.into(),
            member_id: member_id.into(),
            reason: RemovalReason::SessionTimeout,
        }
    }

    #[test]
    fn an_owned_partition_with_a_backlog_and_no_progress_stalls_at_twice_the_bound() {
        let mut h = healed(1_000);
        let got = stalls(&end(&mut h, 5_000));
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].0, 1_000 + 2 * STALL, "flagged when the bound passed");
        assert!(got[0].1.contains("m1 owns t-1"), "{}", got[0].1);
    }

    #[test]
    fn progress_or_an_early_end_is_no_stall() {
        let mut h = healed(1_000);
        h.t = 2_500;
        h.processed("m1", "b", 1, 1, 10, 19);
        assert_eq!(stalls(&end(&mut h, 4_000)), [], "processing reset the clock; nothing left");
        let mut h = healed(1_000);
        assert_eq!(stalls(&end(&mut h, 2_500)), [], "the run ended before the bound");
    }

    #[test]
    fn a_session_expiring_after_contact_in_the_healed_cluster_is_a_stall() {
        let mut h = healed(1_000);
        h.t = 1_200;
        h.generation(2, &[("m0", "a", &[0]), ("m1", "b", &[1])]);
        h.processed("m1", "b", 2, 1, 10, 19);
        at(&mut h, 1_900, expired("a"));
        let got = stalls(&end(&mut h, 2_000));
        assert_eq!(got.len(), 1, "{got:?}");
        assert!(got[0].1.contains("m0 (a) is alive but its session expired"), "{}", got[0].1);
    }

    #[test]
    fn a_session_expiring_soon_after_the_heal_is_no_stall_but_long_after_is() {
        let mut h = healed(1_000);
        h.processed("m1", "b", 1, 1, 10, 19);
        at(&mut h, 1_800, expired("a"));
        assert_eq!(stalls(&end(&mut h, 1_900)), [], "its last contact was before the heal");
        let mut h = healed(1_000);
        h.t = 1_100;
        h.processed("m1", "b", 1, 1, 10, 19);
        at(&mut h, 2_100, expired("a"));
        assert_eq!(stalls(&end(&mut h, 2_200)).len(), 1, "past the stall bound");
    }

    /// Swarm 53293: a member's JoinGroup was read before the heal; a connection drop then
    /// closed its connection, and a partition lost the handshake answer on the new one, so
    /// nothing it sent reached the coordinator until its request timed out. The generation its
    /// old join completed after the heal restarted its session there; the answer went to the
    /// closed connection, the member never learned it had joined, and the session expired. The
    /// generation is no contact from the member; a member that got its answer is.
    #[test]
    fn a_generation_whose_answer_the_member_never_got_is_no_contact() {
        let mut h = healed(1_000);
        h.t = 1_200;
        h.generation_started(2, &["a", "b"]);
        h.processed("m1", "b", 1, 1, 10, 19);
        at(&mut h, 1_900, expired("a"));
        assert_eq!(stalls(&end(&mut h, 2_000)), [], "m0 never got the join's answer");
        let mut h = healed(1_000);
        h.t = 1_200;
        h.generation_started(2, &["a", "b"]);
        h.member(
            "m0",
            groupsim_history::MemberEvent::Joined {
                member_id: "a".into(),
                generation: 2,
                leader: "a".into(),
                protocol: "range".into(),
                is_leader: true,
            },
        );
        h.processed("m1", "b", 1, 1, 10, 19);
        at(&mut h, 1_900, expired("a"));
        let got = stalls(&end(&mut h, 2_000));
        assert_eq!(got.len(), 1, "m0 got the answer after the heal and never heartbeat: {got:?}");
        assert!(
            got[0].1.contains("m0 (a) is alive")
                && got[0].1.contains("path to its coordinator worked")
        );
    }

    /// Swarm_mixed 149: brod and Elsa give their member id up when they lose the coordinator
    /// (brod's `should_reset_member_id` on a lost connection or NOT_COORDINATOR) and rejoin
    /// without one; the old id stays in the group until its session expires. That expiry,
    /// after a commit validated on a working path, is no stall: the member said it gave the id
    /// up. Without that word, it is.
    #[test]
    fn the_session_of_a_member_id_its_client_gave_up_expires_without_a_stall() {
        let run = |abandoned: bool| {
            let mut h = healed(1_000);
            h.t = 1_200;
            h.generation(2, &[("m0", "a", &[0]), ("m1", "b", &[1])]);
            h.processed("m1", "b", 2, 1, 10, 19);
            if abandoned {
                h.member(
                    "m0",
                    groupsim_history::MemberEvent::GenerationReset {
                        member_id: "a".into(),
                        generation: 2,
                        error: "COORDINATOR_LOST".into(),
                        reset_member_id: true,
                        answer_about: None,
                    },
                );
            }
            at(&mut h, 1_900, expired("a"));
            stalls(&end(&mut h, 2_000))
        };
        assert_eq!(run(true), [], "m0 gave member id a up before it expired");
        assert_eq!(run(false).len(), 1, "m0 still held a: its expiry is a stall");
    }

    /// Swarm 10968: a member paused across the heal gets the answer to its SyncGroup (sent
    /// before the pause) when the pause ends; its session expires before it could heartbeat.
    #[test]
    fn a_session_expiring_before_a_paused_member_could_heartbeat_is_no_stall() {
        let mut h = healed(1_000);
        h.world(groupsim_history::WorldEvent::FaultInjected {
            fault: groupsim_history::Fault::MemberPause { member: "m0".into(), duration_ms: 1_000 },
            applied: true,
        });
        h.t = 1_200;
        h.generation(2, &[("m0", "a", &[0]), ("m1", "b", &[1])]);
        h.processed("m1", "b", 2, 1, 10, 19);
        at(&mut h, 1_900, expired("a"));
        assert_eq!(stalls(&end(&mut h, 2_000)), [], "its join completed while it was paused");
    }

    /// Swarm 1854: a crashed incarnation's commit, processed late (the late-request hazard),
    /// renewed its session at the coordinator; it expired ten seconds later, while the member's
    /// new incarnation (started before the heal) had not joined yet. The id is not the live
    /// process's.
    #[test]
    fn a_crashed_incarnations_session_is_not_the_live_members() {
        let mut h = clean();
        h.world(WorldEvent::MemberStopped { member: "m0".into() });
        let started =
            WorldEvent::MemberStarted { member: "m0".into(), group: G.into(), host: "c".into() };
        h.world(started);
        h.world(WorldEvent::ProducerStopped { log_end_offsets: vec![(tp(0), 10), (tp(1), 20)] });
        h.t = 990;
        h.world(WorldEvent::LivenessPhase { deadline_ms: 11_000, stall_ms: Some(STALL) });
        h.t = 1_100;
        h.commit("a", 1, 0, 10);
        h.processed("m1", "b", 1, 1, 10, 19);
        at(&mut h, 1_900, expired("a"));
        assert_eq!(stalls(&end(&mut h, 2_000)), []);
    }

    #[test]
    fn histories_without_a_stall_bound_are_not_judged() {
        let mut h = clean();
        h.world(WorldEvent::ProducerStopped { log_end_offsets: vec![(tp(0), 10), (tp(1), 20)] });
        h.world(WorldEvent::LivenessPhase { deadline_ms: 100_000, stall_ms: None });
        h.t = 90_000;
        h.record_world_end();
        assert_eq!(stalls(&h.h), []);
    }

    impl H {
        fn record_world_end(&mut self) {
            self.h.record(self.t, EventKind::World(WorldEvent::RunEnded));
        }
    }
}
