//! A sample of the machine: everything one pass plans from, read in one place
//! ([`reader::SampleReader`]), so that planning ([`crate::plan::from_sample::plan_sample`]) is a
//! pure function of the sample and of what earlier passes learned.
//!
//! The sample has parts, each read again only when something can have changed it (the daemon's
//! incremental passes; the command line reads them all):
//! - **topology**: the CPUs, their masks and the nodes. Stale after a CPU event (the CPUs it names
//!   and their neighbours), or when everything is (start, reload, reconcile, lost events).
//! - **devices**: each PCI device with its IRQ vectors and their masks and hints, and the IRQs of
//!   no device. Stale per device after its device or link event, per IRQ after a write or a CPU
//!   event touching its mask.
//! - **every pass**: the isolation sources, each device's udev properties and each single-
//!   interface NIC's transmit queues, each NIC interface's index and threaded-NAPI switch, the
//!   NAPI threads of threaded interfaces, what the kernel's `netdev` netlink family says of
//!   queues and NAPI instances (this machine's root only), and the kernel's default affinity
//!   (with `on_drift = "respect"`). These are small, and udevd, an operator or `threaded`
//!   switched on may change them without an event.
//!
//! Pure: this module holds data; [`reader`] reads it, [`kernel_release`] says which kernel's
//! rules it is planned with.

pub mod kernel_release;
pub mod reader;
mod refusals;

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::config::Config;
use crate::cpuset::CpuSet;
use crate::devices::napi::{InterfaceState, NapiThread, NetdevView};
use crate::devices::net_queues::NetQueues;
use crate::devices::{Device, LooseIrq};
use crate::kernel::facts::KernelFacts;
use crate::kernel::{GroupRules, KernelVersion};
use crate::topology::{Isolation, Topology};

/// Everything a pass needs from the machine and its configuration. Invariant: `devices` sorted
/// by PCI address, one entry per address; `udev` and `tx_queues` are keyed by those addresses.
#[derive(Debug, Clone)]
pub struct Sample {
    /// The configuration in force (its own warnings were said when it was loaded).
    pub config: Arc<Config>,
    /// The topology as read: isolation sources are applied by planning, not here.
    pub topology: Topology,
    /// Every isolation source found, with where it came from.
    pub isolation: Isolation,
    /// The running kernel's `group_cpus_evenly()` rules (see [`kernel_release`]).
    pub group_rules: GroupRules,
    /// What the running kernel does, each fact with its source (its BTF, its NIC drivers'
    /// modules, else its version): probed once, and again when the release or the NIC drivers
    /// present change (`crate::probe::discover`).
    pub kernel_facts: Arc<KernelFacts>,
    pub devices: Vec<Device>,
    /// udev properties of each device (and of its network interfaces); empty where udevd does
    /// not run.
    pub udev: BTreeMap<String, BTreeMap<String, String>>,
    /// The transmit queues of each NIC with exactly one network interface: `Ok(None)` when it
    /// has no queue directory, `Err` with what was wrong when they could not be read.
    pub tx_queues: BTreeMap<String, Result<Option<NetQueues>, String>>,
    /// IRQs with a handler that belong to no device, by IRQ number.
    pub loose: Vec<LooseIrq>,
    /// What the kernel's `netdev` netlink family says of queues, NAPI instances, their IRQs and
    /// threads (read on this machine's root only).
    pub netdev: NetdevView,
    /// Each NIC interface's index and threaded-NAPI switch, by name.
    pub interfaces: BTreeMap<String, InterfaceState>,
    /// The NAPI threads of the interfaces that run threaded NAPI.
    pub napi_threads: Vec<NapiThread>,
    /// IRQs that more than one device lists (a broken or hostile tree: an IRQ has one owner),
    /// with those devices' addresses: planning leaves them alone.
    pub shared_irqs: BTreeMap<u32, Vec<String>>,
    /// `proc/irq/default_smp_affinity`, read only with `on_drift = "respect"` (what the kernel
    /// gives an IRQ it resets).
    pub default_affinity: Option<CpuSet>,
    pub warnings: ReadWarnings,
}

/// What reading the sample found wrong, by part, each in file order: planning puts them into
/// the plan's warnings in the order the parts were read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadWarnings {
    pub topology: Vec<String>,
    pub isolation: Vec<String>,
    /// The kernel release could not be read as a version (see [`kernel_release`]).
    pub kernel: Option<String>,
    /// The kernel's BTF or a NIC driver's module is there but could not be read (each naming
    /// the file): those facts fall back to the version.
    pub kernel_facts: Vec<String>,
    pub devices: Vec<String>,
}

/// The IRQs more than one of `devices` lists, each with those devices' addresses in order.
pub fn shared_irqs(devices: &[Device]) -> BTreeMap<u32, Vec<String>> {
    // (IRQ, device index) sorted, then runs of one IRQ: no map entry nor name copied for the
    // thousands of IRQs a big machine's devices own alone.
    let mut listed: Vec<(u32, usize)> =
        devices.iter().enumerate().flat_map(|(i, d)| d.vectors.iter().map(move |v| (v.irq, i))).collect();
    listed.sort_unstable();
    listed.dedup();
    let mut shared = BTreeMap::new();
    for run in listed.chunk_by(|a, b| a.0 == b.0).filter(|run| run.len() > 1) {
        shared.insert(run[0].0, run.iter().map(|&(_, i)| devices[i].bdf.clone()).collect());
    }
    shared
}

impl Sample {
    /// A sample built in memory: `topology` and `devices` as given, no isolation source beyond
    /// the topology's own lists, no udev properties or transmit queues, the grouping rules of
    /// `topology.kernel` (else of [`kernel_release::FALLBACK_KERNEL`]), kernel facts from that
    /// version alone (nothing probed).
    pub fn in_memory(config: Config, topology: Topology, devices: Vec<Device>) -> Sample {
        let group_rules = kernel_release::group_rules(&topology);
        let version = topology.kernel.as_deref().and_then(|k| KernelVersion::parse(k).ok());
        Sample {
            config: Arc::new(config),
            topology,
            isolation: Isolation::default(),
            group_rules,
            kernel_facts: Arc::new(KernelFacts::from_version(version)),
            devices,
            udev: BTreeMap::new(),
            tx_queues: BTreeMap::new(),
            loose: Vec::new(),
            shared_irqs: BTreeMap::new(),
            netdev: NetdevView::NotThisMachine,
            interfaces: BTreeMap::new(),
            napi_threads: Vec::new(),
            default_affinity: None,
            warnings: ReadWarnings::default(),
        }
    }
}
