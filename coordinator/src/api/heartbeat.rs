//! Heartbeat (API 12): a member says it is alive and learns whether a rebalance is under way.
//!
//! Before it gets here (`api/mod.rs`): a group not coordinated here gets NOT_COORDINATOR, and
//! one whose offsets partition is still loading gets NONE, so its members keep their sessions
//! while it loads.
//!
//! Rules (Kafka's handleHeartbeat), in order:
//! - Unknown group: UNKNOWN_MEMBER_ID (the member was removed and must rejoin).
//! - Dead group (one leaving this coordinator): COORDINATOR_NOT_AVAILABLE, so the member looks
//!   the coordinator up again.
//! - A static member's stale member id: FENCED_INSTANCE_ID. An unknown member, or an instance
//!   id nobody holds whatever the member id (Kafka's `validateMember`): UNKNOWN_MEMBER_ID.
//!   Another generation: ILLEGAL_GENERATION.
//! - Then by group state:
//!   - Empty: UNKNOWN_MEMBER_ID.
//!   - PreparingRebalance and CompletingRebalance: REBALANCE_IN_PROGRESS, so the member rejoins
//!     (or sends its SyncGroup). The heartbeat still counts: the session deadline restarts.
//!   - Stable: NONE, and the session deadline restarts.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::{HeartbeatRequest, HeartbeatResponse};

use crate::group::GroupState;
use crate::{probes, GroupCoordinator, Millis, RequestId};

impl GroupCoordinator {
    /// Heartbeat: see the module documentation for the rules.
    pub(crate) fn handle_heartbeat(
        &mut self,
        now: Millis,
        id: RequestId,
        version: i16,
        req: HeartbeatRequest,
    ) {
        let member_id = req.member_id.to_string();
        // Bug `forgets_fenced_instances` reads no instance: the member id decides.
        let instance = (version >= 3 && !self.config.bugs.forgets_fenced_instances)
            .then(|| req.group_instance_id.as_ref().map(|s| s.to_string()))
            .flatten();
        let any_generation = self.config.bugs.accepts_heartbeat_of_any_generation;
        let fx = &mut self.fx;
        let error = match self.groups.get_mut(req.group_id.as_str()) {
            None => ResponseError::UnknownMemberId.code(),
            Some(g) if g.is_static_member_fenced(&member_id, instance.as_deref()) => {
                ResponseError::FencedInstanceId.code()
            }
            Some(g) if g.is_instance_unheld(instance.as_deref()) || !g.has(&member_id) => {
                ResponseError::UnknownMemberId.code()
            }
            // Bug `accepts_heartbeat_of_any_generation` skips this check.
            Some(g) if req.generation_id != g.generation_id && !any_generation => {
                ResponseError::IllegalGeneration.code()
            }
            // A group holding the member is not Empty (and no Dead group is held).
            Some(g) if g.state == GroupState::Stable => {
                g.touch(&member_id, now, fx);
                0
            }
            Some(g) => {
                probes::HEARTBEAT_REBALANCE_IN_PROGRESS.hit();
                g.touch(&member_id, now, fx);
                ResponseError::RebalanceInProgress.code()
            }
        };
        fx.respond(id, HeartbeatResponse::default().with_error_code(error));
    }
}
