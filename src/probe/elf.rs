//! A reader of 64-bit ELF files (kernel modules, a vmlinux), little or big endian: the names of
//! the symbols a module imports (undefined in its symbol table, `SHN_UNDEF`) and the bytes of a
//! named section (a vmlinux's `.BTF`).
//!
//! Hostile input: the header, the section table and every section used are checked against the
//! file's size before they are read; a string offset out of range reads as no name.
//!
//! Pure: bytes in, answers out.

/// `SHT_SYMTAB`.
const SHT_SYMTAB: u32 = 2;
/// `SHN_XINDEX`: the section-name table's index is in section 0's `sh_link`.
const SHN_XINDEX: u16 = 0xffff;
/// `Elf64_Ehdr`, `Elf64_Shdr` and `Elf64_Sym` sizes.
const EHDR_LEN: usize = 64;
const SHDR_LEN: usize = 64;
const SYM_LEN: usize = 24;

/// A file that is not a 64-bit ELF irqwise can read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ElfError {
    #[error("not an ELF file (no \\x7fELF magic)")]
    Magic,
    #[error("ELF class {0}, expected 2 (64-bit)")]
    Class(u8),
    #[error("ELF data encoding {0}, expected 1 (little endian) or 2 (big endian)")]
    Encoding(u8),
    #[error("section header size {0}, expected {SHDR_LEN}")]
    SectionHeaderSize(u16),
    #[error("{what} at {offset}+{size} ends past the file's {len} bytes")]
    Range { what: String, offset: u64, size: u64, len: usize },
    #[error("no symbol table")]
    NoSymbols,
    #[error("symbol table entry size {0}, expected {SYM_LEN}")]
    SymbolSize(u64),
}

/// A checked ELF file: its bytes, byte order and section table.
#[derive(Debug)]
pub struct Elf<'a> {
    data: &'a [u8],
    big_endian: bool,
    sections: Vec<Section>,
    /// The section-name table's index.
    names: usize,
}

/// The fields of a section header irqwise uses.
#[derive(Debug, Clone, Copy)]
struct Section {
    name: u32,
    kind: u32,
    offset: u64,
    size: u64,
    link: u32,
    entsize: u64,
}

impl<'a> Elf<'a> {
    /// Checks the header and reads the section table.
    pub fn parse(data: &'a [u8]) -> Result<Elf<'a>, ElfError> {
        if data.len() < EHDR_LEN || &data[..4] != b"\x7fELF" {
            return Err(ElfError::Magic);
        }
        if data[4] != 2 {
            return Err(ElfError::Class(data[4]));
        }
        let big_endian = match data[5] {
            1 => false,
            2 => true,
            other => return Err(ElfError::Encoding(other)),
        };
        let r = Reader { data, big_endian };
        let shoff = r.u64(0x28);
        let shentsize = r.u16(0x3a);
        let mut shnum = u64::from(r.u16(0x3c));
        let shstrndx = r.u16(0x3e);
        if shoff == 0 {
            return Ok(Elf { data, big_endian, sections: Vec::new(), names: 0 });
        }
        if shentsize as usize != SHDR_LEN {
            return Err(ElfError::SectionHeaderSize(shentsize));
        }
        r.check("section header 0", shoff, SHDR_LEN as u64)?;
        let first = r.section(shoff as usize);
        if shnum == 0 {
            shnum = first.size; // extended numbering: the count is in section 0
        }
        let names = if shstrndx == SHN_XINDEX { first.link as usize } else { usize::from(shstrndx) };
        r.check("section header table", shoff, shnum.saturating_mul(SHDR_LEN as u64))?;
        let sections = (0..shnum as usize).map(|i| r.section(shoff as usize + i * SHDR_LEN)).collect();
        Ok(Elf { data, big_endian, sections, names })
    }

    /// The names of the symbols the file uses but does not define (`SHN_UNDEF`, named): a
    /// module's imports. Names that are not UTF-8 are left out.
    pub fn undefined_symbols(&self) -> Result<Vec<&'a str>, ElfError> {
        let symtab = self.sections.iter().find(|s| s.kind == SHT_SYMTAB).ok_or(ElfError::NoSymbols)?;
        if symtab.entsize != SYM_LEN as u64 {
            return Err(ElfError::SymbolSize(symtab.entsize));
        }
        let syms = self.bytes("symbol table", symtab)?;
        let strtab = match self.sections.get(symtab.link as usize) {
            Some(s) => self.bytes("symbol string table", s)?,
            None => &[],
        };
        let r = Reader { data: syms, big_endian: self.big_endian };
        Ok(syms
            .chunks_exact(SYM_LEN)
            .enumerate()
            .filter(|(i, _)| r.u16(i * SYM_LEN + 6) == 0)
            .filter_map(|(i, _)| std::str::from_utf8(string_at(strtab, r.u32(i * SYM_LEN))).ok())
            .filter(|name| !name.is_empty())
            .collect())
    }

    /// The bytes of the first section named `name`; `Ok(None)` when there is none.
    pub fn section(&self, name: &str) -> Result<Option<&'a [u8]>, ElfError> {
        let names = match self.sections.get(self.names) {
            Some(s) => self.bytes("section name table", s)?,
            None => &[],
        };
        match self.sections.iter().find(|s| string_at(names, s.name) == name.as_bytes()) {
            Some(s) => self.bytes(name, s).map(Some),
            None => Ok(None),
        }
    }

    /// The bytes of section `s`, checked against the file.
    fn bytes(&self, what: &str, s: &Section) -> Result<&'a [u8], ElfError> {
        let r = Reader { data: self.data, big_endian: self.big_endian };
        r.check(what, s.offset, s.size)?;
        Ok(&self.data[s.offset as usize..(s.offset + s.size) as usize])
    }
}

/// The NUL-terminated string at `off` of `table`; empty when out of range or unterminated.
fn string_at(table: &[u8], off: u32) -> &[u8] {
    let Some(rest) = table.get(off as usize..) else { return &[] };
    rest.iter().position(|&b| b == 0).map_or(&[], |end| &rest[..end])
}

/// Reads fixed-size fields of `data` in its byte order; a field past the end reads as 0 (every
/// caller checked the range first).
struct Reader<'a> {
    data: &'a [u8],
    big_endian: bool,
}

impl Reader<'_> {
    fn field<const N: usize>(&self, at: usize) -> [u8; N] {
        let end = at.saturating_add(N);
        let mut b: [u8; N] = self.data.get(at..end).and_then(|s| s.try_into().ok()).unwrap_or([0; N]);
        if !self.big_endian {
            b.reverse(); // to big endian, read below as such
        }
        b
    }

    fn u16(&self, at: usize) -> u16 {
        u16::from_be_bytes(self.field(at))
    }

    fn u32(&self, at: usize) -> u32 {
        u32::from_be_bytes(self.field(at))
    }

    fn u64(&self, at: usize) -> u64 {
        u64::from_be_bytes(self.field(at))
    }

    /// The section header at `at`.
    fn section(&self, at: usize) -> Section {
        Section {
            name: self.u32(at),
            kind: self.u32(at + 4),
            offset: self.u64(at + 24),
            size: self.u64(at + 32),
            link: self.u32(at + 40),
            entsize: self.u64(at + 56),
        }
    }

    /// `offset..offset + size` lies inside the data.
    fn check(&self, what: &str, offset: u64, size: u64) -> Result<(), ElfError> {
        match offset.checked_add(size) {
            Some(end) if end <= self.data.len() as u64 => Ok(()),
            _ => Err(ElfError::Range { what: what.into(), offset, size, len: self.data.len() }),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A tiny ELF64 relocatable file, byte by byte: a symbol table with `defined` symbols (in
    /// section 1) and `undefined` ones, and one extra section `extra` with `content`.
    pub(crate) fn tiny_elf(big: bool, defined: &[&str], undefined: &[&str], extra: (&str, &[u8])) -> Vec<u8> {
        let put16 = |v: u16| if big { v.to_be_bytes().to_vec() } else { v.to_le_bytes().to_vec() };
        let put32 = |v: u32| if big { v.to_be_bytes().to_vec() } else { v.to_le_bytes().to_vec() };
        let put64 = |v: u64| if big { v.to_be_bytes().to_vec() } else { v.to_le_bytes().to_vec() };
        // Sections: 0 null, 1 .text, 2 .symtab, 3 .strtab, 4 .shstrtab, 5 extra.
        let mut shstr = vec![0u8];
        let mut name = |s: &str| {
            let off = shstr.len() as u32;
            shstr.extend_from_slice(s.as_bytes());
            shstr.push(0);
            off
        };
        let names = [0, name(".text"), name(".symtab"), name(".strtab"), name(".shstrtab"), name(extra.0)];
        let mut strtab = vec![0u8];
        let mut syms = vec![0u8; SYM_LEN]; // symbol 0 is null
        for (shndx, list) in [(1u16, defined), (0u16, undefined)] {
            for s in list {
                let off = strtab.len() as u32;
                strtab.extend_from_slice(s.as_bytes());
                strtab.push(0);
                syms.extend(put32(off));
                syms.extend([0x12, 0]); // global function
                syms.extend(put16(shndx));
                syms.extend(put64(0));
                syms.extend(put64(0));
            }
        }
        let text = vec![0xc3u8; 4];
        let bodies: [&[u8]; 5] = [&text, &syms, &strtab, &shstr, extra.1];
        let mut out = Vec::new();
        out.extend_from_slice(b"\x7fELF");
        out.extend([2, if big { 2 } else { 1 }, 1, 0]);
        out.extend([0u8; 8]);
        out.extend(put16(1)); // ET_REL
        out.extend(put16(62));
        out.extend(put32(1));
        out.extend(put64(0)); // entry
        out.extend(put64(0)); // phoff
        let shoff_at = out.len();
        out.extend(put64(0)); // shoff, set below
        out.extend(put32(0));
        out.extend(put16(EHDR_LEN as u16));
        out.extend(put16(0));
        out.extend(put16(0));
        out.extend(put16(SHDR_LEN as u16));
        out.extend(put16(6));
        out.extend(put16(4));
        let mut placed = Vec::new();
        for b in bodies {
            placed.push((out.len() as u64, b.len() as u64));
            out.extend_from_slice(b);
        }
        let shoff = out.len() as u64;
        out[shoff_at..shoff_at + 8].copy_from_slice(&put64(shoff));
        out.extend(vec![0u8; SHDR_LEN]);
        let kinds = [1u32, SHT_SYMTAB, 3, 3, 1];
        for i in 0..5 {
            out.extend(put32(names[i + 1]));
            out.extend(put32(kinds[i]));
            out.extend(put64(0));
            out.extend(put64(0));
            out.extend(put64(placed[i].0));
            out.extend(put64(placed[i].1));
            out.extend(put32(if i == 1 { 3 } else { 0 }));
            out.extend(put32(0));
            out.extend(put64(1));
            out.extend(put64(if i == 1 { SYM_LEN as u64 } else { 0 }));
        }
        out
    }

    #[test]
    fn imports_are_the_undefined_symbols_in_either_byte_order() {
        for big in [false, true] {
            let elf = tiny_elf(big, &["ice_probe"], &["netif_set_affinity_auto", "kfree"], (".BTF", b"btf!"));
            let e = Elf::parse(&elf).unwrap();
            assert_eq!(e.undefined_symbols().unwrap(), vec!["netif_set_affinity_auto", "kfree"], "big endian {big}");
            assert_eq!(e.section(".BTF").unwrap(), Some(&b"btf!"[..]));
            assert_eq!(e.section(".nothing").unwrap(), None);
        }
    }

    #[test]
    fn truncated_and_garbage_files_are_errors_never_panics() {
        let elf = tiny_elf(false, &["a"], &["b"], (".x", b"x"));
        for len in 0..elf.len() {
            // A cut file parses or fails; it never panics, and never finds an import it lacks.
            if let Ok(e) = Elf::parse(&elf[..len]) {
                if let Ok(syms) = e.undefined_symbols() {
                    assert!(syms.iter().all(|s| *s == "b"), "{len}: {syms:?}");
                }
            }
        }
        assert_eq!(Elf::parse(b"garbage").unwrap_err(), ElfError::Magic);
        let mut bad = elf.clone();
        bad[4] = 1;
        assert_eq!(Elf::parse(&bad).unwrap_err(), ElfError::Class(1));
        let mut bad = elf.clone();
        bad[5] = 7;
        assert_eq!(Elf::parse(&bad).unwrap_err(), ElfError::Encoding(7));
        // A section table said to hold 60,000 sections.
        let mut bad = elf.clone();
        bad[0x3c..0x3e].copy_from_slice(&60000u16.to_le_bytes());
        let e = Elf::parse(&bad).unwrap_err();
        assert!(e.to_string().starts_with("section header table at "), "{e}");
        // A symbol table whose offset points past the end.
        let shoff = u64::from_le_bytes(elf[0x28..0x30].try_into().unwrap()) as usize;
        let mut bad = elf.clone();
        let at = shoff + 2 * SHDR_LEN + 24;
        bad[at..at + 8].copy_from_slice(&u64::MAX.to_le_bytes());
        let e = Elf::parse(&bad).unwrap().undefined_symbols().unwrap_err();
        assert!(matches!(e, ElfError::Range { .. }), "{e}");
    }
}
