//! Reading a [`Topology`] from sysfs/procfs under a [`Root`].
//!
//! Everything here is I/O and light validation: what sysfs shows is kept as read (masks of an
//! online CPU are already the kernel's view and are not "repaired"); what it does not show stays
//! `None`. Every failure names the file and the content found.

mod caches;
mod cpu;
mod nodes;

use std::collections::BTreeMap;

use super::{NumaNode, OfflineMasks, Topology};
use crate::cpuset::{CpuSet, MAX_CPUS};
use crate::sysfs::{parse_cpulist_at, read_in_parallel, Root, SysfsError};

/// Topology discovery failed; the error names the file and what was wrong with it.
#[derive(Debug, thiserror::Error)]
pub enum TopologyError {
    #[error(transparent)]
    Sysfs(#[from] SysfsError),
    #[error("{path}: {problem}")]
    Inconsistent { path: String, problem: String },
}

impl Topology {
    /// Reads the topology under `root` (`ROOT/sys/devices/system/{cpu,node}`, `ROOT/proc/sys/kernel`).
    pub fn discover(root: &Root) -> Result<Topology, TopologyError> {
        discover(root)
    }

    /// Just the possible CPUs under `root`, by the same rule as [`Topology::discover`] (the
    /// `possible` list, else the `cpuN` directories), without reading every CPU's files.
    pub fn discover_possible(root: &Root) -> Result<CpuSet, TopologyError> {
        possible(root)
    }
}

/// `ROOT/sys/devices/system/cpu`.
pub(crate) const CPU_DIR: &str = "sys/devices/system/cpu";
/// `ROOT/sys/devices/system/node`.
pub(crate) const NODE_DIR: &str = "sys/devices/system/node";

/// The possible CPUs: the `possible` list, else one per `cpuN` directory.
fn possible(root: &Root) -> Result<CpuSet, TopologyError> {
    match read_cpu_list(root, "possible")? {
        Some(set) => Ok(set),
        None => cpus_from_dirs(root, &numbered_ids(root, CPU_DIR, "cpu")?),
    }
}

fn discover(root: &Root) -> Result<Topology, TopologyError> {
    let possible = possible(root)?;
    let present = read_cpu_list(root, "present")?.unwrap_or_else(|| possible.clone());
    let global_online = read_cpu_list(root, "online")?;
    let isolated = read_cpu_list(root, "isolated")?.unwrap_or_default();
    let nohz_full = read_cpu_list(root, "nohz_full")?.unwrap_or_default();
    check_subset(root, "present", &present, "possible", &possible)?;
    if let Some(list) = &global_online {
        check_subset(root, "online", list, "present", &present)?;
    }

    let node_dirs = nodes::read_nodes(root)?;
    // Each CPU's directory is read on its own (in parallel: ~17 files per CPU); the first error
    // in CPU order is the one reported, as in a sequential scan.
    let ids: Vec<u32> = possible.iter().collect();
    let read = read_in_parallel(&ids, |&id| cpu::read_cpu(root, id, &node_dirs));
    let mut cpus = BTreeMap::new();
    for (id, c) in ids.into_iter().zip(read) {
        let mut c = c?;
        c.present = present.contains(id);
        c.online = match &global_online {
            Some(list) => list.contains(id),
            None => c.online && c.present,
        };
        cpus.insert(id, c);
    }
    let online: CpuSet = cpus.values().filter(|c| c.online).map(|c| c.id).collect();

    let mut nodes = BTreeMap::new();
    for (&id, dir) in &node_dirs {
        let members = cpus.values().filter(|c| c.node == Some(id)).map(|c| c.id).collect();
        nodes.insert(id, NumaNode { id, cpus: members, distance: dir.distance.clone() });
    }

    let kernel = read_trimmed(root, "proc/sys/kernel/osrelease")?;
    let arch = read_trimmed(root, "proc/sys/kernel/arch")?;
    let offline_masks = offline_masks_for(arch.as_deref());
    Ok(Topology { kernel, arch, possible, present, online, isolated, nohz_full, cpus, nodes, offline_masks })
}

/// The possible CPUs when `possible` is absent: one per `cpuN` directory, each below MAX_CPUS.
fn cpus_from_dirs(root: &Root, ids: &[u32]) -> Result<CpuSet, TopologyError> {
    match ids.iter().find(|&&id| id >= MAX_CPUS) {
        Some(bad) => Err(TopologyError::Inconsistent {
            path: root.path(CPU_DIR).join(format!("cpu{bad}")).display().to_string(),
            problem: format!("CPU id {bad} is not below the maximum of {MAX_CPUS} CPUs"),
        }),
        None => Ok(ids.iter().copied().collect()),
    }
}

/// What the kernel leaves in an offline CPU's masks: x86 (and unknown arch) clears them, the
/// generic arch_topology (arm64, riscv, ...) keeps the CPU itself.
fn offline_masks_for(arch: Option<&str>) -> OfflineMasks {
    match arch {
        None => OfflineMasks::Empty,
        Some(a) if is_x86(a) => OfflineMasks::Empty,
        Some(_) => OfflineMasks::SelfOnly,
    }
}

/// True for the names `uname -m` / `kernel/arch` give x86 machines.
fn is_x86(arch: &str) -> bool {
    matches!(arch, "x86_64" | "x86" | "i386" | "i486" | "i586" | "i686" | "amd64")
}

/// A global CPU list under `CPU_DIR` (`possible`, `online`, ...), `None` when the file is absent.
/// Tolerates the `(null)` and stray NUL bytes some kernels print for an empty `nohz_full`.
fn read_cpu_list(root: &Root, name: &str) -> Result<Option<CpuSet>, SysfsError> {
    let rel = format!("{CPU_DIR}/{name}");
    let Some(text) = root.read_small_optional(&rel)? else { return Ok(None) };
    let cleaned = text.replace('\0', "");
    let cleaned = cleaned.trim();
    if cleaned == "(null)" {
        return Ok(Some(CpuSet::new()));
    }
    parse_cpulist_at(&root.path(&rel), cleaned).map(Some)
}

/// A one-line text file, trimmed; `None` when absent.
fn read_trimmed(root: &Root, rel: &str) -> Result<Option<String>, SysfsError> {
    Ok(root.read_small_optional(rel)?.map(|s| s.trim().to_string()).filter(|s| !s.is_empty()))
}

/// Fails unless `inner ⊆ outer`, naming the file of `inner` and the CPUs that stick out.
fn check_subset(
    root: &Root,
    inner_name: &str,
    inner: &CpuSet,
    outer_name: &str,
    outer: &CpuSet,
) -> Result<(), TopologyError> {
    let extra = inner.difference(outer);
    if extra.is_empty() {
        return Ok(());
    }
    Err(TopologyError::Inconsistent {
        path: root.path(format!("{CPU_DIR}/{inner_name}")).display().to_string(),
        problem: format!(
            "CPUs {:?} are listed but are not in {outer_name} ({:?})",
            extra.to_list_string(),
            outer.to_list_string()
        ),
    })
}

/// Ids of the entries of directory `dir` named `PREFIX<decimal>`, ascending (see
/// [`numbered_entries`]); a missing directory has none.
pub(crate) fn numbered_ids(root: &Root, dir: &str, prefix: &str) -> Result<Vec<u32>, SysfsError> {
    let names = root.list_dir_noting(dir, |n| is_numbered(n, prefix))?;
    Ok(numbered_entries(&names, prefix))
}

/// Whether `name` is `PREFIX<decimal>`.
pub(crate) fn is_numbered(name: &str, prefix: &str) -> bool {
    name.strip_prefix(prefix).is_some_and(|rest| !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit()))
}

/// Ids of directory entries named `PREFIX<decimal>` (`cpu12`, `node3`), ascending; other names
/// (`cpufreq`, `cpuidle`, `online`) are skipped.
pub(crate) fn numbered_entries(names: &[String], prefix: &str) -> Vec<u32> {
    let mut ids: Vec<u32> = names
        .iter()
        .filter_map(|n| n.strip_prefix(prefix))
        .filter(|rest| !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit()))
        .filter_map(|rest| rest.parse().ok())
        .collect();
    ids.sort_unstable();
    ids
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbered_entries_keep_only_prefix_and_digits() {
        let names: Vec<String> =
            ["cpu10", "cpu2", "cpufreq", "cpuidle", "cpu", "online", "cpu3x"].iter().map(|s| s.to_string()).collect();
        assert_eq!(numbered_entries(&names, "cpu"), vec![2, 10]);
    }

    #[test]
    fn offline_masks_follow_arch() {
        assert_eq!(offline_masks_for(Some("x86_64")), OfflineMasks::Empty);
        assert_eq!(offline_masks_for(None), OfflineMasks::Empty);
        assert_eq!(offline_masks_for(Some("aarch64")), OfflineMasks::SelfOnly);
        assert_eq!(offline_masks_for(Some("riscv64")), OfflineMasks::SelfOnly);
    }

    #[test]
    fn discovers_this_host() {
        let topo = Topology::discover(&Root::new("/")).expect("the host's sysfs reads without error");
        assert!(!topo.online.is_empty(), "no online CPU on the host");
        assert!(topo.online.is_subset(&topo.present) && topo.present.is_subset(&topo.possible));
    }
}
