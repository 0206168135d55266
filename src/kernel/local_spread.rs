//! NUMA-hop CPU orders from a node: `cpumask_local_spread()` (lib/cpumask.c, v6.3+ and legacy),
//! `for_each_numa_hop_mask()` (kernel/sched/topology.c), and irqwise's `cores-first`.
//!
//! Conventions shared by every function here:
//! * an online CPU whose node is unknown counts as node 0;
//! * without NUMA information (`topo.nodes` empty, a `CONFIG_NUMA=n` kernel) every order is the
//!   online CPUs ascending (cores-first: by core rank), there are no hops, and every node's
//!   nearest CPU node is 0;
//! * if any distance between nodes with online CPUs is missing or outside 10..=255 the kernel
//!   builds no hop masks: there are no hops and [`SpreadOrder::Kernel`], [`SpreadOrder::Hops`]
//!   and [`SpreadOrder::CoresFirst`] fall back to the [`SpreadOrder::Legacy`] blocks (the kernel
//!   itself would WARN and return `nr_cpu_ids`, which is no usable order).
//!
//! Every order except `Hops` from a CPU-less node (which the kernel iterates as nothing) holds
//! each online CPU exactly once.

use std::collections::BTreeMap;

use crate::choices::SpreadOrder;
use crate::cpuset::CpuSet;
use crate::topology::Topology;

/// CPUs first reached at one NUMA distance level.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hop {
    pub level: usize,
    pub distance: u32,
    pub new_cpus: CpuSet,
}

/// The kernel's NUMA picture: `N_CPU` nodes with their online CPUs and the hop levels.
struct NumaView {
    /// Nodes with at least one online CPU → those online CPUs.
    online_by_node: BTreeMap<u32, CpuSet>,
    /// Distinct distances among `N_CPU` nodes, ascending; `None` when the kernel would build no
    /// hop masks (a distance missing or outside 10..=255).
    levels: Option<Vec<u32>>,
}

impl NumaView {
    /// Builds the view; guarantees `online_by_node` partitions the online CPUs.
    fn new(topo: &Topology) -> NumaView {
        let mut online_by_node: BTreeMap<u32, CpuSet> = BTreeMap::new();
        for c in &topo.online {
            online_by_node.entry(topo.cpu_node(c).unwrap_or(0)).or_default().insert(c);
        }
        let mut distances = Vec::new();
        let mut valid = true;
        for &from in online_by_node.keys() {
            for &to in online_by_node.keys() {
                match topo.distance(from, to) {
                    Some(d) if (10..=255).contains(&d) => distances.push(d),
                    _ => valid = false,
                }
            }
        }
        distances.sort_unstable();
        distances.dedup();
        NumaView { online_by_node, levels: valid.then_some(distances) }
    }

    /// The CPUs first reached at each level from `node` (a node with online CPUs), or `None`
    /// when the kernel has no hop masks for it.
    fn hop_blocks(&self, topo: &Topology, node: u32) -> Option<Vec<Hop>> {
        let levels = self.levels.as_ref()?;
        if !self.online_by_node.contains_key(&node) {
            return None;
        }
        let mut hops: Vec<Hop> = levels
            .iter()
            .enumerate()
            .map(|(level, &distance)| Hop { level, distance, new_cpus: CpuSet::new() })
            .collect();
        for (&k, cpus) in &self.online_by_node {
            // Every N_CPU distance is one of the levels, so node k is first reached at its own.
            let d = topo.distance(node, k)?;
            let idx = levels.binary_search(&d).ok()?;
            hops[idx].new_cpus.extend_with(cpus);
        }
        Some(hops)
    }

    /// Pre-6.3 `cpumask_local_spread` blocks: the node's online CPUs, then all other online
    /// CPUs; a node without online CPUs gives the plain online order.
    fn legacy_blocks(&self, topo: &Topology, node: u32) -> Vec<CpuSet> {
        match self.online_by_node.get(&node) {
            Some(local) => vec![local.clone(), &topo.online - local],
            None => vec![topo.online.clone()],
        }
    }

    /// `numa_nearest_node(node, N_CPU)`: `node` itself if it has online CPUs, else the `N_CPU`
    /// node at the smallest known distance from it, ties to the lowest id.
    fn nearest(&self, topo: &Topology, node: u32) -> Option<u32> {
        if self.online_by_node.contains_key(&node) {
            return Some(node);
        }
        let mut best: Option<(u32, u32)> = None;
        for &k in self.online_by_node.keys() {
            if let Some(d) = topo.distance(node, k) {
                if best.is_none_or(|(_, bd)| d < bd) {
                    best = Some((k, d));
                }
            }
        }
        best.map(|(k, _)| k)
    }
}

/// The distinct distances among nodes with online CPUs, ascending (the kernel's NUMA levels);
/// empty without NUMA information or when the kernel would build no hop masks.
pub fn numa_levels(topo: &Topology) -> Vec<u32> {
    if topo.nodes.is_empty() {
        return Vec::new();
    }
    NumaView::new(topo).levels.unwrap_or_default()
}

/// The hop levels from `node` (`None` = NUMA_NO_NODE): empty for NUMA_NO_NODE and CPU-less nodes.
/// Otherwise one entry per global level (a level this node's row lacks has no new CPUs); the
/// `new_cpus` partition the online CPUs.
pub fn numa_hops(topo: &Topology, node: Option<u32>) -> Vec<Hop> {
    let Some(node) = node else { return Vec::new() };
    if topo.nodes.is_empty() {
        return Vec::new();
    }
    NumaView::new(topo).hop_blocks(topo, node).unwrap_or_default()
}

/// `numa_nearest_node(node, N_CPU)`: the node itself if it has online CPUs.
/// `None` when no node with online CPUs has a known distance from `node`.
pub fn nearest_cpu_node(topo: &Topology, node: u32) -> Option<u32> {
    if topo.nodes.is_empty() {
        return (!topo.online.is_empty()).then_some(0);
    }
    NumaView::new(topo).nearest(topo, node)
}

/// Online CPUs in `order` from `node` (`None` = NUMA_NO_NODE). See the module doc for the
/// fallbacks; `Kernel` element `i` is `cpumask_local_spread(i, node)`.
pub fn spread_order(topo: &Topology, node: Option<u32>, order: SpreadOrder) -> Vec<u32> {
    let blocks = match node {
        Some(node) if !topo.nodes.is_empty() => order_blocks(topo, node, order),
        _ => vec![topo.online.clone()],
    };
    match order {
        SpreadOrder::CoresFirst => blocks.iter().flat_map(|b| cores_first(topo, b)).collect(),
        _ => blocks.iter().flat_map(CpuSet::iter).collect(),
    }
}

/// [`spread_order`] restricted to the CPUs of `within` and cut into its blocks: one per NUMA hop
/// (two halves for `Legacy`, one block without NUMA information), each in order, empty blocks
/// dropped. For `CoresFirst` a CPU's thread rank counts only siblings in `within`, so one thread
/// of every core that has one in `within` comes before any second thread (a banned first thread
/// does not push its sibling back). Every other order is [`spread_order`] filtered to `within`.
#[cfg(test)]
pub(crate) fn spread_blocks_within(
    topo: &Topology,
    node: Option<u32>,
    order: SpreadOrder,
    within: &CpuSet,
) -> Vec<Vec<u32>> {
    let ranks = if order == SpreadOrder::CoresFirst { core_ranks(topo, within) } else { Vec::new() };
    spread_blocks_ranked(topo, node, order, within, &ranks)
}

/// [`spread_blocks_within`] with the thread ranks of [`core_ranks`]`(topo, within)` given, so a
/// caller planning many nodes' orders on one machine computes them once.
pub(crate) fn spread_blocks_ranked(
    topo: &Topology,
    node: Option<u32>,
    order: SpreadOrder,
    within: &CpuSet,
    ranks: &[u32],
) -> Vec<Vec<u32>> {
    let blocks = match node {
        Some(node) if !topo.nodes.is_empty() => order_blocks(topo, node, order),
        _ => vec![topo.online.clone()],
    };
    blocks
        .iter()
        .map(|b| b.intersection(within))
        .filter(|b| !b.is_empty())
        .map(|b| match order {
            SpreadOrder::CoresFirst => {
                let rank = |c: u32| ranks.get(c as usize).copied().unwrap_or(0);
                let mut ranked: Vec<(u32, u32)> = b.iter().map(|c| (rank(c), c)).collect();
                ranked.sort_unstable();
                ranked.into_iter().map(|(_, c)| c).collect()
            }
            _ => b.iter().collect(),
        })
        .collect()
}

/// Each CPU of `within`'s thread rank for the cores-first order, indexed by CPU id: how many of
/// its SMT siblings below it are online and in `within` (so a banned first thread does not push
/// its sibling back). 0 for CPUs outside `within`.
pub(crate) fn core_ranks(topo: &Topology, within: &CpuSet) -> Vec<u32> {
    let mut ranks = vec![0; within.last().map_or(0, |l| l as usize + 1)];
    for c in within {
        let below = topo
            .sibling_mask(c)
            .iter()
            .take_while(|&s| s < c)
            .filter(|&s| topo.online.contains(s) && within.contains(s))
            .count();
        ranks[c as usize] = below as u32;
    }
    ranks
}

/// The blocks (hops or legacy halves) whose ascending concatenation is `order` from `node`.
fn order_blocks(topo: &Topology, node: u32, order: SpreadOrder) -> Vec<CpuSet> {
    let view = NumaView::new(topo);
    let hops_from = |n: u32| view.hop_blocks(topo, n).map(|hops| hops.into_iter().map(|h| h.new_cpus).collect());
    match order {
        SpreadOrder::Legacy => view.legacy_blocks(topo, node),
        SpreadOrder::Hops if !view.online_by_node.contains_key(&node) => Vec::new(),
        SpreadOrder::Hops => hops_from(node).unwrap_or_else(|| view.legacy_blocks(topo, node)),
        SpreadOrder::Kernel | SpreadOrder::CoresFirst => {
            view.nearest(topo, node).and_then(hops_from).unwrap_or_else(|| view.legacy_blocks(topo, node))
        }
    }
}

/// `block` ordered by (thread rank within its core, CPU id): the rank is the CPU's position in
/// its online SMT siblings, so one thread of every core comes before any core's second thread.
fn cores_first(topo: &Topology, block: &CpuSet) -> Vec<u32> {
    let rank = |c: u32| topo.sibling_mask(c).iter().take_while(|&s| s < c).filter(|&s| topo.online.contains(s)).count();
    let mut ranked: Vec<(usize, u32)> = block.iter().map(|c| (rank(c), c)).collect();
    ranked.sort_unstable();
    ranked.into_iter().map(|(_, c)| c).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::NumaNode;

    /// Two nodes of 2 CPUs each (node 0: 0,1; node 1: 2,3) with the given distance rows.
    fn two_nodes(rows: [Vec<u32>; 2]) -> Topology {
        let mut topo = Topology {
            possible: CpuSet::first_n(4),
            present: CpuSet::first_n(4),
            online: CpuSet::first_n(4),
            ..Default::default()
        };
        for c in 0..4 {
            let mut cpu = crate::topology::Cpu::bare(c);
            (cpu.present, cpu.online, cpu.node) = (true, true, Some(c / 2));
            topo.cpus.insert(c, cpu);
        }
        for (id, distance) in rows.into_iter().enumerate() {
            let id = id as u32;
            topo.nodes.insert(id, NumaNode { id, cpus: [2 * id, 2 * id + 1].into_iter().collect(), distance });
        }
        topo
    }

    #[test]
    fn bogus_distances_fall_back_to_legacy() {
        let topo = two_nodes([vec![10, 0], vec![0, 10]]);
        assert!(numa_hops(&topo, Some(1)).is_empty());
        assert!(numa_levels(&topo).is_empty());
        for order in [SpreadOrder::Kernel, SpreadOrder::Hops, SpreadOrder::Legacy, SpreadOrder::CoresFirst] {
            assert_eq!(spread_order(&topo, Some(1), order), [2, 3, 0, 1], "{order:?}");
        }
        let missing_row = two_nodes([vec![10, 20], vec![]]);
        assert_eq!(spread_order(&missing_row, Some(1), SpreadOrder::Kernel), [2, 3, 0, 1]);
    }

    #[test]
    fn no_numa_information_is_online_order() {
        let mut topo = two_nodes([vec![10, 20], vec![20, 10]]);
        topo.nodes.clear();
        topo.online.remove(1);
        for order in [SpreadOrder::Kernel, SpreadOrder::Hops, SpreadOrder::Legacy, SpreadOrder::CoresFirst] {
            assert_eq!(spread_order(&topo, Some(1), order), [0, 2, 3], "{order:?}");
        }
        assert_eq!(nearest_cpu_node(&topo, 3), Some(0));
        assert!(numa_hops(&topo, Some(0)).is_empty());
    }

    #[test]
    fn cpu_less_node_redirects_to_lowest_equidistant_node() {
        // 3 nodes × 2 single-thread cores, flat distances; node 1's CPUs (2, 3) go offline, so
        // node 1 is CPU-less and nodes 0 and 2 are both at distance 20 from it.
        let mut topo = crate::topology::synthetic::SyntheticMachine::new(3, 2, 1).build();
        topo.online.remove_all(&[2, 3].into_iter().collect());
        assert_eq!(nearest_cpu_node(&topo, 1), Some(0));
        assert_eq!(spread_order(&topo, Some(1), SpreadOrder::Kernel), [0, 1, 4, 5]);
        assert_eq!(spread_order(&topo, Some(2), SpreadOrder::Kernel), [4, 5, 0, 1]);
        assert!(spread_order(&topo, Some(1), SpreadOrder::Hops).is_empty());
        assert!(numa_hops(&topo, Some(1)).is_empty());
        assert_eq!(spread_order(&topo, Some(1), SpreadOrder::Legacy), [0, 1, 4, 5]);
        assert_eq!(numa_levels(&topo), [10, 20]);
    }

    #[test]
    fn blocks_within_rank_threads_among_the_allowed_siblings() {
        // 2 nodes × 3 cores × 2 threads: node 1 is cores 3,4,5 with siblings 9,10,11.
        let topo = crate::topology::synthetic::SyntheticMachine::new(2, 3, 2).build();
        let all = topo.online.clone();
        let full = spread_blocks_within(&topo, Some(1), SpreadOrder::CoresFirst, &all);
        assert_eq!(full.concat(), spread_order(&topo, Some(1), SpreadOrder::CoresFirst));
        assert_eq!(full, [vec![3, 4, 5, 9, 10, 11], vec![0, 1, 2, 6, 7, 8]]);
        // CPU 5 banned: its sibling 11 is now the first usable thread of its core.
        let within = &all - &CpuSet::single(5);
        let blocks = spread_blocks_within(&topo, Some(1), SpreadOrder::CoresFirst, &within);
        assert_eq!(blocks[0], [3, 4, 11, 9, 10]);
        // A node none of whose CPUs is allowed leaves no empty block behind.
        let node0: CpuSet = [0, 1, 2, 6, 7, 8].into_iter().collect();
        assert_eq!(spread_blocks_within(&topo, Some(1), SpreadOrder::Kernel, &node0), [vec![0, 1, 2, 6, 7, 8]]);
    }

    #[test]
    fn unknown_node_uses_plain_online_order() {
        let topo = two_nodes([vec![10, 20], vec![20, 10]]);
        assert_eq!(nearest_cpu_node(&topo, 7), None);
        assert_eq!(spread_order(&topo, Some(7), SpreadOrder::Kernel), [0, 1, 2, 3]);
        assert!(spread_order(&topo, Some(7), SpreadOrder::Hops).is_empty());
    }
}
