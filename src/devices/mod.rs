//! Device discovery: the NVMe controllers, NICs and other MSI devices on the PCI bus, their IRQ
//! vectors, each vector's queue role, and the affinity the kernel currently shows for it.
//!
//! Reads only, through a [`Root`]. A broken or vanished device is a warning in
//! [`Discovery::warnings`]; the rest of the machine is still discovered.

use std::io;
use std::path::PathBuf;

use serde::{Serialize, Serializer};

use crate::cpuset::CpuSet;
use crate::sysfs::{read_in_parallel, Root, SysfsError};
use crate::topology::Topology;

mod irq;
pub mod irq_names;
mod nvme;
mod pci;

pub use irq_names::{classify, parse_proc_interrupts};

/// What irqwise does with a device depends on its class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DeviceClass {
    /// PCI class `0x0108xx` (NVM Express).
    Nvme,
    /// PCI class `0x02xxxx` (network controller).
    Nic,
    /// Any other PCI device with MSI/MSI-X vectors.
    Other,
}

impl DeviceClass {
    /// The class of a PCI class code (`0xCCSSPP`: class, subclass, programming interface).
    pub fn from_pci_class(code: u32) -> DeviceClass {
        match code >> 8 {
            0x0108 => DeviceClass::Nvme,
            c if c >> 8 == 0x02 => DeviceClass::Nic,
            _ => DeviceClass::Other,
        }
    }
}

/// What one IRQ vector serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum QueueRole {
    /// NVMe admin queue (`nvmeXq0`).
    Admin,
    /// Block I/O queue (NVMe `nvmeXqN`, virtio-blk `req.Q`).
    Io,
    Rx,
    Tx,
    /// A combined receive/transmit queue pair.
    RxTx,
    /// Configuration, async events, link state, or a name we do not recognise.
    Misc,
}

/// One interrupt of a device. `queue` is set only for `Io`, `Rx`, `Tx` and `RxTx`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IrqVector {
    pub irq: u32,
    /// The action names, `", "`-joined when several handlers share the IRQ.
    pub name: Option<String>,
    pub role: QueueRole,
    /// 0-based queue index (`nvme0q1` → I/O queue 0; `virtio0-input.3` → rx 3).
    pub queue: Option<u32>,
    /// Kernel-managed as far as discovery can tell: `smp_affinity` has no owner write bit
    /// (kernels ≥ 6.12). Older kernels only reveal it when a write fails with EIO.
    pub managed: bool,
    /// `proc/irq/N/smp_affinity_list`; `None` when missing or unreadable (a warning says why).
    pub current: Option<CpuSet>,
    /// `proc/irq/N/effective_affinity_list` where the kernel has it.
    pub effective: Option<CpuSet>,
    /// `proc/irq/N/affinity_hint`, `None` when absent or all-zero.
    pub hint: Option<CpuSet>,
}

/// An NVMe controller and its blk-mq queue map.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NvmeInfo {
    /// `nvme0`.
    pub controller: String,
    pub model: Option<String>,
    pub serial: Option<String>,
    /// The namespace the map was read from (`nvme0n1`, `nvme0c0n1`), if any.
    pub namespace: Option<String>,
    /// Hardware queue index → CPUs blk-mq sends to it (`mq/<n>/`); empty when no namespace
    /// shows a map. Indexes without a directory hold an empty set.
    pub blk_mq: Vec<CpuSet>,
}

/// A PCI device with interrupts. Invariant: `vectors` is non-empty and sorted by IRQ number.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Device {
    /// PCI address, `0000:81:00.0`.
    pub bdf: String,
    pub class: DeviceClass,
    /// The raw PCI class code, `0x010802`.
    pub pci_class: u32,
    pub vendor: Option<u16>,
    pub device: Option<u16>,
    /// Bound driver (`nvme`, `ice`, `virtio-pci`), from the `driver` link.
    pub driver: Option<String>,
    /// The NVMe controller (`nvme0`) or the first network interface.
    pub name: Option<String>,
    /// Network interfaces, sorted, including those of a virtio child device.
    pub interfaces: Vec<String>,
    /// NUMA node: `numa_node` when ≥ 0, else the one node holding every CPU of `local_cpus`.
    pub node: Option<u32>,
    /// `local_cpulist`.
    pub local_cpus: Option<CpuSet>,
    pub vectors: Vec<IrqVector>,
    pub nvme: Option<NvmeInfo>,
}

/// All devices found, and what went wrong on the way.
#[derive(Debug, Default, Serialize)]
pub struct Discovery {
    /// Sorted by PCI address.
    pub devices: Vec<Device>,
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
    out.warnings.extend(names.take_warnings());
    for (device, warnings) in found {
        out.warnings.extend(warnings);
        match device {
            Ok(Some(dev)) => out.devices.push(dev),
            Ok(None) => {}
            Err(e) => out.warnings.push(e),
        }
    }
    Ok(out)
}

/// Turns a sysfs error about `bdf` into a warning, recognising a device removed mid-scan.
fn device_error(root: &Root, bdf: &str, source: SysfsError) -> DeviceError {
    let dir = root.path(format!("{PCI_DEVICES}/{bdf}"));
    if source.io_kind() == Some(io::ErrorKind::NotFound) && !dir.exists() {
        DeviceError::Vanished { bdf: bdf.into(), path: dir }
    } else {
        DeviceError::Device { bdf: bdf.into(), source }
    }
}
