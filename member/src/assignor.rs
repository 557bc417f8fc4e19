//! Partition assignors: how the group leader turns every member's subscription into an
//! assignment.
//!
//! Kafka runs the assignment on the client: the coordinator picks one protocol (assignor name)
//! that every member offered, elects a leader, and hands the leader all subscriptions. The leader
//! runs that assignor and sends the result back in SyncGroup. [`Assignor`] is the plug-in point;
//! [`RangeAssignor`] and [`RoundRobinAssignor`] are Kafka's `range` and `roundrobin`,
//! [`StickyAssignor`] and [`CooperativeStickyAssignor`] Kafka's `sticky` and
//! `cooperative-sticky` (KIP-54, KIP-429), [`RoundRobinV2Assignor`] brod's `roundrobin_v2`.

use std::collections::{BTreeMap, BTreeSet};

use bytes::{Buf, BufMut, Bytes, BytesMut};
use groupsim_wire::consumer_protocol::Subscription;
use serde::{Deserialize, Serialize};

use crate::TopicPartition;

/// The assignors groupsim ships, by their Kafka protocol names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum AssignorKind {
    /// Kafka's `range`.
    Range,
    /// Kafka's `roundrobin`.
    RoundRobin,
    /// Kafka's `sticky` (eager protocol; the previous assignment travels in user data).
    Sticky,
    /// Kafka's `cooperative-sticky` (KIP-429 incremental protocol).
    CooperativeSticky,
    /// brod's `roundrobin_v2`.
    RoundRobinV2,
}

impl AssignorKind {
    /// Every assignor groupsim ships.
    pub const ALL: [AssignorKind; 5] = [
        AssignorKind::Range,
        AssignorKind::RoundRobin,
        AssignorKind::Sticky,
        AssignorKind::CooperativeSticky,
        AssignorKind::RoundRobinV2,
    ];

    /// The protocol name offered in JoinGroup (`range`, `roundrobin`, `sticky`,
    /// `cooperative-sticky`, `roundrobin_v2`), as the clients name it.
    pub fn protocol_name(self) -> &'static str {
        match self {
            AssignorKind::Range => "range",
            AssignorKind::RoundRobin => "roundrobin",
            AssignorKind::Sticky => "sticky",
            AssignorKind::CooperativeSticky => "cooperative-sticky",
            AssignorKind::RoundRobinV2 => "roundrobin_v2",
        }
    }

    /// A fresh instance of this assignor.
    pub fn assignor(self) -> Box<dyn Assignor> {
        match self {
            AssignorKind::Range => Box::new(RangeAssignor),
            AssignorKind::RoundRobin => Box::new(RoundRobinAssignor),
            AssignorKind::Sticky => Box::new(StickyAssignor),
            AssignorKind::CooperativeSticky => Box::new(CooperativeStickyAssignor),
            AssignorKind::RoundRobinV2 => Box::new(RoundRobinV2Assignor),
        }
    }
}

/// A partition assignor, run by the group leader.
///
/// `assign` receives the partition count of every topic the leader has metadata for and each
/// member's subscription keyed by member id. It returns the partitions of each member; every
/// member id of `subscriptions` must be present in the result, even with no partitions. Topics
/// missing from `partitions_per_topic` are not assigned (the Java assignors skip them too).
/// Implementations must be deterministic: the same input gives the same output.
pub trait Assignor: Send {
    /// The protocol name offered in JoinGroup and chosen by the coordinator.
    fn name(&self) -> &str;

    /// Computes the assignment (see the trait docs).
    fn assign(
        &self,
        partitions_per_topic: &BTreeMap<String, i32>,
        subscriptions: &BTreeMap<String, Subscription>,
    ) -> BTreeMap<String, Vec<TopicPartition>>;

    /// Whether the assignor follows the cooperative (KIP-429) rules: it never hands a partition
    /// owned by one member to another in the same rebalance. A Java-style member uses the
    /// incremental protocol only when every assignor it offers is cooperative.
    fn supports_cooperative(&self) -> bool {
        false
    }
}

impl std::fmt::Debug for dyn Assignor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Assignor({})", self.name())
    }
}

/// An empty assignment for every member: the starting point of both assignors.
fn empty_assignment(
    subscriptions: &BTreeMap<String, Subscription>,
) -> BTreeMap<String, Vec<TopicPartition>> {
    subscriptions.keys().map(|m| (m.clone(), Vec::new())).collect()
}

/// Kafka's `range` assignor.
///
/// Works topic by topic: the members subscribed to a topic, sorted by member id, each take a
/// contiguous range of its partitions; with `n` partitions and `m` members every member gets
/// `n / m` and the first `n % m` members one more. Members that share a subscription therefore
/// end up with the low-numbered partitions of every topic, which is why range can be unbalanced
/// across many topics.
#[derive(Clone, Copy, Debug, Default)]
pub struct RangeAssignor;

impl Assignor for RangeAssignor {
    fn name(&self) -> &str {
        AssignorKind::Range.protocol_name()
    }

    fn assign(
        &self,
        partitions_per_topic: &BTreeMap<String, i32>,
        subscriptions: &BTreeMap<String, Subscription>,
    ) -> BTreeMap<String, Vec<TopicPartition>> {
        let mut out = empty_assignment(subscriptions);
        for (topic, &count) in partitions_per_topic {
            // BTreeMap keys are already sorted by member id.
            let members: Vec<&String> = subscriptions
                .iter()
                .filter(|(_, s)| s.topics.contains(topic))
                .map(|(m, _)| m)
                .collect();
            if members.is_empty() || count <= 0 {
                continue;
            }
            let m = members.len() as i32;
            let per_member = count / m;
            let extra = count % m;
            for (i, member) in members.into_iter().enumerate() {
                let i = i as i32;
                let start = per_member * i + i.min(extra);
                let len = per_member + i32::from(i < extra);
                let parts = out.entry(member.clone()).or_default();
                parts.extend((start..start + len).map(|p| TopicPartition::new(topic.as_str(), p)));
            }
        }
        out
    }
}

/// Kafka's `roundrobin` assignor.
///
/// Lays out every subscribed partition sorted by topic then partition, and deals them to the
/// members (sorted by member id) in turn. A member not subscribed to a partition's topic is
/// skipped; the dealing position carries over from topic to topic, as in the Java client.
#[derive(Clone, Copy, Debug, Default)]
pub struct RoundRobinAssignor;

impl Assignor for RoundRobinAssignor {
    fn name(&self) -> &str {
        AssignorKind::RoundRobin.protocol_name()
    }

    fn assign(
        &self,
        partitions_per_topic: &BTreeMap<String, i32>,
        subscriptions: &BTreeMap<String, Subscription>,
    ) -> BTreeMap<String, Vec<TopicPartition>> {
        let mut out = empty_assignment(subscriptions);
        let members: Vec<(&String, &Subscription)> = subscriptions.iter().collect();
        if members.is_empty() {
            return out;
        }
        let mut next = 0usize;
        for (topic, &count) in partitions_per_topic {
            if !members.iter().any(|(_, s)| s.topics.contains(topic)) {
                continue;
            }
            for p in 0..count.max(0) {
                // Some member subscribes to this topic, so this loop ends within one lap.
                while !members[next % members.len()].1.topics.contains(topic) {
                    next += 1;
                }
                let member = members[next % members.len()].0;
                out.entry(member.clone()).or_default().push(TopicPartition::new(topic.as_str(), p));
                next += 1;
            }
        }
        out
    }
}

/// brod's `roundrobin_v2`.
///
/// Every subscribed partition, sorted by topic then partition, is dealt to the members in turn;
/// a member not subscribed to the partition's topic loses its turn for that round and the next
/// member in the round is offered the partition. brod puts the leader first in the round; the
/// [`Assignor`] trait does not say who leads, so members go in member-id order here.
#[derive(Clone, Copy, Debug, Default)]
pub struct RoundRobinV2Assignor;

impl Assignor for RoundRobinV2Assignor {
    fn name(&self) -> &str {
        AssignorKind::RoundRobinV2.protocol_name()
    }

    fn assign(
        &self,
        partitions_per_topic: &BTreeMap<String, i32>,
        subscriptions: &BTreeMap<String, Subscription>,
    ) -> BTreeMap<String, Vec<TopicPartition>> {
        let mut out = empty_assignment(subscriptions);
        let members: Vec<(&String, &Subscription)> = subscriptions.iter().collect();
        let all: Vec<TopicPartition> = subscribed_partitions(partitions_per_topic, subscriptions);
        // `pending` are the members still to be offered a partition in this round.
        let mut pending: std::collections::VecDeque<usize> = (0..members.len()).collect();
        for tp in all {
            // Some member subscribes to the topic, so at most two rounds are scanned.
            for _ in 0..=2 * members.len() {
                if pending.is_empty() {
                    pending = (0..members.len()).collect();
                }
                let Some(i) = pending.pop_front() else { break };
                if members[i].1.topics.iter().any(|t| **t == *tp.topic) {
                    out.entry(members[i].0.clone()).or_default().push(tp.clone());
                    break;
                }
            }
        }
        out
    }
}

/// Every partition of a topic some member subscribes to, sorted.
fn subscribed_partitions(
    partitions_per_topic: &BTreeMap<String, i32>,
    subscriptions: &BTreeMap<String, Subscription>,
) -> Vec<TopicPartition> {
    partitions_per_topic
        .iter()
        .filter(|(t, _)| subscriptions.values().any(|s| s.topics.contains(t)))
        .flat_map(|(t, &n)| (0..n.max(0)).map(move |p| TopicPartition::new(t.as_str(), p)))
        .collect()
}

/// What a member says about its past in its subscription's user data: the generation of its
/// last assignment and the partitions of that assignment. groupsim's own layout (not Java's):
/// i32 generation, i32 count, then per partition an i16-length topic name and an i32 partition.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StickyUserData {
    /// Generation of the member's last assignment (-1: none).
    pub generation: i32,
    /// The member's last assignment (for `sticky` under the eager protocol, where
    /// `owned_partitions` is empty because everything was revoked before rejoining).
    pub previous: Vec<TopicPartition>,
}

impl StickyUserData {
    /// Encodes the user data.
    pub fn encode(&self) -> Bytes {
        let mut b = BytesMut::new();
        b.put_i32(self.generation);
        b.put_i32(self.previous.len() as i32);
        for tp in &self.previous {
            let name = tp.topic.as_bytes();
            b.put_i16(name.len().min(i16::MAX as usize) as i16);
            b.put_slice(&name[..name.len().min(i16::MAX as usize)]);
            b.put_i32(tp.partition);
        }
        b.freeze()
    }

    /// Decodes user data; `None` when it is absent or not in this layout.
    pub fn decode(bytes: &[u8]) -> Option<Self> {
        let mut b = bytes;
        if b.remaining() < 8 {
            return None;
        }
        let generation = b.get_i32();
        let n = b.get_i32();
        if n < 0 || n as usize > b.remaining() {
            return None;
        }
        let mut previous = Vec::with_capacity(n as usize);
        for _ in 0..n {
            if b.remaining() < 2 {
                return None;
            }
            let len = b.get_i16();
            if len < 0 || b.remaining() < len as usize + 4 {
                return None;
            }
            let topic = String::from_utf8(b[..len as usize].to_vec()).ok()?;
            b.advance(len as usize);
            previous.push(TopicPartition::new(topic, b.get_i32()));
        }
        Some(Self { generation, previous })
    }
}

/// Who owns (or last owned) each partition, as the subscriptions claim it.
#[derive(Debug, Default)]
struct Claims {
    /// The one claimant of the newest generation that claims the partition.
    owners: BTreeMap<TopicPartition, String>,
    /// Partitions that two or more members claim under the same newest generation: no claim
    /// is valid, so nobody keeps them (Kafka's `partitionsWithMultiplePreviousOwners`).
    contested: BTreeSet<TopicPartition>,
}

impl Claims {
    /// The valid owner of `tp`, if any.
    fn get(&self, tp: &TopicPartition) -> Option<&String> {
        self.owners.get(tp)
    }
}

/// Reads every member's claims, as Kafka's `AbstractStickyAssignor` does (since KAFKA-14639):
/// a claim counts only if the partition exists and the member still subscribes to its topic;
/// a claim under a newer generation wins over one under an older generation (a member that
/// missed a rebalance claims a stale assignment); two claims under the same newest generation
/// cancel each other (both members cannot own it: the input is inconsistent), and the
/// partition is contested. A member's generation is the one in its user data (-1 without).
fn claims(
    partitions_per_topic: &BTreeMap<String, i32>,
    subscriptions: &BTreeMap<String, Subscription>,
    from_owned: bool,
) -> Claims {
    // Per partition: the newest generation claiming it and its claimants under that generation.
    let mut newest: BTreeMap<TopicPartition, (i32, Vec<String>)> = BTreeMap::new();
    for (member, sub) in subscriptions {
        let data = sub.user_data.as_deref().and_then(StickyUserData::decode);
        let generation = data.as_ref().map_or(-1, |d| d.generation);
        let claimed: Vec<TopicPartition> = if from_owned || !sub.owned_partitions.is_empty() {
            sub.owned_partitions.clone()
        } else {
            data.map(|d| d.previous).unwrap_or_default()
        };
        for tp in claimed {
            let exists = partitions_per_topic.get(&*tp.topic).is_some_and(|&n| tp.partition < n);
            if !exists || tp.partition < 0 || !sub.topics.iter().any(|t| **t == *tp.topic) {
                continue;
            }
            match newest.get_mut(&tp) {
                Some((g, _)) if *g > generation => {}
                Some((g, claimants)) if *g == generation => {
                    if !claimants.contains(member) {
                        claimants.push(member.clone());
                    }
                }
                _ => {
                    newest.insert(tp, (generation, vec![member.clone()]));
                }
            }
        }
    }
    let mut out = Claims::default();
    for (tp, (_, mut claimants)) in newest {
        if claimants.len() == 1 {
            out.owners.insert(tp, claimants.remove(0));
        } else {
            out.contested.insert(tp);
        }
    }
    out
}

/// The sticky assignment: every claimed partition stays with its claimant, unclaimed partitions
/// go one by one to the eligible member with the fewest, then partitions move from a member to
/// an eligible one holding at least two fewer until no such move exists. With equal
/// subscriptions that ends balanced within one; a member only gives partitions up while it holds
/// two more than someone who could take them, so movement is minimal.
fn sticky_assign(
    partitions_per_topic: &BTreeMap<String, i32>,
    subscriptions: &BTreeMap<String, Subscription>,
    claims: &Claims,
) -> BTreeMap<String, BTreeSet<TopicPartition>> {
    let mut out: BTreeMap<String, BTreeSet<TopicPartition>> =
        subscriptions.keys().map(|m| (m.clone(), BTreeSet::new())).collect();
    let eligible =
        |m: &String, tp: &TopicPartition| subscriptions[m].topics.iter().any(|t| **t == *tp.topic);
    let mut unassigned = Vec::new();
    for tp in subscribed_partitions(partitions_per_topic, subscriptions) {
        match claims.get(&tp) {
            Some(owner) if out.contains_key(owner) => {
                out.get_mut(owner).expect("checked").insert(tp);
            }
            _ => unassigned.push(tp),
        }
    }
    for tp in unassigned {
        let taker = out
            .iter()
            .filter(|(m, _)| eligible(m, &tp))
            .min_by_key(|(m, parts)| (parts.len(), (*m).clone()))
            .map(|(m, _)| m.clone());
        if let Some(m) = taker {
            out.get_mut(&m).expect("member exists").insert(tp);
        }
    }
    // Each move lowers the sum of squared sizes, so this ends.
    loop {
        let mut donors: Vec<(&String, usize)> = out.iter().map(|(m, p)| (m, p.len())).collect();
        donors.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        let mut found = None;
        'search: for (donor, size) in donors {
            for tp in out[donor].iter().rev() {
                let receiver = out
                    .iter()
                    .filter(|(m, p)| *m != donor && p.len() + 2 <= size && eligible(m, tp))
                    .min_by_key(|(m, p)| (p.len(), (*m).clone()))
                    .map(|(m, _)| m.clone());
                if let Some(r) = receiver {
                    found = Some((donor.clone(), r, tp.clone()));
                    break 'search;
                }
            }
        }
        let Some((donor, receiver, tp)) = found else { break };
        out.get_mut(&donor).expect("member exists").remove(&tp);
        out.get_mut(&receiver).expect("member exists").insert(tp);
    }
    out
}

/// Kafka's `sticky` assignor (eager protocol).
///
/// Balanced like `roundrobin` when subscriptions are equal, but it keeps every member's
/// previous partitions where balance allows, so a rebalance moves as few partitions as
/// possible. Under the eager protocol members revoke everything before rejoining, so the
/// previous assignment travels in the subscription's user data ([`StickyUserData`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct StickyAssignor;

impl Assignor for StickyAssignor {
    fn name(&self) -> &str {
        AssignorKind::Sticky.protocol_name()
    }

    fn assign(
        &self,
        partitions_per_topic: &BTreeMap<String, i32>,
        subscriptions: &BTreeMap<String, Subscription>,
    ) -> BTreeMap<String, Vec<TopicPartition>> {
        let claims = claims(partitions_per_topic, subscriptions, false);
        sticky_assign(partitions_per_topic, subscriptions, &claims)
            .into_iter()
            .map(|(m, p)| (m, p.into_iter().collect()))
            .collect()
    }
}

/// Kafka's `cooperative-sticky` assignor (KIP-429).
///
/// Computes the sticky assignment from what members own now (`owned_partitions`, each claim
/// weighed by the generation in the member's user data: the newest wins), then leaves out every
/// partition that would move from its current owner to another member: the owner is not given
/// it either, so it revokes it and rejoins, and the follow-up rebalance, in which nobody owns it
/// any more, hands it to its new owner. A partition two members claim under the same newest
/// generation is left out too (both revoke it). A partition therefore never has two owners at
/// once, and partitions that stay put are never revoked.
#[derive(Clone, Copy, Debug, Default)]
pub struct CooperativeStickyAssignor;

impl Assignor for CooperativeStickyAssignor {
    fn name(&self) -> &str {
        AssignorKind::CooperativeSticky.protocol_name()
    }

    fn assign(
        &self,
        partitions_per_topic: &BTreeMap<String, i32>,
        subscriptions: &BTreeMap<String, Subscription>,
    ) -> BTreeMap<String, Vec<TopicPartition>> {
        let claims = claims(partitions_per_topic, subscriptions, true);
        sticky_assign(partitions_per_topic, subscriptions, &claims)
            .into_iter()
            .map(|(m, parts)| {
                // A contested partition is withheld from everyone: its claimants revoke it, and
                // the next rebalance, in which nobody claims it, gives it out.
                let kept = parts
                    .into_iter()
                    .filter(|tp| {
                        !claims.contested.contains(tp) && claims.get(tp).is_none_or(|o| *o == m)
                    })
                    .collect();
                (m, kept)
            })
            .collect()
    }

    fn supports_cooperative(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use proptest::prelude::*;

    use super::*;

    fn sub(topics: &[&str]) -> Subscription {
        Subscription {
            topics: topics.iter().map(|t| t.to_string()).collect(),
            ..Default::default()
        }
    }

    fn tps(list: &[(&str, i32)]) -> Vec<TopicPartition> {
        list.iter().map(|(t, p)| TopicPartition::new(*t, *p)).collect()
    }

    #[test]
    fn protocol_names_round_trip() {
        for kind in AssignorKind::ALL {
            assert_eq!(kind.assignor().name(), kind.protocol_name());
        }
    }

    #[test]
    fn range_gives_first_members_the_extra_partitions_per_topic() {
        let counts = BTreeMap::from([("t0".to_string(), 3), ("t1".to_string(), 3)]);
        let subs = BTreeMap::from([
            ("c0".to_string(), sub(&["t0", "t1"])),
            ("c1".to_string(), sub(&["t0", "t1"])),
        ]);
        let out = RangeAssignor.assign(&counts, &subs);
        assert_eq!(out["c0"], tps(&[("t0", 0), ("t0", 1), ("t1", 0), ("t1", 1)]));
        assert_eq!(out["c1"], tps(&[("t0", 2), ("t1", 2)]));
    }

    #[test]
    fn roundrobin_deals_in_turn_and_skips_non_subscribers() {
        // Kafka's documented example: C0 subscribes t0; C1 t0,t1; C2 t0,t1,t2 with 1, 2, 3 partitions.
        let counts =
            BTreeMap::from([("t0".to_string(), 1), ("t1".to_string(), 2), ("t2".to_string(), 3)]);
        let subs = BTreeMap::from([
            ("c0".to_string(), sub(&["t0"])),
            ("c1".to_string(), sub(&["t0", "t1"])),
            ("c2".to_string(), sub(&["t0", "t1", "t2"])),
        ]);
        let out = RoundRobinAssignor.assign(&counts, &subs);
        assert_eq!(out["c0"], tps(&[("t0", 0)]));
        assert_eq!(out["c1"], tps(&[("t1", 0)]));
        assert_eq!(out["c2"], tps(&[("t1", 1), ("t2", 0), ("t2", 1), ("t2", 2)]));
    }

    #[test]
    fn members_without_subscribed_partitions_are_present_and_unknown_topics_skipped() {
        let counts = BTreeMap::from([("t0".to_string(), 1)]);
        let subs = BTreeMap::from([
            ("a".to_string(), sub(&["t0"])),
            ("b".to_string(), sub(&["t0", "missing"])),
        ]);
        for kind in AssignorKind::ALL {
            let out = kind.assignor().assign(&counts, &subs);
            assert_eq!(out.len(), 2, "{kind:?}");
            assert_eq!(out["a"], tps(&[("t0", 0)]), "{kind:?}");
            assert!(out["b"].is_empty(), "{kind:?}");
        }
    }

    fn arb_case() -> impl Strategy<Value = (BTreeMap<String, i32>, BTreeMap<String, Subscription>)>
    {
        let topics = prop::collection::btree_map("t[0-4]", 0i32..12, 1..5);
        topics.prop_flat_map(|counts| {
            let names: Vec<String> = counts.keys().cloned().collect();
            let subs = prop::collection::btree_map(
                "m[0-9]{1,2}",
                prop::sample::subsequence(names.clone(), 0..=names.len()),
                1..8,
            )
            .prop_map(|m| {
                m.into_iter()
                    .map(|(id, ts)| (id, Subscription { topics: ts, ..Default::default() }))
                    .collect()
            });
            (Just(counts), subs)
        })
    }

    fn check_exactly_once_to_subscribers(
        counts: &BTreeMap<String, i32>,
        subs: &BTreeMap<String, Subscription>,
        out: &BTreeMap<String, Vec<TopicPartition>>,
    ) -> Result<(), TestCaseError> {
        prop_assert_eq!(out.keys().collect::<Vec<_>>(), subs.keys().collect::<Vec<_>>());
        let mut seen = BTreeSet::new();
        for (member, parts) in out {
            for tp in parts {
                prop_assert!(
                    subs[member].topics.iter().any(|t| **t == *tp.topic),
                    "{} got unsubscribed {}",
                    member,
                    tp
                );
                prop_assert!(seen.insert(tp.clone()), "{} assigned twice", tp);
            }
        }
        let expected: BTreeSet<TopicPartition> = counts
            .iter()
            .filter(|(t, _)| subs.values().any(|s| s.topics.contains(t)))
            .flat_map(|(t, &n)| (0..n).map(move |p| TopicPartition::new(t.as_str(), p)))
            .collect();
        prop_assert_eq!(seen, expected);
        Ok(())
    }

    proptest! {
        #[test]
        fn every_subscribed_partition_goes_to_exactly_one_subscriber((counts, subs) in arb_case()) {
            for kind in AssignorKind::ALL {
                let out = kind.assignor().assign(&counts, &subs);
                check_exactly_once_to_subscribers(&counts, &subs, &out)?;
                prop_assert_eq!(&out, &kind.assignor().assign(&counts, &subs), "{:?} not deterministic", kind);
            }
        }

        #[test]
        fn roundrobin_balances_within_one_when_subscriptions_are_equal(
            counts in prop::collection::btree_map("t[0-4]", 0i32..12, 1..5),
            members in prop::collection::btree_set("m[0-9]{1,2}", 1..8),
        ) {
            let topics: Vec<String> = counts.keys().cloned().collect();
            let subs: BTreeMap<String, Subscription> = members
                .into_iter()
                .map(|m| (m, Subscription { topics: topics.clone(), ..Default::default() }))
                .collect();
            let out = RoundRobinAssignor.assign(&counts, &subs);
            let sizes: Vec<usize> = out.values().map(Vec::len).collect();
            let (min, max) = (sizes.iter().min().unwrap(), sizes.iter().max().unwrap());
            prop_assert!(max - min <= 1, "sizes {:?}", sizes);
        }

        #[test]
        fn range_balances_within_one_per_topic((counts, subs) in arb_case()) {
            let out = RangeAssignor.assign(&counts, &subs);
            for topic in counts.keys() {
                let sizes: Vec<usize> = subs
                    .iter()
                    .filter(|(_, s)| s.topics.contains(topic))
                    .map(|(m, _)| out[m].iter().filter(|tp| *tp.topic == **topic).count())
                    .collect();
                if let (Some(min), Some(max)) = (sizes.iter().min(), sizes.iter().max()) {
                    prop_assert!(max - min <= 1, "topic {} sizes {:?}", topic, sizes);
                }
                // Ranges are contiguous per member.
                for parts in out.values() {
                    let ps: Vec<i32> = parts.iter().filter(|tp| *tp.topic == **topic).map(|tp| tp.partition).collect();
                    prop_assert!(ps.windows(2).all(|w| w[1] == w[0] + 1), "non-contiguous {:?}", ps);
                }
            }
        }
    }

    /// A subscription to `topics` that owns `owned` now (cooperative) and whose last assignment,
    /// in `generation`, was `previous` (eager sticky user data).
    fn sub_with(
        topics: &[String],
        owned: &[TopicPartition],
        generation: i32,
        previous: &[TopicPartition],
    ) -> Subscription {
        Subscription {
            topics: topics.to_vec(),
            owned_partitions: owned.to_vec(),
            user_data: Some(StickyUserData { generation, previous: previous.to_vec() }.encode()),
        }
    }

    #[test]
    fn sticky_user_data_round_trips_and_garbage_is_none() {
        let d = StickyUserData { generation: 7, previous: tps(&[("a", 1), ("bb", 0)]) };
        assert_eq!(StickyUserData::decode(&d.encode()), Some(d));
        assert_eq!(StickyUserData::decode(&[0, 0, 0, 1, 0, 0, 0, 9]), None);
        assert_eq!(StickyUserData::decode(&[1]), None);
    }

    #[test]
    fn roundrobin_v2_skips_a_non_subscriber_for_the_round() {
        let counts = BTreeMap::from([("t0".to_string(), 2), ("t1".to_string(), 2)]);
        let subs = BTreeMap::from([
            ("a".to_string(), sub(&["t1"])),
            ("b".to_string(), sub(&["t0", "t1"])),
        ]);
        let out = RoundRobinV2Assignor.assign(&counts, &subs);
        // t0-0: a skipped, b takes it; t0-1: new round, a skipped, b; t1-0: a; t1-1: b.
        assert_eq!(out["a"], tps(&[("t1", 0)]));
        assert_eq!(out["b"], tps(&[("t0", 0), ("t0", 1), ("t1", 1)]));
    }

    #[test]
    fn sticky_keeps_previous_partitions_when_a_member_joins() {
        let topics = vec!["t".to_string()];
        let counts = BTreeMap::from([("t".to_string(), 6)]);
        let a_prev = tps(&[("t", 0), ("t", 1), ("t", 2)]);
        let b_prev = tps(&[("t", 3), ("t", 4), ("t", 5)]);
        let subs = BTreeMap::from([
            ("a".to_string(), sub_with(&topics, &[], 3, &a_prev)),
            ("b".to_string(), sub_with(&topics, &[], 3, &b_prev)),
            ("c".to_string(), sub_with(&topics, &[], -1, &[])),
        ]);
        let out = StickyAssignor.assign(&counts, &subs);
        assert_eq!(out["a"].len(), 2);
        assert_eq!(out["b"].len(), 2);
        assert_eq!(out["c"].len(), 2);
        assert!(out["a"].iter().all(|tp| a_prev.contains(tp)), "{out:?}");
        assert!(out["b"].iter().all(|tp| b_prev.contains(tp)), "{out:?}");
    }

    #[test]
    fn sticky_claim_from_the_newer_generation_wins() {
        let topics = vec!["t".to_string()];
        let counts = BTreeMap::from([("t".to_string(), 2)]);
        let subs = BTreeMap::from([
            ("a".to_string(), sub_with(&topics, &[], 2, &tps(&[("t", 0), ("t", 1)]))),
            ("b".to_string(), sub_with(&topics, &[], 5, &tps(&[("t", 1)]))),
        ]);
        let out = StickyAssignor.assign(&counts, &subs);
        assert_eq!(out["a"], tps(&[("t", 0)]));
        assert_eq!(out["b"], tps(&[("t", 1)]));
    }

    #[test]
    fn cooperative_sticky_keeps_a_partition_with_the_claimant_of_the_newer_generation() {
        // a missed a rebalance and still claims t-1 under generation 2; b was given it in 5.
        let topics = vec!["t".to_string()];
        let counts = BTreeMap::from([("t".to_string(), 2)]);
        let subs = BTreeMap::from([
            ("a".to_string(), sub_with(&topics, &tps(&[("t", 0), ("t", 1)]), 2, &[])),
            ("b".to_string(), sub_with(&topics, &tps(&[("t", 1)]), 5, &[])),
        ]);
        let out = CooperativeStickyAssignor.assign(&counts, &subs);
        assert_eq!(out["a"], tps(&[("t", 0)]), "a revokes t-1: {out:?}");
        assert_eq!(out["b"], tps(&[("t", 1)]), "b keeps t-1: {out:?}");
    }

    #[test]
    fn cooperative_sticky_withholds_a_partition_claimed_twice_in_the_same_generation() {
        // a and b both claim t-1 under generation 4 (one of them never completed it): neither
        // claim is valid, so nobody is given t-1 until both have revoked it.
        let topics = vec!["t".to_string()];
        let counts = BTreeMap::from([("t".to_string(), 4)]);
        let subs = BTreeMap::from([
            ("a".to_string(), sub_with(&topics, &tps(&[("t", 0), ("t", 1)]), 4, &[])),
            ("b".to_string(), sub_with(&topics, &tps(&[("t", 1), ("t", 2)]), 4, &[])),
            ("c".to_string(), sub_with(&topics, &tps(&[("t", 3)]), 4, &[])),
        ]);
        let out = CooperativeStickyAssignor.assign(&counts, &subs);
        assert!(out.values().all(|ps| !ps.contains(&TopicPartition::new("t", 1))), "{out:?}");
        assert_eq!(out["a"], tps(&[("t", 0)]));
        assert_eq!(out["b"], tps(&[("t", 2)]));
        // Next round: both revoked it, nobody claims it, it is handed out.
        let subs = BTreeMap::from([
            ("a".to_string(), sub_with(&topics, &out["a"], 5, &[])),
            ("b".to_string(), sub_with(&topics, &out["b"], 5, &[])),
            ("c".to_string(), sub_with(&topics, &out["c"], 5, &[])),
        ]);
        let next = CooperativeStickyAssignor.assign(&counts, &subs);
        assert_eq!(next.values().filter(|ps| ps.contains(&TopicPartition::new("t", 1))).count(), 1);
    }

    #[test]
    fn sticky_treats_a_partition_claimed_twice_in_the_same_generation_as_unowned() {
        // b and c both claim t-2 under generation 4. Were a tie won by member-id order, b would
        // keep t-2 (and the assignment would be balanced as it stands); the claims cancel
        // instead, and t-2 goes to the member with the fewest partitions, a.
        let topics = vec!["t".to_string()];
        let counts = BTreeMap::from([("t".to_string(), 4)]);
        let subs = BTreeMap::from([
            ("a".to_string(), sub_with(&topics, &[], 4, &tps(&[("t", 0)]))),
            ("b".to_string(), sub_with(&topics, &[], 4, &tps(&[("t", 1), ("t", 2)]))),
            ("c".to_string(), sub_with(&topics, &[], 4, &tps(&[("t", 2), ("t", 3)]))),
        ]);
        let out = StickyAssignor.assign(&counts, &subs);
        assert_eq!(out["a"], tps(&[("t", 0), ("t", 2)]));
        assert_eq!(out["b"], tps(&[("t", 1)]));
        assert_eq!(out["c"], tps(&[("t", 3)]));
    }

    #[test]
    fn cooperative_sticky_withholds_moving_partitions_then_assigns_them_after_revocation() {
        let topics = vec!["t".to_string()];
        let counts = BTreeMap::from([("t".to_string(), 4)]);
        let all = tps(&[("t", 0), ("t", 1), ("t", 2), ("t", 3)]);
        // Phase one: a owns everything, b joins.
        let subs = BTreeMap::from([
            ("a".to_string(), sub_with(&topics, &all, 1, &[])),
            ("b".to_string(), sub_with(&topics, &[], -1, &[])),
        ]);
        let first = CooperativeStickyAssignor.assign(&counts, &subs);
        assert_eq!(first["a"].len(), 2, "a keeps two: {first:?}");
        assert!(first["b"].is_empty(), "nothing moves directly from a to b: {first:?}");
        // Phase two: a revoked what it was not given and rejoins owning the rest.
        let subs = BTreeMap::from([
            ("a".to_string(), sub_with(&topics, &first["a"], 2, &[])),
            ("b".to_string(), sub_with(&topics, &[], 2, &[])),
        ]);
        let second = CooperativeStickyAssignor.assign(&counts, &subs);
        assert_eq!(second["a"], first["a"], "kept partitions stay");
        let revoked: Vec<TopicPartition> =
            all.iter().filter(|tp| !first["a"].contains(tp)).cloned().collect();
        assert_eq!(second["b"], revoked);
    }

    /// Equal subscriptions to `counts`' topics; each member owns (cooperative) or previously
    /// owned (sticky) a random disjoint share of the partitions.
    /// Partition counts, member ids, and what each member owns.
    type OwnedCase = (BTreeMap<String, i32>, Vec<String>, BTreeMap<String, Vec<TopicPartition>>);

    fn arb_owned_case() -> impl Strategy<Value = OwnedCase> {
        let counts = prop::collection::btree_map("t[0-3]", 0i32..10, 1..4);
        let members = prop::collection::btree_set("m[0-9]", 1..7);
        (counts, members).prop_flat_map(|(counts, members)| {
            let members: Vec<String> = members.into_iter().collect();
            let all: Vec<TopicPartition> = counts
                .iter()
                .flat_map(|(t, &n)| (0..n).map(move |p| TopicPartition::new(t.as_str(), p)))
                .collect();
            // Each partition: owned by member i, or (index == len) by nobody / a departed member.
            let owners = prop::collection::vec(0..=members.len(), all.len());
            (Just(counts), Just(members), Just(all), owners).prop_map(
                |(counts, members, all, owners)| {
                    let mut owned: BTreeMap<String, Vec<TopicPartition>> =
                        members.iter().map(|m| (m.clone(), Vec::new())).collect();
                    for (tp, o) in all.into_iter().zip(owners) {
                        if let Some(m) = members.get(o) {
                            owned.get_mut(m).unwrap().push(tp);
                        }
                    }
                    (counts, members, owned)
                },
            )
        })
    }

    fn equal_subs(
        counts: &BTreeMap<String, i32>,
        owned: &BTreeMap<String, Vec<TopicPartition>>,
        cooperative: bool,
    ) -> BTreeMap<String, Subscription> {
        let topics: Vec<String> = counts.keys().cloned().collect();
        owned
            .iter()
            .map(|(m, parts)| {
                let s = if cooperative {
                    sub_with(&topics, parts, 3, &[])
                } else {
                    sub_with(&topics, &[], 3, parts)
                };
                (m.clone(), s)
            })
            .collect()
    }

    fn sizes_within_one(out: &BTreeMap<String, Vec<TopicPartition>>) -> Result<(), TestCaseError> {
        let sizes: Vec<usize> = out.values().map(Vec::len).collect();
        let (min, max) = (sizes.iter().min().unwrap(), sizes.iter().max().unwrap());
        prop_assert!(max - min <= 1, "sizes {:?}", sizes);
        Ok(())
    }

    proptest! {
        #[test]
        fn sticky_is_balanced_and_moves_only_what_balance_needs((counts, members, owned) in arb_owned_case()) {
            let subs = equal_subs(&counts, &owned, false);
            let out = StickyAssignor.assign(&counts, &subs);
            check_exactly_once_to_subscribers(&counts, &subs, &out)?;
            sizes_within_one(&out)?;
            let total: usize = counts.values().map(|&n| n as usize).sum();
            let floor = total / members.len();
            for (m, prev) in &owned {
                let kept = out[m].iter().filter(|tp| prev.contains(tp)).count();
                prop_assert!(kept >= prev.len().min(floor), "{} kept {} of {:?} (floor {})", m, kept, prev, floor);
                // A member never both loses a previous partition and gains a new one.
                let gained = out[m].iter().any(|tp| !prev.contains(tp));
                prop_assert!(!(gained && kept < prev.len()), "{} lost and gained: {:?} -> {:?}", m, prev, out[m]);
            }
        }

        #[test]
        fn sticky_leaves_a_balanced_assignment_unchanged((counts, _members, owned) in arb_owned_case()) {
            let subs = equal_subs(&counts, &owned, false);
            let first = StickyAssignor.assign(&counts, &subs);
            let again = StickyAssignor.assign(&counts, &equal_subs(&counts, &first, false));
            prop_assert_eq!(first, again);
        }

        #[test]
        fn cooperative_sticky_never_moves_a_partition_directly_and_converges_in_two_rounds(
            (counts, _members, owned) in arb_owned_case()
        ) {
            let subs = equal_subs(&counts, &owned, true);
            let first = CooperativeStickyAssignor.assign(&counts, &subs);
            let owner_of: BTreeMap<&TopicPartition, &String> =
                owned.iter().flat_map(|(m, ps)| ps.iter().map(move |tp| (tp, m))).collect();
            // At most once, only to subscribers, never to a member other than the current owner.
            let mut seen = BTreeSet::new();
            for (m, parts) in &first {
                for tp in parts {
                    prop_assert!(seen.insert(tp.clone()), "{} twice", tp);
                    prop_assert!(owner_of.get(tp).is_none_or(|o| *o == m), "{} moved directly to {}", tp, m);
                }
            }
            // Unassigned only when owned by a member that is now revoking it.
            for tp in subscribed_partitions(&counts, &subs) {
                if !seen.contains(&tp) {
                    let owner = owner_of.get(&tp);
                    prop_assert!(owner.is_some_and(|o| !first[*o].contains(&tp)), "{} dropped", tp);
                }
            }
            // Owners keep what they were given: kept partitions are never revoked.
            for (m, parts) in &first {
                for tp in parts {
                    if owned[m].contains(tp) {
                        prop_assert!(first[m].contains(tp));
                    }
                }
            }
            // Round two, after the owners revoked: everything assigned once, balanced, nothing revoked.
            let subs2 = equal_subs(&counts, &first, true);
            let second = CooperativeStickyAssignor.assign(&counts, &subs2);
            check_exactly_once_to_subscribers(&counts, &subs2, &second)?;
            sizes_within_one(&second)?;
            for (m, parts) in &first {
                for tp in parts {
                    prop_assert!(second[m].contains(tp), "{} revoked from {} in round two", tp, m);
                }
            }
        }

        #[test]
        fn roundrobin_v2_balances_within_one_when_subscriptions_are_equal(
            counts in prop::collection::btree_map("t[0-4]", 0i32..12, 1..5),
            members in prop::collection::btree_set("m[0-9]{1,2}", 1..8),
        ) {
            let topics: Vec<String> = counts.keys().cloned().collect();
            let subs: BTreeMap<String, Subscription> = members
                .into_iter()
                .map(|m| (m, Subscription { topics: topics.clone(), ..Default::default() }))
                .collect();
            sizes_within_one(&RoundRobinV2Assignor.assign(&counts, &subs))?;
        }
    }
}
