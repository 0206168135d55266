//! The cgroup v2 tree as inotify sees it, for live isolation: the kernel notifies each cgroup's
//! `cpuset.cpus.partition` when that cgroup's partition state changes (`notify_partition_change()`,
//! 5.15), and nothing when the root's `cpuset.cpus.isolated` changes with it (no notify handle
//! for that file: seen on 7.2). Since 7.0 an isolated partition changes the kernel's housekeeping
//! at run time while `/sys/devices/system/cpu/isolated` keeps the boot's `isolcpus=`, so a
//! partition created or removed at run time is seen here or by the reconcile timer only.
//!
//! What is watched: every cgroup directory (for cgroups created later, and for partition files
//! that appear when `+cpuset` is enabled above them) and every `cpuset.cpus.partition` file, up to
//! [`MAX_WATCHES`] watches. Guarantees: a write to a partition file, its state change and the
//! removal of a cgroup that was a partition each give one trigger; a cgroup created and made a
//! partition before its watch was added is seen, because a new partition file is read when it
//! is watched.

use std::ffi::OsStr;
use std::io::Read;
use std::path::{Path, PathBuf};

/// The file whose changes mean a partition changed.
pub(crate) const PARTITION_FILE: &str = "cpuset.cpus.partition";

/// Watches on one cgroup tree, directories and partition files together: a node with thousands
/// of containers has thousands of cgroups; past this many the rest is left to the reconcile
/// timer (said once).
pub(crate) const MAX_WATCHES: usize = 8192;

/// Whether the partition file at `path` says its cgroup is a partition root (`root`,
/// `isolated`, or one of them invalid: `root invalid (...)`), not a `member`. An unreadable file
/// counts as a member. At most 256 bytes are read (the kernel's longest answer is an invalid
/// state with its reason, well under that).
pub(crate) fn is_partition(path: &Path) -> bool {
    let mut text = String::new();
    let read = std::fs::File::open(path).and_then(|f| f.take(256).read_to_string(&mut text));
    read.is_ok() && !text.trim().is_empty() && text.trim() != "member"
}

/// The directories of the tree under `top` (`top` first, then depth first), at most `limit`;
/// symlinks are not followed. Whether the listing stopped at the limit.
pub(crate) fn directories(top: &Path, limit: usize) -> (Vec<PathBuf>, bool) {
    let mut out = Vec::new();
    let mut todo = vec![top.to_path_buf()];
    while let Some(dir) = todo.pop() {
        if out.len() >= limit {
            return (out, true);
        }
        if let Ok(entries) = std::fs::read_dir(&dir) {
            let mut subdirs: Vec<PathBuf> = entries
                .filter_map(Result::ok)
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .map(|e| e.path())
                .collect();
            // Depth first in name order: the listing is stable from run to run.
            subdirs.sort_unstable_by(|a, b| b.cmp(a));
            todo.extend(subdirs);
        }
        out.push(dir);
    }
    (out, false)
}

/// Whether `name` is the partition file.
pub(crate) fn is_partition_file(name: &OsStr) -> bool {
    name == PARTITION_FILE
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_partition_is_any_state_but_member() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(PARTITION_FILE);
        for (text, partition) in [
            ("member\n", false),
            ("root\n", true),
            ("isolated\n", true),
            ("isolated invalid (Cpu list in cpuset.cpus not exclusive)\n", true),
            ("", false),
        ] {
            std::fs::write(&file, text).unwrap();
            assert_eq!(is_partition(&file), partition, "{text:?}");
        }
        assert!(!is_partition(&dir.path().join("absent")));
    }

    #[test]
    fn directories_are_listed_depth_first_up_to_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let top = dir.path();
        for d in ["a/x", "a/y", "b", "c/z/w"] {
            std::fs::create_dir_all(top.join(d)).unwrap();
        }
        std::fs::write(top.join("a/file"), "").unwrap();
        std::os::unix::fs::symlink(top.join("c"), top.join("link")).unwrap();
        let (all, cut) = directories(top, 100);
        let rel: Vec<String> = all.iter().map(|p| p.strip_prefix(top).unwrap().display().to_string()).collect();
        assert_eq!(rel, ["", "a", "a/x", "a/y", "b", "c", "c/z", "c/z/w"]);
        assert!(!cut);
        let (some, cut) = directories(top, 3);
        assert_eq!(some.len(), 3);
        assert!(cut);
    }
}
