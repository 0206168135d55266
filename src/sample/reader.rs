//! Reading a [`Sample`] under a [`Root`], and keeping its parts between reads so that the next
//! read re-reads only what was made stale (the daemon says what, from its events).
//!
//! Invariant (the property test of `tests/incremental.rs`): when only what was marked stale
//! changed, a read on the kept parts plans and writes what a fresh read would. A mask another
//! owner edits without an event is seen by the next read that re-reads that IRQ: the
//! reconcile timer's at the latest.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use super::kernel_release::{plan_rules, OSRELEASE};
use super::refusals::Refused;
use super::{ReadWarnings, Sample};
use crate::config::{Config, OnDrift};
use crate::cpuset::CpuSet;
use crate::devices::discover::napi_threads::{read_interface, read_napi_threads};
use crate::devices::discover::net_queues::read_net_queues;
use crate::devices::discover::netdev_netlink::{read_captured_netdev, read_netdev};
use crate::devices::discover::{
    discover_devices_keeping, discover_devices_nodeless, rediscover_devices, udev_properties, with_nodes, DeviceReads,
    DeviceScope, DevicesError, Discovery,
};
use crate::devices::napi::{InterfaceState, NetdevView};
use crate::devices::{Device, DeviceClass};
use crate::kernel::facts::KernelFacts;
use crate::probe::discover::read_kernel_facts;
use crate::sysfs::{read_in_parallel, Root};
use crate::topology::discover::isolation::read_isolation_configured;
use crate::topology::discover::kubelet::KubeletMemory;
use crate::topology::discover::reread_topology;
use crate::topology::discover::{read_present_online, read_topology_keeping};
use crate::topology::discover::{TopologyError, TopologyReads, CPU_DIR};
use crate::topology::Topology;

/// A sample could not be read at all.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// No topology could be read (and none was read before).
    #[error(transparent)]
    Topology(#[from] TopologyError),
    /// The PCI bus exists but cannot be listed.
    #[error(transparent)]
    Devices(#[from] DevicesError),
    /// A top directory of the root an earlier read found (`sys`, `proc`) is gone: the root was
    /// unmounted or removed under the daemon, and nothing read from it now means anything.
    #[error("{}: gone since the last read (the root was unmounted or removed); nothing is planned until it is back", .0.display())]
    RootGone(std::path::PathBuf),
}

/// The top directories of a root whose disappearance makes a read fail rather than find an
/// empty machine.
const ROOT_TOPS: [&str; 2] = ["sys", "proc"];

/// Reads every part of a fresh sample under `root`, each problem reported at once: the command
/// line's read.
pub fn read_sample(root: &Root, config: Arc<Config>) -> Result<Sample, ReadError> {
    SampleReader::reporting_at_once().read(root, config)
}

/// The parts of the last sample read, and what of them is stale.
#[derive(Debug)]
pub(crate) struct SampleReader {
    /// Hold problems a race can explain until a second read confirms them (the daemon's
    /// reader); `false` reports them at once.
    hold: bool,
    /// The last topology read, its warnings and its reads; `None` before the first.
    topology: Option<(Topology, Vec<String>, TopologyReads)>,
    devices: Option<DeviceReads>,
    stale: Stale,
    /// The CPUs that came or went before the last read (see [`SampleReader::hotplugged`]).
    hotplugged: CpuSet,
    refused: Refused,
    /// Which of [`ROOT_TOPS`] the last read found.
    tops_seen: [bool; 2],
    /// The kubelet's checkpoint as last read well (`kubelet_cpu_manager_state`).
    kubelet: KubeletMemory,
    /// The kernel's facts as last probed; `None` before the first read.
    kernel_facts: Option<KeptFacts>,
}

/// Kernel facts, with the release and NIC drivers they were probed for and what their probes
/// could not read.
#[derive(Debug)]
struct KeptFacts {
    release: Option<String>,
    drivers: BTreeSet<String>,
    facts: Arc<KernelFacts>,
    warnings: Vec<String>,
}

/// What was asked to be read again since the last successful read.
#[derive(Debug, Default)]
struct Stale {
    /// Everything (the start, a reconcile, lost events, ...).
    everything: bool,
    cpus: CpuSet,
    /// Devices by PCI address.
    devices: BTreeSet<String>,
    /// Every device.
    all_devices: bool,
    /// IRQs whose masks to read again (the last pass wrote them, or tried to).
    irqs: BTreeSet<u32>,
    /// A reconcile: what can change without an event is checked (see [`SampleReader::stale_drift`]).
    drift: bool,
}

impl SampleReader {
    /// The daemon's reader: everything is stale before the first read, and problems a race with
    /// CPU or device hotplug can explain are held until a second read in a row gives them too.
    pub fn holding() -> SampleReader {
        SampleReader { hold: true, ..SampleReader::reporting_at_once() }
    }

    /// A reader that reports every problem at the read that finds it.
    pub(crate) fn reporting_at_once() -> SampleReader {
        SampleReader {
            hold: false,
            topology: None,
            devices: None,
            stale: Stale { everything: true, ..Stale::default() },
            hotplugged: CpuSet::new(),
            refused: Refused::default(),
            tops_seen: [false; 2],
            kubelet: KubeletMemory::default(),
            kernel_facts: None,
        }
    }

    /// The next read reads everything.
    pub(crate) fn stale_everything(&mut self) {
        self.stale.everything = true;
    }

    /// A reconcile, the safety net for lost events: the next read checks what can change without
    /// an event reaching the daemon, and reads again what a change there covers. The global
    /// `online` and `present` CPU lists (a CPU that differs from the kept topology is read again,
    /// as after its event), the PCI bus and `proc/irq` listings (a device or IRQ that came or went:
    /// see [`DeviceScope::drift`]) and the mask of every IRQ userspace may move. The isolation
    /// sources, transmit queues and interfaces are read by every pass anyway.
    pub(crate) fn stale_drift(&mut self) {
        self.stale.drift = true;
    }

    /// CPUs `cpus` came or went: their directories (and their neighbours') are read again, and
    /// so are the masks that hold them. Refusals held so far are forgotten: the event explains
    /// them.
    pub(crate) fn stale_cpus(&mut self, cpus: &CpuSet) {
        self.refused.held.clear();
        self.stale.cpus.extend_with(cpus);
    }

    /// Device `bdf` (a PCI address) is read again, whole.
    pub(crate) fn stale_device(&mut self, bdf: String) {
        self.stale.devices.insert(bdf);
    }

    /// Every device is read again, whole.
    pub(crate) fn stale_all_devices(&mut self) {
        self.stale.all_devices = true;
    }

    /// The masks of `irqs` (written, or tried, by the last pass) are read again.
    pub(crate) fn stale_irqs(&mut self, irqs: impl IntoIterator<Item = u32>) {
        self.stale.irqs.extend(irqs);
    }

    /// The topology of the last read, if any.
    pub(crate) fn topology(&self) -> Option<&crate::topology::Topology> {
        self.topology.as_ref().map(|(t, _, _)| t)
    }

    /// The PCI address of the kept device with network interface `name`.
    pub(crate) fn device_of_interface(&self, name: &str) -> Option<String> {
        self.devices.as_ref().and_then(|d| d.bdf_of_interface(name))
    }

    /// The CPUs that were stale at the last read: an IRQ placed on one of them may have been
    /// moved by the kernel (its CPU-offline fallback), even when the CPU is back by now.
    pub(crate) fn hotplugged(&self) -> &CpuSet {
        &self.hotplugged
    }

    /// When the follow-up read of held problems is due; `None` when none is.
    pub fn recheck_due(&self) -> Option<std::time::Instant> {
        self.refused.recheck_at
    }

    /// Takes back the devices of the last sample (it lends rather than copies them); devices
    /// not given back are read again, whole, by the next read.
    pub(crate) fn give_back(&mut self, devices: Vec<Device>) {
        if let Some(reads) = self.devices.as_mut() {
            reads.give_back(devices);
        }
    }

    /// A sample: the stale parts read again, the rest as kept, the every-pass parts read. When
    /// the topology cannot be read again, the last one that could, with a warning saying so.
    /// On success what was stale is current; on failure (or on the last topology, or while a
    /// recheck of held problems is due) everything stays stale.
    pub fn read(&mut self, root: &Root, config: Arc<Config>) -> Result<Sample, ReadError> {
        let tops = ROOT_TOPS.map(|top| root.is_dir(top));
        if let Some(i) = (0..ROOT_TOPS.len()).find(|&i| self.tops_seen[i] && !tops[i]) {
            self.stale.everything = true;
            return Err(ReadError::RootGone(root.path(ROOT_TOPS[i])));
        }
        self.tops_seen = tops;
        if self.stale.drift && !self.stale.everything {
            self.check_cpu_lists(root);
        }
        self.hotplugged = self.stale.cpus.clone();
        let mut on_last = false;
        let result = self.read_stale(root, &mut on_last);
        if result.is_ok() && !on_last && self.refused.recheck_at.is_none() {
            self.stale = Stale::default();
        } else {
            self.stale.everything = true;
        }
        let (topology, topology_warnings, discovery) = result?;
        Ok(read_every_pass(
            root,
            config,
            topology,
            topology_warnings,
            discovery,
            &mut self.kubelet,
            &mut self.kernel_facts,
        ))
    }

    /// A drift check of the global CPU lists against the kept topology: the CPUs that differ are
    /// stale (as their events would have made them); a list that cannot be read makes everything
    /// stale.
    fn check_cpu_lists(&mut self, root: &Root) {
        let Some((topology, _, _)) = &self.topology else { return };
        match read_present_online(root) {
            Some((present, online)) => {
                let mut changed = online.difference(&topology.online);
                changed.extend_with(&topology.online.difference(&online));
                changed.extend_with(&present.difference(&topology.present));
                changed.extend_with(&topology.present.difference(&present));
                if !changed.is_empty() {
                    self.stale_cpus(&changed);
                }
            }
            _ => self.stale.everything = true,
        }
    }

    /// The topology and devices, read again where stale.
    fn read_stale(&mut self, root: &Root, on_last: &mut bool) -> Result<(Topology, Vec<String>, Discovery), ReadError> {
        let stale = &self.stale;
        // Devices read whole are read while the topology is (their nodes resolved after): the
        // two are a full pass's reading, each leaving a reader thread idle at times.
        let whole_devices = self.devices.is_none() || stale.everything;
        let (reread, early_devices) = std::thread::scope(|scope| {
            let devices = whole_devices.then(|| {
                std::thread::Builder::new()
                    .name("irqwise-read".into())
                    .spawn_scoped(scope, || discover_devices_nodeless(root))
            });
            let reread = match &mut self.topology {
                Some((topology, _, reads)) if !stale.everything && !stale.cpus.is_empty() => {
                    // Taken, not copied: a failure reads everything next time anyway.
                    Some(reread_topology(root, topology, std::mem::take(reads), &stale.cpus))
                }
                Some(_) if !stale.everything => None,
                _ => Some(read_topology_keeping(root)),
            };
            let devices = devices.map(|spawned| match spawned {
                // A reader only panics on a bug: pass that panic on unchanged.
                Ok(thread) => thread.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
                // No thread to be had: read them here, after the topology.
                Err(_) => discover_devices_nodeless(root),
            });
            (reread, devices)
        });
        let mut last_warning = None;
        match reread {
            Some(Ok((topology, warnings, reads))) => {
                let warnings = if self.hold {
                    self.refused.sort(warnings)
                } else {
                    warnings.iter().map(ToString::to_string).collect()
                };
                self.topology = Some((topology, warnings, reads));
            }
            Some(Err(e)) if self.topology.is_some() => {
                *on_last = true;
                last_warning = Some(format!("cannot read the topology ({e}); planning with the last one read"));
            }
            Some(Err(e)) => return Err(e.into()),
            None => {}
        }
        let Some((topology, kept_warnings, _)) = &self.topology else {
            let path = root.path(CPU_DIR).display().to_string();
            return Err(TopologyError::Inconsistent { path, problem: "never read".into() }.into());
        };
        let warnings = match last_warning {
            Some(w) => vec![w],
            None => kept_warnings.clone(),
        };
        let devices = match (early_devices, self.devices.take(), stale.everything || *on_last) {
            (Some(read), _, _) => read.map(|found| with_nodes(found, topology)),
            (None, Some(before), false) => {
                let scope = DeviceScope {
                    devices: (!stale.all_devices).then(|| stale.devices.clone()),
                    irqs: stale.irqs.clone(),
                    cpus: stale.cpus.clone(),
                    drift: stale.drift,
                };
                rediscover_devices(root, topology, before, &scope)
            }
            (None, _, _) => discover_devices_keeping(root, topology),
        };
        let (mut discovery, reads) = devices?;
        self.devices = Some(reads);
        if self.hold {
            // A device removed while it was read: everything is read again shortly, when its
            // removal is complete; only a second read in a row that sees it half-gone warns.
            self.refused.sort_devices(&mut discovery.warnings);
        }
        Ok((topology.clone(), warnings, discovery))
    }
}

/// The interfaces whose NAPI threads a pass reads: those whose `threaded` switch is on, and
/// those the kernel reports a NAPI thread for (6.17 lets `napi-set` make one instance threaded
/// while the interface's switch stays off).
fn threaded_interfaces(
    interfaces: &BTreeMap<String, InterfaceState>,
    report: Option<&crate::devices::napi::NetdevReport>,
) -> BTreeSet<String> {
    let with_thread: BTreeSet<u32> =
        report.map(|r| r.napis.iter().filter(|n| n.pid.is_some()).map(|n| n.ifindex).collect()).unwrap_or_default();
    interfaces
        .iter()
        .filter(|(_, s)| s.threaded == Some(true) || s.ifindex.is_some_and(|i| with_thread.contains(&i)))
        .map(|(n, _)| n.clone())
        .collect()
}

/// The kernel's facts for `topology`'s release and the NIC drivers of `devices`: those `kept`
/// when they were probed for the same release and every one of these drivers (the kernel's BTF
/// does not change while it runs; a module tree rarely does), else probed now and kept.
fn kernel_facts(
    root: &Root,
    topology: &Topology,
    devices: &[Device],
    kept: &mut Option<KeptFacts>,
) -> (Arc<KernelFacts>, Vec<String>) {
    let drivers: BTreeSet<String> =
        devices.iter().filter(|d| d.class == DeviceClass::Nic).filter_map(|d| d.driver.clone()).collect();
    match kept {
        Some(k) if k.release == topology.kernel && drivers.is_subset(&k.drivers) => {
            (Arc::clone(&k.facts), k.warnings.clone())
        }
        _ => {
            let (facts, warnings) = read_kernel_facts(root, topology.kernel.as_deref(), &drivers);
            let facts = Arc::new(facts);
            let release = topology.kernel.clone();
            *kept = Some(KeptFacts { release, drivers, facts: Arc::clone(&facts), warnings: warnings.clone() });
            (facts, warnings)
        }
    }
}

/// The parts every read reads afresh (isolation, udev properties, transmit queues, the default
/// affinity, the kernel's rules), around the topology and devices just read; `kubelet` is the
/// kubelet checkpoint's last good reading, which a damaged file keeps in force; the kernel's
/// facts as `kept` where they still hold ([`kernel_facts`]).
fn read_every_pass(
    root: &Root,
    config: Arc<Config>,
    topology: Topology,
    topology_warnings: Vec<String>,
    discovery: Discovery,
    kubelet: &mut KubeletMemory,
    kept: &mut Option<KeptFacts>,
) -> Sample {
    let kubelet_state = config.global.kubelet_cpu_manager_state.as_deref();
    let (isolation, isolation_warnings) = read_isolation_configured(root, &topology, kubelet_state, kubelet);
    let (group_rules, kernel_warning) = plan_rules(&topology, &root.path(OSRELEASE));
    let (kernel_facts, probe_warnings) = kernel_facts(root, &topology, &discovery.devices, kept);
    let udev = discovery.devices.iter().map(|d| (d.bdf.clone(), udev_properties(root, d))).collect();
    // Each NIC's transmit queues are a listing and two files per queue: on several threads.
    let one_interface: Vec<(&String, &String)> = discovery
        .devices
        .iter()
        .filter(|d| d.class == DeviceClass::Nic)
        .filter_map(|d| match d.interfaces.as_slice() {
            [one] => Some((&d.bdf, one)),
            _ => None,
        })
        .collect();
    let tx_queues = read_in_parallel(&one_interface, |(bdf, one)| ((*bdf).clone(), read_net_queues(root, bdf, one)))
        .into_iter()
        .collect::<BTreeMap<_, _>>();
    let interfaces: BTreeMap<String, InterfaceState> = discovery
        .devices
        .iter()
        .filter(|d| d.class == DeviceClass::Nic)
        .flat_map(|d| &d.interfaces)
        .map(|name| (name.clone(), read_interface(root, name)))
        .collect();
    // The netlink answers are this machine's kernel's: another root gets those its snapshot kept.
    let netdev = if interfaces.is_empty() {
        // No NIC: nothing to ask the kernel about (no socket on an NVMe-only machine's passes).
        NetdevView::NotThisMachine
    } else if root.is_this_machine() {
        read_netdev()
    } else {
        read_captured_netdev(root)
    };
    let napi_threads = read_napi_threads(root, &threaded_interfaces(&interfaces, netdev.report()));
    let default_affinity = (config.global.on_drift == OnDrift::Respect)
        .then(|| root.read_small_optional("proc/irq/default_smp_affinity").ok().flatten())
        .flatten()
        .and_then(|t| CpuSet::parse_mask(t.trim()).ok());
    let shared_irqs = super::shared_irqs(&discovery.devices);
    let mut devices: Vec<String> = discovery.warnings.iter().map(ToString::to_string).collect();
    devices.extend(shared_irqs.iter().map(|(irq, owners)| {
        format!(
            "IRQ {irq} is listed by {} PCI devices ({}): an IRQ has one owner, so it is left alone",
            owners.len(),
            owners.join(", ")
        )
    }));
    let warnings = ReadWarnings {
        topology: topology_warnings,
        isolation: isolation_warnings.iter().map(ToString::to_string).collect(),
        kernel: kernel_warning,
        kernel_facts: probe_warnings,
        devices,
    };
    Sample {
        config,
        topology,
        isolation,
        group_rules,
        kernel_facts,
        devices: discovery.devices,
        udev,
        tx_queues,
        loose: discovery.loose,
        shared_irqs,
        netdev,
        interfaces,
        napi_threads,
        default_affinity,
        warnings,
    }
}

#[cfg(test)]
impl SampleReader {
    /// Nothing stale, as after a successful read.
    pub(crate) fn forget_stale(&mut self) {
        self.stale = Stale::default();
    }

    /// Whether a drift check is pending.
    pub(crate) fn drift_pending(&self) -> bool {
        self.stale.drift
    }

    /// What is stale: everything, the CPUs, the devices, every device.
    pub(crate) fn stale_summary(&self) -> (bool, CpuSet, BTreeSet<String>, bool) {
        let s = &self.stale;
        (s.everything, s.cpus.clone(), s.devices.clone(), s.all_devices)
    }
}
