//! Auto-commits and the answers to the classic member's commits.

use crate::classic::Member;
use crate::shared::handlers::commits::Commits;
use crate::Millis;

impl Member {
    pub(in crate::classic) fn maybe_auto_commit(&mut self, now: Millis) {
        self.auto_commit(now, |m| {
            let overcommit = m.core.config.bugs.skip_revoke_commit_then_overcommit;
            let mut offsets = m.core.positions.offsets_to_commit(overcommit);
            m.commits.add_extra(&mut offsets);
            offsets
        });
    }
}
