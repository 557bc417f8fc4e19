//! `group-over-max-size` on hand-built logs: a classic generation longer than `group.max.size`.
//! A coordinator that checks the group's size after adding the joining member, or compares
//! with `>` where Kafka compares with `>=`, lets one member too many in; the leader's JoinGroup
//! answer then lists them all.

use super::*;

fn limited(entries: Vec<Entry>, classic: i32) -> AnswerLog {
    let mut log = log(Protocol::Classic, 2, entries);
    log.max_size = Some(MaxSize { classic, consumer: 1 });
    log
}

/// Three members join one generation; the leader is told of all three.
fn three_members() -> Vec<Entry> {
    vec![
        join("m0.0", 10, "a", 1, "a", &["a", "b", "c"]),
        join("m1.0", 10, "b", 1, "a", &[]),
        join("m2.0", 10, "c", 1, "a", &[]),
    ]
}

#[test]
fn a_generation_past_the_maximum_is_group_over_max_size() {
    let found = check(&limited(three_members(), 2));
    assert_eq!(found.iter().map(|a| a.rule).collect::<Vec<_>>(), [BrokerRule::GroupOverMaxSize]);
    assert_eq!(found[0].evidence, [0], "the leader's answer listing the generation");
}

/// At the maximum, with no limit known, or with only the consumer groups' limit below the
/// count (a classic group is held to `group.max.size` alone), nothing is judged.
#[test]
fn a_generation_at_the_maximum_or_with_no_known_limit_passes() {
    assert_eq!(rules(&limited(three_members(), 3)), []);
    assert_eq!(rules(&log(Protocol::Classic, 2, three_members())), []);
}
