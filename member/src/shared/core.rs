//! The protocol-neutral core both members embed, and the small trait through which the shared
//! handlers (`shared::handlers`) reach the protocol-specific parts.
//!
//! [`Core`] owns what a consumer does the same way whichever group protocol it speaks: its
//! configuration and application, the outputs queue, the in-flight table, the deadline table,
//! cluster metadata, the coordinator, the owned partitions and their positions, fetched batches
//! and processing. Each protocol's member (`classic::Member`, `consumer::ConsumerGroupMember`)
//! holds a `Core` beside its own membership state and implements [`Protocol`]: where the core
//! is, what generation (or member epoch) and member id requests go out under, its reaction to
//! answers, and the few hooks where the protocols differ. The shared handlers are provided
//! methods of extension traits implemented for every [`Protocol`], so they are written once.

use kafka_protocol::messages::{RequestKind, ResponseKind};

use crate::shared::discovery::Discovery;
use crate::shared::fetch::Fetcher;
use crate::shared::in_flight::{
    CommitPurpose, CommitSent, Failure, InFlight, Pending, Request, Sent,
};
use crate::shared::metadata::Metadata;
use crate::shared::outputs::{Outputs, RequestFailure, Target};
use crate::shared::positions::SubscriptionState;
use crate::shared::processing::Processor;
use crate::shared::timers::{Timer, Timers};
use crate::{Application, MemberConfig, MemberEvent, Millis, RequestId, TopicPartition};

/// The protocol-neutral state of a member.
#[derive(Debug)]
pub(crate) struct Core {
    pub(crate) config: MemberConfig,
    pub(crate) app: Box<dyn Application>,
    /// The latest `now` the member was given (for hooks called deep inside a handler).
    pub(crate) clock: Millis,
    pub(crate) started: bool,
    pub(crate) finished: bool,
    pub(crate) outputs: Outputs,
    pub(crate) in_flight: InFlight,
    pub(crate) timers: Timers,
    pub(crate) metadata: Metadata,
    pub(crate) discovery: Discovery,
    pub(crate) positions: SubscriptionState,
    pub(crate) fetcher: Fetcher,
    pub(crate) processor: Processor,
}

impl Core {
    /// The OffsetFetch of assignment `epoch` failed with `error`. A correct client asks again;
    /// bug `resets_position_on_offset_fetch_failure` applies its reset policy instead, as if
    /// nothing were committed.
    pub(crate) fn offset_fetch_failed(&mut self, epoch: u64, error: &str) {
        if epoch != self.positions.epoch {
            return;
        }
        if let Some(policy) = self.config.bugs.resets_position_on_offset_fetch_failure {
            let latest = policy == crate::config::OffsetReset::Latest;
            self.positions.reset_awaiting_committed(error, latest);
        }
    }

    /// A core for `config`, running `app`; `seed` drives processing times.
    pub(crate) fn new(config: MemberConfig, seed: u64, app: Box<dyn Application>) -> Self {
        Self {
            config,
            app,
            clock: 0,
            started: false,
            finished: false,
            outputs: Outputs::default(),
            in_flight: InFlight::default(),
            timers: Timers::default(),
            metadata: Metadata::default(),
            discovery: Discovery::default(),
            positions: SubscriptionState::default(),
            fetcher: Fetcher::default(),
            processor: Processor::new(seed),
        }
    }

    /// A new assignment epoch that keeps the partitions in `kept` going (KIP-848's incremental
    /// reconciliation: the Java consumer and librdkafka touch only the partitions that move).
    /// Batches fetched or in progress and requests in flight of the old epoch carry over for
    /// the kept partitions; those of the partitions given up become stale.
    pub(crate) fn next_epoch_keeping(&mut self, kept: &std::collections::BTreeSet<TopicPartition>) {
        let old = self.positions.epoch;
        let new = old + 1;
        self.positions.epoch = new;
        self.in_flight.carry_over(old, new, kept);
        let batches = self.fetcher.buffered.iter_mut().map(|b| (&b.tp, &mut b.epoch));
        let running =
            self.processor.processing.iter_mut().chain(self.processor.detached.iter_mut());
        for (tp, epoch) in batches.chain(running.map(|p| (&p.tp, &mut p.epoch))) {
            if *epoch == old && kept.contains(tp) {
                *epoch = new;
            }
        }
    }

    /// The earliest instant at which the member has work to do.
    pub(crate) fn poll_timeout(&self) -> Option<Millis> {
        if self.finished || !self.started {
            return None;
        }
        self.timers.next_deadline()
    }

    /// Stops for good: nothing in progress or buffered is processed any more.
    pub(crate) fn finish(&mut self) {
        self.finished = true;
        self.processor.clear();
        self.fetcher.buffered.clear();
    }

    /// Queues a history event.
    pub(crate) fn emit(&mut self, event: MemberEvent) {
        self.outputs.emit(event);
    }

    /// Arms `timer` one `retry.backoff.ms` from `now`.
    pub(crate) fn retry_after_backoff(&mut self, timer: Timer, now: Millis) {
        self.timers.set(timer, now + self.config.retry_backoff_ms);
    }

    /// Forgets every retry backoff that ran out by `now`.
    pub(crate) fn expire_backoffs(&mut self, now: Millis) {
        self.timers.expire(now, Timer::is_backoff);
    }

    /// Due `metadata.max.age.ms` refresh: Metadata is wanted again.
    pub(crate) fn refresh_metadata_when_due(&mut self, now: Millis) {
        if self.timers.is_due(Timer::MetadataRefresh, now) {
            self.timers.cancel(Timer::MetadataRefresh);
            self.metadata.wanted = true;
        }
    }
}

/// A group protocol's member, as the shared handlers see it.
pub(crate) trait Protocol {
    fn core(&self) -> &Core;
    fn core_mut(&mut self) -> &mut Core;
    /// The generation (classic) or member epoch (KIP-848) and the member id that requests,
    /// commits and processed batches go out under.
    fn sent_under(&self) -> (i32, String);
    /// Looks at the state and sends whatever it calls for.
    fn drive(&mut self, now: Millis);
    /// Writes the deadlines and holds that follow from the state (after every input).
    fn arm_timers(&mut self);
    /// Reads the answer to one of its requests.
    fn on_response(&mut self, now: Millis, sent: Sent, pending: Pending, response: ResponseKind);
    /// A request got no usable answer.
    fn on_failure(&mut self, now: Millis, sent: Sent, pending: Pending, failure: Failure);
    /// An OffsetCommit was answered and read (acks and failures reported): what follows from
    /// its first error (None: every offset accepted).
    fn commit_answered(&mut self, now: Millis, sent: &Sent, p: CommitPurpose, err: Option<i16>);
    /// Hook: the answer to a commit for `purpose` never reaches the code waiting for it (a
    /// classic bug switch); true drops it unread.
    fn commit_answer_dropped(&mut self, _purpose: CommitPurpose) -> bool {
        false
    }
    /// Hook: the coordinator rejected `offset` of `tp` with `code`.
    fn commit_rejected(
        &mut self,
        _tp: &TopicPartition,
        _offset: i64,
        _code: i16,
        _p: CommitPurpose,
    ) {
    }
    /// A commit got no answer (its `CommitFailed` events are out): what follows per purpose.
    fn on_commit_lost(&mut self, now: Millis, sent: &Sent, purpose: CommitPurpose);

    /// Hook: the coordinator was found (a fresh session window for the classic member).
    fn coordinator_found(&mut self, _now: Millis) {}
    /// Hook: the coordinator was forgotten (before its in-flight requests fail).
    fn coordinator_lost(&mut self) {}
    /// Hook: a Metadata answer was applied.
    fn metadata_applied(&mut self) {}
    /// The period of the metadata refresh.
    fn metadata_refresh_ms(&self) -> u64 {
        self.core().config.metadata_max_age_ms
    }
    /// Whether the member fetches and processes records now.
    fn consuming(&self) -> bool;
    /// Whether `tp` may be fetched and processed (KIP-848: not while its revocation runs).
    fn fetchable(&self, _tp: &TopicPartition) -> bool {
        true
    }
    /// How many batches may be processed at once.
    fn max_concurrent_batches(&self) -> usize {
        1
    }
    /// Whether acks may come after processing (an asynchronous acknowledger).
    fn acks_asynchronously(&self) -> bool {
        false
    }
    /// Hook: an ack of an older assignment came back (classic bug switches act on it).
    fn stale_ack(&mut self, _tp: &TopicPartition, _next_offset: i64) {}
    /// Hook: a processed batch is acknowledged under `generation` (probes).
    fn ack_probes(&self, _generation: i32) {}
    /// Hook: positions of `partitions` were set from committed or earliest offsets.
    fn positions_set(&mut self, _partitions: &[TopicPartition]) {}
}

/// Request plumbing and the public API's common steps, for every [`Protocol`].
pub(crate) trait Plumbing: Protocol {
    /// Sends `request`, remembering it (and the member's view now) in the in-flight table.
    fn send(&mut self, target: Target, request: RequestKind, timeout_ms: u64, pending: Pending) {
        let (generation, member_id) = self.sent_under();
        let core = self.core_mut();
        let id = core.outputs.send(target, request, timeout_ms);
        core.in_flight.insert(id, Sent { target, generation, member_id }, pending);
    }

    /// Queues a history event.
    fn emit(&mut self, event: MemberEvent) {
        self.core_mut().emit(event);
    }

    /// Arms `timer` one `retry.backoff.ms` from `now`.
    fn retry_after_backoff(&mut self, timer: Timer, now: Millis) {
        self.core_mut().retry_after_backoff(timer, now);
    }

    /// The answer to request `id` (`Err`: it got none). Unknown ids (already failed, or from
    /// before a close) are ignored.
    fn answer(&mut self, now: Millis, id: RequestId, answer: Result<ResponseKind, RequestFailure>) {
        self.core_mut().clock = now;
        if !self.core().finished {
            if let Some(Request { sent, pending }) = self.core_mut().in_flight.remove(id) {
                match answer {
                    Ok(response) => self.on_response(now, sent, pending, response),
                    Err(f) => self.on_failure(now, sent, pending, Failure::from_request_failure(f)),
                }
                self.drive(now);
            }
        }
        self.arm_timers();
    }

    /// Runs `f` (an input) unless the member finished, then drives and re-arms the timers.
    fn input(&mut self, now: Millis, f: impl FnOnce(&mut Self)) {
        self.core_mut().clock = now;
        if !self.core().finished {
            f(self);
            self.drive(now);
        }
        self.arm_timers();
    }

    /// The failures every protocol treats alike (Metadata, FindCoordinator, positions, Fetch,
    /// OffsetCommit); a group request's failure is returned for the member to handle. A lost
    /// connection to the coordinator then forgets the coordinator (the Java client's
    /// `markCoordinatorUnknown`).
    fn on_common_failure(
        &mut self,
        now: Millis,
        sent: Sent,
        pending: Pending,
        failure: Failure,
    ) -> Option<(Sent, Pending, Failure)> {
        let api = pending.api();
        match pending {
            Pending::Metadata => {
                let core = self.core_mut();
                core.metadata.wanted = true;
                core.retry_after_backoff(Timer::MetadataRetry, now);
                core.metadata.broker_cursor += 1;
            }
            Pending::FindCoordinator => {
                crate::probes::DISCOVERY_FAILED.hit();
                let core = self.core_mut();
                core.retry_after_backoff(Timer::FindCoordinatorRetry, now);
                core.metadata.broker_cursor += 1;
            }
            Pending::OffsetCommit(CommitSent { offsets, purpose, .. }) => {
                if matches!(failure, Failure::Connection(_)) {
                    crate::probes::COMMIT_ANSWER_LOST.hit();
                }
                self.emit_commit_failed(&sent, offsets, &failure.name());
                self.on_commit_lost(now, &sent, purpose);
            }
            Pending::OffsetFetch { epoch, .. } => {
                self.core_mut().offset_fetch_failed(epoch, &failure.name());
                self.retry_after_backoff(Timer::OffsetFetchRetry, now);
            }
            Pending::ListOffsets { epoch, partitions } => {
                let core = self.core_mut();
                core.positions.reset_answered(epoch, &partitions);
                core.retry_after_backoff(Timer::ListOffsetsRetry, now);
                if matches!(failure, Failure::Connection(_)) {
                    core.metadata.wanted = true;
                }
            }
            Pending::Fetch { epoch, node, positions, .. } => {
                let core = self.core_mut();
                core.positions.clear_fetch_in_flight(epoch, &positions);
                core.retry_after_backoff(Timer::FetchRetry(node), now);
                if matches!(failure, Failure::Connection(_)) {
                    core.metadata.wanted = true;
                }
            }
            group => return Some((sent, group, failure)),
        }
        self.forget_coordinator_on_lost_connection(now, sent.target, api, &failure);
        None
    }

    /// A request on the coordinator connection timed out or was disconnected: the coordinator
    /// is presumed dead.
    fn forget_coordinator_on_lost_connection(
        &mut self,
        now: Millis,
        target: Target,
        api: &str,
        failure: &Failure,
    ) {
        if matches!(failure, Failure::Connection(_)) {
            self.coordinator_failed(now, target, &format!("{api} {}", failure.name()));
        }
    }

    /// Reports each of `offsets` as not committed, under the view the commit was sent with.
    fn emit_commit_failed(
        &mut self,
        sent: &Sent,
        offsets: Vec<(TopicPartition, i64)>,
        error: &str,
    ) {
        for (tp, offset) in offsets {
            self.emit(MemberEvent::CommitFailed {
                member_id: sent.member_id.clone(),
                generation: sent.generation,
                partition: tp,
                offset,
                error: error.to_string(),
            });
        }
    }

    /// A request to `target` failed (a lost connection, NOT_COORDINATOR or
    /// COORDINATOR_NOT_AVAILABLE): if it went to the current coordinator, that coordinator is
    /// forgotten.
    fn coordinator_failed(&mut self, now: Millis, target: Target, reason: &str) {
        if matches!(target, Target::Coordinator(node) if self.core().discovery.coordinator == Some(node))
        {
            self.mark_coordinator_unknown(now, reason);
        }
    }

    /// Forget the coordinator: report it, close its connection, fail what was in flight on it,
    /// and look it up again after `retry_backoff_ms`.
    fn mark_coordinator_unknown(&mut self, now: Millis, reason: &str) {
        let Some(node) = self.core_mut().discovery.coordinator.take() else {
            return;
        };
        self.emit(MemberEvent::CoordinatorLost { reason: reason.to_string() });
        self.coordinator_lost();
        self.core_mut().outputs.close(Target::Coordinator(node));
        self.retry_after_backoff(Timer::FindCoordinatorRetry, now);
        for id in self.core().in_flight.on(Target::Coordinator(node)) {
            if let Some(Request { sent, pending }) = self.core_mut().in_flight.remove(id) {
                let failure = Failure::Connection(RequestFailure::Disconnected);
                self.on_failure(now, sent, pending, failure);
            }
        }
    }
}

impl<M: Protocol + ?Sized> Plumbing for M {}
