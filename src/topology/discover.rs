//! Reading a [`Topology`] from sysfs/procfs under a [`Root`].
//!
//! Everything here is I/O and light validation: what sysfs shows is kept as read (masks of an
//! online CPU are already the kernel's view and are not "repaired"); what it does not show stays
//! `None`. Quirky or contradictory files degrade: each costs a [`TopologyWarning`] naming the
//! file, the content and the rule applied instead, and affects only what depends on it. Only a
//! root without any CPU is an error.

mod caches;
pub mod claims;
mod cpu;
mod groups;
pub mod isolation;
pub(crate) mod kubelet;
mod nodes;

use std::collections::BTreeMap;
use std::path::PathBuf;

pub(crate) use super::MAX_NUMNODES;
use super::{round_robin_node, Cpu, NodeSource, NumaNode, OfflineMasks, Topology};
use crate::cpuset::{CpuSet, MAX_CPUS};
use crate::sysfs::{parse_cpulist_at, read_in_parallel, Root, SysfsError};
use groups::GroupSets;

/// Topology discovery failed: the root shows no CPU at all.
#[derive(Debug, thiserror::Error)]
pub enum TopologyError {
    #[error(transparent)]
    Sysfs(#[from] SysfsError),
    #[error("{path}: {problem}")]
    Inconsistent { path: String, problem: String },
}

/// A file discovery could not take as it stood, and what it did instead.
/// Shown with the path's control characters escaped: a file's name is anyone's (a claim's
/// owner), and a newline in it must not forge a line of the log.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {problem}; {instead}", crate::text::printable(&.path.display().to_string()))]
pub struct TopologyWarning {
    pub path: PathBuf,
    /// What is wrong with it (the content quoted where it matters).
    pub problem: String,
    /// The rule applied instead.
    pub instead: String,
    /// The kernel refused the read (an errno, not bad content): possibly a race with CPU
    /// hotplug, which briefly fails reads of the CPUs' files. The daemon reports such a warning
    /// only when a second read gives it again (see `sample::refusals`).
    pub transient: bool,
}

impl TopologyWarning {
    /// This warning, marked [`transient`](TopologyWarning::transient) when `e` is an errno.
    pub(super) fn marked_by(self, e: &SysfsError) -> TopologyWarning {
        TopologyWarning { transient: e.kernel_refused(), ..self }
    }
}

/// CPUs read in parallel at a time in a full read: a chunk's CPUs take the group masks of the
/// chunks before it (see [`groups`]); smaller chunks skip more files, each costs a round of
/// reader threads.
const SHARING_CHUNK: usize = 32;

/// The distance the kernel assumes between two nodes it has no table for (`REMOTE_DISTANCE`), and
/// from a node to itself (`LOCAL_DISTANCE`), include/linux/topology.h.
pub(crate) const REMOTE_DISTANCE: u32 = 20;
pub(crate) const LOCAL_DISTANCE: u32 = 10;

/// Reads the topology under `root` (`ROOT/sys/devices/system/{cpu,node}`, `ROOT/proc/sys/kernel`),
/// dropping the warnings (see [`read_topology_with_warnings`]).
pub fn read_topology(root: &Root) -> Result<Topology, TopologyError> {
    discover(root, None).map(|(t, _, _)| t)
}

/// Reads the topology and what had to be worked around on the way, in file order.
pub fn read_topology_with_warnings(root: &Root) -> Result<(Topology, Vec<TopologyWarning>), TopologyError> {
    discover(root, None).map(|(t, w, _)| (t, w))
}

/// [`read_topology_with_warnings`], keeping what was read so that
/// [`reread_topology`] can re-read only what CPU events changed.
pub fn read_topology_keeping(root: &Root) -> Result<(Topology, Vec<TopologyWarning>, TopologyReads), TopologyError> {
    discover(root, None)
}

/// The topology after CPU events naming `changed` (hotplug of those CPUs), given the
/// `topology` and `before` that the last discovery returned, reading again the
/// global lists, the nodes and the directories of only the CPUs the events can have changed:
/// `changed` and those whose online or present state differs from `before`'s. The other
/// CPUs' masks are edited as the kernel edits them when a CPU comes or goes (it leaves, or
/// joins, every core, cluster, die, package and cache mask it shares). Guarantees the same
/// topology and warnings as [`read_topology_keeping`] when the kernel did just that;
/// when the possible CPUs or the nodes changed, it is that full discovery. (The reconcile
/// timer's full pass re-reads every CPU.)
pub fn reread_topology(
    root: &Root,
    topology: &Topology,
    before: TopologyReads,
    changed: &CpuSet,
) -> Result<(Topology, Vec<TopologyWarning>, TopologyReads), TopologyError> {
    discover(root, Some((before, topology, changed)))
}

/// Just the NUMA node ids under `root` (below [`MAX_NUMNODES`]), without reading the nodes;
/// empty without NUMA information.
pub(crate) fn read_node_ids(root: &Root) -> Result<Vec<u32>, TopologyError> {
    // What topology discovery does with a `node` it cannot list (a warning there): no nodes.
    let ids = numbered_ids(root, NODE_DIR, "node").unwrap_or_default();
    Ok(ids.into_iter().filter(|&n| n < MAX_NUMNODES).collect())
}

/// Just the possible CPUs under `root`, by the same rule as [`read_topology`] (the
/// `possible` list, else the `cpuN` directories), without reading every CPU's files.
pub(crate) fn read_possible_cpus(root: &Root) -> Result<CpuSet, TopologyError> {
    possible(root, &mut Vec::new())
}

/// Just the global `present` and `online` lists, applied as [`read_topology`] applies them
/// (present within possible, online within present), for comparing with a topology read before;
/// `None` when either list is absent, unreadable or (online) empty: only a full read decides then.
pub(crate) fn read_present_online(root: &Root) -> Option<(CpuSet, CpuSet)> {
    let mut w = Vec::new();
    let possible = possible(root, &mut w).ok()?;
    let present = read_cpu_list(root, "present", &mut w, "").ok()??;
    let present = within(root, "present", present, "possible", &possible, &mut w);
    let online = read_cpu_list(root, "online", &mut w, "").ok()?.filter(|l| !l.is_empty())?;
    let online = within(root, "online", online, "present", &present, &mut w);
    Some((present, online))
}

/// `ROOT/sys/devices/system/cpu`.
pub(crate) const CPU_DIR: &str = "sys/devices/system/cpu";
/// `ROOT/sys/devices/system/node`.
pub(crate) const NODE_DIR: &str = "sys/devices/system/node";

/// A warning about `rel` under `root`.
pub(super) fn warning(
    root: &Root,
    rel: &str,
    problem: impl Into<String>,
    instead: impl Into<String>,
) -> TopologyWarning {
    TopologyWarning { path: root.path(rel), problem: problem.into(), instead: instead.into(), transient: false }
}

/// The possible CPUs: the `possible` list, else one per `cpuN` directory (ids of `MAX_CPUS` and
/// above left out, with a warning). No CPU at all is the one error.
fn possible(root: &Root, warnings: &mut Vec<TopologyWarning>) -> Result<CpuSet, TopologyError> {
    if let Some(set) = read_cpu_list(root, "possible", warnings, "the cpuN directories are used")? {
        if !set.is_empty() {
            return Ok(set);
        }
    }
    let ids = numbered_ids(root, CPU_DIR, "cpu")?;
    let mut cpus = CpuSet::new();
    for id in ids {
        if id >= MAX_CPUS {
            let rel = format!("{CPU_DIR}/cpu{id}");
            warnings.push(warning(
                root,
                &rel,
                format!("CPU id {id} is not below the maximum of {MAX_CPUS} CPUs"),
                "left out",
            ));
        } else {
            cpus.insert(id);
        }
    }
    if cpus.is_empty() {
        return Err(TopologyError::Inconsistent {
            path: root.path(CPU_DIR).display().to_string(),
            problem: "no possible CPU: neither a usable `possible` list nor any cpuN directory".into(),
        });
    }
    Ok(cpus)
}

/// What a discovery read, kept for [`reread_topology`] beside the topology it returned: the
/// global lists, the nodes, and the warnings of each CPU's directory (by CPU, only those with
/// some). Each CPU's directory as read is the topology's CPU before the global lists and node
/// rules were applied ([`as_read`]), so it is not kept twice.
#[derive(Debug, Clone, Default)]
pub struct TopologyReads {
    possible: CpuSet,
    present: CpuSet,
    online: CpuSet,
    nodes: BTreeMap<u32, nodes::NodeDir>,
    warnings: BTreeMap<u32, Vec<TopologyWarning>>,
}

/// A discovered CPU as its directory was read: no node but the one sysfs gave, not present (the
/// caller owns the global lists, which decide `present` and `online` again).
fn as_read(cpu: &Cpu) -> Cpu {
    let mut read = cpu.clone();
    read.present = false;
    if read.node_source != NodeSource::Sysfs {
        read.node = None;
    }
    read.node_source = NodeSource::default();
    read
}

/// The CPUs whose directory must be read again after events naming `changed`: those, and the
/// ones whose online or present state changed.
fn stale_cpus(before: &TopologyReads, changed: &CpuSet, present: &CpuSet, online: &CpuSet) -> CpuSet {
    let mut stale = changed.clone();
    for (was, is) in [(&before.online, online), (&before.present, present)] {
        stale.extend_with(&was.difference(is));
        stale.extend_with(&is.difference(was));
    }
    stale
}

/// What the kernel does to the other CPUs' masks when the `stale` CPUs come or go (x86
/// `set_cpu_sibling_map()`/`remove_siblinginfo()` and the cache sharing maps, arm64
/// `update_siblings_masks()`/`clear_cpu_topology()`): a CPU that is not online leaves every
/// mask; one that is joins the masks of the CPUs its own masks name, level by level (sharing a
/// core, cluster, die, package or cache is mutual).
///
/// The CPUs that shared a set before still share the edited one (`groups` interns it).
fn edit_neighbours(
    reads: &mut BTreeMap<u32, (Cpu, Vec<TopologyWarning>)>,
    stale: &CpuSet,
    online: &CpuSet,
    groups: &mut GroupSets,
) {
    let gone = stale.difference(online);
    let joined: Vec<(u32, [Option<CpuSet>; 5])> = stale
        .intersection(online)
        .iter()
        .filter_map(|id| reads.get(&id).map(|(c, _)| (id, levels(c).map(Option::<&CpuSet>::cloned))))
        .collect();
    for (id, (cpu, _)) in reads.iter_mut() {
        if stale.contains(*id) {
            continue;
        }
        for (level, mask) in levels_mut(cpu).into_iter().enumerate() {
            let Some(mask) = mask else { continue };
            let mut edited = false;
            if mask.intersects(&gone) {
                *mask = mask.difference(&gone);
                edited = true;
            }
            for (new, theirs) in &joined {
                if theirs[level].as_ref().is_some_and(|t| t.contains(*id)) {
                    edited |= mask.insert(*new);
                }
            }
            if edited {
                *mask = groups.intern(std::mem::take(mask));
            }
        }
    }
}

/// A CPU's masks, level by level: core, cluster, die, package, last-level cache.
fn levels(cpu: &Cpu) -> [Option<&CpuSet>; 5] {
    [cpu.core.as_ref(), cpu.cluster.as_ref(), cpu.die.as_ref(), cpu.package.as_ref(), cpu.llc.as_ref()]
}

fn levels_mut(cpu: &mut Cpu) -> [Option<&mut CpuSet>; 5] {
    [cpu.core.as_mut(), cpu.cluster.as_mut(), cpu.die.as_mut(), cpu.package.as_mut(), cpu.llc.as_mut()]
}

/// The machine-wide CPU lists of `devices/system/cpu`.
struct CpuLists {
    possible: CpuSet,
    present: CpuSet,
    /// `None` when the list is missing or empty: each CPU's own online file counts.
    global_online: Option<CpuSet>,
    isolated: CpuSet,
    nohz_full: CpuSet,
}

/// Reads the [`CpuLists`], each within the one before it (online within present within
/// possible); a list missing or out of bounds is a warning in `w` and read as its fallback says.
fn cpu_lists(root: &Root, w: &mut Vec<TopologyWarning>) -> Result<CpuLists, TopologyError> {
    let possible = possible(root, w)?;
    let present = read_cpu_list(root, "present", w, "every possible CPU counts as present")?;
    let present = within(root, "present", present.unwrap_or_else(|| possible.clone()), "possible", &possible, w);
    let global_online = match read_cpu_list(root, "online", w, "each CPU's own online file is used")? {
        Some(list) if list.is_empty() => {
            let problem = "empty, but a running machine has at least one online CPU";
            w.push(warning(root, &format!("{CPU_DIR}/online"), problem, "each CPU's own online file is used"));
            None
        }
        Some(list) => Some(within(root, "online", list, "present", &present, w)),
        None => None,
    };
    let isolated = read_cpu_list(root, "isolated", w, "no CPU counts as isolated")?.unwrap_or_default();
    let nohz_full = read_cpu_list(root, "nohz_full", w, "no CPU counts as nohz_full")?.unwrap_or_default();
    Ok(CpuLists { possible, present, global_online, isolated, nohz_full })
}

fn discover(
    root: &Root,
    again: Option<(TopologyReads, &Topology, &CpuSet)>,
) -> Result<(Topology, Vec<TopologyWarning>, TopologyReads), TopologyError> {
    let mut w = Vec::new();
    let CpuLists { possible, present, global_online, isolated, nohz_full } = cpu_lists(root, &mut w)?;

    let node_dirs = nodes::read_nodes(root, &mut w)?;
    let online_now = global_online.clone().unwrap_or_default();
    // After CPU events, only the directories they can have changed; the rest as kept (a change
    // of the possible CPUs, of the nodes or a missing global online list: everything).
    let kept = again
        .filter(|(before, _, _)| before.possible == possible && before.nodes == node_dirs && global_online.is_some());
    let stale = kept.as_ref().map(|(before, _, changed)| stale_cpus(before, changed, &present, &online_now));
    // Each CPU's directory is read on its own (in parallel: ~17 files per CPU); warnings are
    // kept in CPU order, as in a sequential scan.
    let mut reads: BTreeMap<u32, (Cpu, Vec<TopologyWarning>)> = BTreeMap::new();
    let fresh: Vec<u32> = match (kept, &stale) {
        (Some((mut before, topology, _)), Some(stale)) => {
            reads = topology
                .cpus
                .values()
                .filter(|c| !stale.contains(c.id))
                .map(|c| (c.id, (as_read(c), before.warnings.remove(&c.id).unwrap_or_default())))
                .collect();
            possible.iter().filter(|id| !reads.contains_key(id)).collect()
        }
        _ => possible.iter().collect(),
    };
    // A full read shares each group's masks (read once, by its lowest CPU) among the online
    // CPUs: CPUs are read in chunks, each chunk in parallel with what the chunks before it
    // learnt. A re-read after events reads each CPU it names in full.
    let mut groups = match (&stale, &global_online) {
        (None, Some(online)) => GroupSets::sharing(online.clone()),
        _ => GroupSets::reading_every_cpu(),
    };
    let known = |id: u32| match &global_online {
        None => cpu::Known::Nothing,
        Some(online) if online.contains(id) => {
            only_node_holding(&node_dirs, id).map_or(cpu::Known::OnlineList, cpu::Known::OnlineInNode)
        }
        Some(_) => cpu::Known::OnlineList,
    };
    let mut read_now = Vec::with_capacity(fresh.len());
    for chunk in fresh.chunks(SHARING_CHUNK) {
        let read = read_in_parallel(chunk, |&id| cpu::read_cpu(root, id, &node_dirs, &groups, known(id)));
        for (id, (mut cpu, cpu_warnings)) in chunk.iter().zip(read) {
            groups.learn(&mut cpu);
            read_now.push((*id, (cpu, cpu_warnings)));
        }
    }
    // Maps are built from sorted runs where they can be: full leaves, half the memory of
    // inserting one CPU after another (which leaves every node half full).
    if reads.is_empty() {
        reads = read_now.into_iter().collect();
    } else {
        reads.extend(read_now);
    }
    if let Some(stale) = &stale {
        // The others' masks as the kernel edits them, instead of reading every neighbour again.
        edit_neighbours(&mut reads, stale, &online_now, &mut groups);
    }
    let kept_reads = TopologyReads {
        possible: possible.clone(),
        present: present.clone(),
        online: online_now,
        nodes: node_dirs.clone(),
        warnings: reads.iter().filter(|(_, (_, w))| !w.is_empty()).map(|(&id, (_, w))| (id, w.clone())).collect(),
    };
    let mut sorted = Vec::with_capacity(reads.len());
    for (id, (mut c, cpu_warnings)) in reads {
        w.extend(cpu_warnings);
        c.present = present.contains(id);
        c.online = match &global_online {
            Some(list) => list.contains(id),
            None => c.online && c.present,
        };
        sorted.push((id, c));
    }
    let mut cpus: BTreeMap<u32, Cpu> = sorted.into_iter().collect();
    w.extend(nodes::cpus_in_several_nodes(root, &node_dirs, &cpus));
    let online: CpuSet = cpus.values().filter(|c| c.online).map(|c| c.id).collect();
    let kernel = read_trimmed(root, "proc/sys/kernel/osrelease", &mut w);
    let arch = read_trimmed(root, "proc/sys/kernel/arch", &mut w);
    let boot_nodes = nodes::boot_nodes(root, &node_dirs);
    place_unlisted_cpus(&mut cpus, &node_dirs.keys().copied().collect::<Vec<_>>(), &boot_nodes, arch.as_deref());

    let mut nodes = BTreeMap::new();
    for (&id, dir) in &node_dirs {
        let members = cpus.values().filter(|c| c.node == Some(id)).map(|c| c.id).collect();
        nodes.insert(id, NumaNode { id, cpus: members, distance: dir.distance.clone() });
    }

    let offline_masks = offline_masks_for(arch.as_deref());
    let topo = Topology { kernel, arch, possible, present, online, isolated, nohz_full, cpus, nodes, offline_masks };
    Ok((topo, w, kept_reads))
}

/// The node whose `cpulist` holds CPU `id` when exactly one does.
fn only_node_holding(nodes: &BTreeMap<u32, nodes::NodeDir>, id: u32) -> Option<u32> {
    let mut holding =
        nodes.iter().filter(|(_, n)| n.cpus.as_ref().is_some_and(|c| c.contains(id))).map(|(&node, _)| node);
    match (holding.next(), holding.next()) {
        (Some(node), None) => Some(node),
        _ => None,
    }
}

/// Gives every CPU sysfs placed its [`NodeSource::Sysfs`], and the others the node the kernel
/// gave them where a rule says which: node 0 without NUMA information, the only node of a
/// one-node machine for CPUs that are not present, and on x86 (or an unknown arch, like the offline masks) the round-robin
/// node of boot for possible CPUs that are not present ([`round_robin_node`] over `boot_nodes`).
/// A present CPU without a node in sysfs, or any CPU elsewhere, stays unknown: arm64 and others
/// take the node of a CPU that is not present from firmware tables sysfs does not show.
fn place_unlisted_cpus(cpus: &mut BTreeMap<u32, Cpu>, node_ids: &[u32], boot_nodes: &[u32], arch: Option<&str>) {
    let x86 = arch.is_none_or(is_x86);
    for c in cpus.values_mut() {
        (c.node, c.node_source) = match (c.node, node_ids) {
            (Some(n), _) => (Some(n), NodeSource::Sysfs),
            (None, []) => (None, NodeSource::NoNuma),
            (None, [only]) if !c.present => (Some(*only), NodeSource::OnlyNode),
            (None, _) if x86 && !c.present => match round_robin_node(c.id, boot_nodes) {
                Some(n) => (Some(n), NodeSource::RoundRobinAtBoot),
                None => (None, NodeSource::Unknown),
            },
            (None, _) => (None, NodeSource::Unknown),
        };
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

/// A global CPU list under `CPU_DIR` (`possible`, `online`, ...), `None` when the file is absent,
/// or unreadable or malformed (a warning ending in `instead`). Tolerates the `(null)` some
/// kernels print for an empty `nohz_full`, and NUL bytes anywhere.
fn read_cpu_list(
    root: &Root,
    name: &str,
    warnings: &mut Vec<TopologyWarning>,
    instead: &str,
) -> Result<Option<CpuSet>, TopologyError> {
    let rel = format!("{CPU_DIR}/{name}");
    let text = match root.read_small_optional(&rel) {
        Ok(Some(text)) => text,
        Ok(None) => return Ok(None),
        Err(e) => {
            warnings.push(warning(root, &rel, format!("unreadable ({})", io_problem(&e)), instead).marked_by(&e));
            return Ok(None);
        }
    };
    let cleaned = text.replace('\0', "");
    let cleaned = cleaned.trim();
    if cleaned == "(null)" {
        return Ok(Some(CpuSet::new()));
    }
    match parse_cpulist_at(&root.path(&rel), cleaned) {
        Ok(set) => Ok(Some(set)),
        Err(e) => {
            warnings.push(warning(root, &rel, cpulist_problem(&e), instead).marked_by(&e));
            Ok(None)
        }
    }
}

/// `set ∩ outer`, with a warning naming the file of `set` and the CPUs outside `outer`.
fn within(
    root: &Root,
    name: &str,
    set: CpuSet,
    outer_name: &str,
    outer: &CpuSet,
    warnings: &mut Vec<TopologyWarning>,
) -> CpuSet {
    let extra = set.difference(outer);
    if extra.is_empty() {
        return set;
    }
    warnings.push(warning(
        root,
        &format!("{CPU_DIR}/{name}"),
        format!(
            "CPUs {:?} are listed but are not in {outer_name} ({:?})",
            extra.to_list_string(),
            outer.to_list_string()
        ),
        format!("they are left out of {name}"),
    ));
    set.intersection(outer)
}

/// A one-line text file, trimmed; `None` when absent, empty or unreadable (with a warning).
fn read_trimmed(root: &Root, rel: &str, warnings: &mut Vec<TopologyWarning>) -> Option<String> {
    match root.read_small_optional(rel) {
        Ok(text) => text.map(|s| s.trim().to_string()).filter(|s| !s.is_empty()),
        Err(e) => {
            warnings
                .push(warning(root, rel, format!("unreadable ({})", io_problem(&e)), "taken as unknown").marked_by(&e));
            None
        }
    }
}

/// How a warning describes a read error: the I/O error alone (the path is the warning's own).
pub(super) fn io_problem(e: &SysfsError) -> String {
    match e {
        SysfsError::Read { source, .. } | SysfsError::ListDir { source, .. } => source.to_string(),
        SysfsError::Parse { content, expected, .. } => format!("unexpected content {content:?}, expected {expected}"),
        SysfsError::CpuList { source, .. } => source.to_string(),
    }
}

/// How a warning describes a CPU list that does not parse.
pub(super) fn cpulist_problem(e: &SysfsError) -> String {
    io_problem(e)
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
/// (`cpufreq`, `cpuidle`, `online`) and numbers beyond `u32` are skipped.
pub(crate) fn numbered_entries(names: &[String], prefix: &str) -> Vec<u32> {
    let mut ids: Vec<u32> =
        names.iter().filter(|n| is_numbered(n, prefix)).filter_map(|n| n.strip_prefix(prefix)?.parse().ok()).collect();
    ids.sort_unstable();
    ids
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbered_entries_keep_only_prefix_and_digits() {
        let names: Vec<String> = ["cpu10", "cpu2", "cpufreq", "cpuidle", "cpu", "online", "cpu3x", "cpu99999999999"]
            .iter()
            .map(std::string::ToString::to_string)
            .collect();
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
        let topo = read_topology(&Root::new("/")).expect("the host's sysfs reads without error");
        assert!(!topo.online.is_empty(), "no online CPU on the host");
        assert!(topo.online.is_subset(&topo.present) && topo.present.is_subset(&topo.possible));
    }
}
