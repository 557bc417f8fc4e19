//! The replicated offsets log: Kafka's `__consumer_offsets` topic, which outlives any broker.
//!
//! The coordinator appends two kinds of record to the partition of a group
//! (`partitionFor(group)`): an offset commit, and a snapshot of the group's metadata
//! (generation, protocol, leader, and every member with its ids, timeouts, subscription and
//! assignment) written when a generation's assignment is stored or the group becomes Empty. A
//! coordinator that takes over a partition rebuilds its cache by replaying the partition
//! ([`OffsetsLog::load`]): the last snapshot of each group and the last commit of each partition
//! win, as in Kafka's compacted topic.
//!
//! Like Kafka's log cleaner, the log compacts a partition once it has grown well past what it
//! holds: only each key's last record stays (a group's last snapshot, classic or consumer, and
//! each partition's last commit), in order. Nothing a reader sees changes — a replay, the last
//! commit of a partition, the groups a partition holds — and a coordinator that runs for hours
//! (`serve`) keeps memory bounded by its groups and partitions, not by its commits.
//!
//! The log is shared by every broker of a simulated cluster through a [`SharedOffsetsLog`] and is
//! never lost: replication is modelled by the coordinator completing an append only after
//! `offsets_append_delay_ms` (see [`crate::CoordinatorConfig`]).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use bytes::Bytes;

use crate::consumer_group::records::ConsumerGroupValue;
use crate::offsets::CommittedOffset;
use crate::{Millis, TopicPartition};

/// The offsets log shared by every broker (and the world, which inspects it).
pub type SharedOffsetsLog = Arc<Mutex<OffsetsLog>>;

/// Locks a shared offsets log (poisoning is ignored: appends are single pushes).
pub fn lock(log: &SharedOffsetsLog) -> std::sync::MutexGuard<'_, OffsetsLog> {
    log.lock().unwrap_or_else(|p| p.into_inner())
}

/// One member as stored in a group metadata record (Kafka's MemberMetadata value).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemberMetadataValue {
    /// Member id.
    pub member_id: String,
    /// `group.instance.id` of a static member.
    pub group_instance_id: Option<String>,
    /// Client id.
    pub client_id: String,
    /// Client host.
    pub client_host: String,
    /// Rebalance timeout the member asked for.
    pub rebalance_timeout_ms: i32,
    /// Session timeout the member asked for.
    pub session_timeout_ms: i32,
    /// Its subscription: the metadata it sent for the generation's protocol (Kafka stores only
    /// that one protocol, so a loaded member supports just the group's protocol).
    pub subscription: Bytes,
    /// Its assignment in the stored generation.
    pub assignment: Bytes,
}

/// A group's metadata as stored (Kafka's GroupMetadata value).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupMetadataValue {
    /// Group id.
    pub group_id: String,
    /// Protocol type (`consumer`), if any member ever joined.
    pub protocol_type: Option<String>,
    /// The stored generation.
    pub generation: i32,
    /// Protocol chosen for it.
    pub protocol_name: Option<String>,
    /// Its leader.
    pub leader: Option<String>,
    /// Its members with their assignments (empty: the group was Empty).
    pub members: Vec<MemberMetadataValue>,
    /// When it was stored.
    pub stored_at: Millis,
}

/// One record of the offsets log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OffsetsRecord {
    /// A committed offset.
    Commit { group: String, partition: TopicPartition, offset: CommittedOffset },
    /// A snapshot of a group's metadata.
    Group(GroupMetadataValue),
    /// A snapshot of a KIP-848 consumer group (see `consumer_group/records.rs`).
    ConsumerGroup(ConsumerGroupValue),
}

impl OffsetsRecord {
    /// The group the record belongs to.
    pub fn group(&self) -> &str {
        match self {
            OffsetsRecord::Commit { group, .. } => group,
            OffsetsRecord::Group(g) => &g.group_id,
            OffsetsRecord::ConsumerGroup(g) => &g.group_id,
        }
    }
}

/// What replaying one partition yields: the groups' last metadata and offsets.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LoadedPartition {
    /// Last metadata snapshot of each group that has one.
    pub groups: BTreeMap<String, GroupMetadataValue>,
    /// Last committed offset of each (group, partition).
    pub offsets: BTreeMap<String, BTreeMap<TopicPartition, CommittedOffset>>,
    /// Last snapshot of each consumer group. A group id has either a classic or a consumer
    /// group, the later snapshot winning (a group converted between protocols).
    pub consumer_groups: BTreeMap<String, ConsumerGroupValue>,
}

impl LoadedPartition {
    /// The latest instant the log shows activity of `group`: its snapshot being stored or one
    /// of its offsets being committed (`None` if it has neither).
    pub fn last_logged_at(&self, group: &str) -> Option<Millis> {
        let stored = self
            .groups
            .get(group)
            .map(|g| g.stored_at)
            .into_iter()
            .chain(self.consumer_groups.get(group).map(|g| g.stored_at))
            .max();
        let committed =
            self.offsets.get(group).into_iter().flatten().map(|(_, c)| c.commit_timestamp);
        stored.into_iter().chain(committed).max()
    }
}

/// A partition is compacted when it holds this many records more than it kept at its last
/// compaction (and at least twice as many).
const COMPACT_SLACK: usize = 4_096;

/// The offsets log: one record list per offsets partition, appended to and compacted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OffsetsLog {
    partitions: Vec<Vec<OffsetsRecord>>,
    /// Per partition, the record count at which it is compacted next.
    compact_at: Vec<usize>,
    /// The slack above (smaller in tests).
    slack: usize,
}

/// What compaction keeps one record of: a group's metadata (classic or consumer: the later
/// replaces the other), or one partition's commit.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Key<'a> {
    Metadata(&'a str),
    Commit(&'a str, &'a TopicPartition),
}

impl OffsetsRecord {
    fn key(&self) -> Key<'_> {
        match self {
            OffsetsRecord::Commit { group, partition, .. } => Key::Commit(group, partition),
            OffsetsRecord::Group(g) => Key::Metadata(&g.group_id),
            OffsetsRecord::ConsumerGroup(g) => Key::Metadata(&g.group_id),
        }
    }
}

impl OffsetsLog {
    /// An empty log with `partitions` partitions (at least one).
    pub fn new(partitions: i32) -> Self {
        Self::with_slack(partitions, COMPACT_SLACK)
    }

    fn with_slack(partitions: i32, slack: usize) -> Self {
        let n = partitions.max(1) as usize;
        Self { partitions: vec![Vec::new(); n], compact_at: vec![slack; n], slack }
    }

    /// Wraps the log in a [`SharedOffsetsLog`].
    pub fn shared(self) -> SharedOffsetsLog {
        Arc::new(Mutex::new(self))
    }

    /// Number of partitions.
    pub fn partition_count(&self) -> i32 {
        self.partitions.len() as i32
    }

    /// Appends a record to partition `partition`; false if the partition does not exist.
    pub fn append(&mut self, partition: i32, record: OffsetsRecord) -> bool {
        match usize::try_from(partition).ok().and_then(|p| self.partitions.get_mut(p)) {
            Some(records) => {
                records.push(record);
                let p = partition as usize;
                if records.len() >= self.compact_at[p] {
                    self.compact(p);
                }
                true
            }
            None => false,
        }
    }

    /// Keeps only each key's last record of partition `p`, in their order.
    fn compact(&mut self, p: usize) {
        let records = std::mem::take(&mut self.partitions[p]);
        let mut seen = std::collections::BTreeSet::new();
        let mut keep: Vec<bool> = records.iter().rev().map(|r| seen.insert(r.key())).collect();
        keep.reverse();
        let kept: Vec<OffsetsRecord> =
            records.into_iter().zip(keep).filter_map(|(r, k)| k.then_some(r)).collect();
        self.compact_at[p] = (kept.len() * 2).max(kept.len() + self.slack);
        self.partitions[p] = kept;
    }

    /// Every record of a partition, oldest first.
    pub fn records(&self, partition: i32) -> &[OffsetsRecord] {
        usize::try_from(partition).ok().and_then(|p| self.partitions.get(p)).map_or(&[], |r| r)
    }

    /// Replays a partition: the last snapshot per group, the last commit per partition.
    pub fn load(&self, partition: i32) -> LoadedPartition {
        let mut loaded = LoadedPartition::default();
        for record in self.records(partition) {
            match record {
                OffsetsRecord::Commit { group, partition, offset } => {
                    loaded
                        .offsets
                        .entry(group.clone())
                        .or_default()
                        .insert(partition.clone(), offset.clone());
                }
                OffsetsRecord::Group(g) => {
                    loaded.consumer_groups.remove(&g.group_id);
                    loaded.groups.insert(g.group_id.clone(), g.clone());
                }
                OffsetsRecord::ConsumerGroup(g) => {
                    loaded.groups.remove(&g.group_id);
                    loaded.consumer_groups.insert(g.group_id.clone(), g.clone());
                }
            }
        }
        loaded
    }

    /// The last committed offset of a group's partition, whichever broker wrote it.
    pub fn committed_offset(&self, group: &str, tp: &TopicPartition) -> Option<i64> {
        self.partitions.iter().flatten().rev().find_map(|r| match r {
            OffsetsRecord::Commit { group: g, partition, offset }
                if g == group && partition == tp =>
            {
                Some(offset.offset)
            }
            _ => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    fn commit(group: &str, p: i32, offset: i64) -> OffsetsRecord {
        OffsetsRecord::Commit {
            group: group.into(),
            partition: TopicPartition::new("t", p),
            offset: CommittedOffset {
                offset,
                leader_epoch: -1,
                metadata: None,
                commit_timestamp: 0,
            },
        }
    }

    fn snapshot(group: &str, generation: i32) -> OffsetsRecord {
        OffsetsRecord::Group(GroupMetadataValue {
            group_id: group.into(),
            protocol_type: Some("consumer".into()),
            generation,
            protocol_name: Some("range".into()),
            leader: None,
            members: Vec::new(),
            stored_at: 0,
        })
    }

    /// Compaction changes nothing a reader sees: every replay, every last commit and the groups
    /// of every partition are those of the same appends never compacted, while the records kept
    /// stay bounded by the keys.
    #[test]
    fn compaction_keeps_what_every_reader_sees_and_bounds_the_records() {
        let mut rng: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = move |n: u64| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng % n
        };
        let (mut compacted, mut plain) = (OffsetsLog::with_slack(2, 8), OffsetsLog::new(2));
        for i in 0..5_000 {
            let group = ["g", "h", "k"][next(3) as usize];
            let record = match next(4) {
                0 => snapshot(group, i),
                1 => OffsetsRecord::ConsumerGroup(ConsumerGroupValue {
                    group_id: group.into(),
                    group_epoch: i,
                    assignment_epoch: i,
                    subscription_metadata: Default::default(),
                    members: Vec::new(),
                    target: Default::default(),
                    stored_at: 0,
                }),
                _ => commit(group, next(4) as i32, i64::from(i)),
            };
            let partition = next(2) as i32;
            assert!(compacted.append(partition, record.clone()));
            assert!(plain.append(partition, record));
            if i % 97 == 0 {
                for p in 0..2 {
                    assert_eq!(compacted.load(p), plain.load(p), "partition {p} after {i}");
                }
            }
        }
        for p in 0..2 {
            assert_eq!(compacted.load(p), plain.load(p));
            let groups = |l: &OffsetsLog| {
                l.records(p).iter().map(|r| r.group().to_string()).collect::<BTreeSet<_>>()
            };
            assert_eq!(groups(&compacted), groups(&plain));
            // 3 groups' metadata and 3 x 4 partitions' commits, and the slack of appends since.
            assert!(compacted.records(p).len() <= 2 * 15 + 8, "{}", compacted.records(p).len());
        }
        for group in ["g", "h", "k"] {
            for q in 0..4 {
                let tp = TopicPartition::new("t", q);
                assert_eq!(
                    compacted.committed_offset(group, &tp),
                    plain.committed_offset(group, &tp)
                );
            }
        }
    }

    #[test]
    fn load_keeps_the_last_snapshot_and_the_last_commit() {
        let mut log = OffsetsLog::new(2);
        assert!(log.append(1, snapshot("g", 1)));
        assert!(log.append(1, commit("g", 0, 5)));
        assert!(log.append(1, commit("g", 0, 9)));
        assert!(log.append(1, snapshot("g", 2)));
        assert!(log.append(0, commit("h", 0, 3)));
        assert!(!log.append(2, commit("g", 0, 1)), "no partition 2");
        let loaded = log.load(1);
        assert_eq!(loaded.groups["g"].generation, 2);
        assert_eq!(loaded.offsets["g"][&TopicPartition::new("t", 0)].offset, 9);
        assert!(!loaded.offsets.contains_key("h"), "other partition");
        assert_eq!(log.committed_offset("h", &TopicPartition::new("t", 0)), Some(3));
    }
}
