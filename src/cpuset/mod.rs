//! `CpuSet`: a set of CPU ids below [`MAX_CPUS`]; its two kernel text forms are in [`text`].
//!
//! Invariants: every member is `< MAX_CPUS`; the stored words run from the first word holding a
//! member to the last one (neither is zero; the empty set stores none), with the index of the
//! first kept beside them, so two sets with the same members are equal (`==`, `Hash`) whatever
//! operations built them. Iteration is always in ascending CPU id, which is the order every
//! kernel algorithm walks.
//!
//! A set is a value whose words are shared: a clone costs a reference count, not a copy (a pass
//! on a 1,024-CPU machine clones tens of thousands of sets: topology, current masks, placements),
//! and a change copies the words only while another clone still shares them. A set costs the
//! span of its members, not the machine: CPU 8,000 alone is one word, not 126.

pub mod hasher;
mod text;

use std::ops::{BitAnd, BitOr, Sub};
use std::sync::{Arc, LazyLock};

pub use text::CpuSetError;

/// Largest CPU count the kernel supports (`CONFIG_NR_CPUS` max on x86 and arm64).
pub const MAX_CPUS: u32 = 8192;

const WORD_BITS: u32 = 64;

/// A set of CPU ids (`0..MAX_CPUS`), ordered ascending.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct CpuSet {
    /// Nothing for the empty set, else `[first, w0, w1, ...]`: `first` the index of the word `w0`
    /// stands for, `w0` and the last word not zero. Never null, so an `Option<CpuSet>` (a
    /// topology file that may be absent: five per CPU) costs no more than the set.
    words: Arc<[u64]>,
}

/// The words of every empty set: one allocation, shared (a clone costs a reference count).
static EMPTY: LazyLock<Arc<[u64]>> = LazyLock::new(|| Arc::from(Vec::new()));

impl Default for CpuSet {
    fn default() -> Self {
        CpuSet { words: Arc::clone(&EMPTY) }
    }
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

    /// Adds every CPU of `lo..=hi` (`lo <= hi`), a word at a time: a list file's `0-1023` is
    /// 16 word writes, not 1,024 bit sets.
    fn insert_range(&mut self, lo: u32, hi: u32) {
        let (first, last) = ((lo / WORD_BITS) as usize, (hi / WORD_BITS) as usize);
        if self.words.len() <= last {
            self.words.resize(last + 1, 0);
        }
        for (w, word) in self.words[first..=last].iter_mut().enumerate() {
            let w = (first + w) as u32;
            // The bits of this word inside the range: from `lo`'s bit in the first word, up to
            // `hi`'s bit in the last, whole words between.
            let from = if w == lo / WORD_BITS { lo % WORD_BITS } else { 0 };
            let to = if w == hi / WORD_BITS { hi % WORD_BITS } else { WORD_BITS - 1 };
            *word |= (u64::MAX >> (WORD_BITS - 1 - to)) & (u64::MAX << from);
        }
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

    /// Adds `cpu`; returns whether it was absent.
    ///
    /// # Panics
    /// When `cpu >= MAX_CPUS` (a programming error: parsers reject such ids first).
    pub fn insert(&mut self, cpu: u32) -> bool {
        assert!(cpu < MAX_CPUS, "CPU {cpu} beyond MAX_CPUS");
        if self.contains(cpu) {
            return false;
        }
        let (w, b) = ((cpu / WORD_BITS) as usize, cpu % WORD_BITS);
        let (first, end) =
            if self.is_empty() { (w, w + 1) } else { (self.first_word().min(w), self.end_word().max(w + 1)) };
        self.edit(first, end, |words| words[w - first] |= 1 << b);
        true
    }

    /// Removes `cpu`; returns whether it was present.
    pub fn remove(&mut self, cpu: u32) -> bool {
        if !self.contains(cpu) {
            return false;
        }
        let (w, b) = ((cpu / WORD_BITS) as usize, cpu % WORD_BITS);
        let first = self.first_word();
        self.edit(first, self.end_word(), |words| words[w - first] &= !(1 << b));
        true
    }

    pub fn contains(&self, cpu: u32) -> bool {
        let (w, b) = ((cpu / WORD_BITS) as usize, cpu % WORD_BITS);
        self.word(w) & (1 << b) != 0
    }

    pub fn len(&self) -> usize {
        self.stored().iter().map(|w| w.count_ones() as usize).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    /// The stored words (see the field).
    fn stored(&self) -> &[u64] {
        self.words.get(1..).unwrap_or(&[])
    }

    /// The index of the first stored word (0 for the empty set).
    fn first_word(&self) -> usize {
        self.words.first().map_or(0, |&w| w as usize)
    }

    /// One past the index of the last stored word (0 for the empty set).
    fn end_word(&self) -> usize {
        self.first_word() + self.stored().len()
    }

    /// Word `i` of the whole bitmap (0 outside the stored ones).
    fn word(&self, i: usize) -> u64 {
        i.checked_sub(self.first_word()).and_then(|j| self.stored().get(j)).copied().unwrap_or(0)
    }

    /// Words `first..end` of the whole bitmap.
    fn span(&self, first: usize, end: usize) -> Vec<u64> {
        (first..end).map(|i| self.word(i)).collect()
    }

    /// Applies `f` to words `first..end` (a span holding every stored word): in place when this
    /// set alone holds its words and they are that span, else on a copy.
    fn edit(&mut self, first: usize, end: usize, f: impl FnOnce(&mut [u64])) {
        let same_span = first == self.first_word() && end == self.end_word();
        let editable = same_span && !self.is_empty();
        if let Some(words) = Arc::get_mut(&mut self.words).filter(|_| editable) {
            let words = &mut words[1..];
            f(words);
            if words.first() != Some(&0) && words.last() != Some(&0) {
                return;
            }
        } else {
            let mut words = self.span(first, end);
            f(&mut words);
            *self = CpuSet::from_span(first, words);
            return;
        }
        // An end word was cleared: the shorter words are a copy.
        let words = self.stored().to_vec();
        *self = CpuSet::from_span(self.first_word(), words);
    }

    /// The lowest CPU, `None` if empty.
    pub fn first(&self) -> Option<u32> {
        let word = *self.stored().first()?;
        Some(self.first_word() as u32 * WORD_BITS + word.trailing_zeros())
    }

    /// The highest CPU, `None` if empty.
    pub fn last(&self) -> Option<u32> {
        let word = *self.stored().last()?;
        Some((self.end_word() - 1) as u32 * WORD_BITS + (WORD_BITS - 1 - word.leading_zeros()))
    }

    /// The `n`-th CPU in ascending order (0-based).
    pub fn nth(&self, n: usize) -> Option<u32> {
        let mut left = n;
        let first = self.first_word();
        for (w, &word) in self.stored().iter().enumerate() {
            let ones = word.count_ones() as usize;
            if left < ones {
                let mut x = word;
                for _ in 0..left {
                    x &= x - 1;
                }
                return Some((first + w) as u32 * WORD_BITS + x.trailing_zeros());
            }
            left -= ones;
        }
        None
    }

    /// Ascending iteration.
    pub fn iter(&self) -> Iter<'_> {
        let words = self.stored();
        Iter { words, first: self.first_word(), word: 0, bits: words.first().copied().unwrap_or(0) }
    }

    /// `self ∪ other`.
    pub fn union(&self, other: &CpuSet) -> CpuSet {
        if other.is_subset(self) {
            return self.clone();
        }
        if self.is_subset(other) {
            return other.clone();
        }
        let first = self.first_word().min(other.first_word());
        let end = self.end_word().max(other.end_word());
        CpuSet::from_span(first, (first..end).map(|i| self.word(i) | other.word(i)).collect())
    }

    /// `self ∩ other`.
    pub fn intersection(&self, other: &CpuSet) -> CpuSet {
        if self.is_subset(other) {
            return self.clone();
        }
        let first = self.first_word().max(other.first_word());
        let end = self.end_word().min(other.end_word());
        if first >= end {
            return CpuSet::new();
        }
        CpuSet::from_span(first, (first..end).map(|i| self.word(i) & other.word(i)).collect())
    }

    /// `self \ other`.
    pub fn difference(&self, other: &CpuSet) -> CpuSet {
        if !self.intersects(other) {
            return self.clone();
        }
        let (first, end) = (self.first_word(), self.end_word());
        CpuSet::from_span(first, (first..end).map(|i| self.word(i) & !other.word(i)).collect())
    }

    /// `self ⊆ other`.
    pub fn is_subset(&self, other: &CpuSet) -> bool {
        if self.shares_words(other) {
            return true;
        }
        if self.is_empty() {
            return true;
        }
        // Both spans are trimmed: a subset's span lies within the other's.
        let (first, end) = (self.first_word(), self.end_word());
        if first < other.first_word() || end > other.end_word() {
            return false;
        }
        let theirs = &other.stored()[first - other.first_word()..end - other.first_word()];
        self.stored().iter().zip(theirs).all(|(a, b)| a & !b == 0)
    }

    /// Whether the two are clones of one set (same words, not just equal ones): a constant-time
    /// test that lets a walk over many CPUs' shared masks skip the ones it has seen.
    pub fn shares_words(&self, other: &CpuSet) -> bool {
        Arc::ptr_eq(&self.words, &other.words) || (self.is_empty() && other.is_empty())
    }

    /// `self ∩ other ≠ ∅`.
    pub fn intersects(&self, other: &CpuSet) -> bool {
        let first = self.first_word().max(other.first_word());
        let end = self.end_word().min(other.end_word());
        (first..end).any(|i| self.word(i) & other.word(i) != 0)
    }

    /// `self ∪= other`.
    pub(crate) fn extend_with(&mut self, other: &CpuSet) {
        if other.is_subset(self) {
            return;
        }
        if self.is_empty() {
            *self = other.clone();
            return;
        }
        let first = self.first_word().min(other.first_word());
        let end = self.end_word().max(other.end_word());
        self.edit(first, end, |words| {
            for (j, w) in words.iter_mut().enumerate() {
                *w |= other.word(first + j);
            }
        });
    }

    /// `self \= other`.
    pub fn remove_all(&mut self, other: &CpuSet) {
        if !self.intersects(other) {
            return;
        }
        let first = self.first_word();
        self.edit(first, self.end_word(), |words| {
            for (j, w) in words.iter_mut().enumerate() {
                *w &= !other.word(first + j);
            }
        });
    }

    /// The set whose whole bitmap is `words` (word 0 first).
    fn from_words(words: Vec<u64>) -> CpuSet {
        CpuSet::from_span(0, words)
    }

    /// The set whose words `first..first + words.len()` are `words` (the others zero), trimmed.
    fn from_span(first: usize, mut words: Vec<u64>) -> CpuSet {
        while words.last() == Some(&0) {
            words.pop();
        }
        let lead = words.iter().take_while(|&&w| w == 0).count();
        if lead == words.len() {
            return CpuSet::new();
        }
        let mut stored = Vec::with_capacity(words.len() - lead + 1);
        stored.push((first + lead) as u64);
        stored.extend_from_slice(&words[lead..]);
        CpuSet { words: Arc::from(stored) }
    }
}

/// Ascending iterator over a [`CpuSet`].
pub struct Iter<'a> {
    words: &'a [u64],
    /// The index of `words[0]` in the whole bitmap.
    first: usize,
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
                return Some((self.first + self.word) as u32 * WORD_BITS + b);
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

    /// A set of CPUs within 200 of a random base: narrow spans anywhere, overlapping or not.
    fn arb_near() -> impl Strategy<Value = CpuSet> {
        (0u32..MAX_CPUS - 200, prop::collection::vec(0u32..200, 0..24))
            .prop_map(|(base, v)| v.into_iter().map(|c| base + c).collect())
    }

    #[test]
    fn a_set_stores_the_span_of_its_members() {
        let high = list("8000");
        assert_eq!(high.stored().len(), 1, "one word, not 126");
        assert_eq!((high.first(), high.last(), high.len()), (Some(8000), Some(8000), 1));
        let mut s = list("4100-4101,4200");
        assert_eq!(s.stored().len(), 2);
        s.remove(4200);
        assert_eq!(s, list("4100-4101"));
        assert_eq!(s.stored().len(), 1, "trimmed at the end");
        s.insert(5);
        s.remove(4100);
        s.remove(4101);
        assert_eq!(s, list("5"));
        assert_eq!((s.first_word(), s.stored().len()), (0, 1), "trimmed at the start");
    }

    #[test]
    fn an_absent_set_costs_no_more_than_a_set() {
        // Topology keeps five `Option<CpuSet>` per CPU: the niche of the never-null words.
        assert_eq!(std::mem::size_of::<Option<CpuSet>>(), std::mem::size_of::<CpuSet>());
        let (a, b) = (CpuSet::new(), list("3").difference(&list("3")));
        assert!(a.is_empty() && b.is_empty() && a == b && a.shares_words(&b));
        assert_eq!((a.first(), a.last(), a.len(), a.iter().count()), (None, None, 0, 0));
        let mut c = CpuSet::new();
        assert!(c.insert(7) && !c.is_empty() && a.is_empty(), "the shared empty words are not edited");
        assert!(c.remove(7) && c.is_empty() && c == a);
    }

    proptest! {
        #[test]
        fn narrow_sets_anywhere_behave_as_sets(a in arb_near(), b in arb_near(), c in arb_set()) {
            use std::collections::BTreeSet;
            for (a, b) in [(&a, &b), (&a, &c), (&c, &a)] {
                let (x, y): (BTreeSet<u32>, BTreeSet<u32>) = (a.iter().collect(), b.iter().collect());
                prop_assert_eq!((a | b).iter().collect::<BTreeSet<_>>(), &x | &y);
                prop_assert_eq!((a & b).iter().collect::<BTreeSet<_>>(), &x & &y);
                prop_assert_eq!((a - b).iter().collect::<BTreeSet<_>>(), &x - &y);
                prop_assert_eq!(a.is_subset(b), x.is_subset(&y));
                prop_assert_eq!(a.intersects(b), !x.is_disjoint(&y));
                let mut e = a.clone();
                e.extend_with(b);
                prop_assert_eq!(&e, &(a | b));
                let mut r = a.clone();
                r.remove_all(b);
                prop_assert_eq!(&r, &(a - b));
                prop_assert_eq!(a.first(), x.first().copied());
                prop_assert_eq!(a.last(), x.last().copied());
                prop_assert_eq!(a.nth(x.len() / 2), x.iter().nth(x.len() / 2).copied());
                prop_assert_eq!(CpuSet::parse_list(&a.to_list_string()).unwrap(), a.clone());
                prop_assert_eq!(CpuSet::parse_mask(&a.to_mask_string()).unwrap(), a.clone());
                let rebuilt: CpuSet = x.iter().copied().collect();
                prop_assert_eq!(&rebuilt, a, "equal members, equal sets");
            }
        }

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
