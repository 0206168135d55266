//! The code pages an idle daemon keeps mapped.
//!
//! The kernel maps file pages around each page fault (fault-around, 64 kB at a time), so once a
//! pass has run, nearly all of irqwise's 2 MB of code and glibc's 1 MB are resident in the
//! daemon though between passes it runs only its event loop: measured on the host, 2.4 MB of
//! the binary's code and 1.1 MB of glibc's of a 5.0 MB VmRSS. After a pass that read everything
//! (start, reload, reconcile) the daemon unmaps the pages of its read-only file mappings
//! (`MADV_DONTNEED`) just before its runtime waits for the next event (tokio's park hook: what
//! runs between the unmapping and the wait is mapped again, 64 kB per fault); they stay in the
//! page cache and the next pass maps what it runs again (minor faults, no I/O).
//!
//! Only mappings that cannot hold anything but the file's bytes are unmapped: private, not
//! writable, backed by a file, with no anonymous (copied-on-write) page. A relocated read-only
//! segment (RELRO) has anonymous pages and is left alone: unmapping it would bring back the
//! file's unrelocated bytes.

use std::sync::atomic::{AtomicBool, Ordering};

use thiserror::Error;

/// Set after a pass that read everything; taken by the next [`on_park`].
static PENDING: AtomicBool = AtomicBool::new(false);

/// Asks for the code pages to be given back the next time the runtime waits.
pub fn give_back_when_idle() {
    PENDING.store(true, Ordering::Relaxed);
}

/// The runtime's park hook: gives back the code pages when a pass asked for it. Failing only
/// changes memory use, so the error is logged at debug level.
pub fn on_park() {
    if PENDING.swap(false, Ordering::Relaxed) {
        if let Err(e) = give_back_code() {
            tracing::debug!("{e}");
        }
    }
}

/// Why the code pages could not be given back (the daemon only logs it at debug level: this
/// changes memory use, never behaviour).
#[derive(Debug, Error)]
pub enum ResidentError {
    /// `/proc/self/smaps` could not be read.
    #[error("cannot read /proc/self/smaps: {0}")]
    Smaps(#[from] std::io::Error),
}

/// A range of the process's address space, `[start, end)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Range {
    pub start: usize,
    pub end: usize,
}

/// The mappings of `smaps` (the text of `/proc/PID/smaps`) whose pages are only ever the file's
/// bytes: private (`p`), not writable, backed by an inode, with `Anonymous: 0 kB`. A mapping
/// whose lines cannot be read is left out.
pub fn file_only_mappings(smaps: &str) -> Vec<Range> {
    let mut out = Vec::new();
    let mut current: Option<Range> = None;
    for line in smaps.lines() {
        if let Line::Mapping(range) = classify(line) {
            current = range;
        } else if let Some(kb) = line.strip_prefix("Anonymous:") {
            let anonymous = kb.trim().strip_suffix("kB").map(|n| n.trim().parse::<u64>());
            if let (Some(range), Some(Ok(0))) = (current.take(), anonymous) {
                out.push(range);
            }
        }
    }
    out
}

/// A line of `smaps`.
enum Line {
    /// A mapping's header: its range when it may be file-only (private, not writable, an inode).
    Mapping(Option<Range>),
    /// One of the mapping's fields (`Rss:`, `Anonymous:`, ...).
    Field,
}

/// What `line` is.
fn classify(line: &str) -> Line {
    header(line).map_or(Line::Field, Line::Mapping)
}

/// The range of a header line of a mapping that may be file-only, `Some(None)` for another
/// mapping's header; `None` when `line` is no header.
#[allow(clippy::option_option)] // the three cases are named by `Line`
fn header(line: &str) -> Option<Option<Range>> {
    let mut fields = line.split_ascii_whitespace();
    let (start, end) = fields.next()?.split_once('-')?;
    let start = usize::from_str_radix(start, 16).ok()?;
    let end = usize::from_str_radix(end, 16).ok()?;
    let perms = fields.next()?.as_bytes();
    let _offset = fields.next()?;
    let _device = fields.next()?;
    let inode = fields.next()?.parse::<u64>().ok()?;
    let private_read_only = perms.len() == 4 && perms[1] == b'-' && perms[3] == b'p';
    Some((private_read_only && inode != 0 && start < end).then_some(Range { start, end }))
}

/// Unmaps the pages of every file-only mapping of this process (see the module comment); the
/// count of ranges given back.
pub fn give_back_code() -> Result<usize, ResidentError> {
    let smaps = std::fs::read_to_string("/proc/self/smaps")?;
    let ranges = file_only_mappings(&smaps);
    for r in &ranges {
        // SAFETY: each range is a whole mapping of this process that is private, read-only and
        // holds no anonymous page, so every page of it is the file's bytes: MADV_DONTNEED only
        // drops the mapping of pages the next access maps again from the same file. The
        // mappings were read just now and the daemon maps nothing in between (one thread).
        #[allow(unsafe_code)]
        unsafe {
            let addr = r.start as *mut std::ffi::c_void;
            let _ = rustix::mm::madvise(addr, r.end - r.start, rustix::mm::Advice::LinuxDontNeed);
        }
    }
    Ok(ranges.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMAPS: &str = "\
55d0c0000000-55d0c0010000 r--p 00000000 08:01 1234 /usr/sbin/irqwise
Size:                 64 kB
Rss:                  64 kB
Anonymous:             0 kB
55d0c0010000-55d0c0200000 r-xp 00010000 08:01 1234 /usr/sbin/irqwise
Size:               1984 kB
Anonymous:             0 kB
55d0c0200000-55d0c0210000 r--p 00200000 08:01 1234 /usr/sbin/irqwise
Size:                 64 kB
Anonymous:            12 kB
55d0c0210000-55d0c0212000 rw-p 00210000 08:01 1234 /usr/sbin/irqwise
Anonymous:             8 kB
55d0c1000000-55d0c1021000 rw-p 00000000 00:00 0 [heap]
Anonymous:            0 kB
7f0000000000-7f0000002000 r-xs 00000000 00:05 99 /memfd:x (deleted)
Anonymous:             0 kB
7ffd00000000-7ffd00002000 r-xp 00000000 00:00 0 [vdso]
Anonymous:             0 kB
";

    #[test]
    fn only_private_read_only_file_mappings_without_anonymous_pages_are_chosen() {
        let got = file_only_mappings(SMAPS);
        let want = [
            Range { start: 0x55d0c0000000, end: 0x55d0c0010000 },
            Range { start: 0x55d0c0010000, end: 0x55d0c0200000 },
        ];
        // Left out: the relocated read-only segment (anonymous pages), the writable data, the
        // heap, a shared mapping and the vDSO (no inode).
        assert_eq!(got, want);
    }

    #[test]
    fn a_mapping_whose_anonymous_line_is_missing_or_unreadable_is_left_alone() {
        let text = "\
1000-2000 r-xp 00000000 08:01 7 /lib/a.so
Size: 4 kB
3000-4000 r-xp 00000000 08:01 8 /lib/b.so
Anonymous: lots kB
5000-6000 r-xp 00000000 08:01 9 /lib/c.so
Anonymous: 0 kB
";
        assert_eq!(file_only_mappings(text), [Range { start: 0x5000, end: 0x6000 }]);
    }

    #[test]
    fn giving_back_code_keeps_the_process_running_and_shrinks_its_resident_code() {
        // Runs on this test process itself: every page unmapped is mapped again on its next use.
        let rss_file = || {
            let status = std::fs::read_to_string("/proc/self/status").unwrap();
            status.lines().find_map(|l| l.strip_prefix("RssFile:")).unwrap().trim().to_string()
        };
        let before = rss_file();
        let n = give_back_code().unwrap();
        assert!(n > 0, "the test binary's own code is a file-only mapping");
        let after = rss_file();
        let kb = |s: &str| s.trim_end_matches("kB").trim().parse::<u64>().unwrap();
        assert!(kb(&after) < kb(&before), "RssFile {before} -> {after}");
        // Code and read-only data still work after being mapped again.
        assert_eq!(file_only_mappings(SMAPS).len(), 2);
    }
}
