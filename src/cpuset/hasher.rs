//! A hasher for the caches keyed by CPU sets that a pass builds from its own data (groupings,
//! fallback chains, the topology's interned sets).
//!
//! The standard SipHash costs about a thousand instructions for a key of three 1,024-CPU sets,
//! a few per word here. Each map starts its hashes from its own random seed (taken from the
//! standard `RandomState`), so that keys chosen to collide (a crafted snapshot's sysfs) cannot be
//! computed ahead; it is not a cryptographic hash, and equal hashes are still compared by value.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasher, Hasher, RandomState};

/// A `HashMap` with [`WordHasher`].
pub type WordHashMap<K, V> = HashMap<K, V, WordState>;
/// A `HashSet` with [`WordHasher`].
pub type WordHashSet<K> = HashSet<K, WordState>;

/// Makes the [`WordHasher`]s of one map, all from the map's seed.
#[derive(Debug, Clone, Copy)]
pub struct WordState {
    seed: u64,
}

impl Default for WordState {
    fn default() -> Self {
        // A map is made a few times a pass: one SipHash here is nothing.
        WordState { seed: RandomState::new().hash_one(0u64) }
    }
}

impl BuildHasher for WordState {
    type Hasher = WordHasher;

    fn build_hasher(&self) -> WordHasher {
        WordHasher { state: self.seed }
    }
}

/// Multiply-add over 64-bit words. Guarantees: equal inputs give equal hashes; every input bit
/// reaches the high bits of the state, and [`Hasher::finish`] rotates those into the low bits,
/// which pick the bucket.
#[derive(Debug, Clone, Copy)]
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

    #[test]
    fn equal_sets_hash_equal_under_one_seed_and_maps_differ_in_seed() {
        let (a, b): (CpuSet, CpuSet) = ((0..1024).collect(), CpuSet::parse_list("0-1023").unwrap());
        let state = WordState::default();
        assert_eq!(state.hash_one(&a), state.hash_one(&b));
        let seeds: WordHashSet<u64> = (0..8).map(|_| WordState::default().seed).collect();
        assert_eq!(seeds.len(), 8, "each map its own seed");
    }

    #[test]
    fn nearby_sets_spread_over_buckets() {
        // Fixed seeds, so that the test is the same every run.
        for seed in [0, 1, 0x5eed, u64::MAX] {
            let state = WordState { seed };
            let hash = |s: &CpuSet| state.hash_one(s);
            // Every single CPU and every pair of neighbours: distinct hashes, and the low bits
            // (the bucket of a small table) used evenly.
            let sets: Vec<CpuSet> =
                (0..1024).map(CpuSet::single).chain((0..1023).map(|c| [c, c + 1].into_iter().collect())).collect();
            let hashes: WordHashSet<u64> = sets.iter().map(hash).collect();
            assert_eq!(hashes.len(), sets.len(), "seed {seed:#x}");
            let mut buckets = [0usize; 64];
            for s in &sets {
                buckets[(hash(s) % 64) as usize] += 1;
            }
            let (least, most) = (buckets.iter().min().unwrap(), buckets.iter().max().unwrap());
            assert!(*least >= 10 && *most <= 60, "seed {seed:#x}: {buckets:?}");
        }
    }

    #[test]
    fn byte_strings_of_different_lengths_differ() {
        let state = WordState::default();
        let h = |b: &[u8]| {
            let mut w = state.build_hasher();
            w.write(b);
            w.finish()
        };
        assert_ne!(h(b"ab"), h(b"ab\0"));
        assert_ne!(h(b"abcdefgh"), h(b"abcdefgh\0"));
        assert_eq!(h(b"irq"), h(b"irq"));
    }
}
