//! The member's probe situations that need a look at several sub-states (is a revoke under
//! way, what a JoinGroup leaves behind): read-only checks beside the probe hits in the other
//! handlers. Hits are counted outside the history, so none of this changes what the member does.

use kafka_protocol::messages::LeaveGroupResponse;

use crate::classic::rebalance::RevokeStage;
use crate::classic::Member;
use crate::probes;

impl Member {
    /// Whether the member is revoking: its revoke callback runs, or (giving up every partition:
    /// eager, or leaving) the callback returned or the revoke commit was sent and the partitions
    /// are not given up yet. A cooperative member's commit before rejoining keeps its
    /// partitions: no revoke.
    pub(in crate::classic) fn revoking(&self) -> bool {
        let gives_up_all = !self.rebalance.cooperative || self.leaving;
        let started = self.rebalance.revoke_stage != RevokeStage::Idle
            || self.rebalance.revoke_commit_attempted;
        self.rebalance.in_callback()
            || (gives_up_all && started && !self.core.positions.assigned.is_empty())
    }

    /// Probe `REVOKE_STARTED` (a trigger point): called just before each step that can begin a
    /// revoke (the revoke commit sent or given up, the revoke callback started); hits when no
    /// step of this revoke ran yet.
    pub(in crate::classic) fn revoke_begins(&self) {
        if !self.revoking() {
            probes::REVOKE_STARTED.hit();
        }
    }

    /// Probe `SESSION_LOST_DURING_REVOKE`: called where the member learns it is out of the group
    /// (fenced, unknown member, illegal generation, its own session or poll timeout), before it
    /// reacts.
    pub(in crate::classic) fn probe_session_lost(&self) {
        if self.revoking() {
            probes::SESSION_LOST_DURING_REVOKE.hit();
        }
    }

    /// Probes of a JoinGroup about to be sent: an OffsetCommit still in flight, and for a
    /// cooperative member a kept partition whose processed progress is not committed.
    pub(in crate::classic) fn probe_join_situations(&self) {
        if self.core.in_flight.has_commit() {
            probes::REJOIN_WITH_COMMIT_IN_FLIGHT.hit();
        }
        let progress = self
            .core
            .positions
            .partitions
            .values()
            .any(|ps| ps.processed.is_some() && ps.processed != ps.commit_floor);
        if self.rebalance.cooperative && progress {
            probes::COOPERATIVE_REBALANCE_WITH_PROGRESS.hit();
        }
    }

    /// Probe `ERROR_HANDLED` of a LeaveGroup answer: the member leaves (or, after a poll
    /// timeout, rejoins) whatever it says, so its errors, the group's and the member's, are
    /// handled by being read and passed over.
    pub(in crate::classic) fn probe_leave_errors(&self, resp: &LeaveGroupResponse) {
        let codes =
            std::iter::once(resp.error_code).chain(resp.members.iter().map(|m| m.error_code));
        probes::errors_handled(self.core.config.profile, "LeaveGroup", codes);
    }

    /// Probes of a processing ack carrying `generation`: older than the current generation
    /// (stale), and older than the one before it.
    pub(in crate::classic) fn probe_ack_generation(&self, generation: i32) {
        let current = self.membership.generation;
        if generation < current {
            probes::STALE_ACK.hit();
        }
        if generation < current.saturating_sub(1) {
            probes::ACK_OLDER_THAN_PREVIOUS_GENERATION.hit();
        }
    }
}
