//! What the coordinator's operations produce besides state changes: answers, history events,
//! timers, and group snapshots to store.
//!
//! A leaf module (below the groups and the coordinator): [`Effects`] is kept apart from the
//! groups so a group can be borrowed mutably while it queues answers and arms timers. Answers
//! are queued in their domain form ([`crate::answers::Answer`]) and events in the order they
//! happen; the API layer encodes answers as [`CoordinatorOutput`]s when they are drained.

use std::collections::{BTreeSet, VecDeque};

use kafka_protocol::messages::ResponseKind;

use crate::answers::{Answer, CommitTopicResult, JoinResult, Parked, SyncResult};
use crate::consumer_group::records::ConsumerGroupValue;
use crate::offsets_log::{GroupMetadataValue, OffsetsRecord};
use crate::timers::TimerKey;
use crate::{CoordinatorEvent, Millis, RequestId};

/// What the coordinator asks its driver to do.
#[derive(Clone, Debug, PartialEq)]
pub enum CoordinatorOutput {
    /// Answer request `id` with `response` (encode with the request's version).
    Response { id: RequestId, response: ResponseKind },
    /// Record a ground-truth event in the history.
    Event(CoordinatorEvent),
}

/// One queued output, before its answer (if it is one) is encoded.
#[derive(Clone, Debug)]
pub(crate) enum Output {
    /// Answer request `id`.
    Answer { id: RequestId, answer: Answer },
    /// Record a ground-truth event in the history.
    Event(CoordinatorEvent),
}

/// Outputs and timers, kept apart from the groups so a group can be borrowed mutably while it
/// queues answers and arms timers.
#[derive(Debug, Default)]
pub(crate) struct Effects {
    pub outputs: VecDeque<Output>,
    /// Every armed timer, ordered by deadline; each owner stores its own deadline so an entry
    /// can be found and removed in O(log n).
    pub timers: BTreeSet<(Millis, TimerKey)>,
    /// Group snapshots to append to the offsets log without waiting for them, in the order
    /// queued (a classic group became Empty; a consumer group changed on a timer; a group
    /// converted between the protocols); the coordinator drains these.
    pub stores: Vec<OffsetsRecord>,
    /// Group snapshots whose append an answer waits for (a static member's takeover of a
    /// Stable group), drained after `stores`.
    pub stores_then_answer: Vec<StoreThenAnswer>,
}

/// A snapshot to append, and the answer that goes out once it is written (`response`) or when
/// the append fails because the offsets partition moved away (`on_failure`).
#[derive(Debug)]
pub(crate) struct StoreThenAnswer {
    pub record: OffsetsRecord,
    pub id: RequestId,
    pub response: ResponseKind,
    pub on_failure: ResponseKind,
}

impl Effects {
    /// Queue an answer to request `id`, already in its API's layout.
    pub fn respond(&mut self, id: RequestId, response: impl Into<ResponseKind>) {
        self.answer(id, Answer::Encoded(response.into()));
    }

    /// Queue a JoinGroup answer to a (parked) request.
    pub fn answer_join(&mut self, to: Parked, result: JoinResult) {
        self.answer(to.id, Answer::Join { version: to.version, result });
    }

    /// Queue a SyncGroup answer to a (parked) request.
    pub fn answer_sync(&mut self, to: Parked, result: SyncResult) {
        self.answer(to.id, Answer::Sync { version: to.version, result });
    }

    /// Queue an OffsetCommit answer.
    pub fn answer_commit(&mut self, id: RequestId, topics: Vec<CommitTopicResult>) {
        self.answer(id, Answer::Commit { topics });
    }

    fn answer(&mut self, id: RequestId, answer: Answer) {
        self.outputs.push_back(Output::Answer { id, answer });
    }

    /// Queue a history event.
    pub fn event(&mut self, event: CoordinatorEvent) {
        self.outputs.push_back(Output::Event(event));
    }

    /// (Re)arm the timer whose deadline is stored in `slot`.
    pub fn rearm(&mut self, slot: &mut Option<Millis>, key: TimerKey, at: Millis) {
        if let Some(old) = slot.take() {
            self.timers.remove(&(old, key.clone()));
        }
        self.timers.insert((at, key));
        *slot = Some(at);
    }

    /// Queue a fire-and-forget append of a group's metadata.
    pub fn store_group(&mut self, snapshot: GroupMetadataValue) {
        self.stores.push(OffsetsRecord::Group(snapshot));
    }

    /// Queue an append of a group's metadata that answer `id` waits for: `response` once it is
    /// written, `on_failure` if the offsets partition moves away first.
    pub fn store_group_then_respond(
        &mut self,
        snapshot: GroupMetadataValue,
        id: RequestId,
        response: impl Into<ResponseKind>,
        on_failure: impl Into<ResponseKind>,
    ) {
        self.stores_then_answer.push(StoreThenAnswer {
            record: OffsetsRecord::Group(snapshot),
            id,
            response: response.into(),
            on_failure: on_failure.into(),
        });
    }

    /// Queue a fire-and-forget append of a consumer group's snapshot.
    pub fn store_consumer_group(&mut self, snapshot: ConsumerGroupValue) {
        self.stores.push(OffsetsRecord::ConsumerGroup(snapshot));
    }

    /// Stop the timer whose deadline is stored in `slot`.
    pub fn disarm(&mut self, slot: &mut Option<Millis>, key: TimerKey) {
        if let Some(old) = slot.take() {
            self.timers.remove(&(old, key));
        }
    }
}
