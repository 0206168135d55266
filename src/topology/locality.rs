//! How close a CPU is to where an IRQ should be: on one of its desired CPUs, an SMT sibling of
//! one, in the same cluster, sharing a last-level cache, on the same NUMA node, or remote.
//!
//! Pure: a [`Topology`] and CPU sets in, a [`Locality`] out. Used by `plan` (the locality of an
//! IRQ's current mask) and `report` (the locality of the CPUs its interrupts fired on).

use serde::Serialize;

use super::Topology;
use crate::cpuset::CpuSet;

/// The classes, nearest first; `Ord` follows that order, so the maximum is the farthest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Locality {
    /// One of the desired CPUs.
    Desired,
    /// An SMT sibling of a desired CPU (`core_cpus_list`).
    Core,
    /// The same cluster as a desired CPU (`cluster_cpus_list`: shared L2 on x86).
    Cluster,
    /// Sharing the last-level cache with a desired CPU.
    Llc,
    /// The same NUMA node as a desired CPU or, for an IRQ without a desired set, as its device.
    Node,
    /// Another NUMA node.
    Remote,
}

impl Locality {
    /// Every class, nearest first.
    pub const ALL: [Locality; 6] =
        [Locality::Desired, Locality::Core, Locality::Cluster, Locality::Llc, Locality::Node, Locality::Remote];

    /// The name used in tables and JSON (`desired`, `core`, `cluster`, `llc`, `node`, `remote`).
    pub fn as_str(self) -> &'static str {
        match self {
            Locality::Desired => "desired",
            Locality::Core => "core",
            Locality::Cluster => "cluster",
            Locality::Llc => "llc",
            Locality::Node => "node",
            Locality::Remote => "remote",
        }
    }
}

/// The NUMA node of `cpu`; on a machine without NUMA information every CPU is on node 0.
/// Guarantees: `None` only when the machine has nodes and sysfs names none for `cpu`.
pub fn node_of(topo: &Topology, cpu: u32) -> Option<u32> {
    if topo.nodes.is_empty() {
        Some(0)
    } else {
        topo.cpu_node(cpu)
    }
}

/// The CPUs at each distance from an IRQ's desired set, computed once per IRQ so that
/// classifying a CPU or a whole mask costs a few set operations. Ring `k` holds every CPU whose
/// class is at most [`Locality::ALL`]`[k]`: the desired CPUs, then with their SMT siblings, their
/// clusters, their LLCs (each as the desired CPUs' own masks say), their NUMA nodes. Without a
/// desired set only the node ring (the device's node) is filled.
#[derive(Debug, Clone)]
pub(crate) struct Nearness {
    rings: [CpuSet; 5],
    /// No NUMA information: every CPU is on the one node.
    one_node: bool,
}

impl Nearness {
    /// The rings for an IRQ that should be on `desired`, of a device on `device_node`.
    /// Guarantees: `None` only when nothing can be compared (no desired set, and the device's
    /// node unknown on a NUMA machine).
    pub fn new(topo: &Topology, desired: Option<&CpuSet>, device_node: Option<u32>) -> Option<Nearness> {
        let one_node = topo.nodes.is_empty();
        let node_cpus = |n: u32| topo.nodes.get(&n).map(|node| node.cpus.clone()).unwrap_or_default();
        let Some(desired) = desired.filter(|d| !d.is_empty()) else {
            let node = if one_node { CpuSet::new() } else { node_cpus(device_node?) };
            let empty = CpuSet::new;
            return Some(Nearness { rings: [empty(), empty(), empty(), empty(), node], one_node });
        };
        let mut rings: [CpuSet; 5] = std::array::from_fn(|_| desired.clone());
        let mut nodes = std::collections::BTreeSet::new();
        // The mask last added to each ring: CPUs of one group share theirs, added once.
        let mut last: [Option<&CpuSet>; 4] = [None; 4];
        for d in desired {
            if let Some(cpu) = topo.cpus.get(&d) {
                for (ring, mask) in [(1, &cpu.core), (2, &cpu.cluster), (3, &cpu.llc)] {
                    if let Some(mask) = mask.as_ref().filter(|m| !last[ring].is_some_and(|l| l.shares_words(m))) {
                        rings[ring].extend_with(mask);
                        last[ring] = Some(mask);
                    }
                }
            }
            nodes.extend(node_of(topo, d));
        }
        // Each ring holds the nearer ones.
        for k in 1..5 {
            let inner = rings[k - 1].clone();
            rings[k].extend_with(&inner);
        }
        for n in nodes {
            rings[4].extend_with(&node_cpus(n));
        }
        Some(Nearness { rings, one_node })
    }

    /// The class of `cpu`: the innermost ring holding it.
    pub(crate) fn of_cpu(&self, cpu: u32) -> Locality {
        match self.rings.iter().position(|r| r.contains(cpu)) {
            Some(k) => Locality::ALL[k],
            None if self.one_node => Locality::Node,
            None => Locality::Remote,
        }
    }

    /// The class a whole mask guarantees: that of its farthest CPU (the innermost ring holding
    /// all of it). `None` for an empty mask.
    pub(crate) fn of_mask(&self, mask: &CpuSet) -> Option<Locality> {
        if mask.is_empty() {
            return None;
        }
        Some(match self.rings.iter().position(|r| mask.is_subset(r)) {
            Some(k) => Locality::ALL[k],
            None if self.one_node => Locality::Node,
            None => Locality::Remote,
        })
    }
}

/// The class of `cpu` for an IRQ that should be on `desired` and whose device is on
/// `device_node` (see [`Nearness`]); `None` when nothing can be compared.
#[cfg(test)]
pub(crate) fn classify_cpu(
    topo: &Topology,
    cpu: u32,
    desired: Option<&CpuSet>,
    device_node: Option<u32>,
) -> Option<Locality> {
    Some(Nearness::new(topo, desired, device_node)?.of_cpu(cpu))
}

/// The locality a whole mask guarantees: the farthest class of any of its CPUs (a mask of all
/// CPUs is `remote` on a multi-node machine even if the kernel happens to pick a near one).
/// `None` for an empty mask or when nothing can be compared.
pub(crate) fn classify_mask(
    topo: &Topology,
    mask: &CpuSet,
    desired: Option<&CpuSet>,
    device_node: Option<u32>,
) -> Option<Locality> {
    // Already where it should be (the common case): no rings to build.
    if !mask.is_empty() && desired.is_some_and(|d| mask.is_subset(d)) {
        return Some(Locality::ALL[0]);
    }
    // A mask reaching beyond every ring is remote: its ends tell that for the masks of a fresh
    // boot (every CPU) without building rings as wide as the machine for each IRQ.
    if let Some(d) = desired.filter(|d| !d.is_empty() && !topo.nodes.is_empty()) {
        if [mask.first(), mask.last()].into_iter().flatten().any(|x| beyond_rings(topo, x, d)) {
            return Some(Locality::Remote);
        }
    }
    Nearness::new(topo, desired, device_node)?.of_mask(mask)
}

/// Whether CPU `x` is in none of the rings [`Nearness::new`] builds for `desired` (non-empty,
/// on a machine with nodes): not desired, not in a desired CPU's core, cluster or LLC mask, not
/// on a desired CPU's node. One membership test per desired CPU and level, no set built.
fn beyond_rings(topo: &Topology, x: u32, desired: &CpuSet) -> bool {
    // One lookup of each desired CPU; its node's test is reused while the desired CPUs stay on
    // that node (they mostly do: this runs for every IRQ of a pass).
    let mut last_node: Option<(u32, bool)> = None;
    !desired.iter().any(|d| {
        let cpu = topo.cpus.get(&d);
        if d == x || cpu.is_some_and(|c| [&c.core, &c.cluster, &c.llc].into_iter().flatten().any(|m| m.contains(x))) {
            return true;
        }
        let node = if topo.nodes.is_empty() { Some(0) } else { cpu.and_then(|c| c.node) };
        let Some(n) = node else { return false };
        match last_node {
            Some((m, near)) if m == n => near,
            _ => {
                let near = topo.nodes.get(&n).is_some_and(|node| node.cpus.contains(x));
                last_node = Some((n, near));
                near
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::{Cpu, NumaNode};

    fn set(s: &str) -> CpuSet {
        CpuSet::parse_list(s).unwrap()
    }

    /// 2 nodes × 2 clusters × 2 cores × 2 threads = 16 CPUs; CPU c's sibling is c ^ 8; cores
    /// (0,8),(1,9) form cluster A of node 0, (2,10),(3,11) cluster B, both sharing node 0's LLC;
    /// node 1 likewise with CPUs 4-7,12-15.
    fn machine() -> Topology {
        let mut t = Topology::default();
        for c in 0..16u32 {
            let base = c % 8;
            let node = base / 4;
            let cluster_first = base - base % 2;
            let mut cpu = Cpu::bare(c);
            cpu.online = true;
            cpu.node = Some(node);
            cpu.core = Some([base, base + 8].into_iter().collect());
            cpu.cluster =
                Some([cluster_first, cluster_first + 1, cluster_first + 8, cluster_first + 9].into_iter().collect());
            cpu.llc = Some((0..4).map(|i| node * 4 + i).flat_map(|x| [x, x + 8]).collect());
            t.cpus.insert(c, cpu);
        }
        for n in 0..2 {
            let cpus = (0..4).map(|i| n * 4 + i).flat_map(|x| [x, x + 8]).collect();
            t.nodes.insert(n, NumaNode { id: n, cpus, distance: vec![10, 20] });
        }
        t.online = CpuSet::first_n(16);
        t
    }

    #[test]
    fn each_cpu_gets_the_nearest_level_it_shares_with_a_desired_cpu() {
        let t = machine();
        let want = set("0");
        let class = |cpu| classify_cpu(&t, cpu, Some(&want), Some(1)).unwrap();
        assert_eq!(class(0), Locality::Desired);
        assert_eq!(class(8), Locality::Core);
        assert_eq!(class(1), Locality::Cluster);
        assert_eq!(class(9), Locality::Cluster);
        assert_eq!(class(2), Locality::Llc);
        assert_eq!(class(4), Locality::Remote);
        assert_eq!(class(12), Locality::Remote);
    }

    #[test]
    fn node_is_what_remains_without_a_shared_cache() {
        let mut t = machine();
        for c in t.cpus.values_mut() {
            c.llc = None;
        }
        assert_eq!(classify_cpu(&t, 3, Some(&set("0")), None), Some(Locality::Node));
    }

    #[test]
    fn without_a_desired_set_only_the_device_node_counts() {
        let t = machine();
        assert_eq!(classify_cpu(&t, 5, None, Some(1)), Some(Locality::Node));
        assert_eq!(classify_cpu(&t, 0, Some(&CpuSet::new()), Some(1)), Some(Locality::Remote));
        assert_eq!(classify_cpu(&t, 0, None, None), None);
        // No NUMA information at all: one node 0.
        assert_eq!(classify_cpu(&Topology::default(), 3, None, Some(0)), Some(Locality::Node));
    }

    proptest::proptest! {
        /// The ring shortcut for masks agrees with classifying each CPU on its own.
        #[test]
        fn a_mask_class_is_the_farthest_cpu_class(mask in 0u32..0xffff, want in 1u32..0xffff) {
            let t = machine();
            let bits = |m: u32| -> CpuSet { (0..16).filter(|c| m & (1 << c) != 0).collect() };
            let (mask, desired) = (bits(mask), bits(want));
            let near = Nearness::new(&t, Some(&desired), Some(0)).unwrap();
            let farthest = mask.iter().map(|c| near.of_cpu(c)).max();
            proptest::prop_assert_eq!(near.of_mask(&mask), farthest);
        }
    }

    #[test]
    fn a_mask_is_as_far_as_its_farthest_cpu() {
        let t = machine();
        assert_eq!(classify_mask(&t, &set("0"), Some(&set("0-1")), None), Some(Locality::Desired));
        assert_eq!(classify_mask(&t, &set("0,8"), Some(&set("0")), None), Some(Locality::Core));
        assert_eq!(classify_mask(&t, &set("0-15"), Some(&set("0")), None), Some(Locality::Remote));
        assert_eq!(classify_mask(&t, &CpuSet::new(), Some(&set("0")), None), None);
    }
}
