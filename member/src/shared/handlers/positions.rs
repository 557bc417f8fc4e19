//! Starting positions: OffsetFetch, then ListOffsets earliest where nothing was committed.

use std::collections::BTreeMap;

use groupsim_wire::error_codes as codes;
use kafka_protocol::messages::{
    ListOffsetsResponse, OffsetFetchRequest, OffsetFetchResponse, RequestKind,
};

use super::cluster::Cluster;
use crate::probes;
use crate::shared::core::{Plumbing, Protocol};
use crate::shared::in_flight::{Pending, Sent};
use crate::shared::outputs::Target;
use crate::shared::positions::{
    list_offsets_answers, list_offsets_request, offset_fetch_answers, offset_fetch_request,
};
use crate::shared::timers::Timer;
use crate::{Millis, TopicPartition};

/// What the protocol adds to the committed-offsets lookup.
pub(crate) trait OffsetFetchRules: Protocol {
    /// The OffsetFetch request for `wanted` (KIP-848 adds the member id and epoch).
    fn offset_fetch_request(&self, wanted: &[TopicPartition]) -> OffsetFetchRequest {
        offset_fetch_request(&self.core().config, wanted)
    }
    /// A group-level error answered an OffsetFetch (before its retry is armed).
    fn offset_fetch_error(&mut self, now: Millis, sent: &Sent, code: i16);
    /// Whether the answer may set positions now (classic: only in a stable generation).
    fn positions_usable(&self) -> bool {
        true
    }
}

/// OffsetFetch and ListOffsets.
pub(crate) trait Positions: OffsetFetchRules {
    fn maybe_fetch_committed(&mut self) {
        let core = self.core();
        let Some(node) = core.discovery.coordinator else {
            return;
        };
        if core.in_flight.has_offset_fetch() || core.timers.is_set(Timer::OffsetFetchRetry) {
            return;
        }
        let wanted = core.positions.awaiting_committed();
        if wanted.is_empty() {
            return;
        }
        let req = self.offset_fetch_request(&wanted);
        let core = self.core();
        let timeout = core.config.request_timeout_ms;
        let pending = Pending::OffsetFetch { epoch: core.positions.epoch, partitions: wanted };
        self.send(Target::Coordinator(node), RequestKind::OffsetFetch(req), timeout, pending);
    }

    fn on_offset_fetch(
        &mut self,
        now: Millis,
        sent: &Sent,
        epoch: u64,
        partitions: Vec<TopicPartition>,
        resp: OffsetFetchResponse,
    ) {
        let (top_error, answers) = offset_fetch_answers(&resp, &self.core().config.group_id);
        if top_error != codes::NONE {
            self.offset_fetch_error(now, sent, top_error);
            self.core_mut().offset_fetch_failed(epoch, &codes::error_name(top_error));
            self.retry_after_backoff(Timer::OffsetFetchRetry, now);
            return;
        }
        if epoch != self.core().positions.epoch || !self.positions_usable() {
            return;
        }
        let codes = partitions.iter().filter_map(|tp| answers.get(tp).map(|&(_, code)| code));
        probes::errors_handled(self.core().config.profile, "OffsetFetch", codes);
        let (generation, member_id) = self.sent_under();
        let set = partitions.clone();
        let core = self.core_mut();
        let view = (member_id.as_str(), generation);
        if core.positions.apply_committed(partitions, &answers, view, &mut core.outputs) {
            self.retry_after_backoff(Timer::OffsetFetchRetry, now);
        }
        self.positions_set(&set);
    }

    fn maybe_list_offsets(&mut self) {
        let core = self.core();
        if core.timers.is_set(Timer::ListOffsetsRetry)
            || core.positions.awaiting_reset().next().is_none()
        {
            return;
        }
        let mut by_leader: BTreeMap<i32, Vec<TopicPartition>> = BTreeMap::new();
        let mut no_leader = Vec::new();
        for tp in core.positions.awaiting_reset() {
            match core.metadata.leader_of(tp) {
                Some(node) => by_leader.entry(node).or_default().push(tp.clone()),
                None => no_leader.push(tp.topic.clone()),
            }
        }
        for t in no_leader {
            self.want_metadata_for(&t);
        }
        for (node, tps) in by_leader {
            let positions = &self.core().positions;
            let req = list_offsets_request(&tps, |tp| positions.resets_to_latest(tp));
            let core = self.core_mut();
            core.positions.reset_sent(&tps);
            let timeout = core.config.request_timeout_ms;
            let pending = Pending::ListOffsets { epoch: core.positions.epoch, partitions: tps };
            self.send(Target::Broker(node), RequestKind::ListOffsets(req), timeout, pending);
        }
    }

    fn on_list_offsets(
        &mut self,
        now: Millis,
        epoch: u64,
        partitions: Vec<TopicPartition>,
        resp: ListOffsetsResponse,
    ) {
        self.core_mut().positions.reset_answered(epoch, &partitions);
        if epoch != self.core().positions.epoch {
            return;
        }
        let answers = list_offsets_answers(&resp);
        let codes = partitions.iter().filter_map(|tp| answers.get(tp).map(|&(_, code)| code));
        probes::errors_handled(self.core().config.profile, "ListOffsets", codes);
        let (generation, member_id) = self.sent_under();
        let set = partitions.clone();
        let core = self.core_mut();
        let view = (member_id.as_str(), generation);
        let (retry, leader_moved) =
            core.positions.apply_earliest(partitions, &answers, view, &mut core.outputs);
        self.positions_set(&set);
        for topic in leader_moved {
            self.want_metadata_for(&topic);
        }
        if retry {
            self.retry_after_backoff(Timer::ListOffsetsRetry, now);
        }
    }
}

impl<M: OffsetFetchRules + ?Sized> Positions for M {}
