//! The observer: a client of the harness's own that reads the group's committed offsets
//! (OffsetFetch at the group's coordinator) throughout the run and writes what it was answered
//! into the answer log as actor `observer`, so the commit rules see the committed offsets from
//! outside the members too. It also probes the coordinator with stale commits: once the log
//! shows a member id and generation (member epoch) over, it commits the offsets it just read as
//! that member once, which a correct coordinator refuses. It reconnects (and finds the
//! coordinator again) after any failure.

use std::rc::Rc;
use std::time::Duration;

use std::collections::{BTreeMap, BTreeSet};

use groupsim_checker::broker::{Answer, AnswerLog, Entry, Exchange, Request};
use groupsim_wire::TopicPartition;
use kafka_protocol::messages::find_coordinator_request::FindCoordinatorRequest;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopics,
};
use kafka_protocol::messages::{
    GroupId, OffsetCommitRequest, OffsetFetchRequest, RequestKind, ResponseKind, TopicName,
};
use kafka_protocol::protocol::StrBytes;

use super::admin::Admin;
use super::host::Shared;

/// Kafka's NOT_COORDINATOR error code.
const NOT_COORDINATOR: i16 = 16;

/// How often the observer reads the committed offsets.
const EVERY: Duration = Duration::from_millis(400);

/// Reads `group`'s committed offsets of `partitions` until the task is dropped.
pub async fn observe(
    shared: Rc<Shared>,
    bootstrap: String,
    nodes: std::collections::BTreeMap<i32, String>,
    group: String,
    partitions: Vec<TopicPartition>,
) {
    let mut probed = BTreeSet::new();
    loop {
        let session = session(&shared, &bootstrap, &nodes, &group, &partitions, &mut probed);
        if let Err(e) = session.await {
            tracing::debug!(error = %e, "observer reconnects");
        }
        tokio::time::sleep(EVERY).await;
    }
}

async fn session(
    shared: &Shared,
    bootstrap: &str,
    nodes: &std::collections::BTreeMap<i32, String>,
    group: &str,
    partitions: &[TopicPartition],
    probed: &mut BTreeSet<(String, i32)>,
) -> Result<(), super::error::CheckBrokerError> {
    let mut admin = Admin::connect(bootstrap).await?;
    let find = FindCoordinatorRequest::default()
        .with_coordinator_keys(vec![StrBytes::from_string(group.into())]);
    let ResponseKind::FindCoordinator(found) =
        admin.call("FindCoordinator", RequestKind::FindCoordinator(find)).await?
    else {
        return Ok(());
    };
    let node = match found.coordinators.first() {
        Some(c) if c.error_code == 0 => c.node_id.0,
        Some(_) => return Ok(()),
        None if found.error_code == 0 => found.node_id.0,
        None => return Ok(()),
    };
    let Some(addr) = nodes.get(&node) else { return Ok(()) };
    let mut admin = Admin::connect(addr).await?;
    let topic = partitions.first().map(|tp| tp.topic.clone()).unwrap_or_default();
    let indexes: Vec<i32> = partitions.iter().map(|tp| tp.partition).collect();
    loop {
        let request =
            OffsetFetchRequest::default().with_groups(vec![OffsetFetchRequestGroup::default()
                .with_group_id(GroupId(StrBytes::from_string(group.into())))
                .with_member_epoch(-1)
                .with_topics(Some(vec![OffsetFetchRequestTopics::default()
                    .with_name(TopicName(StrBytes::from_string(topic.to_string())))
                    .with_partition_indexes(indexes.clone())]))]);
        let sent_ms = shared.now();
        let answer = admin.call("OffsetFetch", RequestKind::OffsetFetch(request)).await?;
        let answered_ms = shared.now();
        let answer = shared.tap.borrow().summarize_answer(&answer);
        let Some(Answer::OffsetFetch { offsets }) = answer else { return Ok(()) };
        if offsets.iter().any(|(_, _, e)| *e == NOT_COORDINATOR) {
            return Ok(()); // find the coordinator again
        }
        let request = Request::OffsetFetch { partitions: partitions.to_vec() };
        let committed: Vec<(TopicPartition, i64)> = offsets
            .iter()
            .filter(|(_, offset, error)| *error == 0 && *offset >= 0)
            .map(|(tp, offset, _)| (tp.clone(), *offset))
            .collect();
        let answer = Answer::OffsetFetch { offsets };
        let (actor, named) = ("observer".into(), group.to_string());
        let x = Exchange {
            actor,
            sent_ms,
            answered_ms,
            request,
            answer,
            group: named,
            node: None,
            conn: None,
        };
        shared.tap.borrow_mut().push(Entry::Exchange(x));
        let stale = stale_member(shared.tap.borrow().log(), probed);
        if let (Some((member_id, generation)), false) = (stale, committed.is_empty()) {
            probed.insert((member_id.clone(), generation));
            probe(shared, &mut admin, group, &member_id, generation, &committed).await?;
        }
        tokio::time::sleep(EVERY).await;
    }
}

/// A member id and generation (member epoch) the broker has already said are over, not probed
/// yet: classic, a generation a member joined or synced in, once a JoinGroup answer of a later
/// one was read; consumer protocol, the last epoch of a member whose leave was accepted.
fn stale_member(log: &AnswerLog, probed: &BTreeSet<(String, i32)>) -> Option<(String, i32)> {
    let mut newest_generation = i32::MIN;
    let mut synced = Vec::new();
    let mut epochs: BTreeMap<String, i32> = BTreeMap::new();
    let mut left = Vec::new();
    for (_, x) in log.exchanges() {
        match (&x.request, &x.answer) {
            (_, Answer::Join { error: 0, generation, member_id, .. }) => {
                newest_generation = newest_generation.max(*generation);
                synced.push((member_id.clone(), *generation));
            }
            (Request::Sync { member_id, generation, .. }, Answer::Sync { error: 0, .. }) => {
                synced.push((member_id.clone(), *generation))
            }
            (
                Request::ConsumerHeartbeat { epoch: sent, .. },
                Answer::ConsumerHeartbeat { error: 0, member_id, epoch, .. },
            ) => {
                if *sent < 0 {
                    if let Some(&e) = epochs.get(member_id) {
                        left.push((member_id.clone(), e));
                    }
                } else if *epoch > 0 {
                    epochs.insert(member_id.clone(), *epoch);
                }
            }
            _ => {}
        }
    }
    let over = synced.into_iter().filter(|(_, g)| *g < newest_generation);
    over.chain(left).find(|pair| !probed.contains(pair))
}

/// The stale-commit probe: commits offsets already committed (so a broker that wrongly accepts
/// it changes nothing) as `member_id` at `generation`, which the broker has said are over; a
/// correct broker refuses it, and the zombie-commit rule judges the answer.
async fn probe(
    shared: &Shared,
    admin: &mut Admin,
    group: &str,
    member_id: &str,
    generation: i32,
    committed: &[(TopicPartition, i64)],
) -> Result<(), super::error::CheckBrokerError> {
    let mut topics: BTreeMap<String, Vec<OffsetCommitRequestPartition>> = BTreeMap::new();
    for (tp, offset) in committed {
        topics.entry(tp.topic.to_string()).or_default().push(
            OffsetCommitRequestPartition::default()
                .with_partition_index(tp.partition)
                .with_committed_offset(*offset),
        );
    }
    let request = OffsetCommitRequest::default()
        .with_group_id(GroupId(StrBytes::from_string(group.into())))
        .with_generation_id_or_member_epoch(generation)
        .with_member_id(StrBytes::from_string(member_id.into()))
        .with_topics(
            topics
                .into_iter()
                .map(|(name, partitions)| {
                    OffsetCommitRequestTopic::default()
                        .with_name(TopicName(StrBytes::from_string(name)))
                        .with_partitions(partitions)
                })
                .collect(),
        );
    let summary = Request::Commit {
        member_id: member_id.into(),
        generation,
        offsets: committed.to_vec(),
        instance: None,
    };
    let sent_ms = shared.now();
    tracing::debug!(member_id, generation, "stale-commit probe");
    let answer = admin.call("OffsetCommit", RequestKind::OffsetCommit(request)).await;
    let answer = match answer {
        Ok(answer) => answer,
        Err(e) => {
            let (actor, group) = ("observer".into(), group.to_string());
            let entry = Entry::Unanswered { actor, sent_ms, call: summary, group };
            shared.tap.borrow_mut().push(entry);
            return Err(e);
        }
    };
    let answered_ms = shared.now();
    let answer = shared.tap.borrow().summarize_answer(&answer);
    if let Some(answer) = answer {
        let (actor, group) = ("observer".into(), group.to_string());
        let (request, node) = (summary, None);
        let x = Exchange { actor, sent_ms, answered_ms, request, answer, group, node, conn: None };
        shared.tap.borrow_mut().push(Entry::Exchange(x));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use groupsim_checker::broker::Protocol;

    fn x(request: Request, answer: Answer) -> Entry {
        let actor = "m0.0".to_string();
        let group = String::new();
        Entry::Exchange(Exchange {
            actor,
            sent_ms: 1,
            answered_ms: 2,
            request,
            answer,
            group,
            node: None,
            conn: None,
        })
    }

    fn join(generation: i32) -> Entry {
        let answer = Answer::Join {
            error: 0,
            generation,
            member_id: "a".into(),
            leader: "a".into(),
            members: Vec::new(),
        };
        x(
            Request::Join {
                member_id: "a".into(),
                instance: None,
                session_timeout_ms: None,
                rebalance_timeout_ms: None,
                version: None,
            },
            answer,
        )
    }

    fn sync(member_id: &str, generation: i32) -> Entry {
        let request = Request::Sync { member_id: member_id.into(), generation, instance: None };
        x(request, Answer::Sync { error: 0, assignment: Vec::new() })
    }

    #[test]
    fn a_generation_is_probed_once_a_later_one_was_answered_and_only_once() {
        let mut log = AnswerLog::new(Protocol::Classic, Vec::new());
        log.entries = vec![join(1), sync("a", 1), sync("b", 1)];
        let mut probed = BTreeSet::new();
        assert_eq!(stale_member(&log, &probed), None, "generation 1 is current");
        log.entries.push(join(2));
        let first = stale_member(&log, &probed).expect("generation 1 is over");
        assert_eq!(first, ("a".to_string(), 1), "joined it first");
        probed.insert(first);
        assert_eq!(stale_member(&log, &probed), Some(("b".to_string(), 1)));
        probed.insert(("b".to_string(), 1));
        assert_eq!(stale_member(&log, &probed), None, "each pair once, the current one never");
    }

    #[test]
    fn a_consumer_member_is_probed_at_its_last_epoch_once_its_leave_was_accepted() {
        let heartbeat = |sent: i32, epoch: i32| {
            let request = Request::ConsumerHeartbeat {
                member_id: "a".into(),
                epoch: sent,
                owned: None,
                instance: None,
            };
            let answer = Answer::ConsumerHeartbeat {
                error: 0,
                member_id: "a".into(),
                epoch,
                assignment: None,
                interval_ms: None,
            };
            x(request, answer)
        };
        let mut log = AnswerLog::new(Protocol::Consumer, Vec::new());
        log.entries = vec![heartbeat(0, 3), heartbeat(3, 4)];
        assert_eq!(stale_member(&log, &BTreeSet::new()), None, "still a member");
        log.entries.push(heartbeat(-1, -1));
        assert_eq!(stale_member(&log, &BTreeSet::new()), Some(("a".to_string(), 4)));
    }
}
