//! `Topology`: the machine's CPUs and NUMA nodes as the kernel sees them.
//!
//! Plain data, so strategies can be fed a topology built anywhere (sysfs, golden vectors, a
//! synthetic benchmark machine). Masks hold what the kernel's own `topology_*_cpumask()` would
//! return for the CPU, as far as sysfs shows it.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::cpuset::CpuSet;

/// The highest NUMA node count a Linux kernel supports (`MAX_NUMNODES` with `NODES_SHIFT` = 10,
/// include/linux/numa.h): node ids at or above it are not real and never size anything.
pub(crate) const MAX_NUMNODES: u32 = 1024;

/// What the kernel's sibling/cluster masks hold for a CPU that sysfs gives no `topology/` for
/// (offline or never-booted CPUs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OfflineMasks {
    /// x86: the kernel clears them.
    #[default]
    Empty,
    /// arm64 and the generic arch_topology: the CPU itself.
    #[serde(rename = "self")]
    SelfOnly,
}

/// Where a CPU's NUMA node ([`Cpu::node`]) comes from. sysfs shows the node of present CPUs
/// only: a possible CPU that is not present has no `cpuN/` and is in no node's `cpulist`, yet the
/// kernel gave it a node at boot, and `group_cpus_evenly()` spreads it with that node's CPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NodeSource {
    /// The CPU's `cpuN/nodeM` link or a node's `cpulist`.
    Sysfs,
    /// The kernel shows no NUMA information: every CPU is on node 0 (`node` stays `None`).
    NoNuma,
    /// Not present on a machine with one node: the kernel gives every CPU without firmware
    /// affinity a node that is online, and there is one.
    OnlyNode,
    /// Not in sysfs, on x86: `numa_init_array()` (arch/x86/mm/numa.c) gives every CPU id the
    /// nodes online at that point (those with memory) round robin in id order, CPU i the
    /// (i mod n)-th, before `init_cpu_to_node()` overrides it for CPUs whose APIC id firmware
    /// enumerated as present. A CPU not present at boot keeps the round-robin node until it is
    /// hot-added.
    RoundRobinAtBoot,
    /// Not in sysfs and no rule for this architecture: counted on node 0, and predictions that
    /// depend on it are uncertain.
    #[default]
    Unknown,
}

impl NodeSource {
    /// The words `irqwise topology` uses: `sysfs`, `no NUMA`, `only node`, `round robin at boot`,
    /// `unknown`.
    pub fn as_str(self) -> &'static str {
        match self {
            NodeSource::Sysfs => "sysfs",
            NodeSource::NoNuma => "no NUMA",
            NodeSource::OnlyNode => "only node",
            NodeSource::RoundRobinAtBoot => "round robin at boot",
            NodeSource::Unknown => "unknown",
        }
    }
}

/// The node x86 gives CPU `cpu` at boot before firmware names any CPU's node:
/// `numa_init_array()` (arch/x86/mm/numa.c) walks every CPU id from 0 and hands out the nodes
/// online at that point round robin, so CPU i gets the (i mod n)-th of the `n` nodes in id order;
/// `init_cpu_to_node()` then overrides only CPUs with a known APIC id. Read in the 6.1 and 6.12
/// sources (both called from `numa_init()`). `None` without nodes.
pub(crate) fn round_robin_node(cpu: u32, boot_nodes: &[u32]) -> Option<u32> {
    boot_nodes.get(cpu as usize % boot_nodes.len().max(1)).copied()
}

/// One possible CPU. Masks are `None` where sysfs does not say (offline CPUs on most kernels).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Cpu {
    pub id: u32,
    pub present: bool,
    pub online: bool,
    /// The kernel's `cpu_to_node()`; `None` when unknown or without NUMA information.
    pub node: Option<u32>,
    /// Where `node` comes from.
    pub node_source: NodeSource,
    /// CPUs in the same package (`package_cpus_list` / `core_siblings_list`).
    pub package: Option<CpuSet>,
    /// CPUs in the same die (`die_cpus_list`; the package where the kernel has no dies).
    pub die: Option<CpuSet>,
    /// CPUs in the same cluster (`cluster_cpus_list`): shared L2 on x86, a real cluster on arm64.
    pub cluster: Option<CpuSet>,
    /// SMT siblings including the CPU itself (`core_cpus_list` / `thread_siblings_list`).
    pub core: Option<CpuSet>,
    /// CPUs sharing this CPU's last-level cache.
    pub llc: Option<CpuSet>,
}

impl Cpu {
    /// A CPU with no topology information yet.
    pub fn bare(id: u32) -> Cpu {
        Cpu {
            id,
            present: false,
            online: false,
            node: None,
            node_source: NodeSource::Unknown,
            package: None,
            die: None,
            cluster: None,
            core: None,
            llc: None,
        }
    }
}

/// A NUMA node. `cpus` may be empty (memory-only, CXL, HBM nodes).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NumaNode {
    pub id: u32,
    /// Possible CPUs whose `node` is this node.
    pub cpus: CpuSet,
    /// Distance row from this node, one entry per node of [`Topology::nodes`] in ascending id.
    pub distance: Vec<u32>,
}

/// The machine. Invariants: `cpus` has one entry per CPU of `possible`; `online ⊆ present ⊆
/// possible`; every `Cpu::node` names a key of `nodes`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct Topology {
    /// `proc/sys/kernel/osrelease`, e.g. `6.1.0-57-amd64`.
    pub kernel: Option<String>,
    /// `proc/sys/kernel/arch`, e.g. `x86_64`, `aarch64`.
    pub arch: Option<String>,
    pub possible: CpuSet,
    pub present: CpuSet,
    pub online: CpuSet,
    pub isolated: CpuSet,
    pub nohz_full: CpuSet,
    pub cpus: BTreeMap<u32, Cpu>,
    /// Empty when the kernel shows no NUMA information (no `node/` directory).
    pub nodes: BTreeMap<u32, NumaNode>,
    pub offline_masks: OfflineMasks,
}

impl Topology {
    /// Whether the machine has node `n` (without NUMA information only node 0, standing for
    /// every CPU).
    pub(crate) fn has_node(&self, n: u32) -> bool {
        if self.nodes.is_empty() {
            n == 0
        } else {
            self.nodes.contains_key(&n)
        }
    }

    /// `nr_node_ids`: highest node id + 1 (1 without NUMA information).
    pub fn nr_node_ids(&self) -> u32 {
        self.nodes.keys().next_back().map_or(1, |&n| n + 1)
    }

    /// The kernel's `cpu_to_node()`: `None` when unknown.
    pub fn cpu_node(&self, cpu: u32) -> Option<u32> {
        self.cpus.get(&cpu).and_then(|c| c.node)
    }

    /// Possible CPUs whose node irqwise cannot know: no node on a machine with several nodes
    /// (with one node or none, every CPU is on node 0 or the only one).
    pub fn unknown_node_cpus(&self) -> CpuSet {
        if self.nodes.len() < 2 {
            return CpuSet::new();
        }
        // One walk of the CPUs, not a lookup per possible CPU: this runs for every NVMe device.
        let known: CpuSet = self.cpus.iter().filter(|(_, c)| c.node.is_some()).map(|(&id, _)| id).collect();
        self.possible.difference(&known)
    }

    /// Distance from node `from` to node `to` (SLIT row `from`), `None` when unknown.
    pub fn distance(&self, from: u32, to: u32) -> Option<u32> {
        let idx = self.nodes.keys().position(|&n| n == to)?;
        self.nodes.get(&from)?.distance.get(idx).copied()
    }

    /// The kernel's `topology_sibling_cpumask(cpu)`.
    pub fn sibling_mask(&self, cpu: u32) -> CpuSet {
        self.kernel_mask(cpu, |c| c.core.as_ref())
    }

    /// The kernel's `topology_cluster_cpumask(cpu)`.
    pub fn cluster_mask(&self, cpu: u32) -> CpuSet {
        self.kernel_mask(cpu, |c| c.cluster.as_ref())
    }

    fn kernel_mask(&self, cpu: u32, pick: impl Fn(&Cpu) -> Option<&CpuSet>) -> CpuSet {
        match self.cpus.get(&cpu) {
            Some(c) => match pick(c) {
                Some(mask) => mask.clone(),
                // An online CPU whose kernel lacks the file: the level is just the CPU.
                None if c.online => CpuSet::single(cpu),
                None => match self.offline_masks {
                    OfflineMasks::Empty => CpuSet::new(),
                    OfflineMasks::SelfOnly => CpuSet::single(cpu),
                },
            },
            None => CpuSet::new(),
        }
    }

    /// CPUs usable for device interrupts: online and neither isolated nor nohz_full.
    pub fn housekeeping(&self) -> CpuSet {
        let mut s = self.online.clone();
        s.remove_all(&self.isolated);
        s.remove_all(&self.nohz_full);
        s
    }
}
