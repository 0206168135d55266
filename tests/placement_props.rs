//! Properties of machine-wide placement over random machines and device sets (in memory):
//! per-node queue counts differ by at most one, the plan does not depend on discovery order, a
//! CPU going offline from a full machine moves exactly the queues that lived on it, and after
//! any sequence of offline and online events, all CPUs back means the initial plan exactly.

#[path = "common/memory_devices.rs"]
mod memory_devices;

use std::collections::{BTreeMap, BTreeSet};

use irqwise::choices::Spill;
use irqwise::cpuset::CpuSet;
use irqwise::devices::{Device, QueueRole};
use irqwise::plan::{build_plan, Plan, PlanContext};
use irqwise::policy::Policy;
use irqwise::sample::kernel_release::group_rules;
use irqwise::topology::synthetic::{SyntheticDistance, SyntheticMachine};
use irqwise::topology::{home_topology, Topology, TopologyMemory};
use memory_devices::vector;
use proptest::prelude::*;

/// A NIC with a misc vector and `queues` rx/tx pairs.
fn nic(index: usize, node: Option<u32>, queues: u32, online: &CpuSet) -> Device {
    let base = 1000 * (index as u32 + 1);
    let mut vectors = vec![vector(base, QueueRole::Misc, None, online)];
    for q in 0..queues {
        vectors.push(vector(base + 1 + 2 * q, QueueRole::Rx, Some(q), online));
        vectors.push(vector(base + 2 + 2 * q, QueueRole::Tx, Some(q), online));
    }
    memory_devices::nic(&format!("0000:{index:02x}:00.0"), node, None, vectors)
}

/// `topo` with the CPUs of `offline` offline as x86 shows it: no masks of their own, gone from
/// every other CPU's masks.
fn offline_x86(topo: &Topology, offline: &CpuSet) -> Topology {
    let mut t = topo.clone();
    t.online.remove_all(offline);
    for c in t.cpus.values_mut() {
        if offline.contains(c.id) {
            (c.online, c.core, c.cluster, c.llc, c.package, c.die) = (false, None, None, None, None, None);
        } else {
            for m in [&mut c.core, &mut c.cluster, &mut c.llc, &mut c.package, &mut c.die].into_iter().flatten() {
                m.remove_all(offline);
            }
        }
    }
    t
}

/// Plans `devices` on `now`, with the daemon's memory (remembering `now` first).
fn plan(now: &Topology, memory: &mut TopologyMemory, devices: &[Device], policies: &[Policy]) -> Plan {
    memory.remember(now);
    let home = home_topology(now, Some(memory));
    let known = BTreeSet::new();
    let ctx = PlanContext {
        topo: now,
        home: Some(&home),
        first: None,
        group_rules: group_rules(now),
        group_fact: None,
        respect_isolation: true,
        known_managed: &known,
        kernel_queues: &std::collections::BTreeMap::new(),
    };
    build_plan(&ctx, devices, policies)
}

/// Each queue IRQ's single CPU, by IRQ.
fn queue_cpus(plan: &Plan) -> BTreeMap<u32, u32> {
    plan.devices
        .iter()
        .flat_map(|d| &d.irqs)
        .filter(|p| p.queue.is_some())
        .map(|p| (p.irq, p.desired.as_ref().and_then(CpuSet::first).unwrap()))
        .collect()
}

#[derive(Debug, Clone)]
struct Case {
    machine: SyntheticMachine,
    /// (node or none, queues, spill local)
    nics: Vec<(Option<u32>, u32, bool)>,
}

impl Case {
    fn build(&self) -> (Topology, Vec<Device>, Vec<Policy>) {
        let topo = self.machine.build();
        let nodes = self.machine.nodes;
        let devices = self
            .nics
            .iter()
            .enumerate()
            .map(|(i, &(node, q, _))| nic(i, node.map(|n| n % nodes), q, &topo.online))
            .collect();
        let policies = self
            .nics
            .iter()
            .map(|&(_, _, local)| Policy {
                spill: if local { Spill::Local } else { Spill::Kernel },
                ..Policy::default()
            })
            .collect();
        (topo, devices, policies)
    }
}

fn cases() -> impl Strategy<Value = Case> {
    (1u32..=3, 1u32..=5, 1u32..=2, any::<bool>()).prop_flat_map(|(nodes, cores, threads, ring)| {
        let machine = SyntheticMachine {
            distance: if ring { SyntheticDistance::Ring } else { SyntheticDistance::Flat },
            ..SyntheticMachine::new(nodes, cores, threads)
        };
        let most = 2 * cores * threads + 2;
        let nic = (proptest::option::weighted(0.85, 0..nodes), 1..=most, any::<bool>());
        proptest::collection::vec(nic, 1..=5).prop_map(move |nics| Case { machine, nics })
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn per_node_queue_counts_differ_by_at_most_one(case in cases()) {
        let (topo, devices, policies) = case.build();
        let plan = plan(&topo, &mut TopologyMemory::default(), &devices, &policies);
        let mut load: BTreeMap<u32, u32> = BTreeMap::new();
        for d in &plan.devices {
            let units: BTreeSet<(Option<u32>, u32)> =
                d.irqs.iter().filter_map(|p| Some((p.queue, p.desired.as_ref()?.first()?))).filter(|(q, _)| q.is_some()).collect();
            for (_, cpu) in units {
                *load.entry(cpu).or_default() += 1;
            }
        }
        for (n, node) in &topo.nodes {
            let counts: Vec<u32> = node.cpus.iter().map(|c| load.get(&c).copied().unwrap_or(0)).collect();
            let (max, min) = (counts.iter().max().unwrap(), counts.iter().min().unwrap());
            prop_assert!(max - min <= 1, "node {n}: {counts:?}");
        }
    }

    #[test]
    fn discovery_order_does_not_change_the_plan(case in cases()) {
        let (topo, devices, policies) = case.build();
        let forward = plan(&topo, &mut TopologyMemory::default(), &devices, &policies);
        let (mut rd, mut rp) = (devices.clone(), policies.clone());
        rd.reverse();
        rp.reverse();
        let backward = plan(&topo, &mut TopologyMemory::default(), &rd, &rp);
        prop_assert_eq!(queue_cpus(&forward), queue_cpus(&backward));
    }

    #[test]
    fn hotplug_moves_only_displaced_queues_and_all_back_restores_the_plan(
        case in cases(),
        ops in proptest::collection::vec((0u32..64, any::<bool>()), 1..12),
    ) {
        let (topo, devices, policies) = case.build();
        let mut memory = TopologyMemory::default();
        let initial = queue_cpus(&plan(&topo, &mut memory, &devices, &policies));
        let n = topo.possible.len() as u32;
        let mut offline = CpuSet::new();
        for (i, &(cpu, down)) in ops.iter().enumerate() {
            let cpu = cpu % n;
            if down && offline.len() + 1 < n as usize {
                offline.insert(cpu);
            } else {
                offline.remove(cpu);
            }
            let now = queue_cpus(&plan(&offline_x86(&topo, &offline), &mut memory, &devices, &policies));
            prop_assert!(now.values().all(|c| !offline.contains(*c)), "a queue on an offline CPU");
            if i == 0 && offline.len() == 1 {
                let moved: BTreeSet<u32> = now.iter().filter(|(irq, c)| initial[irq] != **c).map(|(irq, _)| *irq).collect();
                let lived: BTreeSet<u32> = initial.iter().filter(|(_, c)| offline.contains(**c)).map(|(irq, _)| *irq).collect();
                prop_assert_eq!(moved, lived);
            }
        }
        let back = queue_cpus(&plan(&topo, &mut memory, &devices, &policies));
        prop_assert_eq!(back, initial);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn the_first_queues_sit_on_distinct_cores_whatever_is_banned_or_isolated(
        nodes in 1u32..=3, cores in 1u32..=6, threads in 1u32..=2,
        banned_bits in any::<u64>(), isolated_bits in any::<u64>(), node in 0u32..3,
    ) {
        let mut topo = SyntheticMachine::new(nodes, cores, threads).build();
        let node = node % nodes;
        let n = topo.possible.len() as u32;
        let pick = |bits: u64| -> CpuSet { (0..n).filter(|c| bits >> (c % 64) & 1 == 1).collect() };
        let (banned, isolated) = (pick(banned_bits), pick(isolated_bits));
        topo.isolated = isolated.clone();
        let usable = topo.online.difference(&banned).difference(&isolated);
        let local = usable.intersection(&topo.nodes[&node].cpus);
        prop_assume!(!local.is_empty());
        let local_cores: BTreeSet<Option<u32>> = local.iter().map(|c| topo.sibling_mask(c).first()).collect();
        let k = local_cores.len() as u32;
        let devices = [nic(0, Some(node), k, &topo.online)];
        let policies = [Policy { exclude_cpus: banned, ..Policy::default() }];
        let plan = plan(&topo, &mut TopologyMemory::default(), &devices, &policies);
        let chosen: Vec<u32> = queue_cpus(&plan).into_iter().filter(|(irq, _)| irq % 2 == 1).map(|(_, c)| c).collect();
        let cores_used: BTreeSet<Option<u32>> = chosen.iter().map(|&c| topo.sibling_mask(c).first()).collect();
        prop_assert_eq!(cores_used.len() as u32, k, "first {} queues on {:?}", k, chosen);
        prop_assert!(chosen.iter().all(|c| local.contains(*c)));
    }
}
