//! The root every read and write goes through: `ROOT/sys/...`, `ROOT/proc/...`.
//!
//! Tests and users point it at a captured tree; the default is `/`. Every error names the full
//! path, and for parse errors the content found and what was expected.

use std::collections::BTreeMap;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::{Arc, Mutex};

use crate::cpuset::{CpuSet, CpuSetError};

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
    pub fn io_kind(&self) -> Option<io::ErrorKind> {
        match self {
            SysfsError::Read { source, .. } | SysfsError::ListDir { source, .. } => Some(source.kind()),
            _ => None,
        }
    }
}

/// How a reader used a path, weakest first. [`Root::recording`] keeps the strongest use of each
/// path, which is what `snapshot` copies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Access {
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

/// A directory standing for `/`. Paths given to it are relative (`"sys/devices/system/cpu"`).
/// Every read of the readers goes through it; a recording root (see [`Root::recording`]) also
/// remembers each path it was asked for.
#[derive(Debug, Clone)]
pub struct Root {
    base: PathBuf,
    log: Option<AccessLog>,
}

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
        Root { base: base.into(), log: None }
    }

    /// The same root, remembering every path used through it (and its clones) from now on.
    pub fn recording(&self) -> Root {
        Root { base: self.base.clone(), log: Some(Arc::default()) }
    }

    /// The paths used through a recording root with their strongest use, sorted; empty for a
    /// root that does not record.
    pub fn accesses(&self) -> Vec<(PathBuf, Access)> {
        match &self.log {
            Some(log) => lock(log).iter().map(|(p, a)| (p.clone(), *a)).collect(),
            None => Vec::new(),
        }
    }

    /// Remembers that `rel` was used as `access` (the strongest use wins).
    fn note(&self, rel: &Path, access: Access) {
        if let Some(log) = &self.log {
            let rel = rel.strip_prefix("/").unwrap_or(rel).to_path_buf();
            let mut log = lock(log);
            let slot = log.entry(rel).or_insert(access);
            *slot = (*slot).max(access);
        }
    }

    pub fn base(&self) -> &Path {
        &self.base
    }

    /// `ROOT/rel`; a leading `/` on `rel` is ignored so absolute-looking paths stay inside.
    pub fn path(&self, rel: impl AsRef<Path>) -> PathBuf {
        let rel = rel.as_ref();
        self.base.join(rel.strip_prefix("/").unwrap_or(rel))
    }

    /// Whether `rel` exists (following symlinks).
    pub fn exists(&self, rel: impl AsRef<Path>) -> bool {
        self.note(rel.as_ref(), Access::Exists);
        self.path(rel).exists()
    }

    /// Whether `rel` is a directory (following symlinks).
    pub fn is_dir(&self, rel: impl AsRef<Path>) -> bool {
        self.note(rel.as_ref(), Access::Exists);
        self.path(rel).is_dir()
    }

    /// The last component of the target of symlink `rel` (dangling links are fine); `None`
    /// without a link.
    pub fn link_name(&self, rel: impl AsRef<Path>) -> Option<String> {
        self.note(rel.as_ref(), Access::Link);
        let target = std::fs::read_link(self.path(rel)).ok()?;
        target.file_name().map(|n| n.to_string_lossy().into_owned())
    }

    /// The permission bits of `rel` (following symlinks); `None` when it does not exist.
    pub fn mode(&self, rel: impl AsRef<Path>) -> Result<Option<u32>, SysfsError> {
        use std::os::unix::fs::PermissionsExt;
        self.note(rel.as_ref(), Access::Read);
        let path = self.path(rel);
        match std::fs::metadata(&path) {
            Ok(meta) => Ok(Some(meta.permissions().mode() & 0o7777)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(SysfsError::Read { path, source }),
        }
    }

    /// Whole file as text, trailing newline removed.
    pub fn read_string(&self, rel: impl AsRef<Path>) -> Result<String, SysfsError> {
        self.note(rel.as_ref(), Access::Read);
        let path = self.path(rel);
        match std::fs::read(&path) {
            Ok(bytes) => Ok(trim_newlines(String::from_utf8_lossy(&bytes).into_owned())),
            Err(source) => Err(SysfsError::Read { path, source }),
        }
    }

    /// A whole file's bytes, as long as it is; a missing file is `None`. For the few large
    /// procfs files (`/proc/interrupts`).
    pub fn read_bytes_optional(&self, rel: impl AsRef<Path>) -> Result<Option<Vec<u8>>, SysfsError> {
        self.note(rel.as_ref(), Access::Read);
        let path = self.path(rel);
        match std::fs::read(&path) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(SysfsError::Read { path, source }),
        }
    }

    /// Like [`Root::read_string`] for the small files (CPU lists, numbers), refusing anything
    /// longer than [`SMALL_FILE_LIMIT`] bytes: a copied root may hold a link to an endless
    /// device (`/dev/zero`, `/dev/full`) that would otherwise be read until memory runs out.
    fn read_small(&self, rel: impl AsRef<Path>) -> Result<String, SysfsError> {
        self.note(rel.as_ref(), Access::Read);
        let path = self.path(rel);
        // Room for any sysfs attribute (one page) up front: one read and the EOF read, no probes.
        let mut bytes = Vec::with_capacity(SYSFS_PAGE);
        let read = std::fs::File::open(&path).and_then(|f| f.take(SMALL_FILE_LIMIT + 1).read_to_end(&mut bytes));
        match read {
            Ok(n) if n as u64 > SMALL_FILE_LIMIT => {
                let problem = format!("longer than {SMALL_FILE_LIMIT} bytes, expected a short sysfs value");
                Err(SysfsError::Read { path, source: io::Error::new(io::ErrorKind::InvalidData, problem) })
            }
            Ok(_) => Ok(trim_newlines(String::from_utf8_lossy(&bytes).into_owned())),
            Err(source) => Err(SysfsError::Read { path, source }),
        }
    }

    /// A short sysfs/procfs value (at most [`SMALL_FILE_LIMIT`] bytes) as text, trailing newline
    /// removed; a missing file is `None`. Cheaper than [`Root::read_optional`] (no `stat`), for
    /// the thousands of tiny files a big machine has.
    pub fn read_small_optional(&self, rel: impl AsRef<Path>) -> Result<Option<String>, SysfsError> {
        match self.read_small(rel) {
            Ok(s) => Ok(Some(s)),
            Err(e) if e.io_kind() == Some(io::ErrorKind::NotFound) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Like [`Root::read_string`], but a missing file is `None` rather than an error.
    pub fn read_optional(&self, rel: impl AsRef<Path>) -> Result<Option<String>, SysfsError> {
        match self.read_string(rel) {
            Ok(s) => Ok(Some(s)),
            Err(e) if e.io_kind() == Some(io::ErrorKind::NotFound) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// A CPU list file (`0-3,8`), also blk-mq's `4, 5, 6, 7`.
    pub fn read_cpulist(&self, rel: impl AsRef<Path>) -> Result<CpuSet, SysfsError> {
        let rel = rel.as_ref();
        let text = self.read_small(rel)?;
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
    pub fn read_number<T: FromStr>(&self, rel: impl AsRef<Path>, expected: &'static str) -> Result<T, SysfsError> {
        let rel = rel.as_ref();
        let text = self.read_small(rel)?;
        parse_number_at(&self.path(rel), &text, expected)
    }

    /// A number file that may be absent.
    pub fn read_number_optional<T: FromStr>(
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
    pub fn list_dir(&self, rel: impl AsRef<Path>) -> Result<Vec<String>, SysfsError> {
        self.note(rel.as_ref(), Access::Listed);
        let path = self.path(rel);
        let rd = std::fs::read_dir(&path).map_err(|source| SysfsError::ListDir { path: path.clone(), source })?;
        let mut names = Vec::new();
        for entry in rd {
            let entry = entry.map_err(|source| SysfsError::ListDir { path: path.clone(), source })?;
            names.push(entry.file_name().to_string_lossy().into_owned());
        }
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
    pub fn list_dir_noting(
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
}

/// The log, even after a reader thread panicked while holding it.
fn lock(log: &AccessLog) -> std::sync::MutexGuard<'_, BTreeMap<PathBuf, Access>> {
    log.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Bytes [`Root::read_small`] accepts: a CPU list of 8192 CPUs in the worst format is < 48 KiB.
pub const SMALL_FILE_LIMIT: u64 = 1 << 20;

/// At most this many threads read files at once in [`read_in_parallel`].
pub const MAX_READERS: usize = 8;

/// `read(item)` for every item, in order, spread over up to [`MAX_READERS`] threads (never more
/// than the CPUs available or one per item), the calling thread being one of them.
///
/// For discovery's thousands of tiny sysfs/procfs reads, whose cost is the system calls: on a big
/// machine several threads finish them several times sooner. Guarantees: the result is exactly
/// `items.iter().map(read).collect()`; `read` must not depend on the order of calls. A thread the
/// system refuses to start only means fewer helpers (the caller alone, at worst).
pub fn read_in_parallel<T: Sync, R: Send>(items: &[T], read: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let workers = MAX_READERS.min(cpus).min(items.len());
    if workers <= 1 {
        return items.iter().map(read).collect();
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    // Takes the next unread item until none is left; what this worker read, with indexes.
    let work = || {
        let mut mine = Vec::new();
        loop {
            let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let Some(item) = items.get(i) else { break };
            mine.push((i, read(item)));
        }
        mine
    };
    let mut done: Vec<(usize, R)> = std::thread::scope(|scope| {
        let helpers: Vec<_> = (1..workers)
            .map_while(|_| std::thread::Builder::new().name("irqwise-read".into()).spawn_scoped(scope, work).ok())
            .collect();
        let mut all = work();
        for helper in helpers {
            // A helper only panics if `read` does; pass that panic on unchanged.
            all.extend(helper.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)));
        }
        all
    });
    done.sort_unstable_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, r)| r).collect()
}

/// What a sysfs attribute's `show()` can return at most: one page.
const SYSFS_PAGE: usize = 4096;

/// `text` without its trailing newlines.
fn trim_newlines(mut text: String) -> String {
    while text.ends_with('\n') {
        text.pop();
    }
    text
}

/// Parses CPU list text read from `path`, naming the file on error.
pub fn parse_cpulist_at(path: &Path, text: &str) -> Result<CpuSet, SysfsError> {
    CpuSet::parse_list(text).map_err(|source| SysfsError::CpuList { path: path.to_path_buf(), source })
}

/// Parses one number read from `path`, naming file, content and expectation on error.
pub fn parse_number_at<T: FromStr>(path: &Path, text: &str, expected: &'static str) -> Result<T, SysfsError> {
    text.trim().parse().map_err(|_| SysfsError::Parse { path: path.to_path_buf(), content: text.into(), expected })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_in_parallel_keeps_order_and_every_item() {
        let items: Vec<u32> = (0..1000).collect();
        let squares = read_in_parallel(&items, |&i| u64::from(i) * u64::from(i));
        assert_eq!(squares, items.iter().map(|&i| u64::from(i) * u64::from(i)).collect::<Vec<_>>());
        assert!(read_in_parallel(&[] as &[u32], |&i| i).is_empty());
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
        std::os::unix::fs::symlink("/dev/zero", dir.path().join("sys/endless")).expect("symlink");
        let e = root.read_cpulist("sys/endless").unwrap_err().to_string();
        assert!(e.contains("sys/endless") && e.contains("longer than"), "{e}");
        assert!(root.list_dir_optional("nope").expect("optional").is_empty());
    }
}
