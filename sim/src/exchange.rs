//! What a history's wire stream keeps of a request and of its answer ([`Request`], [`Answer`]):
//! the parts the protocol rules read, taken from the decoded messages. Every recorder of the
//! stream — the member shells of both worlds, `check-broker`'s tap, `serve`'s connections —
//! keeps them through these functions, so the rules read the same thing whoever recorded it.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::{Buf, Bytes};
use groupsim_history::wire::{Answer, Entry, Mark, Request};
use groupsim_wire::consumer_protocol::decode_assignment;
use groupsim_wire::topic_name::shared_topic;
use groupsim_wire::TopicPartition;
use kafka_protocol::messages::{RequestKind, ResponseKind};
use kafka_protocol::records::RecordBatchDecoder;

/// The mark that tells the rules the group size limits the coordinators enforce for the whole
/// run (the worlds and `serve` record it when they start).
pub fn group_max_size(config: &groupsim_coordinator::CoordinatorConfig) -> Entry {
    let (classic, consumer) = (config.group_max_size, config.consumer_group_max_size);
    Entry::Mark { at_ms: 0, mark: Mark::GroupMaxSize { classic, consumer } }
}

/// Topic ids to names, for the APIs that name topics by id.
pub type TopicNames = BTreeMap<uuid::Uuid, String>;

/// The group a request names (empty for an API without one, or a batch of several).
pub fn group(r: &RequestKind) -> String {
    match r {
        RequestKind::JoinGroup(r) => r.group_id.as_str().to_owned(),
        RequestKind::SyncGroup(r) => r.group_id.as_str().to_owned(),
        RequestKind::Heartbeat(r) => r.group_id.as_str().to_owned(),
        RequestKind::LeaveGroup(r) => r.group_id.as_str().to_owned(),
        RequestKind::ConsumerGroupHeartbeat(r) => r.group_id.as_str().to_owned(),
        RequestKind::OffsetCommit(r) => r.group_id.as_str().to_owned(),
        RequestKind::OffsetFetch(r) if r.groups.len() == 1 => {
            r.groups[0].group_id.as_str().to_owned()
        }
        RequestKind::OffsetFetch(r) => r.group_id.as_str().to_owned(),
        _ => String::new(),
    }
}

/// The topic named `name`, or by `id` when the API names it by id (its id's text when no name
/// is known for it).
fn name(names: &TopicNames, name: &str, id: &uuid::Uuid) -> Arc<str> {
    if !name.is_empty() {
        return shared_topic(name);
    }
    names.get(id).map_or_else(|| shared_topic(&id.to_string()), |n| shared_topic(n))
}

/// What the rules keep of a request written at `version` (None: an API they do not read).
pub fn request(r: &RequestKind, version: i16, names: &TopicNames) -> Option<Request> {
    Some(match r {
        RequestKind::JoinGroup(r) => Request::Join {
            member_id: r.member_id.as_str().to_owned(),
            instance: r.group_instance_id.as_ref().map(|i| i.as_str().to_owned()),
            session_timeout_ms: Some(r.session_timeout_ms),
            // JoinGroup v0 has no rebalance timeout: Kafka takes the session timeout for it.
            rebalance_timeout_ms: Some(match version {
                0 => r.session_timeout_ms,
                _ => r.rebalance_timeout_ms,
            }),
            version: Some(version),
        },
        RequestKind::SyncGroup(r) => Request::Sync {
            member_id: r.member_id.as_str().to_owned(),
            generation: r.generation_id,
            instance: r.group_instance_id.as_ref().map(|i| i.as_str().to_owned()),
        },
        RequestKind::Heartbeat(r) => Request::Heartbeat {
            member_id: r.member_id.as_str().to_owned(),
            generation: r.generation_id,
            instance: r.group_instance_id.as_ref().map(|i| i.as_str().to_owned()),
        },
        RequestKind::LeaveGroup(r) => {
            let first = r.members.first();
            Request::Leave {
                member_id: first
                    .map(|m| m.member_id.as_str().to_owned())
                    .unwrap_or_else(|| r.member_id.as_str().to_owned()),
                instance: first
                    .and_then(|m| m.group_instance_id.as_ref())
                    .map(|i| i.as_str().to_owned()),
            }
        }
        RequestKind::ConsumerGroupHeartbeat(r) => Request::ConsumerHeartbeat {
            member_id: r.member_id.as_str().to_owned(),
            epoch: r.member_epoch,
            owned: r.topic_partitions.as_ref().map(|ts| {
                ts.iter()
                    .flat_map(|t| {
                        let topic = name(names, "", &t.topic_id);
                        t.partitions.iter().map(move |&p| TopicPartition::new(&topic, p))
                    })
                    .collect()
            }),
            instance: r.instance_id.as_ref().map(|i| i.as_str().to_owned()),
        },
        RequestKind::OffsetCommit(r) => Request::Commit {
            member_id: r.member_id.as_str().to_owned(),
            generation: r.generation_id_or_member_epoch,
            instance: r.group_instance_id.as_ref().map(|i| i.as_str().to_owned()),
            offsets: r
                .topics
                .iter()
                .flat_map(|t| {
                    let topic = name(names, &t.name, &t.topic_id);
                    t.partitions.iter().map(move |p| {
                        (TopicPartition::new(&topic, p.partition_index), p.committed_offset)
                    })
                })
                .collect(),
        },
        RequestKind::OffsetFetch(r) => {
            let mut partitions = Vec::new();
            for t in r.topics.iter().flatten() {
                partitions.extend(
                    t.partition_indexes
                        .iter()
                        .map(|&p| TopicPartition::new(t.name.as_str().to_owned(), p)),
                );
            }
            for g in &r.groups {
                for t in g.topics.iter().flatten() {
                    let topic = name(names, &t.name, &t.topic_id);
                    partitions.extend(
                        t.partition_indexes.iter().map(|&p| TopicPartition::new(&topic, p)),
                    );
                }
            }
            Request::OffsetFetch { partitions }
        }
        RequestKind::Fetch(r) => Request::Fetch {
            partitions: r
                .topics
                .iter()
                .flat_map(|t| {
                    let topic = name(names, &t.topic, &t.topic_id);
                    t.partitions
                        .iter()
                        .map(move |p| (TopicPartition::new(&topic, p.partition), p.fetch_offset))
                })
                .collect(),
        },
        _ => return None,
    })
}

/// What the rules keep of an answer (None: an API they do not read).
pub fn answer(r: &ResponseKind, names: &TopicNames) -> Option<Answer> {
    Some(match r {
        ResponseKind::JoinGroup(a) => Answer::Join {
            error: a.error_code,
            generation: a.generation_id,
            member_id: a.member_id.as_str().to_owned(),
            leader: a.leader.as_str().to_owned(),
            members: a.members.iter().map(|m| m.member_id.as_str().to_owned()).collect(),
        },
        ResponseKind::SyncGroup(a) => Answer::Sync {
            error: a.error_code,
            assignment: decode_assignment(&a.assignment).map(|x| x.partitions).unwrap_or_default(),
        },
        ResponseKind::Heartbeat(a) => Answer::Error { error: a.error_code },
        ResponseKind::LeaveGroup(a) => Answer::Error {
            error: if a.error_code != 0 {
                a.error_code
            } else {
                a.members.first().map(|m| m.error_code).unwrap_or(0)
            },
        },
        ResponseKind::ConsumerGroupHeartbeat(a) => Answer::ConsumerHeartbeat {
            error: a.error_code,
            member_id: a.member_id.as_ref().map(ToString::to_string).unwrap_or_default(),
            epoch: a.member_epoch,
            assignment: a.assignment.as_ref().map(|x| {
                x.topic_partitions
                    .iter()
                    .flat_map(|t| {
                        let topic = name(names, "", &t.topic_id);
                        t.partitions.iter().map(move |&p| TopicPartition::new(&topic, p))
                    })
                    .collect()
            }),
            interval_ms: (a.heartbeat_interval_ms > 0).then_some(a.heartbeat_interval_ms),
        },
        ResponseKind::OffsetCommit(a) => Answer::Commit {
            errors: a
                .topics
                .iter()
                .flat_map(|t| {
                    let topic = name(names, &t.name, &t.topic_id);
                    t.partitions.iter().map(move |p| {
                        (TopicPartition::new(&topic, p.partition_index), p.error_code)
                    })
                })
                .collect(),
        },
        ResponseKind::OffsetFetch(a) => {
            let mut offsets = Vec::new();
            for t in &a.topics {
                for p in &t.partitions {
                    let error = if a.error_code != 0 { a.error_code } else { p.error_code };
                    let tp = TopicPartition::new(t.name.as_str().to_owned(), p.partition_index);
                    offsets.push((tp, p.committed_offset, error));
                }
            }
            for g in &a.groups {
                for t in &g.topics {
                    let topic = name(names, &t.name, &t.topic_id);
                    for p in &t.partitions {
                        let error = if g.error_code != 0 { g.error_code } else { p.error_code };
                        let tp = TopicPartition::new(&topic, p.partition_index);
                        offsets.push((tp, p.committed_offset, error));
                    }
                }
            }
            Answer::OffsetFetch { offsets }
        }
        ResponseKind::Fetch(a) => {
            // Every Fetch answer is summarised: one vector at its length, and the record bytes
            // read in place (a clone of them would share a buffer the encoder gave away whole).
            let count = a.responses.iter().map(|t| t.partitions.len()).sum();
            let mut partitions = Vec::with_capacity(count);
            for t in &a.responses {
                let topic = name(names, &t.topic, &t.topic_id);
                for p in &t.partitions {
                    let error = if a.error_code != 0 { a.error_code } else { p.error_code };
                    let tp = TopicPartition::new(&topic, p.partition_index);
                    partitions.push((tp, error, record_offsets(p.records.as_ref())));
                }
            }
            Answer::Fetch { partitions }
        }
        _ => return None,
    })
}

/// The offsets of the data records in a Fetch answer's record bytes, in order, repeats kept. A
/// truncated last batch (brokers may cut one short) ends the list.
pub fn record_offsets(records: Option<&Bytes>) -> Vec<i64> {
    let Some(records) = records else { return Vec::new() };
    if let Some(offsets) = contiguous_offsets(records) {
        return offsets;
    }
    let mut buf = records.clone();
    // A batch claiming more records than there are bytes is garbage: refuse it before the
    // decoder sizes a vector by that count.
    if let Ok(infos) = RecordBatchDecoder::decode_batch_info(&mut buf.clone()) {
        if infos.iter().any(|i| i.record_count as usize > buf.len()) {
            return Vec::new();
        }
    }
    let mut offsets = Vec::new();
    while !buf.is_empty() {
        let Ok(set) = RecordBatchDecoder::decode(&mut buf) else { break };
        offsets.extend(set.records.iter().filter(|r| !r.control).map(|r| r.offset));
    }
    offsets
}

/// The offsets of the data records in `buf` read from the batch headers alone, when every
/// batch is whole, holds contiguous offsets (its last offset delta is its record count less one,
/// as in every batch a producer writes and no compaction has thinned) and is a data batch or a
/// control one; `None` sends the caller to the full decoder. Headers only: the records' bodies
/// are never read, which keeps the stream cheap where every Fetch answer is summarised.
fn contiguous_offsets(buf: &[u8]) -> Option<Vec<i64>> {
    // base offset (8), batch length (4), then from the leader epoch: epoch (4), magic (1),
    // crc (4), attributes (2), last offset delta (4), timestamps (16), producer id (8), producer
    // epoch (2), base sequence (4), record count (4).
    const HEADER: usize = 61;
    const CONTROL: i16 = 0x20;
    let mut offsets = Vec::new();
    let mut rest = buf;
    while !rest.is_empty() {
        if rest.len() < HEADER {
            return None;
        }
        let mut h = &rest[..HEADER];
        let base = h.get_i64();
        let length = usize::try_from(h.get_i32()).ok()?;
        let total = length.checked_add(12)?;
        h.advance(4);
        let magic = h.get_i8();
        h.advance(4);
        let attributes = h.get_i16();
        let last_delta = i64::from(h.get_i32());
        h.advance(16 + 8 + 2 + 4);
        let count = i64::from(h.get_i32());
        if magic != 2 || total > rest.len() || total < HEADER || count != last_delta + 1 {
            return None;
        }
        if attributes & CONTROL == 0 {
            offsets.extend((0..count).map(|k| base + k));
        }
        rest = &rest[total..];
    }
    Some(offsets)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_offsets_keep_repeats_and_order() {
        let mut bytes = groupsim_wire::test_util::record_batch(3..6).to_vec();
        bytes.extend_from_slice(&groupsim_wire::test_util::record_batch(5..7));
        assert_eq!(record_offsets(Some(&Bytes::from(bytes))), vec![3, 4, 5, 5, 6]);
        assert_eq!(record_offsets(None), Vec::<i64>::new());
    }

    #[test]
    fn the_header_reading_agrees_with_the_full_decoder() {
        let mut bytes = groupsim_wire::test_util::record_batch(3..6).to_vec();
        bytes.extend_from_slice(&groupsim_wire::test_util::record_batch(5..9));
        let fast = contiguous_offsets(&bytes).expect("whole contiguous batches");
        let mut buf = Bytes::from(bytes);
        let mut full = Vec::new();
        while !buf.is_empty() {
            let set = RecordBatchDecoder::decode(&mut buf).expect("decodes");
            full.extend(set.records.iter().filter(|r| !r.control).map(|r| r.offset));
        }
        assert_eq!(fast, full);
    }

    #[test]
    fn a_cut_batch_goes_to_the_full_decoder() {
        let mut bytes = groupsim_wire::test_util::record_batch(3..6).to_vec();
        bytes.truncate(bytes.len() - 1);
        assert_eq!(contiguous_offsets(&bytes), None);
    }
}
