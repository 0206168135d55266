//! NUMA node directories: `node/nodeN/{cpulist,distance}`.

use std::collections::BTreeMap;

use super::{
    cpulist_problem, io_problem, numbered_ids, warning, TopologyError, TopologyWarning, LOCAL_DISTANCE, MAX_NUMNODES,
    NODE_DIR, REMOTE_DISTANCE,
};
use crate::cpuset::CpuSet;
use crate::sysfs::{parse_cpulist_at, Root, SysfsError};
use crate::topology::Cpu;

/// What one `nodeN` directory says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct NodeDir {
    /// `cpulist` (or the hex `cpumap`); `None` when neither file exists or is readable.
    pub cpus: Option<CpuSet>,
    /// Distances to every node directory in ascending id (the kernel's defaults where the file
    /// is missing or unusable).
    pub distance: Vec<u32>,
}

/// Every `nodeN` directory below [`MAX_NUMNODES`], by id. No `node/` directory (non-NUMA kernel)
/// gives an empty map. Guarantees each `distance` has one entry per node returned.
pub(super) fn read_nodes(root: &Root, w: &mut Vec<TopologyWarning>) -> Result<BTreeMap<u32, NodeDir>, TopologyError> {
    // A `node` that is not a directory (or cannot be listed) is no NUMA information, like a
    // missing one, but said.
    let mut ids = match numbered_ids(root, NODE_DIR, "node") {
        Ok(ids) => ids,
        Err(e) => {
            let instead = "no NUMA information is used (every CPU counts as on node 0)";
            w.push(warning(root, NODE_DIR, format!("cannot be listed ({})", io_problem(&e)), instead).marked_by(&e));
            Vec::new()
        }
    };
    ids.retain(|&id| {
        let real = id < MAX_NUMNODES;
        if !real {
            let problem = format!("node id {id} is not below the kernel's limit of {MAX_NUMNODES} nodes");
            w.push(warning(root, &format!("{NODE_DIR}/node{id}"), problem, "the directory is ignored"));
        }
        real
    });
    let possible = possible_nodes(root);
    let mut nodes = BTreeMap::new();
    for &id in &ids {
        let dir = format!("{NODE_DIR}/node{id}");
        let cpus = match read_node_cpus(root, &dir) {
            Ok(cpus) => cpus,
            Err(e) => {
                let instead = "its CPUs are placed by their own nodeM links only";
                w.push(warning(root, &format!("{dir}/cpulist"), cpulist_problem(&e), instead).marked_by(&e));
                None
            }
        };
        let distance = distance_row(root, id, &ids, possible.as_ref(), w);
        nodes.insert(id, NodeDir { cpus, distance });
    }
    Ok(nodes)
}

/// The nodes online when x86 handed out nodes round robin at boot: those with memory
/// (`node/has_memory`, N_MEMORY) among the node directories, in id order; every node directory
/// where the file is missing, unreadable or names none of them (memory hot-added since boot
/// cannot be told apart).
pub(super) fn boot_nodes(root: &Root, nodes: &BTreeMap<u32, NodeDir>) -> Vec<u32> {
    let all: Vec<u32> = nodes.keys().copied().collect();
    let with_memory = root.read_cpulist_optional(format!("{NODE_DIR}/has_memory")).ok().flatten();
    match with_memory.map(|m| all.iter().copied().filter(|n| m.contains(*n)).collect::<Vec<_>>()) {
        Some(ids) if !ids.is_empty() => ids,
        _ => all,
    }
}

/// `node/possible` as a list of ids, when it reads.
fn possible_nodes(root: &Root) -> Option<Vec<u32>> {
    let set = root.read_cpulist_optional(format!("{NODE_DIR}/possible")).ok()??;
    Some(set.iter().filter(|&n| n < MAX_NUMNODES).collect())
}

/// Node `id`'s distances to every node of `ids`. The row has one entry per node directory, or
/// (when some possible node has no directory, as when node 0 is offline) one per possible node,
/// indexed by node id. Anything else is the kernel's default (10 to itself, 20 elsewhere) and a
/// warning.
fn distance_row(
    root: &Root,
    id: u32,
    ids: &[u32],
    possible: Option<&Vec<u32>>,
    w: &mut Vec<TopologyWarning>,
) -> Vec<u32> {
    let rel = format!("{NODE_DIR}/node{id}/distance");
    let default = || ids.iter().map(|&to| if to == id { LOCAL_DISTANCE } else { REMOTE_DISTANCE }).collect();
    let instead = "the kernel's default distances are used (10 to itself, 20 to every other node)";
    let text = match root.read_small_optional(&rel) {
        Ok(Some(text)) => text,
        Ok(None) => {
            w.push(warning(root, &rel, "missing", instead));
            return default();
        }
        Err(e) => {
            w.push(warning(root, &rel, format!("unreadable ({})", io_problem(&e)), instead).marked_by(&e));
            return default();
        }
    };
    let row: Result<Vec<u32>, _> = text.split_whitespace().map(str::parse::<u32>).collect();
    let Ok(row) = row else {
        w.push(warning(root, &rel, format!("{text:?} is not whitespace-separated decimal distances"), instead));
        return default();
    };
    if row.len() == ids.len() {
        return row;
    }
    if let Some(possible) = possible.filter(|p| p.len() == row.len() && ids.iter().all(|i| p.contains(i))) {
        return ids.iter().filter_map(|to| possible.iter().position(|p| p == to).map(|i| row[i])).collect();
    }
    let nodes = ids.iter().map(u32::to_string).collect::<Vec<_>>().join(",");
    let problem = format!(
        "distance row {text:?} has {} entries, expected {} (one per node: {nodes}) or one per possible node",
        row.len(),
        ids.len()
    );
    w.push(warning(root, &rel, problem, instead));
    default()
}

/// `cpulist`, else the hex `cpumap`, else `None`.
fn read_node_cpus(root: &Root, dir: &str) -> Result<Option<CpuSet>, SysfsError> {
    let list = format!("{dir}/cpulist");
    if let Some(text) = root.read_small_optional(&list)? {
        return parse_cpulist_at(&root.path(&list), &text).map(Some);
    }
    let map = format!("{dir}/cpumap");
    match root.read_small_optional(&map)? {
        Some(text) => {
            CpuSet::parse_mask(&text).map(Some).map_err(|source| SysfsError::CpuList { path: root.path(&map), source })
        }
        None => Ok(None),
    }
}

/// One warning per group of CPUs that the same several nodes' `cpulist`s claim, naming the
/// files and the node the CPUs were given (each CPU's own `nodeM` link, else the lowest of them).
pub(super) fn cpus_in_several_nodes(
    root: &Root,
    nodes: &BTreeMap<u32, NodeDir>,
    cpus: &BTreeMap<u32, Cpu>,
) -> Vec<TopologyWarning> {
    let mut groups: BTreeMap<(Vec<u32>, Option<u32>), CpuSet> = BTreeMap::new();
    for c in cpus.values() {
        let claims: Vec<u32> = nodes
            .iter()
            .filter(|(_, n)| n.cpus.as_ref().is_some_and(|s| s.contains(c.id)))
            .map(|(&id, _)| id)
            .collect();
        if claims.len() >= 2 {
            groups.entry((claims, c.node)).or_default().insert(c.id);
        }
    }
    groups
        .into_iter()
        .map(|((claims, given), set)| {
            let files: Vec<String> =
                claims.iter().map(|n| root.path(format!("{NODE_DIR}/node{n}/cpulist")).display().to_string()).collect();
            let given = given.map_or("no node".into(), |n| format!("node {n}"));
            warning(
                root,
                &format!("{NODE_DIR}/node{}/cpulist", claims[0]),
                format!("CPUs {set} are listed by {} node cpulists: {}", claims.len(), files.join(", ")),
                format!("they are placed on {given} (a CPU's own nodeM link, else the lowest node listing it)"),
            )
        })
        .collect()
}
