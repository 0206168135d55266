//! NUMA-hop CPU orders from a node: `cpumask_local_spread()` (v6.3+ and legacy),
//! `for_each_numa_hop_mask()`, and irqwise's `cores-first` (spec §4).

use crate::cpuset::CpuSet;
use crate::topology::Topology;

/// Which order to list CPUs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SpreadOrder {
    /// `cpumask_local_spread(i, node)` for i = 0..online-1 (v6.3+).
    Kernel,
    /// `for_each_numa_hop_mask(node)` concatenated; empty for CPU-less nodes.
    Hops,
    /// pre-6.3 `cpumask_local_spread`: local node's online CPUs, then all others ascending.
    Legacy,
    /// The kernel's hops, but within each hop one thread of every physical core first.
    CoresFirst,
}

/// CPUs first reached at one NUMA distance level.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hop {
    pub level: usize,
    pub distance: u32,
    pub new_cpus: CpuSet,
}

/// The hop levels from `node` (`None` = NUMA_NO_NODE): empty for NUMA_NO_NODE and CPU-less nodes.
pub fn numa_hops(topo: &Topology, node: Option<u32>) -> Vec<Hop> {
    let _ = (topo, node);
    todo!("numa hops")
}

/// `numa_nearest_node(node, N_CPU)`: the node itself if it has online CPUs.
pub fn nearest_cpu_node(topo: &Topology, node: u32) -> Option<u32> {
    let _ = (topo, node);
    todo!("nearest node")
}

/// Online CPUs in `order` from `node` (`None` = NUMA_NO_NODE).
pub fn spread_order(topo: &Topology, node: Option<u32>, order: SpreadOrder) -> Vec<u32> {
    let _ = (topo, node, order);
    todo!("spread order")
}
