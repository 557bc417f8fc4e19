//! The coordinator's commit bug switches: each hook is called from the place in the commit
//! path where the real broker went wrong and plays that mistake. No clean run enters them (the
//! bug-switch tests do).

use kafka_protocol::error::ResponseError;

use super::{AppendDone, PendingCommit};
use crate::group::Group;
use crate::offsets_log::OffsetsRecord;
use crate::{GroupCoordinator, Millis};

impl GroupCoordinator {
    /// Bug `skip_commit_generation_check`: a commit is accepted with no member, generation or
    /// epoch fence at all; a classic group the coordinator does not hold is made for it, and a
    /// member the classic group holds has its session renewed.
    pub(crate) fn unfenced_commit_verdict(
        &mut self,
        now: Millis,
        group_id: &str,
        member_id: &str,
    ) -> Result<(), ResponseError> {
        if self.consumer_groups.contains_key(group_id) {
            return Ok(());
        }
        match self.groups.get_mut(group_id) {
            None => {
                self.groups.insert(group_id.to_string(), Group::new(group_id));
            }
            Some(g) if g.has(member_id) => g.touch(member_id, now, &mut self.fx),
            Some(_) => {}
        }
        Ok(())
    }

    /// Bug `ack_commit_before_log_append`: the commit is cached, recorded and acknowledged
    /// now; its append lands later (or never, if the broker dies first).
    pub(crate) fn ack_commit_before_append(
        &mut self,
        now: Millis,
        commit: PendingCommit,
        records: Vec<OffsetsRecord>,
    ) {
        let group = commit.group.clone();
        self.finish_commit(commit, None);
        self.append(now, &group, records, AppendDone::Nothing);
    }
}
