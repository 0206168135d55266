//! `group_cpus_evenly()` (lib/group_cpus.c): mainline and cluster-aware.
//!
//! The per-pass mechanics (group counts per node or cluster, filling groups) live in
//! [`super::group_fill`]; this module holds the API, the two passes and the node/cluster levels.

use super::group_fill::{allocate_groups, GroupFiller, SENTINEL};
use super::heapsort::{SortEntry, SortVariant};
use super::KernelVersion;
use crate::cpuset::CpuSet;
use crate::topology::Topology;

/// Mainline grouping or the 2026 cluster-aware one (commit 89802ca36c96).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GroupAlgorithm {
    Mainline,
    ClusterAware,
}

/// The rules a given kernel release uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GroupRules {
    pub algorithm: GroupAlgorithm,
    pub sort: SortVariant,
}

impl GroupRules {
    /// < 6.9 → mainline S1; 6.9–6.10 → mainline S2; 6.11–6.19 → mainline S3; ≥ 7.0 → cluster S3.
    ///
    /// Kernels before 6.3 run the same algorithm as `irq_build_affinity_masks()` (offset by
    /// `firstvec`, which callers add themselves) with the S1 heapsort, so they map to mainline S1
    /// too. Kernels before the 2019 ratio patch split groups evenly per node; that is not modelled.
    pub fn for_kernel(v: KernelVersion) -> GroupRules {
        let at_least = |major: u32, minor: u32| v >= KernelVersion { major, minor };
        let (algorithm, sort) = if at_least(7, 0) {
            (GroupAlgorithm::ClusterAware, SortVariant::S3)
        } else if at_least(6, 11) {
            (GroupAlgorithm::Mainline, SortVariant::S3)
        } else if at_least(6, 9) {
            (GroupAlgorithm::Mainline, SortVariant::S2)
        } else {
            (GroupAlgorithm::Mainline, SortVariant::S1)
        };
        GroupRules { algorithm, sort }
    }
}

/// What `group_cpus_evenly(numgrps, &nummasks)` returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grouping {
    /// Exactly `numgrps` sets; groups from `nummasks` on are empty.
    pub groups: Vec<CpuSet>,
    pub nummasks: usize,
    /// Groups filled by the present pass and by the possible-not-present pass.
    pub pass_groups: [usize; 2],
}

/// Splits the topology's possible CPUs into `numgrps` groups exactly as the kernel does.
/// `numgrps == 0` gives no groups.
///
/// Inputs read: `possible`, `present`, [`Topology::cpu_node`] (a possible CPU whose node is
/// unknown counts as node 0, like a kernel without NUMA information), [`Topology::nr_node_ids`]
/// (grown to cover any CPU's node id should the topology name a node it does not list), and the
/// kernel's view of each CPU's masks ([`Topology::sibling_mask`], [`Topology::cluster_mask`]).
///
/// Guarantees on a consistent topology (clusters partition the CPUs): every possible CPU is in
/// exactly one group, `nummasks == min(numgrps, |possible|)` and groups `0..nummasks` are the
/// non-empty ones.
pub fn group_cpus_evenly(topo: &Topology, numgrps: usize, rules: GroupRules) -> Grouping {
    if numgrps == 0 {
        return Grouping { groups: Vec::new(), nummasks: 0, pass_groups: [0, 0] };
    }
    let node_cpus = node_cpu_sets(topo);
    let mut spread = Spreader { topo, rules, node_cpus, filler: GroupFiller::new(topo, numgrps) };
    let present = topo.present.clone();
    let absent = &topo.possible - &topo.present;
    let p1 = spread.pass(0, &present);
    let start2 = if p1 >= numgrps { 0 } else { p1 };
    let p2 = spread.pass(start2, &absent);
    Grouping { groups: spread.filler.into_groups(), nummasks: (p1 + p2).min(numgrps), pass_groups: [p1, p2] }
}

/// `NodeCPUs[n]` for every `n < nr_node_ids`: the possible CPUs of node `n` (unknown node → 0).
fn node_cpu_sets(topo: &Topology) -> Vec<CpuSet> {
    let node_of = |c: u32| topo.cpu_node(c).unwrap_or(0);
    let highest_cpu_node = topo.possible.iter().map(node_of).max().unwrap_or(0);
    let nr = topo.nr_node_ids().max(highest_cpu_node.saturating_add(1)) as usize;
    let mut sets = vec![CpuSet::new(); nr];
    for c in &topo.possible {
        sets[node_of(c) as usize].insert(c);
    }
    sets
}

/// One `group_cpus_evenly()` call in progress: the node map, the rules and the groups so far.
struct Spreader<'a> {
    topo: &'a Topology,
    rules: GroupRules,
    node_cpus: Vec<CpuSet>,
    filler: GroupFiller<'a>,
}

impl Spreader<'_> {
    /// `__group_cpus_evenly(start, mask)`: spreads `mask` over the groups starting at `start`,
    /// returns how many groups it filled.
    fn pass(&mut self, start: usize, mask: &CpuSet) -> usize {
        if mask.is_empty() {
            return 0;
        }
        let per_node: Vec<CpuSet> = self.node_cpus.iter().map(|s| s & mask).collect();
        let nodes = per_node.iter().filter(|s| !s.is_empty()).count();
        let numgrps = self.filler.numgrps();
        self.filler.set_cursor(start);
        if numgrps <= nodes {
            // Few groups: whole nodes, round robin from `start`.
            for cpus in per_node.iter().filter(|s| !s.is_empty()) {
                self.filler.add_whole(cpus);
            }
            return numgrps;
        }
        let mut entries: Vec<SortEntry> = per_node
            .iter()
            .enumerate()
            .map(|(id, s)| SortEntry { id: id as u32, val: if s.is_empty() { SENTINEL } else { s.len() as u32 } })
            .collect();
        let total: u32 = entries.iter().filter(|e| e.val != SENTINEL).map(|e| e.val).sum();
        allocate_groups(&mut entries, total.min(numgrps as u32), total, self.rules.sort);
        let mut done = 0;
        for e in entries.iter().filter(|e| e.val != SENTINEL) {
            let mut cpus = per_node[e.id as usize].clone();
            let q = e.val as usize;
            if self.rules.algorithm == GroupAlgorithm::ClusterAware && self.try_clusters(&cpus, q) {
                done += q;
                continue;
            }
            let ncpus = cpus.len();
            self.filler.assign(ncpus, &mut cpus, q);
            done += q;
        }
        done
    }

    /// `__try_group_cluster_cpus()`: spreads one node's `q` groups cluster by cluster; returns
    /// false, having changed nothing, when the node must fall back to `assign_cpus_to_groups()`.
    ///
    /// Like the kernel, each cluster's CPUs are `cpus ∩ cluster` of the unmodified node set.
    /// A non-empty cluster mask that lacks its probe CPU (the kernel would loop forever) makes
    /// the node fall back instead.
    fn try_clusters(&mut self, cpus: &CpuSet, q: usize) -> bool {
        let Some(clusters) = probe_clusters(self.topo, cpus, q) else { return false };
        let mut entries: Vec<SortEntry> = clusters
            .iter()
            .enumerate()
            .map(|(j, m)| SortEntry { id: j as u32, val: m.intersection(cpus).len() as u32 })
            .collect();
        allocate_groups(&mut entries, q as u32, cpus.len() as u32, self.rules.sort);
        for e in &entries {
            let mut in_cluster = cpus & &clusters[e.id as usize];
            let nc = in_cluster.len();
            if nc == 0 {
                continue;
            }
            self.filler.assign(nc, &mut in_cluster, e.val as usize);
        }
        true
    }
}

/// The clusters of `cpus` in probe order (lowest remaining CPU's full cluster mask each time),
/// or `None` when the node cannot be spread by cluster: an empty or self-less mask, no
/// clusters, or more clusters than the `q` groups.
fn probe_clusters(topo: &Topology, cpus: &CpuSet, q: usize) -> Option<Vec<CpuSet>> {
    let mut rest = cpus.clone();
    let mut clusters = Vec::new();
    while let Some(c) = rest.first() {
        let mask = topo.cluster_mask(c);
        if mask.is_empty() || !mask.contains(c) {
            return None;
        }
        rest.remove_all(&mask);
        clusters.push(mask);
        if clusters.len() > q {
            return None;
        }
    }
    (!clusters.is_empty()).then_some(clusters)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(major: u32, minor: u32) -> KernelVersion {
        KernelVersion { major, minor }
    }

    #[test]
    fn rules_follow_the_version_map() {
        let mainline = |sort| GroupRules { algorithm: GroupAlgorithm::Mainline, sort };
        assert_eq!(GroupRules::for_kernel(v(5, 10)), mainline(SortVariant::S1));
        assert_eq!(GroupRules::for_kernel(v(6, 2)), mainline(SortVariant::S1));
        assert_eq!(GroupRules::for_kernel(v(6, 8)), mainline(SortVariant::S1));
        assert_eq!(GroupRules::for_kernel(v(6, 9)), mainline(SortVariant::S2));
        assert_eq!(GroupRules::for_kernel(v(6, 10)), mainline(SortVariant::S2));
        assert_eq!(GroupRules::for_kernel(v(6, 11)), mainline(SortVariant::S3));
        assert_eq!(GroupRules::for_kernel(v(6, 19)), mainline(SortVariant::S3));
        let cluster = GroupRules { algorithm: GroupAlgorithm::ClusterAware, sort: SortVariant::S3 };
        assert_eq!(GroupRules::for_kernel(v(7, 0)), cluster);
        assert_eq!(GroupRules::for_kernel(v(7, 3)), cluster);
    }

    #[test]
    fn zero_groups_is_empty() {
        let topo = Topology { possible: CpuSet::first_n(4), present: CpuSet::first_n(4), ..Default::default() };
        let g = group_cpus_evenly(&topo, 0, GroupRules::for_kernel(v(6, 11)));
        assert_eq!(g, Grouping { groups: vec![], nummasks: 0, pass_groups: [0, 0] });
    }

    #[test]
    fn cpus_without_node_count_as_node_zero() {
        // No `cpus` entries at all: every CPU has an unknown node and empty masks.
        let topo = Topology { possible: CpuSet::first_n(6), present: CpuSet::first_n(4), ..Default::default() };
        let g = group_cpus_evenly(&topo, 3, GroupRules::for_kernel(v(7, 0)));
        // Pass 1: 4 present CPUs in 3 groups (2,1,1); pass 2 starts at 0 and wraps (1,1).
        let expect: Vec<CpuSet> =
            vec![[0, 1, 4].into_iter().collect(), [2, 5].into_iter().collect(), CpuSet::single(3)];
        assert_eq!(g.groups, expect);
        assert_eq!((g.nummasks, g.pass_groups), (3, [3, 2]));
    }

    #[test]
    fn the_absent_cpus_pass_starts_at_its_own_group_not_where_the_first_left_off() {
        // 3 nodes of 4 CPUs, CPUs 2 and 3 of node 0 possible but absent, 2 groups. Worked by
        // hand from `group_cpus_evenly()`: pass 1 (present) has more nodes than groups, so whole
        // nodes go round robin: node 0 -> g0, node 1 -> g1, node 2 -> g0, leaving `curgrp` at 1;
        // it filled every group, so pass 2 starts at group 0 (`curgrp = 0`, not where pass 1
        // stopped) and spreads {2, 3} over both groups from there: 2 -> g0, 3 -> g1.
        let mut topo = crate::topology::synthetic::SyntheticMachine::new(3, 4, 1).build();
        for c in [2, 3] {
            topo.present.remove(c);
        }
        let g = group_cpus_evenly(&topo, 2, GroupRules::for_kernel(v(6, 11)));
        let set = |cpus: &[u32]| cpus.iter().copied().collect::<CpuSet>();
        assert_eq!(g.groups, vec![set(&[0, 1, 2, 8, 9, 10, 11]), set(&[3, 4, 5, 6, 7])]);
        assert_eq!((g.nummasks, g.pass_groups), (2, [2, 2]));
    }
}
