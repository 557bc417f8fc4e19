//! The checker's hash maps ([`LookupMap`]): a fixed hash function, the same for every run and
//! every process (no random state), and no way to iterate, so neither a hash nor an order can
//! ever reach a verdict. A map that is walked stays a `BTreeMap`.

use std::borrow::Borrow;
use std::collections::HashMap;
use std::hash::Hash;
use std::ops::Index;

use groupsim_wire::fixed_hash::FixedState;

/// A map looked up by key only: it offers no iteration, keys or values, so code that would
/// depend on its (hash) order does not compile.
pub(super) struct LookupMap<K, V>(HashMap<K, V, FixedState>);

impl<K, V> Default for LookupMap<K, V> {
    fn default() -> Self {
        Self(HashMap::default())
    }
}

impl<K: Hash + Eq, V> LookupMap<K, V> {
    pub(super) fn get<Q: Hash + Eq + ?Sized>(&self, key: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
    {
        self.0.get(key)
    }

    pub(super) fn contains_key<Q: Hash + Eq + ?Sized>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
    {
        self.0.contains_key(key)
    }

    pub(super) fn insert(&mut self, key: K, value: V) -> Option<V> {
        self.0.insert(key, value)
    }

    pub(super) fn remove<Q: Hash + Eq + ?Sized>(&mut self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
    {
        self.0.remove(key)
    }

    /// The value of `key`, first set to `make()` if it has none.
    pub(super) fn get_or_insert_with(&mut self, key: K, make: impl FnOnce() -> V) -> &mut V {
        self.0.entry(key).or_insert_with(make)
    }

    pub(super) fn len(&self) -> usize {
        self.0.len()
    }
}

impl<K: Hash + Eq, V> Index<&K> for LookupMap<K, V> {
    type Output = V;

    /// The value of a key that has one (panics otherwise, as a map's index does).
    fn index(&self, key: &K) -> &V {
        &self.0[key]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The map answers as a map: a value set is found, replaced, kept by `get_or_insert_with`,
    /// and gone once removed.
    #[test]
    fn a_lookup_map_finds_what_was_set() {
        let mut m: LookupMap<String, u32> = LookupMap::default();
        assert_eq!(m.insert("a".into(), 1), None);
        assert_eq!(m.insert("a".into(), 2), Some(1));
        assert_eq!((m.get("a"), m[&"a".to_string()], m.len()), (Some(&2), 2, 1));
        *m.get_or_insert_with("b".into(), || 7) += 1;
        assert_eq!(*m.get_or_insert_with("b".into(), || 0), 8, "kept, not made again");
        assert!(m.contains_key("b"));
        assert_eq!(m.remove("a"), Some(2));
        assert_eq!((m.get("a"), m.len()), (None, 1));
    }
}
