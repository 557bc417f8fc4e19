//! Partition assignors: how the group leader turns every member's subscription into an
//! assignment.
//!
//! Kafka runs the assignment on the client: the coordinator picks one protocol (assignor name)
//! that every member offered, elects a leader, and hands the leader all subscriptions. The leader
//! runs that assignor and sends the result back in SyncGroup. [`Assignor`] is the plug-in point;
//! [`RangeAssignor`] and [`RoundRobinAssignor`] are Kafka's `range` and `roundrobin`.

use std::collections::BTreeMap;

use groupsim_coordinator::consumer_protocol::Subscription;
use serde::{Deserialize, Serialize};

use crate::TopicPartition;

/// The assignors groupsim ships, by their Kafka protocol names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum AssignorKind {
    /// Kafka's `range`.
    Range,
    /// Kafka's `roundrobin`.
    RoundRobin,
}

impl AssignorKind {
    /// Every assignor groupsim ships.
    pub const ALL: [AssignorKind; 2] = [AssignorKind::Range, AssignorKind::RoundRobin];

    /// The protocol name offered in JoinGroup (`range`, `roundrobin`), as the Java client names it.
    pub fn protocol_name(self) -> &'static str {
        match self {
            AssignorKind::Range => "range",
            AssignorKind::RoundRobin => "roundrobin",
        }
    }

    /// The shipped assignor with this protocol name, if any.
    pub fn from_protocol_name(name: &str) -> Option<AssignorKind> {
        Self::ALL.into_iter().find(|k| k.protocol_name() == name)
    }

    /// A fresh instance of this assignor.
    pub fn assignor(self) -> Box<dyn Assignor> {
        match self {
            AssignorKind::Range => Box::new(RangeAssignor),
            AssignorKind::RoundRobin => Box::new(RoundRobinAssignor),
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
                parts.extend((start..start + len).map(|p| TopicPartition::new(topic.clone(), p)));
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
                out.entry(member.clone()).or_default().push(TopicPartition::new(topic.clone(), p));
                next += 1;
            }
        }
        out
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
            assert_eq!(AssignorKind::from_protocol_name(kind.protocol_name()), Some(kind));
            assert_eq!(kind.assignor().name(), kind.protocol_name());
        }
        assert_eq!(AssignorKind::from_protocol_name("sticky"), None);
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
                    subs[member].topics.contains(&tp.topic),
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
            .flat_map(|(t, &n)| (0..n).map(move |p| TopicPartition::new(t.clone(), p)))
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
                    .map(|(m, _)| out[m].iter().filter(|tp| &tp.topic == topic).count())
                    .collect();
                if let (Some(min), Some(max)) = (sizes.iter().min(), sizes.iter().max()) {
                    prop_assert!(max - min <= 1, "topic {} sizes {:?}", topic, sizes);
                }
                // Ranges are contiguous per member.
                for parts in out.values() {
                    let ps: Vec<i32> = parts.iter().filter(|tp| &tp.topic == topic).map(|tp| tp.partition).collect();
                    prop_assert!(ps.windows(2).all(|w| w[1] == w[0] + 1), "non-contiguous {:?}", ps);
                }
            }
        }
    }
}
