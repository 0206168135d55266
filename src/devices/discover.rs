//! Device discovery: the NVMe controllers, NICs and other MSI devices on the PCI bus, their IRQ
//! vectors, each vector's queue role, and the affinity the kernel currently shows for it.
//!
//! Reads only, through a [`Root`]. A broken or vanished device is a warning in
//! [`Discovery::warnings`]; the rest of the machine is still discovered.

mod irq;
pub mod napi_threads;
pub mod net_queues;
pub mod netdev_netlink;
mod nvme;
mod pci;
mod udev;

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::PathBuf;

use serde::{Serialize, Serializer};

use super::{Device, LooseIrq, NO_DEVICE};
use crate::cpuset::CpuSet;
use crate::sysfs::{read_in_parallel, Root, SysfsError};
use crate::topology::Topology;

pub(crate) use udev::udev_properties;

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
    /// `proc/irq` exists but cannot be listed: which IRQs are in use cannot be told.
    #[error("{path}: cannot be listed ({source}); no IRQ's use can be told, so none is placed")]
    ProcIrq { path: PathBuf, source: SysfsError },
    /// The machine has no PCI bus in sysfs (no `sys/bus/pci/devices`): nothing to place.
    #[error("{0} does not exist: no PCI devices to place")]
    NoPciBus(PathBuf),
    /// `/proc/interrupts` exists but cannot be read; names fall back to `sys/kernel/irq`.
    #[error("cannot read IRQ names: {0}")]
    Names(SysfsError),
    /// A line of `/proc/interrupts` could not be read.
    #[error("{path} line {line_no}: {problem}: {line:?}")]
    Interrupts { path: PathBuf, line_no: usize, line: String, problem: &'static str },
    /// A warning read earlier and kept with what it is about (see [`rediscover_devices`]).
    #[error("{0}")]
    Kept(String),
    /// A second bus entry for a device already listed (the kernel links each device once).
    #[error("{path}: the same device as {same_as} ({dir}); left out, a device is planned once")]
    SameDevice { path: PathBuf, same_as: String, dir: String },
    /// A number no real machine shows (a node id beyond the kernel's limit, more vectors than
    /// PCI allows); `instead` says what discovery did.
    #[error("PCI device {bdf}: {path}: {problem}; {instead}")]
    Implausible { bdf: String, path: PathBuf, problem: String, instead: &'static str },
}

/// The error type of [`discover_devices`] (the same enum as the warnings).
pub(crate) type DevicesError = DeviceError;

impl DeviceError {
    /// Whether this says a device went away while it was read: what a hot removal racing with
    /// the scan gives.
    pub(crate) fn is_vanished(&self) -> bool {
        matches!(self, DeviceError::Vanished { .. })
    }
}

fn as_strings<S: Serializer>(warnings: &[DeviceError], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(warnings.iter().map(std::string::ToString::to_string))
}

/// Where the PCI devices are listed, relative to the root.
pub(crate) const PCI_DEVICES: &str = "sys/bus/pci/devices";

/// Discovers every NVMe, NIC and other MSI device under `root`.
///
/// `topo` is used only to derive a node from `local_cpulist` when `numa_node` is -1. Fails only
/// when `ROOT/sys/bus/pci/devices` exists but cannot be listed (its absence, a machine or a
/// capture without PCI, is a warning and no devices); anything wrong with one device or one IRQ
/// becomes a warning and the scan carries on. Devices are read on several threads (see
/// [`read_in_parallel`]); the result is the same as one thread's: warnings about
/// `proc/interrupts` first, then each device's in PCI address order.
pub fn discover_devices(root: &Root, topo: &Topology) -> Result<Discovery, DevicesError> {
    discover_devices_keeping(root, topo).map(|(d, _)| d)
}

/// [`discover_devices`], keeping what was read so that [`rediscover_devices`] can re-read only
/// what events changed.
pub(crate) fn discover_devices_keeping(root: &Root, topo: &Topology) -> Result<(Discovery, DeviceReads), DevicesError> {
    discover_devices_nodeless(root).map(|found| with_nodes(found, topo))
}

/// [`discover_devices_keeping`] without the topology: a device without a `numa_node` of its own
/// (-1) has no node until [`with_nodes`] gives it one. So that the devices can be read while
/// the topology is.
pub(crate) fn discover_devices_nodeless(root: &Root) -> Result<(Discovery, DeviceReads), DevicesError> {
    discover(root, None)
}

/// Gives each device without a node of its own the topology node holding every CPU of its
/// `local_cpulist` (the kernel's `dev_to_node()` is -1 on machines whose firmware does not say,
/// while `local_cpulist` still names the socket's CPUs). Devices with a node keep it.
pub(crate) fn with_nodes(
    (mut discovery, reads): (Discovery, DeviceReads),
    topo: &Topology,
) -> (Discovery, DeviceReads) {
    for device in discovery.devices.iter_mut().filter(|d| d.node.is_none()) {
        device.node = pci::node_of_local_cpus(device.local_cpus.as_ref(), topo);
    }
    (discovery, reads)
}

/// The devices after events `scope` describes, reading again only: the bus listing, the
/// devices `scope` names, appeared, failed to read last time or lost an IRQ, whole; the
/// affinity files of the vectors `scope` names (by IRQ, or by a CPU in their mask) or whose mask
/// could not be read; and the IRQs of no device. The rest is `before`'s. Guarantees the discovery
/// [`discover_devices`] would make when nothing else changed; without `sys/kernel/irq` (names
/// only in the whole `proc/interrupts`) it is that full discovery.
pub(crate) fn rediscover_devices(
    root: &Root,
    topo: &Topology,
    before: DeviceReads,
    scope: &DeviceScope,
) -> Result<(Discovery, DeviceReads), DevicesError> {
    discover(root, Some((before, scope))).map(|found| with_nodes(found, topo))
}

/// What to read again after events (see [`rediscover_devices`]).
#[derive(Debug, Clone, Default)]
pub(crate) struct DeviceScope {
    /// Devices to read whole (PCI addresses); `None`: every device.
    pub devices: Option<BTreeSet<String>>,
    /// IRQs whose affinity files to read again (those irqwise wrote, for one).
    pub irqs: BTreeSet<u32>,
    /// CPUs that came or went: vectors whose mask holds one are read again (the CPU the kernel
    /// picked is always one of the mask's).
    pub cpus: CpuSet,
    /// A reconcile: what can change without an event is checked. The `proc/irq` listing (an IRQ
    /// requested or freed with its event lost: every device is then read whole) and the mask of
    /// every IRQ userspace may move (read whole again when it differs from the kept one). A
    /// kernel-managed IRQ's mask changes only with a CPU or device event, and a driver's hint
    /// only with such an event.
    pub drift: bool,
}

impl DeviceScope {
    /// Whether the affinity files of `v` are to be read again: named, its mask holds a CPU that
    /// came or went, or its mask could not be read last time (its warning is then read afresh).
    fn touches(&self, v: &crate::devices::IrqVector) -> bool {
        self.irqs.contains(&v.irq) || v.current.as_ref().is_none_or(|m| m.intersects(&self.cpus))
    }
}

/// What a device discovery read, kept for [`rediscover_devices`].
#[derive(Debug, Clone, Default)]
pub(crate) struct DeviceReads {
    /// Whether every name came from `sys/kernel/irq` (rediscovery needs it).
    sysfs_names: bool,
    devices: BTreeMap<String, DeviceRead>,
    /// The IRQs of no device, each with its warnings.
    loose: Vec<(LooseIrq, Vec<String>)>,
    /// The numbered entries of `proc/irq` at the last read that listed them, sorted (`None`: not
    /// listed).
    listed: Option<Vec<u32>>,
}

impl DeviceReads {
    /// The PCI address of the kept device with network interface `name`.
    pub(crate) fn bdf_of_interface(&self, name: &str) -> Option<String> {
        self.devices
            .iter()
            .find(|(_, r)| r.device.as_ref().is_some_and(|d| d.interfaces.iter().any(|i| i == name)))
            .map(|(bdf, _)| bdf.clone())
    }

    /// Takes back the devices of the discovery these reads lent them to (unchanged: a pass only
    /// reads them), so that the next rediscovery can keep them.
    pub(crate) fn give_back(&mut self, devices: Vec<Device>) {
        for d in devices {
            if let Some(read) = self.devices.get_mut(&d.bdf).filter(|r| r.lent) {
                read.device = Some(d);
                read.lent = false;
            }
        }
    }

    /// Whether a device is still lent to a pass (not given back): a rediscovery on these reads
    /// is then a full one.
    fn lent(&self) -> bool {
        self.devices.values().any(|r| r.lent)
    }
}

/// One device as read: the device (`None`: nothing to place, or it failed), the warnings about
/// the device itself, then those of each vector by IRQ, and whether reading it failed.
#[derive(Debug, Clone)]
struct DeviceRead {
    device: Option<Device>,
    warnings: Vec<String>,
    vector_warnings: BTreeMap<u32, Vec<String>>,
    failed: bool,
    /// The device went away while it was read (its directory; the address is the read's key):
    /// said apart from the other warnings, so that the daemon can tell a hot removal racing the
    /// read.
    vanished: Option<PathBuf>,
    /// `device` is lent to the discovery that [`assemble`] made (see [`DeviceReads::give_back`]).
    lent: bool,
}

impl DeviceRead {
    /// Splits a fresh read's warnings: those of one IRQ apart, the rest in order.
    fn of(device: Result<Option<Device>, DeviceError>, found: Vec<DeviceError>) -> DeviceRead {
        let mut read = DeviceRead {
            device: None,
            warnings: Vec::new(),
            vector_warnings: BTreeMap::new(),
            failed: false,
            vanished: None,
            lent: false,
        };
        for w in found {
            match &w {
                DeviceError::Irq { irq, .. } => read.vector_warnings.entry(*irq).or_default().push(w.to_string()),
                _ => read.warnings.push(w.to_string()),
            }
        }
        match device {
            Ok(d) => read.device = d,
            Err(DeviceError::Vanished { path, .. }) => {
                read.vanished = Some(path);
                read.failed = true;
            }
            Err(e) => {
                read.warnings.push(e.to_string());
                read.failed = true;
            }
        }
        read
    }

    /// The warnings in a full read's order: the device's, then each vector's in vector order.
    fn all_warnings(&self) -> impl Iterator<Item = &String> {
        let vectors = self.device.iter().flat_map(|d| &d.vectors);
        self.warnings.iter().chain(vectors.filter_map(|v| self.vector_warnings.get(&v.irq)).flatten())
    }

    /// Reads again the affinity files of the vectors `scope` names, and of those whose mask
    /// drifted when it asks for a drift check.
    fn refresh(&mut self, root: &Root, scope: &DeviceScope) {
        let Some(dev) = self.device.as_mut() else { return };
        for v in &mut dev.vectors {
            if scope.touches(v) || (scope.drift && mask_drifted(root, v)) {
                let texts = reread_affinity(root, &dev.bdf, v);
                if texts.is_empty() {
                    self.vector_warnings.remove(&v.irq);
                } else {
                    self.vector_warnings.insert(v.irq, texts);
                }
            }
        }
    }
}

fn discover(root: &Root, again: Option<(DeviceReads, &DeviceScope)>) -> Result<(Discovery, DeviceReads), DevicesError> {
    let mut out = Discovery::default();
    let bdfs = match root.list_dir(PCI_DEVICES) {
        Ok(bdfs) => bdfs,
        Err(e) if e.io_kind() == Some(std::io::ErrorKind::NotFound) => {
            out.warnings.push(DeviceError::NoPciBus(root.path(PCI_DEVICES)));
            return Ok((out, DeviceReads::default()));
        }
        Err(e) => return Err(DeviceError::Bus(e)),
    };
    let bdfs = distinct_devices(root, bdfs, &mut out.warnings);
    let names = irq::IrqNames::read(root, &mut out.warnings);
    let again = again.filter(|(before, _)| before.sysfs_names && !before.lent() && names.sysfs_only());
    // A drift check lists `proc/irq` first: an IRQ requested or freed since makes it a full read.
    let listed_now = match &again {
        Some((before, scope)) if scope.drift => {
            let listed = irq::Requested::read(root, &mut Vec::new()).listed().cloned();
            if listed.is_none() || listed != before.listed {
                return discover(root, None);
            }
            listed
        }
        Some((before, _)) => before.listed.clone(),
        None => None,
    };
    // CPU events alone neither request nor free IRQs: the kept devices' IRQs and the IRQs of no
    // device stand, only their masks are read again.
    let cpus_only = again.as_ref().is_some_and(|(before, scope)| {
        scope.devices.as_ref().is_some_and(BTreeSet::is_empty)
            && bdfs.len() == before.devices.len()
            && bdfs.iter().all(|b| before.devices.get(b).is_some_and(|r| !r.failed))
    });
    let again = match again {
        Some((before, scope)) if cpus_only => {
            let mut reads = before.devices;
            for read in reads.values_mut() {
                read.refresh(root, scope);
            }
            let mut loose = before.loose;
            for (irq, warnings) in &mut loose {
                if scope.touches(&irq.vector) || (scope.drift && mask_drifted(root, &irq.vector)) {
                    *warnings = reread_affinity(root, NO_DEVICE, &mut irq.vector);
                }
            }
            assemble(&mut out, &mut reads, &loose);
            return Ok((out, DeviceReads { sysfs_names: true, devices: reads, loose, listed: listed_now }));
        }
        again => again,
    };
    let requested = irq::Requested::read(root, &mut out.warnings);
    let mut reads: BTreeMap<String, DeviceRead> = BTreeMap::new();
    if let Some((mut before, scope)) = again {
        for bdf in &bdfs {
            let Some(kept) = before.devices.remove(bdf) else { continue };
            let named = scope.devices.as_ref().is_none_or(|d| d.contains(bdf));
            let lost_irq = kept.device.iter().flat_map(|d| &d.vectors).any(|v| !requested.contains(root, v.irq));
            if !named && !kept.failed && !lost_irq {
                let mut kept = kept;
                kept.refresh(root, scope);
                reads.insert(bdf.clone(), kept);
            }
        }
    }
    let whole: Vec<&String> = bdfs.iter().filter(|b| !reads.contains_key(*b)).collect();
    let found = read_in_parallel(&whole, |bdf| {
        let mut warnings = Vec::new();
        let device = pci::read_device(root, bdf, &names, &requested, &mut warnings);
        DeviceRead::of(device, warnings)
    });
    reads.extend(whole.into_iter().cloned().zip(found));
    let mut owned: Vec<u32> =
        reads.values().flat_map(|r| r.device.iter().flat_map(|d| d.vectors.iter().map(|v| v.irq))).collect();
    owned.sort_unstable();
    let loose = loose_irqs(root, &requested, &names, &owned);
    assemble(&mut out, &mut reads, &loose);
    let sysfs_names = names.sysfs_only();
    out.warnings.extend(names.take_warnings());
    let listed = requested.listed().cloned();
    Ok((out, DeviceReads { sysfs_names, devices: reads, loose, listed }))
}

/// The bus entries that are distinct devices, in bus order: an entry that resolves to the same
/// device directory as another (a broken or hostile tree: sysfs links each device once) is left
/// out with a warning. The entry named like the directory is kept, else the first.
fn distinct_devices(root: &Root, bdfs: Vec<String>, warnings: &mut Vec<DeviceError>) -> Vec<String> {
    let dirs: Vec<Option<String>> = bdfs.iter().map(|b| net_queues::pci_device_dir(root, b)).collect();
    let mut kept: BTreeMap<&str, usize> = BTreeMap::new();
    let mut left_out = BTreeSet::new();
    for (i, dir) in dirs.iter().enumerate() {
        let Some(dir) = dir.as_deref() else { continue };
        let own_name = |j: usize| dir.rsplit('/').next() == Some(bdfs[j].as_str());
        match kept.get(dir).copied() {
            None => {
                kept.insert(dir, i);
            }
            Some(first) => {
                let (keep, drop) = if own_name(i) && !own_name(first) { (i, first) } else { (first, i) };
                kept.insert(dir, keep);
                left_out.insert(drop);
                warnings.push(DeviceError::SameDevice {
                    path: root.path(format!("{PCI_DEVICES}/{}", bdfs[drop])),
                    same_as: bdfs[keep].clone(),
                    dir: dir.to_string(),
                });
            }
        }
    }
    bdfs.into_iter().enumerate().filter(|(i, _)| !left_out.contains(i)).map(|(_, b)| b).collect()
}

/// Adds the devices read and the IRQs of no device to `out`, with their warnings: the devices
/// in address order (the bus lists them so, and so does `reads`), then the loose IRQs. The
/// devices are lent, not copied: `reads` gets them back by [`DeviceReads::give_back`].
fn assemble(out: &mut Discovery, reads: &mut BTreeMap<String, DeviceRead>, loose: &[(LooseIrq, Vec<String>)]) {
    for (bdf, read) in reads.iter_mut() {
        out.warnings.extend(read.all_warnings().cloned().map(DeviceError::Kept));
        if let Some(path) = &read.vanished {
            out.warnings.push(DeviceError::Vanished { bdf: bdf.clone(), path: path.clone() });
        }
        if let Some(device) = read.device.take() {
            out.devices.push(device);
            read.lent = true;
        }
    }
    out.warnings.extend(loose.iter().flat_map(|(_, w)| w.iter().cloned().map(DeviceError::Kept)));
    out.loose = loose.iter().map(|(l, _)| l.clone()).collect();
}

/// Whether the mask of `v` may have been moved since it was read: userspace may move it (not
/// kernel-managed) and `smp_affinity_list` now says something else (or cannot be read: the full
/// read says why). One file, where a full read of the vector is three.
fn mask_drifted(root: &Root, v: &crate::devices::IrqVector) -> bool {
    if v.managed {
        return false;
    }
    match root.read_cpulist_optional(format!("proc/irq/{}/smp_affinity_list", v.irq)) {
        Ok(now) => now != v.current,
        Err(_) => true,
    }
}

/// Reads the affinity files of `v` (of device `bdf`) again; the warnings of that read.
fn reread_affinity(root: &Root, bdf: &str, v: &mut crate::devices::IrqVector) -> Vec<String> {
    let mut found = Vec::new();
    irq::read_affinity(root, bdf, v, &mut found);
    found.iter().map(ToString::to_string).collect()
}

/// Every IRQ of `proc/irq` with a handler that is not `owned` (no device's vector; sorted):
/// read like a device vector (a bad file is a warning naming it, kept with the IRQ), plus its
/// `node`. Empty when `proc/irq` cannot be listed.
fn loose_irqs(
    root: &Root,
    requested: &irq::Requested,
    names: &irq::IrqNames,
    owned: &[u32],
) -> Vec<(LooseIrq, Vec<String>)> {
    let irq::Requested::Listed(all) = requested else { return Vec::new() };
    // A sorted list searched, not a hash set built: thousands of IRQs on a big machine. `all`
    // is sorted, so the loose IRQs come in IRQ order.
    let loose: Vec<u32> = all.iter().copied().filter(|i| owned.binary_search(i).is_err()).collect();
    let mut out = Vec::new();
    for irq in loose {
        let actions = names.actions(root, irq).unwrap_or_default();
        if actions.is_empty() {
            continue; // no handler: nothing runs there
        }
        let mut warnings = Vec::new();
        let (vector, _) = irq::read_vector(root, actions, NO_DEVICE, irq, &mut warnings);
        let node = root
            .read_small_optional(format!("proc/irq/{irq}/node"))
            .ok()
            .flatten()
            .and_then(|t| t.trim().parse::<i64>().ok())
            .and_then(|n| u32::try_from(n).ok());
        out.push((LooseIrq { vector, node }, warnings.iter().map(ToString::to_string).collect()));
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
