//! One IRQ's name (from `/sys/kernel/irq/N/actions` or `/proc/interrupts`) and its affinity
//! files under `/proc/irq/N/`.

use std::collections::BTreeMap;
use std::io;
use std::sync::{Mutex, OnceLock};

use super::DeviceError;
use crate::cpuset::CpuSet;
use crate::devices::irq_names::parse_proc_interrupts;
use crate::devices::{IrqVector, QueueRole, Recognition};
use crate::sysfs::{Root, SysfsError};

/// Where the action names of IRQs come from, decided once per discovery. Shared by the threads
/// reading devices.
///
/// The kernel prints the same action list in `sys/kernel/irq/N/actions` (names joined by `,`) and
/// in the IRQ's `/proc/interrupts` line (joined by `", "`). With `SPARSE_IRQ` (every modern x86
/// and arm64 kernel) each IRQ has the small `actions` file, so the huge `/proc/interrupts` of a
/// 1024-CPU machine is read only for an IRQ that lacks it (a partial capture), and at most once.
pub(super) enum IrqNames {
    /// `sys/kernel/irq` exists: each IRQ's `actions`; `proc/interrupts` is read on the first IRQ
    /// without one, its warnings kept for [`IrqNames::take_warnings`].
    Sysfs { from_proc: OnceLock<BTreeMap<u32, Vec<String>>>, warnings: Mutex<Vec<DeviceError>> },
    /// No `sys/kernel/irq`: `proc/interrupts`, read up front.
    Proc(BTreeMap<u32, Vec<String>>),
}

impl IrqNames {
    /// Chooses the source for `root`; without `sys/kernel/irq`, reads `proc/interrupts` now
    /// (a missing file names nothing, a malformed line is a warning).
    pub(super) fn read(root: &Root, warnings: &mut Vec<DeviceError>) -> IrqNames {
        if root.is_dir("sys/kernel/irq") {
            IrqNames::Sysfs { from_proc: OnceLock::new(), warnings: Mutex::new(Vec::new()) }
        } else {
            IrqNames::Proc(read_proc_interrupts(root, warnings))
        }
    }

    /// The action names of `irq`: `Some(empty)` when the IRQ has no handler (nothing to place:
    /// a driver that freed it, as NICs do at link down), `None` when no source knows the IRQ
    /// (a partial capture). Guarantees: from `sys/kernel/irq/N/actions` when that file exists,
    /// else from `/proc/interrupts`.
    pub(super) fn actions(&self, root: &Root, irq: u32) -> Option<Vec<String>> {
        let from_proc = match self {
            IrqNames::Proc(names) => names,
            IrqNames::Sysfs { from_proc, warnings } => {
                if let Ok(Some(text)) = root.read_small_optional(format!("sys/kernel/irq/{irq}/actions")) {
                    return Some(split_actions(&text));
                }
                from_proc.get_or_init(|| {
                    let mut found = Vec::new();
                    let names = read_proc_interrupts(root, &mut found);
                    warnings.lock().unwrap_or_else(std::sync::PoisonError::into_inner).extend(found);
                    names
                })
            }
        };
        from_proc.get(&irq).cloned()
    }

    /// Whether names come from `sys/kernel/irq` and `proc/interrupts` was not needed so far.
    pub(super) fn sysfs_only(&self) -> bool {
        matches!(self, IrqNames::Sysfs { from_proc, .. } if from_proc.get().is_none())
    }

    /// The warnings of a `proc/interrupts` read on demand (none in `Proc` mode, where
    /// [`IrqNames::read`] returned them).
    pub(super) fn take_warnings(self) -> Vec<DeviceError> {
        match self {
            IrqNames::Sysfs { warnings, .. } => {
                warnings.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner)
            }
            IrqNames::Proc(_) => Vec::new(),
        }
    }
}

/// The names of a `sys/kernel/irq/N/actions` file: comma-separated, blanks dropped.
fn split_actions(text: &str) -> Vec<String> {
    text.split(',').map(str::trim).filter(|s| !s.is_empty()).map(String::from).collect()
}

/// Action names per IRQ from `ROOT/proc/interrupts`; a missing file names nothing, an unreadable
/// file or malformed line is a warning.
fn read_proc_interrupts(root: &Root, warnings: &mut Vec<DeviceError>) -> BTreeMap<u32, Vec<String>> {
    let path = root.path("proc/interrupts");
    // Read as bytes and kept without a copy when valid UTF-8 (it always is): it can be huge.
    let text = match root.read_bytes_optional("proc/interrupts") {
        Ok(Some(bytes)) => {
            String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
        }
        Ok(None) => return BTreeMap::new(),
        Err(e) => {
            warnings.push(DeviceError::Names(e));
            return BTreeMap::new();
        }
    };
    let (from_proc, bad) = parse_proc_interrupts(&text);
    if from_proc.is_empty() && bad.is_empty() {
        let line = text.lines().next().unwrap_or_default().to_string();
        let problem = "names no IRQ at all, so no vector's role is known (NIC vectors are left alone)";
        warnings.push(DeviceError::Interrupts { path: path.clone(), line_no: 1, line, problem });
    }
    for b in bad {
        warnings.push(DeviceError::Interrupts {
            path: path.clone(),
            line_no: b.line_no,
            line: b.line,
            problem: b.problem,
        });
    }
    from_proc
}

/// Which IRQs a driver has requested: the kernel creates `proc/irq/N/` at `request_irq()`, so a
/// vector without it is allocated but unused (many NIC drivers request theirs at link up) and
/// has nothing to place.
pub(super) enum Requested {
    /// No `proc/irq` at all (a partial capture): every IRQ counts.
    All,
    /// The numbered entries of `proc/irq`, listed once: sorted, each once.
    Listed(Vec<u32>),
    /// `proc/irq` exists but cannot be listed: ask per IRQ.
    PerIrq,
}

impl Requested {
    /// Lists `ROOT/proc/irq` once (one directory read instead of a lookup per IRQ); one that
    /// exists but cannot be listed (not a directory, unreadable) is a warning.
    pub(super) fn read(root: &Root, warnings: &mut Vec<DeviceError>) -> Requested {
        match root.list_dir("proc/irq") {
            Ok(names) => {
                // Sorted and searched, not hashed: on a big machine 8,000 IRQs, each looked up
                // once, cost less so than built into a hash set.
                let mut irqs: Vec<u32> = names.iter().filter_map(|n| n.parse::<u32>().ok()).collect();
                irqs.sort_unstable();
                irqs.dedup();
                Requested::Listed(irqs)
            }
            Err(e) if e.io_kind() == Some(io::ErrorKind::NotFound) => Requested::All,
            Err(source) if root.exists("proc/irq") => {
                warnings.push(DeviceError::ProcIrq { path: root.path("proc/irq"), source });
                Requested::PerIrq
            }
            Err(_) => Requested::All,
        }
    }

    /// The listing, when `proc/irq` could be listed.
    pub(super) fn listed(&self) -> Option<&Vec<u32>> {
        match self {
            Requested::Listed(irqs) => Some(irqs),
            Requested::All | Requested::PerIrq => None,
        }
    }

    /// Whether `irq` is in use: `proc/irq/N` exists (or the root has no `proc/irq`).
    pub(super) fn contains(&self, root: &Root, irq: u32) -> bool {
        match self {
            Requested::All => true,
            Requested::Listed(irqs) => irqs.binary_search(&irq).is_ok(),
            Requested::PerIrq => root.exists(format!("proc/irq/{irq}")),
        }
    }
}

/// Reads vector `irq` of device `bdf` and its action names. Guarantees: always returns a vector,
/// its role not yet read from the names (`Misc`, not recognised: the caller reads the whole
/// device's names at once); each unreadable or malformed affinity file becomes `None` there
/// plus one warning naming the file.
pub(super) fn read_vector(
    root: &Root,
    actions: Vec<String>,
    bdf: &str,
    irq: u32,
    warnings: &mut Vec<DeviceError>,
) -> (IrqVector, Vec<String>) {
    let (role, queue, recognised) = (QueueRole::Misc, None, Recognition::UnknownDriver { driver: None });
    let name = (!actions.is_empty()).then(|| actions.join(", "));
    let mut v = IrqVector { irq, name, role, queue, recognised, managed: false, current: None, hint: None };
    read_affinity(root, bdf, &mut v, warnings);
    (v, actions)
}

/// Reads the affinity files of `v` (`proc/irq/N/`: the mask and whether it is writable, the
/// driver's hint unless the IRQ is kernel-managed) into it, in that order; each unreadable or
/// malformed file becomes `None` (or not managed) plus one warning naming it. The effective mask
/// is not read: no plan depends on it (a write's verification and `report` read it themselves),
/// and on a 1,024-CPU machine with 8,288 IRQs it was a quarter of a full pass's file opens.
pub(super) fn read_affinity(root: &Root, bdf: &str, v: &mut IrqVector, warnings: &mut Vec<DeviceError>) {
    let irq = v.irq;
    // One path buffer for both files, not a `format!` each: thousands of IRQs per pass.
    let mut path = String::with_capacity(40);
    path.push_str("proc/irq/");
    path.push_str(itoa::Buffer::new().format(irq));
    let dir_len = path.len();
    let mut warn = |source: SysfsError| warnings.push(DeviceError::Irq { bdf: bdf.into(), irq, source });

    // Managed: the kernel (6.12+) creates `smp_affinity` and `smp_affinity_list` with one mode,
    // without the owner write bit when userspace may not move the IRQ; the mode comes with the
    // read, from its `fstat`.
    path.push_str("/smp_affinity_list");
    let list = path.as_str();
    (v.current, v.managed) = match root.read_string_with_mode(list) {
        // The path is joined only for a warning: on a big machine this runs thousands of times.
        Ok((text, mode)) => match CpuSet::parse_list(&text) {
            Ok(set) => (Some(set), mode & 0o200 == 0),
            Err(source) => {
                warn(SysfsError::CpuList { path: root.path(list), source });
                (None, mode & 0o200 == 0)
            }
        },
        Err(e) => {
            warn(e);
            (None, false)
        }
    };
    // A kernel-managed IRQ's hint is not read: userspace cannot move the IRQ, so the hint names
    // nothing to act on or to tell apart from another owner's mask (the plan bench's 4,096
    // managed NVMe queues: 4,096 of a full pass's 47,948 file opens).
    if !v.managed {
        path.truncate(dir_len);
        path.push_str("/affinity_hint");
        v.hint = read_hint(root, &path).unwrap_or_else(|e| {
            warn(e);
            None
        });
    }
}

/// `affinity_hint` as a set; `None` when the file is absent or the mask is all zero.
fn read_hint(root: &Root, rel: &str) -> Result<Option<CpuSet>, SysfsError> {
    let Some(text) = root.read_small_optional(rel)? else { return Ok(None) };
    let set = CpuSet::parse_mask(text.trim()).map_err(|source| SysfsError::CpuList { path: root.path(rel), source })?;
    Ok((!set.is_empty()).then_some(set))
}
