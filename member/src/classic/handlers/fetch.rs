//! Sending Fetch requests and buffering what they return.

use std::collections::BTreeMap;

use groupsim_wire::error_codes as codes;
use groupsim_wire::records::offsets_in;
use kafka_protocol::messages::{FetchResponse, RequestKind};

use crate::classic::in_flight::Pending;
use crate::classic::timers::Timer;
use crate::classic::{Member, Target};
use crate::probes;
use crate::shared::fetch::{FetchedBatch, Fetcher};
use crate::shared::positions::PositionState;
use crate::{Millis, TopicPartition};

impl Member {
    pub(in crate::classic) fn maybe_fetch(&mut self) {
        let mut by_node: BTreeMap<i32, Vec<(TopicPartition, i64)>> = BTreeMap::new();
        let mut no_leader = Vec::new();
        for (tp, ps) in &self.positions.partitions {
            if ps.state != PositionState::Ready || ps.fetch_in_flight || ps.buffered {
                continue;
            }
            let Some(node) = self.metadata.leader_of(tp) else {
                no_leader.push(tp.topic.clone());
                continue;
            };
            if self.in_flight.has_fetch_to(node) || self.timers.is_set(Timer::FetchRetry(node)) {
                continue;
            }
            by_node.entry(node).or_default().push((tp.clone(), ps.fetch_position));
        }
        for t in no_leader {
            self.want_metadata_for(&t);
        }
        for (node, parts) in by_node {
            let (req, timeout) = Fetcher::request(&self.config, &self.metadata, &parts);
            for (tp, _) in &parts {
                if let Some(ps) = self.positions.partitions.get_mut(tp) {
                    ps.fetch_in_flight = true;
                }
            }
            let pending = Pending::Fetch {
                epoch: self.positions.epoch,
                node,
                positions: parts.into_iter().collect(),
            };
            self.send(Target::Broker(node), RequestKind::Fetch(req), timeout, pending);
        }
    }

    /// The Fetch of `positions` (of assignment `epoch`) was answered or failed: its partitions
    /// may be fetched again.
    pub(in crate::classic) fn clear_fetch_in_flight(
        &mut self,
        epoch: u64,
        positions: &BTreeMap<TopicPartition, i64>,
    ) {
        if epoch == self.positions.epoch {
            for tp in positions.keys() {
                if let Some(ps) = self.positions.partitions.get_mut(tp) {
                    ps.fetch_in_flight = false;
                }
            }
        }
    }

    pub(in crate::classic) fn on_fetch(
        &mut self,
        now: Millis,
        epoch: u64,
        node: i32,
        positions: BTreeMap<TopicPartition, i64>,
        resp: FetchResponse,
    ) {
        self.clear_fetch_in_flight(epoch, &positions);
        if epoch != self.positions.epoch || !self.consuming() {
            return; // records for an assignment being given up are dropped
        }
        if resp.error_code != codes::NONE {
            probes::error_handled(self.config.profile, "Fetch", resp.error_code);
            self.retry_after_backoff(Timer::FetchRetry(node), now);
            return;
        }
        let max = self.config.max_records_per_fetch.max(1);
        let mut got_records = false;
        let mut errored = false;
        for topic in &resp.responses {
            let name = if !topic.topic.0.is_empty() {
                topic.topic.0.to_string()
            } else {
                match self.metadata.topics.iter().find(|(_, m)| {
                    !topic.topic_id.is_nil() && m.fetch_template.topic_id == topic.topic_id
                }) {
                    Some((n, _)) => n.clone(),
                    None => continue,
                }
            };
            for pd in &topic.partitions {
                let tp = TopicPartition::new(name.clone(), pd.partition_index);
                let Some(&requested) = positions.get(&tp) else {
                    continue;
                };
                let Some(ps) = self.positions.partitions.get_mut(&tp) else {
                    continue;
                };
                if ps.state != PositionState::Ready || ps.fetch_position != requested || ps.buffered
                {
                    continue;
                }
                probes::error_handled(self.config.profile, "Fetch", pd.error_code);
                match pd.error_code {
                    codes::NONE => {
                        if let Some((first, last, count)) =
                            offsets_in(pd.records.clone(), requested, max)
                        {
                            ps.fetch_position = last + 1;
                            ps.buffered = true;
                            let batch = FetchedBatch { tp, first, last, count, epoch };
                            self.fetcher.buffered.push_back(batch);
                            got_records = true;
                        }
                    }
                    codes::OFFSET_OUT_OF_RANGE => {
                        ps.state = PositionState::AwaitingReset { in_flight: false };
                    }
                    code if codes::is_leadership_error(code) => {
                        probes::FETCH_STALE_LEADER.hit();
                        errored = true;
                        self.want_metadata_for(&tp.topic);
                    }
                    _ => errored = true,
                }
            }
        }
        if errored {
            self.retry_after_backoff(Timer::FetchRetry(node), now);
        } else if !got_records {
            self.timers.set(Timer::FetchRetry(node), now + self.config.fetch_backoff_ms);
        }
    }
}
