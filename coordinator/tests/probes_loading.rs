//! Coverage probes of the coordinator around its offsets partitions and the offsets log:
//! requests while a partition loads or after it moved away, parked requests on unload, appends
//! that outlive their member, and loads of groups whose members went silent.

mod group_harness;

use group_harness::*;
use groupsim_coordinator::broker::{Broker, BrokerAddress, BrokerConfig};
use groupsim_coordinator::log::{shared, PartitionLogs};
use groupsim_coordinator::offsets_log::{OffsetsLog, SharedOffsetsLog};
use groupsim_coordinator::probes::{self, ANSWER};
use groupsim_coordinator::{CoordinatorConfig, GroupCoordinator, GroupState};
use groupsim_wire::probe::{self, Probe, ProbeHits};
use groupsim_wire::{Millis, RequestId};
use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestGroup;
use kafka_protocol::messages::{GroupId, OffsetFetchRequest, RequestKind};

/// A harness whose coordinator owns offsets partition 0 of `log`, loading for `load_ms`.
fn owning(cfg: CoordinatorConfig, log: &SharedOffsetsLog, load_ms: Millis) -> Harness {
    let mut h = Harness::with_config(cfg.clone());
    h.c = GroupCoordinator::with_offsets_log(cfg, log.clone());
    h.c.load_partition(0, 0, 0, load_ms);
    h
}

/// A harness whose coordinator is loading the group's partition for a second.
fn loading() -> Harness {
    owning(config(), &OffsetsLog::new(1).shared(), 1_000)
}

fn hit(hits: &ProbeHits, p: &Probe) -> bool {
    hits.get(p.name).is_some_and(|&n| n > 0)
}

#[test]
fn each_loading_probe_is_hit_where_its_situation_happens() {
    let cases: Vec<ProbeCase> = vec![
        (
            "an OffsetFetch reaching the coordinator",
            |h| {
                h.c = GroupCoordinator::new(config());
                h.send(5, fetch_req(GROUP, None));
            },
            &probes::OFFSET_FETCH_RECEIVED,
        ),
        (
            "an OffsetFetch while the group loads",
            |h| {
                h.send(5, fetch_req(GROUP, None));
            },
            &probes::OFFSET_FETCH_WHILE_LOADING,
        ),
        (
            "a batched OffsetFetch (v8) naming a loading group",
            |h| {
                let group = OffsetFetchRequestGroup::default().with_group_id(GroupId(s(GROUP)));
                h.send(8, OffsetFetchRequest::default().with_groups(vec![group]));
            },
            &probes::OFFSET_FETCH_WHILE_LOADING,
        ),
        (
            "an OffsetCommit while the group loads",
            |h| {
                h.send(2, commit_req(GROUP, "m", 1, &[("t", 0, 5)]));
            },
            &probes::OFFSET_COMMIT_WHILE_LOADING,
        ),
        (
            "a JoinGroup while the group loads",
            |h| {
                h.send(5, join_req(""));
            },
            &probes::GROUP_REQUEST_WHILE_LOADING,
        ),
        (
            "a SyncGroup while the group loads",
            |h| {
                h.send(3, sync_req("m", 1, &[]));
            },
            &probes::GROUP_REQUEST_WHILE_LOADING,
        ),
        (
            "a Heartbeat while the group loads",
            |h| {
                h.send(3, hb_req("m", 1));
            },
            &probes::GROUP_REQUEST_WHILE_LOADING,
        ),
        (
            "a request for a group whose partition is not owned here",
            |h| {
                h.c.unload_partition(0);
                h.send(3, hb_req("m", 1));
            },
            &probes::NOT_COORDINATOR,
        ),
    ];
    assert_probes_hit(loading, cases);
}

#[test]
fn loading_answers_are_counted_with_the_load_state() {
    let mut h = loading();
    let ((), hits) = probe::record(|| {
        h.send(5, fetch_req(GROUP, None));
        h.send(2, commit_req(GROUP, "m", 1, &[("t", 0, 5)]));
        h.send(3, hb_req("m", 1)); // answered NONE while loading: not an error answer
        h.c.unload_partition(0);
        h.send(3, hb_req("m", 1));
    });
    let answer = |detail: &str| hits.get(&format!("{}:{detail}", ANSWER.name)).copied();
    assert_eq!(answer("OffsetFetch/Loading/COORDINATOR_LOAD_IN_PROGRESS"), Some(1), "{hits:?}");
    assert_eq!(answer("OffsetCommit/Loading/COORDINATOR_LOAD_IN_PROGRESS"), Some(1), "{hits:?}");
    assert_eq!(answer("Heartbeat/NotCoordinator/NOT_COORDINATOR"), Some(1), "{hits:?}");
    assert_eq!(hits.keys().filter(|k| k.starts_with(ANSWER.name)).count(), 3, "{hits:?}");
}

#[test]
fn a_broker_refusing_a_group_it_does_not_coordinate_counts_not_coordinator() {
    // Group "g" lives in offsets partition 3 of 4, led by broker 1; ask broker 0.
    let brokers: Vec<BrokerAddress> = (0..2)
        .map(|i| BrokerAddress { node_id: i, host: format!("broker-{i}"), port: 9092 })
        .collect();
    let config = BrokerConfig {
        node_id: 0,
        cluster_id: "c".into(),
        brokers,
        offsets_topic_partitions: 4,
        coordinator: config(),
    };
    let mut broker = Broker::new(config, shared(PartitionLogs::new()));
    let ((), hits) = probe::record(|| {
        broker.handle_request(0, RequestId(1), 3, RequestKind::Heartbeat(hb_req("m", 1)));
        while broker.poll_output().is_some() {}
    });
    assert!(hit(&hits, &probes::NOT_COORDINATOR), "{hits:?}");
    let key = format!("{}:Heartbeat/NotCoordinator/NOT_COORDINATOR", ANSWER.name);
    assert_eq!(hits.get(&key), Some(&1), "{hits:?}");
}

#[test]
fn parked_joins_are_counted_when_their_group_unloads() {
    let mut h = owning(config(), &OffsetsLog::new(1).shared(), 0);
    let ((), hits) = probe::record(|| {
        let join = h.send(3, join_req("")); // v3: added at once, parked until the join phase ends
        assert!(!h.answered(join));
        h.c.unload_partition(0);
        h.advance(0);
        assert_eq!(h.join(join).error_code, code(E::NotCoordinator));
    });
    assert_eq!(hits.get(probes::PARKED_ANSWERED_ON_UNLOAD.name), Some(&1), "{hits:?}");
}

#[test]
fn a_commit_whose_member_left_during_its_append_is_counted() {
    let cfg = CoordinatorConfig { offsets_append_delay_ms: 5, ..config() };
    let mut h = Harness::with_config(cfg);
    let ((), hits) = probe::record(|| {
        let (m, join) = h.join_new("c0");
        h.advance(0);
        let generation = h.join(join).generation_id;
        h.send(3, sync_req(&m, generation, &[(m.as_str(), assignment(&[("t", 0)]))]));
        h.advance(5);
        assert_eq!(h.state(), Some(GroupState::Stable));
        let commit = h.send(2, commit_req(GROUP, &m, generation, &[("t", 0, 7)]));
        h.send(0, leave_req_v0(&m));
        h.advance(5);
        // Validated when it arrived, applied when replicated: Kafka does not check again.
        assert_eq!(h.commit_errors(commit), vec![0]);
    });
    assert_eq!(hits.get(probes::APPEND_OUTLIVED_MEMBER.name), Some(&1), "{hits:?}");
}

#[test]
fn a_load_counts_members_silent_for_longer_than_their_session() {
    // (behaviour, time between the group's last logged activity and the reload, counted)
    let cases = [
        ("reloaded at once", 0, false),
        ("reloaded after less than a session", SESSION as Millis - 1, false),
        ("reloaded after more than a session", SESSION as Millis + 1, true),
    ];
    for (behaviour, gap, counted) in cases {
        let log = OffsetsLog::new(1).shared();
        let mut h = owning(config(), &log, 0);
        h.stable_group(2);
        h.c.unload_partition(0);
        h.advance(gap);
        let ((), hits) = probe::record(|| {
            h.c.load_partition(h.now, 0, 1, 0);
            h.advance(0);
        });
        assert_eq!(h.state(), Some(GroupState::Stable), "{behaviour}");
        assert_eq!(hit(&hits, &probes::LOAD_WITH_STALE_MEMBERS), counted, "{behaviour}: {hits:?}");
    }
}

/// Kafka's storeGroup appends the leader's assignment first and checks in the append's callback
/// whether the group is still completing that generation; if a member joined meanwhile the
/// callback does nothing — but the record is already in the log. A coordinator that loads the
/// group before the next generation is stored (a move, a failover) loads the abandoned
/// generation, Stable, with the assignment nobody received, and answers a SyncGroup for it.
#[test]
fn an_abandoned_generations_assignment_is_in_the_log_and_loads() {
    let cfg = CoordinatorConfig { offsets_append_delay_ms: 5, ..config() };
    let log = OffsetsLog::new(1).shared();
    let mut h = owning(cfg.clone(), &log, 0);
    let ((), hits) = probe::record(|| {
        let (m0, join) = h.join_new("c0");
        h.advance(0);
        let generation = h.join(join).generation_id;
        let leader_sync =
            h.send(3, sync_req(&m0, generation, &[(m0.as_str(), assignment(&[("t", 0)]))]));
        // A member joins while the assignment's append is being replicated.
        let _ = h.join_new("c1");
        assert_eq!(h.state(), Some(GroupState::PreparingRebalance));
        h.advance(5);
        assert_eq!(h.state(), Some(GroupState::PreparingRebalance), "the callback does nothing");
        assert_eq!(h.sync(leader_sync).error_code, code(E::RebalanceInProgress));
        // The coordinator moves: a new one loads the partition from the log.
        h.c.unload_partition(0);
        h.c = GroupCoordinator::with_offsets_log(cfg, log.clone());
        h.c.load_partition(h.now, 0, 1, 0);
        h.advance(0);
        assert_eq!(h.state(), Some(GroupState::Stable));
        assert_eq!(h.generation(), generation);
        let again = h.send(3, sync_req(&m0, generation, &[]));
        assert_eq!(h.sync(again).error_code, 0);
        assert_eq!(h.sync(again).assignment, assignment(&[("t", 0)]));
    });
    assert!(hit(&hits, &probes::ASSIGNMENT_WRITTEN_FOR_ABANDONED_GENERATION), "{hits:?}");
}
