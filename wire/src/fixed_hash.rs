//! A hash function with no random state ([`FixedState`]): the same value for the same key in
//! every run and every process. For tables that are only looked up (never walked), where the
//! standard library's seeded hash buys nothing: the keys are the program's own names, so no
//! defence against chosen collisions is needed.

use std::hash::{BuildHasherDefault, Hasher};

/// Builds [`WordHasher`]s: the `S` of a `HashMap<K, V, S>` whose hashes must not vary.
pub type FixedState = BuildHasherDefault<WordHasher>;

/// A multiply-and-rotate hash over whole words (the one rustc uses for its own tables): a few
/// instructions per eight bytes of a short name.
#[derive(Default)]
pub struct WordHasher(u64);

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
        let hash = |s: &str| FixedState::default().hash_one(s);
        assert_eq!(hash("member-1"), hash("member-1"));
        assert_ne!(hash("member-1"), hash("member-2"));
        assert_ne!(hash("a"), hash("a\0"), "padding of the last word");
        assert_ne!(hash("abcdefgh"), hash("abcdefgh\0"));
        // A fixed function: the same value in every process.
        assert_eq!(FixedState::default().hash_one(7u32), 7u64.wrapping_mul(WordHasher::K));
    }
}
