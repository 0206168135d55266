//! The kernel's two text forms of a CPU set: the list (`0-3,8,10-11`, `cpulist_parse()`) and the
//! hex mask (`ff,ffffffff`, `cpumask_parse()`), parsed and written; the JSON form (an ascending
//! array) and `Display` (the list).
//!
//! Guarantees: every error names the whole input, the offending token and its byte offset;
//! writing then parsing either form gives the set back.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::{Builder, CpuSet, MAX_CPUS};

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

impl CpuSet {
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
            let (lo, hi) = if let Some((a, b)) = token.split_once('-') {
                (parse_cpu(a.trim(), text, pos, bad)?, parse_cpu(b.trim(), text, pos, bad)?)
            } else {
                let c = parse_cpu(token, text, pos, bad)?;
                (c, c)
            };
            if lo > hi {
                return Err(CpuSetError::ReversedRange { text: text.into(), token: token.into(), pos });
            }
            set.insert_range(lo, hi);
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
                    if cpu >= u64::from(MAX_CPUS) {
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
    pub(crate) fn write_list(&self, out: &mut impl fmt::Write) -> fmt::Result {
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
    pub(crate) fn ranges(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        let mut from = 0;
        std::iter::from_fn(move || {
            let lo = self.next_with(from, false)?;
            let end = self.next_with(lo, true).unwrap_or(self.end_word() as u32 * 64);
            from = end;
            Some((lo, end - 1))
        })
    }

    /// The first CPU at or after `from` that is in the set (`absent`: that is not), among the
    /// stored words; `None` when there is none there.
    fn next_with(&self, from: u32, absent: bool) -> Option<u32> {
        let flip = if absent { !0u64 } else { 0 };
        let end = self.end_word();
        let mut w = (from / 64) as usize;
        let mut mask = !0u64 << (from % 64);
        if !absent && w < self.first_word() {
            // The words before the stored ones hold nothing.
            (w, mask) = (self.first_word(), !0);
        }
        while w < end {
            let word = (self.word(w) ^ flip) & mask;
            if word != 0 {
                return Some(w as u32 * 64 + word.trailing_zeros());
            }
            (w, mask) = (w + 1, !0);
        }
        None
    }

    /// Kernel hex mask format: 32-bit groups, most significant first, first group unpadded;
    /// empty set → `"0"`.
    pub fn to_mask_string(&self) -> String {
        let Some(last) = self.last() else { return "0".into() };
        let ngroups = last / 32 + 1;
        let group = |g: u32| -> u32 {
            let word = self.word((g / 2) as usize);
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
    if n >= u64::from(MAX_CPUS) {
        return Err(CpuSetError::CpuTooLarge { text: text.into(), cpu: n, pos, max: MAX_CPUS });
    }
    Ok(n as u32)
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

/// JSON form: the kernel's CPU list (`"0-2,8"`, `""` for none): as long as the ranges, not the
/// CPUs (a set of 8,192 CPUs is `"0-8191"`, not 8,192 numbers).
impl Serialize for CpuSet {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_list_string())
    }
}

/// Reads the list string, and the ascending array of CPU ids earlier versions wrote (state,
/// originals and memory files of a daemon before schema 2).
impl<'de> Deserialize<'de> for CpuSet {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Either;
        impl<'de> serde::de::Visitor<'de> for Either {
            type Value = CpuSet;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a CPU list (\"0-3,8\") or an array of CPU ids")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<CpuSet, E> {
                CpuSet::parse_list(v).map_err(E::custom)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<CpuSet, A::Error> {
                let mut out = CpuSet::new();
                while let Some(c) = seq.next_element::<u32>()? {
                    if c >= MAX_CPUS {
                        return Err(serde::de::Error::custom(format!("CPU {c} is not below {MAX_CPUS}")));
                    }
                    out.insert(c);
                }
                Ok(out)
            }
        }
        d.deserialize_any(Either)
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
    fn debug_shows_the_list() {
        assert_eq!(format!("{:?}", list("0-3,8")), "CpuSet(0-3,8)");
    }

    #[test]
    fn json_arrays_below_max_cpus_are_sets_and_one_at_max_cpus_is_refused() {
        let set: CpuSet = serde_json::from_str("[3,1,8191]").expect("valid");
        assert_eq!(set.iter().collect::<Vec<_>>(), [1, 3, 8191]);
        let err = serde_json::from_str::<CpuSet>("[0,8192]").expect_err("8192 is MAX_CPUS");
        assert!(err.to_string().contains("CPU 8192 is not below 8192"), "{err}");
    }

    #[test]
    fn json_is_the_kernel_list_and_reads_back_from_it_or_an_older_array() {
        let all = CpuSet::first_n(MAX_CPUS);
        assert_eq!(serde_json::to_string(&all).unwrap(), "\"0-8191\"", "one range, not 8,192 numbers");
        assert_eq!(serde_json::to_string(&CpuSet::new()).unwrap(), "\"\"");
        for text in ["\"0-3,8\"", "[0,1,2,3,8]"] {
            assert_eq!(serde_json::from_str::<CpuSet>(text).unwrap(), list("0-3,8"), "{text}");
        }
        assert!(serde_json::from_str::<CpuSet>("\"0-8192\"").is_err());
        assert!(serde_json::from_str::<CpuSet>("\"x\"").is_err());
    }

    #[test]
    fn parses_kernel_lists() {
        assert_eq!(list("0-3,8,10-11\n").iter().collect::<Vec<_>>(), vec![0, 1, 2, 3, 8, 10, 11]);
        assert!(list("").is_empty());
        assert!(list("\n").is_empty());
        assert_eq!(list("4, 5, 6, 7").iter().collect::<Vec<_>>(), vec![4, 5, 6, 7]);
        assert_eq!(list(" 2 - 3 ").iter().collect::<Vec<_>>(), vec![2, 3]);
        assert_eq!(list("62-65,127-128,8191").iter().collect::<Vec<_>>(), vec![62, 63, 64, 65, 127, 128, 8191]);
        assert_eq!(list("0-63").iter().count(), 64);
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
        fn a_listed_range_is_each_of_its_cpus(
            ranges in prop::collection::vec((0u32..MAX_CPUS, 0u32..300), 1..5),
        ) {
            // Ranges in any order, overlapping, inside one word, across words, up to MAX_CPUS - 1.
            let ranges: Vec<(u32, u32)> = ranges.iter().map(|&(lo, n)| (lo, (lo + n).min(MAX_CPUS - 1))).collect();
            let text = ranges.iter().map(|(lo, hi)| format!("{lo}-{hi}")).collect::<Vec<_>>().join(",");
            let each: CpuSet = ranges.iter().flat_map(|&(lo, hi)| lo..=hi).collect();
            prop_assert_eq!(CpuSet::parse_list(&text).unwrap(), each);
        }

        #[test]
        fn ranges_are_the_runs_of_consecutive_cpus(
            sparse in arb_set(),
            runs in prop::collection::vec((0u32..400, 0u32..140), 0..6),
        ) {
            // Runs across and up to word boundaries, and single CPUs between them.
            let s: CpuSet = runs.iter().flat_map(|&(lo, n)| lo..lo + n).chain(sparse.iter()).collect();
            let mut runs: Vec<(u32, u32)> = Vec::new();
            for c in &s {
                match runs.last_mut() {
                    Some((_, hi)) if *hi + 1 == c => *hi = c,
                    _ => runs.push((c, c)),
                }
            }
            let text = runs.iter().map(|&(lo, hi)| if lo == hi { lo.to_string() } else { format!("{lo}-{hi}") });
            prop_assert_eq!(s.to_list_string(), text.collect::<Vec<_>>().join(","));
            prop_assert_eq!(s.ranges().collect::<Vec<_>>(), runs);
        }
    }
}
