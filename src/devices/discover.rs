//! Device discovery: the NVMe controllers, NICs and other MSI devices on the PCI bus, their IRQ
//! vectors, each vector's queue role, and the affinity the kernel currently shows for it.
//!
//! Reads only, through a [`Root`]. A broken or vanished device is a warning in
//! [`Discovery::warnings`]; the rest of the machine is still discovered.

mod irq;
pub mod net_queues;
mod nvme;
mod pci;
mod udev;

use std::io;
use std::path::PathBuf;

use serde::{Serialize, Serializer};

use super::{Device, LooseIrq, NO_DEVICE};
use crate::sysfs::{read_in_parallel, Root, SysfsError};
use crate::topology::Topology;

pub use udev::udev_properties;

/// All devices found, and what went wrong on the way.
#[derive(Debug, Default, Serialize)]
pub struct Discovery {
    /// Sorted by PCI address.
    pub devices: Vec<Device>,
    /// IRQs with a handler that belong to no device above, by IRQ number.
    pub loose: Vec<LooseIrq>,
    #[serde(serialize_with = "as_strings")]
    pub warnings: Vec<DeviceError>,
}

/// Problems found during discovery. Every message names the file and what was wrong with it.
#[derive(Debug, thiserror::Error)]
pub enum DeviceError {
    /// The PCI bus directory cannot be listed: discovery as a whole fails.
    #[error("cannot list PCI devices: {0}")]
    Bus(SysfsError),
    /// A device's file is missing or malformed.
    #[error("PCI device {bdf}: {source}")]
    Device { bdf: String, source: SysfsError },
    /// The device directory disappeared during the scan (hot removal).
    #[error("PCI device {bdf} vanished during the scan ({path} is gone)")]
    Vanished { bdf: String, path: PathBuf },
    /// A file of one IRQ is missing or malformed; the vector is kept with `None` there.
    #[error("IRQ {irq} of PCI device {bdf}: {source}")]
    Irq { bdf: String, irq: u32, source: SysfsError },
    /// The machine has no PCI bus in sysfs (no `sys/bus/pci/devices`): nothing to place.
    #[error("{0} does not exist: no PCI devices to place")]
    NoPciBus(PathBuf),
    /// `/proc/interrupts` exists but cannot be read; names fall back to `sys/kernel/irq`.
    #[error("cannot read IRQ names: {0}")]
    Names(SysfsError),
    /// A line of `/proc/interrupts` could not be read.
    #[error("{path} line {line_no}: {problem}: {line:?}")]
    Interrupts { path: PathBuf, line_no: usize, line: String, problem: &'static str },
    /// A number no real machine shows (a node id beyond the kernel's limit, more vectors than
    /// PCI allows); `instead` says what discovery did.
    #[error("PCI device {bdf}: {path}: {problem}; {instead}")]
    Implausible { bdf: String, path: PathBuf, problem: String, instead: &'static str },
}

/// The error type of [`discover_devices`] (the same enum as the warnings).
pub type DevicesError = DeviceError;

fn as_strings<S: Serializer>(warnings: &[DeviceError], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(warnings.iter().map(|w| w.to_string()))
}

/// Where the PCI devices are listed, relative to the root.
pub const PCI_DEVICES: &str = "sys/bus/pci/devices";

/// Discovers every NVMe, NIC and other MSI device under `root`.
///
/// `topo` is used only to derive a node from `local_cpulist` when `numa_node` is -1. Fails only
/// when `ROOT/sys/bus/pci/devices` exists but cannot be listed (its absence, a machine or a
/// capture without PCI, is a warning and no devices); anything wrong with one device or one IRQ
/// becomes a warning and the scan carries on. Devices are read on several threads (see
/// [`read_in_parallel`]); the result is the same as one thread's: warnings about
/// `proc/interrupts` first, then each device's in PCI address order.
pub fn discover_devices(root: &Root, topo: &Topology) -> Result<Discovery, DevicesError> {
    let mut out = Discovery::default();
    let bdfs = match root.list_dir(PCI_DEVICES) {
        Ok(bdfs) => bdfs,
        Err(e) if e.io_kind() == Some(std::io::ErrorKind::NotFound) => {
            out.warnings.push(DeviceError::NoPciBus(root.path(PCI_DEVICES)));
            return Ok(out);
        }
        Err(e) => return Err(DeviceError::Bus(e)),
    };
    let names = irq::IrqNames::read(root, &mut out.warnings);
    let requested = irq::Requested::read(root);
    let found = read_in_parallel(&bdfs, |bdf| {
        let mut warnings = Vec::new();
        let device = pci::read_device(root, topo, bdf, &names, &requested, &mut warnings);
        (device, warnings)
    });
    for (device, warnings) in found {
        out.warnings.extend(warnings);
        match device {
            Ok(Some(dev)) => out.devices.push(dev),
            Ok(None) => {}
            Err(e) => out.warnings.push(e),
        }
    }
    out.loose = loose_irqs(root, &requested, &names, &out.devices, &mut out.warnings);
    out.warnings.extend(names.take_warnings());
    Ok(out)
}

/// Every IRQ of `proc/irq` with a handler that no device's vector is: read like a device vector
/// (a bad file is a warning naming it), plus its `node`. Empty when `proc/irq` cannot be listed.
fn loose_irqs(
    root: &Root,
    requested: &irq::Requested,
    names: &irq::IrqNames,
    devices: &[Device],
    warnings: &mut Vec<DeviceError>,
) -> Vec<LooseIrq> {
    let irq::Requested::Listed(all) = requested else { return Vec::new() };
    let owned: std::collections::HashSet<u32> = devices.iter().flat_map(|d| d.vectors.iter().map(|v| v.irq)).collect();
    let mut loose: Vec<u32> = all.iter().copied().filter(|i| !owned.contains(i)).collect();
    loose.sort_unstable();
    let mut out = Vec::new();
    for irq in loose {
        let actions = names.actions(root, irq).unwrap_or_default();
        if actions.is_empty() {
            continue; // no handler: nothing runs there
        }
        let (vector, _) = irq::read_vector(root, actions, NO_DEVICE, irq, warnings);
        let node = root
            .read_small_optional(format!("proc/irq/{irq}/node"))
            .ok()
            .flatten()
            .and_then(|t| t.trim().parse::<i64>().ok())
            .and_then(|n| u32::try_from(n).ok());
        out.push(LooseIrq { vector, node });
    }
    out
}

/// Turns a sysfs error about `bdf` into a warning, recognising a device removed mid-scan.
fn device_error(root: &Root, bdf: &str, source: SysfsError) -> DeviceError {
    let rel = format!("{PCI_DEVICES}/{bdf}");
    if source.io_kind() == Some(io::ErrorKind::NotFound) && !root.exists(&rel) {
        DeviceError::Vanished { bdf: bdf.into(), path: root.path(rel) }
    } else {
        DeviceError::Device { bdf: bdf.into(), source }
    }
}
