//! Conformance of the pure strategies with the kernel golden vectors (`tests/data/vectors/`),
//! plus hand-derived expectations for irqwise's own cores-first order.

#[path = "common/vectors.rs"]
mod vectors;

use irqwise::choices::SpreadOrder;
use irqwise::cpuset::CpuSet;
use irqwise::kernel::group_cpus::{group_cpus_evenly, GroupAlgorithm, GroupRules};
use irqwise::kernel::heapsort::SortVariant;
use irqwise::kernel::local_spread::{nearest_cpu_node, numa_hops, numa_levels, spread_order};
use irqwise::topology::synthetic::SyntheticMachine;
use vectors::{Case, GroupCase, GroupResult, SpreadCase};

/// The rules a vector result was computed with, or why they are unknown.
fn rules_of(r: &GroupResult) -> Result<GroupRules, String> {
    let algorithm = match r.algorithm.as_str() {
        "mainline" => GroupAlgorithm::Mainline,
        "cluster_aware" => GroupAlgorithm::ClusterAware,
        other => return Err(format!("unknown algorithm {other:?}")),
    };
    let sort = match r.sort.as_str() {
        "heapsort-v5.1" => SortVariant::S1,
        "heapsort-v6.9" => SortVariant::S2,
        "heapsort-v6.11" => SortVariant::S3,
        other => return Err(format!("unknown sort {other:?}")),
    };
    Ok(GroupRules { algorithm, sort })
}

/// Index of the first group that differs (or the first missing one), with both sides.
fn first_group_difference(got: &[CpuSet], want: &[CpuSet]) -> Option<String> {
    let n = got.len().max(want.len());
    (0..n).find(|&i| got.get(i) != want.get(i)).map(|i| {
        let show = |g: Option<&CpuSet>| g.map_or("<missing>".to_string(), |s| format!("[{s}]"));
        format!("first differing group {i}: got {} want {}", show(got.get(i)), show(want.get(i)))
    })
}

/// Checks every result of one `group_cpus_evenly` case; pushes one message per mismatch.
fn check_group_case(file: &str, topo: &irqwise::topology::Topology, case: &GroupCase, failures: &mut Vec<String>) {
    let mut variants_seen = Vec::new();
    for r in &case.results {
        let variant = format!("{}/{}", r.algorithm, r.sort);
        let at = format!("{file} numgrps={} {variant}", case.numgrps);
        let rules = match rules_of(r) {
            Ok(rules) => rules,
            Err(e) => {
                failures.push(format!("{at}: {e}"));
                continue;
            }
        };
        variants_seen.push(rules);
        let got = group_cpus_evenly(topo, case.numgrps, rules);
        if let Some(diff) = first_group_difference(&got.groups, &r.groups) {
            failures.push(format!("{at}: {diff}"));
        }
        if got.nummasks != r.nummasks {
            failures.push(format!("{at}: nummasks got {} want {}", got.nummasks, r.nummasks));
        }
        if got.pass_groups != r.pass_groups {
            failures.push(format!("{at}: pass_groups got {:?} want {:?}", got.pass_groups, r.pass_groups));
        }
    }
    // All four kernel variants must be present, or a vector would silently test less.
    let expected = [
        GroupRules { algorithm: GroupAlgorithm::Mainline, sort: SortVariant::S1 },
        GroupRules { algorithm: GroupAlgorithm::Mainline, sort: SortVariant::S2 },
        GroupRules { algorithm: GroupAlgorithm::Mainline, sort: SortVariant::S3 },
        GroupRules { algorithm: GroupAlgorithm::ClusterAware, sort: SortVariant::S3 },
    ];
    for rules in expected {
        if !variants_seen.contains(&rules) {
            failures.push(format!("{file} numgrps={}: no result for {rules:?}", case.numgrps));
        }
    }
}

/// Checks one `numa_spread` case: the three kernel orders, nearest node, hops and levels.
fn check_spread_case(file: &str, topo: &irqwise::topology::Topology, case: &SpreadCase, failures: &mut Vec<String>) {
    let node = u32::try_from(case.node).ok();
    let at = format!("{file} node={}", case.node);
    let orders = [
        ("cpumask_local_spread", SpreadOrder::Kernel, &case.cpumask_local_spread),
        ("for_each_numa_hop_mask", SpreadOrder::Hops, &case.for_each_numa_hop_mask),
        ("cpumask_local_spread_legacy", SpreadOrder::Legacy, &case.cpumask_local_spread_legacy),
    ];
    for (name, order, want) in orders {
        let got = spread_order(topo, node, order);
        if &got != want {
            let i = got.iter().zip(want.iter()).position(|(a, b)| a != b).unwrap_or(got.len().min(want.len()));
            failures.push(format!("{at} {name}: first difference at position {i}: got {got:?} want {want:?}"));
        }
    }
    if let Some(n) = node {
        let want = u32::try_from(case.nearest_cpu_node).ok();
        let got = nearest_cpu_node(topo, n);
        if got != want {
            failures.push(format!("{at} nearest_cpu_node: got {got:?} want {want:?}"));
        }
    }
    let got_hops: Vec<(usize, u32, CpuSet)> =
        numa_hops(topo, node).into_iter().map(|h| (h.level, h.distance, h.new_cpus)).collect();
    let want_hops: Vec<(usize, u32, CpuSet)> =
        case.hops.iter().map(|h| (h.level, h.distance, h.new_cpus.clone())).collect();
    if got_hops != want_hops {
        failures.push(format!("{at} hops: got {got_hops:?} want {want_hops:?}"));
    }
    let levels = numa_levels(topo);
    if levels != case.numa_levels {
        failures.push(format!("{at} numa_levels: got {levels:?} want {:?}", case.numa_levels));
    }
}

/// Runs `check` over every case of every indexed file and fails with the collected messages.
fn for_every_vector(mut check: impl FnMut(&str, &irqwise::topology::Topology, &Case, &mut Vec<String>)) {
    let index = vectors::index();
    assert!(!index.files.is_empty(), "index.json lists no vector files");
    let mut failures = Vec::new();
    for entry in &index.files {
        let (topo, cases) = vectors::load_topology_and_cases(&entry.file);
        for case in &cases {
            check(&entry.file, &topo, case, &mut failures);
        }
    }
    if !failures.is_empty() {
        let shown: Vec<&str> = failures.iter().take(25).map(String::as_str).collect();
        panic!("{} mismatches with the golden vectors:\n{}", failures.len(), shown.join("\n"));
    }
}

#[test]
fn group_cpus_evenly_matches_every_golden_vector() {
    for_every_vector(|file, topo, case, failures| {
        if let Case::Groups(g) = case {
            check_group_case(file, topo, g, failures);
        }
    });
}

#[test]
fn numa_orders_match_every_golden_vector() {
    for_every_vector(|file, topo, case, failures| {
        if let Case::Spread(s) = case {
            check_spread_case(file, topo, s, failures);
        }
    });
}

#[test]
fn index_covers_every_vector_file_and_case() {
    let index = vectors::index();
    let mut on_disk: Vec<String> = std::fs::read_dir(vectors::vectors_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".json") && n != "index.json")
        .collect();
    on_disk.sort();
    let mut listed: Vec<String> = index.files.iter().map(|f| f.file.clone()).collect();
    listed.sort();
    assert_eq!(listed, on_disk, "index.json and the vector directory disagree");
    for entry in &index.files {
        let v = vectors::load(&entry.file);
        assert_eq!(v.schema, "kalgo-golden/1", "{}", entry.file);
        let groups = v.cases.iter().filter(|c| matches!(c, Case::Groups(_))).count();
        let spreads = v.cases.iter().filter(|c| matches!(c, Case::Spread(_))).count();
        assert_eq!((groups, spreads), (entry.group_cases, entry.spread_cases), "{}", entry.file);
    }
}

#[test]
fn derived_masks_cover_every_possible_cpu() {
    // The topology builder relies on the vectors giving the kernel's masks for every CPU.
    for entry in &vectors::index().files {
        let v = vectors::load(&entry.file);
        let d = &v.topology.derived;
        for c in &d.possible {
            assert!(d.topology_sibling_cpumask.contains_key(&c), "{}: cpu {c} has no sibling mask", entry.file);
            assert!(d.topology_cluster_cpumask.contains_key(&c), "{}: cpu {c} has no cluster mask", entry.file);
        }
    }
}

#[test]
fn cores_first_visits_every_core_before_second_threads() {
    // 2 nodes × 8 cores × 2 threads, siblings N / N+16: node 0 = cores 0-7 (CPUs 0-7, 16-23),
    // node 1 = cores 8-15 (CPUs 8-15, 24-31).
    let topo = SyntheticMachine::new(2, 8, 2).build();
    let want: Vec<u32> = (8..16).chain(24..32).chain(0..8).chain(16..24).collect();
    assert_eq!(spread_order(&topo, Some(1), SpreadOrder::CoresFirst), want);
    // The kernel's own order from node 1 is the whole local node ascending, siblings mixed in.
    let kernel: Vec<u32> = (8..16).chain(24..32).chain(0..8).chain(16..24).collect();
    assert_eq!(spread_order(&topo, Some(1), SpreadOrder::Kernel), kernel);
}

#[test]
fn cores_first_ranks_threads_among_online_siblings() {
    // 1 node, 4 cores × 2 threads, siblings N / N+4: cores (0,4) (1,5) (2,6) (3,7). With CPU 1
    // offline, x86 drops it from its sibling's mask, so CPU 5 is core 1's first online thread:
    // first threads 0, 2, 3, 5, then second threads 4, 6, 7.
    let mut topo = SyntheticMachine::new(1, 4, 2).build();
    topo.online.remove(1);
    if let Some(c) = topo.cpus.get_mut(&1) {
        c.online = false;
        c.core = None;
    }
    if let Some(c) = topo.cpus.get_mut(&5) {
        c.core = Some(CpuSet::single(5));
    }
    assert_eq!(spread_order(&topo, Some(0), SpreadOrder::CoresFirst), [0, 2, 3, 5, 4, 6, 7]);
    assert_eq!(spread_order(&topo, None, SpreadOrder::CoresFirst), [0, 2, 3, 5, 4, 6, 7]);
    assert_eq!(spread_order(&topo, Some(0), SpreadOrder::Kernel), [0, 2, 3, 4, 5, 6, 7]);
}

#[test]
fn rules_for_each_kernel_match_a_vector_variant() {
    // The version map must name a (algorithm, sort) pair the vectors actually contain.
    let v = vectors::load("t03_1node_40cpu_cluster4.json");
    let Some(Case::Groups(case)) = v.cases.iter().find(|c| matches!(c, Case::Groups(g) if g.numgrps == 11)) else {
        panic!("t03 has no 11-group case");
    };
    for (ver, algorithm, sort) in [
        ("6.8", "mainline", "heapsort-v5.1"),
        ("6.9", "mainline", "heapsort-v6.9"),
        ("6.12", "mainline", "heapsort-v6.11"),
        ("7.0", "cluster_aware", "heapsort-v6.11"),
    ] {
        let rules = GroupRules::for_kernel(irqwise::kernel::KernelVersion::parse(ver).unwrap());
        let r = case.results.iter().find(|r| r.algorithm == algorithm && r.sort == sort).unwrap();
        assert_eq!(rules_of(r).unwrap(), rules, "kernel {ver}");
    }
}

mod invariants {
    use super::*;
    use proptest::prelude::*;

    /// A synthetic machine with some CPUs made absent (x86: empty masks) and some offline.
    fn machine() -> impl Strategy<Value = irqwise::topology::Topology> {
        (1u32..5, 1u32..7, 1u32..3, 1u32..4, prop::collection::vec(0u8..3, 48)).prop_map(
            |(nodes, cpn, tpc, cpc, states)| {
                let m = SyntheticMachine { cores_per_cluster: cpc, ..SyntheticMachine::new(nodes, cpn, tpc) };
                let mut topo = m.build();
                for (cpu, state) in &mut topo.cpus {
                    match states[*cpu as usize % states.len()] {
                        1 => {
                            (state.online, state.core, state.cluster) = (false, None, None);
                            topo.online.remove(*cpu);
                        }
                        2 if *cpu != 0 => {
                            (state.present, state.online, state.core, state.cluster) = (false, false, None, None);
                            topo.online.remove(*cpu);
                            topo.present.remove(*cpu);
                        }
                        _ => {}
                    }
                }
                topo
            },
        )
    }

    proptest! {
        /// `group_cpus_evenly()`'s contract: every possible CPU in exactly one group, nummasks = min(numgrps, |P|),
        /// and exactly groups 0..nummasks are non-empty; for all four kernel variants.
        #[test]
        fn groups_partition_the_possible_cpus(topo in machine(), numgrps in 1usize..60) {
            for (algorithm, sort) in [
                (GroupAlgorithm::Mainline, SortVariant::S1),
                (GroupAlgorithm::Mainline, SortVariant::S2),
                (GroupAlgorithm::Mainline, SortVariant::S3),
                (GroupAlgorithm::ClusterAware, SortVariant::S3),
            ] {
                let g = group_cpus_evenly(&topo, numgrps, GroupRules { algorithm, sort });
                prop_assert_eq!(g.groups.len(), numgrps);
                prop_assert_eq!(g.nummasks, numgrps.min(topo.possible.len()));
                let total: usize = g.groups.iter().map(CpuSet::len).sum();
                prop_assert_eq!(total, topo.possible.len());
                let union = g.groups.iter().fold(CpuSet::new(), |acc, s| &acc | s);
                prop_assert_eq!(union, topo.possible.clone());
                for (i, s) in g.groups.iter().enumerate() {
                    prop_assert_eq!(s.is_empty(), i >= g.nummasks, "group {} of {:?}", i, g);
                }
            }
        }

        /// Every order from every node holds each online CPU exactly once (Hops: nothing from a
        /// node without online CPUs).
        #[test]
        fn orders_are_permutations_of_online(topo in machine(), node in 0u32..5) {
            let mut online: Vec<u32> = topo.online.iter().collect();
            online.sort_unstable();
            let has_cpus = topo.online.iter().any(|c| topo.cpu_node(c) == Some(node));
            for order in [SpreadOrder::Kernel, SpreadOrder::Hops, SpreadOrder::Legacy, SpreadOrder::CoresFirst] {
                let mut got = spread_order(&topo, Some(node), order);
                got.sort_unstable();
                if order == SpreadOrder::Hops && !has_cpus {
                    prop_assert!(got.is_empty());
                } else {
                    prop_assert_eq!(&got, &online, "{:?} from node {}", order, node);
                }
            }
        }
    }
}
