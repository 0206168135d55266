//! Round trip: hand-built topologies written as sysfs trees (`common/sysfs_tree.rs`) and read
//! back by discovery must come back equal. Each machine exercises one thing real sysfs shows:
//! offline and never-present CPUs, memory-only nodes, sparse CPU ids, arm64 offline masks, no
//! NUMA information, empty cluster masks.

use crate::sysfs_tree;

use std::collections::BTreeMap;

use irqwise::cpuset::CpuSet;
use irqwise::sysfs::Root;
use irqwise::topology::discover::read_topology;
use irqwise::topology::view::to_json;
use irqwise::topology::{Cpu, NodeSource, NumaNode, OfflineMasks, Topology};

fn set(list: &str) -> CpuSet {
    CpuSet::parse_list(list).unwrap()
}

/// One CPU as a booted kernel shows it: every mask known.
fn online_cpu(id: u32, node: Option<u32>, package: &str, cluster: &str, core: &str, llc: &str) -> Cpu {
    Cpu {
        id,
        present: true,
        online: true,
        node,
        node_source: NodeSource::Unknown,
        package: Some(set(package)),
        die: Some(set(package)),
        cluster: Some(set(cluster)),
        core: Some(set(core)),
        llc: Some(set(llc)),
    }
}

/// A CPU sysfs says nothing about but its node (offline, or possible but not present).
fn silent_cpu(id: u32, present: bool, node: Option<u32>) -> Cpu {
    let mut c = Cpu::bare(id);
    c.present = present;
    c.node = node;
    c
}

/// Fills the global lists, the nodes' CPU sets and each CPU's node source from `cpus`, as
/// discovery defines them (every node here is one sysfs shows, or there is no NUMA at all).
fn assemble(mut cpus: Vec<Cpu>, distances: &[(u32, Vec<u32>)], kernel: Option<&str>, arch: Option<&str>) -> Topology {
    for c in &mut cpus {
        c.node_source = match (c.node, distances.is_empty()) {
            (Some(_), _) => NodeSource::Sysfs,
            (None, true) => NodeSource::NoNuma,
            (None, false) => NodeSource::Unknown,
        };
    }
    let possible: CpuSet = cpus.iter().map(|c| c.id).collect();
    let present: CpuSet = cpus.iter().filter(|c| c.present).map(|c| c.id).collect();
    let online: CpuSet = cpus.iter().filter(|c| c.online).map(|c| c.id).collect();
    let mut nodes = BTreeMap::new();
    for (id, row) in distances {
        let members = cpus.iter().filter(|c| c.node == Some(*id)).map(|c| c.id).collect();
        nodes.insert(*id, NumaNode { id: *id, cpus: members, distance: row.clone() });
    }
    let offline_masks = match arch {
        Some("aarch64") => OfflineMasks::SelfOnly,
        _ => OfflineMasks::Empty,
    };
    Topology {
        kernel: kernel.map(String::from),
        arch: arch.map(String::from),
        possible,
        present,
        online,
        isolated: CpuSet::new(),
        nohz_full: CpuSet::new(),
        cpus: cpus.into_iter().map(|c| (c.id, c)).collect(),
        nodes,
        offline_masks,
    }
}

fn round_trip(topo: &Topology) -> Topology {
    let dir = tempfile::tempdir().unwrap();
    sysfs_tree::write_topology(dir.path(), topo);
    read_topology(&Root::new(dir.path())).unwrap()
}

/// 2 sockets × 2 cores × 2 threads, one node per socket, x86; SMT siblings are (n, n+4).
fn two_socket_smt() -> Topology {
    let mut cpus = Vec::new();
    for id in 0..8u32 {
        let socket = (id / 2) % 2;
        let package = if socket == 0 { "0-1,4-5" } else { "2-3,6-7" };
        let first = id % 4;
        let core = format!("{first},{}", first + 4);
        cpus.push(online_cpu(id, Some(socket), package, &core, &core, package));
    }
    assemble(cpus, &[(0, vec![10, 21]), (1, vec![21, 10])], Some("6.1.0-57-amd64"), Some("x86_64"))
}

#[test]
fn two_socket_smt_round_trips() {
    let topo = two_socket_smt();
    assert_eq!(round_trip(&topo), topo);
}

/// 12 possible CPUs: 0-7 online, 8-9 present but offline (no topology/), 10-11 possible but not
/// present (no cpuN/ directory; their node only shows in the node's cpulist). CPU 3 is isolated
/// and nohz_full.
#[test]
fn offline_and_not_present_cpus_round_trip() {
    let mut cpus: Vec<Cpu> = (0..8).map(|id| online_cpu(id, Some(id / 4), "0-7", "", &id.to_string(), "0-7")).collect();
    cpus.extend([silent_cpu(8, true, Some(0)), silent_cpu(9, true, Some(1))]);
    cpus.extend([silent_cpu(10, false, Some(0)), silent_cpu(11, false, Some(1))]);
    let mut topo = assemble(cpus, &[(0, vec![10, 20]), (1, vec![20, 10])], Some("5.15.0"), Some("x86_64"));
    topo.isolated = set("3");
    topo.nohz_full = set("3");
    let back = round_trip(&topo);
    assert_eq!(back, topo);
    // Independent of the writer: the kernel's view of an offline x86 CPU's masks is empty, and
    // the empty cluster masks of online CPUs survive as Some(empty).
    assert!(back.sibling_mask(8).is_empty() && back.cluster_mask(8).is_empty());
    assert_eq!(back.cpus[&0].cluster, Some(CpuSet::new()));
    assert_eq!(back.nodes[&1].cpus, set("4-7,9,11"));
    assert_eq!(back.housekeeping(), set("0-2,4-7"));
}

/// Three nodes, the middle one memory-only, with asymmetric (bogus but kept) firmware distances.
#[test]
fn memory_only_node_round_trips() {
    let cpus: Vec<Cpu> = (0..4)
        .map(|id| {
            let (node, pkg) = if id < 2 { (0, "0-1") } else { (2, "2-3") };
            online_cpu(id, Some(node), pkg, &id.to_string(), &id.to_string(), pkg)
        })
        .collect();
    let rows = [(0, vec![10, 17, 28]), (1, vec![17, 10, 28]), (2, vec![30, 28, 10])];
    let topo = assemble(cpus, &rows, Some("6.8.0"), None);
    let back = round_trip(&topo);
    assert_eq!(back, topo);
    assert!(back.nodes[&1].cpus.is_empty());
    assert_eq!(back.distance(2, 0), Some(30));
    assert_eq!(back.distance(0, 2), Some(28));
}

/// Sparse ids (0-3, 8-11, 64) on arm64 with 4-CPU clusters and no SMT: offline CPU 64's masks
/// are the CPU itself in the kernel's view.
#[test]
fn sparse_arm64_round_trips() {
    let mut cpus = Vec::new();
    for id in (0..4).chain(8..12) {
        let cluster = if id < 4 { "0-3" } else { "8-11" };
        cpus.push(online_cpu(id, Some(0), "0-3,8-11", cluster, &id.to_string(), cluster));
    }
    cpus.push(silent_cpu(64, true, Some(0)));
    let topo = assemble(cpus, &[(0, vec![10])], Some("6.6.0-arm64"), Some("aarch64"));
    let back = round_trip(&topo);
    assert_eq!(back, topo);
    assert_eq!(back.offline_masks, OfflineMasks::SelfOnly);
    assert_eq!(back.sibling_mask(64), CpuSet::single(64));
    assert_eq!(back.possible, set("0-3,8-11,64"));
}

/// A non-NUMA kernel without procfs release: no node/ directory at all, nodes empty, every
/// CPU's node `None`; the JSON then has `"node": null` and `"kernel": null`.
#[test]
fn non_numa_machine_round_trips() {
    let cpus: Vec<Cpu> = (0..2).map(|id| online_cpu(id, None, "0-1", "0-1", "0-1", "0-1")).collect();
    let topo = assemble(cpus, &[], None, None);
    let back = round_trip(&topo);
    assert_eq!(back, topo);
    assert!(back.nodes.is_empty());
    let json = to_json(&back);
    assert!(json["kernel"].is_null() && json["cpus"][1]["node"].is_null());
    assert_eq!(json["cpus"][1]["core"], 0);
}

/// What older or odd kernels print: `nohz_full` as `(null)` or a NUL byte, no `isolated` file, no
/// `possible`/`present` lists (derived from the cpuN directories), no `online` files at all.
#[test]
fn odd_global_lists_read_as_empty_or_derived() {
    let cpus: Vec<Cpu> = (0..2).map(|id| online_cpu(id, Some(0), "0-1", "0-1", "0-1", "0-1")).collect();
    let topo = assemble(cpus, &[(0, vec![10])], Some("3.10.0"), Some("x86_64"));
    for nohz in ["(null)\n", "\0\n"] {
        let dir = tempfile::tempdir().unwrap();
        sysfs_tree::write_topology(dir.path(), &topo);
        let cpu_dir = dir.path().join("sys/devices/system/cpu");
        std::fs::write(cpu_dir.join("nohz_full"), nohz).unwrap();
        for gone in ["isolated", "possible", "present", "online", "cpu1/online"] {
            std::fs::remove_file(cpu_dir.join(gone)).unwrap();
        }
        let back = read_topology(&Root::new(dir.path())).unwrap();
        assert_eq!(back, topo, "nohz_full {nohz:?}");
    }
}
