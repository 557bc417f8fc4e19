//! Starting batches, finishing them and their acks, and the `max.poll.interval.ms` stall.

use crate::classic::Member;
use crate::probes;
use crate::shared::positions::PositionState;
use crate::shared::processing::ProcessingBatch;
use crate::{MemberEvent, Millis};

impl Member {
    pub(in crate::classic) fn maybe_start_processing(&mut self, now: Millis) {
        if self.leaving {
            return;
        }
        let mut i = 0;
        while i < self.fetcher.buffered.len()
            && self.processor.processing.len() < self.rules.max_concurrent_batches
        {
            let batch = &self.fetcher.buffered[i];
            if batch.epoch != self.positions.epoch
                || !self.positions.partitions.contains_key(&batch.tp)
            {
                self.fetcher.buffered.remove(i);
                continue;
            }
            // One batch at a time per partition, and none while a detached batch of the same
            // assignment is unfinished: acks must stay in offset order.
            if self.processor.busy(&batch.tp, self.positions.epoch) {
                i += 1;
                continue;
            }
            let batch = self.fetcher.buffered.remove(i).expect("index checked");
            if let Some(ps) = self.positions.partitions.get_mut(&batch.tp) {
                ps.buffered = false;
            }
            let duration =
                match self.app.processing_ms(&batch.tp, batch.first, batch.last, batch.count) {
                    Some(ms) => ms,
                    None => (0..batch.count)
                        .map(|_| {
                            self.processor.draw_processing_ms(self.config.processing_ms_per_record)
                        })
                        .sum(),
                };
            let ack_delay = if self.rules.acks_asynchronously {
                self.app.ack_delay_ms(&batch.tp, batch.first, batch.last)
            } else {
                0
            };
            let mut p = ProcessingBatch {
                tp: batch.tp,
                first: batch.first,
                last: batch.last,
                started_at: now,
                done_at: now + duration,
                epoch: batch.epoch,
                generation: self.membership.generation,
                member_id: self.membership.member_id.clone(),
            };
            match self.processor.stale_ack_ms.take() {
                Some(delay) => {
                    p.done_at += delay + ack_delay;
                    self.processor.detached.push(p);
                }
                None if ack_delay > 0 => {
                    p.done_at += ack_delay;
                    self.processor.detached.push(p);
                }
                None => self.processor.processing.push(p),
            }
            probes::PROCESSING_STARTED.hit();
        }
    }

    /// Finishes every batch due by `now`, in the order they finish. Each is recorded as
    /// processed under the member id and generation it ran in, then acknowledged: the ack
    /// counts only if the partition's assignment is still the one the batch ran under (an ack
    /// from an older generation is dropped, as brod and Elsa's acknowledger do).
    pub(in crate::classic) fn finish_processing(&mut self, now: Millis) {
        while let Some(p) = self.processor.take_next_due(now) {
            self.emit(MemberEvent::RecordsProcessed {
                member_id: p.member_id.clone(),
                generation: p.generation,
                partition: p.tp.clone(),
                first_offset: p.first,
                last_offset: p.last,
            });
            self.probe_ack_generation(p.generation);
            let current = p.epoch == self.positions.epoch;
            match self.positions.partitions.get_mut(&p.tp) {
                Some(ps) if current => ps.processed = Some(p.last + 1),
                _ if !current && self.config.bugs.keep_stale_acks => {
                    // Bug: the stale ack is merged into the current acked offsets (replacing the
                    // partition's entry, as brod's ack merge does) and committed under the
                    // current generation, owned or not.
                    match self.positions.partitions.get_mut(&p.tp) {
                        Some(ps) if ps.state == PositionState::Ready => {
                            ps.processed = Some(p.last + 1)
                        }
                        _ => self.commits.extra.push((p.tp.clone(), p.last + 1)),
                    }
                }
                _ => {}
            }
        }
    }

    /// Java profiles: a batch processed for longer than `max.poll.interval.ms` means the
    /// application stopped polling; the member leaves the group (see
    /// [`Self::poll_timeout_leave`]).
    pub(in crate::classic) fn check_processing_stall(&mut self, now: Millis) {
        let max_poll = self.config.rebalance_timeout_ms.max(0) as u64;
        let stalled = self.processor.stalled(now, max_poll);
        if self.rules.enforces_max_poll && stalled && !self.membership.member_id.is_empty() {
            self.poll_timeout_leave();
        }
    }
}
