//! One CPU's directory: `cpuN/online`, `cpuN/topology/*`, `cpuN/nodeM`, `cpuN/cache/`.

use std::collections::BTreeMap;

use super::nodes::NodeDir;
use super::TopologyError;
use super::{caches, is_numbered, numbered_entries, CPU_DIR};
use crate::cpuset::CpuSet;
use crate::sysfs::{parse_cpulist_at, Root, SysfsError};
use crate::topology::Cpu;

/// Reads CPU `id`. `present` is left false (the caller owns the global lists); `online` is the
/// CPU's own `online` file, or true when the directory exists without one (x86 cpu0) or with an
/// empty one, or false when there is no directory at all (possible but never brought up). The
/// caller overrides `online` with the global `online` list when there is one.
pub(super) fn read_cpu(root: &Root, id: u32, nodes: &BTreeMap<u32, NodeDir>) -> Result<Cpu, TopologyError> {
    let dir = format!("{CPU_DIR}/cpu{id}");
    let mut cpu = Cpu::bare(id);
    // What matters of the listing: that it is not empty, `topology/` and the `nodeM` link.
    let entries = root.list_dir_noting(&dir, |n| n == "topology" || is_numbered(n, "node"))?;
    cpu.online = match root.read_small_optional(format!("{dir}/online"))? {
        // An empty file is how captured trees record one they could not read: it says nothing.
        Some(text) if !text.trim().is_empty() => parse_online_flag(root, &format!("{dir}/online"), &text)?,
        _ => !entries.is_empty(),
    };
    cpu.node = cpu_node(root, id, &dir, &entries, nodes)?;

    let topo = format!("{dir}/topology");
    if entries.iter().any(|e| e == "topology") {
        // The ids are not stored, but a garbled one means the directory cannot be trusted.
        read_id(root, &format!("{topo}/physical_package_id"), "a package id (integer, -1 when unknown)")?;
        read_id(root, &format!("{topo}/core_id"), "a core id (integer)")?;
        read_id(root, &format!("{topo}/cluster_id"), "a cluster id (integer, -1 when unknown)")?;
        cpu.package =
            read_mask(root, &topo, &["package_cpus_list", "core_siblings_list"], &["package_cpus", "core_siblings"])?;
        // The kernel's die mask is the package where it has no dies.
        cpu.die = read_mask(root, &topo, &["die_cpus_list"], &["die_cpus"])?.or_else(|| cpu.package.clone());
        cpu.cluster = read_mask(root, &topo, &["cluster_cpus_list"], &["cluster_cpus"])?;
        cpu.core =
            read_mask(root, &topo, &["core_cpus_list", "thread_siblings_list"], &["core_cpus", "thread_siblings"])?;
    }
    cpu.llc = caches::last_level_cache(root, &format!("{dir}/cache"))?;
    Ok(cpu)
}

/// `cpuN/online` holds `0` or `1`.
fn parse_online_flag(root: &Root, rel: &str, text: &str) -> Result<bool, SysfsError> {
    match text.trim() {
        "1" => Ok(true),
        "0" => Ok(false),
        _ => Err(SysfsError::Parse { path: root.path(rel), content: text.into(), expected: "0 or 1" }),
    }
}

/// An id file that may be absent; its content must be an integer.
fn read_id(root: &Root, rel: &str, expected: &'static str) -> Result<Option<i64>, SysfsError> {
    root.read_number_optional::<i64>(rel, expected)
}

/// The first file that exists among the list-format names, then the hex-mask names; `None` when
/// none exists. An empty file is `Some(empty)`: the kernel said "no CPUs", which matters.
fn read_mask(root: &Root, dir: &str, lists: &[&str], masks: &[&str]) -> Result<Option<CpuSet>, SysfsError> {
    for name in lists {
        let rel = format!("{dir}/{name}");
        if let Some(text) = root.read_small_optional(&rel)? {
            return parse_cpulist_at(&root.path(&rel), &text).map(Some);
        }
    }
    for name in masks {
        let rel = format!("{dir}/{name}");
        if let Some(text) = root.read_small_optional(&rel)? {
            return CpuSet::parse_mask(&text)
                .map(Some)
                .map_err(|source| SysfsError::CpuList { path: root.path(&rel), source });
        }
    }
    Ok(None)
}

/// The CPU's node: a `nodeM` entry in its directory, else the lowest node whose `cpulist` holds
/// it (firmware bugs can list a CPU in several), else `None`. A `nodeM` entry naming a node
/// without a directory under `node/` is an error.
fn cpu_node(
    root: &Root,
    id: u32,
    dir: &str,
    entries: &[String],
    nodes: &BTreeMap<u32, NodeDir>,
) -> Result<Option<u32>, TopologyError> {
    if let Some(&node) = numbered_entries(entries, "node").first() {
        if !nodes.contains_key(&node) {
            return Err(TopologyError::Inconsistent {
                path: root.path(format!("{dir}/node{node}")).display().to_string(),
                problem: format!(
                    "CPU {id} claims node {node}, but {} has no node{node} directory",
                    root.path(super::NODE_DIR).display()
                ),
            });
        }
        return Ok(Some(node));
    }
    Ok(nodes.iter().find(|(_, n)| n.cpus.as_ref().is_some_and(|s| s.contains(id))).map(|(&node, _)| node))
}
