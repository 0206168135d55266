//! What `irqwise topology` prints: a JSON document and a compact per-node table.
//!
//! Pure: both functions only look at the [`Topology`] they are given.

use serde_json::{json, Value};

use super::isolation::{Effect, Isolation};
use super::{Cpu, NodeSource, Topology};
use crate::cpuset::CpuSet;

/// The JSON document: `kernel`, `possible`, `present`, `online`, `isolated`, `cpus`
/// (per CPU: `cpu`, `online`, `node`, and `package`/`die`/`cluster`/`core`/`llc` as the lowest
/// CPU id of the set it shares that level with, `null` where sysfs does not say or the mask is
/// empty) and `nodes` (`node`, `cpus`, `distance`). Extra keys: `arch`, `nohz_full`, `present`
/// per CPU, and `node_source` per CPU: where its node comes from (`sysfs`, `no-numa`,
/// `only-node`, `round-robin-at-boot` for a possible CPU that is not present on x86, `unknown`).
pub fn to_json(topo: &Topology) -> Value {
    let cpus: Vec<Value> = topo.cpus.values().map(cpu_json).collect();
    let nodes: Vec<Value> =
        topo.nodes.values().map(|n| json!({"node": n.id, "cpus": list(&n.cpus), "distance": n.distance})).collect();
    json!({
        "kernel": topo.kernel,
        "arch": topo.arch,
        "possible": list(&topo.possible),
        "present": list(&topo.present),
        "online": list(&topo.online),
        "isolated": list(&topo.isolated),
        "nohz_full": list(&topo.nohz_full),
        "cpus": cpus,
        "nodes": nodes,
    })
}

/// One CPU's JSON object.
fn cpu_json(c: &Cpu) -> Value {
    json!({
        "cpu": c.id,
        "online": c.online,
        "present": c.present,
        "node": c.node,
        "node_source": c.node_source,
        "package": lowest(c.package.as_ref()),
        "die": lowest(c.die.as_ref()),
        "cluster": lowest(c.cluster.as_ref()),
        "core": lowest(c.core.as_ref()),
        "llc": lowest(c.llc.as_ref()),
    })
}

/// The lowest CPU of a mask; `None` for an unknown or empty mask.
fn lowest(mask: Option<&CpuSet>) -> Option<u32> {
    mask.and_then(CpuSet::first)
}

/// A CPU set as the kernel's list (`"0-3,8"`): as long as its ranges, whatever the CPUs.
fn list(set: &CpuSet) -> String {
    set.to_list_string()
}

/// Which kinds of isolation source planning applies (`respect_isolation`,
/// `import_irqbalance_banned`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Applied {
    pub respect_isolation: bool,
    pub import_banned: bool,
}

impl Applied {
    /// Whether planning keeps the CPUs of a source with `effect` free.
    pub fn applies(self, effect: Effect) -> bool {
        match effect {
            Effect::Isolated => self.respect_isolation,
            Effect::Banned => self.import_banned,
            Effect::Claimed => true,
        }
    }
}

/// The isolation sources as JSON: `avoid` (the CPUs device IRQs avoid under `applied`) and
/// `sources` (per source: `kind`, `effect`, `path`, `setting`, `cpus`, `applied`).
pub(crate) fn isolation_json(isolation: &Isolation, applied: Applied) -> Value {
    let sources: Vec<Value> = isolation
        .sources
        .iter()
        .map(|s| {
            json!({
                "kind": s.kind,
                "since": s.kind.since(),
                "effect": s.effect(),
                "path": s.path,
                "setting": s.setting,
                "cpus": list(&s.cpus),
                "applied": applied.applies(s.effect()),
            })
        })
        .collect();
    json!({
        "avoid": list(&isolation.avoid(applied.respect_isolation, applied.import_banned)),
        "sources": sources,
    })
}

/// The isolation sources for humans: one line with the CPUs device IRQs avoid, then one per
/// source (CPUs, effect, file and setting, what it is, and whether the configuration applies it).
pub(crate) fn isolation_table(isolation: &Isolation, applied: Applied) -> String {
    let avoid = isolation.avoid(applied.respect_isolation, applied.import_banned);
    let mut out = if avoid.is_empty() {
        "isolation: no CPU is kept free of device IRQs\n".to_string()
    } else {
        format!("isolation: device IRQs avoid CPUs {avoid}\n")
    };
    for s in &isolation.sources {
        let effect = match s.effect() {
            Effect::Isolated => "isolated",
            Effect::Banned => "banned",
            Effect::Claimed => "claimed",
        };
        let off = match s.effect() {
            _ if applied.applies(s.effect()) => "",
            Effect::Isolated => "; not applied: respect_isolation = false",
            Effect::Banned => "; not applied: import_irqbalance_banned = false",
            Effect::Claimed => "",
        };
        out.push_str(&format!(
            "  {:<12} {:<8} {:<4} {}: {} ({}{off})\n",
            s.cpus.to_list_string(),
            effect,
            s.kind.since(),
            s.path,
            s.setting,
            s.kind.describe()
        ));
    }
    out
}

/// A human table, one line per NUMA node (id, CPU list, number of distinct clusters and cores
/// among its CPUs, distance row), under a header line of kernel / possible / online / isolated.
/// Without NUMA information the whole machine is one line with node `-`. Then one line per node
/// and source for the CPUs whose node sysfs does not show (`cpus 8,10 on node 0: round robin at
/// boot (not present)`, `cpus 12-15 on node ?: unknown`).
pub(crate) fn to_table(topo: &Topology) -> String {
    let mut out = format!(
        "kernel {}  possible {}  online {}  isolated {}\n",
        topo.kernel.as_deref().unwrap_or("?"),
        show(&topo.possible),
        show(&topo.online),
        show(&topo.isolated),
    );
    out.push_str(&format!("{:<5} {:<24} {:>8} {:>6}  {}\n", "node", "cpus", "clusters", "cores", "distance"));
    if topo.nodes.is_empty() {
        let (clusters, cores) = count_groups(topo, &topo.possible);
        out.push_str(&format!("{:<5} {:<24} {:>8} {:>6}  {}\n", "-", show(&topo.possible), clusters, cores, "-"));
    }
    for node in topo.nodes.values() {
        let (clusters, cores) = count_groups(topo, &node.cpus);
        let distance = node.distance.iter().map(u32::to_string).collect::<Vec<_>>().join(" ");
        out.push_str(&format!("{:<5} {:<24} {:>8} {:>6}  {}\n", node.id, show(&node.cpus), clusters, cores, distance));
    }
    out.push_str(&unlisted_lines(topo));
    out
}

/// The lines naming CPUs whose node sysfs does not show, grouped by node and source, in order
/// of their lowest CPU; empty without NUMA information or when sysfs shows every node.
fn unlisted_lines(topo: &Topology) -> String {
    let mut groups: Vec<((Option<u32>, NodeSource), CpuSet)> = Vec::new();
    for c in topo.cpus.values().filter(|c| !matches!(c.node_source, NodeSource::Sysfs | NodeSource::NoNuma)) {
        let key = (c.node, c.node_source);
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, set)) => {
                set.insert(c.id);
            }
            None => groups.push((key, CpuSet::single(c.id))),
        }
    }
    let mut out = String::new();
    for ((node, source), cpus) in groups {
        let node = node.map_or("?".to_string(), |n| n.to_string());
        let present = if cpus.is_subset(&topo.present) {
            ""
        } else if cpus.intersects(&topo.present) {
            " (some not present)"
        } else {
            " (not present)"
        };
        out.push_str(&format!("cpus {cpus} on node {node}: {}{present}\n", source.as_str()));
    }
    out
}

/// Distinct clusters and cores among the online CPUs of `cpus`, told apart by the lowest CPU of
/// the kernel's mask: `(clusters, cores)` as table cells. Clusters are `-` when sysfs gives no
/// CPU of the set a cluster mask (kernels before cluster_cpus_list).
fn count_groups(topo: &Topology, cpus: &CpuSet) -> (String, String) {
    let mut clusters = CpuSet::new();
    let mut cores = CpuSet::new();
    let mut cluster_known = false;
    for cpu in cpus.iter().filter(|&c| topo.online.contains(c)) {
        cluster_known |= topo.cpus.get(&cpu).is_some_and(|c| c.cluster.is_some());
        if let Some(first) = topo.cluster_mask(cpu).first() {
            clusters.insert(first);
        }
        if let Some(first) = topo.sibling_mask(cpu).first() {
            cores.insert(first);
        }
    }
    let clusters = if cluster_known { clusters.len().to_string() } else { "-".into() };
    (clusters, cores.len().to_string())
}

/// A CPU list for humans: `-` when empty.
fn show(set: &CpuSet) -> String {
    if set.is_empty() {
        "-".into()
    } else {
        set.to_list_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::NumaNode;

    /// Two SMT cores on one node, CPU 3 possible but offline with no topology.
    fn small() -> Topology {
        let mut t = Topology {
            kernel: Some("6.1.0-57-amd64".into()),
            possible: CpuSet::first_n(4),
            present: CpuSet::first_n(4),
            online: CpuSet::first_n(3),
            ..Topology::default()
        };
        for id in 0..4 {
            let mut c = Cpu::bare(id);
            c.present = true;
            c.online = id < 3;
            (c.node, c.node_source) = (Some(0), NodeSource::Sysfs);
            if c.online {
                c.package = Some(CpuSet::first_n(3));
                c.die = c.package.clone();
                c.core = Some(if id < 2 { CpuSet::first_n(2) } else { CpuSet::single(2) });
                c.cluster = Some(CpuSet::new());
                c.llc = Some(CpuSet::first_n(3));
            }
            t.cpus.insert(id, c);
        }
        t.nodes.insert(0, NumaNode { id: 0, cpus: CpuSet::first_n(4), distance: vec![10] });
        t
    }

    #[test]
    fn json_has_the_issue_shape_with_lowest_ids() {
        let v = to_json(&small());
        assert_eq!(v["kernel"], "6.1.0-57-amd64");
        assert_eq!(v["online"], json!("0-2"));
        assert_eq!(v["isolated"], json!(""));
        // CPU 1 shares its core with CPU 0; CPU 2 is alone.
        assert_eq!(
            v["cpus"][1],
            json!({"cpu": 1, "online": true, "present": true, "node": 0, "node_source": "sysfs", "package": 0,
            "die": 0, "cluster": null, "core": 0, "llc": 0})
        );
        assert_eq!(v["cpus"][2]["core"], 2);
        // Offline CPU 3: sysfs says nothing.
        assert_eq!(v["cpus"][3]["package"], Value::Null);
        assert_eq!(v["nodes"], json!([{"node": 0, "cpus": "0-3", "distance": [10]}]));
    }

    #[test]
    fn table_counts_cores_and_clusters_of_online_cpus() {
        let table = to_table(&small());
        let lines: Vec<&str> = table.lines().collect();
        assert!(lines[0].contains("6.1.0-57-amd64") && lines[0].contains("online 0-2"), "{table}");
        // Cores {0,1} and {2}; cluster masks are empty, so no cluster is counted.
        let row: Vec<&str> = lines[2].split_whitespace().collect();
        assert_eq!(row, vec!["0", "0-3", "0", "2", "10"], "{table}");
    }

    #[test]
    fn table_names_cpus_sysfs_does_not_place() {
        let mut t = small();
        t.possible = CpuSet::first_n(8);
        for (id, node, source) in [
            (4, Some(0), NodeSource::RoundRobinAtBoot),
            (5, Some(1), NodeSource::RoundRobinAtBoot),
            (6, Some(0), NodeSource::RoundRobinAtBoot),
            (7, None, NodeSource::Unknown),
        ] {
            let mut c = Cpu::bare(id);
            (c.node, c.node_source) = (node, source);
            t.cpus.insert(id, c);
        }
        let table = to_table(&t);
        let tail: Vec<&str> = table.lines().skip(3).collect();
        assert_eq!(
            tail,
            vec![
                "cpus 4,6 on node 0: round robin at boot (not present)",
                "cpus 5 on node 1: round robin at boot (not present)",
                "cpus 7 on node ?: unknown (not present)"
            ],
            "{table}"
        );
        assert_eq!(to_json(&t)["cpus"][5]["node_source"], "round-robin-at-boot");
        assert_eq!(to_table(&small()).lines().count(), 3, "every node from sysfs: no such line");
    }

    #[test]
    fn table_without_cluster_files_or_nodes() {
        let mut t = small();
        t.nodes.clear();
        for c in t.cpus.values_mut() {
            c.cluster = None;
            (c.node, c.node_source) = (None, NodeSource::NoNuma);
        }
        let table = to_table(&t);
        let row: Vec<&str> = table.lines().nth(2).unwrap().split_whitespace().collect();
        assert_eq!(row, vec!["-", "0-3", "-", "2", "-"], "{table}");
    }
}
