//! Malformed sysfs: each test writes a good tree (`common/sysfs_tree.rs`), spoils one file, and
//! checks discovery degrades: one warning naming that file and the bad content, the documented
//! rule applied instead, the rest of the machine as before — never a panic or a refusal.

use crate::sysfs_tree;

use std::fs;
use std::path::Path;

use irqwise::cpuset::CpuSet;
use irqwise::sysfs::Root;
use irqwise::topology::discover::read_topology;
use irqwise::topology::discover::read_topology_with_warnings;
use irqwise::topology::{Cpu, NodeSource, NumaNode, Topology};

const CPU: &str = "sys/devices/system/cpu";
const NODE: &str = "sys/devices/system/node";

/// Four online CPUs, two SMT cores, two nodes.
fn good_machine() -> Topology {
    let mut t = Topology {
        kernel: Some("6.1.0".into()),
        arch: Some("x86_64".into()),
        possible: CpuSet::first_n(4),
        present: CpuSet::first_n(4),
        online: CpuSet::first_n(4),
        ..Topology::default()
    };
    for id in 0..4 {
        let core = if id < 2 { "0-1" } else { "2-3" };
        let core = CpuSet::parse_list(core).unwrap();
        let c = Cpu {
            id,
            present: true,
            online: true,
            node: Some(id / 2),
            node_source: NodeSource::Sysfs,
            package: Some(CpuSet::first_n(4)),
            die: Some(CpuSet::first_n(4)),
            cluster: Some(core.clone()),
            core: Some(core),
            llc: Some(CpuSet::first_n(4)),
        };
        t.cpus.insert(id, c);
    }
    for n in 0..2 {
        let cpus = CpuSet::parse_list(if n == 0 { "0-1" } else { "2-3" }).unwrap();
        t.nodes.insert(n, NumaNode { id: n, cpus, distance: if n == 0 { vec![10, 20] } else { vec![20, 10] } });
    }
    t
}

/// Writes the good machine, lets `spoil` break it, and returns what discovery made of it and its
/// warnings (the unspoiled tree reads without any).
fn degraded_after(spoil: impl FnOnce(&Path)) -> (Topology, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    sysfs_tree::write_topology(dir.path(), &good_machine());
    let (_, clean) = read_topology_with_warnings(&Root::new(dir.path())).expect("the unspoiled tree reads");
    assert!(clean.is_empty(), "{clean:?}");
    spoil(dir.path());
    let (topo, warnings) =
        read_topology_with_warnings(&Root::new(dir.path())).expect("a spoiled file degrades, never refuses");
    (topo, warnings.iter().map(std::string::ToString::to_string).collect())
}

/// The one warning names `file` and shows `content`.
fn assert_one_warning(warnings: &[String], file: &str, content: &str) -> String {
    assert_eq!(warnings.len(), 1, "{warnings:#?}");
    let msg = warnings[0].clone();
    assert!(msg.contains(file), "warning does not name {file}: {msg}");
    assert!(msg.contains(content), "warning does not show {content}: {msg}");
    msg
}

fn set(list: &str) -> CpuSet {
    CpuSet::parse_list(list).unwrap()
}

#[test]
fn garbage_online_list_falls_back_to_each_cpus_online_file() {
    let (topo, w) = degraded_after(|d| {
        fs::write(d.join(CPU).join("online"), "0-3,zz\n").unwrap();
        fs::write(d.join(CPU).join("cpu3/online"), "0\n").unwrap();
    });
    assert_one_warning(&w, "sys/devices/system/cpu/online", "\"zz\"");
    assert_eq!(topo.online, set("0-2"), "cpu3/online says 0");
}

#[test]
fn an_empty_online_list_falls_back_to_each_cpus_online_file() {
    let (topo, w) = degraded_after(|d| fs::write(d.join(CPU).join("online"), "\n").unwrap());
    assert_one_warning(&w, "sys/devices/system/cpu/online", "empty");
    assert_eq!(topo.online, set("0-3"));
}

#[test]
fn garbage_node_cpulist_leaves_cpus_to_their_node_links() {
    let (topo, w) = degraded_after(|d| fs::write(d.join(NODE).join("node1/cpulist"), "2-\n").unwrap());
    assert_one_warning(&w, "node/node1/cpulist", "2-");
    assert_eq!(topo.nodes[&1].cpus, set("2-3"), "cpu2/node1 and cpu3/node1 links still say so");
}

#[test]
fn truncated_distance_row_gets_the_kernels_default_distances() {
    let (topo, w) = degraded_after(|d| fs::write(d.join(NODE).join("node0/distance"), "10\n").unwrap());
    let msg = assert_one_warning(&w, "node/node0/distance", "\"10\"");
    assert!(msg.contains("expected 2") && msg.contains("default"), "{msg}");
    assert_eq!(topo.nodes[&0].distance, vec![10, 20]);
    assert_eq!(topo.nodes[&1].distance, vec![20, 10], "the other row is untouched");
}

#[test]
fn non_numeric_distance_gets_the_kernels_default_distances() {
    let (topo, w) = degraded_after(|d| fs::write(d.join(NODE).join("node1/distance"), "20 ten\n").unwrap());
    assert_one_warning(&w, "node/node1/distance", "\"20 ten\"");
    assert_eq!(topo.nodes[&1].distance, vec![20, 10]);
}

#[test]
fn a_missing_distance_file_gets_the_kernels_default_distances() {
    let (topo, w) = degraded_after(|d| fs::remove_file(d.join(NODE).join("node1/distance")).unwrap());
    assert_one_warning(&w, "node/node1/distance", "missing");
    assert_eq!(topo.nodes[&1].distance, vec![20, 10]);
}

#[test]
fn garbled_ids_are_not_read_as_irqwise_has_no_use_for_them() {
    let (topo, w) = degraded_after(|d| {
        fs::write(d.join(CPU).join("cpu2/topology/physical_package_id"), "socket0\n").unwrap();
        fs::write(d.join(CPU).join("cpu3/topology/core_id"), "1a\n").unwrap();
        fs::write(d.join(CPU).join("cpu3/topology/cluster_id"), "\0\0\n").unwrap();
    });
    assert!(w.is_empty(), "{w:?}");
    assert_eq!(topo.cpus, good_machine().cpus, "nothing irqwise uses depends on them");
}

#[test]
fn garbage_sibling_mask_makes_that_level_unknown() {
    let (topo, w) = degraded_after(|d| fs::write(d.join(CPU).join("cpu1/topology/core_cpus_list"), "0-1,x\n").unwrap());
    assert_one_warning(&w, "cpu1/topology/core_cpus_list", "\"x\"");
    assert_eq!(topo.cpus[&1].core, None);
    assert_eq!(topo.cpus[&0].core, Some(set("0-1")), "the other CPUs keep theirs");
}

#[test]
fn a_sibling_list_without_the_cpu_itself_gets_the_cpu_added() {
    let (topo, w) = degraded_after(|d| fs::write(d.join(CPU).join("cpu1/topology/core_cpus_list"), "0\n").unwrap());
    assert_one_warning(&w, "cpu1/topology/core_cpus_list", "does not hold CPU 1");
    assert_eq!(topo.cpus[&1].core, Some(set("0-1")));
}

#[test]
fn garbage_cpu_online_flag_is_left_to_the_directory() {
    let (topo, w) = degraded_after(|d| {
        fs::remove_file(d.join(CPU).join("online")).unwrap();
        fs::write(d.join(CPU).join("cpu1/online"), "yes\n").unwrap();
    });
    assert_one_warning(&w, "cpu1/online", "\"yes\"");
    assert!(topo.online.contains(1));
}

#[test]
fn garbage_cache_level_makes_the_cache_unknown() {
    let (topo, w) = degraded_after(|d| fs::write(d.join(CPU).join("cpu0/cache/index3/level"), "L3\n").unwrap());
    assert_one_warning(&w, "cpu0/cache/index3/level", "\"L3\"");
    assert_eq!(topo.cpus[&0].llc, None);
}

/// A directory where a file is expected (tests run as root, so mode 000 would still read).
#[test]
fn unreadable_possible_list_falls_back_to_the_cpu_directories() {
    let (topo, w) = degraded_after(|d| {
        let possible = d.join(CPU).join("possible");
        fs::remove_file(&possible).unwrap();
        fs::create_dir(&possible).unwrap();
    });
    assert_one_warning(&w, "sys/devices/system/cpu/possible", "unreadable");
    assert_eq!(topo.possible, set("0-3"));
}

#[test]
fn unreadable_sibling_list_makes_that_level_unknown() {
    let (topo, w) = degraded_after(|d| {
        let file = d.join(CPU).join("cpu2/topology/package_cpus_list");
        fs::remove_file(&file).unwrap();
        fs::create_dir(&file).unwrap();
    });
    assert_one_warning(&w, "cpu2/topology/package_cpus_list", "directory");
    assert_eq!(topo.cpus[&2].package, None);
}

#[test]
fn online_cpu_outside_possible_is_left_out() {
    let (topo, w) = degraded_after(|d| fs::write(d.join(CPU).join("online"), "0-5\n").unwrap());
    assert_one_warning(&w, "sys/devices/system/cpu/online", "\"4-5\"");
    assert_eq!(topo.online, set("0-3"));
}

#[test]
fn cpu_claiming_a_missing_node_is_placed_by_the_node_cpulists() {
    let claim_node7 = |d: &Path| {
        fs::remove_dir(d.join(CPU).join("cpu3/node1")).unwrap();
        fs::create_dir(d.join(CPU).join("cpu3/node7")).unwrap();
    };
    // Offline, the CPU's directory is listed: the claim is seen and named.
    let (topo, w) = degraded_after(|d| {
        claim_node7(d);
        fs::write(d.join(CPU).join("online"), "0-2\n").unwrap();
    });
    assert_one_warning(&w, "cpu3/node7", "node 7");
    assert_eq!(topo.cpus[&3].node, Some(1), "node1/cpulist lists it");
    // Online and in one node's cpulist, it is not listed: that node, nothing to warn of.
    let (topo, w) = degraded_after(claim_node7);
    assert!(w.is_empty(), "{w:?}");
    assert_eq!(topo.cpus[&3].node, Some(1));
}

/// Without a `possible` list the CPU ids come from the `cpuN` directories; an id beyond what a
/// CpuSet can hold is left out with a warning naming the directory, not a panic.
#[test]
fn cpu_directory_beyond_the_maximum_without_possible_list_is_left_out() {
    let (topo, w) = degraded_after(|root| {
        fs::remove_file(root.join(CPU).join("possible")).unwrap();
        fs::create_dir_all(root.join(CPU).join("cpu9000")).unwrap();
    });
    let msg = assert_one_warning(&w, "cpu9000", "9000");
    assert!(msg.contains("8192"), "{msg}");
    assert_eq!(topo.possible, set("0-3"));
}

#[test]
fn a_root_without_any_cpu_is_an_error_naming_the_directory() {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir_all(dir.path().join(CPU)).unwrap();
    let e = read_topology(&Root::new(dir.path())).unwrap_err().to_string();
    assert!(e.contains("sys/devices/system/cpu") && e.contains("no possible CPU"), "{e}");
}
