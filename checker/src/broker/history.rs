//! The broker-side rules over a history: its wire stream read as answer logs, one per group the
//! requests named, with the harness's marks taken from the history's events, so that every run
//! judges its coordinator by what it answered exactly as `check-broker` judges a foreign one.
//!
//! Marks: a member's `MemberStarted` starts actor `<member>.<k>` (its `k`-th start, from 0: the
//! name the member shells give their wire entries), its `MemberStopped` stops it; a broker
//! crashed or restarted, or a coordinator moved, is a coordinator change; an expel fault marks
//! the member's incarnation expelled; the liveness phase is the heal; the last event ends the
//! run. Admin clients and misbehaving clients are not
//! members: their exchanges are judged, their lives are not marked.

use std::collections::{BTreeMap, BTreeSet};

use groupsim_history::{EventKind, Fault, History, MemberEvent, WorldEvent};
use groupsim_wire::TopicPartition;

use super::log::{Answer, AnswerLog, Entry, Mark, MaxSize, Protocol, Request};
use super::requests::Excused;
use super::{check_excusing, fetches, BrokerAnomaly, BrokerRule};
use crate::anomaly::{Anomaly, AnomalyClass};

/// An answer log read from a history, with where each of its entries came from.
#[derive(Debug)]
pub struct HistoryLog {
    /// The group its requests named (empty only for requests naming an empty group id, as a
    /// misbehaving client's do; Fetch requests name none and are judged apart).
    pub group: String,
    /// The log.
    pub log: AnswerLog,
    /// Per entry of the log: its index in the wire stream, or the event a mark was read from.
    pub origins: Vec<Origin>,
}

/// Where an entry of a [`HistoryLog`] came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// The wire stream's entry at this index.
    Wire(usize),
    /// The history's event at this index.
    Event(usize),
}

impl BrokerRule {
    /// The checker's anomaly class for this rule broken by a simulated or served coordinator.
    pub fn class(self) -> AnomalyClass {
        match self {
            BrokerRule::SplitAssignment => AnomalyClass::AnswerSplitAssignment,
            BrokerRule::ZombieCommit => AnomalyClass::AnswerZombieCommit,
            BrokerRule::OffsetRegression => AnomalyClass::AnswerOffsetRegression,
            BrokerRule::GenerationRegression => AnomalyClass::AnswerGenerationRegression,
            BrokerRule::MembershipWithoutGeneration => {
                AnomalyClass::AnswerMembershipWithoutGeneration
            }
            BrokerRule::NotConverged => AnomalyClass::AnswerNotConverged,
            BrokerRule::FetchSkip => AnomalyClass::AnswerFetchSkip,
            BrokerRule::FetchRepeat => AnomalyClass::AnswerFetchRepeat,
            BrokerRule::StaleGenerationAccepted => AnomalyClass::AnswerStaleGenerationAccepted,
            BrokerRule::RemovedMemberAccepted => AnomalyClass::AnswerRemovedMemberAccepted,
            BrokerRule::WrongError => AnomalyClass::AnswerWrongError,
            BrokerRule::MalformedAnswer => AnomalyClass::AnswerMalformed,
            BrokerRule::UnknownGenerationSent => AnomalyClass::RequestUnknownGeneration,
            BrokerRule::JoinOwningPartitions => AnomalyClass::RequestJoinOwningPartitions,
            BrokerRule::LapsedSession => AnomalyClass::RequestLapsedSession,
            BrokerRule::NoLeave => AnomalyClass::RequestNoLeave,
            BrokerRule::LiveMemberFenced => AnomalyClass::AnswerLiveMemberFenced,
            BrokerRule::GroupOverMaxSize => AnomalyClass::AnswerGroupOverMaxSize,
        }
    }
}

/// The request's group-less kind: its exchanges go to the log of no group.
fn groupless(request: &Request) -> bool {
    matches!(request, Request::Fetch { .. })
}

/// The history's answer logs: one per group its requests named, in group order. The requests
/// that name no group (Fetch) are judged in place ([`anomalies`]), never copied.
pub fn logs(history: &History) -> Vec<HistoryLog> {
    let wire = history.wire();
    if wire.is_empty() {
        return Vec::new();
    }
    let events = history.events();
    // Partitions per topic, as the run created and grew them.
    let mut topics: BTreeMap<&str, i32> = BTreeMap::new();
    let mut marks: Vec<(usize, Mark, u64)> = Vec::new();
    let mut starts: BTreeMap<&str, u64> = BTreeMap::new();
    let mut actors: BTreeMap<&str, String> = BTreeMap::new();
    let mut observers: BTreeMap<&str, u64> = BTreeMap::new();
    for (i, e) in events.iter().enumerate() {
        let EventKind::World(w) = &e.kind else { continue };
        match w {
            WorldEvent::TopicCreated { topic, partitions }
            | WorldEvent::PartitionsAdded { topic, partitions } => {
                topics.insert(topic, *partitions);
            }
            WorldEvent::MemberStarted { member, .. } => {
                let k = starts.entry(member).or_default();
                let actor = format!("{member}.{k}");
                *k += 1;
                actors.insert(member, actor.clone());
                marks.push((i, Mark::Started(actor), e.at_ms));
            }
            WorldEvent::ObserverStarted { observer, .. } => {
                *observers.entry(observer).or_default() += 1;
            }
            WorldEvent::MemberLeaveRequested { member } => {
                if let Some(actor) = actors.get(member.as_str()) {
                    marks.push((i, Mark::Leaving(actor.clone()), e.at_ms));
                }
            }
            WorldEvent::CloseTimedOut { member }
            | WorldEvent::MemberExited { member, .. }
            | WorldEvent::FaultInjected {
                fault: Fault::MemberCrash { member, .. },
                applied: true,
            } => {
                if let Some(actor) = actors.get(member.as_str()) {
                    marks.push((i, Mark::Killed(actor.clone()), e.at_ms));
                }
            }
            // The simulated worlds name the member; `serve`'s nemesis names the client (the
            // actor itself, `m1.0`).
            WorldEvent::FaultInjected { fault: Fault::ExpelMember { member }, applied: true } => {
                let actor = actors
                    .get(member.as_str())
                    .cloned()
                    .or_else(|| actors.values().any(|a| a == member).then(|| member.clone()));
                if let Some(actor) = actor {
                    marks.push((i, Mark::Expelled(actor), e.at_ms));
                }
            }
            WorldEvent::FaultInjected {
                fault:
                    Fault::HoldResponse { .. }
                    | Fault::ResponseDelay { .. }
                    | Fault::Unresponsive { .. }
                    | Fault::LatencySpike { .. }
                    | Fault::NetworkPartition { .. }
                    | Fault::OneWayPartition { .. },
                applied: true,
            } => marks.push((i, Mark::AnswersHeld, e.at_ms)),
            WorldEvent::MemberStopped { member } => {
                if let Some(actor) = actors.remove(member.as_str()) {
                    marks.push((i, Mark::Stopped(actor), e.at_ms));
                }
            }
            WorldEvent::LivenessPhase { .. } => marks.push((i, Mark::Heal, e.at_ms)),
            WorldEvent::BrokerCrashed { .. }
            | WorldEvent::BrokerRestarted { .. }
            | WorldEvent::CoordinatorMoved { .. } => {
                marks.push((i, Mark::CoordinatorMoved, e.at_ms))
            }
            _ => {}
        }
    }
    if let Some(last) = events.last() {
        marks.push((events.len() - 1, Mark::End, last.at_ms));
    }
    // Each group's entries: marks and wire entries merged in history order (a wire entry
    // recorded after `after` events comes after those events' marks).
    // Each group's actors: a member's start and stop are marked in the logs of the groups it
    // spoke to.
    let mut groups: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    let mut max_size = None;
    for w in wire {
        let (group, request, actor) = match &w.wire {
            Entry::Exchange(x) => (x.group.as_str(), &x.request, x.actor.as_str()),
            Entry::Unanswered { group, call, actor, .. } => (group.as_str(), call, actor.as_str()),
            Entry::Mark { mark: Mark::GroupMaxSize { classic, consumer }, .. } => {
                max_size = Some(MaxSize { classic: *classic, consumer: *consumer });
                continue;
            }
            Entry::Mark { .. } => continue,
        };
        if !groupless(request) {
            groups.entry(group).or_default().insert(actor);
        }
    }
    let mut built = Vec::new();
    for (group, actors) in groups {
        let ours = |m: &(usize, Mark, u64)| match &m.1 {
            Mark::Started(a)
            | Mark::Stopped(a)
            | Mark::Leaving(a)
            | Mark::Killed(a)
            | Mark::Expelled(a) => actors.contains(a.as_str()),
            _ => true,
        };
        let mut log = AnswerLog::new(Protocol::Classic, Vec::new());
        log.max_size = max_size;
        let mut origins = Vec::new();
        let mut next_mark = 0;
        let mut consumed: BTreeSet<&str> = BTreeSet::new();
        for (k, w) in wire.iter().enumerate() {
            let (g, request) = match &w.wire {
                Entry::Exchange(x) => (x.group.as_str(), &x.request),
                Entry::Unanswered { group, call, .. } => (group.as_str(), call),
                Entry::Mark { .. } => continue,
            };
            if groupless(request) || g != group {
                continue;
            }
            while next_mark < marks.len() && marks[next_mark].0 < w.after {
                if ours(&marks[next_mark]) {
                    push_mark(&mut log, &mut origins, &marks[next_mark]);
                }
                next_mark += 1;
            }
            if let Entry::Exchange(x) = &w.wire {
                if matches!(x.request, Request::ConsumerHeartbeat { .. }) {
                    log.protocol = Protocol::Consumer;
                }
                if let Answer::Sync { assignment, .. } = &x.answer {
                    consumed.extend(assignment.iter().map(|tp| &*tp.topic));
                }
                if let Answer::ConsumerHeartbeat { assignment: Some(a), .. } = &x.answer {
                    consumed.extend(a.iter().map(|tp| &*tp.topic));
                }
            }
            log.entries.push(w.wire.clone());
            origins.push(Origin::Wire(k));
        }
        while next_mark < marks.len() {
            if ours(&marks[next_mark]) {
                push_mark(&mut log, &mut origins, &marks[next_mark]);
            }
            next_mark += 1;
        }
        log.partitions = consumed
            .iter()
            .flat_map(|t| {
                let n = topics.get(t).copied().unwrap_or(0);
                (0..n).map(|p| TopicPartition::new(*t, p))
            })
            .collect();
        built.push(HistoryLog { group: group.to_string(), log, origins });
    }
    built
}

fn push_mark(log: &mut AnswerLog, origins: &mut Vec<Origin>, mark: &(usize, Mark, u64)) {
    log.entries.push(Entry::Mark { at_ms: mark.2, mark: mark.1.clone() });
    origins.push(Origin::Event(mark.0));
}

/// Every broker-side anomaly the history's wire stream proves, as the checker's anomalies:
/// each names the exchanges that prove it (and the events its marks came from).
pub fn anomalies(history: &History) -> Vec<Anomaly> {
    // A misbehaving client declares each request it breaks the protocol with, by case name: the
    // client rules excuse those and nothing else.
    let mut excused = Excused::new();
    for e in history.events() {
        if let EventKind::Member { member, event: MemberEvent::InvalidRequestAnswered { .. } } =
            &e.kind
        {
            excused.cases.insert((member.clone(), e.at_ms));
            excused.members.insert(member.clone());
        }
    }
    let mut found = Vec::new();
    for hl in logs(history) {
        // Convergence is judged by the liveness rule (`stuck`, or the black-box checker's), which
        // reads the coordinator's own record of the group and knows the hazards Kafka allows;
        // the answers' not-converged is for brokers that leave no record (check-broker). Real
        // clients' runs end with requests in flight, whose answers the wire cannot wait for.
        let judged = check_excusing(&hl.log, &excused);
        for b in judged.into_iter().filter(|b| b.rule != BrokerRule::NotConverged) {
            found.push(to_anomaly(&hl, b));
        }
    }
    // Fetch answers are the partition logs' business, not a group's: judged where they lie.
    let fetched = history.wire().iter().enumerate().filter_map(|(i, w)| match &w.wire {
        Entry::Exchange(x) if groupless(&x.request) => Some((i, x)),
        _ => None,
    });
    for b in fetches::check_exchanges(fetched) {
        let message = b.summary;
        let anomaly = Anomaly::new(b.rule.class(), b.partition.as_ref(), b.at_ms, message, vec![]);
        found.push(anomaly.with_exchanges(b.evidence));
    }
    found.sort_by_key(|a| (a.at_ms, a.class));
    found
}

fn to_anomaly(hl: &HistoryLog, b: BrokerAnomaly) -> Anomaly {
    let (mut events, mut exchanges) = (Vec::new(), Vec::new());
    for &i in &b.evidence {
        match hl.origins.get(i) {
            Some(Origin::Wire(k)) => exchanges.push(*k),
            Some(Origin::Event(k)) => events.push(*k),
            None => {}
        }
    }
    let message = match hl.group.as_str() {
        "" => b.summary,
        group => format!("group {group}: {}", b.summary),
    };
    Anomaly::new(b.rule.class(), b.partition.as_ref(), b.at_ms, message, events)
        .with_exchanges(exchanges)
}

#[cfg(test)]
mod tests {
    use groupsim_history::wire::Exchange;
    use groupsim_history::EventKind;

    use super::*;
    use crate::broker::log::NONE;

    fn tp(p: i32) -> TopicPartition {
        TopicPartition::new("t", p)
    }

    fn join(actor: &str, at: u64, id: &str, members: &[&str]) -> Entry {
        Entry::Exchange(Exchange {
            actor: actor.into(),
            sent_ms: at,
            answered_ms: at + 1,
            request: Request::Join {
                member_id: String::new(),
                instance: None,
                session_timeout_ms: None,
                rebalance_timeout_ms: None,
                version: None,
            },
            answer: Answer::Join {
                error: NONE,
                generation: 1,
                member_id: id.into(),
                leader: "a".into(),
                members: members.iter().map(|m| m.to_string()).collect(),
            },
            group: "g".into(),
            node: Some(0),
            conn: None,
        })
    }

    fn sync(actor: &str, at: u64, id: &str, parts: &[i32]) -> Entry {
        Entry::Exchange(Exchange {
            actor: actor.into(),
            sent_ms: at,
            answered_ms: at + 1,
            request: Request::Sync { member_id: id.into(), generation: 1, instance: None },
            answer: Answer::Sync {
                error: NONE,
                assignment: parts.iter().map(|&p| tp(p)).collect(),
            },
            group: "g".into(),
            node: Some(0),
            conn: None,
        })
    }

    fn started(h: &mut History, at: u64, member: &str) {
        let (member, group, host) = (member.into(), "g".into(), "client-0".into());
        h.world(at, WorldEvent::MemberStarted { member, group, host });
    }

    /// Two members, the second restarted; generation 1 gives partition 0 to both.
    fn history() -> History {
        let mut h = History::new();
        h.world(0, WorldEvent::TopicCreated { topic: "t".into(), partitions: 2 });
        started(&mut h, 0, "m0");
        started(&mut h, 0, "m1");
        h.world(5, WorldEvent::MemberStopped { member: "m1".into() });
        started(&mut h, 6, "m1");
        h.record_wire(join("m0.0", 8, "a", &["a", "b"]));
        h.record_wire(join("m1.1", 8, "b", &[]));
        h.record_wire(sync("m0.0", 10, "a", &[0]));
        h.record_wire(sync("m1.1", 10, "b", &[0, 1]));
        h.world(20, WorldEvent::LivenessPhase { deadline_ms: 100, stall_ms: None });
        h.record(30, EventKind::World(WorldEvent::RunEnded));
        h
    }

    #[test]
    fn a_history_reads_as_its_groups_logs_with_marks_from_its_events() {
        let logs = logs(&history());
        assert_eq!(logs.len(), 1);
        let hl = &logs[0];
        assert_eq!(hl.group, "g");
        let marks: Vec<&Mark> = hl
            .log
            .entries
            .iter()
            .filter_map(|e| match e {
                Entry::Mark { mark, .. } => Some(mark),
                _ => None,
            })
            .collect();
        // m1's first start never spoke to the group: only the actors that did are marked.
        let expected =
            [Mark::Started("m0.0".into()), Mark::Started("m1.1".into()), Mark::Heal, Mark::End];
        assert_eq!(marks, expected.iter().collect::<Vec<_>>());
        assert_eq!(hl.log.partitions, vec![tp(0), tp(1)]);
        assert_eq!(
            hl.origins[2],
            Origin::Wire(0),
            "the wire entries follow the events before them"
        );
    }

    /// The simulated worlds' expel fault names the member, `serve`'s the client (the actor):
    /// either is the actor's expel mark (check-client's kafka-python seed 24 read an expel by
    /// `serve` as no expel, and its refused heartbeat as a live member fenced).
    #[test]
    fn an_expel_naming_the_member_or_the_client_marks_the_actor() {
        for named in ["m0", "m0.0"] {
            let mut h = history();
            let fault = Fault::ExpelMember { member: named.into() };
            h.world(12, WorldEvent::FaultInjected { fault, applied: true });
            let logs = logs(&h);
            let expelled =
                logs[0].log.entries.iter().any(
                    |e| matches!(e, Entry::Mark { mark: Mark::Expelled(a), .. } if a == "m0.0"),
                );
            assert!(expelled, "an expel naming {named} marks m0.0");
        }
    }

    /// The limits mark the worlds and `serve` record reaches every group's log, and the rule
    /// over it judges the generation the leader was told of (two members, past a maximum of 1).
    #[test]
    fn the_group_size_limits_of_the_wire_stream_reach_every_log() {
        let mut h = history();
        assert_eq!(logs(&h)[0].log.max_size, None);
        let mark = Mark::GroupMaxSize { classic: 1, consumer: i32::MAX };
        h.record_wire(Entry::Mark { at_ms: 0, mark });
        let logs = logs(&h);
        assert_eq!(logs[0].log.max_size, Some(MaxSize { classic: 1, consumer: i32::MAX }));
        let classes: Vec<AnomalyClass> = anomalies(&h).iter().map(|a| a.class).collect();
        assert!(classes.contains(&AnomalyClass::AnswerGroupOverMaxSize), "{classes:?}");
    }

    #[test]
    fn an_answer_rule_broken_in_a_history_is_an_anomaly_with_its_exchanges() {
        let found = anomalies(&history());
        let classes: Vec<AnomalyClass> = found.iter().map(|a| a.class).collect();
        // The end shows the partition held twice too, but a history's convergence is the
        // liveness rule's to judge.
        let expected = [AnomalyClass::AnswerSplitAssignment];
        assert_eq!(classes, expected, "{found:?}");
        assert_eq!(found[0].exchanges, vec![2, 3]);
        assert!(found[0].message.starts_with("group g: "), "{}", found[0].message);
        let verdict = crate::check(&history());
        assert!(verdict.anomalies.iter().any(|a| a.class == AnomalyClass::AnswerSplitAssignment));
    }
}
