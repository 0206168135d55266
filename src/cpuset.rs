//! `CpuSet`: a set of CPU ids below [`MAX_CPUS`], with the kernel's two text forms.
//!
//! Invariants: every member is `< MAX_CPUS`; the words never end in a zero word (the empty set
//! has none), so two sets with the same members are equal (`==`, `Hash`) whatever operations
//! built them. Iteration is always in ascending CPU id, which is the order every kernel
//! algorithm walks.
//!
//! A set is a value whose words are shared: a clone costs a reference count, not a copy (a pass
//! on a 1,024-CPU machine clones tens of thousands of sets: topology, current masks, placements),
//! and a change copies the words only while another clone still shares them.

use std::fmt;
use std::ops::{BitAnd, BitOr, Sub};
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Largest CPU count the kernel supports (`CONFIG_NR_CPUS` max on x86 and arm64).
pub const MAX_CPUS: u32 = 8192;

const WORD_BITS: u32 = 64;

/// Why a CPU list or mask could not be parsed. `text` is the whole input, `pos` the byte offset
/// of the offending token in it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CpuSetError {
    #[error(
        "invalid CPU list {text:?}: {token:?} at byte {pos} is not a CPU number or range (expected e.g. \"0-3,8\")"
    )]
    BadListToken { text: String, token: String, pos: usize },
    #[error("invalid CPU list {text:?}: range {token:?} at byte {pos} runs backwards")]
    ReversedRange { text: String, token: String, pos: usize },
    #[error("invalid CPU list {text:?}: CPU {cpu} at byte {pos} is not below the maximum of {max}")]
    CpuTooLarge { text: String, cpu: u64, pos: usize, max: u32 },
    #[error("invalid CPU mask {text:?}: group {token:?} at byte {pos} is not 1 to 8 hex digits")]
    BadMaskGroup { text: String, token: String, pos: usize },
    #[error("invalid CPU mask {text:?}: it sets CPU {cpu}, not below the maximum of {max}")]
    MaskTooWide { text: String, cpu: u64, max: u32 },
}

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
        let theirs = other.words();
        self.words().iter().enumerate().all(|(i, a)| a & !theirs.get(i).copied().unwrap_or(0) == 0)
    }

    pub fn intersects(&self, other: &CpuSet) -> bool {
        self.words().iter().zip(other.words()).any(|(a, b)| a & b != 0)
    }

    /// In-place union.
    pub fn extend_with(&mut self, other: &CpuSet) {
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

    /// Parses the kernel's CPU list format: `0-3,8,10-11`, the empty string, a trailing newline,
    /// spaces around items, and blk-mq's `4, 5, 6, 7`.
    pub fn parse_list(text: &str) -> Result<CpuSet, CpuSetError> {
        let mut set = Builder::default();
        let mut offset = 0;
        for item in text.split(',') {
            let pos = offset + (item.len() - item.trim_start().len());
            offset += item.len() + 1;
            let token = item.trim();
            if token.is_empty() {
                // "" and "\n" are the empty set; an empty item between commas is not.
                if text.trim().is_empty() {
                    continue;
                }
                return Err(CpuSetError::BadListToken { text: text.into(), token: item.into(), pos });
            }
            let bad = || CpuSetError::BadListToken { text: text.into(), token: token.into(), pos };
            let (lo, hi) = match token.split_once('-') {
                Some((a, b)) => (parse_cpu(a.trim(), text, pos, bad)?, parse_cpu(b.trim(), text, pos, bad)?),
                None => {
                    let c = parse_cpu(token, text, pos, bad)?;
                    (c, c)
                }
            };
            if lo > hi {
                return Err(CpuSetError::ReversedRange { text: text.into(), token: token.into(), pos });
            }
            for cpu in lo..=hi {
                set.insert(cpu);
            }
        }
        Ok(set.finish())
    }

    /// Parses the kernel's hex mask: 32-bit groups separated by commas, most significant first,
    /// without zero padding on the first group (`3`, `ff,ffffffff`, `00000001,00000000`).
    pub fn parse_mask(text: &str) -> Result<CpuSet, CpuSetError> {
        let trimmed = text.trim();
        let mut set = Builder::default();
        if trimmed.is_empty() {
            return Ok(set.finish());
        }
        let groups: Vec<&str> = trimmed.split(',').collect();
        let lead = text.len() - text.trim_start().len();
        let mut pos = lead;
        let n = groups.len();
        for (i, group) in groups.iter().enumerate() {
            let g = group.trim_start_matches("0x");
            if g.is_empty() || g.len() > 8 || !g.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(CpuSetError::BadMaskGroup { text: text.into(), token: (*group).into(), pos });
            }
            let value = u32::from_str_radix(g, 16).map_err(|_| CpuSetError::BadMaskGroup {
                text: text.into(),
                token: (*group).into(),
                pos,
            })?;
            let base = (n - 1 - i) as u64 * 32;
            for bit in 0..32u64 {
                if value & (1 << bit) != 0 {
                    let cpu = base + bit;
                    if cpu >= MAX_CPUS as u64 {
                        return Err(CpuSetError::MaskTooWide { text: text.into(), cpu, max: MAX_CPUS });
                    }
                    set.insert(cpu as u32);
                }
            }
            pos += group.len() + 1;
        }
        Ok(set.finish())
    }

    /// Kernel list format with ranges: `0-3,8,10-11`; empty set → `""`.
    pub fn to_list_string(&self) -> String {
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = self.write_list(&mut out);
        out
    }

    /// Writes the kernel list format (see [`CpuSet::to_list_string`]) to `out`.
    pub fn write_list(&self, out: &mut impl fmt::Write) -> fmt::Result {
        // Numbers through `itoa`, not `write!`: the state file formats ~16,000 lists per pass on
        // a large machine, and the formatting machinery cost several times more.
        let mut number = itoa::Buffer::new();
        for (i, (lo, hi)) in self.ranges().enumerate() {
            if i > 0 {
                out.write_char(',')?;
            }
            out.write_str(number.format(lo))?;
            if hi != lo {
                out.write_char('-')?;
                out.write_str(number.format(hi))?;
            }
        }
        Ok(())
    }

    /// The runs of consecutive CPUs as `(first, last)`, ascending; found a word at a time, so a
    /// run of 64 CPUs costs one step, not 64.
    pub fn ranges(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        let mut from = 0;
        std::iter::from_fn(move || {
            let lo = self.next_with(from, false)?;
            let end = self.next_with(lo, true).unwrap_or(self.words().len() as u32 * 64);
            from = end;
            Some((lo, end - 1))
        })
    }

    /// The first CPU at or after `from` that is in the set (`absent`: that is not), among the
    /// stored words; `None` when there is none there.
    fn next_with(&self, from: u32, absent: bool) -> Option<u32> {
        let flip = if absent { !0u64 } else { 0 };
        let mut w = (from / 64) as usize;
        let mut word = (self.words().get(w)? ^ flip) & (!0u64 << (from % 64));
        loop {
            if word != 0 {
                return Some(w as u32 * 64 + word.trailing_zeros());
            }
            w += 1;
            word = self.words().get(w)? ^ flip;
        }
    }

    /// Kernel hex mask format: 32-bit groups, most significant first, first group unpadded;
    /// empty set → `"0"`.
    pub fn to_mask_string(&self) -> String {
        let Some(last) = self.last() else { return "0".into() };
        let ngroups = last / 32 + 1;
        let group = |g: u32| -> u32 {
            let word = self.words().get((g / 2) as usize).copied().unwrap_or(0);
            (word >> ((g % 2) * 32)) as u32
        };
        let mut out = format!("{:x}", group(ngroups - 1));
        for g in (0..ngroups - 1).rev() {
            out.push_str(&format!(",{:08x}", group(g)));
        }
        out
    }
}

fn parse_cpu(s: &str, text: &str, pos: usize, bad: impl Fn() -> CpuSetError) -> Result<u32, CpuSetError> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    let n: u64 = s.parse().map_err(|_| bad())?;
    if n >= MAX_CPUS as u64 {
        return Err(CpuSetError::CpuTooLarge { text: text.into(), cpu: n, pos, max: MAX_CPUS });
    }
    Ok(n as u32)
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

impl fmt::Display for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write_list(f)
    }
}

impl fmt::Debug for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("CpuSet(")?;
        self.write_list(f)?;
        f.write_str(")")
    }
}

/// JSON form: an ascending array of CPU ids (`[0,1,2]`).
impl Serialize for CpuSet {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
    }
}

impl<'de> Deserialize<'de> for CpuSet {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let cpus = Vec::<u32>::deserialize(d)?;
        if let Some(&bad) = cpus.iter().find(|&&c| c >= MAX_CPUS) {
            return Err(serde::de::Error::custom(format!("CPU {bad} is not below {MAX_CPUS}")));
        }
        Ok(cpus.into_iter().collect())
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
    fn parses_kernel_lists() {
        assert_eq!(list("0-3,8,10-11\n").iter().collect::<Vec<_>>(), vec![0, 1, 2, 3, 8, 10, 11]);
        assert!(list("").is_empty());
        assert!(list("\n").is_empty());
        assert_eq!(list("4, 5, 6, 7").iter().collect::<Vec<_>>(), vec![4, 5, 6, 7]);
        assert_eq!(list(" 2 - 3 ").iter().collect::<Vec<_>>(), vec![2, 3]);
    }

    #[test]
    fn list_errors_name_token_and_position() {
        let e = CpuSet::parse_list("0-3,x7").unwrap_err();
        assert_eq!(e, CpuSetError::BadListToken { text: "0-3,x7".into(), token: "x7".into(), pos: 4 });
        assert!(e.to_string().contains("\"x7\" at byte 4"), "{e}");
        assert!(matches!(CpuSet::parse_list("5-2"), Err(CpuSetError::ReversedRange { pos: 0, .. })));
        assert!(matches!(CpuSet::parse_list("1,8192"), Err(CpuSetError::CpuTooLarge { cpu: 8192, pos: 2, .. })));
        assert!(matches!(CpuSet::parse_list("1,,2"), Err(CpuSetError::BadListToken { pos: 2, .. })));
        assert!(matches!(CpuSet::parse_list("-1"), Err(CpuSetError::BadListToken { .. })));
        assert!(matches!(CpuSet::parse_list("99999999999999999999"), Err(CpuSetError::BadListToken { .. })));
    }

    #[test]
    fn parses_kernel_masks() {
        assert_eq!(CpuSet::parse_mask("3\n").unwrap(), list("0-1"));
        assert_eq!(CpuSet::parse_mask("ff,ffffffff").unwrap(), list("0-39"));
        assert_eq!(CpuSet::parse_mask("00000001,00000000").unwrap(), list("32"));
        assert_eq!(CpuSet::parse_mask("0").unwrap(), CpuSet::new());
        assert!(matches!(CpuSet::parse_mask("3,12345678g"), Err(CpuSetError::BadMaskGroup { pos: 2, .. })));
        assert!(matches!(CpuSet::parse_mask("123456789"), Err(CpuSetError::BadMaskGroup { pos: 0, .. })));
    }

    #[test]
    fn formats_like_the_kernel() {
        assert_eq!(list("0-39").to_mask_string(), "ff,ffffffff");
        assert_eq!(list("0,1").to_mask_string(), "3");
        assert_eq!(list("32").to_mask_string(), "1,00000000");
        assert_eq!(CpuSet::new().to_mask_string(), "0");
        assert_eq!(list("0-3,8,10,11").to_list_string(), "0-3,8,10-11");
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
        fn list_round_trip(s in arb_set()) {
            prop_assert_eq!(CpuSet::parse_list(&s.to_list_string()).unwrap(), s);
        }

        #[test]
        fn mask_round_trip(s in arb_set()) {
            prop_assert_eq!(CpuSet::parse_mask(&s.to_mask_string()).unwrap(), s);
        }

        #[test]
        fn ranges_are_the_runs_of_consecutive_cpus(
            sparse in arb_set(),
            runs in prop::collection::vec((0u32..400, 0u32..140), 0..6),
        ) {
            // Runs across and up to word boundaries, and single CPUs between them.
            let s: CpuSet = runs.iter().flat_map(|&(lo, n)| lo..lo + n).chain(sparse.iter()).collect();
            let mut runs: Vec<(u32, u32)> = Vec::new();
            for c in s.iter() {
                match runs.last_mut() {
                    Some((_, hi)) if *hi + 1 == c => *hi = c,
                    _ => runs.push((c, c)),
                }
            }
            let text = runs.iter().map(|&(lo, hi)| if lo == hi { lo.to_string() } else { format!("{lo}-{hi}") });
            prop_assert_eq!(s.to_list_string(), text.collect::<Vec<_>>().join(","));
            prop_assert_eq!(s.ranges().collect::<Vec<_>>(), runs);
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
