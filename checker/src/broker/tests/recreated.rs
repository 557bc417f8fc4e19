//! A classic group that became a consumer group, emptied, and was deleted and made again as a
//! new classic group by a classic member's JoinGroup (KIP-848's downgrade of an empty group).
//! The new group's generations start over at 1, so what the old classic group answered —
//! generations, member lists, removals — proves nothing about the new one's answers. Found by
//! `groupsim explore` (invalid_requests seeds 137 and 144, migration_faults seed 34: members
//! upgraded to the consumer protocol one by one and then one rolled back to a classic profile,
//! which rejoined an emptied group): the rules compared the new group's generation 1 with the
//! old group's generation 2 and its first member list, and reported a stale generation
//! accepted, zombie commits and removed members accepted.

use super::*;

/// The old classic group's generations 1 and 2 (members a and b), then consumer member c's
/// heartbeats: the group is a consumer group. c leaves (epoch -1).
fn old_group_then_consumer_group() -> Vec<Entry> {
    let mut entries = classic_group();
    entries.push(join("m0.0", 30, "a", 2, "a", &["a", "b"]));
    entries.push(join("m1.0", 30, "b", 2, "a", &[]));
    entries.push(heartbeat("m2.0", 50, "c", 0, 3, NONE, Some(&[0, 1])));
    entries.push(heartbeat("m2.0", 60, "c", -1, -1, NONE, None));
    entries
}

/// New member d's join, sync and commit in the classic group made again, at generation 1.
fn new_classic_group(entries: &mut Vec<Entry>) {
    entries.push(join("m3.0", 100, "d", 1, "d", &["d"]));
    entries.push(sync("m3.0", 110, "d", 1, &[0, 1]));
    entries.push(commit("m3.0", 120, "d", 1, 5, NONE));
}

#[test]
fn a_classic_group_made_again_after_a_consumer_group_is_judged_afresh() {
    let mut entries = old_group_then_consumer_group();
    new_classic_group(&mut entries);
    let found = answer_rules(&log(Protocol::Consumer, 2, entries));
    assert!(found.is_empty(), "{found:?}");
}

/// The same generation numbers in a plainly classic group are a regression the rules catch: the
/// exemption is for a group that may have been made again, not for going back.
#[test]
fn the_same_answers_in_a_plainly_classic_group_break_the_rules() {
    let mut entries = classic_group();
    entries.push(join("m0.0", 30, "a", 2, "a", &["a", "b"]));
    entries.push(join("m1.0", 30, "b", 2, "a", &[]));
    new_classic_group(&mut entries);
    let found = answer_rules(&log(Protocol::Classic, 2, entries));
    for rule in [
        BrokerRule::GenerationRegression,
        BrokerRule::StaleGenerationAccepted,
        BrokerRule::ZombieCommit,
    ] {
        assert!(found.contains(&rule), "{rule:?} missing from {found:?}");
    }
}

/// After the consumer phase, a member's own answers still bind it: given generation 3 by a
/// JoinGroup, its SyncGroup at generation 1 answered NONE is stale.
#[test]
fn after_a_consumer_group_a_members_own_later_generation_still_counts() {
    let mut entries = old_group_then_consumer_group();
    entries.push(join("m3.0", 100, "d", 3, "d", &["d"]));
    entries.push(sync("m3.0", 110, "d", 1, &[0, 1]));
    let found = answer_rules(&log(Protocol::Consumer, 2, entries));
    assert!(found.contains(&BrokerRule::StaleGenerationAccepted), "{found:?}");
}
