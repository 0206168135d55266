//! The root every read and write goes through: `ROOT/sys/...`, `ROOT/proc/...`.
//!
//! Tests and users point it at a captured tree; the default is `/`. Every input is treated as
//! hostile (see [`open`]): reads resolve inside the root, never block and stop at a size cap;
//! writes never follow a symlink. Every error names the full path, and for parse errors the
//! content found and what was expected.

mod open;
mod own_files;
mod parallel;
pub mod processes;

use std::collections::BTreeMap;
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::{Arc, Mutex, OnceLock};

use rustix::fs::{Mode, OFlags};

use crate::cpuset::{CpuSet, CpuSetError};

pub(crate) use open::read_regular_file;
pub(crate) use parallel::read_in_parallel;
pub use parallel::MAX_READERS;

#[derive(Debug, thiserror::Error)]
pub enum SysfsError {
    #[error("cannot read {path}: {source}")]
    Read { path: PathBuf, source: io::Error },
    #[error("cannot list directory {path}: {source}")]
    ListDir { path: PathBuf, source: io::Error },
    #[error("{path}: unexpected content {content:?}, expected {expected}")]
    Parse { path: PathBuf, content: String, expected: &'static str },
    #[error("{path}: {source}")]
    CpuList { path: PathBuf, source: CpuSetError },
}

impl SysfsError {
    /// The underlying I/O error kind, when this is an I/O failure.
    pub(crate) fn io_kind(&self) -> Option<io::ErrorKind> {
        match self {
            SysfsError::Read { source, .. } | SysfsError::ListDir { source, .. } => Some(source.kind()),
            _ => None,
        }
    }

    /// Whether the kernel refused the read or listing with an errno (as opposed to content
    /// irqwise could not take, or a file it will not open, such as a FIFO).
    pub(crate) fn kernel_refused(&self) -> bool {
        match self {
            SysfsError::Read { source, .. } | SysfsError::ListDir { source, .. } => source.raw_os_error().is_some(),
            _ => false,
        }
    }
}

/// How a reader used a path, weakest first. [`Root::recording`] keeps the strongest use of each
/// path, which is what `snapshot` copies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Access {
    /// Asked whether it exists (or is a directory).
    Exists,
    /// A directory whose entries were listed.
    Listed,
    /// A directory entry a reader kept from a listing (its name mattered, not its content).
    Entry,
    /// A symlink whose target text was read.
    Link,
    /// A file whose content or mode was read.
    Read,
}

/// Paths used through a recording root, by relative path.
type AccessLog = Arc<Mutex<BTreeMap<PathBuf, Access>>>;

/// Bytes [`Root::read_small_optional`] and friends accept: a CPU list of 8192 CPUs in the worst
/// format is < 48 KiB; every sysfs attribute is one page.
pub(crate) const SMALL_FILE_LIMIT: u64 = 1 << 20;

/// Bytes [`Root::read_bytes_optional`] accepts: `/proc/interrupts` of a 1024-CPU machine with
/// 8,000 IRQs is about a third of it. (It is read only for IRQs `sys/kernel/irq` does not name.)
pub(crate) const LARGE_FILE_LIMIT: u64 = 256 << 20;

/// What a sysfs attribute's `show()` can return at most: one page.
const SYSFS_PAGE: usize = 4096;

/// A directory standing for `/`. Paths given to it are relative (`"sys/devices/system/cpu"`).
/// Every read of the readers goes through it; a recording root (see [`Root::recording`]) also
/// remembers each path it was asked for.
#[derive(Debug, Clone)]
pub struct Root {
    base: PathBuf,
    /// The base directory, opened once (`None`: it cannot be opened).
    dir: Arc<OnceLock<Option<OwnedFd>>>,
    /// Whether `ROOT/sys` is a sysfs and `ROOT/proc` a procfs mount, asked once.
    kernel_fs: Arc<OnceLock<KernelFs>>,
    log: Option<AccessLog>,
}

/// Which of the root's two kernel trees are the kernel's own file systems (`fstatfs` magic):
/// their files are attributes, never FIFOs, devices or sockets, so a read there needs no
/// `fstat` to refuse those (a quarter of the system calls of a full read), unless the caller
/// wants the file's mode. A fixture or snapshot directory is neither: every read is checked.
#[derive(Debug, Clone, Copy, Default)]
struct KernelFs {
    sys: bool,
    proc: bool,
}

/// `SYSFS_MAGIC` and `PROC_SUPER_MAGIC` (include/uapi/linux/magic.h).
const SYSFS_MAGIC: u64 = 0x6265_6572;
const PROC_SUPER_MAGIC: u64 = 0x9fa0;

impl PartialEq for Root {
    fn eq(&self, other: &Root) -> bool {
        self.base == other.base
    }
}

impl Eq for Root {}

impl Default for Root {
    fn default() -> Self {
        Root::new("/")
    }
}

impl Root {
    pub fn new(base: impl Into<PathBuf>) -> Root {
        Root { base: base.into(), dir: Arc::default(), kernel_fs: Arc::default(), log: None }
    }

    /// The same root, remembering every path used through it (and its clones) from now on.
    pub(crate) fn recording(&self) -> Root {
        Root {
            base: self.base.clone(),
            dir: self.dir.clone(),
            kernel_fs: self.kernel_fs.clone(),
            log: Some(Arc::default()),
        }
    }

    /// The paths used through a recording root with their strongest use, sorted; empty for a
    /// root that does not record.
    pub(crate) fn accesses(&self) -> Vec<(PathBuf, Access)> {
        match &self.log {
            Some(log) => lock(log).iter().map(|(p, a)| (p.clone(), *a)).collect(),
            None => Vec::new(),
        }
    }

    /// Remembers that `rel` was used as `access` (the strongest use wins).
    fn note(&self, rel: &Path, access: Access) {
        if let Some(log) = &self.log {
            let mut log = lock(log);
            let slot = log.entry(relative(rel).to_path_buf()).or_insert(access);
            *slot = (*slot).max(access);
        }
    }

    /// Whether this root is this machine's `/`: what netlink and processes say is about it.
    pub fn is_this_machine(&self) -> bool {
        self.base() == Path::new("/")
    }

    pub fn base(&self) -> &Path {
        &self.base
    }

    /// `ROOT/rel`; a leading `/` on `rel` is ignored so absolute-looking paths stay inside.
    pub fn path(&self, rel: impl AsRef<Path>) -> PathBuf {
        self.base.join(relative(rel.as_ref()))
    }

    /// The base directory's descriptor, or the error of opening it.
    fn dir(&self) -> io::Result<&OwnedFd> {
        let fd = self.dir.get_or_init(|| {
            // Following symlinks here is deliberate: the base is the administrator's choice.
            rustix::fs::open(&self.base, OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty()).ok()
        });
        fd.as_ref().ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "the root directory cannot be opened"))
    }

    /// Opens `rel` inside the root (see [`open::open_in`]).
    fn open(&self, rel: &Path, flags: OFlags) -> io::Result<OwnedFd> {
        let rel = relative(rel);
        if rel.as_os_str().is_empty() {
            return open::open_in(self.dir()?, Path::new("."), flags);
        }
        open::open_in(self.dir()?, rel, flags)
    }

    /// `stat` of `rel` inside the root, links followed.
    fn stat(&self, rel: &Path) -> io::Result<rustix::fs::Stat> {
        let fd = self.open(rel, OFlags::PATH)?;
        Ok(rustix::fs::fstat(&fd)?)
    }

    /// Whether `rel` exists (following symlinks inside the root).
    pub fn exists(&self, rel: impl AsRef<Path>) -> bool {
        self.note(rel.as_ref(), Access::Exists);
        self.stat(rel.as_ref()).is_ok()
    }

    /// Whether `rel` is a directory (following symlinks inside the root).
    pub fn is_dir(&self, rel: impl AsRef<Path>) -> bool {
        self.note(rel.as_ref(), Access::Exists);
        self.stat(rel.as_ref())
            .is_ok_and(|st| rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::Directory)
    }

    /// The last component of the target of symlink `rel` (dangling links are fine); `None`
    /// without a link.
    pub(crate) fn link_name(&self, rel: impl AsRef<Path>) -> Option<String> {
        let rel = rel.as_ref();
        self.note(rel, Access::Link);
        let (parent, name) = (relative(rel).parent()?, rel.file_name()?);
        let dir = self.open(parent, OFlags::PATH | OFlags::DIRECTORY).ok()?;
        let target = rustix::fs::readlinkat(&dir, name, Vec::new()).ok()?;
        let target: PathBuf =
            <std::ffi::OsString as std::os::unix::ffi::OsStringExt>::from_vec(target.into_bytes()).into();
        target.file_name().map(|n| n.to_string_lossy().into_owned())
    }

    /// The permission bits of `rel` (following symlinks); `None` when it does not exist.
    pub fn mode(&self, rel: impl AsRef<Path>) -> Result<Option<u32>, SysfsError> {
        let rel = rel.as_ref();
        self.note(rel, Access::Read);
        match self.stat(rel) {
            Ok(st) => Ok(Some(st.st_mode & 0o7777)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(SysfsError::Read { path: self.path(rel), source }),
        }
    }

    /// A regular file's bytes, at most `limit` of them. The one read of the readers: inside the
    /// root, never blocking, never a FIFO or device.
    fn read_capped(&self, rel: &Path, limit: u64, first_read: usize) -> Result<Vec<u8>, SysfsError> {
        self.read_checked(rel, limit, first_read, false).map(|(bytes, _)| bytes)
    }

    /// [`Root::read_capped`], with the file's permission bits (from the same `fstat`).
    fn read_capped_with_mode(&self, rel: &Path, limit: u64, first_read: usize) -> Result<(Vec<u8>, u32), SysfsError> {
        self.read_checked(rel, limit, first_read, true)
    }

    /// The read itself: the file is `fstat`ed (refused unless regular, its mode returned) unless
    /// it lies in a kernel file system of the root and `with_mode` is false (mode 0 then).
    fn read_checked(
        &self,
        rel: &Path,
        limit: u64,
        first_read: usize,
        with_mode: bool,
    ) -> Result<(Vec<u8>, u32), SysfsError> {
        self.note(rel, Access::Read);
        let read = self.open_regular(rel, with_mode).and_then(|r| {
            let mode = r.mode;
            open::read_capped(r, limit, first_read).map(|bytes| (bytes, mode))
        });
        read.map_err(|source| SysfsError::Read { path: self.path(rel), source })
    }

    /// `rel` opened for reading without blocking, refused unless a regular file (`fstat`),
    /// which a file of a kernel file system of the root is without asking, unless `with_mode`
    /// wants its mode.
    fn open_regular(&self, rel: &Path, with_mode: bool) -> io::Result<open::Regular> {
        let trusted = !with_mode && self.in_kernel_fs(rel);
        let fd = self.open(rel, OFlags::RDONLY | OFlags::NONBLOCK)?;
        if trusted {
            Ok(open::unchecked(fd))
        } else {
            open::regular_file(fd)
        }
    }

    /// The first `limit` bytes of regular file `rel` (all of a shorter one; the rest of a longer
    /// one neither read nor kept): for files another process makes as long as it likes, of which
    /// a reader needs the start (`proc/PID/cmdline`). Inside the root, never blocking, never a
    /// FIFO or device, like every read.
    pub(crate) fn read_start(&self, rel: impl AsRef<Path>, limit: u64) -> Result<Vec<u8>, SysfsError> {
        let rel = rel.as_ref();
        self.note(rel, Access::Read);
        let read = self.open_regular(rel, false).and_then(|r| open::read_start(r, limit));
        read.map_err(|source| SysfsError::Read { path: self.path(rel), source })
    }

    /// Whether `rel` is below `ROOT/sys` on a sysfs or `ROOT/proc` on a procfs.
    fn in_kernel_fs(&self, rel: &Path) -> bool {
        let fs = *self.kernel_fs.get_or_init(|| {
            let magic = |top: &str| {
                self.open(Path::new(top), OFlags::PATH | OFlags::DIRECTORY)
                    .and_then(|fd| Ok(rustix::fs::fstatfs(&fd)?))
                    .map_or(0, |st| st.f_type as u64)
            };
            KernelFs { sys: magic("sys") == SYSFS_MAGIC, proc: magic("proc") == PROC_SUPER_MAGIC }
        });
        match relative(rel).as_os_str().as_bytes().split(|&b| b == b'/').next() {
            Some(b"sys") => fs.sys,
            Some(b"proc") => fs.proc,
            _ => false,
        }
    }

    /// A whole file's bytes, at most [`LARGE_FILE_LIMIT`]; a missing file is `None`. For the few
    /// large procfs files (`/proc/interrupts`).
    pub(crate) fn read_bytes_optional(&self, rel: impl AsRef<Path>) -> Result<Option<Vec<u8>>, SysfsError> {
        optional(self.read_capped(rel.as_ref(), LARGE_FILE_LIMIT, 0))
    }

    /// A whole file's bytes, at most `limit`; a missing file is `None`, a longer one an error
    /// saying so (nothing of it read).
    pub(crate) fn read_bytes_limited_optional(
        &self,
        rel: impl AsRef<Path>,
        limit: u64,
    ) -> Result<Option<Vec<u8>>, SysfsError> {
        optional(self.read_capped(rel.as_ref(), limit, 0))
    }

    /// A short sysfs/procfs value (at most [`SMALL_FILE_LIMIT`] bytes) as text, with trailing
    /// whitespace and NUL bytes removed (some firmware pads values with them).
    pub(crate) fn read_string(&self, rel: impl AsRef<Path>) -> Result<String, SysfsError> {
        let bytes = self.read_capped(rel.as_ref(), SMALL_FILE_LIMIT, SYSFS_PAGE)?;
        Ok(trim_end(text_of(bytes)))
    }

    /// [`Root::read_string`] with the file's permission bits, read by the same `fstat`.
    pub(crate) fn read_string_with_mode(&self, rel: impl AsRef<Path>) -> Result<(String, u32), SysfsError> {
        let (bytes, mode) = self.read_capped_with_mode(rel.as_ref(), SMALL_FILE_LIMIT, SYSFS_PAGE)?;
        Ok((trim_end(text_of(bytes)), mode))
    }

    /// [`Root::read_string`], a missing file being `None`.
    pub(crate) fn read_small_optional(&self, rel: impl AsRef<Path>) -> Result<Option<String>, SysfsError> {
        optional(self.read_string(rel))
    }

    /// The same as [`Root::read_small_optional`].
    pub(crate) fn read_optional(&self, rel: impl AsRef<Path>) -> Result<Option<String>, SysfsError> {
        self.read_small_optional(rel)
    }

    /// A CPU list file (`0-3,8`), also blk-mq's `4, 5, 6, 7`.
    pub(crate) fn read_cpulist(&self, rel: impl AsRef<Path>) -> Result<CpuSet, SysfsError> {
        let rel = rel.as_ref();
        let text = self.read_string(rel)?;
        parse_cpulist_at(&self.path(rel), &text)
    }

    /// A CPU list file that may be absent.
    pub fn read_cpulist_optional(&self, rel: impl AsRef<Path>) -> Result<Option<CpuSet>, SysfsError> {
        let rel = rel.as_ref();
        match self.read_small_optional(rel)? {
            Some(text) => parse_cpulist_at(&self.path(rel), &text).map(Some),
            None => Ok(None),
        }
    }

    /// A file holding one number (decimal), surrounding whitespace allowed.
    #[cfg(test)]
    pub(crate) fn read_number<T: FromStr>(
        &self,
        rel: impl AsRef<Path>,
        expected: &'static str,
    ) -> Result<T, SysfsError> {
        let rel = rel.as_ref();
        let text = self.read_string(rel)?;
        parse_number_at(&self.path(rel), &text, expected)
    }

    /// A number file that may be absent.
    pub(crate) fn read_number_optional<T: FromStr>(
        &self,
        rel: impl AsRef<Path>,
        expected: &'static str,
    ) -> Result<Option<T>, SysfsError> {
        let rel = rel.as_ref();
        match self.read_small_optional(rel)? {
            Some(text) => parse_number_at(&self.path(rel), &text, expected).map(Some),
            None => Ok(None),
        }
    }

    /// Names in a directory, sorted; a missing directory is an error.
    pub(crate) fn list_dir(&self, rel: impl AsRef<Path>) -> Result<Vec<String>, SysfsError> {
        let rel = rel.as_ref();
        self.note(rel, Access::Listed);
        let list = || -> io::Result<Vec<String>> {
            let fd = self.open(rel, OFlags::RDONLY | OFlags::DIRECTORY)?;
            let mut names = Vec::new();
            for entry in rustix::fs::Dir::new(fd)? {
                let entry = entry?;
                let name = entry.file_name().to_string_lossy().into_owned();
                if name != "." && name != ".." {
                    names.push(name);
                }
            }
            Ok(names)
        };
        let mut names = list().map_err(|source| SysfsError::ListDir { path: self.path(rel), source })?;
        names.sort();
        Ok(names)
    }

    /// Names in a directory, sorted; a missing directory is an empty list.
    pub fn list_dir_optional(&self, rel: impl AsRef<Path>) -> Result<Vec<String>, SysfsError> {
        match self.list_dir(rel) {
            Err(e) if e.io_kind() == Some(io::ErrorKind::NotFound) => Ok(Vec::new()),
            other => other,
        }
    }

    /// Names in directory `rel`, sorted (a missing directory is an empty list), for readers
    /// that learn from an entry's name alone (`cpuN/node1`, `msi_irqs/42`): a recording root
    /// remembers the entries `used` accepts, so a snapshot has them.
    pub(crate) fn list_dir_noting(
        &self,
        rel: impl AsRef<Path>,
        used: impl Fn(&str) -> bool,
    ) -> Result<Vec<String>, SysfsError> {
        let rel = rel.as_ref();
        let names = self.list_dir_optional(rel)?;
        if self.log.is_some() {
            for name in names.iter().filter(|n| used(n)) {
                self.note(&rel.join(name), Access::Entry);
            }
        }
        Ok(names)
    }

    /// What `rel` is inside the root, without recording: whether the name itself is a symlink,
    /// and what it resolves to (`None` when it leads nowhere).
    pub fn entry(&self, rel: impl AsRef<Path>) -> io::Result<Entry> {
        use rustix::fs::FileType;
        let rel = rel.as_ref();
        let own = rustix::fs::fstat(self.open(rel, OFlags::PATH | OFlags::NOFOLLOW)?)?;
        let symlink = FileType::from_raw_mode(own.st_mode) == FileType::Symlink;
        let target = self.stat(rel).ok().map(|st| match FileType::from_raw_mode(st.st_mode) {
            FileType::Directory => EntryKind::Dir,
            FileType::RegularFile => EntryKind::File,
            _ => EntryKind::Other,
        });
        Ok(Entry { symlink, target })
    }

    /// A regular file's bytes (at most `limit`) and permission bits, without recording: for
    /// `snapshot`'s copy of what the readers recorded.
    pub(crate) fn read_file(&self, rel: impl AsRef<Path>, limit: u64) -> io::Result<(Vec<u8>, u32)> {
        let r = open::regular_file(self.open(rel.as_ref(), OFlags::RDONLY | OFlags::NONBLOCK)?)?;
        let mode = r.mode;
        Ok((open::read_capped(r, limit, 0)?, mode))
    }

    /// The target text of symlink `rel`, without recording.
    pub(crate) fn link_target(&self, rel: impl AsRef<Path>) -> io::Result<PathBuf> {
        let rel = relative(rel.as_ref());
        let (Some(parent), Some(name)) = (rel.parent(), rel.file_name()) else {
            return Err(io::Error::from(io::ErrorKind::InvalidInput));
        };
        let dir = self.open(parent, OFlags::PATH | OFlags::DIRECTORY)?;
        let target = rustix::fs::readlinkat(&dir, name, Vec::new())?;
        Ok(<std::ffi::OsString as std::os::unix::ffi::OsStringExt>::from_vec(target.into_bytes()).into())
    }

    /// Opens the existing regular file `rel` for writing, resolved beneath the root without
    /// following any symlink (see [`open::open_write_beneath`]). Never creates a file.
    pub(crate) fn open_write(&self, rel: impl AsRef<Path>) -> io::Result<std::fs::File> {
        open::regular(open::open_write_beneath(self.dir()?, relative(rel.as_ref()))?)
    }
}

/// What a path under a root is, for `snapshot`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    /// The name itself is a symlink.
    pub symlink: bool,
    /// What it resolves to inside the root; `None` when nothing (a dangling link).
    pub target: Option<EntryKind>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    Dir,
    File,
    /// A FIFO, socket or device node: never read.
    Other,
}

/// `rel` without a leading `/`.
fn relative(rel: &Path) -> &Path {
    // By bytes, as `strip_prefix("/")` would: that parses components, three times per file read.
    let bytes = rel.as_os_str().as_bytes();
    let start = bytes.iter().position(|&b| b != b'/').unwrap_or(bytes.len());
    Path::new(std::ffi::OsStr::from_bytes(&bytes[start..]))
}

/// A read whose missing file is `None`.
fn optional<T>(read: Result<T, SysfsError>) -> Result<Option<T>, SysfsError> {
    match read {
        Ok(v) => Ok(Some(v)),
        Err(e) if e.io_kind() == Some(io::ErrorKind::NotFound) => Ok(None),
        Err(e) => Err(e),
    }
}

/// The log, even after a reader thread panicked while holding it.
fn lock(log: &AccessLog) -> std::sync::MutexGuard<'_, BTreeMap<PathBuf, Access>> {
    log.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// `bytes` as text, invalid UTF-8 replaced (copied only then).
fn text_of(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// `text` without trailing whitespace and NUL bytes, wherever they sit at its end (`"0-31\n\0"`).
fn trim_end(mut text: String) -> String {
    let keep = text.trim_end_matches(|c: char| c == '\0' || c.is_whitespace()).len();
    text.truncate(keep);
    text
}

/// Parses CPU list text read from `path`, naming the file on error.
/// Files and directories this process has opened (or tried to) under any root: the difference
/// across a pass is what the pass cost in opens.
pub fn files_opened() -> u64 {
    open::opened()
}

pub(crate) fn parse_cpulist_at(path: &Path, text: &str) -> Result<CpuSet, SysfsError> {
    CpuSet::parse_list(text).map_err(|source| SysfsError::CpuList { path: path.to_path_buf(), source })
}

/// Parses one number read from `path`, naming file, content and expectation on error.
pub(crate) fn parse_number_at<T: FromStr>(path: &Path, text: &str, expected: &'static str) -> Result<T, SysfsError> {
    text.trim().parse().map_err(|_| SysfsError::Parse { path: path.to_path_buf(), content: text.into(), expected })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether /proc/mounts shows a mount of type `fstype` at `at`.
    fn mounted(at: &str, fstype: &str) -> bool {
        std::fs::read_to_string("/proc/mounts").unwrap_or_default().lines().any(|l| {
            let mut f = l.split_whitespace();
            (f.nth(1), f.next()) == (Some(at), Some(fstype))
        })
    }

    #[test]
    fn relative_drops_leading_slashes_as_strip_prefix_does() {
        for p in ["/sys/kernel/irq/5/actions", "//proc/irq", "proc/irq/7", "/", "", "a", "/a//b/"] {
            let by_components = Path::new(p).strip_prefix("/").unwrap_or(Path::new(p));
            assert_eq!(relative(Path::new(p)), by_components, "{p:?}");
        }
    }

    #[test]
    fn only_the_kernels_own_file_systems_are_read_without_fstat() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("sys/devices")).unwrap();
        std::fs::create_dir_all(dir.path().join("proc/irq")).unwrap();
        let fixture = Root::new(dir.path());
        assert!(!fixture.in_kernel_fs(Path::new("sys/devices/x")), "a directory tree is checked file by file");
        assert!(!fixture.in_kernel_fs(Path::new("proc/irq/1/smp_affinity_list")));
        let host = Root::new("/");
        assert_eq!(host.in_kernel_fs(Path::new("sys/devices/system/cpu/online")), mounted("/sys", "sysfs"));
        assert_eq!(host.in_kernel_fs(Path::new("/proc/irq/0/smp_affinity_list")), mounted("/proc", "proc"));
        assert!(!host.in_kernel_fs(Path::new("run/irqwise/state.json")), "only below sys and proc");
        if mounted("/sys", "sysfs") {
            // Read without fstat, still the file's content.
            assert!(!host.read_string("sys/devices/system/cpu/possible").unwrap().is_empty());
        }
    }

    #[test]
    fn errors_name_the_file_and_content() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join("sys")).expect("mkdir");
        std::fs::write(dir.path().join("sys/online"), "0-3,zz\n").expect("write");
        std::fs::write(dir.path().join("sys/num"), "abc\n").expect("write");
        let root = Root::new(dir.path());
        let e = root.read_cpulist("sys/online").unwrap_err().to_string();
        assert!(e.contains("sys/online") && e.contains("\"zz\""), "{e}");
        let e = root.read_number::<u32>("/sys/num", "a node id").unwrap_err().to_string();
        assert!(e.contains("sys/num") && e.contains("\"abc\"") && e.contains("a node id"), "{e}");
        assert!(root.read_optional("sys/missing").expect("missing is fine").is_none());
        let e = root.read_string("sys/missing").unwrap_err().to_string();
        assert!(e.contains("sys/missing"), "{e}");
        assert_eq!(root.list_dir("sys").expect("list"), vec!["num", "online"]);
        assert!(root.list_dir_optional("nope").expect("optional").is_empty());
    }

    #[test]
    fn reads_stay_inside_the_root_and_refuse_what_is_not_a_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let sys = dir.path().join("sys");
        std::fs::create_dir_all(&sys).expect("mkdir");
        // An absolute link resolves inside the root: /dev/zero there does not exist.
        std::os::unix::fs::symlink("/dev/zero", sys.join("endless")).expect("symlink");
        std::os::unix::fs::symlink("../../../../../../etc/hostname", sys.join("up")).expect("symlink");
        let root = Root::new(dir.path());
        let e = root.read_cpulist("sys/endless").unwrap_err();
        assert_eq!(e.io_kind(), Some(io::ErrorKind::NotFound), "{e}");
        assert!(root.read_optional("sys/up").expect("clamped at the root").is_none());
        // On the real root, a device node is refused by type, before any read.
        let e = Root::new("/").read_string("dev/zero").unwrap_err().to_string();
        assert!(e.contains("/dev/zero") && e.contains("character device"), "{e}");
    }

    #[test]
    fn trailing_nul_and_whitespace_are_trimmed() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("a"), "0-31\n\0").expect("write");
        std::fs::write(dir.path().join("b"), "0-23\0\n").expect("write");
        let root = Root::new(dir.path());
        assert_eq!(root.read_cpulist("a").expect("a"), CpuSet::first_n(32));
        assert_eq!(root.read_cpulist("b").expect("b"), CpuSet::first_n(24));
    }
}
