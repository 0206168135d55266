//! `CpuSet`: a set of CPU ids below [`MAX_CPUS`]; its two kernel text forms are in [`text`].
//!
//! Invariants: every member is `< MAX_CPUS`; the words never end in a zero word (the empty set
//! has none), so two sets with the same members are equal (`==`, `Hash`) whatever operations
//! built them. Iteration is always in ascending CPU id, which is the order every kernel
//! algorithm walks.
//!
//! A set is a value whose words are shared: a clone costs a reference count, not a copy (a pass
//! on a 1,024-CPU machine clones tens of thousands of sets: topology, current masks, placements),
//! and a change copies the words only while another clone still shares them.

mod text;

use std::ops::{BitAnd, BitOr, Sub};
use std::sync::Arc;

pub use text::CpuSetError;

/// Largest CPU count the kernel supports (`CONFIG_NR_CPUS` max on x86 and arm64).
pub const MAX_CPUS: u32 = 8192;

const WORD_BITS: u32 = 64;

/// A set of CPU ids (`0..MAX_CPUS`), ordered ascending.
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct CpuSet {
    /// `None` for the empty set, else words whose last one is not zero.
    words: Option<Arc<[u64]>>,
}

/// Words being built: grown as bits are set, trimmed once by [`CpuSet::from_words`].
#[derive(Default)]
struct Builder {
    words: Vec<u64>,
}

impl Builder {
    fn insert(&mut self, cpu: u32) {
        let (w, b) = ((cpu / WORD_BITS) as usize, cpu % WORD_BITS);
        if self.words.len() <= w {
            self.words.resize(w + 1, 0);
        }
        self.words[w] |= 1 << b;
    }

    fn finish(self) -> CpuSet {
        CpuSet::from_words(self.words)
    }
}

impl CpuSet {
    /// The empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// `{0, 1, ..., n-1}`.
    pub fn first_n(n: u32) -> Self {
        (0..n.min(MAX_CPUS)).collect()
    }

    /// `{cpu}`.
    pub fn single(cpu: u32) -> Self {
        let mut s = Self::new();
        s.insert(cpu);
        s
    }

    /// Adds `cpu`; returns whether it was new.
    ///
    /// # Panics
    /// When `cpu >= MAX_CPUS`: callers validate external input through the parsers first.
    pub fn insert(&mut self, cpu: u32) -> bool {
        assert!(cpu < MAX_CPUS, "CPU {cpu} beyond MAX_CPUS");
        if self.contains(cpu) {
            return false;
        }
        let (w, b) = ((cpu / WORD_BITS) as usize, cpu % WORD_BITS);
        self.edit(w + 1, |words| words[w] |= 1 << b);
        true
    }

    /// Removes `cpu`; returns whether it was present.
    pub fn remove(&mut self, cpu: u32) -> bool {
        if !self.contains(cpu) {
            return false;
        }
        let (w, b) = ((cpu / WORD_BITS) as usize, cpu % WORD_BITS);
        self.edit(0, |words| words[w] &= !(1 << b));
        true
    }

    pub fn contains(&self, cpu: u32) -> bool {
        let (w, b) = ((cpu / WORD_BITS) as usize, cpu % WORD_BITS);
        self.words().get(w).is_some_and(|word| word & (1 << b) != 0)
    }

    pub fn len(&self) -> usize {
        self.words().iter().map(|w| w.count_ones() as usize).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.words.is_none()
    }

    /// The words, lowest CPUs first.
    fn words(&self) -> &[u64] {
        self.words.as_deref().unwrap_or(&[])
    }

    /// Changes the words in place with `f`, given at least `len` of them: where no other clone
    /// shares them and they are long enough, without copying; else on a copy. Trims after.
    fn edit(&mut self, len: usize, f: impl FnOnce(&mut [u64])) {
        if let Some(words) = self.words.as_mut().and_then(Arc::get_mut).filter(|w| w.len() >= len) {
            f(words);
            if words.last() != Some(&0) {
                return;
            }
        } else {
            let mut words = self.words().to_vec();
            if words.len() < len {
                words.resize(len, 0);
            }
            f(&mut words);
            *self = CpuSet::from_words(words);
            return;
        }
        // A trailing word was cleared: the shorter words are a copy.
        let words = self.words().to_vec();
        *self = CpuSet::from_words(words);
    }

    /// Lowest member.
    pub fn first(&self) -> Option<u32> {
        self.iter().next()
    }

    /// Highest member.
    pub fn last(&self) -> Option<u32> {
        let words = self.words();
        let w = words.len().checked_sub(1)?;
        let word = words[w];
        Some(w as u32 * WORD_BITS + (WORD_BITS - 1 - word.leading_zeros()))
    }

    /// The `n`-th member in ascending order (0-based), like the kernel's `cpumask_nth()`.
    pub fn nth(&self, n: usize) -> Option<u32> {
        let mut left = n;
        for (w, &word) in self.words().iter().enumerate() {
            let ones = word.count_ones() as usize;
            if left < ones {
                let mut x = word;
                for _ in 0..left {
                    x &= x - 1;
                }
                return Some(w as u32 * WORD_BITS + x.trailing_zeros());
            }
            left -= ones;
        }
        None
    }

    /// Members in ascending order.
    pub fn iter(&self) -> Iter<'_> {
        let words = self.words();
        Iter { words, word: 0, bits: words.first().copied().unwrap_or(0) }
    }

    pub fn union(&self, other: &CpuSet) -> CpuSet {
        if other.is_subset(self) {
            return self.clone();
        }
        if self.is_subset(other) {
            return other.clone();
        }
        let (long, short) = if self.words().len() >= other.words().len() { (self, other) } else { (other, self) };
        let mut words = long.words().to_vec();
        for (a, b) in words.iter_mut().zip(short.words()) {
            *a |= b;
        }
        CpuSet::from_words(words)
    }

    pub fn intersection(&self, other: &CpuSet) -> CpuSet {
        if self.is_subset(other) {
            return self.clone();
        }
        let words = self.words().iter().zip(other.words()).map(|(a, b)| a & b).collect();
        CpuSet::from_words(words)
    }

    pub fn difference(&self, other: &CpuSet) -> CpuSet {
        if !self.intersects(other) {
            return self.clone();
        }
        let theirs = other.words();
        let words = self.words().iter().enumerate().map(|(i, a)| a & !theirs.get(i).copied().unwrap_or(0)).collect();
        CpuSet::from_words(words)
    }

    pub fn is_subset(&self, other: &CpuSet) -> bool {
        if self.shares_words(other) {
            return true;
        }
        let (mine, theirs) = (self.words(), other.words());
        // The last word is never zero: a longer set holds a CPU beyond `other`'s last.
        mine.len() <= theirs.len() && mine.iter().zip(theirs).all(|(a, b)| a & !b == 0)
    }

    /// Whether the two are clones of one set (same words, not just equal ones): a constant-time
    /// test that lets a walk over many CPUs' shared masks skip the ones it has seen.
    pub fn shares_words(&self, other: &CpuSet) -> bool {
        match (&self.words, &other.words) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        }
    }

    pub fn intersects(&self, other: &CpuSet) -> bool {
        self.words().iter().zip(other.words()).any(|(a, b)| a & b != 0)
    }

    /// In-place union.
    pub(crate) fn extend_with(&mut self, other: &CpuSet) {
        if other.is_subset(self) {
            return;
        }
        if self.is_empty() {
            *self = other.clone();
            return;
        }
        let theirs = other.words();
        self.edit(theirs.len(), |words| {
            for (a, b) in words.iter_mut().zip(theirs) {
                *a |= b;
            }
        });
    }

    /// In-place difference.
    pub fn remove_all(&mut self, other: &CpuSet) {
        if !self.intersects(other) {
            return;
        }
        let theirs = other.words();
        self.edit(0, |words| {
            for (a, b) in words.iter_mut().zip(theirs) {
                *a &= !b;
            }
        });
    }

    /// The set of `words`, trimmed (the one way words become a set).
    fn from_words(mut words: Vec<u64>) -> CpuSet {
        while words.last() == Some(&0) {
            words.pop();
        }
        CpuSet { words: (!words.is_empty()).then(|| Arc::from(words)) }
    }
}

/// Ascending iterator over a [`CpuSet`].
pub struct Iter<'a> {
    words: &'a [u64],
    word: usize,
    bits: u64,
}

impl Iterator for Iter<'_> {
    type Item = u32;
    fn next(&mut self) -> Option<u32> {
        loop {
            if self.bits != 0 {
                let b = self.bits.trailing_zeros();
                self.bits &= self.bits - 1;
                return Some(self.word as u32 * WORD_BITS + b);
            }
            self.word += 1;
            self.bits = *self.words.get(self.word)?;
        }
    }
}

impl<'a> IntoIterator for &'a CpuSet {
    type Item = u32;
    type IntoIter = Iter<'a>;
    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

impl FromIterator<u32> for CpuSet {
    fn from_iter<I: IntoIterator<Item = u32>>(iter: I) -> Self {
        let mut s = Builder::default();
        for c in iter {
            assert!(c < MAX_CPUS, "CPU {c} beyond MAX_CPUS");
            s.insert(c);
        }
        s.finish()
    }
}

impl BitOr for &CpuSet {
    type Output = CpuSet;
    fn bitor(self, rhs: &CpuSet) -> CpuSet {
        self.union(rhs)
    }
}

impl BitAnd for &CpuSet {
    type Output = CpuSet;
    fn bitand(self, rhs: &CpuSet) -> CpuSet {
        self.intersection(rhs)
    }
}

impl Sub for &CpuSet {
    type Output = CpuSet;
    fn sub(self, rhs: &CpuSet) -> CpuSet {
        self.difference(rhs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn list(s: &str) -> CpuSet {
        CpuSet::parse_list(s).expect("valid list")
    }

    #[test]
    fn nth_first_last() {
        let s = list("3,64-65,8191");
        assert_eq!(s.first(), Some(3));
        assert_eq!(s.last(), Some(8191));
        assert_eq!(s.nth(2), Some(65));
        assert_eq!(s.nth(3), Some(8191));
        assert_eq!(s.nth(4), None);
        assert_eq!(s.len(), 4);
    }

    fn arb_set() -> impl Strategy<Value = CpuSet> {
        prop::collection::vec(0u32..MAX_CPUS, 0..64).prop_map(|v| v.into_iter().collect())
    }

    proptest! {
        #[test]
        fn algebra_matches_btreeset(a in arb_set(), b in arb_set()) {
            use std::collections::BTreeSet;
            let (x, y): (BTreeSet<u32>, BTreeSet<u32>) = (a.iter().collect(), b.iter().collect());
            prop_assert_eq!((&a | &b).iter().collect::<BTreeSet<_>>(), &x | &y);
            prop_assert_eq!((&a & &b).iter().collect::<BTreeSet<_>>(), &x & &y);
            prop_assert_eq!((&a - &b).iter().collect::<BTreeSet<_>>(), &x - &y);
            prop_assert_eq!(a.is_subset(&b), x.is_subset(&y));
            prop_assert_eq!(a.intersects(&b), !x.is_disjoint(&y));
            prop_assert_eq!(a.len(), x.len());
            let mut c = a.clone();
            c.remove_all(&b);
            prop_assert_eq!(c, &a - &b);
        }

        /// Clones share words: a change to one, unique or shared, in place or grown or trimmed,
        /// leaves every other clone as it was, and each result is the one a fresh set would be.
        #[test]
        fn a_change_to_a_clone_leaves_the_others_alone(
            a in arb_set(),
            b in arb_set(),
            ops in prop::collection::vec((0u8..4, 0u32..MAX_CPUS, any::<bool>()), 0..24),
        ) {
            use std::collections::BTreeSet;
            let mut set = a.clone();
            let mut model: BTreeSet<u32> = a.iter().collect();
            let mut kept = vec![(a.clone(), model.clone())];
            for (op, cpu, share) in ops {
                if share {
                    kept.push((set.clone(), model.clone()));
                }
                // Sets near their highest CPU, so removals trim and inserts grow.
                let cpu = if op % 2 == 1 { set.last().map_or(cpu, |l| l.saturating_sub(cpu % 3)) } else { cpu };
                match op {
                    0 => prop_assert_eq!(set.insert(cpu), model.insert(cpu)),
                    1 => prop_assert_eq!(set.remove(cpu), model.remove(&cpu)),
                    2 => { set.extend_with(&b); model.extend(b.iter()); }
                    _ => { set.remove_all(&b); b.iter().for_each(|c| { model.remove(&c); }); }
                }
                prop_assert_eq!(set.iter().collect::<BTreeSet<_>>(), model.clone());
                prop_assert_eq!(&set, &model.iter().copied().collect::<CpuSet>());
                prop_assert_eq!(set.is_empty(), model.is_empty());
            }
            for (s, m) in kept {
                prop_assert_eq!(s.iter().collect::<BTreeSet<_>>(), m);
            }
        }
    }
}
