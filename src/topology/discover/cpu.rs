//! One CPU's directory: `cpuN/online`, `cpuN/topology/*`, `cpuN/nodeM`, `cpuN/cache/`.

use std::collections::BTreeMap;

use super::groups::{GroupSets, Level};
use super::nodes::NodeDir;
use super::{caches, cpulist_problem, io_problem, is_numbered, numbered_entries, warning, TopologyWarning};
use super::{CPU_DIR, MAX_NUMNODES, NODE_DIR};
use crate::cpuset::CpuSet;
use crate::sysfs::{parse_cpulist_at, Root, SysfsError};
use crate::topology::Cpu;

/// What the caller knows of a CPU from the global lists, which decides what of its own
/// directory is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Known {
    /// No global `online` list: the CPU's own `online` file says, and its directory is listed.
    Nothing,
    /// The global `online` list decides whether it is online; the directory is listed for
    /// `topology/` and the `nodeM` link.
    OnlineList,
    /// Online by the global list and in exactly one node's `cpulist`: the directory is not
    /// listed. The kernel gives an online CPU its `topology/` and links it under the node whose
    /// cpulist holds it; the listing would tell nothing more (1,024 listings, about 5% of a
    /// 1,024-CPU machine's full-pass system calls).
    OnlineInNode(u32),
}

/// What a CPU's directory listing says: that it exists, whether it has `topology/`, the node
/// its `nodeM` link names.
struct Listing {
    exists: bool,
    topology: bool,
    node_link: Option<u32>,
}

/// Reads CPU `id`, never failing: what cannot be read stays unknown, with a warning. `present` is
/// left false (the caller owns the global lists); with [`Known::Nothing`], `online` is the CPU's
/// own `online` file, or true when the directory exists without one (x86 cpu0) or with an empty
/// one, or false when there is no directory at all (possible but never brought up). Otherwise
/// (the caller has the global `online` list, which decides) the file is not read and `online`
/// is whether the directory exists. A level `groups` covers takes that set instead of the CPU's
/// own file (see [`GroupSets`]).
pub(super) fn read_cpu(
    root: &Root,
    id: u32,
    nodes: &BTreeMap<u32, NodeDir>,
    groups: &GroupSets,
    known: Known,
) -> (Cpu, Vec<TopologyWarning>) {
    let dir = format!("{CPU_DIR}/cpu{id}");
    let mut w = Vec::new();
    let mut cpu = Cpu::bare(id);
    let listing = match known {
        Known::OnlineInNode(node) => Listing { exists: true, topology: true, node_link: Some(node) },
        Known::Nothing | Known::OnlineList => list(root, &dir, &mut w),
    };
    let online_rel = format!("{dir}/online");
    let own = if known == Known::Nothing { root.read_small_optional(&online_rel) } else { Ok(None) };
    cpu.online = match own {
        // An empty file is how captured trees record one they could not read: it says nothing.
        Ok(Some(text)) if !text.trim().is_empty() => match text.trim() {
            "1" => true,
            "0" => false,
            other => {
                let problem = format!("unexpected content {other:?}, expected 0 or 1");
                w.push(warning(root, &online_rel, problem, "the global online list decides"));
                listing.exists
            }
        },
        Ok(_) => listing.exists,
        Err(e) => {
            let problem = format!("unreadable ({})", io_problem(&e));
            w.push(warning(root, &online_rel, problem, "the global online list decides").marked_by(&e));
            listing.exists
        }
    };
    cpu.node = cpu_node(root, id, &dir, listing.node_link, nodes, &mut w);

    let topo = format!("{dir}/topology");
    if listing.topology {
        // Only the masks: the ids (`core_id`, `physical_package_id`, `cluster_id`) are not read,
        // as irqwise has no use for them (three reads a CPU, a sixth of a full pass's topology).
        let mut mask = |level: Level, lists: &[&str], masks: &[&str]| {
            if let Some(shared) = groups.covering(level, id) {
                return Some(shared.clone());
            }
            match read_mask(root, &topo, lists, masks) {
                Ok(m) => m,
                Err((rel, e)) => {
                    w.push(warning(root, &rel, cpulist_problem(&e), "that level is taken as unknown").marked_by(&e));
                    None
                }
            }
        };
        cpu.package =
            mask(Level::Package, &["package_cpus_list", "core_siblings_list"], &["package_cpus", "core_siblings"]);
        // The kernel's die mask is the package where it has no dies.
        cpu.die = mask(Level::Die, &["die_cpus_list"], &["die_cpus"]).or_else(|| cpu.package.clone());
        cpu.cluster = mask(Level::Cluster, &["cluster_cpus_list"], &["cluster_cpus"]);
        cpu.core = mask(Level::Core, &["core_cpus_list", "thread_siblings_list"], &["core_cpus", "thread_siblings"]);
        // The kernel's sibling and cluster masks always hold the CPU itself.
        for (level, file) in [(&mut cpu.core, "core_cpus_list"), (&mut cpu.cluster, "cluster_cpus_list")] {
            if let Some(m) = level.as_mut().filter(|m| !m.is_empty() && !m.contains(id)) {
                let problem = format!("{m} does not hold CPU {id} itself");
                w.push(warning(root, &format!("{topo}/{file}"), problem, format!("CPU {id} is added to it")));
                m.insert(id);
            }
        }
    }
    let llc = match groups.covering(Level::Llc, id) {
        Some(shared) => Ok(Some(shared.clone())),
        None => caches::last_level_cache(root, &format!("{dir}/cache")),
    };
    cpu.llc = match llc {
        Ok(llc) => llc,
        Err(e) => {
            let instead = "the last-level cache is taken as unknown";
            w.push(warning(root, &format!("{dir}/cache"), e.to_string(), instead).marked_by(&e));
            None
        }
    };
    (cpu, w)
}

/// Lists CPU directory `dir`: what matters is that it is not empty, `topology/` and the lowest
/// `nodeM` link below [`MAX_NUMNODES`]. An unlistable directory is taken as empty, with a warning.
fn list(root: &Root, dir: &str, w: &mut Vec<TopologyWarning>) -> Listing {
    let entries = match root.list_dir_noting(dir, |n| n == "topology" || is_numbered(n, "node")) {
        Ok(entries) => entries,
        Err(e) => {
            let problem = format!("cannot be listed ({})", io_problem(&e));
            w.push(warning(root, dir, problem, "the CPU is taken as bare").marked_by(&e));
            Vec::new()
        }
    };
    Listing {
        exists: !entries.is_empty(),
        topology: entries.iter().any(|e| e == "topology"),
        node_link: numbered_entries(&entries, "node").into_iter().find(|&n| n < MAX_NUMNODES),
    }
}

/// The first file that exists among the list-format names, then the hex-mask names; `None` when
/// none exists. An empty file is `Some(empty)`: the kernel said "no CPUs", which matters. An
/// error comes with the file it is about.
fn read_mask(root: &Root, dir: &str, lists: &[&str], masks: &[&str]) -> Result<Option<CpuSet>, (String, SysfsError)> {
    for name in lists {
        let rel = format!("{dir}/{name}");
        match root.read_small_optional(&rel) {
            Ok(Some(text)) => return parse_cpulist_at(&root.path(&rel), &text).map(Some).map_err(|e| (rel, e)),
            Ok(None) => {}
            Err(e) => return Err((rel, e)),
        }
    }
    for name in masks {
        let rel = format!("{dir}/{name}");
        match root.read_small_optional(&rel) {
            Ok(Some(text)) => {
                return CpuSet::parse_mask(&text)
                    .map(Some)
                    .map_err(|source| (rel.clone(), SysfsError::CpuList { path: root.path(&rel), source }))
            }
            Ok(None) => {}
            Err(e) => return Err((rel, e)),
        }
    }
    Ok(None)
}

/// The CPU's node: a `nodeM` entry in its directory naming a node that has a directory, else the
/// lowest node whose `cpulist` holds it (firmware bugs can list a CPU in several), else `None`.
fn cpu_node(
    root: &Root,
    id: u32,
    dir: &str,
    node_link: Option<u32>,
    nodes: &BTreeMap<u32, NodeDir>,
    w: &mut Vec<TopologyWarning>,
) -> Option<u32> {
    if let Some(node) = node_link {
        if nodes.contains_key(&node) {
            return Some(node);
        }
        let problem =
            format!("CPU {id} claims node {node}, but {} has no node{node} directory", root.path(NODE_DIR).display());
        w.push(warning(root, &format!("{dir}/node{node}"), problem, "the node cpulists decide"));
    }
    nodes.iter().find(|(_, n)| n.cpus.as_ref().is_some_and(|s| s.contains(id))).map(|(&node, _)| node)
}
