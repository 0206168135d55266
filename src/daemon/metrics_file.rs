//! The metrics file read by node_exporter's textfile collector: where it is, when it may be
//! written, and the atomic replacement that keeps a scrape from ever seeing half of it.
//!
//! Guarantees: the file is replaced by `rename(2)` of a complete temporary file in the same
//! directory (`.irqwise.prom.PID`, never a `*.prom` name, so the collector skips it), with mode
//! 0644 whatever the umask (node_exporter runs as another user); [`Pacer`] allows at most one
//! write per [`MIN_INTERVAL`] and remembers a refused one so it can be made when the interval is
//! over.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::once::SaidOnce;
use crate::config::MetricsFile;
use crate::sysfs::Root;

/// Debian's `prometheus-node-exporter` reads `*.prom` here (`--collector.textfile.directory`).
pub(crate) const DEFAULT_METRICS_DIR: &str = "var/lib/prometheus/node-exporter";
/// The file's name in [`DEFAULT_METRICS_DIR`].
pub(crate) const DEFAULT_METRICS_NAME: &str = "irqwise.prom";
/// The shortest time between two writes.
pub(crate) const MIN_INTERVAL: Duration = Duration::from_secs(1);

#[derive(Debug, thiserror::Error)]
pub(crate) enum MetricsError {
    /// `path` is the file or directory the failing step worked on.
    #[error("cannot write the metrics file {file}: {path}: {source}")]
    Write { file: PathBuf, path: PathBuf, source: std::io::Error },
}

/// Where the metrics go for `setting`, relative to `root` like every path of the daemon: the
/// path given, nowhere when off, and by default `var/lib/prometheus/node-exporter/irqwise.prom`
/// when that directory exists below the root (checked at every call: it may appear when
/// node_exporter is installed later).
pub fn resolve(root: &Root, setting: &MetricsFile) -> Option<PathBuf> {
    match setting {
        MetricsFile::Off => None,
        MetricsFile::At(path) => Some(path.strip_prefix("/").unwrap_or(path).to_path_buf()),
        MetricsFile::Auto => {
            root.is_dir(DEFAULT_METRICS_DIR).then(|| Path::new(DEFAULT_METRICS_DIR).join(DEFAULT_METRICS_NAME))
        }
    }
}

/// Spaces writes at least [`MIN_INTERVAL`] apart. Pure: the caller passes the time.
#[derive(Debug, Default, Clone)]
pub(crate) struct Pacer {
    last: Option<Instant>,
    pending: bool,
}

impl Pacer {
    /// Whether a write may happen at `now`; when not, it is remembered as pending.
    pub(crate) fn offer(&mut self, now: Instant) -> bool {
        let allowed = self.last.is_none_or(|last| now.saturating_duration_since(last) >= MIN_INTERVAL);
        if !allowed {
            self.pending = true;
        }
        allowed
    }

    /// A write happened at `now`.
    pub fn wrote(&mut self, now: Instant) {
        self.last = Some(now);
        self.pending = false;
    }

    /// Drops a pending write (there is nowhere to write it any more).
    pub(crate) fn forget_pending(&mut self) {
        self.pending = false;
    }

    /// When a refused write may be made, if one is pending.
    pub fn due(&self) -> Option<Instant> {
        match (self.pending, self.last) {
            (true, Some(last)) => Some(last + MIN_INTERVAL),
            _ => None,
        }
    }
}

/// Publishes the counters to the metrics file: at most once per [`MIN_INTERVAL`] (a write held
/// back is due at the end of it), stale temporary copies removed once, a failure said once per
/// path until a write works.
#[derive(Debug, Default)]
pub(crate) struct MetricsPublisher {
    pacer: Pacer,
    failed: SaidOnce<PathBuf>,
    /// Stale temporary copies of the metrics file were looked for.
    cleaned: bool,
}

impl MetricsPublisher {
    /// When a write held back by the interval is due.
    pub fn due(&self) -> Option<Instant> {
        self.pacer.due()
    }

    /// Writes `counters` to the metrics file `setting` names under `root` (when one is
    /// configured or the default directory exists), unless the last write was less than
    /// [`MIN_INTERVAL`] ago: then it is due at the end of that interval and the caller calls
    /// this again.
    pub(crate) fn publish(&mut self, root: &Root, setting: &MetricsFile, counters: &super::counters::Counters) {
        let Some(path) = resolve(root, setting) else {
            self.pacer.forget_pending();
            return;
        };
        let now = Instant::now();
        if !self.pacer.offer(now) {
            return;
        }
        if !self.cleaned {
            // Temporary copies a killed daemon left are never *.prom, but litter the directory.
            root.remove_stale_temps(&path, super::peers::process_exists);
            self.cleaned = true;
        }
        self.pacer.wrote(now);
        match write_atomically(root, &path, &counters.render(env!("CARGO_PKG_VERSION"))) {
            Ok(()) => {
                self.failed.worked();
            }
            Err(e) => {
                if self.failed.failed(path) {
                    tracing::warn!("metrics not written: {e}");
                }
            }
        }
    }
}

/// Replaces `rel` below `root` with `text` (see the module's guarantees): a reader sees the old
/// or the new file, never a part. Not fsynced: it is written again at every pass, and counters
/// start over with the daemon anyway.
pub(crate) fn write_atomically(root: &Root, rel: &Path, text: &str) -> Result<(), MetricsError> {
    root.replace_own_file(rel, text.as_bytes(), 0o644, false).map_err(|(at, source)| MetricsError::Write {
        file: root.path(rel),
        path: at,
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_are_at_least_a_second_apart_and_a_refused_one_is_due_later() {
        let t0 = Instant::now();
        let mut p = Pacer::default();
        assert!(p.offer(t0), "the first write is immediate");
        p.wrote(t0);
        assert_eq!(p.due(), None);
        assert!(!p.offer(t0 + Duration::from_millis(300)));
        assert!(!p.offer(t0 + Duration::from_millis(999)));
        assert_eq!(p.due(), Some(t0 + MIN_INTERVAL), "one write pending, at the end of the interval");
        assert!(p.offer(t0 + MIN_INTERVAL));
        p.wrote(t0 + MIN_INTERVAL);
        assert_eq!(p.due(), None);
    }

    #[test]
    fn replacement_is_whole_world_readable_and_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let (root, rel) = (Root::new(dir.path()), Path::new("irqwise.prom"));
        let path = dir.path().join(rel);
        // The unit runs the daemon with UMask=0077 (process-wide here, restored at once).
        let old = nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(0o077));
        let first = write_atomically(&root, rel, "a 1\n");
        let second = write_atomically(&root, rel, "a 2\n");
        nix::sys::stat::umask(old);
        first.unwrap();
        second.unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "a 2\n");
        let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&path).unwrap().permissions()) & 0o777;
        assert_eq!(mode, 0o644, "node_exporter reads it as another user");
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().map(|e| e.file_name()).collect();
        assert_eq!(names, vec![std::ffi::OsString::from("irqwise.prom")]);
    }

    #[test]
    fn a_reader_never_sees_a_partial_file() {
        let dir = tempfile::tempdir().unwrap();
        let (root, rel) = (Root::new(dir.path()), Path::new("irqwise.prom"));
        let path = dir.path().join(rel);
        write_atomically(&root, rel, "start\nend\n").unwrap();
        let reader_path = path.clone();
        let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stop = done.clone();
        let reader = std::thread::spawn(move || {
            let mut reads = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let text = std::fs::read_to_string(&reader_path).unwrap();
                assert!(text.starts_with("start\n") && text.ends_with("end\n"), "partial read: {} bytes", text.len());
                reads += 1;
            }
            reads
        });
        for i in 0..300 {
            // Sizes vary from a few bytes to 64 KiB, so a non-atomic write would show.
            let body = "x".repeat((i * 997) % 65_536);
            write_atomically(&root, rel, &format!("start\n{body}\nend\n")).unwrap();
        }
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        assert!(reader.join().unwrap() > 0);
    }

    #[test]
    fn an_unwritable_place_is_an_error_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("plain"), "").unwrap();
        let file = dir.path().join("plain/irqwise.prom");
        let e =
            write_atomically(&Root::new(dir.path()), Path::new("plain/irqwise.prom"), "a 1\n").unwrap_err().to_string();
        assert!(e.starts_with(&format!("cannot write the metrics file {}: ", file.display())), "{e}");
    }

    #[test]
    fn the_default_is_node_exporters_directory_when_it_exists_below_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        assert_eq!(resolve(&root, &MetricsFile::Auto), None);
        std::fs::create_dir_all(dir.path().join(DEFAULT_METRICS_DIR)).unwrap();
        assert_eq!(resolve(&root, &MetricsFile::Auto), Some(Path::new(DEFAULT_METRICS_DIR).join("irqwise.prom")));
        assert_eq!(resolve(&root, &MetricsFile::Off), None);
        let at = MetricsFile::At("/srv/m/x.prom".into());
        assert_eq!(resolve(&root, &at), Some(PathBuf::from("srv/m/x.prom")));
    }
}
