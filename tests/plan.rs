//! Acceptance: the plan the real binary prints for fixture machines. Expectations come
//! from the sysfs files the fixture wrote (core and node lists) and from the kernel's own groups
//! in the golden vectors (`tests/data/vectors/`), never from the planner or its algorithms.

#[path = "common/acceptance.rs"]
mod acceptance;
#[path = "common/sysfs_tree.rs"]
mod sysfs_tree;
#[path = "common/vectors.rs"]
mod vectors;

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

use acceptance::fixture::{FixtureRoot, NamingScheme};
use acceptance::*;
use irqwise::cpuset::CpuSet;

const NIC: &str = "0000:81:00.0";
const NVME: &str = "0000:82:00.0";

/// The single CPU of each queue IRQ, in queue order (asserting one CPU each).
fn one_cpu_per_queue(dev: &serde_json::Value) -> Vec<u32> {
    desired_per_queue(dev)
        .iter()
        .map(|s| {
            assert_eq!(s.len(), 1, "each NIC queue gets exactly one CPU: {s}");
            s.first().unwrap()
        })
        .collect()
}

#[test]
fn eight_queue_nic_gets_one_physical_core_of_its_node_each() {
    let dir = two_node_root("6.11.0");
    let root = dir.path();
    FixtureRoot::at(root).nic(NIC, "ice", "eth0", Some(1), 8, NamingScheme::IceTxRx);
    let plan = plan_json(root, empty_config().path());
    let nic = device(&plan, NIC);
    assert_eq!((nic["strategy"].as_str(), nic["node"].as_u64()), (Some("numa-hop"), Some(1)));
    let chosen = one_cpu_per_queue(nic);
    assert_eq!(chosen.len(), 8);
    let node1 = node_cpus(root, 1);
    let cores: BTreeSet<String> = chosen.iter().map(|&c| core_of(root, c).to_list_string()).collect();
    assert_eq!(cores.len(), 8, "8 distinct physical cores: {chosen:?}");
    for c in &chosen {
        assert!(core_of(root, *c).is_subset(&node1), "CPU {c}'s core is in node 1 ({node1})");
    }
    for p in queue_irqs(nic, None) {
        assert_eq!(p["action"], "set", "{p}");
    }
    // The misc vector: node 1's CPUs as a set.
    let misc: Vec<_> = irqs(nic).iter().filter(|p| p["role"] == "misc").collect();
    assert_eq!(misc.len(), 1);
    assert_eq!(set_of(&misc[0]["desired"]), node1);
}

#[test]
fn twenty_four_queue_nic_walks_cores_then_siblings_then_the_next_hop() {
    let dir = two_node_root("6.11.0");
    let root = dir.path();
    FixtureRoot::at(root).nic(NIC, "mlx5_core", "ens1", Some(1), 24, NamingScheme::Mlx5);
    let plan = plan_json(root, empty_config().path());
    let chosen = one_cpu_per_queue(device(&plan, NIC));
    assert_eq!(chosen.len(), 24);
    let (node0, node1) = (node_cpus(root, 0), node_cpus(root, 1));
    let distinct = |cpus: &[u32]| cpus.iter().map(|&c| core_of(root, c).to_list_string()).collect::<BTreeSet<_>>();
    // 0..8: node 1's eight cores, one thread each.
    let first = &chosen[0..8];
    assert_eq!(distinct(first).len(), 8, "{first:?}");
    assert!(first.iter().all(|&c| node1.contains(c)), "{first:?}");
    // 8..16: the other thread of each of those cores.
    let siblings: CpuSet =
        first.iter().flat_map(|&c| core_of(root, c).iter().filter(move |&s| s != c).collect::<Vec<_>>()).collect();
    assert_eq!(chosen[8..16].iter().copied().collect::<CpuSet>(), siblings);
    assert_eq!(siblings.len(), 8);
    // 16..24: node 0 (the next NUMA hop), eight distinct cores.
    let third = &chosen[16..24];
    assert!(third.iter().all(|&c| node0.contains(c)), "{third:?}");
    assert_eq!(distinct(third).len(), 8, "{third:?}");
    let all: CpuSet = chosen.iter().copied().collect();
    assert_eq!(all.len(), 24, "one CPU per queue, never twice");
}

#[test]
fn more_queues_than_cpus_wrap_and_none_is_empty() {
    let dir = cpu_root(1, 2, 2, "6.11.0");
    let root = dir.path();
    FixtureRoot::at(root).nic(NIC, "ixgbe", "eth0", Some(0), 10, NamingScheme::TxRx);
    let plan = plan_json(root, empty_config().path());
    let chosen = one_cpu_per_queue(device(&plan, NIC));
    // 4 CPUs: queue i and queue i+4 share a CPU.
    for q in 4..10 {
        assert_eq!(chosen[q], chosen[q - 4], "queue {q} wraps: {chosen:?}");
    }
    assert_eq!(chosen[..4].iter().copied().collect::<CpuSet>(), cpus("0-3"));
}

/// An NVMe-class controller whose driver is not `nvme` (so its I/O vectors are ordinary,
/// movable IRQs): admin queue `nvme0q0` and `io` I/O queues `nvme0q1..`.
fn unmanaged_nvme(root: &Path, io: u32, node: u32) {
    let names: Vec<String> = (0..=io).map(|q| format!("nvme0q{q}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    FixtureRoot::at(root).msi_device(NVME, 0x010802, "nvme_vendor", Some(node), &refs);
}

/// The I/O queues of an unmanaged NVMe controller with `n` I/O queues on the golden machine t13
/// ([`golden_cluster_machine`]) planned with kernel `release`, for each `n` of `counts`: queue
/// i's desired set beside the kernel's group i. The expected groups are the kernel's, not the
/// planner's code.
fn golden_cluster_plans(release: &str, algorithm: &str, counts: &[usize]) -> Vec<(Vec<CpuSet>, Vec<CpuSet>)> {
    let mut out = Vec::new();
    for &n in counts {
        let (dir, want) = golden_cluster_machine(release, algorithm, n);
        unmanaged_nvme(dir.path(), n as u32, 0);
        let plan = plan_json(dir.path(), empty_config().path());
        let nvme = device(&plan, NVME);
        assert_eq!(nvme["strategy"], "cluster-group", "{release}");
        let queues = queue_irqs(nvme, Some("io"));
        assert_eq!(queues.len(), n, "{release}");
        for (i, p) in queues.iter().enumerate() {
            assert_eq!(
                (p["queue"].as_u64(), &p["managed"], &p["action"]),
                (Some(i as u64), &false.into(), &"set".into())
            );
        }
        let admin: Vec<_> = irqs(nvme).iter().filter(|p| p["role"] == "admin").collect();
        assert_eq!(set_of(&admin[0]["desired"]), node_cpus(dir.path(), 0), "the admin queue: the node's CPUs");
        out.push((desired_per_queue(nvme), want));
    }
    out
}

/// The golden machine t13 (1 node, 8 clusters of 2 cores × 2 threads) written as sysfs with
/// kernel `release`, and the kernel's `n` groups on it under `algorithm` (heapsort of 6.11), as
/// its vector file records them.
fn golden_cluster_machine(release: &str, algorithm: &str, n: usize) -> (tempfile::TempDir, Vec<CpuSet>) {
    let (mut topo, cases) = vectors::load_topology_and_cases("t13_1node_cluster_with_smt.json");
    topo.kernel = Some(release.into());
    topo.arch = Some("x86_64".into());
    let groups = cases
        .iter()
        .find_map(|c| match c {
            vectors::Case::Groups(g) if g.numgrps == n => Some(g),
            _ => None,
        })
        .and_then(|g| g.results.iter().find(|r| r.algorithm == algorithm && r.sort == "heapsort-v6.11"))
        .unwrap_or_else(|| panic!("t13 has no {algorithm} case for {n} groups"))
        .groups
        .clone();
    let dir = tempfile::tempdir().unwrap();
    sysfs_tree::write_topology(dir.path(), &topo);
    (dir, groups)
}

#[test]
fn unmanaged_nvme_io_queues_get_the_cluster_aware_groups_in_order() {
    let counts = [6, 8, 10, 12];
    for (got, want) in golden_cluster_plans("7.0.0", "cluster_aware", &counts) {
        assert_eq!(got, want, "queue i → the kernel's group i ({} queues)", want.len());
    }
}

#[test]
fn the_same_controller_on_an_older_kernel_gets_mainline_groups() {
    let counts = [6, 8, 10, 12];
    let mainline = golden_cluster_plans("6.11.0", "mainline", &counts);
    for (got, want) in &mainline {
        assert_eq!(got, want, "{} queues", want.len());
    }
    // The machine tells the two algorithms apart: 8, 10 and 12 queues differ between them.
    let aware = golden_cluster_plans("7.0.0", "cluster_aware", &counts);
    let differ = mainline.iter().zip(&aware).filter(|(m, a)| m.1 != a.1).count();
    assert_eq!(differ, 3);
}

/// Rewrites the namespace's blk-mq map (`mq/<i>/cpuN` entries and `cpu_list`) to `groups`.
fn write_blk_mq(root: &Path, groups: &[CpuSet]) {
    let mq = root.join(format!("sys/devices/pci0000:82/{NVME}/nvme/nvme0/nvme0n1/mq"));
    fs::remove_dir_all(&mq).unwrap();
    for (i, g) in groups.iter().enumerate() {
        let q = mq.join(i.to_string());
        fs::create_dir_all(&q).unwrap();
        fs::write(q.join("cpu_list"), format!("{}\n", g.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(", ")))
            .unwrap();
        for c in g {
            fs::create_dir_all(q.join(format!("cpu{c}"))).unwrap();
        }
    }
}

#[test]
fn managed_nvme_is_predicted_and_a_mismatch_is_flagged() {
    let (dir, expected) = golden_cluster_machine("7.0.0", "cluster_aware", 4);
    let root = dir.path();
    let mut fx = FixtureRoot::at(root);
    fx.nvme(NVME, "nvme0", Some(0), 4, true, false);
    // The kernel shows its groups on every I/O IRQ and in blk-mq, except I/O queue 2's IRQ,
    // deliberately put on CPU 5.
    let io_irqs = fx.irqs_of(NVME)[1..].to_vec();
    for (q, irq) in io_irqs.iter().enumerate() {
        let shown = if q == 2 { CpuSet::single(5) } else { expected[q].clone() };
        fx.irq_affinity(*irq, &shown);
    }
    write_blk_mq(root, &expected);
    let before: Vec<String> = io_irqs.iter().map(|i| affinity_list(root, *i)).collect();

    let plan = plan_json(root, empty_config().path());
    let queues = queue_irqs(device(&plan, NVME), Some("io"));
    assert_eq!(queues.len(), 4);
    for (q, p) in queues.iter().enumerate() {
        assert_eq!((p["action"].as_str(), p["managed"].as_bool()), (Some("managed"), Some(true)), "{p}");
        assert_eq!(set_of(&p["desired"]), expected[q], "desired = the kernel's group {q}");
        assert_eq!(p["mismatch"].as_bool(), Some(q == 2), "{p}");
    }
    let reason = queues[2]["reason"].as_str().unwrap();
    assert!(reason.contains(&expected[2].to_list_string()) && reason.contains("kernel shows 5"), "{reason}");

    // apply never writes managed IRQs.
    let out = run_ok(root, empty_config().path(), &["apply"]);
    assert!(out.contains(" 4 managed,"), "{out}");
    let after: Vec<String> = io_irqs.iter().map(|i| affinity_list(root, *i)).collect();
    assert_eq!(before, after);
}

fn affinity_list(root: &Path, irq: u32) -> String {
    fs::read_to_string(root.join(format!("proc/irq/{irq}/smp_affinity_list"))).unwrap()
}

#[test]
fn isolated_cpus_never_get_device_irqs_by_default() {
    let dir = two_node_root("6.11.0");
    let root = dir.path();
    write_file(root, "sys/devices/system/cpu/isolated", "8-11\n");
    write_file(root, "sys/devices/system/cpu/nohz_full", "12\n");
    FixtureRoot::at(root).nic(NIC, "ice", "eth0", Some(1), 8, NamingScheme::IceTxRx);
    let plan = plan_json(root, empty_config().path());
    let forbidden = cpus("8-12");
    for p in irqs(device(&plan, NIC)) {
        assert!(!set_of(&p["desired"]).intersects(&forbidden), "{p}");
    }
}

#[test]
fn plan_table_shows_each_irq_with_current_desired_and_action() {
    let dir = two_node_root("6.11.0");
    let root = dir.path();
    let mut fx = FixtureRoot::at(root);
    fx.nic(NIC, "ice", "eth0", Some(1), 2, NamingScheme::IceTxRx);
    let irq = fx.irqs_of(NIC)[1];
    let text = run_ok(root, empty_config().path(), &["plan"]);
    let row = text
        .lines()
        .find(|l| l.split_whitespace().next() == Some(irq.to_string().as_str()))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        text.lines().next().is_some_and(|h| h
            .split_whitespace()
            .eq(["IRQ", "NAME", "QUEUE", "CURRENT", "->", "DESIRED", "ACTION", "REASON"])),
        "{text}"
    );
    assert!(row.contains("ice-eth0-TxRx-0") && row.contains("rxtx 0") && row.contains("0-31 -> "), "{row}");
    assert!(row.contains(" set "), "{row}");
    assert!(text.contains("3 IRQs on 1 devices"), "{text}");
}

/// The dump's online CPUs: `cpu/online`, else the `cpuN` directories whose `online` is not 0.
fn dump_online(m: &Path) -> CpuSet {
    let cpu = m.join("sys/devices/system/cpu");
    if let Ok(t) = fs::read_to_string(cpu.join("online")) {
        return cpus(t.trim());
    }
    fs::read_dir(&cpu)
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.strip_prefix("cpu")?.parse::<u32>().ok())
        .filter(|n| fs::read_to_string(cpu.join(format!("cpu{n}/online"))).map_or(true, |t| t.trim() != "0"))
        .collect()
}

/// Every hwloc machine, with an 8-queue NIC on its last node with CPUs and a 4-queue managed
/// NVMe on node 0: the plan is computed; each NIC queue IRQ gets exactly one CPU that the dump
/// lists as online and not isolated.
#[test]
fn every_hwloc_machine_with_injected_devices_is_planned() {
    let all = extract_hwloc();
    let mut machines = 0;
    for entry in fs::read_dir(all.path()).unwrap().flatten().filter(|e| e.path().is_dir()) {
        let m = entry.path();
        let name = m.file_name().unwrap().to_string_lossy().into_owned();
        let online = dump_online(&m);
        let isolated = fs::read_to_string(m.join("sys/devices/system/cpu/isolated"))
            .ok()
            .map(|t| cpus(t.trim()))
            .unwrap_or_default();
        let node = (0..64u32).rev().find(|n| {
            fs::read_to_string(m.join(format!("sys/devices/system/node/node{n}/cpulist")))
                .is_ok_and(|t| cpus(t.trim()).intersects(&online))
        });
        FixtureRoot::at(&m).nic(NIC, "mlx5_core", "ens1", node, 8, NamingScheme::Mlx5).nvme(
            NVME,
            "nvme0",
            Some(0),
            4,
            true,
            true,
        );
        let plan = plan_json(&m, empty_config().path());
        let nic = device(&plan, NIC);
        let queues = desired_per_queue(nic);
        assert_eq!(queues.len(), 8, "{name}");
        for (q, set) in queues.iter().enumerate() {
            assert_eq!(set.len(), 1, "{name}: queue {q} gets one CPU: {set}");
            let cpu = set.first().unwrap();
            assert!(online.contains(cpu) && !isolated.contains(cpu), "{name}: queue {q} on CPU {cpu}");
        }
        if let Some(n) = node {
            let local = node_cpus(&m, n).intersection(&online).difference(&isolated);
            let first: CpuSet = queues.iter().take(local.len().min(8)).map(|s| s.first().unwrap()).collect();
            assert!(first.is_subset(&local), "{name}: the first queues stay on node {n} ({local}): {first}");
        }
        let nvme = device(&plan, NVME);
        assert!(queue_irqs(nvme, Some("io")).iter().all(|p| p["action"] == "managed"), "{name}");
        machines += 1;
    }
    assert_eq!(machines, 23);
}

/// A kernel with no BTF and no driver module (a fixture root has neither) and no managed queue
/// mask to observe is planned as before irqwise probed kernels: with its version's grouping rule,
/// and the plan says so, once: its grouping line names the version, and one note says that the
/// kernel's behaviour is taken from its version.
#[test]
fn a_kernel_without_btf_or_modules_goes_by_its_version_and_says_so_once() {
    for (release, algorithm, rule) in [("6.11.0", "mainline", "mainline"), ("7.0.0", "cluster_aware", "cluster-aware")]
    {
        let (dir, want) = golden_cluster_machine(release, algorithm, 8);
        unmanaged_nvme(dir.path(), 8, 0);
        let cfg = empty_config();
        let plan = plan_json(dir.path(), cfg.path());
        assert_eq!(desired_per_queue(device(&plan, NVME)), want, "{release}: the version's groups");
        let grouping = &plan["grouping"];
        assert_eq!((&grouping["rule"], &grouping["source"]), (&rule.into(), &"version".into()), "{grouping:#}");
        let evidence = grouping["evidence"].as_str().unwrap();
        assert!(evidence.contains("no BTF") && evidence.contains("no managed NVMe queue"), "{evidence}");
        let text = run_ok(dir.path(), cfg.path(), &["plan"]);
        assert_eq!(text.matches("taken from its version").count(), 1, "{text}");
        assert_eq!(text.lines().filter(|l| l.starts_with("grouping: ")).count(), 1, "{text}");
    }
}
