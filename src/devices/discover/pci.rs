//! One PCI device directory: class, IDs, driver, locality, interfaces and IRQ numbers.

use std::io;

use super::irq::{read_vector, IrqNames, Requested};
use super::{device_error, nvme, DeviceError, PCI_DEVICES};
use crate::cpuset::CpuSet;
use crate::devices::{recognise_device, Device, DeviceClass, NameContext};
use crate::sysfs::{Root, SysfsError};
use crate::topology::Topology;
use crate::topology::MAX_NUMNODES;

/// Reads device `bdf`. `Ok(None)` for a device irqwise has nothing to do with (no interrupts,
/// or an `Other` device without MSI); `Err` when a file it cannot do without (`class`, the IRQ
/// list) is missing or malformed, or the device vanished.
pub(super) fn read_device(
    root: &Root,
    bdf: &str,
    names: &IrqNames,
    requested: &Requested,
    warnings: &mut Vec<DeviceError>,
) -> Result<Option<Device>, DeviceError> {
    let dir = format!("{PCI_DEVICES}/{bdf}");
    let err = |e: SysfsError| device_error(root, bdf, e);
    let pci_class = read_hex(root, &format!("{dir}/class"), "a hex PCI class code like 0x010802").map_err(err)?;
    let (mut irqs, msi) = read_irqs(root, &dir).map_err(err)?;
    if irqs.len() > MAX_VECTORS {
        warnings.push(DeviceError::Implausible {
            bdf: bdf.into(),
            path: root.path(format!("{dir}/msi_irqs")),
            problem: format!("{} vectors, more than the {MAX_VECTORS} an MSI-X table can hold", irqs.len()),
            instead: "only the lowest 2048 IRQs are read",
        });
        irqs.truncate(MAX_VECTORS);
    }
    let driver = root.link_name(format!("{dir}/driver"));
    let class = DeviceClass::of_device(pci_class, driver.as_deref());
    // An INTx line belongs to the device only while a driver has it; an unbound (or departing)
    // device's legacy line may be shared with others and is not ours to move.
    let irqs = if msi || driver.is_some() {
        irqs.into_iter().filter(|&irq| requested.contains(root, irq)).collect()
    } else {
        Vec::new()
    };
    if irqs.is_empty() || (matches!(class, DeviceClass::Other | DeviceClass::Storage) && !msi) {
        // No interrupts, or the device went away after its class was read.
        if !root.exists(&dir) {
            return Err(DeviceError::Vanished { bdf: bdf.into(), path: root.path(&dir) });
        }
        return Ok(None);
    }

    let Facts { vendor, device, local_cpus, node, interfaces, nvme } = read_facts(root, bdf, class, warnings);
    let name = nvme.as_ref().map(|n| n.controller.clone()).or_else(|| interfaces.first().cloned());
    // An IRQ without a handler is not in use (a NIC frees its queue IRQs at link down): nothing
    // to place, and no name to read.
    let named: Vec<(u32, Vec<String>)> = irqs
        .into_iter()
        .filter_map(|irq| match names.actions(root, irq) {
            Some(a) if a.is_empty() => None,
            a => Some((irq, a.unwrap_or_default())),
        })
        .collect();
    if named.is_empty() {
        return Ok(None);
    }
    let (mut vectors, actions): (Vec<_>, Vec<_>) =
        named.into_iter().map(|(irq, a)| read_vector(root, a, bdf, irq, warnings)).unzip();
    let ctx = NameContext { driver: driver.as_deref(), class, interfaces: &interfaces };
    for (v, r) in vectors.iter_mut().zip(recognise_device(&ctx, &actions)) {
        (v.role, v.queue, v.recognised) = (r.role, r.queue, r.by);
    }
    Ok(Some(Device {
        bdf: bdf.into(),
        class,
        pci_class,
        vendor,
        device,
        driver,
        name,
        interfaces,
        node,
        local_cpus,
        vectors,
        nvme,
    }))
}

/// What a device's directory tells beside its class and IRQs, none of it needed to place them.
struct Facts {
    vendor: Option<u16>,
    device: Option<u16>,
    local_cpus: Option<CpuSet>,
    node: Option<u32>,
    interfaces: Vec<String>,
    nvme: Option<crate::devices::NvmeInfo>,
}

/// Reads device `bdf`'s [`Facts`]: a file that cannot be read or holds nonsense is a warning
/// and the fact is missing, never an error of the device.
fn read_facts(root: &Root, bdf: &str, class: DeviceClass, warnings: &mut Vec<DeviceError>) -> Facts {
    let dir = format!("{PCI_DEVICES}/{bdf}");
    let mut soft = |e: SysfsError| warnings.push(device_error(root, bdf, e));
    let vendor = optional_id(root, &format!("{dir}/vendor")).unwrap_or_else(|e| {
        soft(e);
        None
    });
    let device = optional_id(root, &format!("{dir}/device")).unwrap_or_else(|e| {
        soft(e);
        None
    });
    let local_cpus = root.read_cpulist_optional(format!("{dir}/local_cpulist")).unwrap_or_else(|e| {
        soft(e);
        None
    });
    let numa_node =
        root.read_number_optional::<i64>(format!("{dir}/numa_node"), "a NUMA node id or -1").unwrap_or_else(|e| {
            soft(e);
            None
        });
    let implausible_node = numa_node.filter(|&n| n >= i64::from(MAX_NUMNODES)).map(|n| DeviceError::Implausible {
        bdf: bdf.into(),
        path: root.path(format!("{dir}/numa_node")),
        problem: format!("node {n} is not below the kernel's limit of {MAX_NUMNODES} nodes"),
        instead: "the node is taken from local_cpulist instead",
    });
    let numa_node = numa_node.filter(|&n| n < i64::from(MAX_NUMNODES));
    // -1 (no node) is resolved from `local_cpulist` against the topology afterwards
    // (`with_nodes`): devices are read while the topology is.
    let node = numa_node.and_then(|n| u32::try_from(n).ok());
    let interfaces = interfaces(root, &dir).unwrap_or_else(|e| {
        soft(e);
        Vec::new()
    });
    let nvme = match class {
        DeviceClass::Nvme => nvme::read_nvme(root, &dir).unwrap_or_else(|e| {
            soft(e);
            None
        }),
        _ => None,
    };
    warnings.extend(implausible_node);
    Facts { vendor, device, local_cpus, node, interfaces, nvme }
}

/// The most vectors a PCI function can have: the MSI-X table size field is 11 bits (PCI spec).
const MAX_VECTORS: usize = 2048;

/// The device's IRQs, ascending, and whether they are MSI/MSI-X: the names in `msi_irqs/`, else
/// the INTx number in `irq` (0 = none). A missing `irq` file means no INTx.
fn read_irqs(root: &Root, dir: &str) -> Result<(Vec<u32>, bool), SysfsError> {
    let msi_dir = format!("{dir}/msi_irqs");
    let mut irqs = Vec::new();
    for entry in root.list_dir_noting(&msi_dir, |_| true)? {
        let irq = entry.parse::<u32>().map_err(|_| SysfsError::Parse {
            path: root.path(&msi_dir),
            content: entry.clone(),
            expected: "entries named by IRQ number",
        })?;
        irqs.push(irq);
    }
    if !irqs.is_empty() {
        irqs.sort_unstable();
        return Ok((irqs, true));
    }
    match root.read_number_optional::<u32>(format!("{dir}/irq"), "an IRQ number")? {
        Some(irq) if irq > 0 => Ok((vec![irq], false)),
        _ => Ok((Vec::new(), false)),
    }
}

/// The node of a device without one of its own (`numa_node` -1 or absent): the first topology
/// node that contains every CPU of its `local_cpulist`; else `None`.
pub(super) fn node_of_local_cpus(local_cpus: Option<&CpuSet>, topo: &Topology) -> Option<u32> {
    let local = local_cpus.filter(|s| !s.is_empty())?;
    topo.nodes.values().find(|node| local.is_subset(&node.cpus)).map(|node| node.id)
}

/// Network interface names under `dir/net/` and `dir/virtio*/net/`, sorted.
fn interfaces(root: &Root, dir: &str) -> Result<Vec<String>, SysfsError> {
    let mut names = root.list_dir_noting(format!("{dir}/net"), |_| true)?;
    for child in root.list_dir_noting(dir, |n| n.starts_with("virtio"))? {
        if child.starts_with("virtio") {
            names.extend(root.list_dir_noting(format!("{dir}/{child}/net"), |_| true)?);
        }
    }
    names.sort();
    names.dedup();
    Ok(names)
}

/// A `0x`-prefixed (or bare) hexadecimal number file.
fn read_hex(root: &Root, rel: &str, expected: &'static str) -> Result<u32, SysfsError> {
    let text = root.read_string(rel)?;
    let t = text.trim();
    let digits = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")).unwrap_or(t);
    u32::from_str_radix(digits, 16).map_err(|_| SysfsError::Parse { path: root.path(rel), content: text, expected })
}

/// A 16-bit PCI ID file (`0x8086`); absent is `None`.
fn optional_id(root: &Root, rel: &str) -> Result<Option<u16>, SysfsError> {
    match read_hex(root, rel, "a hex 16-bit PCI ID like 0x8086") {
        Ok(v) => u16::try_from(v).map(Some).map_err(|_| SysfsError::Parse {
            path: root.path(rel),
            content: format!("{v:#x}"),
            expected: "a hex 16-bit PCI ID like 0x8086",
        }),
        Err(e) if e.io_kind() == Some(io::ErrorKind::NotFound) => Ok(None),
        Err(e) => Err(e),
    }
}
