//! Starting positions: OffsetFetch, then ListOffsets earliest where nothing was committed.

use std::collections::BTreeMap;

use groupsim_wire::error_codes as codes;
use kafka_protocol::messages::{ListOffsetsResponse, OffsetFetchResponse, RequestKind};

use crate::classic::in_flight::{Pending, Sent};
use crate::classic::membership::Phase;
use crate::classic::timers::Timer;
use crate::classic::{Member, Target};
use crate::probes;
use crate::shared::positions::{
    list_offsets_answers, list_offsets_request, offset_fetch_answers, offset_fetch_request,
};
use crate::{Millis, TopicPartition};

impl Member {
    pub(in crate::classic) fn maybe_fetch_committed(&mut self) {
        let Some(node) = self.discovery.coordinator else {
            return;
        };
        if self.in_flight.has_offset_fetch() || self.timers.is_set(Timer::OffsetFetchRetry) {
            return;
        }
        let wanted = self.positions.awaiting_committed();
        if wanted.is_empty() {
            return;
        }
        let req = offset_fetch_request(&self.config, &wanted);
        let timeout = self.config.request_timeout_ms;
        let pending = Pending::OffsetFetch { epoch: self.positions.epoch, partitions: wanted };
        self.send(Target::Coordinator(node), RequestKind::OffsetFetch(req), timeout, pending);
    }

    pub(in crate::classic) fn on_offset_fetch(
        &mut self,
        now: Millis,
        sent: &Sent,
        epoch: u64,
        partitions: Vec<TopicPartition>,
        resp: OffsetFetchResponse,
    ) {
        let (top_error, answers) = offset_fetch_answers(&resp, &self.config.group_id);
        if top_error != codes::NONE {
            let current = self.membership.is_current(sent);
            self.handle_group_error(now, sent, top_error, "OffsetFetch", current);
            self.retry_after_backoff(Timer::OffsetFetchRetry, now);
            return;
        }
        if epoch != self.positions.epoch || self.membership.phase != Phase::Stable {
            return;
        }
        let codes = partitions.iter().filter_map(|tp| answers.get(tp).map(|&(_, code)| code));
        probes::errors_handled(self.config.profile, "OffsetFetch", codes);
        let view = (self.membership.member_id.as_str(), self.membership.generation);
        let stale = self.config.bugs.commits_stale_stored_offset.then(|| partitions.clone());
        if self.positions.apply_committed(partitions, &answers, view, &mut self.outputs) {
            self.retry_after_backoff(Timer::OffsetFetchRetry, now);
        }
        if let Some(tps) = stale {
            self.reuse_stale_stored_offsets(&tps);
        }
    }

    pub(in crate::classic) fn maybe_list_offsets(&mut self) {
        if self.timers.is_set(Timer::ListOffsetsRetry) {
            return;
        }
        let mut by_leader: BTreeMap<i32, Vec<TopicPartition>> = BTreeMap::new();
        let mut no_leader = Vec::new();
        for tp in self.positions.awaiting_reset() {
            match self.metadata.leader_of(tp) {
                Some(node) => by_leader.entry(node).or_default().push(tp.clone()),
                None => no_leader.push(tp.topic.clone()),
            }
        }
        for t in no_leader {
            self.want_metadata_for(&t);
        }
        for (node, tps) in by_leader {
            let req = list_offsets_request(&tps);
            self.positions.reset_sent(&tps);
            let timeout = self.config.request_timeout_ms;
            let pending = Pending::ListOffsets { epoch: self.positions.epoch, partitions: tps };
            self.send(Target::Broker(node), RequestKind::ListOffsets(req), timeout, pending);
        }
    }

    pub(in crate::classic) fn on_list_offsets(
        &mut self,
        now: Millis,
        epoch: u64,
        partitions: Vec<TopicPartition>,
        resp: ListOffsetsResponse,
    ) {
        self.positions.reset_answered(epoch, &partitions);
        if epoch != self.positions.epoch {
            return;
        }
        let answers = list_offsets_answers(&resp);
        let codes = partitions.iter().filter_map(|tp| answers.get(tp).map(|&(_, code)| code));
        probes::errors_handled(self.config.profile, "ListOffsets", codes);
        let view = (self.membership.member_id.as_str(), self.membership.generation);
        let stale = self.config.bugs.commits_stale_stored_offset.then(|| partitions.clone());
        let (retry, leader_moved) =
            self.positions.apply_earliest(partitions, &answers, view, &mut self.outputs);
        if let Some(tps) = stale {
            self.reuse_stale_stored_offsets(&tps);
        }
        for topic in leader_moved {
            self.want_metadata_for(&topic);
        }
        if retry {
            self.retry_after_backoff(Timer::ListOffsetsRetry, now);
        }
    }
}
