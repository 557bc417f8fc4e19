//! The leader's job in the classic protocol: split each topic's partitions among the members
//! subscribed to it, in ranges, as Kafka's `RangeAssignor` does.

use std::collections::BTreeMap;

use groupsim_member::TopicPartition;

/// Each member's partitions: per topic, the members subscribed to it in member-id order take
/// consecutive ranges, the first ones one partition more when the count does not divide.
pub fn range(
    subscriptions: &BTreeMap<String, Vec<String>>,
    partition_counts: &BTreeMap<String, i32>,
) -> BTreeMap<String, Vec<TopicPartition>> {
    let mut out: BTreeMap<String, Vec<TopicPartition>> =
        subscriptions.keys().map(|m| (m.clone(), Vec::new())).collect();
    for (topic, &count) in partition_counts {
        let members: Vec<&String> =
            subscriptions.iter().filter(|(_, ts)| ts.contains(topic)).map(|(m, _)| m).collect();
        if members.is_empty() || count <= 0 {
            continue;
        }
        let (each, extra) = (count as usize / members.len(), count as usize % members.len());
        let mut next = 0;
        for (i, member) in members.into_iter().enumerate() {
            let take = each + usize::from(i < extra);
            let list = out.get_mut(member).expect("every subscriber has an entry");
            list.extend((next..next + take).map(|p| TopicPartition::new(topic, p as i32)));
            next += take;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_cover_every_partition_once_the_first_members_taking_the_remainder() {
        let subs: BTreeMap<String, Vec<String>> =
            ["b", "a", "c"].iter().map(|m| (m.to_string(), vec!["t".to_string()])).collect();
        let counts = BTreeMap::from([("t".to_string(), 7)]);
        let got = range(&subs, &counts);
        let parts = |m: &str| got[m].iter().map(|tp| tp.partition).collect::<Vec<_>>();
        assert_eq!(parts("a"), [0, 1, 2]);
        assert_eq!(parts("b"), [3, 4]);
        assert_eq!(parts("c"), [5, 6]);
    }
}
