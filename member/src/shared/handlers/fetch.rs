//! Sending Fetch requests to partition leaders and buffering what they return.

use groupsim_wire::error_codes as codes;
use groupsim_wire::records::offset_chunks_into;
use kafka_protocol::messages::{FetchResponse, RequestKind};

use super::cluster::Cluster;
use crate::probes;
use crate::shared::core::{Plumbing, Protocol};
use crate::shared::fetch::{FetchedBatch, Fetcher};
use crate::shared::in_flight::Pending;
use crate::shared::outputs::Target;
use crate::shared::positions::FetchPositions;
use crate::shared::positions::PositionState;
use crate::shared::timers::Timer;
use crate::{Millis, TopicPartition};

/// Fetch by leader.
pub(crate) trait Fetch: Protocol {
    fn maybe_fetch(&mut self, now: Millis) {
        // By node, in node order (a member fetches from few leaders: a sorted list is enough).
        let mut by_node: Vec<(i32, Vec<(TopicPartition, i64)>)> = Vec::new();
        let mut no_leader = Vec::new();
        let core = self.core();
        for (tp, ps) in &core.positions.partitions {
            if ps.state != PositionState::Ready
                || ps.fetch_in_flight
                || ps.buffered
                || !self.fetchable(tp)
            {
                continue;
            }
            let Some(node) = core.metadata.leader_of(tp) else {
                no_leader.push(tp.topic.clone());
                continue;
            };
            if core.in_flight.has_fetch_to(node) || core.timers.is_set(Timer::FetchRetry(node)) {
                continue;
            }
            let at = match by_node.binary_search_by_key(&node, |(n, _)| *n) {
                Ok(at) => at,
                Err(at) => {
                    by_node.insert(at, (node, Vec::new()));
                    at
                }
            };
            by_node[at].1.push((tp.clone(), ps.fetch_position));
        }
        for t in no_leader {
            self.want_metadata_for(&t);
        }
        for (node, parts) in by_node {
            let core = self.core_mut();
            let (req, timeout) = Fetcher::request(&core.config, &core.metadata, &parts);
            for (tp, _) in &parts {
                if let Some(ps) = core.positions.partitions.get_mut(tp) {
                    ps.fetch_in_flight = true;
                }
            }
            let pending = Pending::Fetch {
                epoch: core.positions.epoch,
                node,
                positions: FetchPositions::from_sorted(parts),
                sent_ms: now,
            };
            self.send(Target::Broker(node), RequestKind::Fetch(req), timeout, pending);
        }
    }

    /// `sent_ms`: when the request went out. An answer with no record leaves the next Fetch to
    /// that leader for `fetch_backoff_ms` after it: at once when the broker held the request
    /// that long (Kafka's long poll), paced when a broker answered at once.
    fn on_fetch(
        &mut self,
        now: Millis,
        epoch: u64,
        node: i32,
        positions: FetchPositions,
        sent_ms: Millis,
        resp: FetchResponse,
    ) {
        self.core_mut().positions.clear_fetch_in_flight(epoch, &positions);
        if epoch != self.core().positions.epoch || !self.consuming() {
            return; // records for an assignment being given up are dropped
        }
        if resp.error_code != codes::NONE {
            probes::error_handled(self.core().config.profile, "Fetch", resp.error_code);
            self.retry_after_backoff(Timer::FetchRetry(node), now);
            return;
        }
        // Mostly none: a partition is unfetchable only while it is being revoked.
        let unfetchable: Vec<&TopicPartition> =
            positions.keys().filter(|tp| !self.fetchable(tp)).collect();
        let core = self.core_mut();
        let max = core.config.max_records_per_fetch.max(1);
        let mut got_records = false;
        let mut errored = false;
        let mut moved = Vec::new();
        // One vector for every partition's runs of records, kept from answer to answer.
        let mut chunks = std::mem::take(&mut core.fetcher.runs);
        for topic in &resp.responses {
            let name = if !topic.topic.0.is_empty() {
                topic.topic.0.as_str()
            } else {
                match core.metadata.topics.iter().find(|(_, m)| {
                    !topic.topic_id.is_nil() && m.fetch_template.topic_id == topic.topic_id
                }) {
                    Some((n, _)) => n.as_str(),
                    None => continue,
                }
            };
            // One key per topic, its partition set per answer (no name copied per partition).
            let mut tp = TopicPartition::new(name, 0);
            for pd in &topic.partitions {
                tp.partition = pd.partition_index;
                let Some(&requested) = positions.get(&tp) else {
                    continue;
                };
                if unfetchable.contains(&&tp) {
                    continue; // a partition being revoked: its records are dropped
                }
                let Some(ps) = core.positions.partitions.get_mut(&tp) else {
                    continue;
                };
                if ps.state != PositionState::Ready || ps.fetch_position != requested || ps.buffered
                {
                    continue;
                }
                probes::error_handled(core.config.profile, "Fetch", pd.error_code);
                match pd.error_code {
                    codes::NONE => {
                        // The whole answer is kept and handed out `max` records at a time, as
                        // Java's consumer keeps a completed fetch; the partition is fetched
                        // again once the last of it has started.
                        offset_chunks_into(pd.records.as_ref(), requested, max, &mut chunks);
                        for &(first, last, count) in &chunks {
                            ps.fetch_position = last + 1;
                            ps.buffered = true;
                            let batch = FetchedBatch { tp: tp.clone(), first, last, count, epoch };
                            core.fetcher.buffered.push_back(batch);
                            got_records = true;
                        }
                    }
                    codes::OFFSET_OUT_OF_RANGE => {
                        ps.state = PositionState::AwaitingReset { in_flight: false };
                    }
                    code if codes::is_leadership_error(code) => {
                        probes::FETCH_STALE_LEADER.hit();
                        errored = true;
                        moved.push(tp.topic.clone());
                    }
                    _ => errored = true,
                }
            }
        }
        for topic in moved {
            self.want_metadata_for(&topic);
        }
        let core = self.core_mut();
        core.fetcher.runs = chunks;
        if errored {
            core.retry_after_backoff(Timer::FetchRetry(node), now);
        } else if !got_records && sent_ms + core.config.fetch_backoff_ms > now {
            core.timers.set(Timer::FetchRetry(node), sent_ms + core.config.fetch_backoff_ms);
        }
    }
}

impl<M: Protocol + ?Sized> Fetch for M {}
