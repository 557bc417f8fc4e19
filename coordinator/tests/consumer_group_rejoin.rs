//! KIP-848 rejoins (KAFKA-19233): a member fenced on its side (its heartbeat refused, say after
//! two lost answers) gives its partitions up as lost and rejoins with member epoch 0 and the
//! member id it had, while the group still holds it at a higher epoch. Kafka (since
//! apache/kafka#21305) accepts the rejoin: the member is reconciled one step from its current
//! state with what it reports owned (nothing), and the answer is full, carrying its epoch and
//! assignment, in every reconciliation state.

mod consumer_harness;

use std::collections::BTreeSet;

use consumer_harness::*;
use groupsim_coordinator::consumer_group::MemberState;
use groupsim_coordinator::{ConsumerGroupEvent, CoordinatorBugs, GroupCoordinator};
use groupsim_wire::TopicPartition;
use kafka_protocol::messages::TopicName;

/// a joins, then b: a revokes half and moves to epoch 2 (previous epoch 1), b takes that half
/// (epoch 2). Every member rejoining below has a previous epoch other than 0, so Kafka before
/// the fix fenced its rejoin (a retry at the previous epoch owning nothing is accepted anyway).
fn two_reconciled(h: &mut Harness) {
    let (_, all) = h.joined("a", &["t"]);
    h.joined("b", &["t"]);
    let a_target = h.group().target_of("a");
    h.hb(beat("a", 1, &all));
    h.hb(beat("a", 1, &a_target));
    h.hb(beat("b", 2, &BTreeSet::new()));
}

/// As [`two_reconciled`], then c joins (group epoch 3) and a, asked to give c a partition,
/// is in UNREVOKED_PARTITIONS at epoch 2.
fn a_revoking(h: &mut Harness) {
    two_reconciled(h);
    h.joined("c", &["t"]);
    let owned = h.group().member("a").unwrap().assigned.clone();
    h.hb(beat("a", 2, &owned));
}

/// As [`two_reconciled`], then b moves to topic `u` (group epoch 3): a's target is all of `t`,
/// half of it still b's, so a waits in UNRELEASED_PARTITIONS at epoch 3 (previous epoch 2).
fn a_waiting(h: &mut Harness) {
    two_reconciled(h);
    let b_owned = h.group().member("b").unwrap().assigned.clone();
    h.hb(beat("b", 2, &b_owned).with_subscribed_topic_names(Some(vec![TopicName(s("u"))])));
    let a_owned = h.group().member("a").unwrap().assigned.clone();
    h.hb(beat("a", 2, &a_owned));
}

/// As [`a_waiting`], and b has released its `t` partitions since (a has not heard yet).
fn a_waiting_b_released(h: &mut Harness) {
    a_waiting(h);
    h.hb(beat("b", 2, &BTreeSet::new()));
}

/// What the rejoining member's answer and assignment must hold.
#[derive(Clone, Copy, Debug)]
enum Gets {
    /// Its whole target.
    Target,
    /// What it held before (it still waits for the rest).
    Held,
}

#[test]
fn a_known_member_rejoining_at_epoch_zero_gets_its_epoch_and_assignment_back() {
    // (behaviour, setup, its state before, then the answer's epoch, its assignment, and the
    // member's state after)
    type Setup = fn(&mut Harness);
    let cases: [(&str, Setup, MemberState, i32, Gets, MemberState); 4] = [
        (
            "STABLE: its current assignment back, nothing moves",
            two_reconciled,
            MemberState::Stable,
            2,
            Gets::Target,
            MemberState::Stable,
        ),
        (
            "UNREVOKED_PARTITIONS: owning nothing, it has revoked; on to the new epoch",
            a_revoking,
            MemberState::UnrevokedPartitions,
            3,
            Gets::Target,
            MemberState::Stable,
        ),
        (
            "UNRELEASED_PARTITIONS, still held by their owner: it keeps waiting",
            a_waiting,
            MemberState::UnreleasedPartitions,
            3,
            Gets::Held,
            MemberState::UnreleasedPartitions,
        ),
        (
            "UNRELEASED_PARTITIONS, released meanwhile: it gets them",
            a_waiting_b_released,
            MemberState::UnreleasedPartitions,
            3,
            Gets::Target,
            MemberState::Stable,
        ),
    ];
    for (behaviour, setup, before, epoch, gets, after) in cases {
        for fenced in [false, true] {
            let bugs =
                CoordinatorBugs { fences_rejoin_at_epoch_zero: fenced, ..Default::default() };
            let mut h = harness(bugs);
            setup(&mut h);
            let held = h.group().member("a").unwrap().clone();
            assert_eq!(held.state, before, "{behaviour}: state before");
            assert!(held.previous_member_epoch > 0, "{behaviour}: {held:?}");
            let group_epoch = h.group().group_epoch();
            let from = h.events.len();

            let r = h.hb(join("a", &["t"]));

            if fenced {
                // Kafka before KAFKA-19233: the rejoin is fenced and nothing changes.
                assert_eq!(r.error_code, E::FencedMemberEpoch.code(), "{behaviour}: {r:?}");
                assert_eq!(h.group().member("a").unwrap(), &held, "{behaviour}: unchanged");
                continue;
            }
            assert_eq!(r.error_code, 0, "{behaviour}: accepted: {r:?}");
            assert_eq!(r.member_id.as_deref(), Some("a"), "{behaviour}: same member id");
            assert_eq!(r.member_epoch, epoch, "{behaviour}: epoch");
            let expected = match gets {
                Gets::Target => h.group().target_of("a"),
                Gets::Held => held.assigned.clone(),
            };
            assert_eq!(h.assigned(&r), Some(expected.clone()), "{behaviour}: a full answer");
            let m = h.group().member("a").unwrap();
            assert_eq!((m.member_epoch, m.state), (epoch, after), "{behaviour}: state after");
            assert_eq!(m.assigned, expected, "{behaviour}: assigned after");
            assert!(m.pending_revocation.is_empty(), "{behaviour}: nothing left to revoke");
            assert_eq!(h.group().group_epoch(), group_epoch, "{behaviour}: no rebalance");
            let joined_again = h.events[from..].iter().any(
                |e| matches!(e, ConsumerGroupEvent::MemberJoined { member_id, .. } if member_id == "a"),
            );
            assert!(!joined_again, "{behaviour}: the same member, not a new one");
        }
    }
}

/// The revoking member that rejoins owning nothing has given up what moved away: the
/// coordinator records the release, and the new owner gets the partition on its next heartbeat.
#[test]
fn a_revoking_member_rejoining_releases_what_it_was_revoking() {
    let mut h = Harness::default();
    a_revoking(&mut h);
    let revoking = h.group().member("a").unwrap().pending_revocation.clone();
    assert!(!revoking.is_empty());
    let from = h.events.len();
    h.hb(join("a", &["t"]));
    let released: BTreeSet<TopicPartition> = h.events[from..]
        .iter()
        .filter_map(|e| match e {
            ConsumerGroupEvent::PartitionsReleased { member_id, partitions, .. }
                if member_id == "a" =>
            {
                Some(partitions.iter().cloned())
            }
            _ => None,
        })
        .flatten()
        .collect();
    assert_eq!(released, revoking);
    assert!(h.group().partition_epochs().owner(revoking.iter().next().unwrap()).is_none());
}

fn harness(bugs: CoordinatorBugs) -> Harness {
    Harness::with(GroupCoordinator::new(groupsim_coordinator::CoordinatorConfig {
        bugs,
        ..config()
    }))
}

/// KAFKA-19233 before its fix: the rejoin at epoch 0 was judged like any stale epoch and
/// fenced, and again at every retry, while the group kept the member's partitions; only the
/// session timeout (refused heartbeats do not refresh it) removed the member and let its next
/// join in, as a new member at a new group epoch.
#[test]
fn with_the_bug_switch_a_rejoin_is_fenced_until_the_session_ends() {
    let bugs = CoordinatorBugs { fences_rejoin_at_epoch_zero: true, ..Default::default() };
    let mut h = harness(bugs);
    two_reconciled(&mut h);
    let held = h.group().member("a").unwrap().assigned.clone();
    // It retries every second: fenced every time, its partitions still assigned to it.
    for _ in 0..(SESSION / 1_000) {
        let r = h.hb(join("a", &["t"]));
        assert_eq!(r.error_code, E::FencedMemberEpoch.code());
        assert_eq!(h.group().member("a").unwrap().assigned, held);
        h.advance(1_000);
    }
    assert!(h.group().member("a").is_none(), "its session ran out");
    let from = h.events.len();
    let r = h.hb(join("a", &["t"]));
    assert_eq!(r.error_code, 0);
    let joined = h.events[from..].iter().any(
        |e| matches!(e, ConsumerGroupEvent::MemberJoined { member_id, .. } if member_id == "a"),
    );
    assert!(joined, "back as a new member");
}
