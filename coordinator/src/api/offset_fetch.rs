//! OffsetFetch (API 9): where a group should resume.
//!
//! Answered in every group state, for known and unknown groups alike (Kafka returns offsets
//! "blindly": the group may use Kafka only for offset storage). Each requested partition gets
//! its committed offset, or -1 when nothing was committed; a null topic list (v2+) asks for
//! every committed partition. v1–7 name one group at the top level; v8+ batch several groups.
//! A group whose offsets partition is loading gets COORDINATOR_LOAD_IN_PROGRESS (per group from
//! v8; v1–7 are refused before they get here), one not owned here NOT_COORDINATOR.
//! From v9 a request names its member: for a KIP-848 consumer group an unknown member gets
//! UNKNOWN_MEMBER_ID and another member epoch STALE_MEMBER_EPOCH (`consumer_group/offsets.rs`);
//! no member id with a negative epoch (an admin client) is served.

use kafka_protocol::messages::offset_fetch_response::{
    OffsetFetchResponseGroup, OffsetFetchResponsePartition, OffsetFetchResponsePartitions,
    OffsetFetchResponseTopic, OffsetFetchResponseTopics,
};
use kafka_protocol::messages::{OffsetFetchRequest, OffsetFetchResponse, TopicName};
use kafka_protocol::protocol::StrBytes;

use crate::coordinator::GroupStatus;
use crate::offsets::OffsetStore;
use crate::{probes, GroupCoordinator, RequestId, TopicPartition};

/// One partition's answer: (offset, leader epoch, metadata), -1/-1/"" when nothing is committed.
type Fetched = (i64, i32, String);

/// The requested partitions (or all committed ones) of a group, grouped by topic in request
/// order (all-committed listings are sorted).
fn fetch(
    store: &OffsetStore,
    group: &str,
    topics: Option<Vec<(String, Vec<i32>)>>,
) -> Vec<(String, Vec<(i32, Fetched)>)> {
    let lookup = |topic: &str, p: i32| -> Fetched {
        match store.get(group, &TopicPartition::new(topic, p)) {
            Some(c) => (c.offset, c.leader_epoch, c.metadata.clone().unwrap_or_default()),
            None => (-1, -1, String::new()),
        }
    };
    match topics {
        Some(topics) => topics
            .into_iter()
            .map(|(t, ps)| {
                let parts = ps.into_iter().map(|p| (p, lookup(&t, p))).collect();
                (t, parts)
            })
            .collect(),
        None => {
            let mut out: Vec<(String, Vec<(i32, Fetched)>)> = Vec::new();
            for (tp, c) in store.group_offsets(group) {
                let f = (c.offset, c.leader_epoch, c.metadata.clone().unwrap_or_default());
                match out.last_mut() {
                    Some((t, parts)) if **t == *tp.topic => parts.push((tp.partition, f)),
                    _ => out.push((tp.topic.to_string(), vec![(tp.partition, f)])),
                }
            }
            out
        }
    }
}

/// The requested topics and partitions of either request layout (v0–7's top-level list or a
/// v8+ group's list), `None` for all committed partitions.
fn requested<T>(
    topics: Option<Vec<T>>,
    parts: impl Fn(T) -> (TopicName, Vec<i32>),
) -> Option<Vec<(String, Vec<i32>)>> {
    topics.map(|ts| {
        ts.into_iter()
            .map(|t| {
                let (name, partitions) = parts(t);
                (name.0.to_string(), partitions)
            })
            .collect()
    })
}

/// Puts fetched offsets (`(topic, [(partition, Fetched)])`) in one of the two response layouts:
/// v0–7 and v8+ use different types (`$topic`, `$partition`) with the same fields.
macro_rules! layout {
    ($fetched:expr, $topic:ident, $partition:ident) => {
        $fetched
            .into_iter()
            .map(|(t, parts)| {
                let partitions = parts
                    .into_iter()
                    .map(|(p, (offset, epoch, md))| {
                        $partition::default()
                            .with_partition_index(p)
                            .with_committed_offset(offset)
                            .with_committed_leader_epoch(epoch)
                            .with_metadata(Some(StrBytes::from_string(md)))
                    })
                    .collect();
                $topic::default()
                    .with_name(TopicName(StrBytes::from_string(t)))
                    .with_partitions(partitions)
            })
            .collect()
    };
}

impl GroupCoordinator {
    /// OffsetFetch: see the module documentation for the rules.
    pub(crate) fn handle_offset_fetch(
        &mut self,
        id: RequestId,
        version: i16,
        req: OffsetFetchRequest,
    ) {
        let response = if version >= 8 {
            let groups = req
                .groups
                .into_iter()
                .map(|g| {
                    let status = self.group_status(g.group_id.as_str());
                    match status {
                        GroupStatus::Loading => probes::OFFSET_FETCH_WHILE_LOADING.hit(),
                        GroupStatus::NotOwned => probes::NOT_COORDINATOR.hit(),
                        GroupStatus::Ready => {}
                    }
                    if let Some(e) = status.batched_error() {
                        return OffsetFetchResponseGroup::default()
                            .with_group_id(g.group_id)
                            .with_error_code(e.code());
                    }
                    // v9+ name the member: a consumer group checks its epoch.
                    let member_check = self
                        .consumer_groups
                        .get(g.group_id.as_str())
                        .map(|cg| cg.validate_offset_fetch(g.member_id.as_deref(), g.member_epoch));
                    if let Some(Err(e)) = member_check {
                        return OffsetFetchResponseGroup::default()
                            .with_group_id(g.group_id)
                            .with_error_code(e.code());
                    }
                    let asked = requested(g.topics, |t| (t.name, t.partition_indexes));
                    let fetched = fetch(&self.offsets, g.group_id.as_str(), asked);
                    let topics =
                        layout!(fetched, OffsetFetchResponseTopics, OffsetFetchResponsePartitions);
                    OffsetFetchResponseGroup::default()
                        .with_group_id(g.group_id)
                        .with_topics(topics)
                })
                .collect();
            OffsetFetchResponse::default().with_groups(groups)
        } else {
            let asked = requested(req.topics, |t| (t.name, t.partition_indexes));
            let fetched = fetch(&self.offsets, req.group_id.as_str(), asked);
            let topics = layout!(fetched, OffsetFetchResponseTopic, OffsetFetchResponsePartition);
            OffsetFetchResponse::default().with_topics(topics)
        };
        self.fx.respond(id, response);
    }
}
