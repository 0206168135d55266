//! [`ProcIrq`]: the real [`AffinityWriter`], writing `ROOT/proc/irq/N/smp_affinity_list`.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use super::{AffinityWriter, ApplyError, Effective, Verification};
use crate::cpuset::CpuSet;
use crate::sysfs::Root;

/// Writes IRQ affinities under a [`Root`] (`/` on a live system, a fixture tree in tests).
///
/// Invariants: the list form is written with one `write(2)`; the file is opened beneath the
/// root without following any symlink and without `O_CREAT`, so a missing IRQ fails with ENOENT
/// and a link out of the root fails with ELOOP/EXDEV instead of writing elsewhere; only a
/// regular file is written; an IRQ whose affinity files have no write bit is never written.
#[derive(Debug, Clone)]
pub struct ProcIrq {
    pub root: Root,
}

impl ProcIrq {
    pub fn new(root: Root) -> ProcIrq {
        ProcIrq { root }
    }

    fn rel(irq: u32, name: &str) -> String {
        format!("proc/irq/{irq}/{name}")
    }

    fn irq_file(&self, irq: u32, name: &str) -> PathBuf {
        self.root.path(Self::rel(irq, name))
    }

    /// Refuses (without writing) when `smp_affinity` lacks the owner write bit (procfs creates
    /// it `S_IWUSR` only when the IRQ may be moved). Root ignores modes on open, so this is the
    /// only way to see a managed IRQ on ≥ 6.12. A missing file is not an error here: the open
    /// that follows reports it.
    fn check_writable(&self, irq: u32, value: &str) -> Result<(), ApplyError> {
        let name = "smp_affinity";
        match self.root.mode(Self::rel(irq, name)) {
            Ok(Some(mode)) if mode & 0o200 == 0 => {
                Err(ApplyError::ReadOnly { irq, path: self.irq_file(irq, name), mode, value: value.into() })
            }
            Ok(_) => Ok(()),
            Err(e) => Err(ApplyError::Read(e)),
        }
    }

    /// Reads back what the kernel now holds after writing `written`.
    fn verify(&self, irq: u32, written: &CpuSet) -> Verification {
        let readback = self.read_current(irq).ok();
        let effective = self.root.read_cpulist_optional(Self::rel(irq, "effective_affinity_list")).ok().flatten();
        Verification {
            matches: readback.as_ref() == Some(written),
            readback,
            effective: Effective::judge(written, effective),
        }
    }
}

impl AffinityWriter for ProcIrq {
    fn online_now(&self) -> Option<CpuSet> {
        self.root.read_cpulist("sys/devices/system/cpu/online").ok()
    }

    fn write(&self, irq: u32, cpus: &CpuSet) -> Result<Verification, ApplyError> {
        let value = format!("{}\n", cpus.to_list_string());
        self.check_writable(irq, &value)?;
        let path = self.irq_file(irq, "smp_affinity_list");
        let mut file = self
            .root
            .open_write(Self::rel(irq, "smp_affinity_list"))
            .map_err(|source| ApplyError::Open { path: path.clone(), value: value.clone(), source })?;
        let mode = file.metadata().map_or(0o644, |m| m.permissions().mode() & 0o7777);
        if mode & 0o200 == 0 {
            return Err(ApplyError::ReadOnly { irq, path, mode, value });
        }
        // Only a fixture's plain file needs emptying; procfs ignores the length, and a failure
        // here leaves the write below to report what is wrong.
        let _ = file.set_len(0);
        match file.write(value.as_bytes()) {
            Ok(n) if n == value.len() => {}
            Ok(written) => return Err(ApplyError::ShortWrite { path, value, written }),
            Err(source) => return Err(ApplyError::Write { path, value, source }),
        }
        drop(file);
        Ok(self.verify(irq, cpus))
    }

    fn read_current(&self, irq: u32) -> Result<CpuSet, ApplyError> {
        Ok(self.root.read_cpulist(Self::rel(irq, "smp_affinity_list"))?)
    }
}
