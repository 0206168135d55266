//! `SyntheticMachine`: a regular x86-style machine built in memory, for tests and benchmarks.
//!
//! CPU numbering follows Linux on x86: thread `t` of global core `c` is CPU
//! `c + t * total_cores` (siblings N / N+cores). Cores are numbered node by node; clusters are
//! runs of `cores_per_cluster` consecutive cores inside a node. Every CPU is possible, present
//! and online; packages, dies and LLCs are the nodes.

use super::{Cpu, NumaNode, OfflineMasks, Topology};
use crate::cpuset::CpuSet;

/// How far nodes are from each other.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SyntheticDistance {
    /// 10 local, 20 to every other node.
    #[default]
    Flat,
    /// Nodes on a ring: `10 + 10 * hops` with hops the shorter way round, capped at 254.
    Ring,
}

/// The shape of a synthetic machine. Zero counts are treated as 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SyntheticMachine {
    pub nodes: u32,
    pub cores_per_node: u32,
    pub threads_per_core: u32,
    /// Cores sharing one cluster (an L2 on x86 E-cores, a cluster on arm64); 1 = cluster is
    /// the core's SMT siblings.
    pub cores_per_cluster: u32,
    pub distance: SyntheticDistance,
}

impl SyntheticMachine {
    /// `nodes × cores_per_node × threads_per_core`, one core per cluster, flat distances.
    pub fn new(nodes: u32, cores_per_node: u32, threads_per_core: u32) -> SyntheticMachine {
        SyntheticMachine {
            nodes,
            cores_per_node,
            threads_per_core,
            cores_per_cluster: 1,
            distance: SyntheticDistance::Flat,
        }
    }

    /// Builds the topology; every CPU has all its masks set, every node its distance row.
    ///
    /// # Panics
    /// When the machine has more than [`crate::cpuset::MAX_CPUS`] CPUs (a programming error:
    /// the shape is chosen by the test or benchmark, never read from the system).
    pub fn build(&self) -> Topology {
        let (nodes, cpn, tpc) = (self.nodes.max(1), self.cores_per_node.max(1), self.threads_per_core.max(1));
        let cpc = self.cores_per_cluster.max(1);
        let total_cores = nodes * cpn;
        let threads_of = |cores: std::ops::Range<u32>| -> CpuSet {
            cores.flat_map(|c| (0..tpc).map(move |t| c + t * total_cores)).collect()
        };
        let mut topo = Topology {
            kernel: None,
            arch: Some("x86_64".into()),
            offline_masks: OfflineMasks::Empty,
            ..Default::default()
        };
        for node in 0..nodes {
            let first = node * cpn;
            let node_cpus = threads_of(first..first + cpn);
            for local in 0..cpn {
                let core = first + local;
                let cluster_start = first + local / cpc * cpc;
                let cluster = threads_of(cluster_start..(cluster_start + cpc).min(first + cpn));
                let siblings = threads_of(core..core + 1);
                for cpu in &siblings {
                    topo.cpus.insert(
                        cpu,
                        Cpu {
                            id: cpu,
                            present: true,
                            online: true,
                            node: Some(node),
                            node_source: super::NodeSource::Sysfs,
                            package: Some(node_cpus.clone()),
                            die: Some(node_cpus.clone()),
                            cluster: Some(cluster.clone()),
                            core: Some(siblings.clone()),
                            llc: Some(node_cpus.clone()),
                        },
                    );
                }
            }
            let distance = (0..nodes).map(|to| self.node_distance(nodes, node, to)).collect();
            topo.nodes.insert(node, NumaNode { id: node, cpus: node_cpus, distance });
        }
        topo.possible = topo.cpus.keys().copied().collect();
        topo.present = topo.possible.clone();
        topo.online = topo.possible.clone();
        topo
    }

    /// Distance between nodes `a` and `b` of a machine of `nodes` nodes.
    fn node_distance(&self, nodes: u32, a: u32, b: u32) -> u32 {
        if a == b {
            return 10;
        }
        match self.distance {
            SyntheticDistance::Flat => 20,
            SyntheticDistance::Ring => {
                let d = a.abs_diff(b);
                (10 + 10 * d.min(nodes - d)).min(254)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn x86_sibling_numbering_and_clusters() {
        let m = SyntheticMachine { cores_per_cluster: 4, ..SyntheticMachine::new(2, 8, 2) };
        let topo = m.build();
        assert_eq!(topo.possible.len(), 32);
        assert_eq!(topo.online, CpuSet::first_n(32));
        assert_eq!(topo.sibling_mask(9), [9, 25].into_iter().collect());
        assert_eq!(topo.cluster_mask(13), [12, 13, 14, 15, 28, 29, 30, 31].into_iter().collect());
        assert_eq!(topo.nodes[&1].cpus, (8..16).chain(24..32).collect());
        assert_eq!(topo.cpu_node(24), Some(1));
        assert_eq!(topo.distance(0, 1), Some(20));
        assert_eq!(topo.nr_node_ids(), 2);
    }

    #[test]
    fn ring_distances() {
        let m = SyntheticMachine { distance: SyntheticDistance::Ring, ..SyntheticMachine::new(6, 1, 1) };
        let topo = m.build();
        let row: Vec<u32> = (0..6).map(|b| topo.distance(1, b).unwrap()).collect();
        assert_eq!(row, [20, 10, 20, 30, 40, 30]);
    }
}
