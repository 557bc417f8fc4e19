//! What each member process reported of itself ([`MemberView`]), by stable name
//! ([`MemberViews`]): rules walk the views in name order, and every member event looks one up by
//! name, so the lookup goes through a hashed index and the walk through an ordered one. Members
//! are never forgotten within a history, so a name's slot never moves.

use std::collections::{BTreeMap, BTreeSet};

use groupsim_wire::{Millis, TopicPartition};

use super::fixed_hash::LookupMap;

/// One member process (by stable name) as it reported itself.
#[derive(Default)]
pub(super) struct MemberView {
    /// The group it joins.
    pub(super) group: String,
    /// Its member id and generation, as of its last join or assignment.
    pub(super) member_id: Option<String>,
    pub(super) generation: i32,
    /// Whether its process is running.
    pub(super) live: bool,
    /// generation -> (Assigned event index)
    pub(super) assigned_at: BTreeMap<i32, usize>,
    /// Partitions it owns now.
    pub(super) owned: BTreeSet<TopicPartition>,
    /// Whether it speaks the consumer protocol (KIP-848): `generation` is its member epoch.
    pub(super) consumer: bool,
    /// Whether the scenario asked it to leave since it last started.
    pub(super) leave_requested: bool,
    /// Partitions it owns, each with when it last got or processed something of it.
    pub(super) progress: BTreeMap<TopicPartition, Millis>,
    /// KIP-848: partitions its coordinator gave it (in a target assignment it received) that it
    /// has not taken up yet, each with when it first received it.
    pub(super) pending: BTreeMap<TopicPartition, Millis>,
    /// When it last started, and until when the nemesis last paused it: it cannot heartbeat
    /// before both.
    pub(super) started_at: Millis,
    pub(super) paused_until: Millis,
    /// When it reported `member_id` last: an id reported before its last start belongs to the
    /// incarnation before (a crashed process's id lives on at the coordinator until its
    /// session expires).
    pub(super) id_at: Millis,
    /// Its last JoinGroup refused with an error no retry cures while the group stays as it is,
    /// since it last joined: (error, the protocols it offered, event index).
    pub(super) join_refused: Option<(String, Vec<String>, usize)>,
}

/// Member views by process name.
#[derive(Default)]
pub(super) struct MemberViews {
    /// Name -> slot, for lookups.
    slot_of: LookupMap<String, usize>,
    /// Name -> slot, in name order, for walks.
    order: BTreeMap<String, usize>,
    views: Vec<MemberView>,
}

impl MemberViews {
    pub(super) fn get(&self, name: &str) -> Option<&MemberView> {
        self.slot_of.get(name).map(|&i| &self.views[i])
    }

    pub(super) fn get_mut(&mut self, name: &str) -> Option<&mut MemberView> {
        self.slot_of.get(name).map(|&i| &mut self.views[i])
    }

    /// The view of `name`, made empty first if the name is new.
    pub(super) fn entry(&mut self, name: &str) -> &mut MemberView {
        let slot = match self.slot_of.get(name) {
            Some(&i) => i,
            None => {
                let i = self.views.len();
                self.views.push(MemberView::default());
                self.slot_of.insert(name.to_string(), i);
                self.order.insert(name.to_string(), i);
                i
            }
        };
        &mut self.views[slot]
    }

    /// Every view with its name, in name order.
    pub(super) fn iter(&self) -> impl Iterator<Item = (&String, &MemberView)> + '_ {
        self.order.iter().map(|(name, &i)| (name, &self.views[i]))
    }

    /// Every view, in name order.
    pub(super) fn values(&self) -> impl Iterator<Item = &MemberView> + '_ {
        self.order.values().map(|&i| &self.views[i])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Views are found by name, kept across lookups, and walked in name order whatever order
    /// the names came in.
    #[test]
    fn views_are_found_by_name_and_walked_in_name_order() {
        let mut m = MemberViews::default();
        for (name, generation) in [("m2", 2), ("m10", 10), ("a", 1), ("m2", 3)] {
            m.entry(name).generation += generation;
        }
        assert_eq!(m.get("m2").map(|v| v.generation), Some(5));
        assert!(m.get("m3").is_none());
        m.get_mut("a").expect("a view").live = true;
        let walked: Vec<(&str, i32, bool)> =
            m.iter().map(|(n, v)| (n.as_str(), v.generation, v.live)).collect();
        assert_eq!(walked, [("a", 1, true), ("m10", 10, false), ("m2", 5, false)]);
        let generations: Vec<i32> = m.values().map(|v| v.generation).collect();
        assert_eq!(generations, [1, 10, 5]);
    }
}
