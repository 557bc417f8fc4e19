//! The views' tenures read back: in which tenure a member held a partition when it processed,
//! sent or had a commit validated, the keys every commit rule judges holdings by.

use groupsim_wire::{Millis, TopicPartition};

use super::views::{AcceptedCommit, Holding, Views};

impl Views {
    /// The tenure in which the committer of `c` held the partition when it sent that commit,
    /// if it held it then.
    pub(super) fn tenure_when_sent(&self, c: &AcceptedCommit<'_>) -> Option<usize> {
        let key = (c.member_id.to_string(), c.generation, c.tp.clone(), c.offset);
        self.sent_in_tenure.get(&key).copied()
    }

    /// The tenure in which `member_id` held `tp` at some moment of millisecond `at` (the latest,
    /// if two met within it): assigned it by then and not revoked or lost it before.
    pub(super) fn tenure_at(
        &self,
        member_id: &str,
        tp: &TopicPartition,
        at: Millis,
    ) -> Option<usize> {
        let spans = self.tenures.get(&(member_id.to_string(), tp.clone()))?;
        spans
            .iter()
            .rev()
            .find(|(_, from, until)| *from <= at && until.is_none_or(|u| u >= at))
            .map(|(t, _, _)| *t)
    }

    /// How `member_id` held `tp` while in `generation`: in the tenure that generation's
    /// assignment was part of, else (between a JoinGroup answer and the next assignment, or
    /// while revoking) in the tenure it holds the partition in now, else by generation alone.
    /// Looked up with owned keys, handed back for the caller to reuse.
    pub(super) fn holding(
        &self,
        member_id: String,
        generation: i32,
        tp: TopicPartition,
    ) -> (Holding, String, TopicPartition) {
        let now_key = (member_id, tp);
        let now = self.tenure_now.get(&now_key).copied();
        let (member_id, tp) = now_key;
        let of_key = (member_id, generation, tp);
        let holding = self
            .tenure_of
            .get(&of_key)
            .copied()
            .or(now)
            .map_or(Holding::Generation(generation), Holding::Tenure);
        let (member_id, _, tp) = of_key;
        (holding, member_id, tp)
    }

    /// The tenure a commit is judged in when its generation's assignment does not say: the one
    /// its committer held the partition in when the coordinator validated it, else when the
    /// committer sent it (its append, or the request itself, may outlast the holding).
    pub(super) fn commit_tenure(&self, c: &AcceptedCommit<'_>) -> Option<usize> {
        self.tenure_at(c.member_id, c.tp, c.validated_at).or_else(|| self.tenure_when_sent(c))
    }

    /// [`Self::holding`] for an accepted commit: the tenure of the committing generation, else
    /// [`Self::commit_tenure`].
    pub(super) fn commit_holding(&self, c: &AcceptedCommit<'_>) -> Holding {
        self.holding_with(c.member_id, c.generation, c.tp, self.commit_tenure(c))
    }

    pub(super) fn holding_with(
        &self,
        member_id: &str,
        generation: i32,
        tp: &TopicPartition,
        held: Option<usize>,
    ) -> Holding {
        let key = (member_id.to_string(), generation, tp.clone());
        self.tenure_of
            .get(&key)
            .copied()
            .or(held)
            .map_or(Holding::Generation(generation), Holding::Tenure)
    }
}
