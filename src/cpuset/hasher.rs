//! A hasher for the caches keyed by CPU sets that a pass builds from its own data (groupings,
//! fallback chains, the topology's interned sets).
//!
//! The standard SipHash costs about a thousand instructions for a key of three 1,024-CPU sets,
//! a few per word here. Not resistant to chosen collisions: a hostile sysfs could at worst make
//! a pass slower, never wrong (equal hashes are still compared by value).

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

/// A `HashMap` with [`WordHasher`].
pub type WordHashMap<K, V> = HashMap<K, V, BuildHasherDefault<WordHasher>>;
/// A `HashSet` with [`WordHasher`].
pub type WordHashSet<K> = HashSet<K, BuildHasherDefault<WordHasher>>;

/// Multiply-add over 64-bit words. Guarantees: equal inputs give equal hashes; every input bit
/// reaches the high bits of the state, and [`Hasher::finish`] rotates those into the low bits,
/// which pick the bucket.
#[derive(Debug, Default, Clone, Copy)]
pub struct WordHasher {
    state: u64,
}

/// An odd constant with bits spread over the word (the golden ratio's fraction, 2^64 / φ).
const MULTIPLIER: u64 = 0x9e37_79b9_7f4a_7c15;

impl WordHasher {
    fn add(&mut self, word: u64) {
        self.state = (self.state ^ word).wrapping_mul(MULTIPLIER).rotate_left(29);
    }
}

impl Hasher for WordHasher {
    fn write(&mut self, bytes: &[u8]) {
        let (words, tail) = bytes.as_chunks::<8>();
        for w in words {
            self.add(u64::from_le_bytes(*w));
        }
        if !tail.is_empty() {
            let mut last = [0u8; 8];
            last[..tail.len()].copy_from_slice(tail);
            // The length tells `ab` from `ab\0`.
            self.add(u64::from_le_bytes(last) ^ ((tail.len() as u64) << 59));
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
        // One more round, so that the last word's bits reach the high bits too.
        self.state.wrapping_mul(MULTIPLIER).rotate_left(26)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpuset::CpuSet;
    use std::hash::BuildHasher;

    fn hash(set: &CpuSet) -> u64 {
        BuildHasherDefault::<WordHasher>::default().hash_one(set)
    }

    #[test]
    fn equal_sets_hash_equal_and_nearby_sets_spread_over_buckets() {
        let a: CpuSet = (0..1024).collect();
        let b: CpuSet = CpuSet::parse_list("0-1023").unwrap();
        assert_eq!(hash(&a), hash(&b));
        // Every single CPU and every pair of neighbours: distinct hashes, and the low bits (the
        // bucket of a small table) used evenly.
        let sets: Vec<CpuSet> =
            (0..1024).map(CpuSet::single).chain((0..1023).map(|c| [c, c + 1].into_iter().collect())).collect();
        let hashes: WordHashSet<u64> = sets.iter().map(hash).collect();
        assert_eq!(hashes.len(), sets.len());
        let mut buckets = [0usize; 64];
        for s in &sets {
            buckets[(hash(s) % 64) as usize] += 1;
        }
        let (least, most) = (buckets.iter().min().unwrap(), buckets.iter().max().unwrap());
        assert!(*least >= 10 && *most <= 60, "{buckets:?}");
    }

    #[test]
    fn byte_strings_of_different_lengths_differ() {
        let h = |b: &[u8]| {
            let mut w = WordHasher::default();
            w.write(b);
            w.finish()
        };
        assert_ne!(h(b"ab"), h(b"ab\0"));
        assert_ne!(h(b"abcdefgh"), h(b"abcdefgh\0"));
        assert_eq!(h(b"irq"), h(b"irq"));
    }
}
