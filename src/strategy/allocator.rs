//! The machine-wide queue allocator of `numa-hop`: every NIC queue irqwise places by NUMA hop
//! shares one per-CPU count, so two devices on one node spread over its CPUs instead of stacking
//! queue i on the same CPU.
//!
//! Two steps. **Homes** are allocated over the home machine (every present CPU online, see
//! [`crate::topology::home_topology`]), so they do not depend on which CPUs are online. **Now**:
//! a queue whose home is usable sits on it; a queue whose home is not (offline, excluded) is
//! *displaced* to the least-loaded usable CPU nearest its home. A CPU going offline therefore
//! moves only the queues whose home it was, and its return puts them back.

use std::collections::BTreeMap;

use crate::choices::Spill;
use crate::cpuset::CpuSet;
use crate::topology::Topology;

/// One device's claim on the machine's CPUs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Demand {
    /// The device's node and PCI address: devices are allocated in this order (devices without
    /// a node last), so the result does not depend on discovery order.
    pub node: Option<u32>,
    pub bdf: String,
    /// The device's NUMA-hop order over the CPUs it may use at home, one block per hop. No CPU
    /// appears twice. Shared: the NICs of one node have the same order.
    pub blocks: std::rc::Rc<Vec<Vec<u32>>>,
    /// The CPUs it may use now.
    pub usable: CpuSet,
    /// Queue units in order; a unit's weight is its number of distinct queues (`queues_per_cpu`
    /// queues share a unit; rx i and tx i are one queue).
    pub weights: Vec<u32>,
    pub spill: Spill,
}

/// Where one unit went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assignment {
    pub cpu: u32,
    pub home: u32,
    /// `None` on its home; else the ring around the home it was found in (`"same core"`, ...).
    pub displaced: Option<String>,
}

/// The result: per demand (in the order given), per unit, its assignment; and the queue count
/// of every CPU that got one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Allocation {
    pub devices: Vec<Vec<Assignment>>,
    pub load: BTreeMap<u32, u32>,
}

/// Allocates every demand's units. Guarantees:
/// - one demand alone, every CPU usable: unit i on the (i mod n)-th CPU of its order (n CPUs),
///   which is the kernel's order with `queues_per_cpu` units;
/// - homes: each unit takes, within its window (the hop of its slot; the first hop with
///   [`Spill::Local`]), the CPU with the fewest queues so far, ties to the earliest in the
///   device's order; so within a window the counts of CPUs differ by at most one unit weight;
/// - deterministic: the same demands in any order give the same assignments;
/// - a unit whose home is usable sits on it; any other goes to a usable CPU of the nearest ring
///   around its home (same core, cluster, last-level cache, node, then nodes by distance), the
///   least loaded there, ties to the earliest in the device's order.
///
/// A demand with no CPU at home, or none usable now, gets no assignments.
pub(crate) fn allocate(home: &Topology, demands: &[Demand]) -> Allocation {
    let mut order: Vec<usize> = (0..demands.len()).collect();
    // Devices without a node last: they may go anywhere, so they take what the others left.
    order.sort_by_key(|&d| (demands[d].node.is_none(), demands[d].node, &demands[d].bdf));
    let homes = allocate_homes(demands, &order);
    let mut load = Loads::default();
    let mut devices: Vec<Vec<Assignment>> = demands.iter().map(|_| Vec::new()).collect();
    // Queues at home first, so displaced ones see every settled queue when they pick.
    for &d in &order {
        let demand = &demands[d];
        if demand.usable.is_empty() {
            continue;
        }
        for (&h, &w) in homes[d].iter().zip(&demand.weights) {
            if demand.usable.contains(h) {
                load.add(h, w);
            }
        }
    }
    for &d in &order {
        let demand = &demands[d];
        if demand.usable.is_empty() {
            continue;
        }
        let rank = positions(demand);
        for (&h, &w) in homes[d].iter().zip(&demand.weights) {
            let assignment = if demand.usable.contains(h) {
                Assignment { cpu: h, home: h, displaced: None }
            } else {
                let (cpu, ring) = nearest(home, h, &demand.usable, &load, &rank);
                load.add(cpu, w);
                Assignment { cpu, home: h, displaced: Some(ring) }
            };
            devices[d].push(assignment);
        }
    }
    Allocation { devices, load: load.into_map() }
}

/// Queue counts per CPU, indexed by CPU id: the allocator looks a count up for every CPU of
/// every window, so a dense vector rather than a map (CPU ids are below `MAX_CPUS`).
#[derive(Default)]
struct Loads {
    count: Vec<u32>,
    /// Which CPUs got a unit (a count of 0 after a zero-weight unit still counts as one).
    touched: Vec<bool>,
}

impl Loads {
    fn get(&self, cpu: u32) -> u32 {
        self.count.get(cpu as usize).copied().unwrap_or(0)
    }

    fn add(&mut self, cpu: u32, w: u32) {
        let i = cpu as usize;
        if i >= self.count.len() {
            self.count.resize(i + 1, 0);
            self.touched.resize(i + 1, false);
        }
        self.count[i] += w;
        self.touched[i] = true;
    }

    /// The counts of the CPUs that got a unit, by CPU id.
    fn into_map(self) -> BTreeMap<u32, u32> {
        self.touched
            .iter()
            .zip(&self.count)
            .enumerate()
            .filter(|(_, (t, _))| **t)
            .map(|(c, (_, &n))| (c as u32, n))
            .collect()
    }
}

/// Every demand's home per unit (empty for a demand without CPUs): devices in `order`, units
/// in order, each the least-loaded CPU of its window, ties to the earliest in the order.
fn allocate_homes(demands: &[Demand], order: &[usize]) -> Vec<Vec<u32>> {
    let mut load = Loads::default();
    let mut homes: Vec<Vec<u32>> = demands.iter().map(|_| Vec::new()).collect();
    for &d in order {
        let demand = &demands[d];
        let n: usize = demand.blocks.iter().map(Vec::len).sum();
        if n == 0 {
            continue;
        }
        for (unit, &w) in demand.weights.iter().enumerate() {
            let window = match demand.spill {
                Spill::Local => &demand.blocks[0],
                Spill::Kernel => block_of_slot(&demand.blocks, unit % n),
            };
            let mut best: Option<(u32, u32)> = None;
            for &c in window {
                let l = load.get(c);
                if best.is_none_or(|(_, bl)| l < bl) {
                    best = Some((c, l));
                }
            }
            // Windows are non-empty: blocks are, and `n > 0`.
            if let Some((c, _)) = best {
                load.add(c, w);
                homes[d].push(c);
            }
        }
    }
    homes
}

/// The block holding the `slot`-th CPU of the concatenated blocks (`slot` < their total).
fn block_of_slot(blocks: &[Vec<u32>], mut slot: usize) -> &Vec<u32> {
    for b in blocks {
        if slot < b.len() {
            return b;
        }
        slot -= b.len();
    }
    &blocks[blocks.len() - 1]
}

/// Each CPU's position in the demand's order (for ties), indexed by CPU id; `usize::MAX` for
/// CPUs outside the order.
fn positions(demand: &Demand) -> Vec<usize> {
    let mut rank = Vec::new();
    for (i, &c) in demand.blocks.iter().flatten().enumerate() {
        let c = c as usize;
        if c >= rank.len() {
            rank.resize(c + 1, usize::MAX);
        }
        rank[c] = i;
    }
    rank
}

/// The rings around `cpu` on the home machine, nearest first, with the words reasons use:
/// its core, cluster, last-level cache and node, then every other node by distance from its
/// node (ties by id), then every CPU.
fn rings(home: &Topology, cpu: u32) -> Vec<(String, CpuSet)> {
    let mut out = vec![
        ("same core".to_string(), home.sibling_mask(cpu)),
        ("same cluster".to_string(), home.cluster_mask(cpu)),
        ("same LLC".to_string(), home.cpus.get(&cpu).and_then(|c| c.llc.clone()).unwrap_or_default()),
    ];
    if let Some(node) = home.cpu_node(cpu) {
        let cpus_of = |n: u32| home.nodes.get(&n).map(|d| d.cpus.clone()).unwrap_or_default();
        out.push(("same node".to_string(), cpus_of(node)));
        let mut others: Vec<(u32, u32)> = home
            .nodes
            .keys()
            .filter(|&&n| n != node)
            .map(|&n| (home.distance(node, n).unwrap_or(u32::MAX), n))
            .collect();
        others.sort_unstable();
        out.extend(others.into_iter().map(|(d, n)| {
            let words = if d == u32::MAX { format!("node {n}") } else { format!("node {n} (distance {d})") };
            (words, cpus_of(n))
        }));
    }
    out.push(("any usable CPU".to_string(), home.possible.clone()));
    out
}

/// The least-loaded usable CPU of the nearest ring around `cpu` that has one (ties: earliest in
/// `rank`, then lowest id), and the ring's words. `usable` must not be empty.
fn nearest(home: &Topology, cpu: u32, usable: &CpuSet, load: &Loads, rank: &[usize]) -> (u32, String) {
    for (words, ring) in rings(home, cpu) {
        let pick = ring
            .intersection(usable)
            .iter()
            .min_by_key(|&c| (load.get(c), rank.get(c as usize).copied().unwrap_or(usize::MAX), c));
        if let Some(c) = pick {
            return (c, words);
        }
    }
    // `usable` CPUs outside `possible` (not a real machine): the first of them.
    (usable.first().unwrap_or(cpu), "any usable CPU".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::choices::SpreadOrder;
    use crate::kernel::spread_blocks_within;
    use crate::topology::synthetic::{SyntheticDistance, SyntheticMachine};

    /// A ring of 4 nodes of 2 single-thread cores: from node 0, nodes 1 and 3 are 20 away, node
    /// 2 is 30; node n holds CPUs 2n, 2n+1.
    fn ring() -> Topology {
        SyntheticMachine { distance: SyntheticDistance::Ring, ..SyntheticMachine::new(4, 2, 1) }.build()
    }

    /// A NIC on `node` with `queues` single-queue units, cores-first, all online CPUs usable.
    fn nic(topo: &Topology, node: u32, bdf: &str, queues: u32, spill: Spill) -> Demand {
        Demand {
            node: Some(node),
            bdf: bdf.into(),
            blocks: spread_blocks_within(topo, Some(node), SpreadOrder::CoresFirst, &topo.online).into(),
            usable: topo.online.clone(),
            weights: vec![1; queues as usize],
            spill,
        }
    }

    fn cpus(a: &[Assignment]) -> Vec<u32> {
        a.iter().map(|x| x.cpu).collect()
    }

    #[test]
    fn one_device_alone_walks_its_order() {
        let topo = SyntheticMachine::new(2, 6, 2).build();
        let d = nic(&topo, 1, "0000:81:00.0", 30, Spill::Kernel);
        let order: Vec<u32> = d.blocks.concat();
        let got = allocate(&topo, std::slice::from_ref(&d));
        let want: Vec<u32> = (0..30).map(|i| order[i % order.len()]).collect();
        assert_eq!(cpus(&got.devices[0]), want);
    }

    #[test]
    fn two_devices_on_one_node_share_it_without_stacking() {
        // Node 1 = cores 6-11 with siblings 18-23; two 8-queue NICs.
        let topo = SyntheticMachine::new(2, 6, 2).build();
        let a = nic(&topo, 1, "0000:81:00.0", 8, Spill::Kernel);
        let b = nic(&topo, 1, "0000:81:00.1", 8, Spill::Kernel);
        let got = allocate(&topo, &[b, a]);
        assert_eq!(cpus(&got.devices[1]), [6, 7, 8, 9, 10, 11, 18, 19], "the lower address goes first");
        assert_eq!(cpus(&got.devices[0]), [20, 21, 22, 23, 6, 7, 8, 9]);
        let mut tally = BTreeMap::new();
        for a in got.devices.iter().flatten() {
            *tally.entry(a.cpu).or_insert(0) += 1;
        }
        assert_eq!(got.load, tally, "the load counts every queue where it sits");
        let counts: Vec<u32> = topo.nodes[&1].cpus.iter().map(|c| got.load.get(&c).copied().unwrap_or(0)).collect();
        assert!(counts.iter().max().unwrap() - counts.iter().min().unwrap() <= 1, "{counts:?}");
    }

    #[test]
    fn a_spill_takes_the_remote_node_cpus_its_own_devices_do_not_need() {
        let topo = SyntheticMachine::new(2, 6, 2).build();
        let big = nic(&topo, 0, "0000:01:00.0", 16, Spill::Kernel);
        let small = nic(&topo, 1, "0000:81:00.0", 8, Spill::Kernel);
        let got = allocate(&topo, &[big, small]);
        let spilled: CpuSet = got.devices[0][12..].iter().map(|a| a.cpu).collect();
        let local: CpuSet = got.devices[1].iter().map(|a| a.cpu).collect();
        assert!(spilled.is_subset(&topo.nodes[&1].cpus));
        assert!(!spilled.intersects(&local), "spill {spilled} vs node-1 NIC {local}");
        let local_spill = allocate(&topo, &[nic(&topo, 0, "0000:01:00.0", 16, Spill::Local)]);
        assert!(local_spill.devices[0].iter().all(|a| topo.nodes[&0].cpus.contains(a.cpu)));
    }

    #[test]
    fn an_offline_home_moves_only_its_queues_to_the_sibling() {
        let topo = SyntheticMachine::new(2, 6, 2).build();
        let mut d = nic(&topo, 1, "0000:81:00.0", 8, Spill::Kernel);
        let before = allocate(&topo, std::slice::from_ref(&d));
        d.usable.remove(8);
        let after = allocate(&topo, std::slice::from_ref(&d));
        for (b, a) in before.devices[0].iter().zip(&after.devices[0]) {
            if b.cpu == 8 {
                assert_eq!((a.cpu, a.displaced.as_deref()), (20, Some("same core")));
            } else {
                assert_eq!(a, b);
            }
        }
    }

    #[test]
    fn queues_beyond_the_first_hops_walk_the_order_through_every_hop() {
        let topo = ring();
        let d = nic(&topo, 0, "0000:01:00.0", 8, Spill::Kernel);
        let hops: Vec<usize> = d.blocks.iter().map(Vec::len).collect();
        assert_eq!(hops, [2, 4, 2], "node 0, then nodes 1 and 3, then node 2");
        let got = allocate(&topo, std::slice::from_ref(&d));
        assert_eq!(cpus(&got.devices[0]), d.blocks.concat(), "unit i on the i-th CPU of the order");
        assert!(got.devices[0][6..].iter().all(|a| topo.nodes[&2].cpus.contains(a.cpu)), "{got:?}");
    }

    #[test]
    fn a_node_gone_whole_sends_its_queues_to_the_nearest_other_node() {
        let topo = ring();
        let mut d = nic(&topo, 0, "0000:01:00.0", 2, Spill::Kernel);
        d.usable = topo.online.difference(&topo.nodes[&0].cpus);
        let got = allocate(&topo, std::slice::from_ref(&d));
        for a in &got.devices[0] {
            assert_eq!(a.displaced.as_deref(), Some("node 1 (distance 20)"), "{got:?}");
            assert!(topo.nodes[&1].cpus.contains(a.cpu), "{got:?}");
        }
    }
}
