//! The views' tenures read back: in which tenure a member held a partition when it processed,
//! sent or had a commit validated, the keys every commit rule judges holdings by.

use groupsim_wire::{Millis, TopicPartition};

use super::interned::{MemberKey, PartitionKey};
use super::ranges::RangeSet;
use super::views::{AcceptedCommit, Holding, Views};

impl Views {
    /// The tenure in which the committer of `c` held the partition when it sent that commit,
    /// if it held it then.
    pub(super) fn tenure_when_sent(&self, c: &AcceptedCommit<'_>) -> Option<usize> {
        let (m, p) = self.ids.find(c.member_id, c.tp)?;
        self.sent_in_tenure.get(&(m, c.generation, p, c.offset)).copied()
    }

    /// The tenure in which `member_id` held `tp` at some moment of millisecond `at` (the latest,
    /// if two met within it): assigned it by then and not revoked or lost it before.
    pub(super) fn tenure_at(
        &self,
        member_id: &str,
        tp: &TopicPartition,
        at: Millis,
    ) -> Option<usize> {
        let spans = self.tenures.get(&self.ids.find(member_id, tp)?)?;
        spans
            .iter()
            .rev()
            .find(|(_, from, until)| *from <= at && until.is_none_or(|u| u >= at))
            .map(|(t, _, _)| *t)
    }

    /// How member `m` held partition `p` while in `generation`: in the tenure that generation's
    /// assignment was part of, else (between a JoinGroup answer and the next assignment, or
    /// while revoking) in the tenure it holds the partition in now, else by generation alone.
    pub(super) fn holding(&self, m: MemberKey, generation: i32, p: PartitionKey) -> Holding {
        let now = self.tenure_now.get(&(m, p)).copied();
        self.tenure_of
            .get(&(m, generation, p))
            .copied()
            .or(now)
            .map_or(Holding::Generation(generation), Holding::Tenure)
    }

    /// What `member_id` processed of `tp` while holding it as `holding`, with the index of the
    /// last such event.
    pub(super) fn processed_in(
        &self,
        member_id: &str,
        holding: Holding,
        tp: &TopicPartition,
    ) -> Option<&(RangeSet, usize)> {
        let (m, p) = self.ids.find(member_id, tp)?;
        self.processed.get(&(m, holding, p))
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
        self.ids
            .find(member_id, tp)
            .and_then(|(m, p)| self.tenure_of.get(&(m, generation, p)).copied())
            .or(held)
            .map_or(Holding::Generation(generation), Holding::Tenure)
    }

    /// Forgets what member `m` held partition `p` in at `generation` and above, before a new
    /// tenure of it begins: such entries come from an earlier membership under the same id (a
    /// KIP-848 member fenced keeps its id, and a recreated group counts epochs from 1). Walks
    /// only that member's entries from `generation` up (the maps are ordered by member, then
    /// generation), not the whole maps.
    pub(super) fn forget_tenures_from(&mut self, m: MemberKey, generation: i32, p: PartitionKey) {
        let stale: Vec<_> = self
            .tenure_of
            .range((m, generation, 0)..=(m, i32::MAX, PartitionKey::MAX))
            .filter(|((_, _, q), _)| *q == p)
            .map(|(k, _)| *k)
            .collect();
        for k in stale {
            self.tenure_of.remove(&k);
        }
        let stale: Vec<_> = self
            .sent_in_tenure
            .range((m, generation, 0, i64::MIN)..=(m, i32::MAX, PartitionKey::MAX, i64::MAX))
            .filter(|((_, _, q, _), _)| *q == p)
            .map(|(k, _)| *k)
            .collect();
        for k in stale {
            self.sent_in_tenure.remove(&k);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The range walk forgets exactly what a filter over the whole maps would: this member's
    /// entries for this partition at this generation and above, and nothing of other members
    /// (including the numbers next to it), partitions or lower generations.
    #[test]
    fn forgetting_tenures_matches_a_filter_over_the_whole_maps() {
        let mut views = Views::default();
        let mut n = 0;
        for m in 0..5 {
            for g in [-1, 0, 1, 3, 4, 7] {
                for p in 0..3 {
                    n += 1;
                    views.tenure_of.insert((m, g, p), n);
                    for offset in [-1, 0, 5] {
                        views.sent_in_tenure.insert((m, g, p, offset), n);
                    }
                }
            }
        }
        for (member, generation, p) in [(2, 3, 1), (0, -1, 2), (4, 7, 0), (9, 0, 0)] {
            let mut expected_of = views.tenure_of.clone();
            expected_of.retain(|(m, g, t), _| !(*m == member && *t == p && *g >= generation));
            let mut expected_sent = views.sent_in_tenure.clone();
            expected_sent.retain(|(m, g, t, _), _| !(*m == member && *t == p && *g >= generation));
            views.forget_tenures_from(member, generation, p);
            assert_eq!(views.tenure_of, expected_of, "{member} {generation} {p}");
            assert_eq!(views.sent_in_tenure, expected_sent, "{member} {generation} {p}");
        }
        assert!(views.tenure_of.contains_key(&(2, 1, 1)));
        assert!(!views.tenure_of.contains_key(&(2, 4, 1)));
    }
}
