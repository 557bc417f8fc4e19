//! An admin client watching the group, as `kafka-consumer-groups.sh --describe` and
//! `--list` do while a deployment runs: every cycle it learns the brokers (Metadata), finds the
//! group's coordinator (FindCoordinator), describes the group and lists the groups of every
//! broker. Its answers are history events, so the checker can hold what the coordinator tells
//! tools against what the group really was.
//!
//! Describing follows Kafka 4's admin client (KIP-1043): ConsumerGroupDescribe first; a group
//! that is not a consumer group (GROUP_ID_NOT_FOUND) is described again with DescribeGroups.
//! NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE and a failed request make it find the coordinator
//! again next cycle. With each describe it fetches every committed offset of the group
//! (OffsetFetch naming no topics), as `--describe` does. It joins no group and never commits.

use std::collections::BTreeMap;

use groupsim_wire::consumer_protocol::decode_assignment;
use groupsim_wire::error_codes::{self as codes, error_name};
use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestGroup;
use kafka_protocol::messages::{
    ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse, DescribeGroupsRequest,
    DescribeGroupsResponse, GroupId, ListGroupsRequest, ListGroupsResponse, MetadataRequest,
    OffsetFetchRequest, RequestKind, ResponseKind,
};
use rand::{RngExt, SeedableRng};

use crate::compat::sb;
use crate::event::{DescribedMember, ListedGroup};
use crate::shared::discovery::Discovery;
use crate::shared::outputs::Outputs;
use crate::shared::positions::offset_fetch_answers;
use crate::{probes, TopicPartition};
use crate::{
    MemberConfig, MemberEvent, MemberFault, MemberOutput, Millis, RequestFailure, RequestId, Target,
};

/// Shortest and longest pause between two cycles.
const CYCLE_MS: (u64, u64) = (400, 1_500);

/// What a request in flight was, and when it was sent.
#[derive(Clone, Debug)]
enum Asked {
    Metadata,
    FindCoordinator,
    ConsumerGroupDescribe { node: i32, sent_at: Millis },
    DescribeGroups { node: i32, sent_at: Millis },
    ListGroups { node: i32, sent_at: Millis },
    OffsetFetch { node: i32, sent_at: Millis },
}

/// The admin client (see the module docs).
#[derive(Debug)]
pub struct AdminObserver {
    config: MemberConfig,
    rng: rand_chacha::ChaCha8Rng,
    out: Outputs,
    /// The brokers the last Metadata answer named (the bootstrap broker until then).
    brokers: Vec<i32>,
    coordinator: Option<i32>,
    in_flight: BTreeMap<RequestId, Asked>,
    next_cycle: Option<Millis>,
    finished: bool,
}

impl AdminObserver {
    /// An observer of `config.group_id`, first reaching `config.bootstrap_node`.
    pub fn new(config: MemberConfig, seed: u64) -> Self {
        Self {
            brokers: vec![config.bootstrap_node],
            config,
            rng: rand_chacha::ChaCha8Rng::seed_from_u64(seed),
            out: Outputs::default(),
            coordinator: None,
            in_flight: BTreeMap::new(),
            next_cycle: None,
            finished: false,
        }
    }

    /// Starts its first cycle at `now`.
    pub fn start(&mut self, now: Millis) {
        self.cycle(now);
    }

    /// Stops for good (an admin client has no group to leave).
    pub fn leave(&mut self, _now: Millis) {
        self.finished = true;
        self.next_cycle = None;
    }

    /// A fault aimed at a member's processing: an admin client has none to slow.
    pub fn inject(&mut self, _now: Millis, _fault: MemberFault) {}

    /// Nothing pending to heal.
    pub fn heal_pending_faults(&mut self) {}

    /// An admin client has no member id.
    pub fn member_id(&self) -> &str {
        ""
    }

    /// Whether it stopped for good.
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// When the next cycle is due.
    pub fn poll_timeout(&self) -> Option<Millis> {
        self.next_cycle
    }

    /// Starts the cycle that is due.
    pub fn handle_timeout(&mut self, now: Millis) {
        if self.next_cycle.is_some_and(|t| t <= now) {
            self.cycle(now);
        }
    }

    /// The next output for the driver.
    pub fn poll_output(&mut self) -> Option<MemberOutput> {
        self.out.pop()
    }

    fn send(&mut self, target: Target, request: RequestKind, asked: Asked) {
        let id = self.out.send(target, request, self.config.request_timeout_ms);
        self.in_flight.insert(id, asked);
    }

    /// One cycle: Metadata, then FindCoordinator or (coordinator known) the describe, and
    /// ListGroups to every known broker; the next cycle is drawn.
    fn cycle(&mut self, now: Millis) {
        if self.finished {
            return;
        }
        let bootstrap = self.brokers[self.rng.random_range(0..self.brokers.len())];
        let meta = MetadataRequest::default().with_topics(Some(Vec::new()));
        self.send(Target::Broker(bootstrap), RequestKind::Metadata(meta), Asked::Metadata);
        match self.coordinator {
            None => self.find_coordinator(bootstrap),
            Some(node) => self.describe(now, node),
        }
        for node in self.brokers.clone() {
            let req = ListGroupsRequest::default();
            let asked = Asked::ListGroups { node, sent_at: now };
            self.send(Target::Broker(node), RequestKind::ListGroups(req), asked);
        }
        self.next_cycle = Some(now + self.rng.random_range(CYCLE_MS.0..=CYCLE_MS.1));
    }

    fn find_coordinator(&mut self, node: i32) {
        let req = Discovery::request(&self.config.group_id);
        self.send(Target::Broker(node), RequestKind::FindCoordinator(req), Asked::FindCoordinator);
    }

    fn describe(&mut self, now: Millis, node: i32) {
        let req = ConsumerGroupDescribeRequest::default()
            .with_group_ids(vec![GroupId(sb(&self.config.group_id))]);
        let asked = Asked::ConsumerGroupDescribe { node, sent_at: now };
        self.send(Target::Coordinator(node), RequestKind::ConsumerGroupDescribe(req), asked);
        // Every committed offset of the group (no topics named), as `--describe` shows them.
        let req =
            OffsetFetchRequest::default().with_groups(vec![OffsetFetchRequestGroup::default()
                .with_group_id(GroupId(sb(&self.config.group_id)))
                .with_topics(None)]);
        let asked = Asked::OffsetFetch { node, sent_at: now };
        self.send(Target::Coordinator(node), RequestKind::OffsetFetch(req), asked);
    }

    /// The answer to request `id`.
    pub fn handle_response(&mut self, now: Millis, id: RequestId, response: ResponseKind) {
        let Some(asked) = self.in_flight.remove(&id) else { return };
        match (asked, response) {
            (Asked::Metadata, ResponseKind::Metadata(r)) => {
                let mut brokers: Vec<i32> = r.brokers.iter().map(|b| b.node_id.0).collect();
                brokers.sort_unstable();
                if !brokers.is_empty() {
                    self.brokers = brokers;
                }
            }
            (Asked::FindCoordinator, ResponseKind::FindCoordinator(r)) => {
                if let Some(node) = Discovery::read_answer(&r, &self.config.group_id) {
                    self.coordinator = Some(node);
                    self.describe(now, node);
                }
            }
            (
                Asked::ConsumerGroupDescribe { node, sent_at },
                ResponseKind::ConsumerGroupDescribe(r),
            ) => self.consumer_group_described(now, node, sent_at, r),
            (Asked::DescribeGroups { node, sent_at }, ResponseKind::DescribeGroups(r)) => {
                self.classic_group_described(node, sent_at, r)
            }
            (Asked::ListGroups { node, sent_at }, ResponseKind::ListGroups(r)) => {
                self.listed(node, sent_at, r)
            }
            (Asked::OffsetFetch { node, sent_at }, ResponseKind::OffsetFetch(r)) => {
                let (code, answers) = offset_fetch_answers(&r, &self.config.group_id);
                self.forgets_coordinator(code);
                let offsets = answers
                    .into_iter()
                    .filter(|(_, (offset, error))| *error == codes::NONE && *offset >= 0)
                    .map(|(tp, (offset, _))| (tp, offset))
                    .collect();
                let error = error(code);
                self.out.emit(MemberEvent::OffsetsFetched {
                    node_id: node,
                    sent_at,
                    error,
                    offsets,
                });
            }
            _ => self.coordinator = None,
        }
    }

    /// Request `id` got no answer: the coordinator is found again next cycle.
    pub fn handle_failure(&mut self, _now: Millis, id: RequestId, _failure: RequestFailure) {
        if let Some(asked) = self.in_flight.remove(&id) {
            if !matches!(asked, Asked::Metadata | Asked::ListGroups { .. }) {
                self.coordinator = None;
            }
        }
    }

    /// When `code` says the coordinator is elsewhere or not ready, it is found again next cycle.
    fn forgets_coordinator(&mut self, code: i16) {
        if code == codes::NOT_COORDINATOR || code == codes::COORDINATOR_NOT_AVAILABLE {
            self.coordinator = None;
        }
    }

    fn consumer_group_described(
        &mut self,
        now: Millis,
        node: i32,
        sent_at: Millis,
        r: ConsumerGroupDescribeResponse,
    ) {
        let Some(g) = r.groups.into_iter().find(|g| g.group_id.as_str() == self.config.group_id)
        else {
            return;
        };
        if g.error_code == codes::GROUP_ID_NOT_FOUND {
            // Not a consumer group (or none at all): describe it as a classic group.
            probes::ADMIN_DESCRIBE_FALLBACK.hit();
            let req = DescribeGroupsRequest::default()
                .with_groups(vec![GroupId(sb(&self.config.group_id))]);
            let asked = Asked::DescribeGroups { node, sent_at: now };
            self.send(Target::Coordinator(node), RequestKind::DescribeGroups(req), asked);
            return;
        }
        self.forgets_coordinator(g.error_code);
        let members = g
            .members
            .iter()
            .map(|m| DescribedMember {
                member_id: m.member_id.to_string(),
                instance_id: m.instance_id.as_ref().map(|s| s.to_string()),
                partitions: Some(sorted(m.assignment.topic_partitions.iter().flat_map(|t| {
                    t.partitions.iter().map(|&p| TopicPartition::new(t.topic_name.0.to_string(), p))
                }))),
                epoch: Some(m.member_epoch),
            })
            .collect();
        self.out.emit(MemberEvent::GroupDescribed {
            node_id: node,
            sent_at,
            api: "ConsumerGroupDescribe".into(),
            error: error(g.error_code),
            state: g.group_state.to_string(),
            epoch: (g.error_code == codes::NONE).then_some(g.group_epoch),
            members,
        });
    }

    fn classic_group_described(&mut self, node: i32, sent_at: Millis, r: DescribeGroupsResponse) {
        let Some(g) = r.groups.into_iter().find(|g| g.group_id.as_str() == self.config.group_id)
        else {
            return;
        };
        self.forgets_coordinator(g.error_code);
        let members = g
            .members
            .iter()
            .map(|m| DescribedMember {
                member_id: m.member_id.to_string(),
                instance_id: m.group_instance_id.as_ref().map(|s| s.to_string()),
                // Kafka shows assignments only in a Stable group; elsewhere they are empty.
                partitions: (!m.member_assignment.is_empty()).then(|| {
                    decode_assignment(&m.member_assignment)
                        .map(|a| sorted(a.partitions))
                        .unwrap_or_default()
                }),
                epoch: None,
            })
            .collect();
        self.out.emit(MemberEvent::GroupDescribed {
            node_id: node,
            sent_at,
            api: "DescribeGroups".into(),
            error: error(g.error_code),
            state: g.group_state.to_string(),
            epoch: None,
            members,
        });
    }

    fn listed(&mut self, node: i32, sent_at: Millis, r: ListGroupsResponse) {
        let mut groups: Vec<ListedGroup> = r
            .groups
            .iter()
            .map(|g| ListedGroup {
                group: g.group_id.to_string(),
                state: g.group_state.to_string(),
                group_type: g.group_type.to_string(),
            })
            .collect();
        groups.sort_by(|a, b| a.group.cmp(&b.group));
        self.out.emit(MemberEvent::GroupsListed {
            node_id: node,
            sent_at,
            error: error(r.error_code),
            groups,
        });
    }
}

fn sorted(parts: impl IntoIterator<Item = TopicPartition>) -> Vec<TopicPartition> {
    let mut v: Vec<TopicPartition> = parts.into_iter().collect();
    v.sort();
    v
}

fn error(code: i16) -> Option<String> {
    (code != codes::NONE).then(|| error_name(code))
}

#[cfg(test)]
mod tests {
    use groupsim_wire::consumer_protocol::{encode_assignment, Assignment};
    use kafka_protocol::messages::consumer_group_describe_response::DescribedGroup as CgGroup;
    use kafka_protocol::messages::describe_groups_response::{
        DescribedGroup, DescribedGroupMember,
    };
    use kafka_protocol::messages::find_coordinator_response::Coordinator;
    use kafka_protocol::messages::{BrokerId, FindCoordinatorResponse};

    use super::*;

    fn observer() -> AdminObserver {
        let mut config = MemberConfig::new("g", "a0", vec!["t".into()]);
        config.admin_observer = true;
        AdminObserver::new(config, 7)
    }

    /// Drains the outputs: the requests (id, target, API name) and the events.
    fn drain(o: &mut AdminObserver) -> (Vec<(RequestId, Target, &'static str)>, Vec<MemberEvent>) {
        let (mut sent, mut events) = (Vec::new(), Vec::new());
        while let Some(out) = o.poll_output() {
            match out {
                MemberOutput::Send { id, target, request, .. } => {
                    let name = match request {
                        RequestKind::Metadata(_) => "Metadata",
                        RequestKind::FindCoordinator(_) => "FindCoordinator",
                        RequestKind::ConsumerGroupDescribe(_) => "ConsumerGroupDescribe",
                        RequestKind::DescribeGroups(_) => "DescribeGroups",
                        RequestKind::ListGroups(_) => "ListGroups",
                        _ => "other",
                    };
                    sent.push((id, target, name));
                }
                MemberOutput::Event(e) => events.push(e),
                MemberOutput::Close(_) => {}
            }
        }
        (sent, events)
    }

    fn id_of(sent: &[(RequestId, Target, &str)], api: &str) -> RequestId {
        sent.iter().find(|s| s.2 == api).unwrap_or_else(|| panic!("no {api} in {sent:?}")).0
    }

    #[test]
    fn describes_a_classic_group_through_the_fallback_and_reads_its_assignment() {
        let mut o = observer();
        o.start(0);
        let (sent, _) = drain(&mut o);
        let apis: Vec<&str> = sent.iter().map(|s| s.2).collect();
        assert_eq!(apis, ["Metadata", "FindCoordinator", "ListGroups"]);
        let found =
            FindCoordinatorResponse::default().with_coordinators(vec![Coordinator::default()
                .with_key(sb("g"))
                .with_node_id(BrokerId(2))]);
        o.handle_response(5, id_of(&sent, "FindCoordinator"), ResponseKind::FindCoordinator(found));
        let (sent, _) = drain(&mut o);
        assert_eq!(sent[0].1, Target::Coordinator(2));
        let not_consumer =
            ConsumerGroupDescribeResponse::default().with_groups(vec![CgGroup::default()
                .with_group_id(GroupId(sb("g")))
                .with_error_code(codes::GROUP_ID_NOT_FOUND)]);
        let cg = id_of(&sent, "ConsumerGroupDescribe");
        o.handle_response(9, cg, ResponseKind::ConsumerGroupDescribe(not_consumer));
        let (sent, events) = drain(&mut o);
        assert!(events.is_empty(), "the fallback is not an answer: {events:?}");
        let tp = TopicPartition::new("t", 3);
        let bytes =
            encode_assignment(&Assignment { partitions: vec![tp.clone()], user_data: None });
        let member =
            DescribedGroupMember::default().with_member_id(sb("m-1")).with_member_assignment(bytes);
        let described =
            DescribeGroupsResponse::default().with_groups(vec![DescribedGroup::default()
                .with_group_id(GroupId(sb("g")))
                .with_group_state(sb("Stable"))
                .with_members(vec![member])]);
        o.handle_response(
            12,
            id_of(&sent, "DescribeGroups"),
            ResponseKind::DescribeGroups(described),
        );
        let (_, events) = drain(&mut o);
        let [MemberEvent::GroupDescribed { node_id, sent_at, api, state, members, .. }] =
            &events[..]
        else {
            panic!("one describe answer expected: {events:?}")
        };
        assert_eq!(
            (*node_id, *sent_at, api.as_str(), state.as_str()),
            (2, 9, "DescribeGroups", "Stable")
        );
        assert_eq!(members[0].partitions, Some(vec![tp]));
    }

    #[test]
    fn not_coordinator_makes_it_find_the_coordinator_again_next_cycle() {
        let mut o = observer();
        o.coordinator = Some(1);
        o.start(0);
        let (sent, _) = drain(&mut o);
        let moved = ConsumerGroupDescribeResponse::default().with_groups(vec![CgGroup::default()
            .with_group_id(GroupId(sb("g")))
            .with_error_code(codes::NOT_COORDINATOR)]);
        let cg = id_of(&sent, "ConsumerGroupDescribe");
        o.handle_response(3, cg, ResponseKind::ConsumerGroupDescribe(moved));
        let (_, events) = drain(&mut o);
        assert!(
            matches!(&events[..], [MemberEvent::GroupDescribed { error: Some(e), .. }] if e == "NOT_COORDINATOR")
        );
        let next = o.poll_timeout().expect("a next cycle");
        assert!((CYCLE_MS.0..=CYCLE_MS.1).contains(&next));
        o.handle_timeout(next);
        let (sent, _) = drain(&mut o);
        assert!(sent.iter().any(|s| s.2 == "FindCoordinator"), "{sent:?}");
    }
}
