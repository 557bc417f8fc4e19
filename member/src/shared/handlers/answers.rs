//! Reading the answers every protocol reads alike.

use kafka_protocol::messages::ResponseKind;

use super::cluster::Cluster;
use super::commits::Commits;
use super::fetch::Fetch;
use super::positions::{OffsetFetchRules, Positions};
use crate::shared::in_flight::{Pending, Sent};
use crate::Millis;

/// Dispatch of the shared answers.
pub(crate) trait Answers: OffsetFetchRules {
    /// Reads a Metadata, FindCoordinator, OffsetCommit, OffsetFetch, ListOffsets or Fetch
    /// answer; any other (a group request's, or an answer of the wrong kind) is returned for the
    /// member to read.
    fn on_common_response(
        &mut self,
        now: Millis,
        sent: Sent,
        pending: Pending,
        response: ResponseKind,
    ) -> Option<(Sent, Pending, ResponseKind)> {
        match (pending, response) {
            (Pending::Metadata, ResponseKind::Metadata(r)) => self.on_metadata(now, r),
            (Pending::FindCoordinator, ResponseKind::FindCoordinator(r)) => {
                self.on_find_coordinator(now, r)
            }
            (Pending::OffsetFetch { epoch, partitions }, ResponseKind::OffsetFetch(r)) => {
                self.on_offset_fetch(now, &sent, epoch, partitions, r)
            }
            (Pending::ListOffsets { epoch, partitions }, ResponseKind::ListOffsets(r)) => {
                self.on_list_offsets(now, epoch, partitions, r)
            }
            (Pending::Fetch { epoch, node, positions, sent_ms }, ResponseKind::Fetch(r)) => {
                self.on_fetch(now, epoch, node, positions, sent_ms, r)
            }
            (Pending::OffsetCommit(c), ResponseKind::OffsetCommit(r)) => {
                self.on_offset_commit(now, &sent, c, r)
            }
            (pending, response) => return Some((sent, pending, response)),
        }
        None
    }
}

impl<M: OffsetFetchRules + ?Sized> Answers for M {}
