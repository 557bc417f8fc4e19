//! Server-side assignors (KIP-848): the coordinator computes every member's target partitions.
//! `uniform` (the default) spreads partitions evenly and keeps members' previous partitions
//! where it can; `range` gives each member a contiguous range of every topic it subscribes to.
//! A member picks one with `ServerAssignor`; the group uses the one most members ask for.
//!
//! Both are deterministic: members and partitions are visited in sorted order, so the same
//! group and topics always give the same assignment.

use std::collections::{BTreeMap, BTreeSet};

use super::member::ConsumerMember;
use crate::topics::TopicsImage;
use crate::TopicPartition;

pub mod range;
pub mod uniform;

/// The uniform assignor's name (Kafka's default).
pub const UNIFORM: &str = "uniform";
/// The range assignor's name.
pub const RANGE: &str = "range";
/// Every supported server assignor, the default first.
pub const SUPPORTED: [&str; 2] = [UNIFORM, RANGE];

/// Whether `name` is a server assignor this coordinator has.
pub fn is_supported(name: &str) -> bool {
    SUPPORTED.contains(&name)
}

/// What an assignor works from.
#[derive(Clone, Copy, Debug)]
pub struct AssignmentSpec<'a> {
    /// Each member's subscribed topics.
    pub subscriptions: &'a BTreeMap<String, BTreeSet<String>>,
    /// The previous target assignment (for stickiness).
    pub previous: &'a BTreeMap<String, BTreeSet<TopicPartition>>,
    /// The topics that exist, with their partition counts.
    pub topics: &'a TopicsImage,
}

/// A target assignment: every member (even those given nothing) with its partitions.
pub type TargetAssignment = BTreeMap<String, BTreeSet<TopicPartition>>;

/// The assignor most of `members` ask for (ties to the smaller name), else `uniform`.
pub fn preferred_among<'a>(members: impl Iterator<Item = &'a ConsumerMember>) -> &'static str {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for m in members {
        if let Some(a) = m.server_assignor.as_deref() {
            *counts.entry(a).or_default() += 1;
        }
    }
    let best = counts.iter().max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0))).map(|(a, _)| *a);
    SUPPORTED.iter().copied().find(|s| Some(*s) == best).unwrap_or(UNIFORM)
}

/// Runs assignor `name` (the default, `uniform`, for an unknown name).
pub fn assign(name: &str, spec: AssignmentSpec<'_>) -> TargetAssignment {
    match name {
        RANGE => range::assign(spec),
        _ => uniform::assign(spec),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subs(list: &[(&str, &[&str])]) -> BTreeMap<String, BTreeSet<String>> {
        list.iter()
            .map(|(m, ts)| (m.to_string(), ts.iter().map(|t| t.to_string()).collect()))
            .collect()
    }

    fn run(
        name: &str,
        s: &BTreeMap<String, BTreeSet<String>>,
        previous: &TargetAssignment,
        topics: &TopicsImage,
    ) -> TargetAssignment {
        assign(name, AssignmentSpec { subscriptions: s, previous, topics })
    }

    /// Every partition of a subscribed topic goes to exactly one member subscribed to it.
    fn check_exactly_once(
        s: &BTreeMap<String, BTreeSet<String>>,
        t: &TopicsImage,
        a: &TargetAssignment,
    ) {
        let all = t.partitions_of(s.values().flatten());
        let mut seen = BTreeSet::new();
        for (m, parts) in a {
            for tp in parts {
                assert!(s[m].contains(&*tp.topic), "{m} got {tp} it does not subscribe to");
                assert!(seen.insert(tp.clone()), "{tp} assigned twice");
            }
        }
        assert_eq!(seen, all, "every partition assigned");
    }

    #[test]
    fn both_assignors_assign_every_partition_once_and_deterministically() {
        let topics = TopicsImage::new([("t", 7), ("u", 3), ("v", 1)]);
        let groups: [&[(&str, &[&str])]; 4] = [
            &[("a", &["t"])],
            &[("a", &["t", "u"]), ("b", &["t", "u"]), ("c", &["t", "u"])],
            &[("a", &["t"]), ("b", &["u", "v"]), ("c", &["t", "v"])],
            &[
                ("a", &["t"]),
                ("b", &["t"]),
                ("c", &["t"]),
                ("d", &["t"]),
                ("e", &["t"]),
                ("f", &["t"]),
                ("g", &["t"]),
                ("h", &["t"]),
            ],
        ];
        for name in SUPPORTED {
            for g in groups {
                let s = subs(g);
                let a = run(name, &s, &BTreeMap::new(), &topics);
                check_exactly_once(&s, &topics, &a);
                assert_eq!(
                    a,
                    run(name, &s, &BTreeMap::new(), &topics),
                    "{name}: same input, same output"
                );
                assert_eq!(a.len(), s.len(), "{name}: every member listed");
            }
        }
    }

    #[test]
    fn uniform_is_balanced_within_one_for_identical_subscriptions() {
        let topics = TopicsImage::new([("t", 10), ("u", 7)]);
        for n in 1..=9 {
            let names: Vec<String> = (0..n).map(|i| format!("m{i}")).collect();
            let s: BTreeMap<String, BTreeSet<String>> = names
                .iter()
                .map(|m| (m.clone(), ["t".to_string(), "u".to_string()].into()))
                .collect();
            let a = run(UNIFORM, &s, &BTreeMap::new(), &topics);
            let counts: Vec<usize> = a.values().map(BTreeSet::len).collect();
            let (min, max) = (counts.iter().min().unwrap(), counts.iter().max().unwrap());
            assert!(max - min <= 1, "{n} members: {counts:?}");
        }
    }

    #[test]
    fn uniform_keeps_previous_partitions_when_a_member_joins() {
        let topics = TopicsImage::new([("t", 6)]);
        let two = subs(&[("a", &["t"]), ("b", &["t"])]);
        let before = run(UNIFORM, &two, &BTreeMap::new(), &topics);
        let three = subs(&[("a", &["t"]), ("b", &["t"]), ("c", &["t"])]);
        let after = run(UNIFORM, &three, &before, &topics);
        check_exactly_once(&three, &topics, &after);
        for m in ["a", "b"] {
            assert!(after[m].is_subset(&before[m]), "{m} only gives partitions up");
            assert_eq!(after[m].len(), 2);
        }
        assert_eq!(after["c"].len(), 2);
    }

    #[test]
    fn range_gives_the_first_members_the_extra_partitions() {
        let topics = TopicsImage::new([("t", 7)]);
        let s = subs(&[("a", &["t"]), ("b", &["t"]), ("c", &["t"])]);
        let a = run(RANGE, &s, &BTreeMap::new(), &topics);
        let parts = |m: &str| a[m].iter().map(|tp| tp.partition).collect::<Vec<_>>();
        assert_eq!((parts("a"), parts("b"), parts("c")), (vec![0, 1, 2], vec![3, 4], vec![5, 6]));
    }

    #[test]
    fn unknown_topics_and_names_are_harmless() {
        let topics = TopicsImage::new([("t", 2)]);
        let s = subs(&[("a", &["t", "missing"])]);
        assert!(!is_supported("sticky"));
        let a = run("sticky", &s, &BTreeMap::new(), &topics);
        assert_eq!(a["a"].len(), 2, "an unknown name falls back to uniform");
    }
}
