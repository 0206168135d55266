//! Writing transmit steering: each planned tx queue's `xps_cpus`, as the hex mask the file takes,
//! then read back. One queue's failure never stops the others.
//!
//! Failures are classified like IRQ writes, in the terms of `xps_cpus_store()`
//! (net/core/net-sysfs.c): EPERM is a missing CAP_NET_ADMIN (the file takes writes only with
//! it), ENOENT a single-queue device or a queue gone, EINVAL a mask the kernel refuses.

use std::io::{self, Write};
use std::path::PathBuf;

use serde::Serialize;

use super::{errno_name, FailureClass};
use crate::cpuset::CpuSet;
use crate::devices::discover::net_queues::is_device_path;
use crate::plan::Plan;
use crate::sysfs::Root;

/// A failed write of one `xps_cpus`.
#[derive(Debug, thiserror::Error)]
pub(crate) enum XpsError {
    #[error("{path} is not a file under sys/devices; not writing {value:?}")]
    NotADevicePath { path: PathBuf, value: String },
    #[error("cannot open {path} to write {value:?}: {} ({source})", errno_name(source))]
    Open { path: PathBuf, value: String, source: io::Error },
    #[error("writing {value:?} to {path} failed: {} ({source}){}", errno_name(source), needs_cap(source))]
    Write { path: PathBuf, value: String, source: io::Error },
    #[error("short write to {path}: {written} of {} bytes of {value:?}", value.len())]
    ShortWrite { path: PathBuf, value: String, written: usize },
}

/// The hint for EPERM: the file takes writes only with CAP_NET_ADMIN.
fn needs_cap(err: &io::Error) -> &'static str {
    match err.raw_os_error().map(nix::errno::Errno::from_raw) {
        Some(nix::errno::Errno::EPERM) => "; xps_cpus takes writes only from a process with CAP_NET_ADMIN",
        _ => "",
    }
}

impl XpsError {
    /// The failure class: by errno, EPERM being a permission problem here (not a managed IRQ).
    pub fn class(&self) -> FailureClass {
        match self {
            XpsError::NotADevicePath { .. } => FailureClass::Invalid,
            XpsError::Open { source, .. } | XpsError::Write { source, .. } => match FailureClass::from_io(source) {
                FailureClass::Managed => FailureClass::Permission,
                class => class,
            },
            XpsError::ShortWrite { .. } => FailureClass::Other,
        }
    }
}

/// How one `xps_cpus` write ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "result")]
pub enum XpsOutcome {
    /// Written; `readback` is the file read back (`None`: unreadable), `matches` whether it
    /// equals what was written.
    Written { new: CpuSet, readback: Option<CpuSet>, matches: bool },
    /// Not written; `error` names file, value and errno.
    Failed { class: FailureClass, error: String },
}

/// One tx queue the pass tried to steer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct XpsChange {
    /// The PCI address of the NIC.
    pub device: String,
    pub interface: Option<String>,
    pub driver: Option<String>,
    pub txq: u32,
    pub old: CpuSet,
    /// Flattened: `"result": "written" | "failed"` and its fields.
    #[serde(flatten)]
    pub result: XpsOutcome,
}

impl XpsChange {
    pub(crate) fn is_failure(&self) -> bool {
        matches!(self.result, XpsOutcome::Failed { .. })
    }
}

/// Writes `cpus` to the `xps_cpus` file `rel` (relative to the root, through no symlink) as the
/// kernel's hex mask, and reads it back.
pub(crate) fn write_xps(root: &Root, rel: &str, cpus: &CpuSet) -> Result<Option<CpuSet>, XpsError> {
    let value = format!("{}\n", cpus.to_mask_string());
    let path = root.path(rel);
    if !is_device_path(rel) || !rel.ends_with("/xps_cpus") {
        return Err(XpsError::NotADevicePath { path, value });
    }
    let mut file =
        root.open_write(rel).map_err(|source| XpsError::Open { path: path.clone(), value: value.clone(), source })?;
    // Only a fixture's plain file needs emptying; sysfs ignores the length.
    let _ = file.set_len(0);
    match file.write(value.as_bytes()) {
        Ok(n) if n == value.len() => {}
        Ok(written) => return Err(XpsError::ShortWrite { path, value, written }),
        Err(source) => return Err(XpsError::Write { path, value, source }),
    }
    drop(file);
    Ok(root.read_small_optional(rel).ok().flatten().and_then(|t| CpuSet::parse_mask(t.trim()).ok()))
}

/// Writes every tx queue of `plan` whose steering is to change; one change per write, in plan
/// order.
pub(crate) fn apply_xps(plan: &Plan, root: &Root) -> Vec<XpsChange> {
    let mut changes = Vec::new();
    for d in &plan.devices {
        let Some(x) = &d.xps else { continue };
        for q in x.writes() {
            let result = match write_xps(root, &q.file, &q.desired) {
                Ok(readback) => XpsOutcome::Written {
                    new: q.desired.clone(),
                    matches: readback.as_ref() == Some(&q.desired),
                    readback,
                },
                Err(e) => XpsOutcome::Failed { class: e.class(), error: e.to_string() },
            };
            changes.push(XpsChange {
                device: d.bdf.clone(),
                interface: x.interface.clone(),
                driver: d.driver.clone(),
                txq: q.txq,
                old: q.current.clone(),
                result,
            });
        }
    }
    changes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eperm_is_a_permission_problem_naming_cap_net_admin() {
        let e = XpsError::Write {
            path: "/sys/devices/x/net/eth0/queues/tx-0/xps_cpus".into(),
            value: "3\n".into(),
            source: io::Error::from_raw_os_error(nix::errno::Errno::EPERM as i32),
        };
        assert_eq!(e.class(), FailureClass::Permission);
        let text = e.to_string();
        assert!(text.contains("EPERM") && text.contains("CAP_NET_ADMIN") && text.contains("tx-0/xps_cpus"), "{text}");
    }

    #[test]
    fn writes_the_hex_mask_and_refuses_paths_outside_sys_devices() {
        let dir = tempfile::tempdir().unwrap();
        let rel = "sys/devices/pci0000:00/0000:00:03.0/net/eth0/queues/tx-1/xps_cpus";
        std::fs::create_dir_all(dir.path().join(rel).parent().unwrap()).unwrap();
        std::fs::write(dir.path().join(rel), "00000000,00000000\n").unwrap();
        let root = Root::new(dir.path());
        let cpus = CpuSet::parse_list("1,33").unwrap();
        assert_eq!(write_xps(&root, rel, &cpus).unwrap(), Some(cpus));
        assert_eq!(std::fs::read_to_string(dir.path().join(rel)).unwrap(), "2,00000002\n");
        let e = write_xps(&root, "proc/irq/5/smp_affinity", &CpuSet::single(0)).unwrap_err();
        assert_eq!(e.class(), FailureClass::Invalid);
        let gone = write_xps(&root, "sys/devices/pci0000:00/x/net/eth0/queues/tx-9/xps_cpus", &CpuSet::single(0));
        assert_eq!(gone.unwrap_err().class(), FailureClass::Gone);
    }
}
