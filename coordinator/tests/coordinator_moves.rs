//! Coordinator moves, loading, durable offsets and broker crashes, on the sans-IO brokers of a
//! two-broker cluster sharing one cluster state and one offsets log, driven at chosen instants
//! (as Kafka's GroupCoordinatorTest / GroupMetadataManagerTest do with MockTime).
//!
//! Group "g" lives in offsets partition 3 of 4 (Java hashCode("g") = 103), so broker 1 leads it
//! at first (placement `p % 2`).

mod group_harness;

use std::collections::BTreeMap;

use bytes::BytesMut;
use group_harness::{
    assignment, code, commit_req, fetch_req, hb_req, join_req, leave_req_v0, s, sync_req, E, GROUP,
};
use groupsim_coordinator::broker::{Broker, BrokerAddress, BrokerConfig};
use groupsim_coordinator::cluster::{self, ClusterState, SharedClusterState};
use groupsim_coordinator::log::{shared, PartitionLogs, SharedLogs};
use groupsim_coordinator::offsets_log::{self, OffsetsLog, OffsetsRecord, SharedOffsetsLog};
use groupsim_coordinator::{CoordinatorConfig, CoordinatorEvent, CoordinatorOutput, GroupState};
use groupsim_wire::{Millis, RequestId, TopicPartition};
use kafka_protocol::messages::*;

const PARTITION: i32 = 3;
const FIRST: i32 = 1;
const OTHER: i32 = 0;
const APPEND_MS: Millis = 2;

/// Two brokers, one shared cluster state and offsets log; a broker slot is `None` while crashed.
struct Cluster {
    brokers: Vec<Option<Broker>>,
    cluster: SharedClusterState,
    log: SharedOffsetsLog,
    logs: SharedLogs,
    cfg: CoordinatorConfig,
    now: Millis,
    next_id: u64,
    outstanding: BTreeMap<RequestId, (i32, i16)>,
    responses: BTreeMap<RequestId, ResponseKind>,
    events: Vec<(Millis, i32, CoordinatorEvent)>,
}

fn addresses() -> Vec<BrokerAddress> {
    (0..2).map(|i| BrokerAddress { node_id: i, host: format!("broker-{i}"), port: 9092 }).collect()
}

impl Cluster {
    fn new(cfg: CoordinatorConfig) -> Self {
        let mut logs = PartitionLogs::new();
        logs.create_topic("t", 4).unwrap();
        let mut c = Cluster {
            brokers: vec![None, None],
            cluster: ClusterState::new(addresses(), 4).shared(),
            log: OffsetsLog::new(4).shared(),
            logs: shared(logs),
            cfg,
            now: 0,
            next_id: 1,
            outstanding: BTreeMap::new(),
            responses: BTreeMap::new(),
            events: Vec::new(),
        };
        c.start(0);
        c.start(1);
        c
    }

    fn default() -> Self {
        Self::new(CoordinatorConfig { initial_rebalance_delay_ms: 0, ..Default::default() })
    }

    /// (Re)starts a broker with empty state.
    fn start(&mut self, node: i32) {
        let config = BrokerConfig {
            node_id: node,
            cluster_id: "c".into(),
            brokers: addresses(),
            offsets_topic_partitions: 4,
            coordinator: self.cfg.clone(),
        };
        let b = Broker::with_cluster(
            config,
            self.logs.clone(),
            self.cluster.clone(),
            self.log.clone(),
            self.now,
        );
        self.brokers[node as usize] = Some(b);
        self.drain();
    }

    fn broker(&mut self, node: i32) -> &mut Broker {
        self.brokers[node as usize].as_mut().expect("broker is up")
    }

    fn send(&mut self, node: i32, version: i16, req: impl Into<RequestKind>) -> RequestId {
        let id = RequestId(self.next_id);
        self.next_id += 1;
        self.outstanding.insert(id, (node, version));
        let now = self.now;
        self.broker(node).handle_request_from(now, id, version, "client", req.into());
        self.drain();
        id
    }

    fn drain(&mut self) {
        for node in 0..2 {
            let Some(b) = self.brokers[node as usize].as_mut() else { continue };
            while let Some(out) = b.poll_output() {
                match out {
                    CoordinatorOutput::Response { id, response } => {
                        let (_, version) = self
                            .outstanding
                            .remove(&id)
                            .unwrap_or_else(|| panic!("{id:?} answered twice: {response:?}"));
                        let mut buf = BytesMut::new();
                        response.encode(&mut buf, version).expect("response valid for version");
                        self.responses.insert(id, response);
                    }
                    CoordinatorOutput::Event(e) => self.events.push((self.now, node, e)),
                }
            }
        }
    }

    /// Moves time forward, firing every broker's timers at their own instants.
    fn advance(&mut self, ms: Millis) {
        let target = self.now + ms;
        loop {
            let next = self.brokers.iter().flatten().filter_map(Broker::poll_timeout).min();
            match next {
                Some(at) if at <= target => {
                    self.now = self.now.max(at);
                    let now = self.now;
                    for b in self.brokers.iter_mut().flatten() {
                        if b.poll_timeout().is_some_and(|t| t <= now) {
                            b.handle_timeout(now);
                        }
                    }
                    self.drain();
                }
                _ => break,
            }
        }
        self.now = target;
        self.drain();
    }

    /// What the world's cluster control does for a move: metadata first, then resign + load.
    fn move_coordinator(&mut self, to: i32, load_ms: Millis) {
        let old = cluster::lock(&self.cluster).set_offsets_leader(PARTITION, to).unwrap();
        let now = self.now;
        if let Some(b) = self.brokers[old.leader as usize].as_mut() {
            b.resign_coordinator(now, PARTITION);
        }
        assert!(self.broker(to).become_coordinator(now, PARTITION, load_ms));
        self.drain();
    }

    fn crash(&mut self, node: i32) {
        self.brokers[node as usize] = None;
    }

    fn answered(&self, id: RequestId) -> bool {
        self.responses.contains_key(&id)
    }

    fn join(&self, id: RequestId) -> &JoinGroupResponse {
        match self.responses.get(&id) {
            Some(ResponseKind::JoinGroup(r)) => r,
            other => panic!("no JoinGroup answer for {id:?}: {other:?}"),
        }
    }

    fn sync(&self, id: RequestId) -> &SyncGroupResponse {
        match self.responses.get(&id) {
            Some(ResponseKind::SyncGroup(r)) => r,
            other => panic!("no SyncGroup answer for {id:?}: {other:?}"),
        }
    }

    fn error(&self, id: RequestId) -> i16 {
        match self.responses.get(&id) {
            Some(ResponseKind::JoinGroup(r)) => r.error_code,
            Some(ResponseKind::SyncGroup(r)) => r.error_code,
            Some(ResponseKind::Heartbeat(r)) => r.error_code,
            Some(ResponseKind::LeaveGroup(r)) => r.error_code,
            Some(ResponseKind::OffsetFetch(r)) => r.error_code,
            Some(ResponseKind::OffsetCommit(r)) => {
                let codes: Vec<i16> = r
                    .topics
                    .iter()
                    .flat_map(|t| t.partitions.iter().map(|p| p.error_code))
                    .collect();
                assert!(codes.windows(2).all(|w| w[0] == w[1]), "mixed errors {codes:?}");
                codes.first().copied().unwrap_or(0)
            }
            other => panic!("no answer with an error code for {id:?}: {other:?}"),
        }
    }

    fn fetched(&self, id: RequestId, p: i32) -> i64 {
        match self.responses.get(&id) {
            Some(ResponseKind::OffsetFetch(r)) => r
                .topics
                .iter()
                .flat_map(|t| t.partitions.iter())
                .find(|x| x.partition_index == p)
                .map_or(-1, |x| x.committed_offset),
            other => panic!("no OffsetFetch answer for {id:?}: {other:?}"),
        }
    }

    fn state_on(&self, node: i32) -> Option<GroupState> {
        self.brokers[node as usize].as_ref().and_then(|b| b.coordinator().group_state(GROUP))
    }

    fn committed_in_log(&self, p: i32) -> Option<i64> {
        offsets_log::lock(&self.log).committed_offset(GROUP, &TopicPartition::new("t", p))
    }

    /// A Stable group of two members on broker `node` (JoinGroup v3: no MEMBER_ID_REQUIRED).
    /// Returns (leader, follower, generation).
    fn stable_group(&mut self, node: i32) -> (String, String, i32) {
        let j1 = self.send(node, 3, join_req(""));
        let j2 = self.send(node, 3, join_req(""));
        self.advance(0);
        let (a, b) = (self.join(j1).member_id.to_string(), self.join(j2).member_id.to_string());
        let generation = self.join(j1).generation_id;
        let assign = [(a.as_str(), assignment(&[("t", 0)])), (b.as_str(), assignment(&[("t", 1)]))];
        let s1 = self.send(node, 3, sync_req(&a, generation, &assign));
        let s2 = self.send(node, 3, sync_req(&b, generation, &[]));
        self.advance(APPEND_MS);
        assert_eq!((self.sync(s1).error_code, self.sync(s2).error_code), (0, 0));
        assert_eq!(self.state_on(node), Some(GroupState::Stable));
        (a, b, generation)
    }

    fn loaded(&self) -> Vec<(i32, GroupState, i32, Vec<String>)> {
        self.events
            .iter()
            .filter_map(|(_, node, e)| match e {
                CoordinatorEvent::GroupLoaded { state, generation, members, .. } => {
                    Some((*node, *state, *generation, members.clone()))
                }
                _ => None,
            })
            .collect()
    }
}

fn commit(member: &str, generation: i32, p: i32, offset: i64) -> OffsetCommitRequest {
    commit_req(GROUP, member, generation, &[("t", p, offset)])
}

#[test]
fn group_partition_is_led_by_broker_one_at_first() {
    let c = Cluster::default();
    let state = cluster::lock(&c.cluster);
    assert_eq!(state.group_partition(GROUP), PARTITION);
    assert_eq!(state.group_coordinator(GROUP).map(|b| b.node_id), Some(FIRST));
}

#[test]
fn join_to_a_broker_that_is_not_the_coordinator_gets_not_coordinator() {
    let mut c = Cluster::default();
    let j = c.send(OTHER, 3, join_req(""));
    assert_eq!(c.error(j), code(E::NotCoordinator));
    let f = c.send(OTHER, 5, fetch_req(GROUP, None));
    assert_eq!(c.error(f), code(E::NotCoordinator));
}

#[test]
fn find_coordinator_follows_the_move_on_every_broker() {
    let mut c = Cluster::default();
    c.move_coordinator(OTHER, 0);
    for node in [0, 1] {
        let id =
            c.send(node, 3, FindCoordinatorRequest::default().with_key(s(GROUP)).with_key_type(0));
        match &c.responses[&id] {
            ResponseKind::FindCoordinator(r) => assert_eq!(r.node_id.0, OTHER, "asked {node}"),
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn while_loading_join_commit_fetch_leave_get_coordinator_load_in_progress() {
    let mut c = Cluster::default();
    let (a, _, generation) = c.stable_group(FIRST);
    c.move_coordinator(OTHER, 500);
    let cases: Vec<(&str, RequestId)> = vec![
        ("join", c.send(OTHER, 3, join_req(&a))),
        ("commit", c.send(OTHER, 7, commit(&a, generation, 0, 5))),
        ("fetch", c.send(OTHER, 5, fetch_req(GROUP, None))),
        ("leave", c.send(OTHER, 1, leave_req_v0(&a))),
    ];
    for (what, id) in cases {
        assert_eq!(c.error(id), code(E::CoordinatorLoadInProgress), "{what}");
    }
}

#[test]
fn while_loading_sync_gets_rebalance_in_progress_and_heartbeat_gets_none() {
    let mut c = Cluster::default();
    let (a, b, generation) = c.stable_group(FIRST);
    c.move_coordinator(OTHER, 500);
    let sync = c.send(OTHER, 3, sync_req(&b, generation, &[]));
    assert_eq!(c.error(sync), code(E::RebalanceInProgress));
    let hb = c.send(OTHER, 3, hb_req(&a, generation));
    assert_eq!(c.error(hb), 0);
}

#[test]
fn after_the_load_the_new_coordinator_serves_the_loaded_generation_members_assignment_and_offsets()
{
    let mut c = Cluster::default();
    let (a, b, generation) = c.stable_group(FIRST);
    let cm = c.send(FIRST, 7, commit(&a, generation, 0, 42));
    c.advance(APPEND_MS);
    assert_eq!(c.error(cm), 0);
    c.move_coordinator(OTHER, 500);
    c.advance(499);
    let early = c.send(OTHER, 5, fetch_req(GROUP, None));
    assert_eq!(c.error(early), code(E::CoordinatorLoadInProgress), "still loading at 499 ms");
    c.advance(1);
    assert_eq!(c.loaded(), vec![(OTHER, GroupState::Stable, generation, sorted(&[&a, &b]))]);
    let hb = c.send(OTHER, 3, hb_req(&b, generation));
    assert_eq!(c.error(hb), 0, "loaded member, loaded generation");
    let sync = c.send(OTHER, 3, sync_req(&b, generation, &[]));
    assert_eq!(c.sync(sync).assignment, assignment(&[("t", 1)]), "loaded assignment");
    let f = c.send(OTHER, 5, fetch_req(GROUP, Some(&[("t", &[0])])));
    assert_eq!(c.fetched(f, 0), 42, "loaded offset");
    let leader = c.brokers[OTHER as usize].as_ref().unwrap().coordinator().leader(GROUP);
    assert_eq!(leader.as_deref(), Some(a.as_str()));
}

#[test]
fn loaded_members_get_fresh_session_deadlines() {
    let mut c = Cluster::default();
    let (a, b, generation) = c.stable_group(FIRST);
    // 9 s without heartbeats on the old coordinator: 1 s of a 10 s session left there.
    c.advance(9_000);
    c.move_coordinator(OTHER, 0);
    // The loaded members' sessions restart at the load: still members 9.9 s later.
    c.advance(9_900);
    let hb = c.send(OTHER, 3, hb_req(&a, generation));
    assert_eq!(c.error(hb), 0);
    // b never heartbeats: its fresh session expires 10 s after the load.
    c.advance(200);
    let hb = c.send(OTHER, 3, hb_req(&b, generation));
    assert_eq!(c.error(hb), code(E::UnknownMemberId));
}

#[test]
fn resign_answers_parked_join_and_sync_with_not_coordinator_and_later_requests_too() {
    let mut c = Cluster::default();
    let (a, b, generation) = c.stable_group(FIRST);
    // The leader rejoins (a rebalance starts); b's join is still awaited, so a's is parked.
    let ja = c.send(FIRST, 3, join_req(&a));
    assert!(!c.answered(ja));
    c.move_coordinator(OTHER, 0);
    assert_eq!(c.error(ja), code(E::NotCoordinator), "parked join");
    assert_eq!(c.state_on(FIRST), None, "unloaded");
    let hb = c.send(FIRST, 3, hb_req(&b, generation));
    assert_eq!(c.error(hb), code(E::NotCoordinator), "later request");

    // A parked SyncGroup: new rebalance on the new coordinator, follower syncs first, move.
    let j1 = c.send(OTHER, 3, join_req(&a));
    let j2 = c.send(OTHER, 3, join_req(&b));
    c.advance(0);
    let g2 = c.join(j1).generation_id;
    assert_eq!(c.join(j2).generation_id, g2);
    let sb = c.send(OTHER, 3, sync_req(&b, g2, &[]));
    assert!(!c.answered(sb));
    c.move_coordinator(FIRST, 0);
    assert_eq!(c.error(sb), code(E::NotCoordinator), "parked sync");
}

#[test]
fn commit_is_acknowledged_only_after_its_append_completes() {
    let mut c = Cluster::default();
    let (a, _, generation) = c.stable_group(FIRST);
    let cm = c.send(FIRST, 7, commit(&a, generation, 0, 7));
    assert!(!c.answered(cm), "not before the append");
    assert_eq!(c.committed_in_log(0), None);
    let accepted = |c: &Cluster| {
        c.events.iter().any(|(_, _, e)| matches!(e, CoordinatorEvent::OffsetCommitAccepted { .. }))
    };
    assert!(!accepted(&c));
    c.advance(APPEND_MS);
    assert_eq!(c.error(cm), 0);
    assert!(accepted(&c));
    assert_eq!(c.committed_in_log(0), Some(7));
}

#[test]
fn commit_awaiting_its_append_when_the_coordinator_moves_gets_not_coordinator_and_is_not_stored() {
    let mut c = Cluster::default();
    let (a, _, generation) = c.stable_group(FIRST);
    let cm = c.send(FIRST, 7, commit(&a, generation, 0, 7));
    c.move_coordinator(OTHER, 0);
    assert_eq!(c.error(cm), code(E::NotCoordinator));
    c.advance(APPEND_MS);
    assert_eq!(c.committed_in_log(0), None);
    let rejected = c.events.iter().any(|(_, _, e)| {
        matches!(e, CoordinatorEvent::OffsetCommitRejected { error, .. } if error == "NOT_COORDINATOR")
    });
    assert!(rejected);
}

#[test]
fn a_broker_that_missed_its_resignation_unloads_before_serving() {
    let mut c = Cluster::default();
    let (_, b, generation) = c.stable_group(FIRST);
    // Metadata moves, but broker 1 is not told (its control message is still in flight).
    cluster::lock(&c.cluster).set_offsets_leader(PARTITION, OTHER);
    let hb = c.send(FIRST, 3, hb_req(&b, generation));
    assert_eq!(c.error(hb), code(E::NotCoordinator));
    assert_eq!(c.state_on(FIRST), None, "unloaded on its own");
    // Leadership comes back at a newer epoch without a resignation: stale state is dropped and
    // the partition reloads from the log when told.
    cluster::lock(&c.cluster).set_offsets_leader(PARTITION, FIRST);
    assert!(c.broker(FIRST).become_coordinator(0, PARTITION, 0));
    assert_eq!(c.state_on(FIRST), Some(GroupState::Stable));
}

/// A move in each group state ends with a consistent group: the new coordinator loads the last
/// stored generation (Stable, or Empty without members), and the members converge on a new
/// Stable generation with an assignment for everyone.
#[test]
fn a_move_in_each_group_state_ends_with_a_consistent_group() {
    // (state to move in, generation the new coordinator loads relative to the first one)
    for state in [
        GroupState::Empty,
        GroupState::PreparingRebalance,
        GroupState::CompletingRebalance,
        GroupState::Stable,
    ] {
        let mut c = Cluster::default();
        let (a, b, g1) = c.stable_group(FIRST);
        let expected_load = match state {
            GroupState::Empty => {
                let l1 = c.send(FIRST, 1, leave_req_v0(&a));
                let l2 = c.send(FIRST, 1, leave_req_v0(&b));
                assert_eq!((c.error(l1), c.error(l2)), (0, 0));
                c.advance(APPEND_MS);
                (GroupState::Empty, g1 + 1, vec![])
            }
            GroupState::PreparingRebalance => {
                c.send(FIRST, 3, join_req(&a));
                (GroupState::Stable, g1, sorted(&[&a, &b]))
            }
            GroupState::CompletingRebalance => {
                c.send(FIRST, 3, join_req(&a));
                c.send(FIRST, 3, join_req(&b));
                c.advance(0);
                (GroupState::Stable, g1, sorted(&[&a, &b]))
            }
            GroupState::Stable => (GroupState::Stable, g1, sorted(&[&a, &b])),
            GroupState::Dead => unreachable!(),
        };
        assert_eq!(c.state_on(FIRST), Some(state), "set up {state:?}");
        c.move_coordinator(OTHER, 100);
        c.advance(100);
        let (node, loaded_state, loaded_gen, members) = c.loaded().pop().expect("loaded");
        assert_eq!(
            (node, loaded_state, loaded_gen, members),
            {
                let (s, g, m) = expected_load.clone();
                (OTHER, s, g, m)
            },
            "move in {state:?}"
        );
        // The members rejoin the new coordinator (as clients do after NOT_COORDINATOR or
        // ILLEGAL_GENERATION) and the group becomes Stable with both assigned.
        let (ida, idb) = if state == GroupState::Empty {
            (String::new(), String::new())
        } else {
            (a.clone(), b.clone())
        };
        let j1 = c.send(OTHER, 3, join_req(&ida));
        let j2 = c.send(OTHER, 3, join_req(&idb));
        c.advance(0);
        let (ra, rb) = (c.join(j1).clone(), c.join(j2).clone());
        assert_eq!((ra.error_code, rb.error_code), (0, 0), "{state:?}");
        assert_eq!(ra.generation_id, rb.generation_id);
        assert!(ra.generation_id > loaded_gen, "{state:?}: generation moves forward");
        let leader = ra.leader.to_string();
        let (ma, mb) = (ra.member_id.to_string(), rb.member_id.to_string());
        let assign =
            [(ma.as_str(), assignment(&[("t", 0)])), (mb.as_str(), assignment(&[("t", 1)]))];
        let first = if leader == ma { &ma } else { &mb };
        let s1 = c.send(OTHER, 3, sync_req(first, ra.generation_id, &assign));
        c.advance(APPEND_MS);
        assert_eq!(c.error(s1), 0);
        assert_eq!(c.state_on(OTHER), Some(GroupState::Stable), "{state:?}");
        let g = c.brokers[OTHER as usize].as_ref().unwrap().coordinator().group(GROUP).unwrap();
        assert!(g.members().all(|m| !m.assignment.is_empty()), "{state:?}: everyone assigned");
    }
}

#[test]
fn crash_then_failover_reloads_groups_and_offsets_from_the_log() {
    let mut c = Cluster::default();
    let (a, b, generation) = c.stable_group(FIRST);
    let cm = c.send(FIRST, 7, commit(&a, generation, 0, 11));
    c.advance(APPEND_MS);
    assert_eq!(c.error(cm), 0);
    // A commit in flight when the broker dies is lost, but it was never acknowledged.
    let lost = c.send(FIRST, 7, commit(&a, generation, 0, 12));
    c.crash(FIRST);
    assert!(!c.answered(lost));
    c.advance(3_000);
    cluster::lock(&c.cluster).set_live(FIRST, false);
    c.move_coordinator(OTHER, 200);
    c.advance(200);
    assert_eq!(c.loaded(), vec![(OTHER, GroupState::Stable, generation, sorted(&[&a, &b]))]);
    let f = c.send(OTHER, 5, fetch_req(GROUP, Some(&[("t", &[0])])));
    assert_eq!(c.fetched(f, 0), 11);
    // The restarted broker is empty, and leads again when a move gives it the partition.
    cluster::lock(&c.cluster).set_live(FIRST, true);
    c.start(FIRST);
    assert_eq!(c.state_on(FIRST), None);
    c.move_coordinator(FIRST, 0);
    assert_eq!(c.state_on(FIRST), Some(GroupState::Stable));
    let f = c.send(FIRST, 5, fetch_req(GROUP, Some(&[("t", &[0])])));
    assert_eq!(c.fetched(f, 0), 11);
}

#[test]
fn metadata_lists_only_live_brokers() {
    let mut c = Cluster::default();
    cluster::lock(&c.cluster).set_live(FIRST, false);
    let id = c.send(OTHER, 9, MetadataRequest::default().with_topics(None));
    match &c.responses[&id] {
        ResponseKind::Metadata(r) => {
            let ids: Vec<i32> = r.brokers.iter().map(|b| b.node_id.0).collect();
            assert_eq!(ids, vec![OTHER]);
        }
        other => panic!("{other:?}"),
    }
}

/// Bug mechanism (issue 5, `ack_commit_before_log_append`): the coordinator caches and
/// acknowledges a commit before its append to the offsets log is replicated. If the broker dies
/// inside that window the acknowledged commit exists nowhere, and the coordinator that takes the
/// group over serves the previous offset: the consumer that resumes there reprocesses records
/// the group had committed (the checker's lost-commit rule).
#[test]
fn ack_commit_before_log_append_bug_loses_an_acknowledged_commit_on_crash() {
    let mut cfg = CoordinatorConfig { initial_rebalance_delay_ms: 0, ..Default::default() };
    cfg.bugs.ack_commit_before_log_append = true;
    let mut c = Cluster::new(cfg);
    let (a, _, generation) = c.stable_group(FIRST);
    let cm = c.send(FIRST, 7, commit(&a, generation, 0, 30));
    assert_eq!(c.error(cm), 0, "acknowledged at once");
    c.crash(FIRST);
    c.move_coordinator(OTHER, 0);
    let f = c.send(OTHER, 5, fetch_req(GROUP, Some(&[("t", &[0])])));
    assert_eq!(c.fetched(f, 0), -1, "the acknowledged commit is gone");
}

/// Bug mechanism (issue 5, `skip_commit_generation_check`): OffsetCommit skips the member and
/// generation fence, so a member removed from the group (a zombie) still gets its commit in.
#[test]
fn skip_commit_generation_check_bug_accepts_a_zombie_commit() {
    let mut cfg = CoordinatorConfig { initial_rebalance_delay_ms: 0, ..Default::default() };
    cfg.bugs.skip_commit_generation_check = true;
    let mut c = Cluster::new(cfg);
    let (a, _, generation) = c.stable_group(FIRST);
    let stale = c.send(FIRST, 7, commit("zombie-1", generation - 1, 0, 9));
    c.advance(APPEND_MS);
    assert_eq!(c.error(stale), 0);
    assert_eq!(c.committed_in_log(0), Some(9));
    let _ = a;
    // Without the bug the same commit is fenced.
    let mut c = Cluster::default();
    let (_, _, generation) = c.stable_group(FIRST);
    let stale = c.send(FIRST, 7, commit("zombie-1", generation - 1, 0, 9));
    assert_eq!(c.error(stale), code(E::UnknownMemberId));
}

#[test]
fn offsets_log_holds_group_metadata_with_members_and_assignment() {
    let mut c = Cluster::default();
    let (a, b, generation) = c.stable_group(FIRST);
    let log = offsets_log::lock(&c.log);
    let snapshot = log
        .records(PARTITION)
        .iter()
        .rev()
        .find_map(|r| match r {
            OffsetsRecord::Group(g) => Some(g.clone()),
            _ => None,
        })
        .expect("group stored");
    assert_eq!(snapshot.generation, generation);
    assert_eq!(snapshot.leader.as_deref(), Some(a.as_str()));
    let members: Vec<(&str, bool)> =
        snapshot.members.iter().map(|m| (m.member_id.as_str(), m.assignment.is_empty())).collect();
    assert_eq!(members, vec![(a.as_str(), false), (b.as_str(), false)]);
    assert_eq!(snapshot.members[0].session_timeout_ms, group_harness::SESSION);
}

fn sorted(ids: &[&String]) -> Vec<String> {
    let mut v: Vec<String> = ids.iter().map(|s| s.to_string()).collect();
    v.sort();
    v
}

/// A commit validated in generation N whose member leaves before the append completes still
/// lands, as in Kafka: the request is validated when it arrives, and the append's completion
/// (GroupMetadataManager.storeOffsets' putCacheCallback) caches the offsets of any group that is
/// not Dead and answers NONE. The accepted event says when the commit was validated, so a
/// checker can judge it by the group as it stood then.
#[test]
fn commit_whose_member_leaves_while_its_append_is_replicated_still_lands() {
    let mut c = Cluster::default();
    let (a, _, generation) = c.stable_group(FIRST);
    let validated_at = c.now;
    let cm = c.send(FIRST, 7, commit(&a, generation, 0, 5));
    let leave = c.send(FIRST, 1, leave_req_v0(&a));
    assert_eq!(c.error(leave), 0);
    c.advance(APPEND_MS);
    assert_eq!(c.error(cm), 0);
    assert_eq!(c.committed_in_log(0), Some(5));
    let accepted: Vec<(Millis, Millis)> = c
        .events
        .iter()
        .filter_map(|(at, _, e)| match e {
            CoordinatorEvent::OffsetCommitAccepted { validated_at_ms, member_id, .. }
                if *member_id == a =>
            {
                Some((*at, *validated_at_ms))
            }
            _ => None,
        })
        .collect();
    assert_eq!(accepted, vec![(validated_at + APPEND_MS, validated_at)]);
}
