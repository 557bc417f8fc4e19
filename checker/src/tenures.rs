//! The views' tenures read back: in which tenure a member held a partition when it processed,
//! sent or had a commit validated, the keys every commit rule judges holdings by.

use std::ops::Bound;

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

    /// Forgets what `member_id` held `tp` in at `generation` and above, before a new tenure of
    /// it begins: such entries come from an earlier membership under the same id (a KIP-848
    /// member fenced keeps its id, and a recreated group counts epochs from 1). Walks only that
    /// member's entries from `generation` up (the maps are ordered by member id, then
    /// generation), not the whole maps.
    pub(super) fn forget_tenures_from(
        &mut self,
        member_id: &str,
        generation: i32,
        tp: &TopicPartition,
    ) {
        let lowest = TopicPartition { topic: String::new(), partition: i32::MIN };
        let from = (member_id.to_string(), generation, lowest);
        let stale: Vec<_> = self
            .tenure_of
            .range((Bound::Included(&from), Bound::Unbounded))
            .take_while(|((m, _, _), _)| m == member_id)
            .filter(|((_, _, t), _)| t == tp)
            .map(|(k, _)| k.clone())
            .collect();
        for k in stale {
            self.tenure_of.remove(&k);
        }
        let (m, g, lowest) = from;
        let from = (m, g, lowest, i64::MIN);
        let stale: Vec<_> = self
            .sent_in_tenure
            .range((Bound::Included(&from), Bound::Unbounded))
            .take_while(|((m, _, _, _), _)| m == member_id)
            .filter(|((_, _, t, _), _)| t == tp)
            .map(|(k, _)| k.clone())
            .collect();
        for k in stale {
            self.sent_in_tenure.remove(&k);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp(topic: &str, partition: i32) -> TopicPartition {
        TopicPartition::new(topic, partition)
    }

    /// The range walk forgets exactly what a filter over the whole maps would: this member's
    /// entries for this partition at this generation and above, and nothing of other members
    /// (including ids that sort right after it), partitions or lower generations.
    #[test]
    fn forgetting_tenures_matches_a_filter_over_the_whole_maps() {
        let members = ["a", "m", "m0", "mm", "z"];
        let partitions = [tp("t", 0), tp("t", 1), tp("u", 0)];
        let mut views = Views::default();
        let mut n = 0;
        for m in members {
            for g in [-1, 0, 1, 3, 4, 7] {
                for p in &partitions {
                    n += 1;
                    views.tenure_of.insert((m.to_string(), g, p.clone()), n);
                    for offset in [-1, 0, 5] {
                        views.sent_in_tenure.insert((m.to_string(), g, p.clone(), offset), n);
                    }
                }
            }
        }
        for (member, generation, p) in
            [("m", 3, tp("t", 1)), ("a", -1, tp("u", 0)), ("q", 0, tp("t", 0))]
        {
            let mut expected_of = views.tenure_of.clone();
            expected_of.retain(|(m, g, t), _| !(m == member && *t == p && *g >= generation));
            let mut expected_sent = views.sent_in_tenure.clone();
            expected_sent.retain(|(m, g, t, _), _| !(m == member && *t == p && *g >= generation));
            views.forget_tenures_from(member, generation, &p);
            assert_eq!(views.tenure_of, expected_of, "{member} {generation} {p:?}");
            assert_eq!(views.sent_in_tenure, expected_sent, "{member} {generation} {p:?}");
        }
        assert!(views.tenure_of.contains_key(&("m".to_string(), 1, tp("t", 1))));
        assert!(!views.tenure_of.contains_key(&("m".to_string(), 4, tp("t", 1))));
    }
}
