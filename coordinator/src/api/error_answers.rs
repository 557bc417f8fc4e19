//! The `coordinator.answer` probe family: every answer to a group request (JoinGroup, SyncGroup,
//! Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch) that carries an error is counted as
//! `Api/State/ERROR`, so a sweep shows which (API, state, error) corners its seeds reached.
//!
//! Counted at the two places answers leave: [`GroupCoordinator::poll_output`] (every answer the
//! coordinator queued, when it is drained, with the group's state at that moment: the state
//! the operation that produced the answer left it in) and the broker's NOT_COORDINATOR refusals
//! of groups it does not coordinate (state `NotCoordinator`). State is `Loading` or
//! `NotCoordinator` while the group's offsets partition loads or is not owned here, and `NoGroup`
//! when this coordinator has no such group.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::ResponseKind;

use crate::coordinator::GroupStatus;
use crate::{error_name, probes, GroupCoordinator};

/// The API of a single-group answer and its error (the top-level code, else the first
/// per-member or per-partition one), if it carries one. Batched OffsetFetch (v8+) answers are
/// per group: see [`GroupCoordinator::count_error_answer`].
fn single_group_error(response: &ResponseKind) -> Option<(&'static str, i16)> {
    let (api, code) = match response {
        ResponseKind::JoinGroup(r) => ("JoinGroup", r.error_code),
        ResponseKind::SyncGroup(r) => ("SyncGroup", r.error_code),
        ResponseKind::Heartbeat(r) => ("Heartbeat", r.error_code),
        ResponseKind::ConsumerGroupHeartbeat(r) => ("ConsumerGroupHeartbeat", r.error_code),
        ResponseKind::LeaveGroup(r) => (
            "LeaveGroup",
            first_error(
                std::iter::once(r.error_code).chain(r.members.iter().map(|m| m.error_code)),
            ),
        ),
        ResponseKind::OffsetCommit(r) => (
            "OffsetCommit",
            first_error(r.topics.iter().flat_map(|t| t.partitions.iter().map(|p| p.error_code))),
        ),
        ResponseKind::OffsetFetch(r) => (
            "OffsetFetch",
            first_error(
                std::iter::once(r.error_code)
                    .chain(r.topics.iter().flat_map(|t| t.partitions.iter().map(|p| p.error_code))),
            ),
        ),
        _ => return None,
    };
    (code != 0).then_some((api, code))
}

/// The first non-zero code, or 0.
fn first_error(mut codes: impl Iterator<Item = i16>) -> i16 {
    codes.find(|&c| c != 0).unwrap_or(0)
}

/// Counts one error answer of the family.
fn hit(api: &str, state: &str, code: i16) {
    probes::ANSWER.hit_as(format_args!("{api}/{state}/{}", error_name(code)));
}

/// Counts the broker's own NOT_COORDINATOR refusal of a single-group request.
pub(crate) fn count_broker_refusal(response: &ResponseKind) {
    if let Some((api, code)) = single_group_error(response) {
        hit(api, "NotCoordinator", code);
    }
}

/// Counts the broker's NOT_COORDINATOR entry for one group of a batched OffsetFetch.
pub(crate) fn count_broker_refused_fetch_group() {
    hit("OffsetFetch", "NotCoordinator", ResponseError::NotCoordinator.code());
}

impl GroupCoordinator {
    /// The group's state for the family's detail (see the module docs).
    fn answer_state(&self, group: &str) -> &'static str {
        match self.group_status(group) {
            GroupStatus::NotOwned => "NotCoordinator",
            GroupStatus::Loading => "Loading",
            GroupStatus::Ready => match self.consumer_groups.get(group) {
                Some(g) => g.state().kafka_name(),
                None => self.groups.get(group).map_or("NoGroup", |g| g.state().kafka_name()),
            },
        }
    }

    /// Counts an answer being drained if it carries an error. `group` is the group the request
    /// named (single-group requests); batched OffsetFetch answers name theirs per entry.
    pub(crate) fn count_error_answer(&self, group: Option<&str>, response: &ResponseKind) {
        if let ResponseKind::OffsetFetch(r) = response {
            for g in r.groups.iter().filter(|g| g.error_code != 0) {
                hit("OffsetFetch", self.answer_state(g.group_id.as_str()), g.error_code);
            }
        }
        if let (Some(group), Some((api, code))) = (group, single_group_error(response)) {
            hit(api, self.answer_state(group), code);
        }
    }
}
