//! Writes a [`Topology`] as the sysfs/procfs tree a kernel would show for it, so tests can run
//! discovery (and the CLI) on any hand-made or golden-vector machine.
//!
//! Include with `#[path = "common/sysfs_tree.rs"] mod sysfs_tree;`.
#![allow(dead_code)]

use std::fs;
use std::path::Path;

use irqwise::cpuset::CpuSet;
use irqwise::topology::{OfflineMasks, Topology};

/// Writes `topo` under `dir` (which stands for `/`), like a kernel would show it:
/// - `sys/devices/system/cpu/{possible,present,online,isolated,nohz_full}`;
/// - `cpuN/` for every present CPU, with `online` (except cpu0 on x86, which has none), a `nodeM`
///   marker directory when the CPU's node is known, `topology/*_list` plus `physical_package_id`
///   and `core_id` for each mask that is `Some`, and `cache/index0` (L1 Data, the core) and
///   `cache/index3` (L3 Unified, the LLC) when the LLC is known;
/// - `node/nodeN/{cpulist,distance}` (no `node/` at all when `topo.nodes` is empty);
/// - `proc/sys/kernel/osrelease` and `arch` when set.
///
/// The writer does not check `topo`; what it writes is exactly what the fields say.
pub fn write_topology(dir: &Path, topo: &Topology) {
    let cpu_dir = dir.join("sys/devices/system/cpu");
    fs::create_dir_all(&cpu_dir).unwrap();
    write(&cpu_dir.join("possible"), &list(&topo.possible));
    write(&cpu_dir.join("present"), &list(&topo.present));
    write(&cpu_dir.join("online"), &list(&topo.online));
    write(&cpu_dir.join("isolated"), &list(&topo.isolated));
    write(&cpu_dir.join("nohz_full"), &list(&topo.nohz_full));
    let x86 = topo.offline_masks == OfflineMasks::Empty;

    for cpu in topo.cpus.values().filter(|c| c.present) {
        let c_dir = cpu_dir.join(format!("cpu{}", cpu.id));
        fs::create_dir_all(&c_dir).unwrap();
        if !(x86 && cpu.id == 0) {
            write(&c_dir.join("online"), if cpu.online { "1" } else { "0" });
        }
        if let Some(node) = cpu.node {
            fs::create_dir_all(c_dir.join(format!("node{node}"))).unwrap();
        }
        let masks = [
            ("package_cpus_list", &cpu.package),
            ("die_cpus_list", &cpu.die),
            ("cluster_cpus_list", &cpu.cluster),
            ("core_cpus_list", &cpu.core),
        ];
        if masks.iter().any(|(_, m)| m.is_some()) {
            let t_dir = c_dir.join("topology");
            fs::create_dir_all(&t_dir).unwrap();
            for (name, mask) in masks {
                if let Some(mask) = mask {
                    write(&t_dir.join(name), &list(mask));
                }
            }
            let package_id = cpu.package.as_ref().and_then(CpuSet::first).unwrap_or(0);
            write(&t_dir.join("physical_package_id"), &package_id.to_string());
            let core_id = cpu.core.as_ref().and_then(CpuSet::first).unwrap_or(cpu.id);
            write(&t_dir.join("core_id"), &core_id.to_string());
        }
        if let Some(llc) = &cpu.llc {
            let cache = c_dir.join("cache");
            let l1 = cpu.core.clone().unwrap_or_else(|| CpuSet::single(cpu.id));
            write_cache(&cache.join("index0"), 1, "Data", &l1);
            write_cache(&cache.join("index1"), 1, "Instruction", &l1);
            write_cache(&cache.join("index3"), 3, "Unified", llc);
        }
    }

    if !topo.nodes.is_empty() {
        let node_dir = dir.join("sys/devices/system/node");
        for node in topo.nodes.values() {
            let n_dir = node_dir.join(format!("node{}", node.id));
            fs::create_dir_all(&n_dir).unwrap();
            write(&n_dir.join("cpulist"), &list(&node.cpus));
            let row: Vec<String> = node.distance.iter().map(u32::to_string).collect();
            write(&n_dir.join("distance"), &row.join(" "));
        }
        let ids: CpuSet = topo.nodes.keys().copied().collect();
        write(&node_dir.join("online"), &list(&ids));
        write(&node_dir.join("possible"), &list(&ids));
        let with_cpus: CpuSet = topo.nodes.values().filter(|n| !n.cpus.is_empty()).map(|n| n.id).collect();
        write(&node_dir.join("has_cpu"), &list(&with_cpus));
    }

    let kernel_dir = dir.join("proc/sys/kernel");
    fs::create_dir_all(&kernel_dir).unwrap();
    if let Some(release) = &topo.kernel {
        write(&kernel_dir.join("osrelease"), release);
    }
    if let Some(arch) = &topo.arch {
        write(&kernel_dir.join("arch"), arch);
    }
}

/// One `cache/indexN` directory.
fn write_cache(dir: &Path, level: u32, kind: &str, shared: &CpuSet) {
    fs::create_dir_all(dir).unwrap();
    write(&dir.join("level"), &level.to_string());
    write(&dir.join("type"), kind);
    write(&dir.join("shared_cpu_list"), &list(shared));
}

/// A sysfs file: the text and a newline, as the kernel prints it.
fn write(path: &Path, text: &str) {
    fs::write(path, format!("{text}\n")).unwrap();
}

fn list(set: &CpuSet) -> String {
    set.to_list_string()
}
