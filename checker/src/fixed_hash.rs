//! The checker's hash maps ([`LookupMap`]): a fixed hash function, the same for every run and
//! every process (no random state), and no way to iterate, so neither a hash nor an order can
//! ever reach a verdict. A map that is walked stays a `BTreeMap`.

use std::borrow::Borrow;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::ops::Index;

/// A map looked up by key only: it offers no iteration, keys or values, so code that would
/// depend on its (hash) order does not compile.
pub(super) struct LookupMap<K, V>(HashMap<K, V, Fixed>);

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

/// The hash the maps use: the same for every run and every process.
type Fixed = BuildHasherDefault<WordHasher>;

/// A multiply-and-rotate hash over whole words (the one rustc uses for its own tables): fast for
/// the short names hashed here, and no defence against chosen collisions, which nothing here
/// needs (the names are the run's own).
#[derive(Default)]
struct WordHasher(u64);

impl WordHasher {
    const K: u64 = 0x517c_c1b7_2722_0a95;

    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(Self::K);
    }
}

impl Hasher for WordHasher {
    fn write(&mut self, bytes: &[u8]) {
        self.add(bytes.len() as u64);
        let mut words = bytes.chunks_exact(8);
        for w in &mut words {
            self.add(u64::from_le_bytes(w.try_into().expect("chunks of eight")));
        }
        let rest = words.remainder();
        if !rest.is_empty() {
            let mut last = [0u8; 8];
            last[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(last));
        }
    }

    fn write_u8(&mut self, n: u8) {
        self.add(u64::from(n));
    }

    fn write_u32(&mut self, n: u32) {
        self.add(u64::from(n));
    }

    fn write_u64(&mut self, n: u64) {
        self.add(n);
    }

    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;

    #[test]
    fn the_hash_is_fixed_and_tells_lengths_apart() {
        let hash = |s: &str| Fixed::default().hash_one(s);
        assert_eq!(hash("member-1"), hash("member-1"));
        assert_ne!(hash("member-1"), hash("member-2"));
        assert_ne!(hash("a"), hash("a\0"), "padding of the last word");
        assert_ne!(hash("abcdefgh"), hash("abcdefgh\0"));
        // A fixed function: the same value in every process.
        assert_eq!(Fixed::default().hash_one(7u32), 7u64.wrapping_mul(WordHasher::K));
    }

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
