//! The only ways irqwise opens files under a root, each safe against what a hostile tree can
//! hold:
//! - reads resolve the path as if the root were `/` (`openat2(RESOLVE_IN_ROOT)`: an absolute
//!   symlink or `..` cannot leave it), never block (`O_NONBLOCK`), accept only regular files
//!   (sysfs and procfs attributes all are; a FIFO, socket or device node is refused) and stop
//!   at a size cap;
//! - writes resolve beneath the root without following any symlink
//!   (`RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`; on kernels before 5.6, which lack `openat2`, one
//!   `O_NOFOLLOW` component at a time).

use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Component, Path};
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::fs::{Mode, OFlags, ResolveFlags};

/// Opens `rel` (relative to the directory `dir`) with `flags`, resolved as if `dir` were `/`.
/// Falls back to a plain `openat` where the kernel has no `openat2`.
pub(super) fn open_in(dir: &OwnedFd, rel: &Path, flags: OFlags) -> io::Result<OwnedFd> {
    // openat2 refuses O_PATH with any flag but O_DIRECTORY, O_NOFOLLOW and O_CLOEXEC.
    let flags =
        if flags.contains(OFlags::PATH) { flags | OFlags::CLOEXEC } else { flags | OFlags::CLOEXEC | OFlags::NOCTTY };
    let resolve = ResolveFlags::IN_ROOT | ResolveFlags::NO_MAGICLINKS;
    match openat2_retrying(dir, rel, flags, resolve) {
        Err(rustix::io::Errno::NOSYS) => Ok(rustix::fs::openat(dir, rel, flags, Mode::empty())?),
        other => Ok(other?),
    }
}

/// Files and directories opened (or tried) under any root since the process started: read
/// before and after a pass, what the pass cost in opens (the reconcile pass is judged by it).
static OPENED: AtomicU64 = AtomicU64::new(0);

/// See [`OPENED`].
pub(super) fn opened() -> u64 {
    OPENED.load(Ordering::Relaxed)
}

/// How often an `openat2` that lost a race with a rename or mount elsewhere is tried again.
const RACE_RETRIES: usize = 64;

/// `openat2`, tried again while it fails with `EAGAIN`: the kernel refuses a `RESOLVE_IN_ROOT`
/// or `RESOLVE_BENEATH` lookup that a concurrent rename or mount anywhere on the system may have
/// raced with, and asks the caller to retry (openat2(2)).
fn openat2_retrying(dir: &OwnedFd, rel: &Path, flags: OFlags, resolve: ResolveFlags) -> rustix::io::Result<OwnedFd> {
    OPENED.fetch_add(1, Ordering::Relaxed);
    let mut tries = 0;
    loop {
        match rustix::fs::openat2(dir, rel, flags, Mode::empty(), resolve) {
            Err(rustix::io::Errno::AGAIN) if tries < RACE_RETRIES => tries += 1,
            other => return other,
        }
    }
}

/// Opens `rel` for writing beneath `dir` without following any symlink; `ELOOP` or `EXDEV` when
/// the path would leave `dir` or goes through a link.
pub(super) fn open_write_beneath(dir: &OwnedFd, rel: &Path) -> io::Result<OwnedFd> {
    // First a look without opening for writing: a FIFO, socket or device is refused as what it
    // is (opening a FIFO for writing would only say ENXIO, or wake a reader).
    regular(open_beneath(dir, rel, OFlags::PATH | OFlags::CLOEXEC)?)?;
    open_beneath(dir, rel, OFlags::WRONLY | OFlags::CLOEXEC | OFlags::NOCTTY | OFlags::NONBLOCK)
}

/// `rel` opened with `flags` beneath `dir`, no symlink followed (see [`open_write_beneath`]).
fn open_beneath(dir: &OwnedFd, rel: &Path, flags: OFlags) -> io::Result<OwnedFd> {
    let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS;
    match openat2_retrying(dir, rel, flags, resolve) {
        Err(rustix::io::Errno::NOSYS) => open_walking(dir, rel, flags),
        other => Ok(other?),
    }
}

/// [`open_write_beneath`] without `openat2`: each directory opened with `O_NOFOLLOW` from the
/// previous one, the file itself with `O_NOFOLLOW`. Guarantees the same refusals: `..`, an
/// absolute path or a symlink anywhere is `EXDEV`/`ELOOP`/`ENOTDIR`, never a write elsewhere.
pub(super) fn open_walking(dir: &OwnedFd, rel: &Path, flags: OFlags) -> io::Result<OwnedFd> {
    let mut names = Vec::new();
    for c in rel.components() {
        match c {
            Component::Normal(name) => names.push(name),
            Component::CurDir => {}
            _ => return Err(io::Error::from_raw_os_error(rustix::io::Errno::XDEV.raw_os_error())),
        }
    }
    let Some((last, dirs)) = names.split_last() else {
        return Err(io::Error::from_raw_os_error(rustix::io::Errno::INVAL.raw_os_error()));
    };
    let step = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let mut current: Option<OwnedFd> = None;
    for name in dirs {
        let from = current.as_ref().map_or(dir.as_fd(), |fd| fd.as_fd());
        current = Some(rustix::fs::openat(from, *name, step, Mode::empty())?);
    }
    let from = current.as_ref().map_or(dir.as_fd(), |fd| fd.as_fd());
    Ok(rustix::fs::openat(from, *last, flags | OFlags::NOFOLLOW, Mode::empty())?)
}

/// A regular file and what its one `fstat` said of it.
pub(super) struct Regular {
    pub file: File,
    /// `st_size`: 0 or a page for procfs and sysfs files.
    pub size: u64,
    /// The permission bits (`st_mode & 0o7777`).
    pub mode: u32,
}

/// The file behind `fd` with its size and mode, if it is a regular file; an `InvalidInput` error
/// naming what it is otherwise.
pub(super) fn regular_file(fd: OwnedFd) -> io::Result<Regular> {
    let stat = rustix::fs::fstat(&fd)?;
    let kind = rustix::fs::FileType::from_raw_mode(stat.st_mode);
    if kind != rustix::fs::FileType::RegularFile {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("is {}, not a regular file", describe(kind))));
    }
    let size = u64::try_from(stat.st_size).unwrap_or(0);
    Ok(Regular { file: File::from(fd), size, mode: stat.st_mode & 0o7777 })
}

/// The file behind `fd` without asking what it is: only for files of the kernel's own sysfs and
/// procfs (see `Root::in_kernel_fs`), which are all attributes. Size and mode unknown (0).
pub(super) fn unchecked(fd: OwnedFd) -> Regular {
    Regular { file: File::from(fd), size: 0, mode: 0 }
}

/// The file behind `fd`, if it is a regular file (see [`regular_file`]).
pub(super) fn regular(fd: OwnedFd) -> io::Result<File> {
    regular_file(fd).map(|r| r.file)
}

/// How error messages name a kind of file.
fn describe(kind: rustix::fs::FileType) -> &'static str {
    use rustix::fs::FileType::{BlockDevice, CharacterDevice, Directory, Fifo, Socket, Symlink};
    match kind {
        Directory => "a directory",
        Fifo => "a FIFO",
        Socket => "a socket",
        CharacterDevice => "a character device",
        BlockDevice => "a block device",
        Symlink => "a symlink",
        _ => "not a plain file",
    }
}

/// Reads all of `r`, at most `limit` bytes; longer is an `InvalidData` error saying so. A file
/// whose size already says it is longer (a plain file; procfs and sysfs report 0 or a page) is
/// refused before any byte is read or any memory taken for it.
///
/// With `first_read` bytes (a page for attributes), a first read shorter than that is the whole
/// file and no second read asks for its end: procfs and sysfs attributes are `seq_file`s, whose
/// read fills the buffer until the value ends, and a plain file's read stops short only at its
/// end. A value is one page at most, so attributes cost one `read`.
pub(super) fn read_capped(r: Regular, limit: u64, first_read: usize) -> io::Result<Vec<u8>> {
    if r.size > limit {
        return Err(io::Error::new(io::ErrorKind::InvalidData, format!("longer than {limit} bytes")));
    }
    let file = r.file;
    let mut bytes = Vec::new();
    if first_read > 0 {
        // Not zeroed first: the kernel fills what it returns (a pass reads 25,000 files).
        let mut page = [std::mem::MaybeUninit::<u8>::uninit(); 4096];
        let want = first_read.min(page.len());
        let read = loop {
            match rustix::io::read(&file, &mut page[..want]) {
                Err(rustix::io::Errno::INTR) => {}
                other => break other?.0,
            }
        };
        if read.len() < want && read.len() as u64 <= limit {
            return Ok(read.to_vec());
        }
        bytes.extend_from_slice(read);
    }
    let rest = (limit + 1).saturating_sub(bytes.len() as u64);
    file.take(rest).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(io::Error::new(io::ErrorKind::InvalidData, format!("longer than {limit} bytes")));
    }
    Ok(bytes)
}

/// Reads the first `limit` bytes of `r` (all of a shorter file): a longer file is no error, its
/// rest is neither read nor kept. For other processes' files, of which a reader needs only the
/// start (`/proc/PID/cmdline`, which a process makes as long as it likes).
pub(super) fn read_start(r: Regular, limit: u64) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    r.file.take(limit).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Reads the regular file at `path` (links followed, as for any file an administrator names):
/// without blocking on a FIFO, refusing devices and sockets, at most `limit` bytes. For files
/// outside a root: the configuration and the daemon's own state.
pub(crate) fn read_regular_file(path: &Path, limit: u64) -> io::Result<Vec<u8>> {
    let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY;
    let fd = rustix::fs::open(path, flags, Mode::empty())?;
    read_capped(regular_file(fd)?, limit, 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn dir_fd(p: &Path) -> OwnedFd {
        rustix::fs::open(p, OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty()).unwrap()
    }

    #[test]
    fn the_walking_fallback_refuses_links_and_dot_dot_and_opens_plain_paths() {
        let d = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("proc/irq/5")).unwrap();
        std::fs::write(d.path().join("proc/irq/5/smp_affinity_list"), "0\n").unwrap();
        std::fs::write(outside.path().join("victim"), "keep\n").unwrap();
        symlink(outside.path().join("victim"), d.path().join("proc/irq/5/link")).unwrap();
        symlink(outside.path(), d.path().join("proc/irq/6")).unwrap();
        let fd = dir_fd(d.path());
        let w = OFlags::WRONLY | OFlags::NONBLOCK;
        assert!(open_walking(&fd, Path::new("proc/irq/5/smp_affinity_list"), w).is_ok());
        for bad in ["proc/irq/5/link", "proc/irq/6/victim", "proc/../proc/irq/5/smp_affinity_list", "/etc/passwd"] {
            assert!(open_walking(&fd, Path::new(bad), w).is_err(), "{bad} must be refused");
        }
        assert_eq!(std::fs::read_to_string(outside.path().join("victim")).unwrap(), "keep\n");
    }

    #[test]
    fn a_first_read_of_a_page_still_reads_longer_files_whole_and_caps_them() {
        let d = tempfile::tempdir().unwrap();
        for len in [0usize, 1, 4095, 4096, 4097, 9000] {
            let path = d.path().join(format!("f{len}"));
            let text: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
            std::fs::write(&path, &text).unwrap();
            let open = || regular_file(rustix::fs::open(&path, OFlags::RDONLY, Mode::empty()).unwrap()).unwrap();
            assert_eq!(read_capped(open(), 1 << 20, 4096).unwrap(), text, "{len} bytes, first read a page");
            assert_eq!(read_capped(open(), 1 << 20, 0).unwrap(), text, "{len} bytes, no first read");
            if len > 4096 {
                // A size that does not give the length away (procfs says 0): the cap still holds.
                let r = Regular { size: 0, ..open() };
                assert!(read_capped(r, 4096, 4096).is_err(), "{len} bytes over a 4096-byte cap");
            }
        }
    }

    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let d = tempfile::tempdir().unwrap();
        let fifo = d.path().join("fifo");
        rustix::fs::mknodat(rustix::fs::CWD, &fifo, rustix::fs::FileType::Fifo, Mode::RUSR | Mode::WUSR, 0).unwrap();
        let e = read_regular_file(&fifo, 10).unwrap_err();
        assert!(e.to_string().contains("FIFO"), "{e}");
        let dev = read_regular_file(Path::new("/dev/zero"), 10).unwrap_err();
        assert!(dev.to_string().contains("character device"), "{dev}");
    }
}
