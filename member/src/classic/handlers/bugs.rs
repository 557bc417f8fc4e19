//! The classic member's bug switches: each hook below is called from the place in the model
//! where the real client went wrong, does nothing while its switch is off, and carries the
//! mechanism of the bug it plays. Keeping them here keeps the model's own files the client's
//! correct behaviour; no clean run enters these bodies (the bug-switch tests do).

use crate::shared::handlers::commits::Commits as _;
use std::collections::BTreeMap;

use crate::classic::commits::Commits;
use crate::classic::Member;
use crate::shared::in_flight::CommitPurpose;
use crate::shared::positions::{PartitionState, PositionState};
use crate::TopicPartition;

impl Member {
    /// Bug `retries_superseded_commit` (spring-kafka #3186): after the revoke commit, the
    /// offsets saved from a commit refused with REBALANCE_IN_PROGRESS are sent again, however
    /// old they are. True when that retry was sent (the revoke waits for its answer).
    pub(in crate::classic) fn retry_superseded_commit(&mut self) -> bool {
        if !self.rebalance.revoke_commit_attempted
            || self.commits.saved_for_retry.is_empty()
            || self.core.discovery.coordinator.is_none()
        {
            return false;
        }
        let saved = std::mem::take(&mut self.commits.saved_for_retry);
        self.send_commit(saved.into_iter().collect(), CommitPurpose::Revoke);
        true
    }

    /// Bug `retries_superseded_commit` (spring-kafka #3186): an auto-commit refused with
    /// REBALANCE_IN_PROGRESS is kept for a retry and never dropped.
    pub(in crate::classic) fn save_refused_commit(&mut self, tp: &TopicPartition, offset: i64) {
        if self.core.config.bugs.retries_superseded_commit {
            self.commits.saved_for_retry.insert(tp.clone(), offset);
        }
    }

    /// Bug `revoke_commit_never_completes` (KAFKA-14024): the answer to the commit before a
    /// revoke never reaches the code waiting for it, which waits for ever. True when the
    /// answer is dropped.
    pub(in crate::classic) fn revoke_commit_answer_dropped(&mut self, p: CommitPurpose) -> bool {
        let hangs =
            p == CommitPurpose::Revoke && self.core.config.bugs.revoke_commit_never_completes;
        if hangs {
            self.rebalance.revoke_commit_hung = true;
        }
        hangs
    }

    /// Bug `keep_stale_acks`: an ack of a batch processed under an older generation is merged
    /// into the current acked offsets (replacing the partition's entry, as brod's ack merge
    /// does) and committed under the current generation, owned or not.
    pub(in crate::classic) fn merge_stale_ack(&mut self, tp: &TopicPartition, next_offset: i64) {
        if !self.core.config.bugs.keep_stale_acks {
            return;
        }
        match self.core.positions.partitions.get_mut(tp) {
            Some(ps) if ps.state == PositionState::Ready => ps.processed = Some(next_offset),
            _ => self.commits.extra.push((tp.clone(), next_offset)),
        }
    }

    /// Bug `double_assign`: the leader gives the first member's first partition to the next
    /// member too.
    pub(in crate::classic) fn double_assign(
        &self,
        result: &mut BTreeMap<String, Vec<TopicPartition>>,
    ) {
        if !self.core.config.bugs.double_assign || result.len() < 2 {
            return;
        }
        let members: Vec<String> = result.keys().cloned().collect();
        let pick = members.iter().enumerate().find_map(|(i, m)| {
            result[m].first().map(|tp| (tp.clone(), members[(i + 1) % members.len()].clone()))
        });
        if let Some((tp, other)) = pick {
            let parts = result.get_mut(&other).expect("member exists");
            if !parts.contains(&tp) {
                parts.push(tp);
                parts.sort();
            }
        }
    }

    /// Bugs that hold on to offsets of the partitions a cooperative assignment takes away
    /// (`given_up`; `old` holds their positions): `commit_after_revoke` remembers what was
    /// processed on them, `commits_stale_stored_offset` keeps it for when they come back,
    /// `sends_past_generation_commits` queues their uncommitted progress for the next
    /// auto-commit, whatever generation that is in. The positions are left as `old`: the
    /// caller sets the new ones.
    pub(in crate::classic) fn hold_given_up_offsets(
        &mut self,
        old: &BTreeMap<TopicPartition, PartitionState>,
        given_up: &[TopicPartition],
    ) {
        let bugs = &self.core.config.bugs;
        if !(bugs.commit_after_revoke
            || bugs.commits_stale_stored_offset
            || bugs.sends_past_generation_commits)
        {
            return;
        }
        self.core.positions.partitions = old.clone();
        if self.core.config.bugs.commit_after_revoke {
            self.stash_extra_commits(given_up);
        }
        self.keep_past_generation_offsets(given_up);
    }

    /// Bug `commit_after_revoke`: every partition is revoked at once (eager, or leaving); what
    /// was processed on them is committed after the revoke, under the next generation.
    pub(in crate::classic) fn hold_revoked_offsets(&mut self) {
        if self.core.config.bugs.commit_after_revoke {
            self.stash_extra_commits(&self.core.positions.assigned.clone());
        }
    }

    /// The assignment is cleared: the bugs that keep offsets of partitions given up (see
    /// [`Self::keep_past_generation_offsets`]) take them from every position still held.
    pub(in crate::classic) fn hold_cleared_offsets(&mut self) {
        let bugs = &self.core.config.bugs;
        if bugs.commits_stale_stored_offset || bugs.sends_past_generation_commits {
            let given_up: Vec<TopicPartition> =
                self.core.positions.partitions.keys().cloned().collect();
            self.keep_past_generation_offsets(&given_up);
        }
    }

    /// Bug `commit_after_revoke`: remember what was processed on partitions being revoked.
    fn stash_extra_commits(&mut self, revoked: &[TopicPartition]) {
        let processed = self.core.positions.processed_of(revoked);
        self.commits.extra.extend(processed);
    }

    /// Bugs that hold on to offsets of partitions given up (`given_up`, still in the positions):
    /// `commits_stale_stored_offset` keeps their processed offsets for when they come back;
    /// `sends_past_generation_commits` queues their uncommitted progress for the next
    /// auto-commit, whatever generation that is in.
    fn keep_past_generation_offsets(&mut self, given_up: &[TopicPartition]) {
        if self.core.config.bugs.commits_stale_stored_offset {
            self.commits.stale_stored.extend(self.core.positions.processed_of(given_up));
        }
        if self.core.config.bugs.sends_past_generation_commits {
            let queued = self.core.positions.offsets_to_commit(false);
            self.commits.extra.extend(queued.into_iter().filter(|(tp, _)| given_up.contains(tp)));
        }
    }

    /// Bug `commits_stale_stored_offset` (librdkafka #3774): partitions of `tps` whose position
    /// was just initialised take the offset stored before they were last given up as their
    /// offset to commit (the stored-offset slot was never cleared).
    pub(in crate::classic) fn reuse_stale_stored_offsets(&mut self, tps: &[TopicPartition]) {
        if !self.core.config.bugs.commits_stale_stored_offset {
            return;
        }
        for tp in tps {
            let Some(ps) = self.core.positions.partitions.get_mut(tp) else { continue };
            if ps.state == PositionState::Ready && ps.processed == Some(ps.fetch_position) {
                if let Some(stored) = self.commits.stale_stored.remove(tp) {
                    ps.processed = Some(stored);
                }
            }
        }
    }
}

impl Commits {
    /// Bugs `commit_after_revoke`, `keep_stale_acks`, `sends_past_generation_commits`: the
    /// offsets they kept of partitions no longer owned join the next auto-commit, under the
    /// current generation (an owned partition's own offset wins), sorted; they are used up.
    pub(in crate::classic) fn add_extra(&mut self, offsets: &mut Vec<(TopicPartition, i64)>) {
        if self.extra.is_empty() {
            return;
        }
        for (tp, o) in std::mem::take(&mut self.extra) {
            if !offsets.iter().any(|(t, _)| *t == tp) {
                offsets.push((tp, o));
            }
        }
        offsets.sort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp(t: &str, p: i32) -> TopicPartition {
        TopicPartition::new(t, p)
    }

    #[test]
    fn extra_offsets_join_the_commit_once_and_never_replace_an_owned_partition() {
        let mut c = Commits { extra: vec![(tp("t", 0), 5), (tp("a", 1), 9)], ..Default::default() };
        let mut offsets = vec![(tp("t", 0), 7)];
        c.add_extra(&mut offsets);
        assert_eq!(offsets, vec![(tp("a", 1), 9), (tp("t", 0), 7)]);
        assert!(c.extra.is_empty());
    }
}
