//! `SimpleConsumer`: a small classic-protocol consumer written from scratch as a sans-IO state
//! machine — the kind of member a client author plugs into groupsim to test their own rebalance
//! logic.
//!
//! It finds the coordinator, joins with the eager protocol (revoking everything before each
//! rejoin), assigns ranges when it leads, starts each partition at its committed offset (the
//! log start when there is none), fetches and processes records as they come, commits what it
//! processed every `auto.commit.interval.ms` and before it gives partitions up, heartbeats while
//! it is in the group, and finds the coordinator again after any connection trouble. It acts on
//! an error about its membership only when the request was sent under its current member id and
//! generation (KAFKA-9823).
//!
//! The deliberate mistake, [`Mistake::StaleOffsets`]: the member never prunes its map of
//! processed offsets when it gives partitions up, so every later commit sends those offsets
//! again, in later generations, while another member owns the partitions and commits further.
//! The coordinator accepts them (Kafka checks a commit's generation, not which partitions the
//! member owns), so the committed offset goes back and records are delivered twice; the checker
//! names it (`unowned-commit`, `offset-regression`).

use std::collections::{BTreeMap, VecDeque};

use groupsim_member::{
    MemberConfig, MemberEvent, MemberOutput, Millis, RequestId, Target, TopicPartition,
};
use groupsim_wire::consumer_protocol::{encode_subscription, Subscription};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::leave_group_request::MemberIdentity;
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopics,
};
use kafka_protocol::messages::{
    FetchRequest, FindCoordinatorRequest, GroupId, JoinGroupRequest, LeaveGroupRequest,
    MetadataRequest, OffsetFetchRequest, RequestKind, TopicName,
};
use kafka_protocol::protocol::StrBytes;

use uuid::Uuid;

/// A mistake the member can be built with, to see the checker catch it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mistake {
    /// Correct behaviour.
    None,
    /// Processed offsets of revoked partitions are kept and committed in later generations.
    StaleOffsets,
}

/// The one assignor this member offers.
pub(crate) const PROTOCOL: &str = "range";
/// Records processed per partition per Fetch answer at most.
pub(crate) const MAX_RECORDS: usize = 50;

/// Where the member is in the group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Not started.
    Idle,
    /// Wants to join (the coordinator first, if unknown).
    Joining,
    /// JoinGroup answered; SyncGroup in flight.
    Syncing,
    /// In a generation with an assignment.
    Stable,
    /// Committing before giving its partitions up, then rejoining.
    Revoking,
    /// Leaving the group, then done.
    Leaving,
    /// Stopped.
    Done,
}

/// The membership a request was sent under.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Under {
    pub(crate) member_id: String,
    pub(crate) generation: i32,
}

/// What a request in flight was.
#[derive(Clone, Debug)]
pub(crate) enum Call {
    Metadata,
    FindCoordinator,
    Join,
    Sync(Under),
    Heartbeat(Under),
    OffsetFetch(u64),
    ListOffsets(u64),
    Fetch(i32, u64),
    Commit { under: Under, offsets: Vec<(TopicPartition, i64)>, then_revoke: bool },
    Leave,
}

impl Call {
    /// Sent to the coordinator: its failure means the coordinator is lost.
    pub(crate) fn to_coordinator(&self) -> bool {
        matches!(
            self,
            Call::Join
                | Call::Sync(_)
                | Call::Heartbeat(_)
                | Call::OffsetFetch(_)
                | Call::Commit { .. }
                | Call::Leave
        )
    }
}

/// A partition the member owns.
#[derive(Clone, Debug, Default)]
pub(crate) struct Owned {
    /// The next offset to fetch (None: not initialised yet).
    pub(crate) position: Option<i64>,
    /// An OffsetFetch or ListOffsets for it is in flight.
    pub(crate) initialising: bool,
}

/// A small classic consumer (see the module docs).
#[derive(Debug)]
pub struct SimpleConsumer {
    pub(crate) config: MemberConfig,
    pub(crate) mistake: Mistake,
    pub(crate) phase: Phase,
    pub(crate) out: VecDeque<MemberOutput>,
    pub(crate) next_id: u64,
    pub(crate) calls: BTreeMap<RequestId, Call>,
    /// Partition leaders and counts, per topic, and topic ids (Fetch names topics by id from
    /// v13).
    pub(crate) leaders: BTreeMap<TopicPartition, i32>,
    pub(crate) counts: BTreeMap<String, i32>,
    pub(crate) topic_ids: BTreeMap<String, Uuid>,
    pub(crate) metadata_wanted: bool,
    pub(crate) coordinator: Option<i32>,
    pub(crate) member_id: String,
    pub(crate) generation: i32,
    pub(crate) owned: BTreeMap<TopicPartition, Owned>,
    /// Bumped whenever the assignment changes: answers about an older one are dropped.
    pub(crate) epoch: u64,
    /// Per partition, the offset after the last record processed (what to commit).
    pub(crate) processed: BTreeMap<TopicPartition, i64>,
    /// Per partition, the last offset the coordinator acknowledged from this member.
    pub(crate) committed: BTreeMap<TopicPartition, i64>,
    /// Brokers with a Fetch in flight.
    pub(crate) fetching: Vec<i32>,
    pub(crate) backoff_until: Option<Millis>,
    pub(crate) heartbeat_at: Option<Millis>,
    pub(crate) commit_at: Option<Millis>,
    pub(crate) finished: bool,
}

impl SimpleConsumer {
    /// A member with `config` (group, topics, timeouts, commit interval), making `mistake`.
    pub fn new(config: &MemberConfig, mistake: Mistake) -> Self {
        Self {
            config: config.clone(),
            mistake,
            phase: Phase::Idle,
            out: VecDeque::new(),
            next_id: 0,
            calls: BTreeMap::new(),
            leaders: BTreeMap::new(),
            counts: BTreeMap::new(),
            topic_ids: BTreeMap::new(),
            metadata_wanted: true,
            coordinator: None,
            member_id: String::new(),
            generation: -1,
            owned: BTreeMap::new(),
            epoch: 0,
            processed: BTreeMap::new(),
            committed: BTreeMap::new(),
            fetching: Vec::new(),
            backoff_until: None,
            heartbeat_at: None,
            commit_at: None,
            finished: false,
        }
    }

    pub(crate) fn under(&self) -> Under {
        Under { member_id: self.member_id.clone(), generation: self.generation }
    }

    pub(crate) fn event(&mut self, e: MemberEvent) {
        self.out.push_back(MemberOutput::Event(e));
    }

    pub(crate) fn send(
        &mut self,
        target: Target,
        request: RequestKind,
        timeout_ms: u64,
        call: Call,
    ) {
        self.next_id += 1;
        let id = RequestId(self.next_id);
        self.calls.insert(id, call);
        self.out.push_back(MemberOutput::Send { id, target, request, timeout_ms });
    }

    pub(crate) fn in_flight(&self, f: impl Fn(&Call) -> bool) -> bool {
        self.calls.values().any(f)
    }

    pub(crate) fn backing_off(&self, now: Millis) -> bool {
        self.backoff_until.is_some_and(|t| t > now)
    }

    pub(crate) fn back_off(&mut self, now: Millis) {
        self.backoff_until = Some(now + self.config.retry_backoff_ms.max(1));
    }

    pub(crate) fn lose_coordinator(&mut self, now: Millis, reason: String) {
        if self.coordinator.take().is_some() {
            self.event(MemberEvent::CoordinatorLost { reason });
        }
        self.back_off(now);
    }

    /// Sends whatever the member's state calls for next.
    pub(crate) fn drive(&mut self, now: Millis) {
        if self.finished || self.phase == Phase::Idle {
            return;
        }
        let bootstrap = Target::Broker(self.config.bootstrap_node);
        if self.metadata_wanted && !self.in_flight(|c| matches!(c, Call::Metadata)) {
            let topics = self
                .config
                .topics
                .iter()
                .map(|t| MetadataRequestTopic::default().with_name(Some(TopicName(sb(t)))));
            let req = MetadataRequest::default().with_topics(Some(topics.collect()));
            self.send(
                bootstrap,
                RequestKind::Metadata(req),
                self.config.request_timeout_ms,
                Call::Metadata,
            );
        }
        if self.backing_off(now) || self.counts.is_empty() {
            return;
        }
        let Some(node) = self.coordinator else {
            if !self.in_flight(|c| matches!(c, Call::FindCoordinator)) {
                let req = FindCoordinatorRequest::default()
                    .with_key_type(0)
                    .with_coordinator_keys(vec![sb(&self.config.group_id)]);
                let timeout = self.config.request_timeout_ms;
                self.send(
                    bootstrap,
                    RequestKind::FindCoordinator(req),
                    timeout,
                    Call::FindCoordinator,
                );
            }
            return;
        };
        match self.phase {
            Phase::Joining if !self.in_flight(|c| matches!(c, Call::Join)) => self.join(node),
            Phase::Stable => {
                self.initialise_positions(node);
                self.fetch();
            }
            Phase::Leaving if !self.in_flight(|c| matches!(c, Call::Leave)) => {
                let req = LeaveGroupRequest::default()
                    .with_group_id(GroupId(sb(&self.config.group_id)))
                    .with_members(vec![
                        MemberIdentity::default().with_member_id(sb(&self.member_id))
                    ]);
                let timeout = self.config.request_timeout_ms;
                self.send(
                    Target::Coordinator(node),
                    RequestKind::LeaveGroup(req),
                    timeout,
                    Call::Leave,
                );
            }
            _ => {}
        }
    }

    fn join(&mut self, node: i32) {
        let subscription =
            Subscription { topics: self.config.topics.clone(), ..Default::default() };
        let protocol = JoinGroupRequestProtocol::default()
            .with_name(sb(PROTOCOL))
            .with_metadata(encode_subscription(&subscription));
        let req = JoinGroupRequest::default()
            .with_group_id(GroupId(sb(&self.config.group_id)))
            .with_session_timeout_ms(self.config.session_timeout_ms)
            .with_rebalance_timeout_ms(self.config.rebalance_timeout_ms)
            .with_member_id(sb(&self.member_id))
            .with_group_instance_id(self.config.group_instance_id.as_deref().map(sb))
            .with_protocol_type(sb("consumer"))
            .with_protocols(vec![protocol]);
        // The coordinator holds a JoinGroup for up to the rebalance timeout.
        let timeout = self
            .config
            .request_timeout_ms
            .max(self.config.rebalance_timeout_ms.max(0) as u64 + 5_000);
        self.send(Target::Coordinator(node), RequestKind::JoinGroup(req), timeout, Call::Join);
    }

    /// Asks the committed offset of every owned partition not started yet.
    fn initialise_positions(&mut self, node: i32) {
        let wanted: Vec<TopicPartition> = self
            .owned
            .iter()
            .filter(|(_, o)| o.position.is_none() && !o.initialising)
            .map(|(tp, _)| tp.clone())
            .collect();
        if wanted.is_empty() {
            return;
        }
        let mut topics: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
        for tp in &wanted {
            topics.entry(&tp.topic).or_default().push(tp.partition);
        }
        let topics = topics.into_iter().map(|(t, ps)| {
            OffsetFetchRequestTopics::default()
                .with_name(TopicName(sb(t)))
                .with_partition_indexes(ps)
        });
        let group = OffsetFetchRequestGroup::default()
            .with_group_id(GroupId(sb(&self.config.group_id)))
            .with_topics(Some(topics.collect()));
        let req = OffsetFetchRequest::default().with_groups(vec![group]).with_require_stable(true);
        for tp in &wanted {
            self.owned.get_mut(tp).expect("owned").initialising = true;
        }
        let timeout = self.config.request_timeout_ms;
        let call = Call::OffsetFetch(self.epoch);
        self.send(Target::Coordinator(node), RequestKind::OffsetFetch(req), timeout, call);
    }

    /// One Fetch per partition leader with none in flight, for the started partitions it leads.
    pub(crate) fn fetch(&mut self) {
        let mut by_leader: BTreeMap<i32, Vec<(TopicPartition, i64)>> = BTreeMap::new();
        for (tp, o) in &self.owned {
            if let (Some(position), Some(&leader)) = (o.position, self.leaders.get(tp)) {
                if leader >= 0 && !self.fetching.contains(&leader) {
                    by_leader.entry(leader).or_default().push((tp.clone(), position));
                }
            }
        }
        for (leader, parts) in by_leader {
            let mut topics: Vec<FetchTopic> = Vec::new();
            for (tp, position) in parts {
                let part = FetchPartition::default()
                    .with_partition(tp.partition)
                    .with_fetch_offset(position)
                    .with_partition_max_bytes(1 << 20);
                match topics.last_mut() {
                    Some(t) if t.topic.0.as_str() == &*tp.topic => t.partitions.push(part),
                    _ => {
                        let id = self.topic_id(&tp.topic);
                        let t = FetchTopic::default()
                            .with_topic(TopicName(sb(&tp.topic)))
                            .with_topic_id(id)
                            .with_partitions(vec![part]);
                        topics.push(t);
                    }
                }
            }
            let req = FetchRequest::default()
                .with_max_wait_ms(self.config.fetch_max_wait_ms)
                .with_min_bytes(1)
                .with_max_bytes(50 << 20)
                .with_topics(topics);
            let timeout =
                self.config.request_timeout_ms + self.config.fetch_max_wait_ms.max(0) as u64;
            self.fetching.push(leader);
            self.send(
                Target::Broker(leader),
                RequestKind::Fetch(req),
                timeout,
                Call::Fetch(leader, self.epoch),
            );
        }
    }

    fn topic_id(&self, topic: &str) -> Uuid {
        self.topic_ids.get(topic).copied().unwrap_or_default()
    }

    /// The topic a Fetch answer names, by name (before v13) or by id.
    pub(crate) fn topic_named(&self, name: &str, id: Uuid) -> Option<String> {
        if !name.is_empty() {
            return Some(name.to_string());
        }
        self.topic_ids.iter().find(|(_, &i)| i == id && !id.is_nil()).map(|(t, _)| t.clone())
    }
}

pub(crate) fn sb(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}
