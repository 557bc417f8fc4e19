//! Member ids and topic partitions numbered in the order the views first meet them, so the
//! per-event maps of holdings are keyed by small numbers: a lookup compares integers and copies
//! no string, where a key of owned strings cost two copies and several string comparisons per
//! event. The numbers never leave the views; nothing iterates a map keyed by them in an order a
//! verdict can see.
//!
//! The names are found by hash ([`LookupMap`]): a lookup hashes the name once and compares it
//! once, where an ordered map compared it with a name at each level.

use groupsim_wire::TopicPartition;

use super::fixed_hash::LookupMap;

/// A member id's number.
pub(super) type MemberKey = u32;
/// A topic partition's number.
pub(super) type PartitionKey = u32;

#[derive(Default)]
pub(super) struct Interned {
    members: LookupMap<String, MemberKey>,
    partitions: LookupMap<TopicPartition, PartitionKey>,
}

impl Interned {
    /// `id`'s number, given one if it has none yet.
    pub(super) fn member(&mut self, id: &str) -> MemberKey {
        if let Some(&k) = self.members.get(id) {
            return k;
        }
        let k = self.members.len() as MemberKey;
        self.members.insert(id.to_string(), k);
        k
    }

    /// `tp`'s number, given one if it has none yet.
    pub(super) fn partition(&mut self, tp: &TopicPartition) -> PartitionKey {
        if let Some(&k) = self.partitions.get(tp) {
            return k;
        }
        let k = self.partitions.len() as PartitionKey;
        self.partitions.insert(tp.clone(), k);
        k
    }

    /// The numbers of `id` and `tp`, if both have one (else no map holds anything of them).
    pub(super) fn find(&self, id: &str, tp: &TopicPartition) -> Option<(MemberKey, PartitionKey)> {
        Some((*self.members.get(id)?, *self.partitions.get(tp)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_name_keeps_the_number_it_was_first_given() {
        let mut ids = Interned::default();
        let (a, b) = (TopicPartition::new("t", 0), TopicPartition::new("t", 1));
        assert_eq!(ids.find("m", &a), None);
        let m = ids.member("m");
        let n = ids.member("n");
        assert_ne!(m, n);
        assert_eq!(ids.find("m", &a), None, "a partition not yet numbered");
        let pa = ids.partition(&a);
        let pb = ids.partition(&b);
        assert_ne!(pa, pb);
        assert_eq!((ids.member("m"), ids.partition(&a)), (m, pa));
        assert_eq!(ids.find("n", &b), Some((n, pb)));
        assert_eq!(ids.find("x", &b), None);
    }
}
