//! OffsetCommit and OffsetFetch behaviour of the coordinator.

mod group_harness;

use group_harness::*;
use groupsim_coordinator::{CoordinatorEvent, GroupState};
use groupsim_wire::TopicPartition;
use kafka_protocol::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopics,
};
use kafka_protocol::messages::{GroupId, OffsetFetchRequest, TopicName};

#[test]
fn offset_commit_checks_apply_in_kafkas_order() {
    // (name, phase, member (index into the group, or a literal), generation offset from the
    // current one or an absolute -1, expected error or NONE)
    enum Gen {
        Current,
        Delta(i32),
        Absolute(i32),
    }
    type Case = (&'static str, &'static str, Option<usize>, Gen, Option<E>);
    let cases: Vec<Case> = vec![
        ("unknown group, simple consumer", "none", None, Gen::Absolute(-1), None),
        (
            "unknown group, generation >= 0",
            "none",
            None,
            Gen::Absolute(3),
            Some(E::IllegalGeneration),
        ),
        ("empty group, simple consumer", "empty", None, Gen::Absolute(-1), None),
        ("empty group, generation >= 0", "empty", None, Gen::Absolute(2), Some(E::UnknownMemberId)),
        ("completing rebalance", "completing", Some(1), Gen::Current, Some(E::RebalanceInProgress)),
        (
            "completing rebalance beats unknown member",
            "completing",
            None,
            Gen::Current,
            Some(E::RebalanceInProgress),
        ),
        ("stable, unknown member", "stable", None, Gen::Current, Some(E::UnknownMemberId)),
        ("stable, old generation", "stable", Some(1), Gen::Delta(-1), Some(E::IllegalGeneration)),
        (
            "stable, simple consumer id on a live group",
            "stable",
            None,
            Gen::Absolute(-1),
            Some(E::UnknownMemberId),
        ),
        ("stable, current generation", "stable", Some(1), Gen::Current, None),
        ("preparing rebalance, current generation", "preparing", Some(1), Gen::Current, None),
    ];
    for (name, phase, who, gen, expected) in cases {
        let mut h = Harness::default();
        let mut ids = vec!["nobody".to_string(); 2];
        let mut generation = -1;
        match phase {
            "none" => {}
            "empty" => {
                let (m, g) = h.stable_group(1);
                h.send(0, leave_req_v0(&m[0]));
                generation = g + 1;
                assert_eq!(h.state(), Some(GroupState::Empty), "{name}");
            }
            _ => {
                let (m, g) = h.stable_group(2);
                ids = m;
                generation = g;
                if phase == "preparing" || phase == "completing" {
                    h.send(5, join_req(&ids[0]));
                }
                if phase == "completing" {
                    h.send(5, join_req(&ids[1]));
                    generation += 1;
                    assert_eq!(h.state(), Some(GroupState::CompletingRebalance), "{name}");
                }
            }
        }
        let member = who.map(|i| ids[i].clone()).unwrap_or_default();
        let g = match gen {
            Gen::Current => generation,
            Gen::Delta(d) => generation + d,
            Gen::Absolute(a) => a,
        };
        let r = h.send(5, commit_req(GROUP, &member, g, &[("t", 0, 42), ("t", 1, 7)]));
        let want = expected.map(code).unwrap_or(0);
        assert_eq!(h.commit_errors(r), vec![want, want], "{name}");
        let stored = h.c.committed_offset(GROUP, &TopicPartition::new("t", 0));
        assert_eq!(stored, expected.is_none().then_some(42), "{name}");
        if phase == "none" && expected.is_none() {
            assert_eq!(h.state(), Some(GroupState::Empty), "{name}: group created Empty");
        }
    }
}

#[test]
fn offset_commit_records_each_partition_outcome() {
    let mut h = Harness::default();
    let (ids, generation) = h.stable_group(1);
    h.advance(1_234);
    h.send(5, commit_req(GROUP, &ids[0], generation, &[("t", 0, 10), ("u", 3, 20)]));
    h.send(5, commit_req(GROUP, &ids[0], generation - 1, &[("t", 0, 11)]));
    let commits: Vec<String> = h
        .events
        .iter()
        .filter_map(|(_, e)| match e {
            CoordinatorEvent::OffsetCommitAccepted { partition, offset, generation, .. } => {
                Some(format!("ok {partition} {offset} g{generation}"))
            }
            CoordinatorEvent::OffsetCommitRejected { partition, offset, error, .. } => {
                Some(format!("rejected {partition} {offset} {error}"))
            }
            _ => None,
        })
        .collect();
    assert_eq!(commits, vec!["ok t-0 10 g1", "ok u-3 20 g1", "rejected t-0 11 ILLEGAL_GENERATION"]);
    let c = h.c.offsets().get(GROUP, &TopicPartition::new("t", 0)).unwrap();
    assert_eq!((c.offset, c.commit_timestamp), (10, 1_234));
}

#[test]
fn offset_commit_with_oversized_metadata_is_refused_for_that_partition() {
    let mut h = Harness::default();
    let mut req = commit_req(GROUP, "", -1, &[("t", 0, 5), ("t", 1, 6)]);
    req.topics[0].partitions[1].committed_metadata = Some(s(&"x".repeat(5_000)));
    let r = h.send(2, req);
    assert_eq!(h.commit_errors(r), vec![0, code(E::OffsetMetadataTooLarge)]);
    assert_eq!(h.c.committed_offset(GROUP, &TopicPartition::new("t", 1)), None);
}

#[test]
fn offset_fetch_answers_in_every_state_with_minus_one_for_uncommitted() {
    let mut h = Harness::default();
    let fetch_t = |h: &mut Harness| {
        let r = h.send(5, fetch_req(GROUP, Some(&[("t", &[0, 1])])));
        let resp = h.fetch(r);
        resp.topics[0]
            .partitions
            .iter()
            .map(|p| (p.partition_index, p.committed_offset, p.error_code))
            .collect::<Vec<_>>()
    };
    assert_eq!(fetch_t(&mut h), vec![(0, -1, 0), (1, -1, 0)], "unknown group");
    let (ids, generation) = h.stable_group(2);
    h.send(5, commit_req(GROUP, &ids[0], generation, &[("t", 0, 9)]));
    assert_eq!(fetch_t(&mut h), vec![(0, 9, 0), (1, -1, 0)], "stable");
    h.send(5, join_req(&ids[0]));
    assert_eq!(fetch_t(&mut h), vec![(0, 9, 0), (1, -1, 0)], "preparing rebalance");
    h.send(5, join_req(&ids[1]));
    assert_eq!(h.state(), Some(GroupState::CompletingRebalance));
    assert_eq!(fetch_t(&mut h), vec![(0, 9, 0), (1, -1, 0)], "completing rebalance");
    let l = h.send(3, leave_req_v3(&[(&ids[0], None), (&ids[1], None)]));
    assert_eq!(h.leave(l).error_code, 0);
    assert_eq!(h.state(), Some(GroupState::Empty));
    assert_eq!(fetch_t(&mut h), vec![(0, 9, 0), (1, -1, 0)], "empty");
}

#[test]
fn offset_fetch_with_null_topics_returns_every_committed_partition() {
    let mut h = Harness::default();
    h.send(5, commit_req(GROUP, "", -1, &[("b", 1, 5), ("a", 0, 3), ("b", 0, 4)]));
    let r = h.send(2, fetch_req(GROUP, None));
    let got: Vec<(String, i32, i64)> = h
        .fetch(r)
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions
                .iter()
                .map(move |p| (t.name.0.to_string(), p.partition_index, p.committed_offset))
        })
        .collect();
    assert_eq!(got, vec![("a".into(), 0, 3), ("b".into(), 0, 4), ("b".into(), 1, 5)]);
}

#[test]
fn offset_fetch_v8_batches_groups() {
    let mut h = Harness::default();
    h.send(5, commit_req("g1", "", -1, &[("t", 0, 1)]));
    h.send(5, commit_req("g2", "", -1, &[("t", 0, 2), ("t", 1, 3)]));
    let req = OffsetFetchRequest::default().with_groups(vec![
        OffsetFetchRequestGroup::default().with_group_id(GroupId(s("g1"))).with_topics(Some(vec![
            OffsetFetchRequestTopics::default()
                .with_name(TopicName(s("t")))
                .with_partition_indexes(vec![0, 5]),
        ])),
        OffsetFetchRequestGroup::default().with_group_id(GroupId(s("g2"))).with_topics(None),
    ]);
    let r = h.send(8, req);
    let resp = h.fetch(r);
    assert!(resp.topics.is_empty(), "v8 answers per group only");
    let got: Vec<(String, i32, i64)> = resp
        .groups
        .iter()
        .flat_map(|g| {
            g.topics.iter().flat_map(move |t| {
                t.partitions
                    .iter()
                    .map(move |p| (g.group_id.0.to_string(), p.partition_index, p.committed_offset))
            })
        })
        .collect();
    assert_eq!(
        got,
        vec![("g1".into(), 0, 1), ("g1".into(), 5, -1), ("g2".into(), 0, 2), ("g2".into(), 1, 3)]
    );
}

/// OffsetCommit gained the committed leader epoch in v6: a commit of an older version carries
/// none, so Kafka stores -1 ("no epoch") whatever the request's default field holds, and a later
/// OffsetFetch answers -1; from v6 the epoch the client sent is kept.
#[test]
fn the_committed_leader_epoch_is_kept_from_v6_and_minus_one_before() {
    let mut h = Harness::default();
    let mut old = commit_req(GROUP, "", -1, &[("t", 0, 5)]);
    old.topics[0].partitions[0].committed_leader_epoch = 7;
    h.send(5, old);
    let mut new = commit_req(GROUP, "", -1, &[("t", 1, 6)]);
    new.topics[0].partitions[0].committed_leader_epoch = 7;
    h.send(6, new);
    let epoch = |p| h.c.offsets().get(GROUP, &TopicPartition::new("t", p)).unwrap().leader_epoch;
    assert_eq!((epoch(0), epoch(1)), (-1, 7));
}
