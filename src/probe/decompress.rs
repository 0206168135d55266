//! Kernel modules as distributions ship them: plain `.ko`, `.ko.xz` (Debian, Fedora) or
//! `.ko.zst` (Ubuntu, Arch, SUSE), decompressed with pure-Rust decoders.
//!
//! Bounded: the output stops at a cap (an error past it), the xz dictionary and the zstd window
//! are capped too, so a hostile file costs at most about twice the cap in memory.
//!
//! Pure: bytes in, bytes out.

use std::borrow::Cow;
use std::io::Read;

/// How a module file is compressed, by its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    None,
    Xz,
    Zstd,
}

/// The largest xz dictionary or zstd window accepted: kernel modules use 1-8 MiB
/// (`scripts/Makefile.modinst`: `xz --lzma2=dict=1MiB`, `zstd -T0 --rm -q` at level 3 or 19).
const WINDOW_LIMIT: usize = 64 << 20;

/// Bytes decoded per step.
const STEP: usize = 64 << 10;

impl Compression {
    /// The compression of module file `name` (`ice.ko.xz`), and the module's name with `-` as
    /// `_` (`ice`); `None` for a name that is not a module file.
    pub fn of_module_file(name: &str) -> Option<(String, Compression)> {
        let (stem, how) = if let Some(s) = name.strip_suffix(".ko") {
            (s, Compression::None)
        } else if let Some(s) = name.strip_suffix(".ko.xz") {
            (s, Compression::Xz)
        } else if let Some(s) = name.strip_suffix(".ko.zst") {
            (s, Compression::Zstd)
        } else {
            return None;
        };
        (!stem.is_empty()).then(|| (stem.replace('-', "_"), how))
    }
}

/// `bytes` decompressed as `how` says, at most `limit` bytes of output; what was wrong otherwise.
pub fn decompress(bytes: &[u8], how: Compression, limit: usize) -> Result<Cow<'_, [u8]>, String> {
    match how {
        Compression::None => Ok(Cow::Borrowed(bytes)),
        Compression::Xz => unxz(bytes, limit).map(Cow::Owned),
        Compression::Zstd => unzstd(bytes, limit).map(Cow::Owned),
    }
}

/// An xz stream, decoded step by step into at most `limit` bytes.
fn unxz(bytes: &[u8], limit: usize) -> Result<Vec<u8>, String> {
    use xz4rust::{XzDecoder, XzNextBlockResult};
    let mut decoder = XzDecoder::in_heap_with_alloc_dict_size(xz4rust::DICT_SIZE_MIN, WINDOW_LIMIT);
    let mut out = Vec::new();
    let mut step = vec![0u8; STEP];
    let mut input = bytes;
    loop {
        let result = decoder.decode(input, &mut step).map_err(|e| format!("xz: {e}"))?;
        let (used, produced, end) = match result {
            XzNextBlockResult::NeedMoreData(i, o) => (i, o, false),
            XzNextBlockResult::EndOfStream(i, o) => (i, o, true),
        };
        push_capped(&mut out, &step[..produced], limit)?;
        input = input.get(used..).unwrap_or_default();
        if end {
            return Ok(out);
        }
        if used == 0 && produced == 0 {
            return Err("xz: the stream ends early".into());
        }
    }
}

/// A zstd frame, decoded into at most `limit` bytes.
fn unzstd(bytes: &[u8], limit: usize) -> Result<Vec<u8>, String> {
    let mut decoder = ruzstd::decoding::StreamingDecoder::new_with_max_window_size(bytes, WINDOW_LIMIT as u64)
        .map_err(|e| format!("zstd: {e}"))?;
    let mut out = Vec::new();
    let mut step = vec![0u8; STEP];
    loop {
        let n = decoder.read(&mut step).map_err(|e| format!("zstd: {e}"))?;
        if n == 0 {
            return Ok(out);
        }
        push_capped(&mut out, &step[..n], limit)?;
    }
}

/// Appends `more` to `out`, or says the output would pass `limit`.
fn push_capped(out: &mut Vec<u8>, more: &[u8], limit: usize) -> Result<(), String> {
    if out.len() + more.len() > limit {
        return Err(format!("decompresses to more than {limit} bytes"));
    }
    out.extend_from_slice(more);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The xz and zstd compressions of `data`, made by the `xz` and `zstd` tools when there.
    fn compressed(data: &[u8], tool: &str, args: &[&str]) -> Option<Vec<u8>> {
        let dir = tempfile::tempdir().ok()?;
        let path = dir.path().join("m.ko");
        std::fs::write(&path, data).ok()?;
        let out = std::process::Command::new(tool).args(args).arg(&path).output().ok()?;
        out.status.success().then_some(out.stdout)
    }

    #[test]
    fn module_file_names_say_their_compression() {
        assert_eq!(Compression::of_module_file("ice.ko.xz"), Some(("ice".into(), Compression::Xz)));
        assert_eq!(Compression::of_module_file("mlx5-core.ko.zst"), Some(("mlx5_core".into(), Compression::Zstd)));
        assert_eq!(Compression::of_module_file("e1000e.ko"), Some(("e1000e".into(), Compression::None)));
        assert_eq!(Compression::of_module_file("ice.ko.gz"), None);
        assert_eq!(Compression::of_module_file(".ko"), None);
    }

    #[test]
    fn xz_and_zstd_round_trip_and_stop_at_the_cap() {
        let data: Vec<u8> = (0..300_000u32).flat_map(|i| (i % 251).to_le_bytes()).collect();
        for (tool, args, how) in [
            ("xz", &["--check=crc32", "--lzma2=dict=1MiB", "-c"][..], Compression::Xz),
            ("zstd", &["-q", "-c"][..], Compression::Zstd),
        ] {
            let Some(packed) = compressed(&data, tool, args) else {
                crate::probe::tests::skip_or_fail(&format!("{tool} is not installed"));
                continue;
            };
            assert_eq!(decompress(&packed, how, data.len()).unwrap().as_ref(), &data[..], "{tool}");
            let e = decompress(&packed, how, data.len() - 1).unwrap_err();
            assert!(e.contains("more than"), "{tool}: {e}");
            for cut in [0, 1, 12, packed.len() / 2, packed.len() - 1] {
                assert!(decompress(&packed[..cut], how, data.len()).is_err(), "{tool} cut at {cut}");
            }
            let garbage: Vec<u8> = packed.iter().map(|b| b ^ 0x5a).collect();
            assert!(decompress(&garbage, how, data.len()).is_err(), "{tool} garbage");
        }
    }
}
