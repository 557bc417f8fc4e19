//! Starting batches and finishing them with their acks.

use crate::probes;
use crate::shared::core::{Plumbing, Protocol};
use crate::shared::processing::ProcessingBatch;
use crate::{MemberEvent, Millis};

/// The processing loop.
pub(crate) trait Processing: Protocol {
    /// Starts buffered batches of the current assignment while the profile's concurrency
    /// allows: one batch at a time per partition, and none while a detached batch of the same
    /// assignment is unfinished (acks must stay in offset order). Batches of an older
    /// assignment, of a partition no longer owned or being revoked, are dropped.
    fn maybe_start_processing(&mut self, now: Millis) {
        let max_batches = self.max_concurrent_batches();
        let async_acks = self.acks_asynchronously();
        let (generation, member_id) = self.sent_under();
        let mut i = 0;
        loop {
            let core = self.core();
            if i >= core.fetcher.buffered.len() || core.processor.processing.len() >= max_batches {
                break;
            }
            let batch = &core.fetcher.buffered[i];
            if batch.epoch != core.positions.epoch
                || !core.positions.partitions.contains_key(&batch.tp)
                || !self.fetchable(&batch.tp)
            {
                self.core_mut().fetcher.buffered.remove(i);
                continue;
            }
            if core.processor.busy(&batch.tp, core.positions.epoch) {
                i += 1;
                continue;
            }
            let core = self.core_mut();
            let batch = core.fetcher.buffered.remove(i).expect("index checked");
            let more =
                core.fetcher.buffered.iter().any(|b| b.tp == batch.tp && b.epoch == batch.epoch);
            if let Some(ps) = core.positions.partitions.get_mut(&batch.tp) {
                ps.buffered = more;
            }
            let duration =
                match core.app.processing_ms(&batch.tp, batch.first, batch.last, batch.count) {
                    Some(ms) => ms,
                    None => (0..batch.count)
                        .map(|_| {
                            core.processor.draw_processing_ms(core.config.processing_ms_per_record)
                        })
                        .sum(),
                };
            let ack_delay = if async_acks {
                core.app.ack_delay_ms(&batch.tp, batch.first, batch.last)
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
                generation,
                member_id: member_id.clone(),
            };
            // A slow batch and a stale ack taken up by one batch describe that batch: the longer
            // holds, so faults drawn before the heal never add up to a delay neither was drawn
            // to be (as slow revokes before one callback do not).
            let slow = core.processor.take_slow_batch(now);
            match core.processor.stale_ack_ms.take() {
                Some(delay) => {
                    p.done_at += delay.max(slow) + ack_delay;
                    core.processor.detached.push(p);
                }
                None if ack_delay > 0 => {
                    p.done_at += slow + ack_delay;
                    core.processor.detached.push(p);
                }
                None => {
                    p.done_at += slow;
                    core.processor.processing.push(p);
                }
            }
            probes::PROCESSING_STARTED.hit();
        }
    }

    /// Finishes every batch due by `now`, in the order they finish. Each is recorded as
    /// processed under the member id and generation (member epoch) it ran in, then
    /// acknowledged: the ack counts only if the partition's assignment is still the one the
    /// batch ran under (an ack from an older assignment is dropped, as brod and Elsa's
    /// acknowledger do; the [`Protocol::stale_ack`] hook sees it).
    fn finish_processing(&mut self, now: Millis) {
        while let Some(p) = self.core_mut().processor.take_next_due(now) {
            self.emit(MemberEvent::RecordsProcessed {
                member_id: p.member_id.clone(),
                generation: p.generation,
                partition: p.tp.clone(),
                first_offset: p.first,
                last_offset: p.last,
            });
            self.ack_probes(p.generation);
            let core = self.core_mut();
            if p.epoch == core.positions.epoch {
                if let Some(ps) = core.positions.partitions.get_mut(&p.tp) {
                    ps.processed = Some(p.last + 1);
                }
            } else {
                self.stale_ack(&p.tp, p.last + 1);
            }
        }
    }
}

impl<M: Protocol + ?Sized> Processing for M {}
