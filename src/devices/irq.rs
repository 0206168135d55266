//! One IRQ's name (from `/proc/interrupts` or `/sys/kernel/irq/N/actions`) and its affinity
//! files under `/proc/irq/N/`.

use std::collections::BTreeMap;
use std::io;
use std::os::unix::fs::PermissionsExt;

use super::irq_names::{classify, parse_proc_interrupts};
use super::{DeviceClass, DeviceError, IrqVector, QueueRole};
use crate::cpuset::CpuSet;
use crate::sysfs::{Root, SysfsError};

/// Action names per IRQ, read once per discovery from `proc/interrupts`.
pub(super) struct IrqNames {
    from_proc: BTreeMap<u32, Vec<String>>,
}

impl IrqNames {
    /// Reads `ROOT/proc/interrupts`; a missing file leaves only the sysfs fallback, a malformed
    /// line is a warning.
    pub(super) fn read(root: &Root, warnings: &mut Vec<DeviceError>) -> IrqNames {
        let path = root.path("proc/interrupts");
        let text = match root.read_optional("proc/interrupts") {
            Ok(text) => text.unwrap_or_default(),
            Err(source) => {
                warnings.push(DeviceError::Names(source));
                String::new()
            }
        };
        let (from_proc, bad) = parse_proc_interrupts(&text);
        for b in bad {
            warnings.push(DeviceError::Interrupts {
                path: path.clone(),
                line_no: b.line_no,
                line: b.line,
                problem: b.problem,
            });
        }
        IrqNames { from_proc }
    }

    /// The action names of `irq`: `/proc/interrupts` first, else `sys/kernel/irq/N/actions`
    /// (comma-separated). Empty when neither names it.
    pub(super) fn actions(&self, root: &Root, irq: u32) -> Vec<String> {
        match self.from_proc.get(&irq) {
            Some(names) if !names.is_empty() => names.clone(),
            _ => match root.read_optional(format!("sys/kernel/irq/{irq}/actions")) {
                Ok(Some(text)) => text.split(',').map(str::trim).filter(|s| !s.is_empty()).map(String::from).collect(),
                _ => Vec::new(),
            },
        }
    }
}

/// Reads vector `irq` of device `bdf`. Guarantees: always returns a vector; each unreadable or
/// malformed affinity file becomes `None` there plus one warning naming the file.
pub(super) fn read_vector(
    root: &Root,
    names: &IrqNames,
    bdf: &str,
    class: DeviceClass,
    irq: u32,
    warnings: &mut Vec<DeviceError>,
) -> IrqVector {
    let actions = names.actions(root, irq);
    let (role, queue) = actions
        .iter()
        .map(|a| classify(a, class))
        .find(|(role, _)| *role != QueueRole::Misc)
        .unwrap_or((QueueRole::Misc, None));
    let name = (!actions.is_empty()).then(|| actions.join(", "));
    let dir = format!("proc/irq/{irq}");
    let mut warn = |source: SysfsError| warnings.push(DeviceError::Irq { bdf: bdf.into(), irq, source });

    let current = match root.read_cpulist(format!("{dir}/smp_affinity_list")) {
        Ok(set) => Some(set),
        Err(e) => {
            warn(e);
            None
        }
    };
    let effective = root.read_cpulist_optional(format!("{dir}/effective_affinity_list")).unwrap_or_else(|e| {
        warn(e);
        None
    });
    let hint = read_hint(root, &format!("{dir}/affinity_hint")).unwrap_or_else(|e| {
        warn(e);
        None
    });
    let managed = is_read_only(root, &format!("{dir}/smp_affinity")).unwrap_or_else(|e| {
        warn(e);
        false
    });
    IrqVector { irq, name, role, queue, managed, current, effective, hint }
}

/// `affinity_hint` as a set; `None` when the file is absent or the mask is all zero.
fn read_hint(root: &Root, rel: &str) -> Result<Option<CpuSet>, SysfsError> {
    let Some(text) = root.read_optional(rel)? else { return Ok(None) };
    let set = CpuSet::parse_mask(text.trim()).map_err(|source| SysfsError::CpuList { path: root.path(rel), source })?;
    Ok((!set.is_empty()).then_some(set))
}

/// Whether the file's mode lacks the owner write bit (6.12+ managed IRQs). A missing file is
/// `false` (the IRQ is gone; reading `smp_affinity_list` already warned).
fn is_read_only(root: &Root, rel: &str) -> Result<bool, SysfsError> {
    let path = root.path(rel);
    match std::fs::metadata(&path) {
        Ok(meta) => Ok(meta.permissions().mode() & 0o200 == 0),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(source) => Err(SysfsError::Read { path, source }),
    }
}
