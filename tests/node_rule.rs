//! The node of every possible CPU, on fixture roots written as the guests of the VM suite's
//! oracle tier show sysfs: no `cpuN/` for a possible CPU that is not present, node `cpulist`s
//! without it (and without present CPUs that are offline, which keep their `cpuN/nodeM` link).
//! The kernel masks written for managed NVMe queues are the ones real kernels showed in those
//! guests (tests/vm/RESULTS.md), never computed by irqwise.

#[path = "common/acceptance.rs"]
mod acceptance;

use std::fs;
use std::path::Path;

use acceptance::fixture::FixtureRoot;
use acceptance::*;
use irqwise::sysfs::Root;
use irqwise::topology::discover::read_topology;
use irqwise::topology::{NodeSource, Topology};

const NVME: &str = "0000:82:00.0";

/// A guest's CPUs and nodes: `possible`, `present`, `online` lists, each present CPU's node and
/// SMT siblings, node `cpulist`s as the kernel shows them, nodes with memory.
struct Shape<'a> {
    kernel: &'a str,
    arch: &'a str,
    possible: &'a str,
    present: &'a str,
    online: &'a str,
    /// (cpu, node, core siblings while online)
    cpus: &'a [(u32, u32, &'a str)],
    /// (node, cpulist, distance row)
    nodes: &'a [(u32, &'a str, &'a str)],
    has_memory: &'a str,
}

/// Writes `shape` under `root` as x86 sysfs does: `cpuN/` for present CPUs only, with `online`
/// (none for cpu0), the `nodeM` link and, while online, topology lists; an offline CPU's lists
/// are empty.
fn write_shape(root: &Path, s: &Shape) {
    let cpu = "sys/devices/system/cpu";
    for (f, v) in [("possible", s.possible), ("present", s.present), ("online", s.online), ("isolated", "")] {
        write_file(root, &format!("{cpu}/{f}"), &format!("{v}\n"));
    }
    let online = cpus(s.online);
    for &(id, node, core) in s.cpus {
        let d = format!("{cpu}/cpu{id}");
        if id != 0 {
            write_file(root, &format!("{d}/online"), if online.contains(id) { "1\n" } else { "0\n" });
        }
        fs::create_dir_all(root.join(format!("{d}/node{node}"))).unwrap();
        if online.contains(id) {
            let package: String = s.nodes.iter().find(|n| n.0 == node).map(|n| n.1.to_string()).unwrap();
            for (f, v) in
                [("core_cpus_list", core), ("package_cpus_list", package.as_str()), ("die_cpus_list", &package)]
            {
                write_file(root, &format!("{d}/topology/{f}"), &format!("{v}\n"));
            }
            write_file(root, &format!("{d}/topology/core_id"), &format!("{}\n", cpus(core).first().unwrap()));
            write_file(root, &format!("{d}/topology/physical_package_id"), &format!("{node}\n"));
        }
    }
    let ids: Vec<String> = s.nodes.iter().map(|n| n.0.to_string()).collect();
    for &(node, list, distance) in s.nodes {
        write_file(root, &format!("sys/devices/system/node/node{node}/cpulist"), &format!("{list}\n"));
        write_file(root, &format!("sys/devices/system/node/node{node}/distance"), &format!("{distance}\n"));
    }
    for f in ["online", "possible", "has_cpu"] {
        write_file(root, &format!("sys/devices/system/node/{f}"), &format!("{}\n", ids.join(",")));
    }
    write_file(root, "sys/devices/system/node/has_memory", &format!("{}\n", s.has_memory));
    write_file(root, "proc/sys/kernel/osrelease", &format!("{}\n", s.kernel));
    write_file(root, "proc/sys/kernel/arch", &format!("{}\n", s.arch));
}

/// Debian's 6.1 under `-smp cpus=8,maxcpus=12,sockets=2,cores=3,threads=2`, nodes 0-5 | 6-11,
/// booted with `maxcpus=7`: CPUs 8-11 possible but not present, CPU 7 present but offline.
fn maxcpus_6_1(arch: &str) -> Shape<'_> {
    Shape {
        kernel: "6.1.0-57-amd64",
        arch,
        possible: "0-11",
        present: "0-7",
        online: "0-6",
        cpus: &[
            (0, 0, "0-1"),
            (1, 0, "0-1"),
            (2, 0, "2-3"),
            (3, 0, "2-3"),
            (4, 0, "4-5"),
            (5, 0, "4-5"),
            (6, 1, "6"),
            (7, 1, ""),
        ],
        nodes: &[(0, "0-5", "10 20"), (1, "6", "20 10")],
        has_memory: "0-1",
    }
}

fn discover(root: &Path) -> Topology {
    read_topology(&Root::new(root)).unwrap()
}

/// (node, source) of each CPU of `list`.
fn nodes_of(topo: &Topology, list: &str) -> Vec<(u32, Option<u32>, NodeSource)> {
    cpus(list).iter().map(|c| (c, topo.cpus[&c].node, topo.cpus[&c].node_source)).collect()
}

#[test]
fn x86_gives_cpus_that_are_not_present_the_online_nodes_round_robin() {
    let dir = tempfile::tempdir().unwrap();
    write_shape(dir.path(), &maxcpus_6_1("x86_64"));
    let topo = discover(dir.path());
    use NodeSource::*;
    assert_eq!(
        nodes_of(&topo, "5-11"),
        vec![
            (5, Some(0), Sysfs),
            (6, Some(1), Sysfs),
            // Present but offline: in no node's cpulist, placed by its cpu7/node1 link.
            (7, Some(1), Sysfs),
            (8, Some(0), RoundRobinAtBoot),
            (9, Some(1), RoundRobinAtBoot),
            (10, Some(0), RoundRobinAtBoot),
            (11, Some(1), RoundRobinAtBoot),
        ]
    );
    assert!(topo.unknown_node_cpus().is_empty());
    let table = run_ok(dir.path(), empty_config().path(), &["topology"]);
    assert!(table.contains("cpus 8,10 on node 0: round robin at boot (not present)"), "{table}");
    assert!(table.contains("cpus 9,11 on node 1: round robin at boot (not present)"), "{table}");
    let json: serde_json::Value =
        serde_json::from_str(&run_ok(dir.path(), empty_config().path(), &["topology", "--json"])).unwrap();
    let sources: Vec<&str> =
        json["cpus"].as_array().unwrap().iter().map(|c| c["node_source"].as_str().unwrap()).collect();
    assert_eq!(
        sources[6..],
        ["sysfs", "sysfs", "round-robin-at-boot", "round-robin-at-boot", "round-robin-at-boot", "round-robin-at-boot"]
    );
}

#[test]
fn the_round_robin_skips_nodes_without_memory_at_boot() {
    // Three nodes, node 1 without memory: numa_init_array() sees only nodes 0 and 2 online.
    let dir = tempfile::tempdir().unwrap();
    let shape = Shape {
        kernel: "6.1.0-57-amd64",
        arch: "x86_64",
        possible: "0-8",
        present: "0-5",
        online: "0-5",
        cpus: &[(0, 0, "0"), (1, 0, "1"), (2, 1, "2"), (3, 1, "3"), (4, 2, "4"), (5, 2, "5")],
        nodes: &[(0, "0-1", "10 20 30"), (1, "2-3", "20 10 20"), (2, "4-5", "30 20 10")],
        has_memory: "0,2",
    };
    write_shape(dir.path(), &shape);
    let topo = discover(dir.path());
    let rr = NodeSource::RoundRobinAtBoot;
    assert_eq!(nodes_of(&topo, "6-8"), vec![(6, Some(0), rr), (7, Some(2), rr), (8, Some(0), rr)]);
}

#[test]
fn without_a_rule_cpus_that_are_not_present_are_unknown() {
    let dir = tempfile::tempdir().unwrap();
    write_shape(dir.path(), &maxcpus_6_1("aarch64"));
    let topo = discover(dir.path());
    assert_eq!(topo.unknown_node_cpus(), cpus("8-11"));
    assert_eq!(nodes_of(&topo, "8")[0], (8, None, NodeSource::Unknown));
    let table = run_ok(dir.path(), empty_config().path(), &["topology"]);
    assert!(table.contains("cpus 8-11 on node ?: unknown (not present)"), "{table}");
}

#[test]
fn when_every_possible_cpu_is_present_sysfs_places_them_all() {
    // Debian's 6.12 under the same QEMU command: possible = present = 0-7.
    let dir = tempfile::tempdir().unwrap();
    let mut shape = maxcpus_6_1("x86_64");
    (shape.kernel, shape.possible) = ("6.12.117+deb12-amd64", "0-7");
    write_shape(dir.path(), &shape);
    let topo = discover(dir.path());
    assert!(topo.cpus.values().all(|c| c.node_source == NodeSource::Sysfs), "{:?}", nodes_of(&topo, "0-7"));
    let table = run_ok(dir.path(), empty_config().path(), &["topology"]);
    assert!(!table.contains("round robin") && !table.contains("unknown"), "{table}");
}

/// Writes the kernel's `masks` (one per I/O queue) as the IRQs' affinity and blk-mq's map.
fn kernel_masks(fx: &mut FixtureRoot, root: &Path, masks: &[&str]) {
    let io = fx.irqs_of(NVME)[1..].to_vec();
    assert_eq!(io.len(), masks.len());
    let mq = root.join(format!("sys/devices/pci0000:82/{NVME}/nvme/nvme0/nvme0n1/mq"));
    fs::remove_dir_all(&mq).unwrap();
    for (q, (irq, m)) in io.iter().zip(masks).enumerate() {
        let set = cpus(m);
        fx.irq_affinity(*irq, &set);
        let d = mq.join(q.to_string());
        fs::create_dir_all(&d).unwrap();
        let list: Vec<String> = set.iter().map(|c| c.to_string()).collect();
        fs::write(d.join("cpu_list"), format!("{}\n", list.join(", "))).unwrap();
        for c in &set {
            fs::create_dir_all(d.join(format!("cpu{c}"))).unwrap();
        }
    }
}

/// What 6.1 showed for the 7-queue controller on node 1 of the maxcpus guest at boot.
const KERNEL_7_QUEUES: [&str; 7] = ["6-7,9", "0,11", "1,8", "2,10", "3", "4", "5"];

#[test]
fn the_6_1_maxcpus_guest_is_predicted_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write_shape(root, &maxcpus_6_1("x86_64"));
    let mut fx = FixtureRoot::at(root);
    fx.nvme(NVME, "nvme0", Some(1), 7, true, false);
    kernel_masks(&mut fx, root, &KERNEL_7_QUEUES);
    let plan = plan_json(root, empty_config().path());
    let queues = queue_irqs(device(&plan, NVME), Some("io"));
    assert_eq!(queues.len(), 7);
    for (q, p) in queues.iter().enumerate() {
        assert_eq!(set_of(&p["desired"]), cpus(KERNEL_7_QUEUES[q]), "queue {q}: {p}");
        assert_eq!(p["mismatch"].as_bool(), Some(false), "queue {q}: {p}");
        assert!(p.get("uncertain").is_none(), "queue {q}: {p}");
    }
}

#[test]
fn without_a_rule_the_prediction_is_uncertain_not_a_mismatch() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write_shape(root, &maxcpus_6_1("aarch64"));
    let mut fx = FixtureRoot::at(root);
    fx.nvme(NVME, "nvme0", Some(1), 7, true, false);
    kernel_masks(&mut fx, root, &KERNEL_7_QUEUES);
    let plan = plan_json(root, empty_config().path());
    for (q, p) in queue_irqs(device(&plan, NVME), Some("io")).iter().enumerate() {
        assert_eq!(p["mismatch"].as_bool(), Some(false), "queue {q}: {p}");
        let why = p["uncertain"].as_str().unwrap_or_default();
        assert!(why.contains("CPUs 8-11 have no node in sysfs"), "queue {q}: {p}");
    }
    let table = run_ok(root, empty_config().path(), &["plan"]);
    assert!(table.contains("(0 differ from prediction, 7 uncertain)"), "{table}");

    // A present CPU the kernel put elsewhere is still a mismatch.
    let io = fx.irqs_of(NVME)[1..].to_vec();
    fx.irq_affinity(io[4], &cpus("4"));
    let plan = plan_json(root, empty_config().path());
    let p = &queue_irqs(device(&plan, NVME), Some("io"))[4];
    assert_eq!(p["mismatch"].as_bool(), Some(true), "{p}");
}
