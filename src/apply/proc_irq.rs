//! [`ProcIrq`]: the real [`AffinityWriter`], writing `ROOT/proc/irq/N/smp_affinity_list`.

use std::fs::OpenOptions;
use std::io::{self, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use super::{AffinityWriter, ApplyError, Effective, Verification};
use crate::cpuset::CpuSet;
use crate::sysfs::Root;

/// Writes IRQ affinities under a [`Root`] (`/` on a live system, a fixture tree in tests).
///
/// Invariants: the list form is written with one `write(2)`; the file is opened without
/// `O_CREAT`, so a missing IRQ fails with ENOENT instead of creating a file; an IRQ whose
/// affinity files have no write bit is never opened for writing.
#[derive(Debug, Clone)]
pub struct ProcIrq {
    pub root: Root,
}

impl ProcIrq {
    pub fn new(root: Root) -> ProcIrq {
        ProcIrq { root }
    }

    fn irq_file(&self, irq: u32, name: &str) -> PathBuf {
        self.root.path(format!("proc/irq/{irq}/{name}"))
    }

    /// Refuses (without writing) when `smp_affinity` or `smp_affinity_list` lacks the owner write
    /// bit (procfs creates them `S_IWUSR` only when the IRQ may be moved).
    /// Root ignores modes on open, so this is the only way to see a managed IRQ on ≥ 6.12.
    /// A missing file is not an error here: the open that follows reports it.
    fn check_writable(&self, irq: u32, value: &str) -> Result<(), ApplyError> {
        for name in ["smp_affinity", "smp_affinity_list"] {
            let path = self.irq_file(irq, name);
            match std::fs::metadata(&path) {
                Ok(meta) => {
                    let mode = meta.permissions().mode() & 0o7777;
                    if mode & 0o200 == 0 {
                        return Err(ApplyError::ReadOnly { irq, path, mode, value: value.into() });
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(source) => return Err(ApplyError::Stat { path, value: value.into(), source }),
            }
        }
        Ok(())
    }

    /// Reads back what the kernel now holds after writing `written`.
    fn verify(&self, irq: u32, written: &CpuSet) -> Verification {
        let readback = self.read_current(irq).ok();
        let effective =
            self.root.read_cpulist_optional(format!("proc/irq/{irq}/effective_affinity_list")).ok().flatten();
        Verification {
            matches: readback.as_ref() == Some(written),
            readback,
            effective: Effective::judge(written, effective),
        }
    }
}

impl AffinityWriter for ProcIrq {
    fn write(&self, irq: u32, cpus: &CpuSet) -> Result<Verification, ApplyError> {
        let value = format!("{}\n", cpus.to_list_string());
        self.check_writable(irq, &value)?;
        let path = self.irq_file(irq, "smp_affinity_list");
        // Truncate matters only for fixture trees (plain files); procfs ignores O_TRUNC.
        let mut file = OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(&path)
            .map_err(|source| ApplyError::Open { path: path.clone(), value: value.clone(), source })?;
        match file.write(value.as_bytes()) {
            Ok(n) if n == value.len() => {}
            Ok(written) => return Err(ApplyError::ShortWrite { path, value, written }),
            Err(source) => return Err(ApplyError::Write { path, value, source }),
        }
        drop(file);
        Ok(self.verify(irq, cpus))
    }

    fn read_current(&self, irq: u32) -> Result<CpuSet, ApplyError> {
        Ok(self.root.read_cpulist(format!("proc/irq/{irq}/smp_affinity_list"))?)
    }
}
