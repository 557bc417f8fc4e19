//! The compact partition lists every trace line and picture uses.

use groupsim_wire::TopicPartition;
use std::collections::BTreeMap;

/// Compact partition list: `orders[0-2,5] payments[1]`.
pub fn partition_list(parts: &[TopicPartition]) -> String {
    let mut by_topic: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
    for tp in parts {
        by_topic.entry(&*tp.topic).or_default().push(tp.partition);
    }
    if by_topic.is_empty() {
        return "-".into();
    }
    let mut out = Vec::new();
    for (topic, mut ps) in by_topic {
        ps.sort_unstable();
        let mut runs: Vec<String> = Vec::new();
        let mut i = 0;
        while i < ps.len() {
            let mut j = i;
            while j + 1 < ps.len() && ps[j + 1] == ps[j] + 1 {
                j += 1;
            }
            runs.push(if i == j { ps[i].to_string() } else { format!("{}-{}", ps[i], ps[j]) });
            i = j + 1;
        }
        out.push(format!("{topic}[{}]", runs.join(",")));
    }
    out.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partition_lists_are_compact_and_sorted() {
        let ps = vec![
            TopicPartition::new("b", 1),
            TopicPartition::new("a", 2),
            TopicPartition::new("a", 0),
            TopicPartition::new("a", 1),
            TopicPartition::new("a", 5),
        ];
        assert_eq!(partition_list(&ps), "a[0-2,5] b[1]");
        assert_eq!(partition_list(&[]), "-");
    }
}
