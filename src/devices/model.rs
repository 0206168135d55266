//! The devices irqwise places: NVMe controllers, NICs and other MSI devices, their IRQ vectors,
//! each vector's queue role, and the affinity the kernel showed for it when discovered.
//!
//! Plain data; [`super::discover`] reads it from sysfs.

use serde::{Deserialize, Serialize};

use crate::cpuset::CpuSet;

/// What irqwise does with a device depends on its class. The one vocabulary of plans and of the
/// config's `match.class` (`nvme`, `nic`, `storage`, `other`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DeviceClass {
    /// PCI class `0x0108xx` (NVM Express).
    Nvme,
    /// PCI class `0x02xxxx` (network controller).
    Nic,
    /// A SAS, SCSI or RAID host adapter (PCI class `0x0100xx`, `0x0104xx`, `0x0107xx`, or a driver of
    /// [`STORAGE_DRIVERS`]): its reply queues are usually kernel-managed, spread by its driver.
    Storage,
    /// Any other PCI device with MSI/MSI-X vectors.
    Other,
}

impl DeviceClass {
    /// The name plans and the config use (`nvme`, `nic`, `storage`, `other`).
    pub fn as_str(self) -> &'static str {
        match self {
            DeviceClass::Nvme => "nvme",
            DeviceClass::Nic => "nic",
            DeviceClass::Storage => "storage",
            DeviceClass::Other => "other",
        }
    }

    /// The class of a PCI class code (`0xCCSSPP`: class, subclass, programming interface).
    pub(crate) fn from_pci_class(code: u32) -> DeviceClass {
        match code >> 8 {
            0x0108 => DeviceClass::Nvme,
            0x0100 | 0x0104 | 0x0107 => DeviceClass::Storage,
            c if c >> 8 == 0x02 => DeviceClass::Nic,
            _ => DeviceClass::Other,
        }
    }

    /// The class of a device with PCI class `code` bound to `driver`: a storage HBA driver makes
    /// it `Storage` whatever class code its firmware reports.
    pub(crate) fn of_device(code: u32, driver: Option<&str>) -> DeviceClass {
        match DeviceClass::from_pci_class(code) {
            DeviceClass::Other if driver.is_some_and(|d| STORAGE_DRIVERS.contains(&d)) => DeviceClass::Storage,
            class => class,
        }
    }
}

/// SAS/SCSI/RAID host adapter drivers that allocate their reply-queue vectors kernel-managed
/// (`PCI_IRQ_AFFINITY`) on a shared host tag set.
pub(crate) const STORAGE_DRIVERS: &[&str] =
    &["megaraid_sas", "mpt3sas", "hisi_sas_v3_hw", "hisi_sas_v2_hw", "smartpqi"];

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
    /// Configuration, async events, link state, mailbox, or a name not recognised (then
    /// [`IrqVector::recognised`] says so).
    Misc,
}

impl QueueRole {
    /// The role as tables show it, with the queue index when there is one: `rx 3`, `misc`.
    pub fn label(self, queue: Option<u32>) -> String {
        let mut out = String::new();
        self.push_label(queue, &mut out);
        out
    }

    /// [`QueueRole::label`] appended to `out` (a table of thousands of rows writes it so).
    pub fn push_label(self, queue: Option<u32>, out: &mut String) {
        out.push_str(self.word());
        if let Some(q) = queue {
            out.push(' ');
            out.push_str(itoa::Buffer::new().format(q));
        }
    }

    /// The role's word in [`QueueRole::label`]: `rx`, `misc`.
    fn word(self) -> &'static str {
        match self {
            QueueRole::Admin => "admin",
            QueueRole::Io => "io",
            QueueRole::Rx => "rx",
            QueueRole::Tx => "tx",
            QueueRole::RxTx => "rxtx",
            QueueRole::Misc => "misc",
        }
    }
}

/// How a vector's role and queue were read from its name: which entry of the driver table
/// ([`super::name_table`]) or which config rule, or that nothing recognised it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "by", rename_all = "kebab-case")]
pub enum Recognition {
    /// A pattern of the driver table entry of `driver`.
    Table { driver: &'static str, pattern: &'static str },
    /// The `queue_pattern` of the config rule at `rule` (`file:line`).
    Rule { rule: String, pattern: String },
    /// The driver has a table entry but no pattern of it matches the name.
    NotRecognised { driver: String },
    /// irqwise knows no names of this driver (or the device has none).
    UnknownDriver { driver: Option<String> },
    /// The kernel's netdev netlink family says which queue the IRQ serves (through NAPI
    /// instance `napi`): the name is not read for it.
    Kernel { napi: u32 },
    /// The name gave queue `index`, which no device of `vectors` vectors can have: a name from a
    /// hostile or broken source. Never placed, whatever the class.
    IndexOutOfRange { index: u32, vectors: usize },
}

impl Recognition {
    /// Whether the name was understood (by the table or a rule).
    pub(crate) fn is_recognised(&self) -> bool {
        matches!(self, Recognition::Table { .. } | Recognition::Rule { .. } | Recognition::Kernel { .. })
    }

    /// The reason a vector is left alone because its name was not understood; `None` when it was.
    pub(crate) fn unrecognised_reason(&self) -> Option<String> {
        match self {
            Recognition::Table { .. } | Recognition::Rule { .. } | Recognition::Kernel { .. } => None,
            Recognition::NotRecognised { driver } => Some(format!("name not recognised for driver {driver}")),
            Recognition::UnknownDriver { driver: Some(d) } => {
                Some(format!("name not recognised for driver {d} (irqwise knows no names of it)"))
            }
            Recognition::UnknownDriver { driver: None } => Some("name not recognised (device has no driver)".into()),
            Recognition::IndexOutOfRange { index, vectors } => {
                Some(format!("queue index {index} read from its name is beyond the device's {vectors} vectors"))
            }
        }
    }
}

impl std::fmt::Display for Recognition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Recognition::Table { driver, pattern } => write!(f, "{driver} \"{pattern}\""),
            Recognition::Rule { rule, pattern } => write!(f, "rule {rule} '{pattern}'"),
            Recognition::Kernel { napi } => write!(f, "kernel netlink (NAPI {napi})"),
            Recognition::NotRecognised { .. } | Recognition::UnknownDriver { .. } => f.write_str("not recognised"),
            Recognition::IndexOutOfRange { index, .. } => write!(f, "queue index {index} out of range"),
        }
    }
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
    /// How `role` and `queue` were read from the name.
    pub recognised: Recognition,
    /// Kernel-managed as far as discovery can tell: `smp_affinity_list` (like `smp_affinity`) has
    /// no owner write bit (kernels ≥ 6.12). Older kernels only reveal it when a write fails.
    pub managed: bool,
    /// `proc/irq/N/smp_affinity_list`; `None` when missing or unreadable (a warning says why).
    pub current: Option<CpuSet>,
    /// `proc/irq/N/affinity_hint`, `None` when absent or all-zero.
    pub hint: Option<CpuSet>,
}

/// What warnings and plans call the owner of a [`LooseIrq`] (in place of a PCI address).
pub(crate) const NO_DEVICE: &str = "none";

/// An IRQ with a handler that belongs to no discovered device (timers, ACPI, legacy lines, a
/// device without MSI). No strategy places it; the guard keeps it off banned and isolated CPUs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LooseIrq {
    pub vector: IrqVector,
    /// `proc/irq/N/node`, `None` when absent or -1.
    pub node: Option<u32>,
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
    /// The nvme driver's `write_queues` parameter (`sys/module/nvme/parameters/write_queues`):
    /// above 0, the driver splits its I/O vectors into a default (write) and a read set, each
    /// spread on its own. `None` when the file is absent.
    pub write_queues: Option<u32>,
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
