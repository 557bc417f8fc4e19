//! The member processes' views by stable name ([`MemberViews`]): rules walk them in name order,
//! and every member event looks one up by name, so the lookup goes through a hashed index and
//! the walk through an ordered one. Members are never forgotten within a history, so a name's
//! slot never moves.

use std::collections::BTreeMap;

use super::fixed_hash::LookupMap;
use super::views::MemberView;

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
