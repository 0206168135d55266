//! `irqwise snapshot OUT`: copy what the readers read from a host's `/sys` and `/proc` into a
//! directory usable as `--root OUT` (bug reports, offline planning, test fixtures).
//!
//! The copy is driven by the readers themselves: a pass's readers (topology and device discovery,
//! udevd's database) run on a recording [`Root`], and every path they used is copied. Whatever a
//! reader reads tomorrow is in tomorrow's snapshot, and `plan --root OUT` equals `plan` on the
//! source.
//!
//! Invariants:
//! - Only reads under the source [`Root`]; only writes under `OUT`, which must be empty or absent.
//! - Every copied file keeps its content byte for byte and its permission bits (managed IRQs'
//!   `smp_affinity_list` stays 0444, which is how discovery recognises them).
//! - Symlinks a reader went through become plain directories in `OUT` (the PCI and block device
//!   links); symlinks whose target or name a reader used without going through them (`driver`,
//!   `cpuN/nodeM`) are recreated with the same target text.
//! - The kernel's netdev netlink answers (queue → NAPI → IRQ) are kept below `OUT` as the
//!   source's kernel gave them (`irqwise-snapshot/`), where a plan of `OUT` reads them; a
//!   snapshot of a snapshot keeps the ones its source kept.
//! - A file that is absent on the source is simply absent in `OUT`; one that exists but cannot be
//!   read (sysfs attributes can fail with EIO and friends) is skipped and listed in the report.
//!   Failing to write `OUT` is an error.

use std::collections::BTreeSet;
use std::fs;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::devices::discover::net_queues::read_net_queues;
use crate::devices::discover::netdev_netlink::{capture_netdev, CAPTURED_LIMIT, CAPTURED_NAPI_GET, CAPTURED_QUEUE_GET};
use crate::devices::discover::{discover_devices, udev_properties};
use crate::sysfs::{Access, EntryKind, Root};
use crate::topology::discover::isolation::read_isolation;
use crate::topology::discover::read_topology;

/// A snapshot could not be written; every variant names the path concerned.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error("snapshot output {path} exists and is not an empty directory (refusing to mix two snapshots)")]
    OutNotEmpty { path: PathBuf },
    #[error("cannot list {path}, expected a Linux sysfs CPU directory there: {source}")]
    NotSysfs { path: PathBuf, source: io::Error },
    #[error("cannot create directory {path}: {source}")]
    CreateDir { path: PathBuf, source: io::Error },
    #[error("cannot write {path} ({len} bytes copied from {from}): {source}")]
    WriteFile { path: PathBuf, from: PathBuf, len: usize, source: io::Error },
    #[error("cannot set mode {mode:04o} on {path}: {source}")]
    SetMode { path: PathBuf, mode: u32, source: io::Error },
    #[error("cannot create symlink {path} -> {target}: {source}")]
    Symlink { path: PathBuf, target: PathBuf, source: io::Error },
}

/// A source entry that exists but could not be read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Skipped {
    pub path: PathBuf,
    pub reason: String,
}

/// What a snapshot copied.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SnapshotReport {
    pub files_copied: usize,
    pub links_created: usize,
    pub dirs_created: usize,
    /// Unreadable source entries, in path order.
    pub skipped: Vec<Skipped>,
    /// Why the kernel's netdev netlink answers were not kept (`None`: kept, or not this
    /// machine's root, whose kernel cannot be asked).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub netdev_not_kept: Option<String>,
}

/// Files no pass needs but every bug report does: where interrupts fire, the boot options.
const FOR_DIAGNOSIS: [&str; 2] = ["proc/interrupts", "proc/cmdline"];

/// The largest file copied (`/proc/interrupts` grows with CPUs × IRQs).
const COPY_LIMIT: u64 = 512 << 20;

/// Copies what the readers read from `source` into `out` (created if absent, must be empty).
pub fn snapshot(source: &Root, out: &Path) -> Result<SnapshotReport, SnapshotError> {
    prepare_out(out)?;
    let cpu_dir = "sys/devices/system/cpu";
    if let Err(e) = fs::read_dir(source.path(cpu_dir)) {
        return Err(SnapshotError::NotSysfs { path: source.path(cpu_dir), source: e });
    }
    let recording = source.recording();
    read_as_a_pass_does(&recording);
    let mut c = Copier { src: source, out, report: SnapshotReport::default() };
    c.copy(&recording.accesses())?;
    if source.is_this_machine() {
        match capture_netdev() {
            Ok(dumps) => {
                c.write_new(CAPTURED_NAPI_GET, &dumps.napi_get)?;
                c.write_new(CAPTURED_QUEUE_GET, &dumps.queue_get)?;
            }
            Err(why) => c.report.netdev_not_kept = Some(why),
        }
    } else {
        keep_captured(source, &mut c)?;
    }
    Ok(c.report)
}

/// A snapshot of a snapshot keeps the answers its source kept (a plan of it reads them as a plan
/// of the source does), each at most [`CAPTURED_LIMIT`]; an answer past it is said, not kept.
fn keep_captured(source: &Root, c: &mut Copier) -> Result<(), SnapshotError> {
    for rel in [CAPTURED_NAPI_GET, CAPTURED_QUEUE_GET] {
        match source.read_bytes_limited_optional(rel, CAPTURED_LIMIT) {
            Ok(Some(bytes)) => c.write_new(rel, &bytes)?,
            Ok(None) => {}
            Err(e) => {
                c.report.netdev_not_kept = Some(format!("{}: {e}", source.path(rel).display()));
            }
        }
    }
    Ok(())
}

/// Runs every reader of a pass on `root`. Errors are ignored: what a reader read before it
/// failed is copied all the same (a snapshot of a broken machine is what a bug report needs).
fn read_as_a_pass_does(root: &Root) {
    let topology = read_topology(root).unwrap_or_default();
    let _ = read_isolation(root, &topology);
    if let Ok(found) = discover_devices(root, &topology) {
        for device in &found.devices {
            udev_properties(root, device);
            if let [interface] = device.interfaces.as_slice() {
                let _ = read_net_queues(root, &device.bdf, interface);
            }
        }
    }
    for rel in FOR_DIAGNOSIS {
        let _ = root.read_bytes_optional(rel);
    }
}

/// Creates `out`, or accepts it if it is an existing empty directory.
fn prepare_out(out: &Path) -> Result<(), SnapshotError> {
    match fs::read_dir(out).map(|mut entries| entries.next().is_none()) {
        Ok(true) => Ok(()),
        Ok(false) => Err(SnapshotError::OutNotEmpty { path: out.into() }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            fs::create_dir_all(out).map_err(|source| SnapshotError::CreateDir { path: out.into(), source })
        }
        Err(_) => Err(SnapshotError::OutNotEmpty { path: out.into() }),
    }
}

/// Every proper ancestor of the recorded paths: the directories readers went through.
fn traversed(accesses: &[(PathBuf, Access)]) -> BTreeSet<PathBuf> {
    accesses.iter().flat_map(|(p, _)| p.ancestors().skip(1).map(Path::to_path_buf)).collect()
}

/// The copy in progress. Paths are relative (`sys/...`), the same under source and `out`.
struct Copier<'a> {
    src: &'a Root,
    out: &'a Path,
    report: SnapshotReport,
}

impl Copier<'_> {
    /// Copies every recorded path as its use requires; symlinks last, so that a link a reader
    /// went through is a directory by then.
    fn copy(&mut self, accesses: &[(PathBuf, Access)]) -> Result<(), SnapshotError> {
        let through = traversed(accesses);
        let mut links = Vec::new();
        for (rel, access) in accesses {
            let entry = self.src.entry(rel).ok();
            let is_link = entry.is_some_and(|e| e.symlink);
            match access {
                Access::Link => links.push(rel.clone()),
                Access::Entry if is_link && !through.contains(rel) => links.push(rel.clone()),
                Access::Read => self.file(rel)?,
                Access::Listed | Access::Exists | Access::Entry => match entry.and_then(|e| e.target) {
                    Some(EntryKind::Dir) => self.dir(rel)?,
                    Some(_) => self.file(rel)?,
                    None => {}
                },
            }
        }
        for rel in links {
            self.link(&rel)?;
        }
        Ok(())
    }

    fn skip(&mut self, rel: &Path, e: &io::Error) {
        self.report.skipped.push(Skipped { path: self.src.path(rel), reason: e.to_string() });
    }

    /// Creates `OUT/rel` (and parents) as a plain directory.
    fn dir(&mut self, rel: &Path) -> Result<(), SnapshotError> {
        let path = self.out.join(rel);
        if !path.is_dir() {
            fs::create_dir_all(&path).map_err(|source| SnapshotError::CreateDir { path, source })?;
            self.report.dirs_created += 1;
        }
        Ok(())
    }

    /// The parent directory of `rel` in `OUT`, when the source has it: an entry that exists but
    /// cannot be read still shows its directory (an IRQ whose files fail is still requested).
    fn parent(&mut self, rel: &Path) -> Result<(), SnapshotError> {
        match rel.parent() {
            Some(p) if !p.as_os_str().is_empty() && self.src.is_dir(p) => self.dir(p),
            _ => Ok(()),
        }
    }

    /// Copies one file, content and mode, as read inside the source root (a link out of it
    /// leads nowhere); absent → nothing, unreadable or not a regular file → skipped.
    fn file(&mut self, rel: &Path) -> Result<(), SnapshotError> {
        let from = self.src.path(rel);
        let (bytes, mode) = match self.src.read_file(rel, COPY_LIMIT) {
            Ok(x) => x,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => {
                self.skip(rel, &e);
                return self.parent(rel);
            }
        };
        self.parent(rel)?;
        let path = self.out.join(rel);
        fs::write(&path, &bytes).map_err(|source| SnapshotError::WriteFile {
            path: path.clone(),
            from: from.clone(),
            len: bytes.len(),
            source,
        })?;
        fs::set_permissions(&path, fs::Permissions::from_mode(mode)).map_err(|source| SnapshotError::SetMode {
            path,
            mode,
            source,
        })?;
        self.report.files_copied += 1;
        Ok(())
    }

    /// Writes `bytes` as `OUT/rel`, a file the snapshot makes (not a copy of the source's).
    fn write_new(&mut self, rel: &str, bytes: &[u8]) -> Result<(), SnapshotError> {
        let path = self.out.join(rel);
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir).map_err(|source| SnapshotError::CreateDir { path: dir.to_path_buf(), source })?;
        }
        fs::write(&path, bytes).map_err(|source| SnapshotError::WriteFile {
            path: path.clone(),
            from: PathBuf::from("the kernel's netdev netlink family"),
            len: bytes.len(),
            source,
        })?;
        self.report.files_copied += 1;
        Ok(())
    }

    /// Recreates a symlink with the same target text, unless something already stands there
    /// (a directory a reader went through). The copy is a link, never the file it points to.
    fn link(&mut self, rel: &Path) -> Result<(), SnapshotError> {
        let Ok(target) = self.src.link_target(rel) else { return Ok(()) };
        let path = self.out.join(rel);
        if fs::symlink_metadata(&path).is_ok() {
            return Ok(());
        }
        self.parent(rel)?;
        std::os::unix::fs::symlink(&target, &path).map_err(|source| SnapshotError::Symlink { path, target, source })?;
        self.report.links_created += 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_a_non_empty_output() {
        let out = tempfile::tempdir().unwrap();
        fs::write(out.path().join("x"), "").unwrap();
        let e = snapshot(&Root::new("/nonexistent"), out.path()).unwrap_err();
        assert!(matches!(e, SnapshotError::OutNotEmpty { .. }), "{e}");
        assert!(e.to_string().contains(&out.path().display().to_string()));
    }

    #[test]
    fn a_root_without_sysfs_is_an_error_naming_the_directory() {
        let src = tempfile::tempdir().unwrap();
        let out = tempfile::tempdir().unwrap();
        let e = snapshot(&Root::new(src.path()), &out.path().join("snap")).unwrap_err().to_string();
        assert!(e.contains("sys/devices/system/cpu"), "{e}");
    }

    #[test]
    fn traversed_holds_every_proper_ancestor() {
        let t = traversed(&[(PathBuf::from("a/b/c"), Access::Read), (PathBuf::from("d"), Access::Listed)]);
        let want: BTreeSet<PathBuf> = ["", "a", "a/b"].iter().map(PathBuf::from).collect();
        assert_eq!(t, want);
    }
}
