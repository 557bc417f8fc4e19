//! The `max.poll.interval.ms` stall (the processing loop itself is shared).

use crate::classic::Member;
use crate::Millis;

impl Member {
    /// Java profiles: a batch processed for longer than `max.poll.interval.ms` means the
    /// application stopped polling; the member leaves the group (see
    /// [`Self::poll_timeout_leave`]).
    pub(in crate::classic) fn check_processing_stall(&mut self, now: Millis) {
        let max_poll = self.core.config.rebalance_timeout_ms.max(0) as u64;
        let stalled = self.core.processor.stalled(now, max_poll);
        if self.rules.enforces_max_poll && stalled && !self.membership.member_id.is_empty() {
            self.poll_timeout_leave();
        }
    }
}
