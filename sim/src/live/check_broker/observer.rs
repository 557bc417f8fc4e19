//! The observer: a client of the harness's own that reads the group's committed offsets
//! (OffsetFetch at the group's coordinator) throughout the run and writes what it was answered
//! into the answer log as actor `observer`, so the commit rules see the committed offsets from
//! outside the members too. It reconnects (and finds the coordinator again) after any failure.

use std::rc::Rc;
use std::time::Duration;

use groupsim_checker::broker::{Answer, Entry, Exchange, Request};
use groupsim_wire::TopicPartition;
use kafka_protocol::messages::find_coordinator_request::FindCoordinatorRequest;
use kafka_protocol::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopics,
};
use kafka_protocol::messages::{GroupId, OffsetFetchRequest, RequestKind, ResponseKind, TopicName};
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
    loop {
        if let Err(e) = session(&shared, &bootstrap, &nodes, &group, &partitions).await {
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
                    .with_name(TopicName(StrBytes::from_string(topic.clone())))
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
        let answer = Answer::OffsetFetch { offsets };
        let x = Exchange { actor: "observer".into(), sent_ms, answered_ms, request, answer };
        shared.tap.borrow_mut().push(Entry::Exchange(x));
        tokio::time::sleep(EVERY).await;
    }
}
