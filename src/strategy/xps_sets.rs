//! Transmit steering (XPS) that follows the queue IRQs: every sending CPU transmits on the queue
//! whose completion IRQ is nearest to it, so transmit and completion stay on the same core,
//! cluster, cache or node wherever the placement allows.
//!
//! The kernel picks a transmit queue from the sending CPU's XPS map (`netdev_pick_tx()` →
//! `get_xps_queue()`, net/core/dev.c); a CPU in no queue's `xps_cpus` falls back to hashing
//! over all queues. Pure.

use crate::cpuset::CpuSet;
use crate::topology::Topology;

/// How near CPU `to` is to CPU `from`, smaller is nearer: the same CPU, an SMT sibling, the same
/// cluster, the same last-level cache, the same node, then by NUMA distance (unknown distances
/// last). Levels come from `from`'s own topology masks.
pub fn nearness(topo: &Topology, from: u32, to: u32) -> (u8, u32) {
    if from == to {
        return (0, 0);
    }
    if topo.sibling_mask(from).contains(to) {
        return (1, 0);
    }
    if topo.cluster_mask(from).contains(to) {
        return (2, 0);
    }
    let llc = topo.cpus.get(&from).and_then(|c| c.llc.as_ref());
    if llc.is_some_and(|l| l.contains(to)) {
        return (3, 0);
    }
    match (topo.cpu_node(from), topo.cpu_node(to)) {
        (Some(a), Some(b)) if a == b => (4, 0),
        (Some(a), Some(b)) => (5, topo.distance(a, b).unwrap_or(u32::MAX)),
        _ => (5, u32::MAX),
    }
}

/// The XPS set of every transmit queue: `anchors[i]` holds the CPUs of queue i's IRQ, and each
/// CPU of `senders` goes to the queue with the nearest anchor ([`nearness`]). CPUs are handed
/// out nearest first (then by id), and among equally near queues a CPU goes to the one with
/// the fewest CPUs so far, then the lowest index, so far-away CPUs spread evenly over what the
/// near ones left. Guarantees: every sender is in exactly one set when some anchor is non-empty
/// (none otherwise); a queue's own IRQ CPU is in its set whenever that CPU is a sender and
/// anchors no other queue.
pub fn xps_sets(topo: &Topology, senders: &CpuSet, anchors: &[CpuSet]) -> Vec<CpuSet> {
    let mut sets = vec![CpuSet::new(); anchors.len()];
    let mut wanted: Vec<((u8, u32), u32, Vec<usize>)> = Vec::new();
    for cpu in senders {
        let near: Vec<Option<(u8, u32)>> =
            anchors.iter().map(|a| a.iter().map(|anchor| nearness(topo, cpu, anchor)).min()).collect();
        let Some(best) = near.iter().flatten().min().copied() else { continue };
        let queues = near.iter().enumerate().filter(|(_, n)| **n == Some(best)).map(|(q, _)| q).collect();
        wanted.push((best, cpu, queues));
    }
    wanted.sort_by_key(|(best, cpu, _)| (*best, *cpu));
    for (_, cpu, queues) in wanted {
        if let Some(&q) = queues.iter().min_by_key(|&&q| (sets[q].len(), q)) {
            sets[q].insert(cpu);
        }
    }
    sets
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::synthetic::{SyntheticDistance, SyntheticMachine};

    fn set(s: &str) -> CpuSet {
        CpuSet::parse_list(s).unwrap()
    }

    /// 2 nodes × 6 cores × 2 threads: node 0 = 0-5,12-17, node 1 = 6-11,18-23 (siblings N, N+12).
    fn machine() -> Topology {
        SyntheticMachine::new(2, 6, 2).build()
    }

    #[test]
    fn one_queue_per_core_gives_each_queue_its_core() {
        let topo = machine();
        let anchors: Vec<CpuSet> = [6, 7, 8, 9, 10, 11, 0, 1].iter().map(|&c| CpuSet::single(c)).collect();
        let sets = xps_sets(&topo, &topo.online, &anchors);
        let all = sets.iter().fold(CpuSet::new(), |acc, s| acc.union(s));
        assert_eq!(all, topo.online, "every CPU sends on some queue");
        assert_eq!(sets.iter().map(CpuSet::len).sum::<usize>(), 24, "and on exactly one");
        for (q, anchor) in anchors.iter().enumerate() {
            assert!(anchor.is_subset(&sets[q]), "queue {q}: {} in {}", anchor, sets[q]);
        }
        // Node 1's queues (0-5) get node 1's CPUs; each queue's sibling comes with it.
        assert!(set("6,18").is_subset(&sets[0]) && set("11,23").is_subset(&sets[5]), "{sets:?}");
        let node1 = set("6-11,18-23");
        for (q, s) in sets.iter().enumerate().take(6) {
            assert!(s.is_subset(&node1), "queue {q} on node 1 sends only for node 1: {s}");
        }
        for (q, s) in sets.iter().enumerate().skip(6) {
            assert!(s.intersection(&node1).is_empty(), "queue {q}: {s}");
        }
    }

    #[test]
    fn ties_spread_evenly_and_shared_irq_cpus_keep_every_cpu_in_one_set() {
        let topo = machine();
        // 4 queues on node 0's first cores: node 1's 12 CPUs are equally far from all four.
        let anchors: Vec<CpuSet> = (0..4).map(CpuSet::single).collect();
        let sets = xps_sets(&topo, &topo.online, &anchors);
        let sizes: Vec<usize> = sets.iter().map(CpuSet::len).collect();
        assert_eq!(sizes.iter().sum::<usize>(), 24);
        assert!(sizes.iter().max().unwrap() - sizes.iter().min().unwrap() <= 1, "{sizes:?}");
        // Two queues on one CPU: that CPU sends on one of them only.
        let shared = vec![CpuSet::single(6), CpuSet::single(6), CpuSet::single(7)];
        let sets = xps_sets(&topo, &topo.online, &shared);
        assert_eq!(sets.iter().filter(|s| s.contains(6)).count(), 1, "{sets:?}");
        assert_eq!(sets.iter().map(CpuSet::len).sum::<usize>(), 24);
        assert!(!sets[1].is_empty(), "the second queue still gets CPUs: {sets:?}");
    }

    #[test]
    fn no_anchor_no_sets_and_offline_cpus_never_send() {
        let topo = machine();
        assert!(xps_sets(&topo, &topo.online, &[CpuSet::new(), CpuSet::new()]).iter().all(CpuSet::is_empty));
        let senders = topo.online.difference(&set("6"));
        let sets = xps_sets(&topo, &senders, &[CpuSet::single(7), CpuSet::single(18)]);
        assert!(sets.iter().all(|s| !s.contains(6)));
        assert!(sets[1].contains(18), "{sets:?}");
    }

    #[test]
    fn between_other_nodes_a_cpu_sends_on_the_queue_of_the_nearer_one() {
        // A ring of 4 nodes: from node 0, node 1 is 20 away and node 2 is 30.
        let m = SyntheticMachine { distance: SyntheticDistance::Ring, ..SyntheticMachine::new(4, 2, 1) };
        let topo = m.build();
        assert_eq!((topo.distance(0, 1), topo.distance(0, 2)), (Some(20), Some(30)));
        let (on1, on2) = (topo.nodes[&1].cpus.first().unwrap(), topo.nodes[&2].cpus.first().unwrap());
        assert!(nearness(&topo, 0, on1) < nearness(&topo, 0, on2));
        let node0 = topo.nodes[&0].cpus.clone();
        let sets = xps_sets(&topo, &node0, &[CpuSet::single(on2), CpuSet::single(on1)]);
        assert_eq!(sets, vec![CpuSet::new(), node0], "all of node 0 sends on node 1's queue");
    }
}
