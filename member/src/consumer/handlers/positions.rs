//! Starting positions of assigned partitions: OffsetFetch (v9+ carries the member id and
//! epoch), then ListOffsets earliest where nothing was committed.

use std::collections::BTreeMap;

use groupsim_wire::error_codes as codes;
use kafka_protocol::messages::{ListOffsetsResponse, OffsetFetchResponse, RequestKind};

use crate::compat::sb;
use crate::consumer::in_flight::Pending;
use crate::consumer::timers::Timer;
use crate::consumer::ConsumerGroupMember;
use crate::shared::positions::{
    list_offsets_answers, list_offsets_request, offset_fetch_answers, offset_fetch_request,
};
use crate::{probes, Millis, Target, TopicPartition};

impl ConsumerGroupMember {
    pub(in crate::consumer) fn maybe_fetch_committed(&mut self) {
        let Some(node) = self.discovery.coordinator else {
            return;
        };
        let in_flight = self.in_flight.any(|p| matches!(p, Pending::OffsetFetch { .. }));
        let wanted = self.positions.awaiting_committed();
        if in_flight || self.timers.is_set(Timer::OffsetFetchRetry) || wanted.is_empty() {
            return;
        }
        let mut req = offset_fetch_request(&self.config, &wanted);
        for g in &mut req.groups {
            g.member_id = Some(sb(&self.membership.member_id));
            g.member_epoch = self.membership.epoch;
        }
        let pending = Pending::OffsetFetch { epoch: self.positions.epoch, partitions: wanted };
        let timeout = self.config.request_timeout_ms;
        self.send(Target::Coordinator(node), RequestKind::OffsetFetch(req), timeout, pending);
    }

    pub(in crate::consumer) fn on_offset_fetch(
        &mut self,
        now: Millis,
        epoch: u64,
        partitions: Vec<TopicPartition>,
        resp: OffsetFetchResponse,
    ) {
        let (top_error, answers) = offset_fetch_answers(&resp, &self.config.group_id);
        probes::error_handled(self.config.profile, "OffsetFetch", top_error);
        if top_error != codes::NONE || epoch != self.positions.epoch {
            if top_error != codes::NONE {
                self.retry_after_backoff(Timer::OffsetFetchRetry, now);
            }
            return;
        }
        let view = (self.membership.member_id.as_str(), self.membership.epoch);
        if self.positions.apply_committed(partitions, &answers, view, &mut self.outputs) {
            self.retry_after_backoff(Timer::OffsetFetchRetry, now);
        }
    }

    pub(in crate::consumer) fn maybe_list_offsets(&mut self) {
        if self.timers.is_set(Timer::ListOffsetsRetry) {
            return;
        }
        let mut by_leader: BTreeMap<i32, Vec<TopicPartition>> = BTreeMap::new();
        for tp in self.positions.awaiting_reset() {
            match self.metadata.leader_of(tp) {
                Some(node) => by_leader.entry(node).or_default().push(tp.clone()),
                None => self.metadata.wanted = true,
            }
        }
        for (node, tps) in by_leader {
            self.positions.reset_sent(&tps);
            let req = RequestKind::ListOffsets(list_offsets_request(&tps));
            let pending = Pending::ListOffsets { epoch: self.positions.epoch, partitions: tps };
            self.send(Target::Broker(node), req, self.config.request_timeout_ms, pending);
        }
    }

    pub(in crate::consumer) fn on_list_offsets(
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
        let view = (self.membership.member_id.as_str(), self.membership.epoch);
        let (retry, moved) =
            self.positions.apply_earliest(partitions, &answers, view, &mut self.outputs);
        if !moved.is_empty() {
            self.metadata.wanted = true;
        }
        if retry {
            self.retry_after_backoff(Timer::ListOffsetsRetry, now);
        }
    }
}
