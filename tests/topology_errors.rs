//! Malformed sysfs: each test writes a good tree (`common/sysfs_tree.rs`), spoils one file, and
//! checks discovery fails with a message naming that file and the bad content — never a panic.

#[path = "common/sysfs_tree.rs"]
mod sysfs_tree;

use std::fs;
use std::path::Path;

use irqwise::cpuset::CpuSet;
use irqwise::sysfs::Root;
use irqwise::topology::{Cpu, NumaNode, Topology};

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

/// Writes the good machine, lets `spoil` break it, and returns discovery's error message.
fn error_after(spoil: impl FnOnce(&Path)) -> String {
    let dir = tempfile::tempdir().unwrap();
    sysfs_tree::write_topology(dir.path(), &good_machine());
    Topology::discover(&Root::new(dir.path())).expect("the unspoiled tree reads");
    spoil(dir.path());
    match Topology::discover(&Root::new(dir.path())) {
        Ok(_) => panic!("discovery accepted the spoiled tree"),
        Err(e) => e.to_string(),
    }
}

fn assert_names(msg: &str, file: &str, content: &str) {
    assert!(msg.contains(file), "error does not name {file}: {msg}");
    assert!(msg.contains(content), "error does not show {content}: {msg}");
}

#[test]
fn garbage_online_list() {
    let msg = error_after(|d| fs::write(d.join(CPU).join("online"), "0-3,zz\n").unwrap());
    assert_names(&msg, "sys/devices/system/cpu/online", "\"zz\"");
}

#[test]
fn garbage_node_cpulist() {
    let msg = error_after(|d| fs::write(d.join(NODE).join("node1/cpulist"), "2-\n").unwrap());
    assert_names(&msg, "node/node1/cpulist", "\"2-\"");
}

#[test]
fn truncated_distance_row() {
    let msg = error_after(|d| fs::write(d.join(NODE).join("node0/distance"), "10\n").unwrap());
    assert_names(&msg, "node/node0/distance", "\"10\"");
    assert!(msg.contains("expected 2"), "{msg}");
}

#[test]
fn non_numeric_distance() {
    let msg = error_after(|d| fs::write(d.join(NODE).join("node1/distance"), "20 ten\n").unwrap());
    assert_names(&msg, "node/node1/distance", "\"20 ten\"");
}

#[test]
fn non_numeric_physical_package_id() {
    let msg = error_after(|d| fs::write(d.join(CPU).join("cpu2/topology/physical_package_id"), "socket0\n").unwrap());
    assert_names(&msg, "cpu2/topology/physical_package_id", "\"socket0\"");
}

#[test]
fn non_numeric_core_id() {
    let msg = error_after(|d| fs::write(d.join(CPU).join("cpu3/topology/core_id"), "1a\n").unwrap());
    assert_names(&msg, "cpu3/topology/core_id", "\"1a\"");
}

#[test]
fn garbage_sibling_mask() {
    let msg = error_after(|d| fs::write(d.join(CPU).join("cpu1/topology/core_cpus_list"), "0-1,x\n").unwrap());
    assert_names(&msg, "cpu1/topology/core_cpus_list", "\"x\"");
}

#[test]
fn garbage_cpu_online_flag() {
    let msg = error_after(|d| {
        fs::remove_file(d.join(CPU).join("online")).unwrap();
        fs::write(d.join(CPU).join("cpu1/online"), "yes\n").unwrap();
    });
    assert_names(&msg, "cpu1/online", "\"yes\"");
}

#[test]
fn garbage_cache_level() {
    let msg = error_after(|d| fs::write(d.join(CPU).join("cpu0/cache/index3/level"), "L3\n").unwrap());
    assert_names(&msg, "cpu0/cache/index3/level", "\"L3\"");
}

/// A directory where a file is expected (tests run as root, so mode 000 would still read).
#[test]
fn unreadable_possible_list() {
    let msg = error_after(|d| {
        let possible = d.join(CPU).join("possible");
        fs::remove_file(&possible).unwrap();
        fs::create_dir(&possible).unwrap();
    });
    assert_names(&msg, "sys/devices/system/cpu/possible", "cannot read");
}

#[test]
fn unreadable_sibling_list() {
    let msg = error_after(|d| {
        let file = d.join(CPU).join("cpu2/topology/package_cpus_list");
        fs::remove_file(&file).unwrap();
        fs::create_dir(&file).unwrap();
    });
    assert_names(&msg, "cpu2/topology/package_cpus_list", "cannot read");
}

#[test]
fn online_cpu_outside_possible() {
    let msg = error_after(|d| fs::write(d.join(CPU).join("online"), "0-5\n").unwrap());
    assert_names(&msg, "sys/devices/system/cpu/online", "\"4-5\"");
}

#[test]
fn cpu_claims_a_missing_node() {
    let msg = error_after(|d| {
        fs::remove_dir(d.join(CPU).join("cpu3/node1")).unwrap();
        fs::create_dir(d.join(CPU).join("cpu3/node7")).unwrap();
    });
    assert_names(&msg, "cpu3/node7", "node 7");
}

/// Without a `possible` list the CPU ids come from the `cpuN` directories; an id beyond what a
/// CpuSet can hold is an error naming the directory, not a panic.
#[test]
fn cpu_directory_beyond_the_maximum_without_possible_list() {
    let msg = error_after(|root| {
        fs::remove_file(root.join(CPU).join("possible")).unwrap();
        fs::create_dir_all(root.join(CPU).join("cpu9000")).unwrap();
    });
    assert!(msg.contains("cpu9000") && msg.contains("9000") && msg.contains("8192"), "{msg}");
}
