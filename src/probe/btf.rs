//! A reader of the kernel's BTF (`/sys/kernel/btf/vmlinux`, the `.BTF` section of a vmlinux):
//! enough of it to answer whether an enum has an enumerator, a struct a member, a function a
//! type, and nothing more.
//!
//! Hostile input: every offset and count is checked against the sizes before a byte is read, and
//! every kind's size is known, so the whole type section is walked once at [`Btf::parse`]; a
//! truncated or garbage blob is one [`BtfError`] saying what was wrong and where. Queries never
//! fail after that: a string offset out of range reads as no name.
//!
//! Pure: bytes in, answers out.

use crate::kernel::facts::{BtfSign, Fact};

/// The BTF header's magic, as a native `u16`.
const MAGIC: u16 = 0xeb9f;
/// The header's fixed part: magic, version, flags, hdr_len and four section offsets and lengths.
const HEADER_LEN: usize = 24;
/// `struct btf_type`: name_off, info, size/type.
const TYPE_LEN: usize = 12;
/// How deep anonymous structs and unions are followed for a member (a hostile blob may loop).
const MAX_NESTING: usize = 8;

/// The kinds irqwise looks at (include/uapi/linux/btf.h).
const KIND_STRUCT: u32 = 4;
const KIND_UNION: u32 = 5;
const KIND_ENUM: u32 = 6;
const KIND_FUNC: u32 = 12;
const KIND_ENUM64: u32 = 19;

/// A blob that is not BTF irqwise can walk.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BtfError {
    #[error("{len} bytes, shorter than a BTF header ({HEADER_LEN} bytes)")]
    Short { len: usize },
    #[error("magic {found:02x?}, expected 9f eb (little endian) or eb 9f (big endian)")]
    Magic { found: [u8; 2] },
    #[error("BTF version {found}, expected 1")]
    Version { found: u8 },
    #[error("header length {hdr_len} outside {HEADER_LEN}..={len} (the blob's size)")]
    HeaderLen { hdr_len: u32, len: usize },
    #[error("{section} section at {offset}+{size} ends past the blob's {len} bytes")]
    Section { section: &'static str, offset: u64, size: u64, len: usize },
    #[error("type {id} at byte {at} of the type section: unknown kind {kind}, its size cannot be known")]
    Kind { id: usize, at: usize, kind: u32 },
    #[error("type {id} at byte {at} of the type section: {need} bytes needed, {left} left")]
    Truncated { id: usize, at: usize, need: u64, left: usize },
}

/// A walked BTF blob: the type and string sections and where each type starts.
#[derive(Debug)]
pub struct Btf<'a> {
    types: &'a [u8],
    strings: &'a [u8],
    big_endian: bool,
    /// Where type `id` starts in `types`, at index `id - 1` (id 0 is `void`).
    starts: Vec<u32>,
}

/// One type's record.
#[derive(Debug, Clone, Copy)]
struct Type {
    name_off: u32,
    kind: u32,
    vlen: usize,
    /// Where its kind-specific data starts in the type section.
    data: usize,
}

impl<'a> Btf<'a> {
    /// Checks the header and walks every type of `blob`.
    pub fn parse(blob: &'a [u8]) -> Result<Btf<'a>, BtfError> {
        if blob.len() < HEADER_LEN {
            return Err(BtfError::Short { len: blob.len() });
        }
        let big_endian = match [blob[0], blob[1]] {
            m if u16::from_le_bytes(m) == MAGIC => false,
            m if u16::from_be_bytes(m) == MAGIC => true,
            found => return Err(BtfError::Magic { found }),
        };
        if blob[2] != 1 {
            return Err(BtfError::Version { found: blob[2] });
        }
        let word = |at: usize| read_u32(blob, at, big_endian).unwrap_or(0);
        let hdr_len = word(4);
        if (hdr_len as usize) < HEADER_LEN || hdr_len as usize > blob.len() {
            return Err(BtfError::HeaderLen { hdr_len, len: blob.len() });
        }
        let body = &blob[hdr_len as usize..];
        let section = |name: &'static str, offset: u32, size: u32| {
            let (offset, size) = (u64::from(offset), u64::from(size));
            if offset + size > body.len() as u64 {
                return Err(BtfError::Section { section: name, offset, size, len: body.len() });
            }
            Ok(&body[offset as usize..(offset + size) as usize])
        };
        let types = section("type", word(8), word(12))?;
        let strings = section("string", word(16), word(20))?;
        let starts = walk(types, big_endian)?;
        Ok(Btf { types, strings, big_endian, starts })
    }

    /// How many types the blob has (`void` not counted).
    pub fn type_count(&self) -> usize {
        self.starts.len()
    }

    /// What the blob says of `sign`: a [`Fact`] from BTF, or unknown with why.
    pub fn answer(&self, sign: &BtfSign) -> Fact<bool> {
        match *sign {
            BtfSign::Enumerator { name, anchor } => match self.enum_with(anchor) {
                Some((id, enum_name)) => {
                    let has = self.enumerators(id).any(|e| e == name.as_bytes());
                    let what = if enum_name.is_empty() {
                        format!("the enum of {anchor}")
                    } else {
                        format!("enum {enum_name}")
                    };
                    Fact::btf(has, format!("{what} {} {name}", has_word(has)))
                }
                None => Fact::unknown(format!("BTF has no enum with {anchor}")),
            },
            BtfSign::Member { strukt, member } => match self.named(KIND_STRUCT, strukt) {
                Some(id) => {
                    let has = self.has_member(id, member.as_bytes(), 0);
                    Fact::btf(has, format!("struct {strukt} {} member {member}", has_word(has)))
                }
                None => Fact::unknown(format!("BTF has no struct {strukt}")),
            },
            BtfSign::Struct { name, anchor } => {
                match (self.named(KIND_STRUCT, name), self.named(KIND_STRUCT, anchor)) {
                    (Some(_), _) => Fact::btf(true, format!("BTF has struct {name}")),
                    (None, Some(_)) => Fact::btf(false, format!("BTF has struct {anchor} but no struct {name}")),
                    (None, None) => Fact::unknown(format!("BTF has neither struct {name} nor struct {anchor}")),
                }
            }
            BtfSign::Func { any_of } => match any_of.iter().find(|f| self.named(KIND_FUNC, f).is_some()) {
                Some(f) => Fact::btf(true, format!("BTF has function {f}")),
                None => Fact::unknown(format!("BTF has no function {}; it may be inlined", any_of.join(" or "))),
            },
            BtfSign::Nothing => Fact::unknown("BTF does not show it"),
        }
    }

    /// The record of type `id` (1-based); `None` for `void` or an id past the last type.
    fn get(&self, id: usize) -> Option<Type> {
        let at = *self.starts.get(id.checked_sub(1)?)? as usize;
        // walk() checked that every record and its data lie inside the section.
        let info = self.word(at + 4);
        Some(Type {
            name_off: self.word(at),
            kind: (info >> 24) & 0x1f,
            vlen: (info & 0xffff) as usize,
            data: at + TYPE_LEN,
        })
    }

    /// The `u32` at `at` of the type section (0 past its end, which walk() rules out).
    fn word(&self, at: usize) -> u32 {
        read_u32(self.types, at, self.big_endian).unwrap_or(0)
    }

    /// The NUL-terminated string at `off` of the string section; empty when out of range or
    /// unterminated.
    fn string(&self, off: u32) -> &'a [u8] {
        let Some(rest) = self.strings.get(off as usize..) else { return &[] };
        rest.iter().position(|&b| b == 0).map_or(&[], |end| &rest[..end])
    }

    /// Every type id with its record.
    fn all(&self) -> impl Iterator<Item = (usize, Type)> + '_ {
        (1..=self.starts.len()).filter_map(|id| self.get(id).map(|t| (id, t)))
    }

    /// The first type of `kind` named `name`.
    fn named(&self, kind: u32, name: &str) -> Option<usize> {
        self.all().find(|(_, t)| t.kind == kind && self.string(t.name_off) == name.as_bytes()).map(|(id, _)| id)
    }

    /// The enumerators' names of enum type `id` (32- or 64-bit).
    fn enumerators(&self, id: usize) -> impl Iterator<Item = &'a [u8]> + '_ {
        let t = self.get(id);
        let (data, step, count) = match t {
            Some(t) if t.kind == KIND_ENUM => (t.data, 8, t.vlen),
            Some(t) if t.kind == KIND_ENUM64 => (t.data, 12, t.vlen),
            _ => (0, 8, 0),
        };
        (0..count).map(move |i| self.string(self.word(data + i * step)))
    }

    /// The first enum with enumerator `anchor`, and the enum's name (empty when anonymous).
    fn enum_with(&self, anchor: &str) -> Option<(usize, String)> {
        self.all()
            .filter(|(_, t)| t.kind == KIND_ENUM || t.kind == KIND_ENUM64)
            .find(|(id, _)| self.enumerators(*id).any(|e| e == anchor.as_bytes()))
            .map(|(id, t)| (id, String::from_utf8_lossy(self.string(t.name_off)).into_owned()))
    }

    /// Whether struct or union `id` has member `member`, directly or in an anonymous struct or
    /// union member (followed `MAX_NESTING` deep at most).
    fn has_member(&self, id: usize, member: &[u8], depth: usize) -> bool {
        let Some(t) = self.get(id).filter(|t| t.kind == KIND_STRUCT || t.kind == KIND_UNION) else { return false };
        (0..t.vlen).any(|i| {
            let at = t.data + i * 12;
            let name = self.string(self.word(at));
            if name == member {
                return true;
            }
            name.is_empty() && depth < MAX_NESTING && self.has_member(self.word(at + 4) as usize, member, depth + 1)
        })
    }
}

/// "has" or "has no".
fn has_word(has: bool) -> &'static str {
    if has {
        "has"
    } else {
        "has no"
    }
}

/// The `u32` at `at` of `bytes` in the blob's byte order; `None` past the end.
fn read_u32(bytes: &[u8], at: usize, big_endian: bool) -> Option<u32> {
    let b: [u8; 4] = bytes.get(at..at.checked_add(4)?)?.try_into().ok()?;
    Some(if big_endian { u32::from_be_bytes(b) } else { u32::from_le_bytes(b) })
}

/// Where each type of the type section starts, every record and its kind's data checked to lie
/// inside the section.
fn walk(types: &[u8], big_endian: bool) -> Result<Vec<u32>, BtfError> {
    let mut starts = Vec::with_capacity(types.len() / 16);
    let mut at = 0usize;
    while at < types.len() {
        let id = starts.len() + 1;
        let left = types.len() - at;
        if left < TYPE_LEN {
            return Err(BtfError::Truncated { id, at, need: TYPE_LEN as u64, left });
        }
        let info = read_u32(types, at + 4, big_endian).unwrap_or(0);
        let kind = (info >> 24) & 0x1f;
        let vlen = u64::from(info & 0xffff);
        let data = match kind {
            2 | 7..=12 | 16 | 18 => 0,
            1 | 14 | 17 => 4,
            3 => 12,
            KIND_STRUCT | KIND_UNION | 15 | KIND_ENUM64 => 12 * vlen,
            KIND_ENUM | 13 => 8 * vlen,
            _ => return Err(BtfError::Kind { id, at, kind }),
        };
        let need = TYPE_LEN as u64 + data;
        if need > left as u64 {
            return Err(BtfError::Truncated { id, at, need, left });
        }
        // The section is at most u32::MAX bytes long (its length is a u32): every start fits.
        starts.push(at as u32);
        at += need as usize;
    }
    Ok(starts)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::kernel::facts::FactSource;

    /// A BTF blob built byte by byte: strings and types added in order, little or big endian.
    pub(crate) struct Blob {
        big: bool,
        types: Vec<u8>,
        strings: Vec<u8>,
    }

    impl Blob {
        pub(crate) fn new(big: bool) -> Blob {
            Blob { big, types: Vec::new(), strings: vec![0] }
        }

        fn u32(&mut self, v: u32) {
            let b = if self.big { v.to_be_bytes() } else { v.to_le_bytes() };
            self.types.extend_from_slice(&b);
        }

        /// The offset of `s` in the string section (added now).
        pub(crate) fn str(&mut self, s: &str) -> u32 {
            if s.is_empty() {
                return 0;
            }
            let off = self.strings.len() as u32;
            self.strings.extend_from_slice(s.as_bytes());
            self.strings.push(0);
            off
        }

        /// A type header: name, kind, vlen, size/type.
        pub(crate) fn header(&mut self, name: &str, kind: u32, vlen: u32, size: u32) {
            let off = self.str(name);
            self.u32(off);
            self.u32((kind << 24) | vlen);
            self.u32(size);
        }

        pub(crate) fn int(&mut self, name: &str) {
            self.header(name, 1, 0, 4);
            self.u32(32);
        }

        pub(crate) fn enumeration(&mut self, name: &str, values: &[&str]) {
            self.header(name, KIND_ENUM, values.len() as u32, 4);
            for (i, v) in values.iter().enumerate() {
                let off = self.str(v);
                self.u32(off);
                self.u32(i as u32);
            }
        }

        pub(crate) fn enum64(&mut self, name: &str, values: &[&str]) {
            self.header(name, KIND_ENUM64, values.len() as u32, 8);
            for (i, v) in values.iter().enumerate() {
                let off = self.str(v);
                self.u32(off);
                self.u32(i as u32);
                self.u32(0);
            }
        }

        /// A struct (or union) of `(name, type id)` members.
        pub(crate) fn compound(&mut self, kind: u32, name: &str, members: &[(&str, u32)]) {
            self.header(name, kind, members.len() as u32, 16);
            for (i, (m, ty)) in members.iter().enumerate() {
                let off = self.str(m);
                self.u32(off);
                self.u32(*ty);
                self.u32(i as u32 * 32);
            }
        }

        pub(crate) fn func(&mut self, name: &str, proto: u32) {
            self.header(name, KIND_FUNC, 1, proto);
        }

        pub(crate) fn proto(&mut self, params: &[&str]) {
            self.header("", 13, params.len() as u32, 0);
            for p in params {
                let off = self.str(p);
                self.u32(off);
                self.u32(1);
            }
        }

        /// The whole blob: header, types, strings.
        pub(crate) fn bytes(&self) -> Vec<u8> {
            let mut out = Vec::new();
            let w = |out: &mut Vec<u8>, v: u32| {
                out.extend_from_slice(&if self.big { v.to_be_bytes() } else { v.to_le_bytes() });
            };
            out.extend_from_slice(&if self.big { MAGIC.to_be_bytes() } else { MAGIC.to_le_bytes() });
            out.extend_from_slice(&[1, 0]);
            w(&mut out, HEADER_LEN as u32);
            w(&mut out, 0);
            w(&mut out, self.types.len() as u32);
            w(&mut out, self.types.len() as u32);
            w(&mut out, self.strings.len() as u32);
            out.extend_from_slice(&self.types);
            out.extend_from_slice(&self.strings);
            out
        }
    }

    /// A small kernel: hk_type without IO_QUEUE, napi_config with an anonymous union holding
    /// `threaded`, the netdev NAPI attributes as an anonymous enum, a cluster helper function.
    pub(crate) fn small_kernel(big: bool) -> Vec<u8> {
        let mut b = Blob::new(big);
        b.int("int"); // 1
        b.enumeration("hk_type", &["HK_TYPE_DOMAIN", "HK_TYPE_MANAGED_IRQ", "HK_TYPE_KERNEL_NOISE"]); // 2
        b.compound(KIND_UNION, "", &[("threaded", 1), ("other", 1)]); // 3
        b.compound(KIND_STRUCT, "napi_config", &[("gro_flush_timeout", 1), ("affinity_mask", 1), ("", 3)]); // 4
        b.enumeration("", &["NETDEV_A_NAPI_IFINDEX", "NETDEV_A_NAPI_ID", "NETDEV_A_NAPI_THREADED"]); // 5
        b.enum64("netdev_napi_threaded", &["NETDEV_NAPI_THREADED_DISABLED", "NETDEV_NAPI_THREADED_ENABLED"]); // 6
        b.proto(&["ncpus"]); // 7
        b.func("alloc_cluster_groups", 7); // 8
        b.compound(KIND_STRUCT, "napi_struct", &[("poll", 1)]); // 9
        b.bytes()
    }

    fn ask(blob: &[u8], sign: BtfSign) -> (Option<bool>, FactSource, String) {
        let f = Btf::parse(blob).unwrap().answer(&sign);
        (f.value(), f.source(), f.evidence().to_string())
    }

    #[test]
    fn answers_enumerators_members_structs_and_functions_in_either_byte_order() {
        for big in [false, true] {
            let blob = small_kernel(big);
            assert_eq!(Btf::parse(&blob).unwrap().type_count(), 9);
            let io = ask(&blob, BtfSign::Enumerator { name: "HK_TYPE_IO_QUEUE", anchor: "HK_TYPE_MANAGED_IRQ" });
            assert_eq!((io.0, io.1), (Some(false), FactSource::Btf), "{big}");
            assert_eq!(io.2, "enum hk_type has no HK_TYPE_IO_QUEUE");
            let t = ask(&blob, BtfSign::Enumerator { name: "NETDEV_A_NAPI_THREADED", anchor: "NETDEV_A_NAPI_ID" });
            assert_eq!(
                t,
                (Some(true), FactSource::Btf, "the enum of NETDEV_A_NAPI_ID has NETDEV_A_NAPI_THREADED".into())
            );
            let busy =
                BtfSign::Enumerator { name: "NETDEV_NAPI_THREADED_BUSY_POLL", anchor: "NETDEV_NAPI_THREADED_ENABLED" };
            assert_eq!(ask(&blob, busy).0, Some(false), "an ENUM64 is read too");
            let lease = ask(&blob, BtfSign::Enumerator { name: "NETDEV_A_QUEUE_LEASE", anchor: "NETDEV_A_QUEUE_ID" });
            assert_eq!((lease.0, lease.1), (None, FactSource::Unknown), "no anchor, no answer");
            let m = |member| ask(&blob, BtfSign::Member { strukt: "napi_config", member }).0;
            assert_eq!((m("affinity_mask"), m("threaded"), m("napi_id")), (Some(true), Some(true), Some(false)));
            assert_eq!(ask(&blob, BtfSign::Member { strukt: "napi_cfg", member: "x" }).0, None);
            let s = |name| ask(&blob, BtfSign::Struct { name, anchor: "napi_struct" }).0;
            assert_eq!((s("napi_config"), s("napi_cfg")), (Some(true), Some(false)));
            assert_eq!(ask(&blob, BtfSign::Struct { name: "a", anchor: "b" }).0, None);
            let f = |any_of| ask(&blob, BtfSign::Func { any_of }).0;
            assert_eq!(f(&["__try_group_cluster_cpus", "alloc_cluster_groups"]), Some(true));
            assert_eq!(f(&["__try_group_cluster_cpus"]), None, "an absent function may be inlined: unknown");
            assert_eq!(ask(&blob, BtfSign::Nothing).0, None);
        }
    }

    #[test]
    fn every_truncation_and_garbage_is_an_error_naming_what_was_wrong() {
        let blob = small_kernel(false);
        for len in 0..blob.len() {
            let cut = &blob[..len];
            let e = Btf::parse(cut).expect_err(&format!("{len} of {} bytes", blob.len()));
            assert!(!e.to_string().is_empty());
        }
        let e = Btf::parse(b"\x7fELF and more bytes than a header").unwrap_err();
        assert_eq!(e.to_string(), "magic [7f, 45], expected 9f eb (little endian) or eb 9f (big endian)");
        let mut bad = blob.clone();
        bad[2] = 2;
        assert_eq!(Btf::parse(&bad).unwrap_err(), BtfError::Version { found: 2 });
        // An unknown kind in the first type: the walk cannot go on.
        let mut bad = blob.clone();
        bad[HEADER_LEN + 7] = 31;
        assert_eq!(Btf::parse(&bad).unwrap_err(), BtfError::Kind { id: 1, at: 0, kind: 31 });
        // A vlen that runs past the section (type 2 follows the 16-byte int).
        let mut bad = blob.clone();
        bad[HEADER_LEN + 16 + 4] = 0xff;
        bad[HEADER_LEN + 16 + 5] = 0xff;
        assert!(matches!(Btf::parse(&bad).unwrap_err(), BtfError::Truncated { id: 2, .. }));
        // Section offsets past the end, in any field.
        for field in [8, 12, 16, 20] {
            let mut bad = blob.clone();
            bad[field..field + 4].copy_from_slice(&u32::MAX.to_le_bytes());
            assert!(matches!(Btf::parse(&bad).unwrap_err(), BtfError::Section { .. }), "field {field}");
        }
        let mut bad = blob.clone();
        bad[4..8].copy_from_slice(&5u32.to_le_bytes());
        assert!(matches!(Btf::parse(&bad).unwrap_err(), BtfError::HeaderLen { hdr_len: 5, .. }));
    }

    #[test]
    fn string_offsets_out_of_range_and_member_loops_read_as_nothing() {
        let mut b = Blob::new(false);
        // A union whose anonymous member is itself: followed MAX_NESTING deep, then given up.
        b.compound(KIND_UNION, "", &[("", 1)]);
        b.compound(KIND_STRUCT, "napi_config", &[("", 1)]);
        let blob = b.bytes();
        assert_eq!(ask(&blob, BtfSign::Member { strukt: "napi_config", member: "threaded" }).0, Some(false));
        // A name offset far past the strings: no name, no panic.
        let mut b = Blob::new(false);
        b.header("", KIND_ENUM, 1, 4);
        b.u32(0xffff_0000);
        b.u32(0);
        let blob = b.bytes();
        assert_eq!(ask(&blob, BtfSign::Enumerator { name: "A", anchor: "B" }).0, None);
    }
}
