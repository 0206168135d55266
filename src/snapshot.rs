//! `irqwise snapshot OUT`: copy the part of a host's `/sys` and `/proc` that discovery reads into a
//! directory usable as `--root OUT` (bug reports, offline planning, test fixtures).
//!
//! Invariants:
//! - Only reads under the source [`Root`]; only writes under `OUT`, which must be empty or absent.
//! - Every copied file keeps its content byte for byte and its permission bits (managed IRQs'
//!   `smp_affinity` stays 0444, which is how `apply` recognises them).
//! - Symlinks followed on the source become plain directories in `OUT` (the PCI device and block
//!   device links); the only symlinks written are those whose target text discovery may read
//!   (`driver`, and `cpuN/nodeM`), recreated with the same target text.
//! - A file that is absent on the source is simply absent in `OUT`; one that exists but cannot be
//!   read (sysfs attributes can fail with EIO and friends) is skipped and listed in the report.
//!   Failing to write `OUT` is an error.

use std::fs;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::sysfs::Root;

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
    /// Unreadable source entries, in the order met.
    pub skipped: Vec<Skipped>,
}

/// Copies what discovery reads from `source` into `out` (created if absent, must be empty).
pub fn snapshot(source: &Root, out: &Path) -> Result<SnapshotReport, SnapshotError> {
    prepare_out(out)?;
    let cpu_dir = "sys/devices/system/cpu";
    if let Err(e) = fs::read_dir(source.path(cpu_dir)) {
        return Err(SnapshotError::NotSysfs { path: source.path(cpu_dir), source: e });
    }
    let mut c = Copier { src: source, out, report: SnapshotReport::default() };
    c.cpus()?;
    c.nodes()?;
    c.pci_devices()?;
    c.nvme_blocks()?;
    c.irqs()?;
    for f in ["proc/sys/kernel/osrelease", "proc/sys/kernel/arch", "proc/cmdline"] {
        c.file(f)?;
    }
    Ok(c.report)
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

/// `name` is `prefix` followed by one or more decimal digits (`cpu12`, `node0`).
fn numbered(name: &str, prefix: &str) -> bool {
    name.strip_prefix(prefix).is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// `name` is a namespace block device of controller `ctrl`: `nvme0n1` or `nvme0c1n2` for `nvme0`.
fn is_namespace_of(name: &str, ctrl: &str) -> bool {
    name.strip_prefix(ctrl).is_some_and(|rest| rest.starts_with('n') || rest.starts_with('c'))
}

/// The copy in progress. Paths are relative (`sys/...`), the same under source and `out`.
struct Copier<'a> {
    src: &'a Root,
    out: &'a Path,
    report: SnapshotReport,
}

impl Copier<'_> {
    fn skip(&mut self, rel: &str, e: &io::Error) {
        self.report.skipped.push(Skipped { path: self.src.path(rel), reason: e.to_string() });
    }

    /// Names in a source directory, sorted; absent → empty; unreadable → empty and skipped.
    fn list(&mut self, rel: &str) -> Vec<String> {
        match fs::read_dir(self.src.path(rel)) {
            Ok(rd) => {
                let mut names: Vec<String> =
                    rd.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect();
                names.sort();
                names
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
            Err(e) => {
                self.skip(rel, &e);
                Vec::new()
            }
        }
    }

    /// Whether the source entry (links followed) is a directory.
    fn is_dir(&self, rel: &str) -> bool {
        fs::metadata(self.src.path(rel)).is_ok_and(|m| m.is_dir())
    }

    /// Creates `OUT/rel` (and parents) as a plain directory.
    fn dir(&mut self, rel: &str) -> Result<(), SnapshotError> {
        let path = self.out.join(rel);
        if !path.is_dir() {
            fs::create_dir_all(&path).map_err(|source| SnapshotError::CreateDir { path, source })?;
            self.report.dirs_created += 1;
        }
        Ok(())
    }

    /// Copies one file, content and mode; absent → nothing, unreadable → skipped.
    fn file(&mut self, rel: &str) -> Result<(), SnapshotError> {
        let from = self.src.path(rel);
        let read = fs::metadata(&from).and_then(|m| fs::read(&from).map(|bytes| (m, bytes)));
        let (meta, bytes) = match read {
            Ok(x) => x,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => {
                self.skip(rel, &e);
                return Ok(());
            }
        };
        if let Some(parent) = Path::new(rel).parent() {
            self.dir(&parent.to_string_lossy())?;
        }
        let path = self.out.join(rel);
        fs::write(&path, &bytes).map_err(|source| SnapshotError::WriteFile {
            path: path.clone(),
            from: from.clone(),
            len: bytes.len(),
            source,
        })?;
        let mode = meta.permissions().mode() & 0o7777;
        fs::set_permissions(&path, fs::Permissions::from_mode(mode)).map_err(|source| SnapshotError::SetMode {
            path,
            mode,
            source,
        })?;
        self.report.files_copied += 1;
        Ok(())
    }

    /// Copies every regular file directly inside a source directory.
    fn all_files(&mut self, rel: &str) -> Result<(), SnapshotError> {
        for name in self.list(rel) {
            let f = format!("{rel}/{name}");
            if !self.is_dir(&f) {
                self.file(&f)?;
            }
        }
        Ok(())
    }

    /// Recreates a symlink with the same target text; a source that is not a link is copied as
    /// an empty directory or a file.
    fn link(&mut self, rel: &str) -> Result<(), SnapshotError> {
        let from = self.src.path(rel);
        match fs::read_link(&from) {
            Ok(target) => {
                if let Some(parent) = Path::new(rel).parent() {
                    self.dir(&parent.to_string_lossy())?;
                }
                let path = self.out.join(rel);
                std::os::unix::fs::symlink(&target, &path).map_err(|source| SnapshotError::Symlink {
                    path,
                    target,
                    source,
                })?;
                self.report.links_created += 1;
                Ok(())
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(_) if self.is_dir(rel) => self.dir(rel),
            Err(_) => self.file(rel),
        }
    }

    /// `sys/devices/system/cpu`: the global lists and each `cpuN`'s topology, caches, node link.
    fn cpus(&mut self) -> Result<(), SnapshotError> {
        let base = "sys/devices/system/cpu";
        self.dir(base)?;
        for f in ["possible", "present", "online", "offline", "isolated", "nohz_full", "kernel_max"] {
            self.file(&format!("{base}/{f}"))?;
        }
        for cpu in self.list(base).into_iter().filter(|n| numbered(n, "cpu")) {
            let d = format!("{base}/{cpu}");
            self.dir(&d)?;
            self.file(&format!("{d}/online"))?;
            self.all_files(&format!("{d}/topology"))?;
            for index in self.list(&format!("{d}/cache")).into_iter().filter(|n| numbered(n, "index")) {
                for f in ["level", "type", "shared_cpu_list", "shared_cpu_map", "id"] {
                    self.file(&format!("{d}/cache/{index}/{f}"))?;
                }
            }
            for node in self.list(&d).into_iter().filter(|n| numbered(n, "node")) {
                self.link(&format!("{d}/{node}"))?;
            }
        }
        Ok(())
    }

    /// `sys/devices/system/node`: node states and each node's CPUs and distance row.
    fn nodes(&mut self) -> Result<(), SnapshotError> {
        let base = "sys/devices/system/node";
        for f in ["possible", "online", "has_cpu", "has_memory", "has_normal_memory"] {
            self.file(&format!("{base}/{f}"))?;
        }
        for node in self.list(base).into_iter().filter(|n| numbered(n, "node")) {
            self.dir(&format!("{base}/{node}"))?;
            for f in ["cpulist", "cpumap", "distance"] {
                self.file(&format!("{base}/{node}/{f}"))?;
            }
        }
        Ok(())
    }

    /// `sys/bus/pci/devices/BDF` as plain directories: identity, locality, vectors, driver,
    /// network interfaces (also under a virtio child) and NVMe controllers.
    fn pci_devices(&mut self) -> Result<(), SnapshotError> {
        let base = "sys/bus/pci/devices";
        for bdf in self.list(base) {
            let d = format!("{base}/{bdf}");
            self.dir(&d)?;
            for f in ["class", "vendor", "device", "numa_node", "local_cpulist", "irq"] {
                self.file(&format!("{d}/{f}"))?;
            }
            self.all_files(&format!("{d}/msi_irqs"))?;
            self.link(&format!("{d}/driver"))?;
            self.net_interfaces(&format!("{d}/net"))?;
            for child in self.list(&d).into_iter().filter(|n| numbered(n, "virtio")) {
                self.dir(&format!("{d}/{child}"))?;
                self.link(&format!("{d}/{child}/driver"))?;
                self.net_interfaces(&format!("{d}/{child}/net"))?;
            }
            for ctrl in self.list(&format!("{d}/nvme")) {
                let c = format!("{d}/nvme/{ctrl}");
                self.dir(&c)?;
                for f in ["model", "serial"] {
                    self.file(&format!("{c}/{f}"))?;
                }
                // Namespaces under the controller: with native multipath the hidden paths
                // (`nvme0c0n1`) carry the blk-mq map and appear nowhere under sys/block.
                for ns in self.list(&c).into_iter().filter(|n| is_namespace_of(n, &ctrl)) {
                    self.blk_mq(&format!("{c}/{ns}"))?;
                }
            }
        }
        Ok(())
    }

    /// Each interface under `net_dir`: `ifindex`, `operstate` and the names of its queues.
    fn net_interfaces(&mut self, net_dir: &str) -> Result<(), SnapshotError> {
        for ifname in self.list(net_dir) {
            let d = format!("{net_dir}/{ifname}");
            self.dir(&d)?;
            for f in ["ifindex", "operstate"] {
                self.file(&format!("{d}/{f}"))?;
            }
            for queue in self.list(&format!("{d}/queues")) {
                self.dir(&format!("{d}/queues/{queue}"))?;
            }
        }
        Ok(())
    }

    /// `sys/block/nvme*/mq/*`: `cpu_list` and the `cpuN` entries (the complete blk-mq map).
    fn nvme_blocks(&mut self) -> Result<(), SnapshotError> {
        for disk in self.list("sys/block").into_iter().filter(|n| n.starts_with("nvme")) {
            self.blk_mq(&format!("sys/block/{disk}"))?;
        }
        Ok(())
    }

    /// One block device as a plain directory with its `mq/*/cpu_list` and `mq/*/cpuN` entries.
    fn blk_mq(&mut self, disk: &str) -> Result<(), SnapshotError> {
        self.dir(disk)?;
        let mq = format!("{disk}/mq");
        for hctx in self.list(&mq) {
            let d = format!("{mq}/{hctx}");
            self.dir(&d)?;
            self.file(&format!("{d}/cpu_list"))?;
            for cpu in self.list(&d).into_iter().filter(|n| numbered(n, "cpu")) {
                let rel = format!("{d}/{cpu}");
                if self.is_dir(&rel) {
                    self.dir(&rel)?;
                } else {
                    self.file(&rel)?;
                }
            }
        }
        Ok(())
    }

    /// `proc/interrupts`, `proc/irq/N/*affinity*` with their modes, `sys/kernel/irq/N` names.
    fn irqs(&mut self) -> Result<(), SnapshotError> {
        self.file("proc/interrupts")?;
        self.file("proc/irq/default_smp_affinity")?;
        for irq in self.list("proc/irq").into_iter().filter(|n| numbered(n, "")) {
            let d = format!("proc/irq/{irq}");
            self.dir(&d)?;
            for f in [
                "smp_affinity",
                "smp_affinity_list",
                "effective_affinity",
                "effective_affinity_list",
                "affinity_hint",
                "node",
            ] {
                self.file(&format!("{d}/{f}"))?;
            }
        }
        for irq in self.list("sys/kernel/irq").into_iter().filter(|n| numbered(n, "")) {
            let d = format!("sys/kernel/irq/{irq}");
            self.dir(&d)?;
            for f in ["actions", "chip_name", "type"] {
                self.file(&format!("{d}/{f}"))?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbered_names() {
        assert!(numbered("cpu12", "cpu") && numbered("node0", "node") && numbered("27", ""));
        assert!(is_namespace_of("nvme0n1", "nvme0") && is_namespace_of("nvme0c1n2", "nvme0"));
        assert!(!is_namespace_of("nvme10n1", "nvme1") && !is_namespace_of("power", "nvme0"));
        assert!(!numbered("cpufreq", "cpu") && !numbered("cpu", "cpu") && !numbered("default_smp_affinity", ""));
    }

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
}
