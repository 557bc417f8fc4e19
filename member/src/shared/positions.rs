//! Owned partitions and their positions (Kafka's `SubscriptionState` with the offset lookups
//! of `ConsumerCoordinator.fetchCommittedOffsets` and `OffsetFetcher`): each starts from its
//! committed offset (OffsetFetch), or from the earliest offset (ListOffsets) when nothing was
//! committed; then it tracks the fetch position, the processed position and the commit floor.

use std::collections::BTreeMap;

use groupsim_wire::error_codes as codes;
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopics,
};
use kafka_protocol::messages::{
    BrokerId, ListOffsetsRequest, ListOffsetsResponse, OffsetFetchRequest, OffsetFetchResponse,
    TopicName,
};

use super::group_id;
use super::outputs::Outputs;
use crate::compat::sb;
use crate::{MemberConfig, MemberEvent, TopicPartition};

/// ListOffsets timestamp meaning "the earliest offset" (`auto.offset.reset=earliest`).
const EARLIEST_TIMESTAMP: i64 = -2;
/// ListOffsets timestamp meaning "the log end" (`auto.offset.reset=latest`).
const LATEST_TIMESTAMP: i64 = -1;

/// How far an owned partition's starting position has come.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PositionState {
    /// Waiting for OffsetFetch.
    AwaitingCommitted,
    /// No usable committed offset (or out of range): waiting for ListOffsets earliest.
    AwaitingReset { in_flight: bool },
    /// Position known: fetchable.
    Ready,
}

/// Per owned partition state.
#[derive(Clone, Debug)]
pub(crate) struct PartitionState {
    pub(crate) state: PositionState,
    /// Next offset to fetch.
    pub(crate) fetch_position: i64,
    /// Next offset to commit: one past the last processed record (or the starting position).
    pub(crate) processed: Option<i64>,
    /// Last committed offset the member knows of (OffsetFetch answer or acknowledged commit).
    pub(crate) committed: Option<i64>,
    /// The offset below which nothing needs committing: the last acknowledged commit, or the
    /// starting position when nothing was committed yet.
    pub(crate) commit_floor: Option<i64>,
    pub(crate) fetch_in_flight: bool,
    pub(crate) buffered: bool,
    /// Bug `resets_position_on_offset_fetch_failure`: the OffsetFetch error after which the
    /// member resets this partition, and whether to the log end.
    pub(crate) reset_after: Option<(String, bool)>,
}

impl PartitionState {
    pub(crate) fn new() -> Self {
        Self {
            state: PositionState::AwaitingCommitted,
            fetch_position: 0,
            processed: None,
            committed: None,
            commit_floor: None,
            fetch_in_flight: false,
            buffered: false,
            reset_after: None,
        }
    }

    /// The starting position is known: fetch and process from `offset`, and report it (with
    /// the committed offset known) under the member's `(member_id, generation)`.
    fn start_at(
        &mut self,
        offset: i64,
        partition: TopicPartition,
        (member_id, generation): (&str, i32),
        out: &mut Outputs,
    ) {
        self.state = PositionState::Ready;
        self.fetch_position = offset;
        self.processed = Some(offset);
        out.emit(MemberEvent::PositionInitialized {
            member_id: member_id.to_string(),
            generation,
            partition,
            committed: self.committed,
            position: offset,
            reset_after: self.reset_after.take().map(|(error, _)| error),
        });
    }
}

/// The assignment and the positions of its partitions.
#[derive(Debug, Default)]
pub(crate) struct SubscriptionState {
    /// Partitions the member owns, sorted (for a cooperative member, those being revoked too).
    pub(crate) assigned: Vec<TopicPartition>,
    /// Counts assignment changes: answers and batches of an older epoch are stale.
    pub(crate) epoch: u64,
    pub(crate) partitions: BTreeMap<TopicPartition, PartitionState>,
}

/// Owned partitions (sorted) and their positions, taken out of the subscription state.
pub(crate) type OwnedPartitions = (Vec<TopicPartition>, BTreeMap<TopicPartition, PartitionState>);

/// The (offset, error code) answered for each partition.
pub(crate) type OffsetAnswers = BTreeMap<TopicPartition, (i64, i16)>;

impl SubscriptionState {
    /// The Fetch of `positions` (of assignment `epoch`) was answered or failed: its partitions
    /// may be fetched again.
    pub(crate) fn clear_fetch_in_flight(&mut self, epoch: u64, positions: &FetchPositions) {
        if epoch == self.epoch {
            for tp in positions.keys() {
                if let Some(ps) = self.partitions.get_mut(tp) {
                    ps.fetch_in_flight = false;
                }
            }
        }
    }

    /// Processed positions that moved since the last acknowledged commit. Bug
    /// `skip_revoke_commit_then_overcommit` (`overcommit`): the fetch position is committed.
    pub(crate) fn offsets_to_commit(&self, overcommit: bool) -> Vec<(TopicPartition, i64)> {
        self.partitions
            .iter()
            .filter_map(|(tp, ps)| {
                // Bug: the fetch position (records fetched, maybe not processed) is committed.
                let position = if overcommit && ps.state == PositionState::Ready {
                    ps.processed.map(|p| p.max(ps.fetch_position))
                } else {
                    ps.processed
                };
                match position {
                    Some(p) if Some(p) != ps.commit_floor => Some((tp.clone(), p)),
                    _ => None,
                }
            })
            .collect()
    }

    /// Bug `keeps_owned_after_sync_error`: takes the owned partitions and their positions out
    /// (see [`Self::restore_owned`]).
    pub(crate) fn take_owned(&mut self) -> OwnedPartitions {
        (std::mem::take(&mut self.assigned), std::mem::take(&mut self.partitions))
    }

    /// Bug `keeps_owned_after_sync_error`: puts owned partitions taken out back.
    pub(crate) fn restore_owned(&mut self, (assigned, partitions): OwnedPartitions) {
        self.assigned = assigned;
        self.partitions = partitions;
    }

    /// The processed position of each of `tps` that has one.
    pub(crate) fn processed_of(&self, tps: &[TopicPartition]) -> Vec<(TopicPartition, i64)> {
        tps.iter()
            .filter_map(|tp| {
                self.partitions.get(tp).and_then(|ps| ps.processed).map(|p| (tp.clone(), p))
            })
            .collect()
    }

    /// Bug `resets_position_on_offset_fetch_failure`: the OffsetFetch of the partitions waiting
    /// for their committed offset failed with `error`, and the member takes that for "nothing
    /// committed": they wait for ListOffsets (the log end when `latest`).
    pub(crate) fn reset_awaiting_committed(&mut self, error: &str, latest: bool) {
        for ps in self.partitions.values_mut() {
            if ps.state == PositionState::AwaitingCommitted {
                ps.state = PositionState::AwaitingReset { in_flight: false };
                ps.committed = None;
                ps.reset_after = Some((error.to_string(), latest));
            }
        }
    }

    /// Whether `tp` resets to the log end rather than the earliest offset.
    pub(crate) fn resets_to_latest(&self, tp: &TopicPartition) -> bool {
        self.partitions.get(tp).is_some_and(|ps| ps.reset_after.as_ref().is_some_and(|r| r.1))
    }

    /// Partitions waiting for their committed offset.
    pub(crate) fn awaiting_committed(&self) -> Vec<TopicPartition> {
        self.partitions
            .iter()
            .filter(|(_, ps)| ps.state == PositionState::AwaitingCommitted)
            .map(|(tp, _)| tp.clone())
            .collect()
    }

    /// Owned partition `tp`, if its position is in `state`.
    fn waiting(
        &mut self,
        tp: &TopicPartition,
        state: PositionState,
    ) -> Option<&mut PartitionState> {
        self.partitions.get_mut(tp).filter(|ps| ps.state == state)
    }

    /// Partitions waiting for ListOffsets earliest, none sent yet.
    pub(crate) fn awaiting_reset(&self) -> impl Iterator<Item = &TopicPartition> {
        self.partitions
            .iter()
            .filter(|(_, ps)| ps.state == (PositionState::AwaitingReset { in_flight: false }))
            .map(|(tp, _)| tp)
    }

    /// Applies the committed offsets of `partitions` (of the current epoch): a committed offset
    /// becomes the position; no committed offset waits for ListOffsets. Returns whether some
    /// partition needs another OffsetFetch.
    pub(crate) fn apply_committed(
        &mut self,
        partitions: Vec<TopicPartition>,
        answers: &OffsetAnswers,
        view: (&str, i32),
        out: &mut Outputs,
    ) -> bool {
        let mut retry = false;
        for tp in partitions {
            let answer = answers.get(&tp).copied();
            let Some(ps) = self.waiting(&tp, PositionState::AwaitingCommitted) else {
                continue;
            };
            match answer {
                Some((offset, codes::NONE)) if offset >= 0 => {
                    ps.committed = Some(offset);
                    ps.commit_floor = Some(offset);
                    ps.start_at(offset, tp, view, out);
                }
                Some((_, codes::NONE)) => {
                    ps.state = PositionState::AwaitingReset { in_flight: false };
                    ps.committed = None;
                }
                _ => retry = true,
            }
        }
        retry
    }

    /// Marks `tps` as having ListOffsets in flight.
    pub(crate) fn reset_sent(&mut self, tps: &[TopicPartition]) {
        for tp in tps {
            if let Some(ps) = self.partitions.get_mut(tp) {
                ps.state = PositionState::AwaitingReset { in_flight: true };
            }
        }
    }

    /// ListOffsets for `partitions` of `epoch` was answered or failed: they may ask again.
    pub(crate) fn reset_answered(&mut self, epoch: u64, partitions: &[TopicPartition]) {
        if epoch != self.epoch {
            return;
        }
        for tp in partitions {
            if let Some(ps) = self.partitions.get_mut(tp) {
                if ps.state == (PositionState::AwaitingReset { in_flight: true }) {
                    ps.state = PositionState::AwaitingReset { in_flight: false };
                }
            }
        }
    }

    /// Applies earliest offsets to `partitions` (of the current epoch). Returns whether some
    /// partition needs another ListOffsets, and the topics whose leader moved.
    pub(crate) fn apply_earliest(
        &mut self,
        partitions: Vec<TopicPartition>,
        answers: &OffsetAnswers,
        view: (&str, i32),
        out: &mut Outputs,
    ) -> (bool, Vec<String>) {
        let mut retry = false;
        let mut leader_moved = Vec::new();
        for tp in partitions {
            let answer = answers.get(&tp).copied();
            let Some(ps) = self.waiting(&tp, PositionState::AwaitingReset { in_flight: false })
            else {
                continue;
            };
            match answer {
                Some((offset, codes::NONE)) if offset >= 0 => {
                    if ps.commit_floor.is_none() {
                        ps.commit_floor = Some(offset);
                    }
                    ps.start_at(offset, tp, view, out);
                }
                Some((_, code)) if codes::is_leadership_error(code) => {
                    retry = true;
                    leader_moved.push(tp.topic.to_string());
                }
                _ => retry = true,
            }
        }
        (retry, leader_moved)
    }
}

/// OffsetFetch of `partitions` (sorted) for the group.
pub(crate) fn offset_fetch_request(
    config: &MemberConfig,
    partitions: &[TopicPartition],
) -> OffsetFetchRequest {
    let mut topics: Vec<OffsetFetchRequestTopics> = Vec::new();
    for tp in partitions {
        match topics.last_mut() {
            Some(t) if t.name.0.as_str() == &*tp.topic => t.partition_indexes.push(tp.partition),
            _ => topics.push(
                OffsetFetchRequestTopics::default()
                    .with_name(TopicName(sb(&tp.topic)))
                    .with_partition_indexes(vec![tp.partition]),
            ),
        }
    }
    OffsetFetchRequest::default().with_groups(vec![OffsetFetchRequestGroup::default()
        .with_group_id(group_id(config))
        .with_topics(Some(topics))])
}

/// The group's error code and per-partition committed offsets of an OffsetFetch answer.
pub(crate) fn offset_fetch_answers(
    resp: &OffsetFetchResponse,
    group: &str,
) -> (i16, OffsetAnswers) {
    // Both shapes: v8+ answers per group, older versions at the top level.
    let key = |name: &TopicName, partition: i32| TopicPartition::new(name.0.as_str(), partition);
    if resp.groups.is_empty() {
        let answers = resp.topics.iter().flat_map(|t| {
            t.partitions
                .iter()
                .map(move |p| (key(&t.name, p.partition_index), (p.committed_offset, p.error_code)))
        });
        return (resp.error_code, answers.collect());
    }
    let g = resp.groups.iter().find(|g| g.group_id.0.as_str() == group).unwrap_or(&resp.groups[0]);
    let answers = g.topics.iter().flat_map(|t| {
        t.partitions
            .iter()
            .map(move |p| (key(&t.name, p.partition_index), (p.committed_offset, p.error_code)))
    });
    (g.error_code, answers.collect())
}

/// ListOffsets for `partitions` (sorted), all led by one broker: the earliest offset, or the
/// log end for those `latest` says.
pub(crate) fn list_offsets_request(
    partitions: &[TopicPartition],
    latest: impl Fn(&TopicPartition) -> bool,
) -> ListOffsetsRequest {
    let mut topics: Vec<ListOffsetsTopic> = Vec::new();
    for tp in partitions {
        let timestamp = if latest(tp) { LATEST_TIMESTAMP } else { EARLIEST_TIMESTAMP };
        let part = ListOffsetsPartition::default()
            .with_partition_index(tp.partition)
            .with_timestamp(timestamp);
        match topics.last_mut() {
            Some(t) if t.name.0.as_str() == &*tp.topic => t.partitions.push(part),
            _ => topics.push(
                ListOffsetsTopic::default()
                    .with_name(TopicName(sb(&tp.topic)))
                    .with_partitions(vec![part]),
            ),
        }
    }
    ListOffsetsRequest::default().with_replica_id(BrokerId(-1)).with_topics(topics)
}

/// The per-partition offsets of a ListOffsets answer.
pub(crate) fn list_offsets_answers(resp: &ListOffsetsResponse) -> OffsetAnswers {
    let mut answers: OffsetAnswers = BTreeMap::new();
    for t in &resp.topics {
        for p in &t.partitions {
            answers.insert(
                TopicPartition::new(t.name.0.as_str(), p.partition_index),
                (p.offset, p.error_code),
            );
        }
    }
    answers
}

/// The positions a Fetch request asked from, in partition order: a sorted list, as a request
/// names few partitions and one is built per request.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct FetchPositions(Vec<(TopicPartition, i64)>);

impl FetchPositions {
    /// From `(partition, position)` pairs in partition order, each partition once.
    pub(crate) fn from_sorted(pairs: Vec<(TopicPartition, i64)>) -> Self {
        debug_assert!(pairs.windows(2).all(|w| w[0].0 < w[1].0), "sorted, each partition once");
        Self(pairs)
    }

    /// The position asked for `tp`, if the request named it.
    pub(crate) fn get(&self, tp: &TopicPartition) -> Option<&i64> {
        self.0.binary_search_by(|(k, _)| k.cmp(tp)).ok().map(|at| &self.0[at].1)
    }

    /// The partitions named, in order.
    pub(crate) fn keys(&self) -> impl Iterator<Item = &TopicPartition> {
        self.0.iter().map(|(tp, _)| tp)
    }

    /// Keeps the partitions `keep` says yes to.
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(&TopicPartition) -> bool) {
        self.0.retain(|(tp, _)| keep(tp));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MemberOutput;

    fn tp(p: i32) -> TopicPartition {
        TopicPartition::new("t", p)
    }

    fn owning(parts: &[i32]) -> SubscriptionState {
        let mut s = SubscriptionState::default();
        for p in parts {
            s.assigned.push(tp(*p));
            s.partitions.insert(tp(*p), PartitionState::new());
        }
        s
    }

    #[test]
    fn fetch_positions_find_each_named_partition_and_no_other() {
        let tp = |t: &str, p| TopicPartition::new(t, p);
        let mut asked =
            FetchPositions::from_sorted(vec![(tp("a", 1), 10), (tp("a", 3), 30), (tp("b", 0), 5)]);
        assert_eq!(asked.get(&tp("a", 3)), Some(&30));
        assert_eq!(asked.get(&tp("b", 0)), Some(&5));
        assert_eq!(asked.get(&tp("a", 2)), None);
        assert_eq!(asked.get(&tp("c", 0)), None);
        asked.retain(|t| t.partition != 3);
        assert_eq!(asked.keys().cloned().collect::<Vec<_>>(), vec![tp("a", 1), tp("b", 0)]);
        assert_eq!(asked.get(&tp("a", 3)), None);
    }

    #[test]
    fn a_committed_offset_becomes_the_position_none_waits_for_earliest() {
        let mut s = owning(&[0, 1, 2]);
        let answers: OffsetAnswers =
            [(tp(0), (42, codes::NONE)), (tp(1), (-1, codes::NONE))].into_iter().collect();
        let mut out = Outputs::default();
        let retry = s.apply_committed(vec![tp(0), tp(1), tp(2)], &answers, ("m", 1), &mut out);
        assert!(retry, "partition 2 got no answer");
        let p0 = &s.partitions[&tp(0)];
        assert_eq!(
            (p0.state, p0.fetch_position, p0.commit_floor),
            (PositionState::Ready, 42, Some(42))
        );
        assert_eq!(s.partitions[&tp(1)].state, PositionState::AwaitingReset { in_flight: false });
        assert_eq!(s.partitions[&tp(2)].state, PositionState::AwaitingCommitted);
        assert!(matches!(
            out.pop(),
            Some(MemberOutput::Event(MemberEvent::PositionInitialized { position: 42, .. }))
        ));
        assert_eq!(s.awaiting_reset().collect::<Vec<_>>(), vec![&tp(1)]);
    }

    #[test]
    fn earliest_offsets_start_partitions_and_leader_errors_ask_for_metadata() {
        let mut s = owning(&[0, 1]);
        for ps in s.partitions.values_mut() {
            ps.state = PositionState::AwaitingReset { in_flight: false };
        }
        s.reset_sent(&[tp(0), tp(1)]);
        assert_eq!(s.awaiting_reset().count(), 0);
        s.reset_answered(s.epoch, &[tp(0), tp(1)]);
        let answers: OffsetAnswers =
            [(tp(0), (3, codes::NONE)), (tp(1), (0, codes::NOT_LEADER_OR_FOLLOWER))]
                .into_iter()
                .collect();
        let mut out = Outputs::default();
        let (retry, moved) = s.apply_earliest(vec![tp(0), tp(1)], &answers, ("m", 1), &mut out);
        assert!(retry);
        assert_eq!(moved, vec!["t".to_string()]);
        assert_eq!(s.partitions[&tp(0)].processed, Some(3));
    }

    #[test]
    fn only_processed_progress_past_the_commit_floor_is_committed() {
        let mut s = owning(&[0, 1]);
        let p0 = s.partitions.get_mut(&tp(0)).unwrap();
        p0.state = PositionState::Ready;
        p0.processed = Some(10);
        p0.commit_floor = Some(5);
        p0.fetch_position = 20;
        let p1 = s.partitions.get_mut(&tp(1)).unwrap();
        p1.processed = Some(5);
        p1.commit_floor = Some(5);
        assert_eq!(s.offsets_to_commit(false), vec![(tp(0), 10)]);
        assert_eq!(s.offsets_to_commit(true), vec![(tp(0), 20)], "the overcommit bug");
        assert_eq!(s.processed_of(&[tp(0), tp(1), tp(9)]), vec![(tp(0), 10), (tp(1), 5)]);
    }
}
