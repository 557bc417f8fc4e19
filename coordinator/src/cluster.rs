//! Cluster metadata that can change: which brokers are live, which broker leads each offsets
//! partition (and so coordinates its groups), and which leads each topic partition.
//!
//! Every broker of a simulated cluster reads the same [`SharedClusterState`] when it answers
//! Metadata and FindCoordinator and when it decides NOT_COORDINATOR / NOT_LEADER_OR_FOLLOWER,
//! so a leadership change (a coordinator move, a crashed broker's partitions moving away) is seen
//! by every broker at once, as with Kafka's controller pushing metadata. The world's cluster
//! control (`sim/src/cluster.rs`) is what changes it.
//!
//! Initial placement (and the placement of anything never moved) is Kafka-like round robin
//! (`placement.rs`): partition `p` of any topic, the offsets topic included, is led by
//! `brokers[p % n]`. Every
//! change bumps the partition's leader epoch, which a broker compares with the epoch it loaded
//! an offsets partition at: a broker whose epoch is stale has lost leadership and unloads.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use crate::placement::{group_partition, partition_leader, BrokerAddress};
use crate::TopicPartition;

/// Cluster metadata shared by every broker (single-threaded in the simulation; a `Mutex` keeps
/// it `Send` for a real-socket server).
pub type SharedClusterState = Arc<Mutex<ClusterState>>;

/// Locks a shared cluster state (a poisoned lock is still readable: nothing here can be left
/// half-updated by a panic in a reader).
pub fn lock(state: &SharedClusterState) -> std::sync::MutexGuard<'_, ClusterState> {
    state.lock().unwrap_or_else(|p| p.into_inner())
}

/// A leader and the epoch it was elected at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Leadership {
    /// Node id of the leader.
    pub leader: i32,
    /// Bumped on every change of leader (Kafka's leader epoch).
    pub epoch: i32,
}

/// The cluster's current metadata (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterState {
    brokers: Vec<BrokerAddress>,
    live: BTreeSet<i32>,
    offsets_topic_partitions: i32,
    offsets: Vec<Leadership>,
    /// How many times an offsets partition's leadership moved: a broker compares it with the
    /// count it last saw instead of every partition's leadership.
    offsets_moves: u64,
    /// Topic partitions whose leader differs from the initial placement.
    topics: BTreeMap<TopicPartition, Leadership>,
    /// Suffix of the next generated member id, cluster-wide, so a coordinator that takes over a
    /// group never hands out a member id an earlier coordinator used (Kafka uses UUIDs).
    next_member_seq: u64,
}

impl ClusterState {
    /// Every broker live, placement `brokers[p % n]`.
    pub fn new(brokers: Vec<BrokerAddress>, offsets_topic_partitions: i32) -> Self {
        let n = offsets_topic_partitions.max(1);
        let offsets = (0..n)
            .map(|p| Leadership {
                leader: partition_leader(&brokers, p).map_or(-1, |b| b.node_id),
                epoch: 0,
            })
            .collect();
        let live = brokers.iter().map(|b| b.node_id).collect();
        Self {
            brokers,
            live,
            offsets_topic_partitions: n,
            offsets,
            offsets_moves: 0,
            topics: BTreeMap::new(),
            next_member_seq: 1,
        }
    }

    /// Wraps a state in a [`SharedClusterState`].
    pub fn shared(self) -> SharedClusterState {
        Arc::new(Mutex::new(self))
    }

    /// Every configured broker, live or not, in configuration order.
    pub fn brokers(&self) -> &[BrokerAddress] {
        &self.brokers
    }

    /// A broker's address.
    pub fn broker(&self, node_id: i32) -> Option<&BrokerAddress> {
        self.brokers.iter().find(|b| b.node_id == node_id)
    }

    /// Live brokers in configuration order (what Metadata lists).
    pub fn live_brokers(&self) -> impl Iterator<Item = &BrokerAddress> {
        self.brokers.iter().filter(|b| self.live.contains(&b.node_id))
    }

    /// Whether `node_id` is considered live.
    pub fn is_live(&self, node_id: i32) -> bool {
        self.live.contains(&node_id)
    }

    /// Marks a broker live or dead (its partitions do not move by themselves).
    pub fn set_live(&mut self, node_id: i32, live: bool) {
        if live {
            self.live.insert(node_id);
        } else {
            self.live.remove(&node_id);
        }
    }

    /// `offsets.topic.num.partitions`.
    pub fn offsets_topic_partitions(&self) -> i32 {
        self.offsets_topic_partitions
    }

    /// Kafka's partitionFor(group).
    pub fn group_partition(&self, group_id: &str) -> i32 {
        group_partition(group_id, self.offsets_topic_partitions)
    }

    /// Leader and epoch of offsets partition `partition`.
    pub fn offsets_leadership(&self, partition: i32) -> Option<Leadership> {
        usize::try_from(partition).ok().and_then(|p| self.offsets.get(p)).copied()
    }

    /// Leader of offsets partition `partition` (-1 when none).
    pub fn offsets_leader(&self, partition: i32) -> i32 {
        self.offsets_leadership(partition).map_or(-1, |l| l.leader)
    }

    /// The broker coordinating `group_id`: the leader of its offsets partition.
    pub fn group_coordinator(&self, group_id: &str) -> Option<&BrokerAddress> {
        self.broker(self.offsets_leader(self.group_partition(group_id)))
    }

    /// Every offsets partition's leadership, by partition.
    pub fn offsets_leaderships(&self) -> &[Leadership] {
        &self.offsets
    }

    /// Moves offsets partition `partition` to `leader`, bumping its epoch. Returns the previous
    /// leadership, `None` for a partition that does not exist.
    pub fn set_offsets_leader(&mut self, partition: i32, leader: i32) -> Option<Leadership> {
        let slot = usize::try_from(partition).ok().and_then(|p| self.offsets.get_mut(p))?;
        let old = *slot;
        *slot = Leadership { leader, epoch: old.epoch + 1 };
        self.offsets_moves += 1;
        Some(old)
    }

    /// How many times [`Self::set_offsets_leader`] moved an offsets partition: the same count
    /// means the same [`Self::offsets_leaderships`].
    pub fn offsets_moves(&self) -> u64 {
        self.offsets_moves
    }

    /// Offsets partitions led by `node_id`, ascending.
    pub fn offsets_partitions_led_by(&self, node_id: i32) -> Vec<i32> {
        (0..self.offsets_topic_partitions).filter(|p| self.offsets_leader(*p) == node_id).collect()
    }

    /// Leader and epoch of a topic partition (initial placement unless it was moved).
    pub fn partition_leadership(&self, tp: &TopicPartition) -> Option<Leadership> {
        match self.topics.get(tp) {
            Some(l) => Some(*l),
            None => partition_leader(&self.brokers, tp.partition)
                .map(|b| Leadership { leader: b.node_id, epoch: 0 }),
        }
    }

    /// Leader of a topic partition.
    pub fn partition_leader(&self, tp: &TopicPartition) -> Option<&BrokerAddress> {
        self.partition_leadership(tp).and_then(|l| self.broker(l.leader))
    }

    /// Moves a topic partition's leadership to `leader`, bumping its epoch; returns the old one.
    pub fn set_partition_leader(&mut self, tp: &TopicPartition, leader: i32) -> Option<Leadership> {
        let old = self.partition_leadership(tp);
        let epoch = old.map_or(0, |l| l.epoch + 1);
        self.topics.insert(tp.clone(), Leadership { leader, epoch });
        old
    }

    /// Takes the next member id suffix, at least `floor`, and remembers the one after.
    pub fn take_member_seq(&mut self, floor: u64) -> u64 {
        self.next_member_seq = self.next_member_seq.max(floor);
        self.next_member_seq
    }

    /// Records that member id suffixes below `next` are used.
    pub fn advance_member_seq(&mut self, next: u64) {
        self.next_member_seq = self.next_member_seq.max(next);
    }
}

/// One broker's view of the placement: answers "do I lead this partition?" for the partition
/// APIs (ListOffsets, Fetch) from the shared state.
#[derive(Clone, Copy, Debug)]
pub struct Placement<'a> {
    /// The asking broker.
    pub node_id: i32,
    /// The cluster's current metadata.
    pub cluster: &'a ClusterState,
}

impl Placement<'_> {
    /// Leader of a topic partition.
    pub fn partition_leader(&self, tp: &TopicPartition) -> Option<&BrokerAddress> {
        self.cluster.partition_leader(tp)
    }

    /// Whether the asking broker leads the topic partition.
    pub fn is_leader(&self, tp: &TopicPartition) -> bool {
        self.partition_leader(tp).is_some_and(|b| b.node_id == self.node_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn brokers(n: i32) -> Vec<BrokerAddress> {
        (0..n).map(|i| BrokerAddress { node_id: i, host: format!("b{i}"), port: 9092 }).collect()
    }

    #[test]
    fn initial_placement_is_partition_modulo_brokers_and_moves_bump_the_epoch() {
        let mut s = ClusterState::new(brokers(3), 5);
        assert_eq!((0..5).map(|p| s.offsets_leader(p)).collect::<Vec<_>>(), [0, 1, 2, 0, 1]);
        assert_eq!(s.offsets_partitions_led_by(1), vec![1, 4]);
        assert_eq!(s.offsets_moves(), 0);
        let old = s.set_offsets_leader(4, 2).expect("partition exists");
        assert_eq!(old, Leadership { leader: 1, epoch: 0 });
        assert_eq!(s.offsets_leadership(4), Some(Leadership { leader: 2, epoch: 1 }));
        assert_eq!(s.offsets_moves(), 1, "a move is counted");
        s.set_offsets_leader(4, 2);
        assert_eq!(s.offsets_moves(), 2, "a move to the same leader bumps the epoch: counted");
        assert_eq!(s.set_offsets_leader(9, 0), None);
        assert_eq!(s.offsets_moves(), 2, "no partition, no move");
        let tp = TopicPartition::new("t", 4);
        assert_eq!(s.partition_leader(&tp).map(|b| b.node_id), Some(1));
        s.set_partition_leader(&tp, 0);
        assert_eq!(s.partition_leadership(&tp), Some(Leadership { leader: 0, epoch: 1 }));
    }

    #[test]
    fn dead_brokers_are_not_listed() {
        let mut s = ClusterState::new(brokers(3), 5);
        s.set_live(1, false);
        assert_eq!(s.live_brokers().map(|b| b.node_id).collect::<Vec<_>>(), [0, 2]);
        assert!(!s.is_live(1));
        s.set_live(1, true);
        assert!(s.is_live(1));
    }
}
